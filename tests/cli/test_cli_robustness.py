"""The command line under a new user's mistakes: user text is printed as text (no Rich
markup or emoji codes), a closed pipe ends a command quietly, outputs are checked before
any work, and bad parameters are one line with exit code 2, never a traceback."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.cli import main as cli
from mqoe.cli.console import one_line
from mqoe.cli.main import EXIT_BROKEN_PIPE, main
from mqoe.device.profiles.loader import CATALOG_DIR
from mqoe.errors import UserError
from tests.unprivileged import run_as_nobody, world_dir

NOKIA = (CATALOG_DIR / "nokia-1.toml").read_text(encoding="utf-8")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _user_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run ``argv``, expect a one-line user error (exit 2), return the message."""
    code, _, err = _run(capsys, *argv)
    assert code == 2, err
    assert err.startswith("mqoe: error: ") and err.count("\n") == 1, err
    return err.removeprefix("mqoe: error: ").rstrip("\n")


# -- 1. user text is text ----------------------------------------------------------------
def test_an_error_at_line_100_shows_the_line_number_not_an_emoji(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "p.toml"
    path.write_text("#\n" * 99 + "name = = 1\n", encoding="utf-8")
    message = _user_error(capsys, "profiles", "show", str(path))
    assert f"{path}:100: not valid TOML" in message
    assert "\N{HUNDRED POINTS SYMBOL}" not in message


def test_markup_and_emoji_codes_in_a_profile_are_printed_literally(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = NOKIA.replace(
        'display_name = "Nokia 1"', 'display_name = "[bold red]Nokia[/] :smile: :100:"'
    )
    path = tmp_path / "mine.toml"
    path.write_text(text, encoding="utf-8")
    code, out, _ = _run(capsys, "profiles", "show", str(path))
    assert code == 0
    assert "display_name: [bold red]Nokia[/] :smile: :100:" in out


def test_a_results_folder_with_markup_in_its_name_is_printed_as_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "res [red]x[/red] :100:"
    code, out, _ = _run(
        capsys, "run", "frame-deadlines", "--set", "duration_s=0.2", "--out", str(folder)
    )
    assert code == 0
    assert f"in {folder}" in " ".join(out.split())


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None, max_examples=30
)
@given(st.text(max_size=60))
def test_any_error_message_is_printed_as_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, message: str
) -> None:
    def fail(args: object) -> int:
        raise UserError(message)

    monkeypatch.setitem(cli.COMMANDS, "reproduce", fail)
    code = main(["reproduce"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == one_line(f"mqoe: error: {message}") + "\n"
    assert err.startswith("mqoe: error:") and err.count("\n") == 1


@given(st.text(max_size=80))
def test_one_line_keeps_printable_text_and_flattens_the_rest(text: str) -> None:
    line = one_line(text)
    assert line.isprintable()
    if text.isprintable() and text == text.strip():
        assert line == text


def test_one_line_joins_a_multi_line_database_error() -> None:
    text = 'Parser Error: syntax error at or near "selec"\n\nLINE 1: selec nothing\n        ^'
    assert one_line(text) == 'Parser Error: syntax error at or near "selec" LINE 1: selec nothing ^'
    assert one_line("bell\x07 and \x1b[31mred") == "bell\\x07 and \\x1b[31mred"


# -- 2. a closed pipe ends the command quietly -------------------------------------------
def _mqoe(*args: str) -> list[str]:
    return [sys.executable, "-m", "mqoe", *args]


@contextlib.contextmanager
def _pipe(capacity: int | None = None) -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    try:
        if capacity is not None:
            import fcntl

            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, capacity)
        yield read, write
    finally:
        for fd in (read, write):
            with contextlib.suppress(OSError):
                os.close(fd)


def _assert_quiet_exit(code: int, err: bytes, codes: tuple[int, ...] = (141,)) -> None:
    text = err.decode("utf-8", "replace")
    for word in ("Traceback", "BrokenPipe", "Exception ignored", "Errno 32"):
        assert word not in text, text
    assert EXIT_BROKEN_PIPE == 141
    assert code in codes


# A reader that leaves while a write is blocked makes that write return short, without an
# error, and CPython then drops the rest of its buffer: the command learns of the closed
# pipe only if it writes again (141), else it ends normally (0). Quiet either way.
AFTER_HEAD = (0, EXIT_BROKEN_PIPE)


def _into_a_closed_pipe(args: list[str], cwd: Path) -> tuple[int, bytes]:
    """Run with stdout a pipe whose reader has already gone (like ``| true``)."""
    with _pipe() as (read, write):
        os.close(read)
        proc = subprocess.run(args, stdout=write, stderr=subprocess.PIPE, cwd=cwd, timeout=300)
    return proc.returncode, proc.stderr


def _into_head(args: list[str], cwd: Path, head_bytes: int = 20) -> tuple[int, bytes, bytes]:
    """Run with stdout a one-page pipe into a reader that takes a few bytes and leaves
    (like ``| head -c 20``); the command's output must be longer than a page."""
    pytest.importorskip("fcntl")
    with _pipe(capacity=4096) as (read, write):
        proc = subprocess.Popen(args, stdout=write, stderr=subprocess.PIPE, cwd=cwd)
        os.close(write)
        head = os.read(read, head_bytes)  # unbuffered: the rest stays in the full pipe
        os.close(read)
        _, err = proc.communicate(timeout=300)
    return proc.returncode, head, err


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--list"],
        ["profiles", "show", "nokia-1", "--json"],
        ["--help"],
    ],
    ids=["run-list", "profiles-show-json", "help"],
)
def test_output_into_a_closed_pipe_exits_quietly(tmp_path: Path, args: list[str]) -> None:
    _assert_quiet_exit(*_into_a_closed_pipe(_mqoe(*args), tmp_path))


def test_a_long_listing_piped_into_head_exits_quietly(tmp_path: Path) -> None:
    code, head, err = _into_head(_mqoe("profiles", "list"), tmp_path)
    assert head == b"device profiles".ljust(20)  # the reader saw the start of the table
    _assert_quiet_exit(code, err, AFTER_HEAD)


@pytest.mark.slow
def test_analyser_json_piped_into_head_exits_quietly(tmp_path: Path) -> None:
    made = subprocess.run(
        _mqoe("analyze", "examples", "ex", "--anr-files", "40"),
        cwd=tmp_path, capture_output=True, check=False, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    for args in (["anr", "ex/anr/", "--json"], ["layout", "ex/layout/window_dump.xml", "--json"]):
        code, head, err = _into_head(_mqoe("analyze", *args), tmp_path)
        assert head.lstrip().startswith(b"{")
        _assert_quiet_exit(code, err, AFTER_HEAD)


# -- 3. parameters are checked before simulating -----------------------------------------
@pytest.mark.parametrize(
    ("scenario", "assignment"),
    [
        ("frame-deadlines", "duration_s=nan"),
        ("frame-deadlines", "duration_s=1e400"),
        ("spiral", "rtt_ms=nan"),
        ("frame-deadlines", "frame_mcycles=inf"),
        ("spiral", "competitor_start_s=-10"),
    ],
)
def test_bad_numbers_fail_in_one_line_before_anything_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, scenario: str, assignment: str
) -> None:
    started = time.perf_counter()
    out = tmp_path / "res"
    message = _user_error(capsys, "run", scenario, "--set", assignment, "--out", str(out))
    assert message.startswith(f"--set {assignment}: expected")
    assert time.perf_counter() - started < 5
    assert not out.exists()  # nothing created for a run that never started


# -- 4. outputs are checked before any work ----------------------------------------------
@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any simulation, reproduction or calibration fail the test if it starts."""

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started before the output was checked")

    monkeypatch.setattr("mqoe.workloads.runner.run_scenario", boom)
    monkeypatch.setattr("mqoe.workloads.runner.run_population", boom)
    monkeypatch.setattr("mqoe.device.gpu_content.calibrate", boom)
    monkeypatch.setattr("mqoe.experiments.reproduction.reproduce_works", boom)
    from mqoe.experiments import EXPERIMENTS

    for experiment in EXPERIMENTS.values():
        monkeypatch.setattr(experiment, "reproduce", boom)


def _bad_places(tmp_path: Path) -> dict[str, Path]:
    afile = tmp_path / "afile"
    afile.write_text("x")
    return {"a-file": afile, "under-a-file": afile / "sub", "proc": Path("/proc/mqoe-x")}


@pytest.mark.parametrize("place", ["a-file", "under-a-file", "proc"])
@pytest.mark.parametrize(
    "argv",
    [
        ["run", "frame-deadlines", "--set", "duration_s=0.1", "--out", "{}"],
        ["run", "fleet", "--set", "phones=10", "days=1", "--out", "{}"],
        ["reproduce", "gpu-buffers", "--quick", "--out", "{}"],
        ["reproduce", "all", "--quick", "--out", "{}"],
    ],
    ids=["run", "run-population", "reproduce", "reproduce-all"],
)
def test_an_unwritable_out_folder_is_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, no_work: None, argv: list[str], place: str
) -> None:
    target = _bad_places(tmp_path)[place]
    message = _user_error(capsys, *(str(target) if a == "{}" else a for a in argv))
    assert message.startswith(f"--out {target}:")


def test_calibrate_refuses_an_unwritable_out_before_measuring(
    capsys: pytest.CaptureFixture[str], no_work: None
) -> None:
    target = "/proc/mqoe-table.json"  # the folder exists; no file can be made in it
    message = _user_error(capsys, "calibrate", "lz4", "--pages", "8", "--out", target)
    assert message.startswith("--out /proc: cannot write there")


def _names_the_output(message: str, option: str, target: Path) -> bool:
    """The refusal names the option and the file, or the folder that cannot take it."""
    return message.startswith((f"{option} {target}: ", f"{option} {target.parent}: "))


def _metrics_csv(path: Path) -> Path:
    path.write_text(
        "figure,profile,condition,metric,value,unit\nf1,nokia-1,,rate_kbps,100,kbit/s\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("place", ["a-folder", "under-a-file", "proc"])
def test_compare_refuses_an_unwritable_out_before_comparing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, place: str
) -> None:
    places = {**_bad_places(tmp_path), "a-folder": tmp_path}
    target = places[place] if place == "a-folder" else places[place] / "comparison.csv"
    sim = _metrics_csv(tmp_path / "sim.csv")
    code, out, err = _run(capsys, "compare", str(sim), str(sim), "--out", str(target))
    assert code == 2 and not out  # refused before the comparison is printed
    assert _names_the_output(err.removeprefix("mqoe: error: "), "--out", target), err


@pytest.mark.parametrize("option", ["--output", "--screenshot"])
@pytest.mark.parametrize("place", ["a-folder", "under-a-file", "proc"])
def test_report_refuses_an_unwritable_output_before_building(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str, place: str
) -> None:
    places = {**_bad_places(tmp_path), "a-folder": tmp_path}
    target = places[place] if place == "a-folder" else places[place] / "report.html"
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    message = _user_error(capsys, "report", str(empty), option, str(target))
    assert _names_the_output(message, option, target), message  # not "no reproduction found"


@pytest.mark.parametrize("place", ["a-folder", "under-a-file", "proc"])
def test_results_export_refuses_an_unwritable_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, place: str
) -> None:
    results = tmp_path / "res"
    assert _run(capsys, "run", "frame-deadlines", "--set", "duration_s=0.1", "--out",
                str(results))[0] == 0  # fmt: skip
    places = {**_bad_places(tmp_path), "a-folder": tmp_path / "runs.csv"}
    places["a-folder"].mkdir()
    target = places[place] if place == "a-folder" else places[place] / "runs.csv"
    message = _user_error(capsys, "results", "export", "runs", str(target), "--results",
                          str(results))  # fmt: skip
    assert _names_the_output(message, "results export", target), message


def test_an_out_folder_nobody_may_write_is_refused(tmp_path: Path) -> None:
    with world_dir() as folder:
        locked = folder / "locked"
        locked.mkdir(mode=0o555)
        locked.chmod(0o555)
        result = run_as_nobody(
            ["run", "frame-deadlines", "--set", "duration_s=0.1", "--out", str(locked / "r")]
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"mqoe: error: --out {locked / 'r'}: cannot write there")
    assert result.stderr.count("\n") == 1


# -- 5. silent misreadings ---------------------------------------------------------------
def test_an_empty_profile_name_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, no_work: None
) -> None:
    message = _user_error(capsys, "run", "frame-deadlines", "--profile", "", "--out",
                          str(tmp_path))  # fmt: skip
    assert "--profile" in message and "empty" in message


@pytest.mark.parametrize(
    "sets",
    [
        ["--set", "hogs=1", "hogs=2"],
        ["--set", "hogs=1", "--set", "hogs=2"],
        ["--set", "hogs=1", "--set", " hogs =1"],
    ],
)
def test_a_parameter_set_twice_is_refused_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, no_work: None, sets: list[str]
) -> None:
    message = _user_error(capsys, "run", "frame-deadlines", *sets, "--out", str(tmp_path))
    assert "'hogs'" in message and "twice" in message


# -- 6. more places a new user trips -----------------------------------------------------
@pytest.mark.parametrize(
    ("seed", "fragment"),
    [
        ("-1", "--seed -1: expected"),
        ("1e3", "--seed 1e3: expected"),
        ("99999999999999999999999", "--seed 99999999999999999999999: expected"),
        ("", "--seed : expected"),
        ("1.0", "--seed 1.0: expected"),
    ],
)
def test_bad_seeds_are_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, no_work: None, seed: str, fragment: str
) -> None:
    out = tmp_path / "res"
    message = _user_error(capsys, "run", "frame-deadlines", "--seed", seed, "--out", str(out))
    assert message.startswith(fragment)
    assert "non-negative integer" in message
    assert not out.exists()


def test_an_unknown_scenario_creates_no_results_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MQOE_RESULTS", raising=False)
    assert "unknown scenario" in _user_error(capsys, "run", "no-such-thing")
    assert "no parameter" in _user_error(capsys, "run", "frame-deadlines", "--set", "x=1")
    assert not (tmp_path / "mqoe-results").exists()


@pytest.mark.parametrize("sql", ["", "   ", "-- only a comment", ";"])
def test_an_empty_query_is_a_user_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, sql: str
) -> None:
    _run(capsys, "run", "frame-deadlines", "--set", "duration_s=0.1", "--out", str(tmp_path))
    message = _user_error(capsys, "results", "query", sql, "--results", str(tmp_path))
    assert "query failed" in message


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig"])
def test_profiles_saved_by_windows_editors_load(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, encoding: str
) -> None:
    path = tmp_path / "mine.toml"
    text = NOKIA.replace('name = "nokia-1"', 'name = "mine"').replace("\n", "\r\n")
    data = text.encode(encoding)
    if encoding in ("utf-16-le", "utf-16-be"):  # these codecs write no BOM: add one
        data = ("\ufeff" + text).encode(encoding)
    path.write_bytes(data)
    code, out, err = _run(capsys, "profiles", "show", str(path), "--json")
    assert code == 0, err
    assert '"name": "mine"' in out


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"\xff\xfe\x00\xd8x\x00", "not UTF-16"),  # a BOM, then half a surrogate pair
        (b'name = "\xe9t\xe9"\n', "not UTF-8"),  # Latin-1 bytes
    ],
)
def test_undecodable_profiles_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data: bytes, fragment: str
) -> None:
    path = tmp_path / "p.toml"
    path.write_bytes(data)
    message = _user_error(capsys, "profiles", "show", str(path))
    assert message.startswith(f"{path}")
    assert fragment in message


def test_a_profile_folder_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    message = _user_error(capsys, "profiles", "show", str(folder))
    assert message == f"{folder}: is a folder, expected a profile .toml file"


def test_an_unreadable_profile_is_a_one_line_error() -> None:
    with world_dir() as folder:
        path = folder / "secret.toml"
        path.write_text(NOKIA, encoding="utf-8")
        path.chmod(0o600)
        result = run_as_nobody(["profiles", "show", str(path)])
    assert result.returncode == 2
    assert result.stderr == f"mqoe: error: {path}: permission denied (cannot read it)\n"
