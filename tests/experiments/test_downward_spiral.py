"""The downward-spiral reproduction's outputs (files, metrics.csv contract, shape checks)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mqoe.experiments import EXPERIMENTS
from mqoe.experiments.downward_spiral import CASES, Case, DownwardSpiral, shape_checks
from mqoe.results import read_metrics_csv
from mqoe.results.comparison import read_comparison_csv
from mqoe.results.store import RunRecord


def _fake(case: Case, rate: float) -> RunRecord:
    """A stand-in run (no simulation) whose rate is given, to test the reporting."""
    segments = pd.DataFrame(
        {"request_s": [0.0, 4.0], "done_s": [1.0, 5.0], "rate_kbps": [rate, rate],
         "throughput_kbps": [2000.0, 2100.0]}
    )  # fmt: skip
    series = pd.DataFrame({"t_s": [1.0, 2.0], "competitor_kbps": [3000.0, 3100.0]})
    metrics = {
        "rate_alone_kbps": 1750.0, "rate_competing_kbps": rate, "rate_competing_min_kbps": rate,
        "video_tput_alone_kbps": 4800.0, "video_tput_competing_kbps": 2000.0,
        "competitor_tput_kbps": 3000.0, "jain_index": 0.96, "rebuffer_s": 0.0,
        "video_retransmits": 10, "bottleneck_drops": 20,
    }  # fmt: skip
    return RunRecord(
        run_id=f"spiral-{case.buffer_kbit}-{case.mode}", scenario="spiral", profile="nexus-5",
        seed=1, params={"buffer_kbit": case.buffer_kbit}, mqoe_version="test",
        started_utc="2026-01-01T00:00:00", wall_time_s=0.1, sim_duration_s=800.0,
        metrics=metrics, tables={"segments": segments, "timeseries": series},
    )  # fmt: skip


def _rates(spiral: float) -> dict[Case, float]:
    return {case: (spiral if case == Case(120, "discrete") else 1700.0) for case in CASES}


def test_reproduction_writes_metrics_csv_figures_and_summary(tmp_path: Path) -> None:
    rates = _rates(900.0)
    experiment = DownwardSpiral(runner=lambda quick: [(c, _fake(c, rates[c])) for c in CASES])
    path = experiment.reproduce(tmp_path, quick=True)
    assert path == tmp_path / "metrics.csv"
    rows = read_metrics_csv(path)
    conditions = {r.condition["buffer_kbit"] + "/" + r.condition["mode"] for r in rows}
    assert conditions == {f"{c.buffer_kbit}/{c.mode}" for c in CASES}
    assert {r.figure for r in rows} == {"spiral"}
    wanted = {"rate_alone_kbps", "rate_competing_kbps", "rate_competing_min_kbps",
              "video_tput_competing_kbps", "competitor_tput_kbps", "jain_index"}  # fmt: skip
    assert wanted <= {r.metric for r in rows}
    spiral_row = next(
        r for r in rows
        if r.metric == "rate_competing_kbps" and r.condition == {"buffer_kbit": "120",
                                                                 "mode": "discrete"}
    )  # fmt: skip
    assert spiral_row.value == 900.0
    shapes = read_comparison_csv(tmp_path / "comparison.csv")
    assert shapes and all(r.tolerance == "shape" for r in shapes)
    for name in ("spiral.png", "spiral-summary.png", "summary.md"):
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "spiral.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("spiral", "all_pass"), [(900.0, True), (1700.0, False)])
def test_shape_checks_fail_when_there_is_no_collapse(spiral: float, all_pass: bool) -> None:
    rates = _rates(spiral)
    results = [(c, _fake(c, rates[c])) for c in CASES]
    assert all(ok for _, ok in shape_checks(results)) is all_pass


def test_the_work_is_registered() -> None:
    assert "downward-spiral" in EXPERIMENTS


@pytest.mark.slow
def test_full_quick_reproduction_shows_the_spiral(tmp_path: Path) -> None:
    path = EXPERIMENTS["downward-spiral"].reproduce(tmp_path, quick=True)
    assert path.exists()
    assert "[ ]" not in (tmp_path / "summary.md").read_text()
