"""The benchmark harness's logic: goals judged right, peers interleaved, ns-3 skipped
cleanly without its environment, and the report's lines (no timing asserted)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import peers
from peers import (
    BOLA_DECISIONS_PER_S_BEFORE,
    NS3_SKIPPED,
    Dumbbell,
    dumbbell_figures,
    interleave,
    ns3_dumbbell,
    speedup,
    trace_figures,
)
from speed import GOALS, Goal, goal_lines, report, warm_grid_cells


def test_a_goal_of_at_least_is_met_at_the_target_and_not_below_it() -> None:
    goal = Goal("spiral", "spiral_sim_s_per_wall_s", 500.0)
    assert goal.met(500.0) and goal.met(501.0)
    assert not goal.met(499.9)
    assert goal.line({"spiral_sim_s_per_wall_s": 250.0}).endswith("(goal ≥ 500)  not met")
    assert goal.line({"spiral_sim_s_per_wall_s": 600.0}).endswith("(goal ≥ 500)  met")


def test_a_time_goal_is_met_only_strictly_under_its_bound() -> None:
    goal = Goal("help", "cli_help_s", 0.25, at_least=False)
    assert goal.met(0.2)
    assert not goal.met(0.25) and not goal.met(0.3)
    assert "0.30   (goal < 0.25)  not met" in goal.line({"cli_help_s": 0.3})


def test_a_missing_figure_is_not_measured_and_says_why() -> None:
    goal = Goal("ns-3", "dumbbell_vs_ns3", 4.0, missing="make bench-env")
    line = goal.line({})
    assert line.endswith("not measured (make bench-env)")
    assert "met" not in line.replace("not measured", "")


def test_goal_lines_count_only_the_goals_met() -> None:
    goals = (
        Goal("a", "a", 2.0),
        Goal("b", "b", 1.0, at_least=False),
        Goal("c", "c", 1.0),  # absent: neither met nor failed
    )
    lines = goal_lines({"a": 3.0, "b": 2.0}, goals)
    assert lines[:2] == ["", "Goals"]
    assert len(lines) == 2 + 3 + 1
    assert lines[-1] == "1 of 3 met"


def test_every_goal_of_the_issue_has_a_line() -> None:
    figures = {goal.figure: goal.target for goal in GOALS}
    del figures["dumbbell_vs_ns3"]
    lines = goal_lines(figures)
    assert len(lines) == 2 + len(GOALS) + 1
    (ns3,) = [line for line in lines if "ns-3" in line]
    assert ns3.endswith("not measured (ns-3 not installed: make bench-env)")
    # At exactly the target a ≥ goal is met and a < goal is not.
    assert lines[-1] == f"{sum(g.at_least for g in GOALS) - 1} of {len(GOALS)} met"


def test_the_warm_start_grid_is_thirty_cells_in_three_set_ups() -> None:
    cells = warm_grid_cells(120.0)
    assert len(cells) == 30 and len({tuple(sorted(c.items())) for c in cells}) == 30
    assert {c["pressure"] for c in cells} == {"moderate", "low", "critical"}
    assert {c["duration_s"] for c in cells} == {"120"}


def test_interleave_alternates_the_contenders_round_by_round() -> None:
    calls: list[str] = []

    def contender(name: str, rate: float) -> tuple[str, Callable[[], float]]:
        def measure() -> float:
            calls.append(name)
            return rate + len(calls)

        return name, measure

    rates = interleave(dict([contender("ours", 10.0), contender("simpy", 100.0)]), rounds=3)
    assert calls == ["ours", "simpy"] * 3
    assert rates == {"ours": [11.0, 13.0, 15.0], "simpy": [102.0, 104.0, 106.0]}


def test_speedup_compares_per_event_times_by_minimum_and_by_median() -> None:
    # Ours: 2, 4, 8 events/s (best time 1/8, median 1/4); theirs: 1, 1, 4 (1/4, 1).
    by_min, by_median = speedup([2.0, 8.0, 4.0], [1.0, 4.0, 1.0])
    assert by_min == pytest.approx((1 / 4) / (1 / 8))
    assert by_median == pytest.approx(1.0 / (1 / 4))


def test_ns3_is_skipped_when_the_bench_interpreter_is_missing(tmp_path: Path) -> None:
    missing = tmp_path / "no-venv" / "bin" / "python"
    assert ns3_dumbbell(Dumbbell(), missing) is None
    figures = dumbbell_figures(Dumbbell(sim_seconds=0.5), missing)
    assert "dumbbell_vs_ns3" not in figures
    assert figures["dumbbell_mqoe_sim_s_per_wall_s"] > 0
    assert NS3_SKIPPED in report(figures, {})
    assert "not measured (ns-3 not installed: make bench-env)" in "\n".join(goal_lines(figures))


def test_ns3_is_skipped_when_the_interpreter_cannot_import_it() -> None:
    # The test suite's interpreter: the main venv never installs ns-3.
    if _importable("ns"):
        pytest.skip("ns-3 is installed in the test interpreter")
    assert ns3_dumbbell(Dumbbell(), Path(sys.executable)) is None


def test_the_ns3_figures_and_ratio_come_from_the_script_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake_ns3.py"
    fake.write_text(
        "import json, sys\n"
        "spec = json.loads(sys.argv[1])\n"
        "print('cppyy noise')\n"
        "print(json.dumps({'sim_s_per_wall_s': spec['sim_seconds'] * 1e6, 'goodput_mbps': 4.8}))\n"
    )
    monkeypatch.setattr(peers, "NS3_SCRIPT", fake)
    spec = Dumbbell(sim_seconds=0.5)
    figures = dumbbell_figures(spec, Path(sys.executable))
    assert figures["dumbbell_ns3_sim_s_per_wall_s"] == 0.5e6
    assert figures["dumbbell_vs_ns3"] == pytest.approx(
        figures["dumbbell_mqoe_sim_s_per_wall_s"] / 0.5e6
    )
    assert NS3_SKIPPED not in report(figures, {})


def test_an_ns3_script_failure_is_an_error_not_a_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "broken.py"
    fake.write_text("raise SystemExit('ns-3 topology broke')\n")
    monkeypatch.setattr(peers, "NS3_SCRIPT", fake)
    with pytest.raises(RuntimeError, match="topology broke"):
        ns3_dumbbell(Dumbbell(), Path(sys.executable))


def test_the_mqoe_dumbbell_fills_the_bottleneck() -> None:
    figures = dumbbell_figures(Dumbbell(sim_seconds=5.0), Path("/nonexistent"))
    assert 0.7 * 5.0 < figures["dumbbell_mqoe_goodput_mbps"] <= 5.0


def test_the_ns3_script_takes_every_field_of_the_spec() -> None:
    text = (Path(peers.__file__).with_name("ns3_dumbbell.py")).read_text()
    for field in dataclasses.fields(Dumbbell):
        assert f'spec["{field.name}"]' in text, field.name


def test_trace_peer_ratios_use_the_recorded_bola_before(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeTracePeers:
        @staticmethod
        def figures(quick: bool = False) -> dict[str, float]:
            return {
                "trace_fixed_quality_media_s_per_wall_s": 2.4e6,
                "pensieve_fixed_env_media_s_per_wall_s": 1.2e6,
                "trace_bola_decisions_per_s": 3 * BOLA_DECISIONS_PER_S_BEFORE,
                "trace_bba_decisions_per_s": 1e6,
            }

    monkeypatch.setitem(sys.modules, "trace_peers", FakeTracePeers)
    figures = trace_figures(quick=True)
    assert figures["trace_fixed_quality_vs_pensieve"] == pytest.approx(2.0)
    assert figures["trace_bola_decisions_vs_before"] == pytest.approx(3.0)
    lines = goal_lines(figures)
    assert any("BOLA decisions" in line and line.endswith("  met") for line in lines)


def test_trace_peers_absent_gives_no_figures_and_a_skip_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "trace_peers", None)  # import raises ImportError
    assert trace_figures() == {}
    assert any(line.startswith("trace peers: skipped") for line in report({}, {}))


def test_report_marks_a_figure_with_its_goal_and_its_baseline_ratio() -> None:
    baseline = {"figures": {"spiral_sim_s_per_wall_s": 250.0}}
    lines = report({"spiral_sim_s_per_wall_s": 500.0}, baseline)
    (line,) = [line for line in lines if line.startswith("spiral_sim_s_per_wall_s")]
    assert "x2.00 vs baseline" in line and line.endswith("(goal ≥ 500)")


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def test_the_ns3_lock_pins_every_package_with_a_hash() -> None:
    lock = Path(peers.__file__).with_name("requirements-ns3.lock").read_text()
    entries = " ".join(line for line in lock.splitlines() if not line.lstrip().startswith("#"))
    requirements = [part for part in entries.replace("\\", " ").split() if "==" in part]
    names = {requirement.split("==")[0].lower() for requirement in requirements}
    # ns3 and its whole dependency closure, or `pip --require-hashes` refuses to install.
    assert names == {"ns3", "cppyy", "cppyy-backend", "cppyy-cling", "cpycppyy"}
    assert entries.count("--hash=sha256:") >= len(requirements)
