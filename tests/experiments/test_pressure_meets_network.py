"""The pressure-meets-network study's outputs: metrics.csv, summary, checks, figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqoe.experiments import EXPERIMENTS
from mqoe.experiments.pressure_meets_network import (
    METRICS,
    Cell,
    PressureMeetsNetwork,
    cells,
    shape_checks,
    summary_table,
)
from mqoe.results import read_metrics_csv
from mqoe.results.comparison import read_comparison_csv
from mqoe.results.store import RunRecord


def _fake(cell: Cell, seed: int, bitrate: float, drops: float, crashed: bool) -> RunRecord:
    metrics = {
        "mean_bitrate_kbps": bitrate, "frame_drop_pct": drops, "rebuffer_s": 0.5,
        "crashed": crashed, "segment_throughput_kbps": 9000.0, "sock_peak_kb": 120,
        "softirq_cpu_s": 0.1, "kswapd_cpu_s": 2.0, "switch_count": 3,
    }  # fmt: skip
    return RunRecord(
        run_id=f"vs-{cell.pressure}-{cell.network}-{cell.rule.replace('+', '_')}-{seed}",
        scenario="video-stream",
        profile="nokia-1", seed=seed, params=cell.overrides(True), mqoe_version="test",
        started_utc="2026-01-01T00:00:00", wall_time_s=0.1, sim_duration_s=70.0,
        metrics=metrics, tables={},
    )  # fmt: skip


def _world(cell: Cell, seed: int) -> RunRecord:
    """Stand-in numbers with the expected shapes: pressure crashes the high bitrates,
    the cap lowers the bitrate, the competitor lowers the throughput rule's choice."""
    high = cell.rule == "throughput"
    bitrate = 7000.0 if high else (500.0 if cell.rule == "bba+memory-aware" else 800.0)
    if cell.network == "shared":
        bitrate = min(bitrate, 1000.0)
    crashed = high and cell.pressure == "critical" and cell.network == "fast" and seed == 1
    return _fake(cell, seed, bitrate, 10.0 if high else 0.5, crashed)


def test_the_study_writes_its_metrics_summary_checks_and_figure(tmp_path: Path) -> None:
    grid = cells(quick=True)
    study = PressureMeetsNetwork(
        runner=lambda quick: [(c, _world(c, s)) for c in grid for s in (1, 2)]
    )
    path = study.reproduce(tmp_path, quick=True)
    rows = read_metrics_csv(path)
    assert {r.figure for r in rows} == {"pressure-meets-network"}
    assert len(rows) == len(grid) * len(METRICS)
    crash = next(
        r for r in rows
        if r.metric == "crash_pct"
        and r.condition == {"pressure": "critical", "network": "fast", "rule": "throughput"}
    )  # fmt: skip
    assert crash.value == 50.0  # one of the two seeds crashed
    checks = read_comparison_csv(tmp_path / "comparison.csv")
    assert len(checks) == 3 and all(c.verdict == "met" for c in checks)
    assert (tmp_path / "pressure-meets-network.png").stat().st_size > 10_000
    summary = (tmp_path / "summary.md").read_text()
    assert "| critical | fast | throughput | 2 |" in summary


def test_checks_fail_when_the_numbers_say_otherwise() -> None:
    grid = cells(quick=True)
    # Nothing differs anywhere: no check can be met.
    table = summary_table([(c, _fake(c, 1, 1000.0, 1.0, False)) for c in grid])
    assert [ok for _, _, ok in shape_checks(table)] == [False, True, False]
    # The cap picks more than BBA alone: the second check fails too.
    results = [
        (c, _fake(c, 1, 2000.0 if c.rule == "bba+memory-aware" else 1000.0, 1.0, False))
        for c in grid
    ]
    assert not shape_checks(summary_table(results))[1][2]


def test_the_grid_and_registry() -> None:
    assert "pressure-meets-network" in EXPERIMENTS
    full, quick = cells(quick=False), cells(quick=True)
    assert len(full) == 3 * 3 * 3 and len(quick) == 2 * 2 * 3
    assert Cell("critical", "shared", "bba+memory-aware").overrides(False) == {
        "pressure": "critical", "bottleneck_mbps": "8", "competitor": "station",
        "rule": "bba", "adapt": "resolution",
    }  # fmt: skip


@pytest.mark.slow
def test_quick_study_runs_for_real(tmp_path: Path) -> None:
    path = EXPERIMENTS["pressure-meets-network"].reproduce(tmp_path, quick=True)
    assert read_metrics_csv(path)
