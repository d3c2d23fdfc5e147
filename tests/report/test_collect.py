"""Reading reproduction folders: discovery, the runs summary, and unreadable parts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mqoe.errors import UserError
from mqoe.report.collect import find_reproductions, load_reproduction
from tests.report.conftest import comparison_rows, run_record, three_runs

Make = Callable[..., Path]


def test_a_single_reproduction_folder_is_its_own_report(
    tmp_path: Path, make_reproduction: Make
) -> None:
    folder = make_reproduction(tmp_path, "only")
    assert find_reproductions(folder) == [folder]


def test_a_parent_folder_lists_its_reproductions_sorted_and_skips_other_folders(
    tmp_path: Path, make_reproduction: Make
) -> None:
    b = make_reproduction(tmp_path, "b-work")
    a = make_reproduction(tmp_path, "a-work")
    (tmp_path / "not-a-work").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    assert find_reproductions(tmp_path) == [a, b]
    assert find_reproductions(tmp_path, ["b-work", "a-work", "b-work"]) == [b, a]


def test_unknown_work_missing_folder_and_empty_folder_are_user_errors(
    tmp_path: Path, make_reproduction: Make
) -> None:
    make_reproduction(tmp_path, "a-work")
    with pytest.raises(UserError, match=r"no reproduction 'zzz'.*available: a-work"):
        find_reproductions(tmp_path, ["zzz"])
    with pytest.raises(UserError, match="no such folder"):
        find_reproductions(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no reproduction found"):
        find_reproductions(tmp_path / "empty")


def test_runs_summary_counts_times_seeds_versions_and_parameter_sets(
    tmp_path: Path, make_reproduction: Make
) -> None:
    rep = load_reproduction(make_reproduction(tmp_path, runs=three_runs()))
    runs = rep.runs
    assert runs is not None
    assert runs.runs == 3
    assert runs.wall_time_total_s == pytest.approx(7.0)
    assert runs.wall_time_median_s == pytest.approx(2.0)
    assert runs.sim_time_total_s == pytest.approx(90.0)
    assert runs.seeds == (1, 2)
    assert runs.versions == ("9.9.9",)
    assert runs.first_started_utc.startswith("2026-01-01")
    assert runs.last_started_utc.startswith("2026-01-02")
    (video,) = runs.scenarios
    assert video.runs == 3
    assert video.constant == {"genre": "travel"}
    assert video.varying == ("bitrate",)
    by_bitrate = {p.params["bitrate"]: p for p in video.param_sets}
    assert set(by_bitrate) == {"500", "900"}
    assert (by_bitrate["900"].runs, by_bitrate["900"].seeds) == (2, (1, 2))
    assert (by_bitrate["500"].runs, by_bitrate["500"].seeds) == (1, (1,))


def test_a_parameter_only_some_runs_have_varies(tmp_path: Path, make_reproduction: Make) -> None:
    runs = [
        run_record("a", seed=1, wall=1.0, params={"x": 1}),
        run_record("b", seed=1, wall=1.0, params={"x": 1, "extra": True}),
    ]
    summary = load_reproduction(make_reproduction(tmp_path, runs=runs)).runs
    assert summary is not None
    (video,) = summary.scenarios
    assert video.constant == {"x": "1"}
    assert video.varying == ("extra",)
    assert sorted(p.params["extra"] for p in video.param_sets) == ["true", "—"]


def test_comparison_figures_summary_and_metrics_are_read(
    tmp_path: Path, make_reproduction: Make
) -> None:
    rep = load_reproduction(
        make_reproduction(tmp_path, comparison=comparison_rows(), svg_only=("schematic",))
    )
    assert rep.comparison is not None
    assert [r.verdict for r in rep.comparison] == ["met", "not met", "reference", "met"]
    assert [(f.name, f.mime) for f in rep.figures] == [
        ("drop-grid", "image/png"),
        ("schematic", "image/svg+xml"),
        ("thread-states", "image/png"),
    ]
    assert rep.summary is not None and rep.summary[0] == "summary.md"
    assert rep.metrics_rows == 1
    assert rep.runs is None  # no results store
    assert rep.problems == ()


def test_a_broken_comparison_csv_and_a_fake_png_become_problems_not_crashes(
    tmp_path: Path, make_reproduction: Make
) -> None:
    folder = make_reproduction(tmp_path)
    (folder / "comparison.csv").write_text("section,what\nx,y\n")
    (folder / "fake.png").write_bytes(b"<svg onload=alert(1)>")
    rep = load_reproduction(folder)
    assert rep.comparison is None
    assert [f.name for f in rep.figures] == ["drop-grid", "thread-states"]
    assert len(rep.problems) == 2
    assert "comparison.csv:1: expected the header" in rep.problems[0]
    assert "fake.png: not a PNG file" in rep.problems[1]


def test_comparison_md_is_preferred_over_summary_md(
    tmp_path: Path, make_reproduction: Make
) -> None:
    folder = make_reproduction(tmp_path)
    (folder / "comparison.md").write_text("# published vs simulated\n")
    rep = load_reproduction(folder)
    assert rep.summary == ("comparison.md", "# published vs simulated\n")
