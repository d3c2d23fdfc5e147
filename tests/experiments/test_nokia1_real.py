"""The Nokia 1's real grid (packaged data) and the rule that scores simulated cells."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.experiments import nokia1_real
from mqoe.experiments.coal_not_diamonds import (
    Aggregate,
    CoalNotDiamonds,
    Config,
    _fmt,
    comparison_markdown,
    nokia1_real_csv,
    nokia1_scores,
    nokia1_top_checks,
)
from mqoe.experiments.nokia1_real import RealCell, real_cells, score, top_rows
from tests.experiments.test_coal_not_diamonds import _results


def _cell(state: str, fps: int, resolution: str) -> RealCell:
    (cell,) = [
        c for c in real_cells() if (c.state, c.fps, c.resolution) == (state, fps, resolution)
    ]
    return cell


def test_the_grid_has_thirty_distinct_cells_and_the_top_table_twelve_rows() -> None:
    cells = real_cells()
    assert len(cells) == 30
    assert len({(c.state, c.fps, c.resolution) for c in cells}) == 30
    assert {c.state for c in cells} == {"normal", "moderate", "critical"}
    assert all(c.all_crashed and c.drop_pct == 100 for c in cells if c.state == "critical")
    moderate = _cell("moderate", 60, "480p")
    assert (moderate.crashed_pct, moderate.drop_pct, moderate.time_to_crash_s) == (40, 39.9, 72)
    assert math.isnan(_cell("normal", 30, "240p").time_to_crash_s)
    assert len(top_rows()) == 12
    assert top_rows()[7]["kswapd"] == 55.1 and top_rows()[7]["iowait"] == 18.9


def test_a_cell_matches_within_max_of_5_points_and_a_quarter_and_20_crash_points() -> None:
    real = _cell("moderate", 60, "240p")  # drop 41.0: tolerance 10.25 points; crash 0
    assert score(real, [31.0] * 5, [False] * 5, [-1.0] * 5).matched
    assert not score(real, [30.0] * 5, [False] * 5, [-1.0] * 5).matched
    assert score(real, [41.0] * 5, [True] + [False] * 4, [50.0] + [-1.0] * 4).matched  # 20
    two = [True, True, False, False, False]
    assert not score(real, [41.0] * 5, two, [50.0, 50.0, -1, -1, -1]).matched  # 40 points
    small = _cell("normal", 30, "480p")  # drop 0.7: the 5-point floor applies
    assert score(small, [5.7], [False], [-1.0]).matched
    assert not score(small, [5.8], [False], [-1.0]).matched


def test_where_every_real_run_crashed_only_the_crash_rate_counts() -> None:
    real = _cell("moderate", 30, "720p")  # 100% crashed at 62 s on average
    s = score(real, [0.0] * 5, [True] * 5, [40.0, 50.0, 60.0, 70.0, 80.0])
    assert s.drop_ok is None and s.matched
    assert s.time_to_crash_s == 60.0 and s.crash_time_ok is True
    assert not score(real, [25.6] * 5, [True, True, True, False, False], [60.0] * 5).matched
    late = score(real, [0.0], [True], [125.0])
    assert late.crash_time_ok is False  # 125 / 62 > 2
    none = score(real, [0.0], [False], [-1.0])
    assert none.crash_time_ok is False and math.isnan(none.time_to_crash_s)
    assert score(_cell("normal", 30, "240p"), [0.1], [False], [-1.0]).crash_time_ok is None


def test_scoring_needs_one_crash_flag_per_run() -> None:
    with pytest.raises(ValueError, match="one crash flag per run"):
        score(real_cells()[0], [1.0, 2.0], [False], [-1.0])
    with pytest.raises(ValueError):
        score(real_cells()[0], [], [], [])


@given(st.sampled_from(real_cells()), st.floats(0, 100), st.floats(0, 100))
def test_moving_the_drop_towards_the_real_value_never_unmatches_a_cell(
    real: RealCell, drop: float, towards: float
) -> None:
    closer = drop + (real.drop_pct - drop) * towards / 100
    far = score(real, [drop], [real.crashed_pct >= 50], [30.0])
    near = score(real, [closer], [real.crashed_pct >= 50], [30.0])
    if far.matched:
        assert near.matched


def test_the_reproduction_puts_the_grid_beside_the_real_runs() -> None:
    def drop(c: Config) -> float:  # the fakes add the seed (mean +3 over seeds 1..5)
        return 9.0 if (c.state, c.fps, c.resolution) == ("normal", 60, "480p") else 50.0

    results = _results(False, drop, crash=lambda c: c.state == "critical")
    lines = nokia1_real_csv(results).splitlines()
    assert len(lines) == 31
    rows = {tuple(line.split(",")[:3]): line.split(",") for line in lines[1:]}
    header = lines[0].split(",")
    normal = dict(zip(header, rows[("normal", "60", "480p")], strict=True))
    assert (normal["real_drop_pct"], normal["sim_drop_pct"], normal["matched"]) == (
        "12", "12.00", "true")  # fmt: skip
    critical = dict(zip(header, rows[("critical", "30", "240p")], strict=True))
    assert critical["drop_tolerance"] == "" and critical["matched"] == "true"
    assert critical["sim_time_to_crash_s"] == "50.0"
    # Matched: the 10 critical cells (all crashed, as the fakes), normal 480p60, and
    # the cells whose real drop is within max(5, 25%) of 53 with no crash off by > 20.
    expected = sum(
        (c.state == "critical")
        or ((c.state, c.fps, c.resolution) == ("normal", 60, "480p"))
        or (c.crashed_pct <= 20 and abs(53.0 - c.drop_pct) <= c.drop_tolerance)
        for c in real_cells()
    )
    assert sum(row[-1] == "true" for row in rows.values()) == expected
    text = comparison_markdown(results, quick=False)
    assert "## nokia1-real: the Nokia 1's 30 cells against its real runs" in text
    assert f"| cells matched (of 30) | 24.0 | {_fmt(expected)} |" in text
    assert "time to crash (s), 240p30 critical | 23.0 | 50.0 |" in text
    assert nokia1_real.SOURCE in text


def test_the_quick_reproduction_writes_nokia1_real_csv(tmp_path: Path) -> None:
    results = _results(True, lambda c: 10.0)
    CoalNotDiamonds(runner=lambda quick: results).reproduce(tmp_path, quick=True)
    lines = (tmp_path / "nokia1-real.csv").read_text().splitlines()
    assert len(lines) == 1 + 3 * 2 * 3  # quick: three resolutions
    assert lines[0].startswith("state,fps,resolution,real_crashed_pct")
    # 24 of 30 pro rata, rounded up: 18 cells need 15
    assert "| cells matched (of 18) | 15.0 |" in (tmp_path / "comparison.md").read_text()


def test_scoring_a_partial_plan_leaves_the_cells_it_did_not_run_absent() -> None:
    agg = Aggregate(_results(True, lambda c: 10.0))
    assert len(nokia1_scores(agg)) == 18
    assert not agg.has(Config("nokia-1", "normal", "240p", 30))
    kswapd_rows = [c for c in nokia1_top_checks(agg) if c.what.startswith("kswapd CPU")]
    assert len(kswapd_rows) == 6  # 480p30, 480p60, 1080p60 × normal, moderate
