"""``mqoe analyze anr`` on paths it cannot read and outputs it cannot write: one line
naming the path (exit 2), checked before any parsing, never a traceback."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from mqoe.cli import analyze_anr
from mqoe.cli.main import main
from mqoe.errors import UserError
from mqoe.generators.anr.event import synth_anr
from mqoe.generators.anr.fleet import write_synth_dir
from tests.unprivileged import run_as_nobody, world_dir


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    analyze_anr.add_arguments(parser)
    return analyze_anr.run(parser.parse_args(argv))


def _one_line_error(result: object, path: Path, what: str) -> None:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.returncode == 2, stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr and "PermissionError" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert str(path) in lines[0] and what in lines[0], lines[0]


def _trace(folder: Path, name: str = "anr_1.txt") -> Path:
    text, _ = synth_anr(np.random.default_rng(3), "wam")
    path = folder / name
    path.write_text(text, encoding="utf-8")
    path.chmod(0o644)
    return path


def test_file_inside_an_unreadable_folder_is_permission_denied_not_missing() -> None:
    with world_dir() as root:
        locked = root / "locked"
        locked.mkdir()
        trace = _trace(locked)
        locked.chmod(0o000)
        result = run_as_nobody(["analyze", "anr", str(trace), "--workers", "1"])
        _one_line_error(result, trace, "permission denied")


def test_unreadable_folder_is_named_not_reported_empty() -> None:
    with world_dir() as root:
        locked = root / "locked"
        locked.mkdir()
        _trace(locked)
        locked.chmod(0o000)
        result = run_as_nobody(["analyze", "anr", str(locked), "--workers", "1"])
        _one_line_error(result, locked, "permission denied")
        assert "no files" not in result.stderr


def test_unreadable_subfolder_is_named_not_skipped() -> None:
    with world_dir() as root:
        _trace(root)
        inner = root / "more"
        inner.mkdir()
        _trace(inner)
        inner.chmod(0o000)
        result = run_as_nobody(["analyze", "anr", str(root), "--workers", "1"])
        _one_line_error(result, inner, "permission denied")


def test_unreadable_file_is_one_line_or_skipped_with_the_flag() -> None:
    with world_dir() as root:
        _trace(root, "anr_1.txt")
        secret = _trace(root, "anr_2.txt")
        secret.chmod(0o000)
        result = run_as_nobody(["analyze", "anr", str(root), "--workers", "1"])
        _one_line_error(result, secret, "permission denied")
        skipped = run_as_nobody(
            ["analyze", "anr", str(root), "--workers", "1", "--skip-bad-files", "--json"]
        )
        assert skipped.returncode == 0, skipped.stderr
        payload = json.loads(skipped.stdout)
        assert [Path(b["file"]).name for b in payload["bad_files"]] == ["anr_2.txt"]
        assert len(payload["events"]) == 1


def test_unwritable_output_folder_is_refused_before_parsing() -> None:
    with world_dir() as root:
        bad = root / "not-a-trace.txt"
        bad.write_text("hello\n")
        bad.chmod(0o644)
        readonly = root / "readonly"
        readonly.mkdir()  # root's, mode 755: nobody cannot create files in it
        for option in ("--csv", "--plot"):
            result = run_as_nobody(["analyze", "anr", str(bad), option, str(readonly)])
            # the output is checked first: the input's own error is never reached
            _one_line_error(result, readonly, option)
            assert "not an ANR trace" not in result.stderr


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_output_option_naming_a_file_is_refused_before_parsing(
    tmp_path: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("not a trace\n")
    target = tmp_path / "out.csv"
    target.write_text("keep me\n")
    with pytest.raises(UserError, match=rf"{option} .*out\.csv.*is a file"):
        _run([str(bad), option, str(target)])
    assert target.read_text() == "keep me\n"
    assert main(["analyze", "anr", str(bad), option, str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "out.csv" in err


def test_nothing_to_plot_is_one_line_and_no_empty_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Only watchdog kills: no app ANR, so the per-app Zipf figure has nothing to show.
    data = tmp_path / "anr"
    data.mkdir()
    text, truth = synth_anr(np.random.default_rng(5), "wam", variant="watchdog_fsync")
    assert truth.anr.watchdog is not None
    (data / "anr_0.txt").write_text(text, encoding="utf-8")
    plots = tmp_path / "plots"
    assert _run([str(data), "--plot", str(plots), "--workers", "1"]) == 0
    assert (plots / "cluster_sizes.png").read_bytes()[:4] == b"\x89PNG"
    assert not (plots / "zipf.png").exists()
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "zipf.png" in line]
    assert len(notes) == 1 and "no app ANR" in notes[0]


def test_markup_in_file_names_is_printed_verbatim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a short relative path: the table does not wrap it
    write_synth_dir(Path("[red]x[/red]"), 2, seed=2)
    assert _run(["[red]x[/red]", "--workers", "1"]) == 0
    assert "[red]x[/red]/anr_0000" in capsys.readouterr().out
