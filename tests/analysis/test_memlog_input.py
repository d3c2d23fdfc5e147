"""Memory-signal logs as phones and PCs hand them over: any encoding and line end,
unreadable paths, bad output folders, hostile text on the console, and mutated files
(only one-line user errors escape)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.memlog.load import load_fleet, load_phone
from mqoe.analysis.memlog.model import PhoneLog
from mqoe.analysis.memlog.report import analyze
from mqoe.cli.main import main
from mqoe.errors import InputFileError
from mqoe.generators.memlog import synthesize_config, synthesize_phone
from tests.fuzzing import DEEP_INPUTS, QUICK_INPUTS, fuzz
from tests.text_variants import VARIANTS
from tests.unprivileged import run_python_as_nobody, world_dir

T0 = 1_600_000_000_000
KB20 = "\t".join(str(10 * i) for i in range(1, 21))


def _same_phone(got: PhoneLog, expected: PhoneLog) -> None:
    for table in ("samples", "meminfo", "trims", "broadcasts"):
        pd.testing.assert_frame_equal(getattr(got, table), getattr(expected, table))
    assert got.config == expected.config
    assert dataclasses.replace(got.stats, skipped=()) == dataclasses.replace(
        expected.stats, skipped=()
    )
    assert [(i.line, i.what) for i in got.stats.skipped] == [
        (i.line, i.what) for i in expected.stats.skipped
    ]


# -- encodings and line ends --------------------------------------------------------------


@st.composite
def memlogs(draw: st.DrawFn) -> str:
    """A valid phone file: synthetic samples, every tag, odd but legal lines."""
    seed = draw(st.integers(0, 2**16))
    body = synthesize_phone(
        np.random.default_rng(seed), draw(st.sampled_from([0.005, 0.02])), 2**30
    )
    lines = body.splitlines()
    extras = [
        "# logger v2 — ünïcödé comment 🎞",
        "",
        "   ",
        f"D:\t{T0 + 5}\t-\t550\t0\t1\t0\t0\t0\t{KB20}",
        f"B:\t{T0 + 7}\tandroid.intent.action.SCREEN_ON",
        "GPS:\t1 2",
        f"  T :\t{T0 + 9} 10 100 1 0 0 0\t",
        synthesize_config(2**30, manufacturer="Müller & Söhne", q6_text="spielt gern 🎮").rstrip(),
    ]
    lines.insert(draw(st.integers(0, len(lines))), synthesize_config(2**30).rstrip())
    for extra in draw(st.lists(st.sampled_from(extras), max_size=6)):
        lines.insert(draw(st.integers(0, len(lines))), extra)
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):  # the logger died mid-write: a cut, unterminated last line
        text += f"M:\t{T0 + 99}\t-\t49"
    return text


_settings = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_settings
@given(text=memlogs(), lenient=st.booleans())
def test_every_encoding_and_line_end_gives_the_plain_twins_tables(
    tmp_path_factory: pytest.TempPathFactory, text: str, lenient: bool
) -> None:
    folder = tmp_path_factory.mktemp("enc")
    plain = folder / "plain.log"
    plain.write_bytes(text.encode("utf-8"))
    expected = load_phone(plain, skip_bad_lines=lenient)
    assert expected.config is not None and len(expected.samples) > 0
    for number, encode in enumerate(VARIANTS.values()):
        variant = folder / f"v{number}.log"
        variant.write_bytes(encode(text))
        _same_phone(load_phone(variant, skip_bad_lines=lenient), expected)


@_settings
@given(text=memlogs(), bad_at=st.integers(0, 200), bad=st.sampled_from(["M:\t1", "xyz", "T:\t1"]))
def test_a_bad_line_has_the_same_number_whatever_the_encoding_and_line_ends(
    tmp_path_factory: pytest.TempPathFactory, text: str, bad_at: int, bad: str
) -> None:
    lines = text.split("\n")
    lines.insert(min(bad_at, len(lines) - 1), bad)
    text = "\n".join(lines)
    folder = tmp_path_factory.mktemp("bad")
    plain = folder / "plain.log"
    plain.write_bytes(text.encode("utf-8"))
    with pytest.raises(InputFileError) as expected:
        load_phone(plain)
    assert expected.value.line is not None
    for number, encode in enumerate(VARIANTS.values()):
        variant = folder / f"v{number}.log"
        variant.write_bytes(encode(text))
        with pytest.raises(InputFileError) as got:
            load_phone(variant)
        assert (got.value.line, got.value.what) == (expected.value.line, expected.value.what)


def test_a_lone_cr_ends_a_line(tmp_path: Path) -> None:
    # Classic-Mac line ends: before textio, the file read as one line of 16 fields.
    path = tmp_path / "p.log"
    text = f"M:\t{T0}\t-\t600\t0\t1\t0\t0\t0\rM:\t{T0 + 1000}\t-\t500\t0\t1\t0\t0\t0\r"
    path.write_bytes(text.encode())
    assert load_phone(path).samples["avail_bytes"].tolist() == [600, 500]


def test_a_damaged_gzip_stream_is_one_error_naming_the_file(tmp_path: Path) -> None:
    import gzip

    data = bytearray(
        gzip.compress(synthesize_phone(np.random.default_rng(0), 0.05, 2**30).encode())
    )
    data[40] ^= 0xFF
    path = tmp_path / "p.log.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(InputFileError) as info:
        load_phone(path)
    assert info.value.path == str(path)


# -- unreadable paths, as a user who cannot read them ----------------------------------

_CLI_SCRIPT = """
import sys
from mqoe.cli.main import main
for args in {calls!r}:
    code = main(args)
    sys.stderr.flush()
    print(code, flush=True)
"""


def _as_nobody(calls: list[list[str]]) -> tuple[list[str], list[str]]:
    """Exit codes and stderr lines of ``mqoe ARGS`` for each call, run as user nobody."""
    result: subprocess.CompletedProcess[str] = run_python_as_nobody(_CLI_SCRIPT.format(calls=calls))
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout.split(), result.stderr.splitlines()


def _log_text() -> str:
    return synthesize_phone(np.random.default_rng(1), 0.01, 2**30) + synthesize_config(2**30)


def test_unreadable_files_and_folders_are_one_line_naming_them() -> None:
    with world_dir() as root:
        locked = root / "locked"  # a folder nobody may enter, holding a phone's log
        locked.mkdir()
        (locked / "p.log").write_text(_log_text())
        locked.chmod(0o000)
        fleet = root / "fleet"  # a fleet with one readable and one unreadable phone
        for phone in ("a", "b"):
            (fleet / phone).mkdir(parents=True)
            (fleet / phone / "p.log").write_text(_log_text())
        for path in (root, fleet, fleet / "a", fleet / "b", fleet / "a" / "p.log"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        (fleet / "b").chmod(0o000)
        secret = root / "secret.log"  # a file nobody may read
        secret.write_text(_log_text())
        secret.chmod(0o000)
        paths = [locked / "p.log", locked, fleet, secret]
        codes, lines = _as_nobody([["analyze", "memlog", str(p)] for p in paths])
        assert codes == ["2"] * len(paths)
        assert len(lines) == len(paths)
        for named, line in zip([locked / "p.log", locked, fleet / "b", secret], lines, strict=True):
            assert line.startswith(f"mqoe: error: {named}: ")
            assert "permission denied" in line


def test_an_output_folder_nobody_may_write_is_refused_before_parsing() -> None:
    with world_dir() as root:
        log = root / "bad.log"
        log.write_text("not a memory log\n")
        log.chmod(0o644)
        out = root / "tables"  # root's folder: nobody cannot create it
        codes, lines = _as_nobody([["analyze", "memlog", str(log), "--out", str(out)]])
        assert codes == ["2"]
        assert len(lines) == 1 and lines[0].startswith(f"mqoe: error: --out {out}: cannot write")


# -- the command line ----------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_out_pointing_at_a_file_is_refused_before_any_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "bad.log"
    log.write_text("not a memory log\n")  # parsing it would fail: the --out error comes first
    taken = tmp_path / "tables.csv"
    taken.write_text("precious results\n")
    code, _, err = _run(capsys, "analyze", "memlog", str(log), "--out", str(taken))
    assert code == 2
    assert err.strip() == f"mqoe: error: --out {taken}: is a file, expected a folder"
    assert taken.read_text() == "precious results\n"
    code, _, err = _run(capsys, "analyze", "memlog", str(log), "--out", str(taken / "sub"))
    assert code == 2 and err.count("\n") == 1 and f"--out {taken / 'sub'}" in err


def test_bad_analysis_options_are_refused_before_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "bad.log"
    log.write_text("not a memory log\n")
    code, _, err = _run(capsys, "analyze", "memlog", str(log), "--min-interactive-hours", "-1")
    assert code == 2 and "--min-interactive-hours" in err and str(log) not in err


def test_user_text_on_the_console_is_never_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    phone = tmp_path / "[bold]p1 :smile:"
    phone.mkdir()
    (phone / "p.log").write_text(
        synthesize_phone(np.random.default_rng(0), 0.01, 2**30)
        + synthesize_config(2**30, manufacturer="[/oops] [red]Acme")
    )
    out_dir = tmp_path / "[b]tables"
    code, out, err = _run(capsys, "analyze", "memlog", str(phone), "--out", str(out_dir))
    assert code == 0, err
    assert "[bold]p1 :smile:" in out
    assert "[/oops] [red]Acme" in out
    assert f"tables written to {out_dir}" in out
    assert (out_dir / "phones.csv").exists()


def test_json_summary_is_plain_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p.log").write_text(_log_text())
    code, out, _ = _run(capsys, "analyze", "memlog", str(tmp_path / "p.log"), "--json")
    assert code == 0
    assert json.loads(out)["summary"]["n_phones"] == 1.0


# -- fuzzing, through what `mqoe analyze memlog` calls ------------------------------------------


def _analyse(path: Path) -> None:
    """What the command does with the file, short of printing (comparison() only lays
    summary() out as a table)."""
    phones = load_fleet([path])
    summary = analyze(phones, min_interactive_hours=0.0).summary()
    assert summary["n_phones"] == 1.0


def _fuzz_seeds() -> list[bytes]:
    rng = np.random.default_rng(7)
    seeds = [
        (synthesize_phone(rng, hours, 2**30) + synthesize_config(2**30)).encode()
        for hours in (0.003, 0.01)
    ]
    seeds.append(
        (
            f"# hand-made\nM:\t{T0}\t12\t600\t0\t1\t0\t0\t1\n"
            f"D:\t{T0 + 1000}\t-\t550\t5\t1\t1\t0\t0\t{KB20}\n"
            f"T:\t{T0 + 1500}\t15\t540\t1\t0\t1\t0\n"
            f"B:\t{T0 + 2000}\tSCREEN_OFF\n"
            f"M:\t{T0 + 3000}\t12\t600\t0\t0\t0\t0\t1\n"
            f"C:\t{T0}\t34\t3\t4\t2\t5\t1\tlikes games\tHMD Global\t1000\t150\t1\t4\t29\n"
        ).encode()
    )
    return seeds


def test_fuzzed_memlogs_give_a_report_or_one_user_error(tmp_path: Path) -> None:
    counts = fuzz(_analyse, _fuzz_seeds(), tmp_path, QUICK_INPUTS, suffix=".log")
    assert counts["accepted"] > 0 and counts["user_errors"] > 0


@pytest.mark.slow
def test_deep_fuzzed_memlogs_give_a_report_or_one_user_error(tmp_path: Path) -> None:
    counts = fuzz(_analyse, _fuzz_seeds(), tmp_path, DEEP_INPUTS, seed=1, suffix=".log")
    assert counts["accepted"] > 0 and counts["user_errors"] > 0
