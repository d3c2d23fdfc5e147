"""frame-deadlines: misses must emerge from contention, and rise with it."""

from __future__ import annotations

import pytest

from mqoe.device.profiles import load_profile
from mqoe.errors import UserError
from mqoe.workloads import SCENARIOS
from mqoe.workloads.conformance import check_scenario
from mqoe.workloads.runner import run_scenario


def _rate(profile: str = "nokia-1", **overrides: object) -> float:
    params = {"duration_s": "4", **{k: str(v) for k, v in overrides.items()}}
    record = run_scenario("frame-deadlines", load_profile(profile), 3, params)
    rate = record.metrics["missed_deadline_rate"]
    assert isinstance(rate, float)
    return rate


def test_an_idle_phone_meets_every_deadline() -> None:
    assert _rate(hogs=0, rt_burst_mcycles=0) == 0.0


def test_missed_rate_rises_with_cpu_hogs() -> None:
    rates = [_rate(hogs=h) for h in (0, 4, 8)]
    assert rates[0] < rates[1] < rates[2]
    assert rates[0] >= 0.0 and rates[2] <= 1.0


def test_missed_rate_rises_with_the_rt_burst() -> None:
    rates = [_rate(hogs=4, rt_burst_mcycles=b) for b in (0, 1, 3)]
    assert rates[0] < rates[1] < rates[2]


def test_work_longer_than_a_period_misses_every_frame() -> None:
    # 20 Mcycles ≈ 18 ms on the 1.1 GHz A53: longer than the 16.7 ms frame period.
    assert _rate(frame_mcycles=20, rt_burst_mcycles=0) == 1.0


def test_a_faster_phone_misses_less_under_the_same_load() -> None:
    assert _rate("black-shark", hogs=8) < _rate("nokia-1", hogs=8)


def test_pinning_the_rt_thread_away_from_the_frame_thread_removes_its_effect() -> None:
    base = _rate(hogs=3, rt_burst_mcycles=0, frame_cpus="0", hog_cpus="1-3")
    assert base == 0.0
    assert _rate(hogs=3, rt_burst_mcycles=3, frame_cpus="0", hog_cpus="1-3", rt_cpus="1-3") == 0.0
    assert _rate(hogs=3, rt_burst_mcycles=3, frame_cpus="0", hog_cpus="1-3", rt_cpus="0") > 0.0


def test_tables_report_thread_states_and_preemptors() -> None:
    record = run_scenario(
        "frame-deadlines", load_profile("nokia-1"), 1, {"duration_s": "2", "hogs": "4"}
    )
    states = record.tables["thread_states"]
    apps = {"frame", "rt_io", "hog0", "hog1", "hog2", "hog3"}
    kernel = {"kswapd0", "mmcqd", "lmkd"}
    assert set(states["thread"]) == apps | kernel
    # No memory pressure and no I/O here: the kernel threads never run.
    assert states[states["thread"].isin(kernel)]["running_s"].eq(0).all()
    totals = states[["running_s", "runnable_s", "runnable_preempted_s", "sleeping_s"]].sum(axis=1)
    assert totals.round(9).eq(2.0).all()
    assert "rt_io" in set(record.tables["preemption_summary"]["preemptor"])


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"nope": "1"}, "no parameter 'nope'"),
        ({"hogs": "many"}, "expected an integer"),
        ({"hogs": "-1"}, "must not be negative"),
        ({"frame_cpus": "0-9"}, "cpuset"),
        ({"rt_arrivals": "bursty"}, "poisson or periodic"),
        ({"frame_nice": "40"}, "nice"),
    ],
)
def test_bad_parameters_are_user_errors(overrides: dict[str, str], fragment: str) -> None:
    with pytest.raises(UserError, match=fragment):
        run_scenario("frame-deadlines", load_profile("nokia-1"), 0, overrides)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_registered_scenario_conforms(name: str) -> None:
    check_scenario(name, load_profile("nokia-1"))
