"""`mqoe analyze systrace` on what users really pass it: truncated tables said so, traces
without scheduler events, unreadable paths, output folders that cannot be written, figures
with nothing to draw, and names that look like Rich markup — one line each, no traceback."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from mqoe.cli import analyze_systrace as cli
from mqoe.errors import UserError
from mqoe.generators.systrace.trace import synth_systrace
from tests.analysis.test_systrace import _frames_trace, _states_trace, switch, wake
from tests.unprivileged import run_as_nobody, world_dir

COUNTERS_ONLY = (
    "# tracer: nop\n"
    "     hwc_eventmon-336   [000] 50260.929925: 0: C|124|VSYNC|1\n"
    "         Binder_1-340   [000] 50260.935656: 0: C|124|StatusBar|1\n"
    "     hwc_eventmon-336   [000] 50260.946573: 0: C|124|VSYNC|0\n"
)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def _write(folder: Path, text: str, name: str = "t.trace") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _synth(folder: Path) -> Path:
    text, _ = synth_systrace(np.random.default_rng(4), duration_s=0.5)
    return _write(folder, text)


# -- what the output says it left out ---------------------------------------------------


def test_json_says_how_many_threads_top_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _synth(tmp_path)
    assert _cli([str(path), "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    total = full["thread_states_total"]
    assert full["thread_states_shown"] == total == len(full["thread_states"]) > 2
    assert full["notes"] == []
    assert _cli([str(path), "--json", "--top", "2"]) == 0
    top = json.loads(capsys.readouterr().out)
    assert (top["thread_states_shown"], top["thread_states_total"]) == (2, total)
    assert len(top["thread_states"]) == 2
    assert any("top 2" in note and f"of {total}" in note for note in top["notes"])


def test_the_text_output_says_the_thread_table_is_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli([str(_synth(tmp_path)), "--top", "3"]) == 0
    assert "thread states (top 3 per trace by running time: 3 of" in capsys.readouterr().out


def test_a_trace_without_sched_switch_reports_no_thread_states(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, _frames_trace())  # trace markers only
    assert _cli([str(path), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    trace = payload["traces"][0]
    assert trace["thread_states_known"] is False
    assert trace["contents"]["sched_switch"] == 0 and trace["contents"]["trace_markers"] > 0
    assert any("no sched_switch events" in w for w in trace["warnings"])
    assert payload["thread_states"] == [] and payload["thread_states_total"] == 0
    assert sum(row["frames"] for row in payload["frame_summary"]) == 3
    slow = payload["slow_frames"][0]
    assert slow["sched_delay_ns"] is None and slow["io_ns"] is None  # unknown, not 0
    assert _cli([str(path)]) == 0
    captured = capsys.readouterr()
    assert "unknown (no sched_switch events)" in captured.out
    assert "no sched_switch events: thread states" in captured.err


def test_counter_tracks_are_reported_in_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, COUNTERS_ONLY)
    assert _cli([str(path), "--json"]) == 0
    counters = json.loads(capsys.readouterr().out)["counters"]
    assert [(c["name"], c["samples"], c["min"], c["max"], c["last"]) for c in counters] == [
        ("VSYNC", 2, 0.0, 1.0, 0.0), ("StatusBar", 1, 1.0, 1.0, 1.0)]  # fmt: skip
    assert _cli([str(path)]) == 0
    shown = capsys.readouterr().out
    assert "counter tracks" in shown and "StatusBar" in shown
    assert "3 trace markers (0 slices, 3 counter samples in 2 tracks" in shown


# -- output folders and figures ---------------------------------------------------------


def test_plot_with_nothing_to_plot_is_one_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plots = tmp_path / "plots"
    assert _cli([_write(tmp_path, COUNTERS_ONLY).as_posix(), "--plot", str(plots)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    notes = [line for line in err if "no figure" in line]
    assert len(notes) == 1
    assert "frames (no frames in the trace)" in notes[0]
    assert "thread states (no sched_switch events)" in notes[0]
    assert list(plots.iterdir()) == []


def test_plot_of_a_trace_with_frames_but_no_thread_states(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plots = tmp_path / "plots"
    assert _cli([_write(tmp_path, _frames_trace()).as_posix(), "--plot", str(plots)]) == 0
    assert sorted(p.name.split("-", 2)[-1] for p in plots.iterdir()) == [
        "causes.png", "frames.png"]  # fmt: skip
    assert "no figure for thread states" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--plot", "--csv"])
def test_an_output_path_that_is_a_file_is_refused_before_parsing(
    tmp_path: Path, option: str
) -> None:
    bad_trace = _write(tmp_path, _states_trace() + "  x-1 [000] 1000.1: sched_switch: junk\n")
    target = _write(tmp_path, "not a folder", "out")
    with pytest.raises(UserError, match=rf"{option} .*out: is a file"):
        _cli([str(bad_trace), option, str(target)])  # the trace's bad line is never reached


# -- names that look like markup --------------------------------------------------------


def test_thread_and_file_names_are_not_read_as_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = ("[/oops] [bold]x", 4321)
    text = wake(0, 0, ("<idle>", 0), odd) + switch(0, 5, ("<idle>", 0), "R", odd)
    text += switch(0, 25, odd, "S", ("<idle>", 0)) + "  x-9 [000] 1000.1: sched_switch: junk\n"
    path = _write(tmp_path, text, "[red]capture.trace")
    assert _cli([str(path), "--skip-bad-lines"]) == 0
    captured = capsys.readouterr()
    assert "[/oops] [bold]x" in captured.out
    assert "[red]capture.trace: 1 bad lines skipped" in captured.err


# -- unreadable paths, as a user who cannot read them -----------------------------------


def test_unreadable_paths_are_one_line_naming_them() -> None:
    with world_dir() as root:
        locked = root / "locked"
        locked.mkdir()
        inside = _write(locked, _states_trace())
        unreadable = _write(root, _states_trace(), "secret.trace")
        locked.chmod(0o000)
        unreadable.chmod(0o000)
        for target, what in (
            (inside, "permission denied"),
            (unreadable, "permission denied"),
            (locked, "is a folder"),
        ):
            result = run_as_nobody(["analyze", "systrace", str(target)])
            assert result.returncode == 2, result.stderr
            assert "Traceback" not in result.stderr
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and str(target) in lines[0] and what in lines[0]


def test_an_unwritable_csv_folder_is_refused_before_parsing() -> None:
    with world_dir() as root:
        bad_trace = _write(root, _states_trace() + "  x-1 [000] 1000.1: sched_switch: junk\n")
        bad_trace.chmod(0o644)
        result = run_as_nobody(["analyze", "systrace", str(bad_trace), "--csv", str(root / "out")])
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        expected = f"mqoe: error: --csv {root / 'out'}: cannot write there (Permission denied)"
        assert result.stderr.strip().splitlines() == [expected]
