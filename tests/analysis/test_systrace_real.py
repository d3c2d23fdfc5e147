"""Real captures other people made (/work/shared/data/real/systrace, see its README): the
hand-computed figures, and the same numbers whatever encoding or line end a copy has."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mqoe.analysis.systrace.model import SystraceTrace
from mqoe.analysis.systrace.parse import load_systrace
from mqoe.analysis.systrace.report import analyze
from mqoe.metrics.sched import STATE_COLUMNS

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "systrace"
COMPRESSED = "catapult__systrace_systrace_test_data_compressed_atrace_data.txt"
ATRACE = "catapult__systrace_systrace_test_data_atrace_data"
MISSING_TGIDS = "catapult__systrace_systrace_test_data_atrace_missing_tgids"
OLD_ANDROID = "catapult__tracing_test_data_android_systrace.txt"
TRIVIAL_HTML = "catapult__tracing_test_data_trivial_systrace.html"
COUNTERS_HTML = "catapult__tracing_test_data_counter_tracks.html"
US = 1_000


def real(name: str) -> Path:
    path = REAL / name
    if not path.is_file():
        pytest.skip(f"real capture not found: {path}")
    return path


def _decompressed(tmp_path: Path) -> Path:
    data = real(COMPRESSED).read_bytes()
    assert data.startswith(b"TRACE:\n")
    twin = tmp_path / "decompressed.txt"
    twin.write_bytes(zlib.decompressobj().decompress(data[len(b"TRACE:\n") :]))
    return twin


def _row(trace: SystraceTrace, tid: int) -> dict[str, int]:
    table = trace.threads.set_index("tid")
    return {c: int(table.loc[tid, c]) for c in (*STATE_COLUMNS, "other_ns")}


# -- the compressed capture: the README's hand-checked frames ---------------------------


def test_the_compressed_capture_has_the_hand_counted_frames() -> None:
    trace = load_systrace(real(COMPRESSED))
    durations = trace.frames["dur_ms"].round(3)
    assert len(durations) == 15
    assert sorted(durations[durations > 16.67].tolist(), reverse=True) == [28.677, 22.787, 18.966]
    assert float(np.median(trace.frames["dur_ns"])) / 1e6 == pytest.approx(6.146, abs=5e-4)
    summary = analyze([trace]).tables["frame_summary"].iloc[0]
    assert (summary["frames"], summary["sr"], summary["ff"]) == (15, 3, 0)


def test_the_decompressed_twin_gives_the_same_frames(tmp_path: Path) -> None:
    packed = load_systrace(real(COMPRESSED))
    plain = load_systrace(_decompressed(tmp_path))
    pd.testing.assert_frame_equal(packed.frames, plain.frames)
    assert packed.stats.container == "atrace -z" and plain.stats.container == "text"


def test_a_capture_of_markers_only_has_no_thread_states_and_says_so() -> None:
    trace = load_systrace(real(COMPRESSED))
    assert trace.stats.switches == 0 and trace.stats.markers == 1042
    assert not trace.threads["states_known"].any()
    assert any("no sched_switch" in w for w in trace.stats.warnings())
    report = analyze([trace])
    assert report.tables["thread_states"].empty  # no zeros presented as measurements
    assert trace.frames["sched_delay_ns"].isna().all() and trace.frames["io_ns"].isna().all()
    assert set(report.tables["correlation"]["cause"]) == {"binder"}


def test_atrace_unknown_names_stay_unknown_when_nothing_names_them() -> None:
    # Every line of this capture has the task `<...>` and no tgid, and it has no sched
    # events: the threads' tgid comes from their markers' pid, no name is invented.
    threads = load_systrace(real(COMPRESSED)).threads.set_index("tid")
    assert threads.loc[18964, "tgid"] == 18926  # draws (DrawFrame) for process 18926
    assert set(threads["thread"]) == {"<...>"}
    assert set(threads["process"]) == {""}


def test_the_bytes_after_the_compressed_stream_are_reported() -> None:
    trace = load_systrace(real(COMPRESSED))
    data = real(COMPRESSED).read_bytes()
    inflater = zlib.decompressobj()
    inflater.decompress(data[len(b"TRACE:\n") :])
    assert trace.stats.trailing_bytes == len(inflater.unused_data) > 0
    assert any("after the end of the compressed trace" in w for w in trace.stats.warnings())


# -- atrace_data and its twin without the tgid column -----------------------------------


def test_a_hand_traced_thread_of_atrace_data() -> None:
    trace = load_systrace(real(ATRACE))
    # sensors.qcom 14447: in at .574665, preempted .574802–.574819 and .574827–.575045,
    # exits (x) at .575143.
    assert _row(trace, 14447) == {
        "running_ns": (137 + 8 + 98) * US,
        "runnable_ns": 0,
        "runnable_preempted_ns": (17 + 218) * US,
        "sleeping_ns": 0,
        "blocked_io_ns": 0,
        "other_ns": 0,
    }
    # pandora.android 5395: woken .327439, in .327518, preempted twice by Binder_1, sleeps
    # from .328743 to the last line at 1213.465171.
    assert _row(trace, 5395) == {
        "running_ns": (221 + 32 + 185) * US,
        "runnable_ns": 79 * US,
        "runnable_preempted_ns": (24 + 763) * US,
        "sleeping_ns": 136_428 * US,
        "blocked_io_ns": 0,
        "other_ns": 0,
    }
    # The task column says dsx_exp_workque-212, the switch says adbd: the switch wins.
    assert trace.threads.set_index("tid").loc[212, "thread"] == "adbd"


def test_missing_tgids_gives_the_same_states_and_frames_as_atrace_data() -> None:
    full = load_systrace(real(ATRACE))
    missing = load_systrace(real(MISSING_TGIDS))
    pd.testing.assert_frame_equal(full.threads, missing.threads)
    pd.testing.assert_frame_equal(full.preemptions, missing.preemptions)
    pd.testing.assert_frame_equal(full.frames, missing.frames)
    a, b = analyze([full]).tables, analyze([missing]).tables
    pd.testing.assert_frame_equal(
        a["thread_states"].drop(columns="trace"), b["thread_states"].drop(columns="trace")
    )
    assert a["preemption_summary"]["preemptions"].tolist() == [2, 2]


# -- an older Android release, and the two HTML reports ---------------------------------


def test_the_older_android_capture_parses_every_line() -> None:
    trace = load_systrace(real(OLD_ANDROID))
    stats = trace.stats
    assert stats.container == "JS-escaped text"  # its lines end in `\n\`
    assert (stats.switches, stats.wakeups, stats.bad_lines, stats.other_lines) == (58, 33, 0, 0)
    victims = trace.preemptions["victim_tid"].unique().tolist()
    preemptors = analyze([trace]).tables["preemption_summary"].set_index("preemptor")
    assert victims == [11043]  # WebViewCoreThre
    assert preemptors["preemptions"].to_dict() == {"irq/409-inv_irq": 5, "kworker/0:0": 1}


def test_the_trivial_html_report_holds_three_counter_tracks() -> None:
    trace = load_systrace(real(TRIVIAL_HTML))
    assert trace.stats.container == "linuxPerfData HTML"
    assert (trace.stats.markers, trace.stats.counter_samples) == (4, 4)
    counters = trace.counters.set_index(["pid", "name"])
    assert counters.loc[(124, "VSYNC"), ["samples", "min", "max", "last"]].tolist() == [2, 0, 1, 0]
    assert counters.loc[(124, "StatusBar"), "samples"] == 1
    assert counters.loc[(360, "iq"), "last"] == 1
    assert any("no sched_switch" in w for w in trace.stats.warnings())
    assert analyze([trace]).tables["counters"]["name"].tolist() == ["VSYNC", "StatusBar", "iq"]


def test_the_counter_tracks_html_report_holds_six_tracks() -> None:
    trace = load_systrace(real(COUNTERS_HTML))
    samples = trace.counters.set_index("name")["samples"]
    assert int(samples.sum()) == trace.stats.counter_samples == 1611
    assert samples.to_dict() == {
        "VSYNC": 190,
        "StatusBar": 4,
        "iq": 352,
        "oq:Window{42a6b678 com.android.launcher": 352,
        "wq:Window{42a6b678 com.android.launcher": 352,
        "com.android.launcher/com.android.launcher2.Launcher": 361,
    }
    assert trace.counters.set_index("name").loc["VSYNC", "last"] == 0


# -- the same numbers whatever a copy's encoding or line ends ---------------------------


def _variants(tmp_path: Path, source: Path) -> list[Path]:
    """The capture re-encoded as PowerShell's `>` writes it (UTF-16 LE with a BOM), with
    a UTF-8 BOM, and with the line ends of old adb on Windows (CR CR LF) and classic CR."""
    data = source.read_bytes()
    text = data.decode("utf-8")
    out = []
    for name, blob in (
        ("utf16", text.encode("utf-16")),
        ("utf8bom", b"\xef\xbb\xbf" + data),
        ("crcrlf", data.replace(b"\n", b"\r\r\n")),
        ("cr", data.replace(b"\n", b"\r")),
        ("utf16-crlf", text.replace("\n", "\r\n").encode("utf-16")),
    ):
        path = tmp_path / f"{name}-{source.name}"
        path.write_bytes(blob)
        out.append(path)
    return out


@pytest.mark.parametrize("name", [ATRACE, MISSING_TGIDS, OLD_ANDROID, COUNTERS_HTML, "twin"])
def test_re_encoded_copies_give_exactly_the_same_numbers(tmp_path: Path, name: str) -> None:
    source = _decompressed(tmp_path) if name == "twin" else real(name)
    plain = load_systrace(source)
    for path in _variants(tmp_path, source):
        copy = load_systrace(path)
        for table in ("threads", "preemptions", "frames", "critical_path", "counters", "cpus"):
            pd.testing.assert_frame_equal(getattr(copy, table), getattr(plain, table))
        assert (copy.start_ns, copy.end_ns) == (plain.start_ns, plain.end_ns)
        assert copy.stats.contents() == plain.stats.contents()


def test_a_compressed_capture_through_adb_line_end_conversion_reads_the_same(
    tmp_path: Path,
) -> None:
    # Old `adb shell` ran atrace on a terminal, which turned every LF byte of the zlib
    # stream into CR LF; catapult's atrace agent undoes that, and so do we.
    data = real(COMPRESSED).read_bytes()
    converted = tmp_path / "crlf.txt"
    converted.write_bytes(data.replace(b"\n", b"\r\n"))
    pd.testing.assert_frame_equal(
        load_systrace(converted).frames, load_systrace(real(COMPRESSED)).frames
    )
