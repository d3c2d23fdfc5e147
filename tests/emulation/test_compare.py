"""``mqoe compare``: rows paired on (condition, metric), differences and tolerance."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mqoe.cli.main import main
from mqoe.emulation.compare import compare_rows, comparison_frame
from mqoe.errors import UserError
from mqoe.results import MetricRow, read_metrics_csv, write_metrics_csv
from mqoe.results.comparison import read_comparison_csv

COND = {"buffer_kbit": "120", "mode": "discrete"}


def _rows(figure: str, profile: str, rate: float, drops: float) -> list[MetricRow]:
    return [
        MetricRow(figure, profile, COND, "rate_competing_kbps", rate, "kbit/s"),
        MetricRow(figure, profile, COND, "bottleneck_drops", drops, "packets"),
        MetricRow(
            figure,
            profile,
            {"buffer_kbit": "20", "mode": "discrete"},
            "rate_competing_kbps",
            1.0,
            "kbit/s",
        ),
    ]


def test_pairs_on_condition_and_metric_ignoring_figure_and_profile() -> None:
    sim = _rows("spiral-sim", "nexus-5", 1000.0, 10)
    real = _rows("spiral-real", "testbed", 800.0, 40)[:2]
    pairs = compare_rows(sim, real)
    assert [(p.metric, p.sim, p.real) for p in pairs] == [
        ("rate_competing_kbps", 1000.0, 800.0),
        ("bottleneck_drops", 10.0, 40.0),
    ]
    rate, drops = pairs
    assert rate.difference == 200.0
    assert rate.relative == pytest.approx(0.25)
    assert rate.within(0.25) is True and rate.within(0.2) is False
    assert drops.within(0.25) is None  # only rates are checked
    frame = comparison_frame(pairs, 0.2)
    assert list(frame["within"]) == ["NO", ""]


def test_relative_difference_is_nan_for_zero_or_nan_real() -> None:
    pairs = compare_rows(_rows("a", "p", 5.0, 0.0), _rows("b", "q", math.nan, 0.0))
    assert all(math.isnan(p.relative) for p in pairs[:2])  # real rate nan, real drops 0
    assert pairs[2].relative == 0.0


def test_no_common_rows_is_a_user_error() -> None:
    other = [MetricRow("x", "p", {"mode": "bba"}, "rate_competing_kbps", 1.0, "kbit/s")]
    with pytest.raises(UserError, match="share no"):
        compare_rows(_rows("a", "p", 1.0, 1.0), other)


def test_cli_prints_and_writes_comparison_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sim = write_metrics_csv(tmp_path / "sim.csv", _rows("spiral-sim", "nexus-5", 1000.0, 10))
    real = write_metrics_csv(tmp_path / "real.csv", _rows("spiral-real", "testbed", 800.0, 40))
    out = tmp_path / "comparison.csv"
    assert main(["compare", str(sim), str(real), "--format", "csv", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "rate_competing_kbps,kbit/s,1000.0,800.0,200.0,0.25" in printed
    rows = read_comparison_csv(out)
    assert [r.verdict for r in rows] == ["met", "reference", "met"]
    assert len(read_metrics_csv(real)) == 3
