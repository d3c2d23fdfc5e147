"""Fleet simulation (responsiveness study): the discard queue by hand, WAM trims on hand-made days,
timeouts, determinism, chunking, and practical WAM removing WAM-caused events."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.errors import UserError
from mqoe.workloads.fleet import (
    BLOCK_PHONES,
    PAGE_BYTES,
    FleetConstants,
    FleetParams,
    FleetResult,
    discard_backlog,
    discard_cost,
    fsync_waits,
    run_fleet,
)
from mqoe.workloads.fleet_usage import (
    DAY_S,
    HOUR_S,
    Deletions,
    Timeline,
    UsageConstants,
    draw_users,
    study_hardware,
)
from mqoe.workloads.fleet_waiters import _Segments, _WaiterRates, _waiters
from mqoe.workloads.fleet_wam import _lazy_trims, _practical_trims

C = FleetConstants()


# -- the discard queue -----------------------------------------------------------------


def test_fsync_waits_for_the_discards_queued_before_it_by_hand() -> None:
    # Discards of 10 s at t=0, 3 s at t=4 (backlog 6 + 3 = 9, empty at t=13), 2 s at t=20.
    t = np.array([0.0, 4.0, 20.0])
    work = np.array([10.0, 3.0, 2.0])
    assert discard_backlog(t, work).tolist() == [10.0, 9.0, 2.0]
    fsyncs = np.array([-1.0, 5.0, 13.0, 19.0, 20.0, 21.0, 30.0])
    assert fsync_waits(t, work, fsyncs).tolist() == [0.0, 8.0, 0.0, 0.0, 2.0, 1.0, 0.0]


def _naive_waits(t: list[float], work: list[float], fsyncs: list[float]) -> list[float]:
    """Event by event: drain the FIFO between arrivals, then read it at each fsync."""
    waits = []
    for f in fsyncs:
        backlog, now = 0.0, -1e9
        for a, w in zip(t, work, strict=True):
            if a > f:
                break
            backlog = max(0.0, backlog - (a - now)) + w
            now = a
        waits.append(max(0.0, backlog - (f - now)))
    return waits


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1000), st.floats(0, 50)), min_size=1, max_size=30),
    st.lists(st.floats(-10, 1100), min_size=1, max_size=20),
)
def test_fsync_never_waits_longer_than_the_work_queued_before_it(
    discards: list[tuple[float, float]], fsyncs: list[float]
) -> None:
    discards.sort()
    t = np.array([d[0] for d in discards])
    work = np.array([d[1] for d in discards])
    f = np.array(fsyncs)
    waits = fsync_waits(t, work, f)
    queued_before = np.array([work[t <= x].sum() for x in f])
    assert (waits >= 0).all()
    assert (waits <= queued_before + 1e-9).all()
    expected = _naive_waits(t.tolist(), work.tolist(), fsyncs)
    assert np.allclose(waits, expected, atol=1e-6)


def test_discards_are_slower_on_emmc_and_on_a_fuller_flash() -> None:
    cost = discard_cost(np.array([False, True, False]), np.array([0.5, 0.5, 0.9]), C)
    emmc, ufs, full = cost.batched_bytes_s
    assert ufs > emmc > full
    # Real-time discards go per file: a thousand 100 KB files cost more than one 100 MB.
    phone = np.array([0, 0])
    many, one = cost.realtime_s(phone, np.array([1e8, 1e8]), np.array([1000.0, 1.0]))
    assert many > one
    assert many == pytest.approx(1e8 / 200e6 + 1000 * 4e-3)


# -- a hand-made day ---------------------------------------------------------------------


def _timeline(
    sessions: list[tuple[float, float]], days: int = 2, charging: bool = True
) -> Timeline:
    """One phone; sessions as (start_s, end_s); wake 07:00, bed 23:00."""
    start = np.array([s for s, _ in sessions], np.float64)
    end = np.array([e for _, e in sessions], np.float64)
    wake = (np.arange(days + 1) * DAY_S + 7 * HOUR_S)[None, :]
    sleep = (np.arange(days) * DAY_S + 23 * HOUR_S)[None, :]
    return Timeline(
        (days + 2) * DAY_S,
        days,
        start,
        end,
        np.zeros(len(start), np.int64),
        np.zeros(len(start), np.int64),
        wake,
        sleep,
        np.full((1, days), charging),
    )


def _deletions(items: list[tuple[float, float]]) -> Deletions:
    t = np.array([i[0] for i in items], np.float64)
    size = np.array([i[1] for i in items], np.float64)
    return Deletions(np.zeros(len(t), np.int64), t, size, np.ones(len(t)), np.cumsum(size))


@given(st.floats(0, 2 * DAY_S))
def test_on_and_off_time_split_the_clock_and_invert(g: float) -> None:
    timeline = _timeline([(100.0, 200.0), (1000.0, 1500.0), (DAY_S, DAY_S + 60.0)])
    x = np.array([g])
    on, off = timeline.on_time(x), timeline.off_time(x)
    assert on[0] + off[0] == pytest.approx(g)
    assert 0 <= on[0] <= 660.0
    assert timeline.on_time(timeline.from_on_time(on))[0] == pytest.approx(on[0])
    assert timeline.off_time(timeline.from_off_time(off))[0] == pytest.approx(off[0])
    session = timeline.session_at(x)[0]
    if session >= 0 and g > timeline.start[session]:  # inside a session: one preimage
        assert timeline.from_on_time(on)[0] == pytest.approx(g)
    elif session < 0 and g not in timeline.end:  # inside a locked gap
        assert timeline.from_off_time(off)[0] == pytest.approx(g)


def test_practical_trim_runs_locked_and_pauses_after_the_group_in_flight() -> None:
    # 10 GB deleted at t=10 s; threshold 6 GB; trims at 100 MB/s need 100 s of locked
    # time: 40 s until the unlock at 50 s, the session [50, 60), then 60 s more.
    timeline = _timeline([(50.0, 60.0), (5000.0, 5100.0)])
    deletions = _deletions([(10.0, 10e9)])
    group_bytes = 32_768 * PAGE_BYTES
    trims, segments = _practical_trims(timeline, deletions, np.array([1e8]), 6e9, group_bytes, 5.0)
    assert trims.start.tolist() == [10.0]
    assert trims.end[0] == pytest.approx(120.0)
    assert trims.busy_s[0] == pytest.approx(100.0) and trims.completed[0]
    # At the unlock the group in flight finishes: an fsync then waits ≤ one group.
    group_s = group_bytes / 1e8
    in_flight = np.ceil(40.0 / group_s) * group_s - 40.0
    assert segments.t0.tolist() == [50.0]
    assert segments.wait0[0] == pytest.approx(in_flight)
    assert 0 < segments.wait0[0] < group_s


def test_practical_fsyncs_wait_at_most_one_group_even_on_slow_flash() -> None:
    # 10 MB/s: a 128 MB group takes 13.4 s, past the input timeout, so every locked group
    # is a blocking episode too; none lasts longer than a group.
    timeline = _timeline([(1000.0, 1100.0), (5000.0, 5100.0)])
    group_bytes = 32_768 * PAGE_BYTES
    trims, segments = _practical_trims(
        timeline, _deletions([(10.0, 10e9)]), np.array([1e7]), 6e9, group_bytes, 5.0
    )
    assert trims.end[0] == pytest.approx(1110.0)
    assert len(segments.t0) > 70
    assert (segments.wait0 <= group_bytes / 1e7 + 1e-9).all()
    assert (segments.length <= segments.wait0 + 1e-9).all()


def test_practical_trim_waits_for_the_threshold_and_for_the_lock() -> None:
    timeline = _timeline([(1000.0, 2000.0)])
    below = _deletions([(10.0, 5e9)])
    trims, _ = _practical_trims(timeline, below, np.array([1e8]), 6e9, 1e8, 5.0)
    assert len(trims.start) == 0  # S_d never reached the threshold
    crossing = _deletions([(10.0, 5e9), (1500.0, 2e9)])  # crosses during a session
    trims, _ = _practical_trims(timeline, crossing, np.array([1e8]), 6e9, 1e8, 5.0)
    assert trims.start.tolist() == [2000.0]  # starts when the screen locks
    assert trims.bytes.tolist() == [7e9]


def test_lazy_trim_runs_at_three_when_idle_and_restarts_from_the_head_when_killed() -> None:
    # A pick-up at 02:30 (10 min): idle only from 04:21 (71 min later); 30 GB at
    # 1 MB/s cannot finish before the 07:00 unplug: killed, and the next night starts
    # over with everything (30 GB + 1 GB more).
    night1 = DAY_S + 2.5 * HOUR_S
    timeline = _timeline([(night1, night1 + 600.0)], days=3)
    deletions = _deletions([(12 * HOUR_S, 30e9), (DAY_S + 12 * HOUR_S, 1e9)])
    trims, segments = _lazy_trims(timeline, deletions, np.array([1e6]))
    assert trims.start[0] == pytest.approx(night1 + 600.0 + 71 * 60.0)
    assert trims.end[0] == pytest.approx(DAY_S + 7 * HOUR_S)  # unplugged at wake-up
    assert not trims.completed[0]
    assert trims.start[1] == pytest.approx(2 * DAY_S + 3 * HOUR_S)
    assert trims.bytes[1] == pytest.approx(31e9)
    # FITRIM goes group by group (128 MiB, 134 s each at 1 MB/s): an fsync during the
    # trim waits for the rest of the group in flight, not for the rest of the trim.
    group_s = 32_768 * 4096 / 1e6
    assert segments.wait0.max() == pytest.approx(group_s)
    first = segments.phone == 0
    assert segments.t0[first][:3].tolist() == pytest.approx(
        [trims.start[0] + k * group_s for k in range(3)]
    )
    # The groups cover each trim exactly, the last one cut short.
    for start, end in zip(trims.start, trims.end, strict=True):
        inside = (segments.t0 >= start) & (segments.t0 < end)
        assert segments.wait0[inside].sum() == pytest.approx(end - start)
        assert (segments.t0[inside] + segments.wait0[inside]).max() == pytest.approx(end)
    assert (segments.length == segments.wait0).all()


def test_lazy_trim_needs_the_charger() -> None:
    timeline = _timeline([], days=2, charging=False)
    trims, _ = _lazy_trims(timeline, _deletions([(12 * HOUR_S, 1e9)]), np.array([1e6]))
    assert len(trims.start) == 0


# -- timeouts --------------------------------------------------------------------------


def _eager_rates() -> _WaiterRates:
    """The main thread and the watched threads need the blocked resource at once;
    receivers are dispatched once a second."""
    return _WaiterRates(1e6, np.array([1.0]), np.array([1.0]), np.array([1e6]))


def test_blocks_shorter_than_the_timeout_never_give_an_anr_or_snr() -> None:
    users = draw_users(1, study_hardware(), UsageConstants(), np.random.default_rng(0))
    timeline = _timeline([(0.0, 10_000.0)])
    c = FleetConstants(touch_interval_s=1e-6)
    short = _Segments(np.array([0]), np.array([100.0]), np.array([4.99]), np.array([4.99]))
    cand = _waiters(
        short, 0, _eager_rates(), users, timeline, c, np.random.default_rng(1), 0, False
    )
    assert len(cand.phone) == 0
    long = _Segments(np.array([0]), np.array([100.0]), np.array([200.0]), np.array([200.0]))
    cand = _waiters(long, 0, _eager_rates(), users, timeline, c, np.random.default_rng(1), 0, False)
    kinds = cand.kind.tolist()
    assert 0 in kinds and 1 in kinds and 2 in kinds  # input ANR, broadcast ANR, SNR
    assert (cand.wait[cand.kind == 0] >= 5.0).all()
    assert (cand.wait[cand.kind == 1] >= 10.0).all()
    assert (cand.wait[cand.kind == 2] >= 60.0).all()
    assert (cand.wait <= 200.0).all()


def test_snr_needs_the_watchdog_check_to_wait_sixty_seconds() -> None:
    users = draw_users(1, study_hardware(), UsageConstants(), np.random.default_rng(0))
    timeline = _timeline([])  # screen off: no input ANR
    block = _Segments(np.array([0]), np.array([100.0]), np.array([59.9]), np.array([59.9]))
    cand = _waiters(
        block, 0, _eager_rates(), users, timeline, C, np.random.default_rng(2), 0, False
    )
    assert 2 not in cand.kind.tolist()
    assert 0 not in cand.kind.tolist()


# -- whole fleets ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small() -> FleetResult:
    return run_fleet(FleetParams(phones=300, days=7, seed=3))


def test_events_fire_only_at_waits_of_at_least_the_timeout(small: FleetResult) -> None:
    ev = small.events
    assert len(ev) > 0
    assert (ev.loc[ev["kind"] == "anr_input", "wait_s"] >= 5.0).all()
    assert (ev.loc[ev["kind"] == "anr_broadcast", "wait_s"] >= 10.0).all()
    assert (ev.loc[ev["kind"] == "snr", "wait_s"] >= 60.0).all()
    assert set(ev["cause"]) <= {"wam", "lock", "low_memory", "app_defect"}
    assert ((ev["t_s"] >= 0) & (ev["t_s"] < 7 * DAY_S + 200)).all()


def test_phone_counts_match_the_events(small: FleetResult) -> None:
    ev, ph = small.events, small.phones.set_index("phone_id")
    anr = ev[ev["kind"] != "snr"].groupby("phone_id").size()
    assert ph["anr"].sum() == len(ev[ev["kind"] != "snr"])
    assert (ph.loc[anr.index, "anr"] == anr).all()
    causes = ["anr_wam", "anr_lock", "anr_low_memory", "anr_app_defect"]
    assert (ph[causes].sum(axis=1) == ph["anr"]).all()


def test_same_seed_same_fleet_and_another_seed_another() -> None:
    a = run_fleet(FleetParams(phones=120, days=4, seed=7))
    b = run_fleet(FleetParams(phones=120, days=4, seed=7))
    pd.testing.assert_frame_equal(a.phones, b.phones)
    pd.testing.assert_frame_equal(a.events, b.events)
    c = run_fleet(FleetParams(phones=120, days=4, seed=8))
    assert not a.phones["deleted_gb_per_day"].equals(c.phones["deleted_gb_per_day"])


def test_first_phones_do_not_depend_on_fleet_size_or_workers() -> None:
    small = run_fleet(FleetParams(phones=200, days=3, seed=5))
    big = run_fleet(FleetParams(phones=BLOCK_PHONES + 100, days=3, seed=5, workers=2))
    pd.testing.assert_frame_equal(small.phones, big.phones.iloc[:200].reset_index(drop=True))
    first = big.events[big.events["phone_id"] < 200].reset_index(drop=True)
    pd.testing.assert_frame_equal(small.events, first)
    one = run_fleet(FleetParams(phones=BLOCK_PHONES + 100, days=3, seed=5, workers=1))
    pd.testing.assert_frame_equal(one.events, big.events)


def test_practical_wam_removes_wam_events_with_the_same_usage() -> None:
    params = FleetParams(phones=1000, days=7, seed=11)
    realtime = run_fleet(params)
    practical = run_fleet(FleetParams(phones=1000, days=7, seed=11, wam="practical"))
    usage = ["model", "deleted_gb_per_day", "sessions_per_day", "screen_on_h_per_day"]
    pd.testing.assert_frame_equal(realtime.phones[usage], practical.phones[usage])
    assert realtime.phones["anr_wam"].sum() >= 20
    assert practical.phones["anr_wam"].sum() + practical.phones["snr_wam"].sum() <= 1
    assert practical.phones["trims"].sum() > 0 and realtime.phones["trims"].sum() == 0
    # The other mechanisms do not depend on the policy (up to restarts and blocked threads).
    defects = [r.phones["anr_app_defect"].sum() for r in (realtime, practical)]
    assert abs(defects[0] - defects[1]) <= 0.05 * defects[0] + 2


def test_small_fleet_runs_in_under_two_seconds() -> None:
    start = time.perf_counter()
    run_fleet(FleetParams(phones=200, days=7, seed=1))
    assert time.perf_counter() - start < 2.0


# -- helpers on the result -------------------------------------------------------------


def _result(events: list[tuple[int, float, str, str]], phones: int = 3) -> FleetResult:
    ev = pd.DataFrame(events, columns=["phone_id", "t_s", "kind", "app"])
    ev["cause"] = "lock"
    ev["wait_s"] = 61.0
    counts = {
        "anr": [((ev["phone_id"] == p) & (ev["kind"] != "snr")).sum() for p in range(phones)],
        "snr": [((ev["phone_id"] == p) & (ev["kind"] == "snr")).sum() for p in range(phones)],
    }
    ph = pd.DataFrame({"phone_id": range(phones), "tier": ["low", "low", "high"][:phones]})
    for kind in ("anr", "snr"):
        ph[kind] = counts[kind]
        for cause in ("wam", "lock", "low_memory", "app_defect"):
            ph[f"{kind}_{cause}"] = counts[kind] if cause == "lock" else 0
    ph["trims"], ph["trim_s"] = 0, 0.0
    trims = pd.DataFrame(columns=["phone_id", "start_s", "end_s", "gb", "busy_s", "completed"])
    return FleetResult(FleetParams(phones=phones, days=21), ph, ev, trims)


def test_gaps_pair_consecutive_anr_and_snr_of_one_phone() -> None:
    result = _result(
        [
            (0, 0.0, "anr_input", "app-001"),
            (0, 100.0, "snr", "system_server"),
            (0, 300.0, "anr_input", "app-002"),
            (0, 400.0, "anr_input", "app-002"),
            (1, 50.0, "snr", "system_server"),
            (2, 10.0, "anr_broadcast", "app-001"),
        ]
    )
    assert sorted(result.anr_snr_gaps_s().tolist()) == [100.0, 200.0]
    summary = result.summary()
    assert summary["anr_per_phone"] == pytest.approx(4 / 3)
    assert summary["phones_without_snr_pct"] == pytest.approx(100 / 3)
    assert summary["median_anr_snr_gap_days"] == pytest.approx(150.0 / DAY_S)
    per_app = result.per_app()
    assert per_app["app"].tolist() == ["app-001", "app-002"]
    assert per_app["anr"].tolist() == [2, 2]
    assert result.breakdown("tier").set_index("tier").loc["low", "snr_per_phone"] == 1.0


def test_zipf_fit_recovers_an_exact_power_law(small: FleetResult) -> None:
    counts = (1000 * np.arange(1, 21, dtype=float) ** -1.5).round().astype(int)
    events = [(0, 0.0, "anr_input", f"app-{i:03d}") for i, k in enumerate(counts) for _ in range(k)]
    fit = _result(events, phones=1).zipf()
    assert fit.a == pytest.approx(1.5, abs=0.02) and fit.r2 > 0.999
    assert small.zipf().n == small.per_app().shape[0]


def test_bad_parameters_are_user_errors() -> None:
    for bad in (
        {"phones": 0},
        {"wam": "eager"},
        {"threshold_gb": -1.0},
        {"group_pages": 0},
        {"android": "10"},
        {"seed": -1},
    ):
        with pytest.raises(UserError):
            FleetParams(**bad)  # type: ignore[arg-type]


def test_study_hardware_reads_the_fifteen_profiles() -> None:
    hw = study_hardware()
    assert len(hw.names) == 15 and hw.tiers.count("high") == 5
    assert hw.cpu_speed[0] == 1.0 and hw.cpu_speed.max() > 3.0
    assert hw.ufs.tolist() == [False] * 10 + [True] * 5
    assert sorted(set(hw.android.tolist())) == [7, 8, 9]


def test_the_fleet_takes_a_wam_policy_spec_and_its_vectorised_form() -> None:
    from mqoe.policies.wam import Lazy, Practical

    spec = FleetParams(phones=10, days=1, wam="practical:threshold_gb=2,group_pages=1024")
    assert spec.policy() == Practical(threshold_gb=2.0, group_pages=1024)
    knobs = FleetParams(phones=10, days=1, wam="practical", threshold_gb=2.0, group_pages=1024)
    assert knobs.policy() == spec.policy()
    assert FleetParams(phones=10, days=1, wam="lazy:start_hour=4").policy() == Lazy(4.0)
    with pytest.raises(UserError, match="not both"):
        FleetParams(phones=10, days=1, wam="practical:threshold_gb=2", threshold_gb=4.0)
    with pytest.raises(UserError, match="wam='eager'"):
        FleetParams(phones=10, days=1, wam="eager")


def test_a_wam_policy_without_a_vectorised_form_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dataclasses import dataclass

    import mqoe.policies.wam as wam
    from mqoe.policies.wam import RealTime

    @dataclass(frozen=True)
    class Eager(RealTime):
        pass

    monkeypatch.setitem(wam.WAM_POLICIES, "eager", Eager)
    with pytest.raises(UserError, match="no vectorised form"):
        FleetParams(phones=10, days=1, wam="eager")


def test_lazy_trims_start_at_the_policys_hour() -> None:
    at_3 = run_fleet(FleetParams(phones=300, days=7, seed=5, wam="lazy"))
    at_5 = run_fleet(FleetParams(phones=300, days=7, seed=5, wam="lazy:start_hour=5"))
    hours = [t["start_s"] % 86_400 / 3600 for t in (at_3.trims, at_5.trims)]
    assert len(hours[0]) > 100 and len(hours[1]) > 100
    assert hours[0].min() == pytest.approx(3.0) and hours[0].median() < 5.0
    assert hours[1].min() == pytest.approx(5.0)
