"""Memory-signal logs (Coal Not Diamonds' logger): hand-made files, hand-computed statistics,
errors by line."""

from __future__ import annotations

import gzip
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.memlog.load import load_fleet, load_phone
from mqoe.analysis.memlog.model import MEMINFO_COLUMNS, TRIM_LEVELS, PhoneLog
from mqoe.analysis.memlog.parse import _tokenise
from mqoe.analysis.memlog.read import discover_phones
from mqoe.analysis.memlog.report import PUBLISHED_POPULATION_FACTS, analyze
from mqoe.errors import InputFileError, UserError
from mqoe.generators.memlog import synthesize_config, synthesize_phone

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "memlog"
T0 = 1_600_000_000_000  # unix ms of second 0 in the hand-made logs
TOTAL = 1000  # totalMem of the hand-made phones, bytes: utilisation = 1 - avail / 1000
KB20 = "\t".join(str(10 * i) for i in range(1, 21))  # a D: line's 20 meminfo values


def _config(total: int = TOTAL, when: int = T0, manufacturer: str = "HMD Global") -> str:
    return f"C:\t{when}\t34\t3\t4\t2\t5\t1\tlikes games\t{manufacturer}\t{total}\t150\t1\t4\t29\n"


def _m(t_s: float, avail: int, screen: int = 1, level: int = 0) -> str:
    return f"M:\t{T0 + round(t_s * 1000)}\t-\t{avail}\t{level}\t{screen}\t0\t0\t0\n"


def _t(t_s: float, level: int, screen: int = 1) -> str:
    return f"T:\t{T0 + round(t_s * 1000)}\t{level}\t100\t{screen}\t0\t0\t0\n"


def _write(tmp_path: Path, text: str, name: str = "p.log") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def _phone(
    tmp_path: Path,
    samples: Sequence[tuple[float, int, int]],
    trims: Sequence[tuple[float, int, int]] = (),
    name: str = "p",
    config: bool = True,
) -> PhoneLog:
    """A phone from (t_s, avail, screen) samples and (t_s, level, screen) trim signals."""
    text = "".join(_m(t, a, s) for t, a, s in samples) + "".join(_t(*x) for x in trims)
    if config:
        text += _config()
    return load_phone(_write(tmp_path, text, name + ".log"), name=name)


def _error(path: Path | list[Path], skip_bad_lines: bool = False) -> InputFileError:
    with pytest.raises(InputFileError) as info:
        load_phone(path, skip_bad_lines=skip_bad_lines)
    return info.value


# -- the format -------------------------------------------------------------------------


def test_every_tag_is_read_into_its_table(tmp_path: Path) -> None:
    text = (
        f"M:\t{T0}\t-\t600\t0\t1\t0\t0\t1\n"
        f"D:\t{T0 + 1000}\t17\t550\t5\t1\t1\t0\t0\t{KB20}\n"
        f"T:\t{T0 + 1500}\t15\t540\t1\t0\t1\t0\n"
        f"B:\t{T0 + 2000}\tSCREEN_OFF\n"
    )
    log = _write(tmp_path, text)
    conf = _write(tmp_path, _config(), "p.conf")
    phone = load_phone([log, conf])
    samples = phone.samples
    assert samples["unix_ms"].tolist() == [T0, T0 + 1000]
    assert samples["kind"].tolist() == ["M", "D"]
    assert samples["running_services"].isna().tolist() == [True, False]
    assert samples["running_services"].iloc[1] == 17
    assert samples["avail_bytes"].tolist() == [600, 550]
    assert samples["trim_level"].tolist() == [0, 5]
    assert samples["screen_on"].tolist() == [True, True]
    assert samples["power_save"].tolist() == [False, True]
    assert samples["music_active"].tolist() == [True, False]
    assert phone.meminfo["unix_ms"].tolist() == [T0 + 1000]
    assert len(MEMINFO_COLUMNS) == 20
    assert phone.meminfo["mem_free_kb"].iloc[0] == 10
    assert phone.meminfo["active_anon_kb"].iloc[0] == 70
    assert phone.meminfo["vmalloc_chunk_kb"].iloc[0] == 200
    trim = phone.trims.iloc[0]
    assert (trim["unix_ms"], trim["level"], trim["avail_bytes"]) == (T0 + 1500, 15, 540)
    assert (trim["screen_on"], trim["power_save"], trim["battery_low"]) == (True, False, True)
    assert phone.broadcasts["event"].tolist() == ["SCREEN_OFF"]
    config = phone.config
    assert config is not None
    assert config.total_mem_bytes == TOTAL
    assert (config.manufacturer, config.q6_text, config.age) == ("HMD Global", "likes games", "34")
    assert config.answers == ("3", "4", "2", "5", "1")
    assert (config.threshold_bytes, config.is_low_ram_device) == (150, True)
    assert (config.n_cores, config.api) == (4, 29)
    assert dict(phone.stats.records) == {"M": 1, "D": 1, "T": 1, "B": 1, "C": 1}


def test_tag_glued_to_the_first_field_and_space_separation_read_the_same(tmp_path: Path) -> None:
    canonical = load_phone(_write(tmp_path, _m(0, 600) + _t(1, 10), "a.log"))
    glued = f"M:{T0}\t-\t600\t0\t1\t0\t0\t0\nT:{T0 + 1000}\t10\t100\t1\t0\t0\t0\n"
    spaced = f"M: {T0}  -  600 0 1 0 0 0\n  T :\t{T0 + 1000} 10 100 1 0 0 0\t\n"
    for name, text in (("glued.log", glued), ("spaced.log", spaced)):
        phone = load_phone(_write(tmp_path, text, name))
        pd.testing.assert_frame_equal(phone.samples, canonical.samples)
        pd.testing.assert_frame_equal(phone.trims, canonical.trims)


def test_booleans_are_0_1_or_true_false_in_any_case(tmp_path: Path) -> None:
    text = f"M:\t{T0}\t-\t600\t0\ttrue\tFALSE\tTrue\t0\n"
    phone = load_phone(_write(tmp_path, text))
    row = phone.samples.iloc[0]
    assert [row["screen_on"], row["power_save"], row["battery_low"], row["music_active"]] == [
        True,
        False,
        True,
        False,
    ]


def test_dash_meminfo_values_are_missing(tmp_path: Path) -> None:
    values = KB20.split("\t")
    values[-1] = "-"  # VmallocChunk left out by a 5.x kernel
    text = f"D:\t{T0}\t-\t550\t0\t1\t0\t0\t0\t" + "\t".join(values) + "\n"
    meminfo = load_phone(_write(tmp_path, text)).meminfo
    assert meminfo["vmalloc_chunk_kb"].isna().tolist() == [True]
    assert meminfo["vmalloc_used_kb"].tolist() == [190]


def test_crlf_line_ends_and_a_byte_order_mark_are_accepted(tmp_path: Path) -> None:
    text = "\ufeff" + (_m(0, 600) + _m(1, 500) + _config()).replace("\n", "\r\n")
    path = _write(tmp_path, text)
    phone = load_phone(path)
    assert phone.samples["avail_bytes"].tolist() == [600, 500]
    assert phone.config is not None and phone.config.api == 29


def test_unterminated_last_line_that_does_not_parse_is_dropped_and_counted(
    tmp_path: Path,
) -> None:
    text = _m(0, 600) + _m(1, 500) + f"M:\t{T0 + 2000}\t-\t49"  # the logger died mid-write
    phone = load_phone(_write(tmp_path, text))
    assert phone.samples["avail_bytes"].tolist() == [600, 500]
    assert phone.stats.truncated == 1
    padded = _write(tmp_path, text + "\x00" * 64, "padded.log")  # power loss pads with NULs
    assert load_phone(padded).stats.truncated == 1


def test_lines_with_nul_bytes_are_lost_writes_dropped_and_counted(tmp_path: Path) -> None:
    lost = "M:\t16000000\x00\x00\x00\x00\t0\t0\t0\n"  # a block zeroed by a power failure
    path = _write(tmp_path, _m(0, 600) + lost + _m(2, 400) + "\n" + _m(3, 300))
    phone = load_phone(path)
    assert phone.samples["avail_bytes"].tolist() == [600, 400, 300]
    assert (phone.stats.truncated, phone.stats.skipped_blank, phone.stats.lines) == (1, 1, 5)
    bad = _write(tmp_path, _m(0, 600) + lost + "M:\t1\n", "bad.log")
    assert _error(bad).line == 3  # line numbers still count the dropped line


def test_unterminated_last_line_that_parses_is_kept(tmp_path: Path) -> None:
    phone = load_phone(_write(tmp_path, _m(0, 600) + _m(1, 500).rstrip("\n")))
    assert phone.samples["avail_bytes"].tolist() == [600, 500]
    assert phone.stats.truncated == 0


def test_a_cut_line_in_the_middle_is_still_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, _m(0, 600) + f"M:\t{T0 + 1000}\t-\t49\n" + _m(2, 500))
    error = _error(path)
    assert error.line == 2
    assert str(error) == (
        f"{path}:2: M: expected 8 fields 'unix_ms services availMem trimLevel screenOn"
        " powerSave batteryLow musicActive', got 3"
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"M:\t{T0}\t-\t600\t0\tyes\t0\t0\t0", "field 5 (screenOn) should be a boolean"),
        (f"M:\t{T0}\t-\t-600\t0\t1\t0\t0\t0", "field 3 (availMem) should be a number of bytes"),
        (f"M:\t{T0}\tmany\t600\t0\t1\t0\t0\t0", "field 2 (services) should be a count"),
        ("M:\t1.6e12\t-\t600\t0\t1\t0\t0\t0", "field 1 (unix_ms) should be a unix time"),
        (f"M:\t{10**13}\t-\t600\t0\t1\t0\t0\t0", "field 1 (unix_ms) should be a unix time"),
        (f"T:\t{T0}\t7\t600\t1\t0\t0\t0", "field 2 (level) should be a trim level"),
        (f"T:\t{T0}\t15\t600\t1\t0\t0", "T: expected 7 fields"),
        (f"D:\t{T0}\t-\t600\t0\t1\t0\t0\t0\t1\t2", "D: expected 28 fields"),
        (f"D:\t{T0}\t-\t600\t0\t1\t0\t0\t0\t{KB20[:-3]}\tx", "field 28 (VmallocChunk)"),
        (f"B:\t{T0}", "B: expected 2 fields"),
        ("1600000000000\t-\t600", "expected a tagged line"),
        (f"C:\t{T0}\t34\t3\t4\t2\t5\t1\tq6\tHMD\t0\t150\t1\t4\t29", "(totalMem) should be a pos"),
        (f"C:\t{T0}\t34\t3\t4\t2\t5\t1\tq6\tHMD\t1000\t150\tmaybe\t4\t29", "(isLowRamDevice)"),
        (f"C:\t{T0}\t34\t3\t4\t2", "C: expected 14 fields"),
    ],
)
def test_a_malformed_line_names_the_file_line_and_expectation(
    tmp_path: Path, line: str, expected: str
) -> None:
    path = _write(tmp_path, _m(0, 600) + "\n" + line + "\n" + _m(5, 500))
    error = _error(path)
    assert error.line == 3
    assert error.path == str(path)
    assert str(error).startswith(f"{path}:3: ")
    assert expected in str(error)


def test_the_earliest_bad_line_is_reported_whatever_its_tag(tmp_path: Path) -> None:
    text = _m(0, 600) + f"T:\t{T0}\t7\t600\t1\t0\t0\t0\n" + _m(1, 600) + "M:\t1\n"
    assert _error(_write(tmp_path, text)).line == 2


def test_bytes_that_are_not_utf8_are_a_field_error_on_their_line(tmp_path: Path) -> None:
    path = tmp_path / "p.log"
    path.write_bytes(
        _m(0, 600).encode()
        + _m(1, 500).replace("500", "5\udcff0").encode("utf-8", "surrogateescape")
    )
    error = _error(path)
    assert (error.line, error.what) == (
        2,
        "M: field 3 (availMem) should be a number of bytes ≥ 0, got '5\ufffd0'",
    )


def test_gzip_compressed_logs_are_read_and_corrupt_ones_named(tmp_path: Path) -> None:
    path = tmp_path / "p.log.gz"
    path.write_bytes(gzip.compress((_m(0, 600) + _m(1, 500)).encode()))
    assert load_phone(path).samples["avail_bytes"].tolist() == [600, 500]
    path.write_bytes(gzip.compress(_m(0, 600).encode())[:-6])
    error = _error(path)
    assert (error.path, error.what) == (
        str(path),
        "cannot read it: Compressed file ended before the end-of-stream marker was reached",
    )


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    assert _error(tmp_path / "absent.log").what == "no such file or folder"


def test_blank_comment_and_unknown_tag_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    text = "# logger v2\n\n   \n" + _m(0, 600) + "X:\t1\t2\nX:\t3\nGPS:\t1 2\n" + _m(1, 500)
    phone = load_phone(_write(tmp_path, text))
    assert phone.samples["avail_bytes"].tolist() == [600, 500]
    assert phone.stats.skipped_blank == 3
    assert dict(phone.stats.unknown_tags) == {"GPS": 1, "X": 2}
    assert phone.stats.lines == 8


def test_out_of_order_records_are_sorted_and_counted(tmp_path: Path) -> None:
    text = _m(0, 600) + _m(2, 400) + _m(1, 500) + _m(3, 300) + _t(5, 5) + _t(4, 10)
    phone = load_phone(_write(tmp_path, text))
    assert phone.samples["avail_bytes"].tolist() == [600, 500, 400, 300]
    assert phone.trims["level"].tolist() == [10, 5]
    assert phone.stats.reordered == 2  # one M: and one T: came after a later record


def test_overlapping_files_keep_one_copy_of_each_record(tmp_path: Path) -> None:
    first = _write(tmp_path, _m(0, 600) + _m(1, 500) + _t(1, 15), "p.1.log")
    second = _write(tmp_path, _m(1, 500) + _t(1, 15) + _m(2, 400), "p.2.log")
    phone = load_phone([first, second])
    assert phone.samples["avail_bytes"].tolist() == [600, 500, 400]
    assert len(phone.trims) == 1
    assert phone.stats.duplicates == 2
    assert phone.stats.reordered == 0  # reordering is counted within a file only


def test_a_d_line_repeating_an_m_line_is_one_sample(tmp_path: Path) -> None:
    text = _m(0, 600) + f"D:\t{T0}\t-\t600\t0\t1\t0\t0\t0\t{KB20}\n" + _m(1, 500)
    phone = load_phone(_write(tmp_path, text))
    assert phone.samples["kind"].tolist() == ["D", "M"]
    assert len(phone.meminfo) == 1


def test_the_latest_configuration_line_wins_and_may_sit_in_the_log(tmp_path: Path) -> None:
    text = _config(total=3000, when=T0 + 5) + _m(0, 600) + _config(total=2000, when=T0)
    phone = load_phone(_write(tmp_path, text))
    assert phone.config is not None and phone.config.total_mem_bytes == 3000
    assert phone.stats.records["C"] == 2


def test_configuration_free_text_may_hold_spaces_or_be_empty(tmp_path: Path) -> None:
    line = f"C:\t{T0}\t34\t3\t4\t2\t5\t1\t\tHMD Global Oy\t1000\t150\tfalse\t8\t33\t\n"
    config = load_phone(_write(tmp_path, line, "p.conf")).config
    assert config is not None
    assert (config.q6_text, config.manufacturer, config.is_low_ram_device) == (
        "",
        "HMD Global Oy",
        False,
    )
    spaced = f"C: {T0} 34 3 4 2 5 1 none Nokia 1000 150 0 8 33\n"
    config = load_phone(_write(tmp_path, spaced, "q.conf")).config
    assert config is not None and (config.q6_text, config.manufacturer) == ("none", "Nokia")


def test_broadcast_actions_are_shortened_to_their_name(tmp_path: Path) -> None:
    text = (
        f"B:\t{T0}\tandroid.intent.action.SCREEN_ON\n"
        f"B:\t{T0 + 1}\tandroid.os.action.POWER_SAVE_MODE_CHANGED\n"
        f"B:\t{T0 + 2}\tBATTERY_OKAY\n"
    )
    events = load_phone(_write(tmp_path, text)).broadcasts["event"].tolist()
    assert events == ["SCREEN_ON", "POWER_SAVE_MODE_CHANGED", "BATTERY_OKAY"]


def test_skip_bad_lines_keeps_the_good_ones_and_lists_the_rest(tmp_path: Path) -> None:
    text = _m(0, 600) + "M:\t1\n" + _m(1, 500) + "garbage\n" + f"T:\t{T0}\t7\t1\t1\t0\t0\t0\n"
    path = _write(tmp_path, text)
    phone = load_phone(path, skip_bad_lines=True)
    assert phone.samples["avail_bytes"].tolist() == [600, 500]
    assert phone.stats.n_skipped == 3
    assert [(issue.path, issue.line) for issue in phone.stats.skipped] == [
        (str(path), 2),
        (str(path), 4),
        (str(path), 5),
    ]


# -- grouping files into phones -----------------------------------------------------------


def test_files_group_into_phones_by_directory_or_name_stem(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    for phone in ("a", "b"):
        (fleet / phone).mkdir(parents=True)
        _write(fleet / phone, _m(0, 600), "log.txt")
        _write(fleet / phone, _config(), "config.txt")
    _write(fleet / "a", "notes", ".hidden")
    _write(fleet, "about the study", "README.md")
    _write(tmp_path, _m(0, 600), "c.log")
    _write(tmp_path, _config(), "c.conf")
    _write(tmp_path, _m(0, 600) + _config(), "d.2021-03.log")
    groups = discover_phones(
        [fleet, tmp_path / "c.log", tmp_path / "c.conf", tmp_path / "d.2021-03.log"]
    )
    assert sorted(groups) == ["a", "b", "c", "d"]
    assert [p.name for p in groups["a"]] == ["config.txt", "log.txt"]
    assert [p.name for p in groups["c"]] == ["c.conf", "c.log"]
    phones = load_fleet([fleet / "a", tmp_path / "d.2021-03.log"])
    assert [p.name for p in phones] == ["a", "d"]
    assert all(p.config is not None for p in phones)


def test_a_path_that_does_not_exist_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no such file or folder"):
        discover_phones([tmp_path / "nope"])


# -- per-phone statistics, by hand ----------------------------------------------------------

# Samples at 0..10 s: screen on for 0..7 (each stands for 1 s: 8 s interactive), off for
# 8..10. Trim signals: Moderate at 2, Critical at 3.5 (repeated at 4), Low at 6, Normal
# (level 20, screen off) at 9.
TOY_SAMPLES = [(float(t), a, 1) for t, a in enumerate([500, 400, 300, 200, 100, 100, 100, 100])]
TOY_SAMPLES += [(8.0, 900, 0), (9.0, 900, 0), (10.0, 900, 0)]
TOY_TRIMS = [(2.0, 5, 1), (3.5, 15, 1), (4.0, 15, 1), (6.0, 10, 1), (9.0, 20, 0)]


def test_toy_phone_statistics_match_the_hand_computation(tmp_path: Path) -> None:
    phone = _phone(tmp_path, TOY_SAMPLES, TOY_TRIMS)
    report = analyze([phone], min_interactive_hours=0.0)
    row = report.tables["phones"].iloc[0]
    hour = 3600.0
    assert row["interactive_h"] == pytest.approx(8 / hour)
    assert row["logged_h"] == pytest.approx(10 / hour)
    # interactive utilisation .5 .6 .7 .8 .9 .9 .9 .9 → median (.8 + .9) / 2
    assert row["median_utilisation"] == pytest.approx(0.85)
    # four screen-on pressure signals (5, 15, 15, 10) in 8 interactive seconds
    assert row["pressure_per_h"] == pytest.approx(4 * hour / 8)
    assert row["critical_per_h"] == pytest.approx(2 * hour / 8)
    assert row["moderate_per_h"] == pytest.approx(hour / 8)
    assert row["low_per_h"] == pytest.approx(hour / 8)
    # Normal [0, 2), Moderate [2, 3.5), Critical [3.5, 6), Low [6, 8) of the 8 s
    shares = [row["share_normal"], row["share_moderate"], row["share_low"], row["share_critical"]]
    assert shares == pytest.approx([2 / 8, 1.5 / 8, 2 / 8, 2.5 / 8])
    state_time = report.tables["state_time"].set_index("state")["interactive_s"]
    assert state_time.to_dict() == pytest.approx(
        {"Normal": 2.0, "Moderate": 1.5, "Low": 2.0, "Critical": 2.5}
    )
    dwells = report.tables["dwells"]
    assert list(zip(dwells["state"], dwells["to_state"], dwells["dwell_s"], strict=True)) == [
        ("Moderate", "Critical", 1.5),
        ("Critical", "Low", 2.5),
        ("Low", "Normal", 3.0),
    ]  # the repeated Critical signal changes nothing; the final Normal run is open


def test_pressure_signals_count_only_when_their_screen_flag_is_on(tmp_path: Path) -> None:
    samples = [(float(t), 100, 1) for t in range(11)]  # 10 interactive seconds
    trims = [(1.0, 15, 0), (2.0, 15, 1), (3.0, 10, 0), (4.0, 5, 0)]
    row = analyze([_phone(tmp_path, samples, trims)], 0.0).tables["phones"].iloc[0]
    assert row["critical_per_h"] == pytest.approx(360.0)  # 1 signal in 10 s
    assert row["pressure_per_h"] == pytest.approx(360.0)
    assert row["low_per_h"] == row["moderate_per_h"] == 0.0
    # ... but every signal moves the state: Critical [1, 3), Low [3, 4), Moderate [4, 10)
    assert [row["share_critical"], row["share_low"], row["share_moderate"]] == pytest.approx(
        [0.2, 0.1, 0.6]
    )


def test_utilisation_over_all_samples_includes_screen_off_time(tmp_path: Path) -> None:
    phone = _phone(tmp_path, TOY_SAMPLES, TOY_TRIMS)
    report = analyze([phone], min_interactive_hours=0.0, utilisation_over="all")
    # .1 .1 .1 .5 .6 .7 .8 .9 .9 .9 .9 → the 6th of 11
    assert report.tables["phones"]["median_utilisation"].iloc[0] == pytest.approx(0.7)


def test_transition_probabilities_and_dwell_percentiles_by_hand(tmp_path: Path) -> None:
    samples = [(float(t), 100, 1) for t in range(61)]
    # runs: C@0 L@4 C@10 N@18 C@20 L@32 C@33 M@49 (open)
    trims = [(0, 15, 1), (4, 10, 1), (10, 15, 1), (18, 0, 1), (20, 15, 1)]
    trims += [(32, 10, 1), (33, 15, 1), (49, 5, 1)]
    phone = _phone(tmp_path, samples, [(float(t), lv, s) for t, lv, s in trims])
    report = analyze([phone], min_interactive_hours=0.0)
    transitions = report.tables["transitions"].set_index(["from_state", "to_state"])
    probability = transitions["probability"]
    assert probability[("Critical", "Low")] == 0.5  # 2 of the 4 Critical runs
    assert probability[("Critical", "Normal")] == 0.25
    assert probability[("Critical", "Moderate")] == 0.25
    assert probability[("Low", "Critical")] == 1.0
    assert probability[("Normal", "Critical")] == 1.0
    assert math.isnan(probability[("Moderate", "Normal")])  # no closed Moderate run
    assert transitions["count"].sum() == 7
    dwell = report.tables["dwell"].set_index(["state", "to_state"])
    # Critical dwells 4 (→L), 8 (→N), 12 (→L), 16 (→M)
    assert dwell.loc[("Critical", "any"), "median_s"] == 10.0
    assert dwell.loc[("Critical", "any"), "p75_s"] == 13.0
    assert dwell.loc[("Critical", "Low"), "median_s"] == 8.0
    assert dwell.loc[("Critical", "Low"), "p75_s"] == 10.0
    assert dwell.loc[("Critical", "Normal"), "p75_s"] == 8.0
    assert dwell.loc[("Low", "any"), "p75_s"] == 4.75  # dwells 6 and 1
    summary = report.summary()
    assert summary["p_critical_to_low"] == 0.5
    assert summary["p_critical_to_normal"] == 0.25
    assert summary["dwell_critical_to_low_p75_s"] == 10.0
    assert summary["dwell_critical_to_normal_p75_s"] == 8.0


def test_a_logger_silence_censors_the_run_and_caps_the_sample(tmp_path: Path) -> None:
    samples = [(float(t), 100, 1) for t in (*range(11), *range(100, 111))]
    trims = [(5.0, 15, 1), (105.0, 10, 1), (108.0, 0, 1)]
    report = analyze([_phone(tmp_path, samples, trims)], min_interactive_hours=0.0)
    dwells = report.tables["dwells"]
    assert dwells[["state", "to_state", "dwell_s"]].values.tolist() == [["Low", "Normal", 3.0]]
    # samples 0..9 and 100..109 stand for 1 s each, sample 10 for max_gap_s = 30 s
    assert report.tables["phones"]["interactive_h"].iloc[0] == pytest.approx(50 / 3600)
    longer = analyze([_phone(tmp_path, samples, trims)], min_interactive_hours=0, max_gap_s=100)
    assert len(longer.tables["dwells"]) == 2  # a 90 s silence is no gap at max_gap_s=100


def test_cleaning_keeps_only_phones_with_more_interactive_time(tmp_path: Path) -> None:
    exactly = _phone(tmp_path, [(float(t), 100, 1) for t in range(37)], name="exactly")
    more = _phone(tmp_path, [(float(t), 100, 1) for t in range(38)], name="more")
    off = [(float(t), 100, int(t < 3)) for t in range(1000)]
    screen_off = _phone(tmp_path, off, name="off")
    unconfigured = _phone(tmp_path, [(float(t), 100, 1) for t in range(99)], name="x", config=False)
    report = analyze([exactly, more, screen_off, unconfigured], min_interactive_hours=0.01)
    phones = report.tables["phones"].set_index("phone")
    assert phones["kept"].to_dict() == {"exactly": False, "more": True, "off": False, "x": False}
    assert phones.loc["exactly", "drop_reason"] == "0.0 h of interactive data (needs > 0.01 h)"
    assert phones.loc["x", "drop_reason"] == "no C: configuration line (total memory unknown)"
    summary = report.summary()
    assert (summary["n_phones"], summary["n_kept"], summary["n_dropped"]) == (4, 1, 3)
    assert report.tables["utilisation_cdf"]["phone"].tolist() == ["more"]


def test_population_shares_and_utilisation_cdf_by_hand(tmp_path: Path) -> None:
    hour = [float(t) for t in range(3601)]  # exactly one interactive hour each
    specs = {  # name: (avail bytes → median utilisation, trim signals in the hour)
        "quiet": (500, []),  # .50, no signal
        "one": (400, [5]),  # .60, one Moderate per hour
        "eleven": (250, [15] * 11),  # .75, 11 Critical per hour
        "ten": (200, [15] * 10),  # .80, 10 Critical per hour (not > 10)
    }
    phones = []
    for name, (avail, levels) in specs.items():
        trims = [(1.0 + i, level, 1) for i, level in enumerate(levels)]
        phones.append(_phone(tmp_path, [(t, avail, 1) for t in hour], trims, name=name))
    report = analyze(phones, min_interactive_hours=0.5)
    summary = report.summary()
    assert summary["share_util_ge_60pct"] == 0.75
    assert summary["share_util_ge_75pct"] == 0.5
    assert summary["share_pressure_ge_1_per_h"] == 0.75
    assert summary["share_critical_gt_10_per_h"] == 0.25
    assert summary["median_of_median_utilisation"] == pytest.approx(0.675)
    cdf = report.tables["utilisation_cdf"]
    assert cdf["phone"].tolist() == ["quiet", "one", "eleven", "ten"]
    assert cdf["median_utilisation"].tolist() == pytest.approx([0.5, 0.6, 0.75, 0.8])
    assert cdf["cdf"].tolist() == [0.25, 0.5, 0.75, 1.0]


def test_the_comparison_places_spec_facts_beside_computed_values(tmp_path: Path) -> None:
    report = analyze([_phone(tmp_path, TOY_SAMPLES, TOY_TRIMS)], min_interactive_hours=0.0)
    table = report.comparison().set_index("metric")
    for key, value in PUBLISHED_POPULATION_FACTS.items():
        assert table.loc[key, "published"] == value
        assert key in report.summary()
    assert table["label"].str.len().min() > 0
    assert math.isnan(table["published"].to_numpy(np.float64)[0])  # n_phones: none published
    assert PUBLISHED_POPULATION_FACTS["p_critical_to_low"] == 0.672


def test_an_empty_fleet_gives_empty_tables_not_an_error() -> None:
    report = analyze([])
    summary = report.summary()
    assert summary["n_phones"] == 0
    assert math.isnan(summary["share_util_ge_60pct"])
    assert len(report.tables["transitions"]) == 12


def test_bad_analysis_parameters_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="min_interactive_hours"):
        analyze([], min_interactive_hours=-1)
    with pytest.raises(UserError, match="max_gap_s"):
        analyze([], max_gap_s=0)


# -- synthetic logs ------------------------------------------------------------------------


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    hours=st.floats(0.01, 0.3),
    total=st.integers(2**28, 2**34),
    api=st.sampled_from([23, 25, 26, 29, 33]),
)
def test_synthetic_logs_parse_back_to_what_was_generated(
    tmp_path_factory: pytest.TempPathFactory, seed: int, hours: float, total: int, api: int
) -> None:
    folder = tmp_path_factory.mktemp("synth")
    text = synthesize_phone(
        np.random.default_rng(seed), hours, total, api=api, screen_on_mean_s=120,
        screen_off_mean_s=120, dwell_mean_s={"Normal": 60, "Moderate": 10, "Low": 5, "Critical": 3},
    )  # fmt: skip
    assert text == synthesize_phone(
        np.random.default_rng(seed), hours, total, api=api, screen_on_mean_s=120,
        screen_off_mean_s=120, dwell_mean_s={"Normal": 60, "Moderate": 10, "Low": 5, "Critical": 3},
    )  # fmt: skip
    _write(folder, text, "s.log")
    _write(folder, synthesize_config(total, api=api), "s.conf")
    phone = load_phone(folder)
    n = round(hours * 3600)
    samples = phone.samples
    assert len(samples) == n
    assert samples["kind"].tolist() == ["D" if i % 10 == 0 else "M" for i in range(n)]
    assert len(phone.meminfo) == (n + 9) // 10
    seconds = (samples["unix_ms"].to_numpy() - 1_600_000_000_000) // 1000
    assert seconds.tolist() == list(range(n))
    assert samples["running_services"].isna().all() == (api >= 26)
    assert phone.config is not None and phone.config.total_mem_bytes == total
    assert phone.config.api == api
    # the screen flag of every sample agrees with the SCREEN_OFF / SCREEN_ON broadcasts
    events = phone.broadcasts
    assert events["event"].tolist() == ["SCREEN_OFF", "SCREEN_ON"] * (len(events) // 2) + [
        "SCREEN_OFF"
    ] * (len(events) % 2)
    changes = np.searchsorted(events["unix_ms"].to_numpy(), samples["unix_ms"].to_numpy(), "right")
    assert (samples["screen_on"].to_numpy() == (changes % 2 == 0)).all()
    # each sample's last trim level is the level of the last T: line before it
    levels = phone.trims["level"].to_numpy()
    assert set(levels.tolist()) <= set(TRIM_LEVELS)
    k = np.searchsorted(phone.trims["unix_ms"].to_numpy(), samples["unix_ms"].to_numpy(), "right")
    expected = np.concatenate(([0], levels))[k]  # 0 before the first T: line
    assert (samples["trim_level"].to_numpy() == expected).all()
    utilisation = 1 - samples["avail_bytes"].to_numpy() / total
    assert ((utilisation > 0.01) & (utilisation < 0.995)).all()
    assert phone.stats.reordered == phone.stats.duplicates == phone.stats.truncated == 0


def test_a_synthetic_fleet_gives_consistent_population_tables(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    phones = []
    for i, utilisation in enumerate([0.5, 0.65, 0.7, 0.78]):
        text = synthesize_phone(rng, 3.0, 2**31, normal_utilisation=utilisation)
        path = _write(tmp_path, text + synthesize_config(2**31), f"s{i}.log")
        phones.append(load_phone(path))
    report = analyze(phones, min_interactive_hours=0.1)
    transitions = report.tables["transitions"]
    totals = transitions.groupby("from_state")["probability"].sum()
    assert totals.to_numpy() == pytest.approx(np.ones(4))
    assert transitions["count"].sum() == len(report.tables["dwells"])
    shares = report.tables["state_time"].groupby("phone")["share"].sum()
    assert shares.to_numpy() == pytest.approx(np.ones(4))
    medians = report.tables["phones"]["median_utilisation"].to_numpy()
    assert np.argsort(medians).tolist() == [0, 1, 2, 3]  # follows normal_utilisation


def test_synthesis_rejects_impossible_parameters() -> None:
    with pytest.raises(UserError, match="hours"):
        synthesize_phone(np.random.default_rng(0), 0.0, 2**30)
    with pytest.raises(UserError, match="total_mem_bytes"):
        synthesize_phone(np.random.default_rng(0), 1.0, 0)
    with pytest.raises(UserError, match="tabs"):
        synthesize_config(2**30, q6_text="a\tb")


# -- properties ---------------------------------------------------------------------------

_bool_token = st.sampled_from(["0", "1", "true", "false", "TRUE", "False"])
_ms = st.integers(0, 10**13 - 1)
_sep = st.sampled_from(["\t", " ", "\t\t", " \t "])


@st.composite
def _records(draw: st.DrawFn) -> list[tuple[str, list[str]]]:
    """Valid (tag, fields) records with distinct times, in file (not time) order."""
    n = draw(st.integers(0, 12))
    times = draw(st.lists(_ms, min_size=n, max_size=n, unique=True))
    out: list[tuple[str, list[str]]] = []
    for t in times:
        tag = draw(st.sampled_from("MDTB"))
        if tag in "MD":
            services = draw(st.one_of(st.just("-"), st.integers(0, 500).map(str)))
            fields = [
                str(t),
                services,
                str(draw(st.integers(0, 2**40))),
                str(draw(st.integers(-1, 80))),
            ]
            fields += [draw(_bool_token) for _ in range(4)]
            if tag == "D":
                kb = st.one_of(st.just("-"), st.integers(0, 2**40).map(str))
                fields += [draw(kb) for _ in range(20)]
        elif tag == "T":
            fields = [
                str(t),
                str(draw(st.sampled_from(TRIM_LEVELS))),
                str(draw(st.integers(0, 2**40))),
            ]
            fields += [draw(_bool_token) for _ in range(4)]
        else:
            fields = [str(t), draw(st.sampled_from(["SCREEN_ON", "BATTERY_LOW", "X.Y.SCREEN_OFF"]))]
        out.append((tag, fields))
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=_records(), data=st.data())
def test_written_records_come_back_whatever_the_separators(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[tuple[str, list[str]]],
    data: st.DataObject,
) -> None:
    lines = []
    for tag, fields in records:
        after_tag = data.draw(st.sampled_from(["", "\t", " "]))
        lines.append(tag + ":" + after_tag + data.draw(_sep).join(fields))
    newline = data.draw(st.sampled_from(["\n", "\r\n"]))
    text = data.draw(st.sampled_from(["", "\ufeff"])) + newline.join(lines) + newline
    path = _write(tmp_path_factory.mktemp("rt"), text)
    phone = load_phone(path)
    by_tag: dict[str, list[list[str]]] = {tag: [] for tag in "MDTB"}
    for tag, fields in records:
        by_tag[tag].append(fields)
    for tag in by_tag:
        by_tag[tag].sort(key=lambda fields: int(fields[0]))
    samples = sorted(by_tag["M"] + by_tag["D"], key=lambda fields: int(fields[0]))
    assert phone.samples["unix_ms"].tolist() == [int(f[0]) for f in samples]
    assert phone.samples["kind"].tolist() == ["D" if len(f) == 28 else "M" for f in samples]
    services = [None if f[1] == "-" else int(f[1]) for f in samples]
    assert [None if pd.isna(v) else int(v) for v in phone.samples["running_services"]] == services
    assert phone.samples["avail_bytes"].tolist() == [int(f[2]) for f in samples]
    assert phone.samples["trim_level"].tolist() == [int(f[3]) for f in samples]
    flags = ["screen_on", "power_save", "battery_low", "music_active"]
    for j, column in enumerate(flags, start=4):
        assert phone.samples[column].tolist() == [f[j].lower() in ("1", "true") for f in samples]
    meminfo = phone.meminfo[list(MEMINFO_COLUMNS)]
    got = [[None if pd.isna(v) else int(v) for v in row] for row in meminfo.itertuples(index=False)]
    assert got == [[None if v == "-" else int(v) for v in f[8:]] for f in by_tag["D"]]
    assert phone.trims["level"].tolist() == [int(f[1]) for f in by_tag["T"]]
    assert phone.trims["avail_bytes"].tolist() == [int(f[2]) for f in by_tag["T"]]
    assert phone.broadcasts["event"].tolist() == [f[1].split(".")[-1] for f in by_tag["B"]]
    assert phone.stats.reordered == sum(
        _late([int(f[0]) for g, f in records if g == tag]) for tag in "MDTB"
    )


def _late(times: list[int]) -> int:
    """Records earlier than some record before them."""
    return sum(1 for i, t in enumerate(times) if i and t < max(times[:i]))


_garbage_line = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda tag, fields: tag + ":" + "\t".join(fields),
        st.sampled_from(["M", "D", "T", "B", "C", "m", " M", "X"]),
        st.lists(
            st.one_of(
                st.sampled_from(["-", "0", "1", "true", "15", "7", "", " ", "1e3", "\x01", "M:"]),
                st.integers(-(2**70), 2**70).map(str),
                st.text(max_size=6),
            ),
            max_size=30,
        ),
    ),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_garbage_line, max_size=8),
    raw=st.tuples(st.sampled_from([b"", b"\x1f\x8b\x08"]), st.binary(max_size=60)).map(b"".join),
    lenient=st.booleans(),
)
def test_garbage_raises_input_file_error_and_nothing_else(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], raw: bytes, lenient: bool
) -> None:
    folder = tmp_path_factory.mktemp("garbage")
    text_file = _write(folder, "\n".join(lines), "a.log")
    binary_file = folder / "b.log"
    binary_file.write_bytes(raw)
    for path in (text_file, binary_file):
        try:
            phone = load_phone(path, skip_bad_lines=lenient)
        except InputFileError as error:
            assert error.path == str(path)
            assert error.line is None or error.line >= 1
            continue
        analyze([phone], min_interactive_hours=0.0).summary()


@settings(max_examples=300, deadline=None)
@given(
    rests=st.lists(
        st.lists(
            st.sampled_from(["1", "-", "ab", " ", "\t", "M:", "\x01", "\u2028", "\x85"]), max_size=6
        ),
        max_size=6,
    ),
    width=st.integers(1, 3),
)
def test_vectorised_tokeniser_agrees_with_splitting_each_line(
    rests: list[list[str]], width: int
) -> None:
    lines = ["M:" + "".join(parts) for parts in rests]
    grid = _tokenise("M", lines, width)
    split = [line[2:].split() for line in lines]
    if grid is None:
        assert any(len(fields) != width for fields in split) or any("\x01" in x for x in lines)
    else:
        assert grid.tolist() == split


# -- real data and speed -----------------------------------------------------------------


@pytest.mark.skipif(not REAL.is_dir(), reason=f"no real memory logs under {REAL}")
def test_real_memlog_folder_parses_and_analyses() -> None:
    phones = load_fleet([REAL])
    assert phones
    report = analyze(phones)
    assert report.summary()["n_phones"] == len(phones)


@pytest.mark.slow
def test_three_weeks_of_one_hertz_samples_parse_in_under_ten_seconds(tmp_path: Path) -> None:
    text = synthesize_phone(np.random.default_rng(3), 21 * 24, 2**31)
    path = _write(tmp_path, text + synthesize_config(2**31))
    start = time.perf_counter()
    phone = load_phone(path)
    elapsed = time.perf_counter() - start
    assert len(phone.samples) == 21 * 24 * 3600
    assert elapsed < 10.0
