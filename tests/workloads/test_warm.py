"""Warm starts (mqoe.workloads.warm): a group's runs share one simulation of their set-up
and still give exactly the records of their cold runs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from mqoe.device.phone import Phone
from mqoe.device.profiles import load_profile
from mqoe.results import RunRecord
from mqoe.sweep.execute import warm_units
from mqoe.sweep.spec import Job
from mqoe.workloads import SCENARIOS
from mqoe.workloads.base import ScenarioOutput, Session, WarmStart
from mqoe.workloads.runner import run_scenario
from mqoe.workloads.warm import RunFailure, run_group, warm_key

NOKIA = load_profile("nokia-1")


def assert_same_record(warm: RunRecord | RunFailure, cold: RunRecord) -> None:
    """Equal in everything but the wall clock (NaN metrics equal NaN)."""
    assert isinstance(warm, RunRecord), warm
    assert (warm.run_id, warm.params, warm.sim_duration_s) == (
        cold.run_id,
        cold.params,
        cold.sim_duration_s,
    )
    assert warm.metrics.keys() == cold.metrics.keys()
    for name, value in cold.metrics.items():
        other = warm.metrics[name]
        both_nan = isinstance(value, float) and math.isnan(value) and math.isnan(float(other))
        assert both_nan or other == value, (name, other, value)
    assert warm.tables.keys() == cold.tables.keys()
    for name, table in cold.tables.items():
        assert warm.tables[name].equals(table), name


# -- the video scenario: set-up under memory pressure, then playback --------------------


def test_video_runs_from_a_shared_set_up_equal_their_cold_runs() -> None:
    early = {"pressure": "moderate", "setup_s": "20"}
    cells = [
        early | {"resolution": "480p", "fps": "60", "duration_s": "4"},
        early | {"resolution": "1080p", "fps": "30", "duration_s": "6"},
        early | {"resolution": "240p", "fps": "24", "duration_s": "0.5"},
    ]
    finished: list[int] = []
    warm = run_group("video", NOKIA, 3, cells, on_result=lambda i, _: finished.append(i))
    assert sorted(finished) == [0, 1, 2]
    for result, overrides in zip(warm, cells, strict=True):
        assert_same_record(result, run_scenario("video", NOKIA, 3, overrides))
    # Not vacuous: the runs differ (after the set-up they share).
    assert len({r.metrics["frames_due"] for r in warm if isinstance(r, RunRecord)}) == 3


# -- a toy scenario: every branch of the fork --------------------------------------------


@dataclass(frozen=True)
class ToyParams:
    setup_ms: int = 50  # set-up: draws every ms until then, then the warm-start point
    reach: bool = True  # whether the set-up reaches its warm-start point
    steps: int = 20  # late: draws after the point
    fail_at: int = -1  # late: raise at this step after the point


class Toy:
    name = "warm-toy"
    summary = "test scenario for warm starts"
    params_type = ToyParams
    quick: Mapping[str, str] = {}
    late_params = frozenset({"steps", "fail_at"})

    def build(self, phone: Phone, params: ToyParams) -> Session:
        env, rng = phone.env, phone.env.rng("toy")
        state: dict[str, Any] = {"params": params, "draws": []}

        def draw() -> Any:
            for _ in range(params.setup_ms):
                state["draws"].append(float(rng.random()))
                yield env.timeout(1_000_000)
            if params.reach:
                warm.reached()
            late: ToyParams = state["params"]
            for step in range(late.steps):
                if step == late.fail_at:
                    raise ZeroDivisionError(f"step {step}")
                state["draws"].append(float(rng.random()))
                yield env.timeout(1_000_000)

        env.process(draw(), "toy")

        def rebind(late: ToyParams) -> int:
            state["params"] = late
            return duration(late)

        def duration(p: ToyParams) -> int:
            return (params.setup_ms + p.steps + 1) * 1_000_000

        def collect() -> ScenarioOutput:
            draws: Sequence[float] = state["draws"]
            return ScenarioOutput({"n": len(draws), "sum": sum(draws)})

        warm = WarmStart(self.late_params, rebind)
        return Session(duration(params), collect, warm)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SCENARIOS, "warm-toy", Toy())


@pytest.mark.usefixtures("toy")
@pytest.mark.parametrize("reach", ["true", "false"])
def test_toy_runs_equal_their_cold_runs_whether_or_not_the_point_is_reached(reach: str) -> None:
    cells = [{"reach": reach, "steps": str(n)} for n in (5, 40, 1)]
    warm = run_group("warm-toy", NOKIA, 7, cells)
    for result, overrides in zip(warm, cells, strict=True):
        assert_same_record(result, run_scenario("warm-toy", NOKIA, 7, overrides))
    assert [r.metrics["n"] for r in warm if isinstance(r, RunRecord)] == [55, 90, 51]


@pytest.mark.usefixtures("toy")
def test_a_run_failing_after_the_fork_fails_alone() -> None:
    cells = [{"steps": "10"}, {"steps": "10", "fail_at": "3"}, {"steps": "2"}]
    first, failed, last = run_group("warm-toy", NOKIA, 1, cells)
    assert isinstance(failed, RunFailure)
    assert (failed.error_type, failed.error) == ("ZeroDivisionError", "step 3")
    assert "ZeroDivisionError" in failed.traceback
    assert_same_record(first, run_scenario("warm-toy", NOKIA, 1, cells[0]))
    assert_same_record(last, run_scenario("warm-toy", NOKIA, 1, cells[2]))


@pytest.mark.usefixtures("toy")
def test_bad_parameters_fail_their_run_only() -> None:
    cells = [{"steps": "3"}, {"steps": "many"}, {"steps": "4"}]
    first, bad, last = run_group("warm-toy", NOKIA, 1, cells)
    assert isinstance(bad, RunFailure) and bad.error_type == "UserError"
    assert "steps" in bad.error
    assert isinstance(first, RunRecord) and isinstance(last, RunRecord)
    assert (first.metrics["n"], last.metrics["n"]) == (53, 54)


@pytest.mark.usefixtures("toy")
def test_runs_that_differ_in_their_set_up_are_refused_as_a_group() -> None:
    with pytest.raises(ValueError, match="may differ only in fail_at, steps"):
        run_group("warm-toy", NOKIA, 1, [{"steps": "3"}, {"setup_ms": "10", "steps": "3"}])
    # Spellings of one value are one set-up.
    same = run_group("warm-toy", NOKIA, 1, [{"reach": "true"}, {"reach": "True", "steps": "2"}])
    assert all(isinstance(r, RunRecord) for r in same)


# -- grouping a sweep's jobs ------------------------------------------------------------


def job(seed: int, **overrides: str) -> Job:
    return Job(f"r{seed}-{sorted(overrides.items())}", "s", "s-1", "video", NOKIA, seed, overrides)


def test_jobs_group_by_everything_but_the_late_parameters() -> None:
    jobs = [
        job(1, pressure="low", resolution="480p"),
        job(1, pressure="low", resolution="720p", fps="60"),
        job(2, pressure="low", resolution="480p"),
        job(1, pressure="critical", resolution="480p"),
        job(1, pressure="low", duration_s="9"),
    ]
    units = warm_units(jobs, workers=1)
    assert units == [(jobs[0], jobs[1], jobs[4]), (jobs[2],), (jobs[3],)]
    late = frozenset({"resolution", "fps", "duration_s"})
    keys = {warm_key("video", NOKIA, j.seed, j.overrides, late) for j in jobs}
    assert len(keys) == 3


def test_groups_split_until_every_worker_has_a_unit() -> None:
    jobs = [job(1, resolution=f"{h}p") for h in (240, 360, 480, 720, 1080)]
    assert warm_units(jobs, workers=1) == [tuple(jobs)]
    assert warm_units(jobs, workers=2) == [tuple(jobs[:2]), tuple(jobs[2:])]
    assert [len(u) for u in warm_units(jobs, workers=4)] == [1, 1, 1, 2]
    assert [len(u) for u in warm_units(jobs, workers=9)] == [1] * 5


def test_scenarios_without_late_parameters_are_never_grouped() -> None:
    jobs = [
        Job(f"fd{n}", "s", "s-1", "frame-deadlines", NOKIA, 1, {"hogs": str(n)}) for n in (0, 4)
    ]
    assert warm_units(jobs, workers=1) == [(jobs[0],), (jobs[1],)]


def test_video_runs_differing_in_genre_and_rules_share_the_set_up_exactly() -> None:
    early = {"pressure": "critical", "setup_s": "20", "duration_s": "3"}
    cells = [
        early | {"genre": "sports", "adapt": "both"},
        early | {"genre": "news", "rule": "bba"},
    ]
    for result, overrides in zip(run_group("video", NOKIA, 2, cells), cells, strict=True):
        assert_same_record(result, run_scenario("video", NOKIA, 2, overrides))


def test_streaming_runs_share_the_set_up_exactly() -> None:
    early = {"pressure": "moderate", "setup_s": "20", "competitor": "station"}
    cells = [
        early | {"rule": "throughput", "duration_s": "5"},
        early | {"adapt": "resolution", "competitor_start_s": "1", "duration_s": "4"},
    ]
    warm = run_group("video-stream", NOKIA, 1, cells)
    for result, overrides in zip(warm, cells, strict=True):
        assert_same_record(result, run_scenario("video-stream", NOKIA, 1, overrides))


def test_netpis_runs_differing_in_the_apps_receive_buffer_share_the_set_up_exactly() -> None:
    """The background download alone until the video starts, then each run's own buffer."""
    nexus = load_profile("nexus-5")
    early = {"mode": "seq", "variant": "original", "other_stations": "1", "duration_s": "9",
             "fg_start_s": "4", "video_s": "4"}  # fmt: skip
    cells = [early, early | {"fg_rcvbuf_kb": "64"}, early | {"fg_rcvbuf_kb": "16"}]
    warm = run_group("netpis", nexus, 2, cells)
    for result, overrides in zip(warm, cells, strict=True):
        assert_same_record(result, run_scenario("netpis", nexus, 2, overrides))
    # Not vacuous: the buffers differ after the set-up the runs share.
    fg_buffers = {r.metrics["fg_rcvbuf_mb"] for r in warm if isinstance(r, RunRecord)}
    assert len(fg_buffers) == 3
