"""The CPU as phones run it: PELT, OPPs, governors, hotplug, capacity-aware placement,
cgroups and energy (each against a hand-computable case)."""

from __future__ import annotations

from collections.abc import Generator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.device.cpu import Fair
from mqoe.device.cpu.energy import power_table
from mqoe.device.cpu.governors import Interactive, Schedutil
from mqoe.device.cpu.knobs import apply_cpu_knobs
from mqoe.device.cpu.opp import OppTable
from mqoe.device.cpu.pelt import HALFLIFE_NS, accrue
from mqoe.device.phone import Phone
from mqoe.device.profiles import DeviceProfile, load_profile
from mqoe.device.profiles.schema import ClusterPower
from mqoe.engine import Event, ms
from mqoe.workloads.runner import run_scenario
from tests.conftest import make_profile

OPP = [200_000, 400_000, 600_000, 800_000, 1_000_000]


def _profile(clusters: list[tuple[int, float, float]], **cpu: object) -> DeviceProfile:
    base = make_profile(clusters)
    return base.model_copy(update={"cpu": base.cpu.model_validate(
        {**base.cpu.model_dump(), **cpu}, strict=False)})  # fmt: skip


def _with_opps(profile: DeviceProfile, opps: list[int]) -> Phone:
    """A phone whose every cluster has ``opps`` (patched in: test SoCs have no file)."""
    phone = Phone(profile, 0)
    for policy in phone.cpu.policies.values():
        policy.opp = OppTable(tuple(opps))
        policy.min_khz, policy.max_khz = opps[0], opps[-1]
        for core in policy.cores:
            core.busy_opp_ns = [0] * len(opps)
        policy.active_opp_ns = [0] * len(opps)
        phone.cpu._set_freq(policy, opps[-1])
        core_scale = [c.cap_orig for c in policy.cores]
        assert all(c == core_scale[0] for c in core_scale)
    return phone


def _busy_loop(phone: Phone, thread: object, cycles: float, sleep_ns: int) -> None:
    cpu = phone.cpu

    def proc() -> Generator[Event, None, None]:
        while thread.alive:  # type: ignore[attr-defined]
            yield cpu.run(thread, cycles)  # type: ignore[arg-type]
            if sleep_ns:
                yield phone.env.timeout(sleep_ns)

    phone.env.process(proc())


def test_pelt_halves_in_32_ms_and_saturates_at_the_running_capacity() -> None:
    assert accrue(800.0, HALFLIFE_NS, 0.0) == pytest.approx(400.0)
    assert accrue(800.0, 2 * HALFLIFE_NS, 0.0) == pytest.approx(200.0)
    assert accrue(0.0, 50 * HALFLIFE_NS, 512.0) == pytest.approx(512.0)
    phone = Phone(make_profile([(1, 1000.0, 1.0)]), 0)
    phone.cpu.track_util = True  # kept only where read: on by default on big.LITTLE
    t = phone.cpu.thread("t")
    _busy_loop(phone, t, 1e12, 0)
    phone.run(ms(400))
    assert t._util == pytest.approx(1024.0, rel=1e-3)  # ran the whole time at full capacity
    phone.cpu.exit(t)
    phone.run(ms(32))
    core = phone.cpu.cores[0]
    assert phone.cpu.core_util(core) == pytest.approx(0.0, abs=1e-6)  # left with the thread


def test_utilisation_is_frequency_invariant() -> None:
    # Half the clock, always busy: PELT reports half the capacity (cap_scale(freq)).
    phone = _with_opps(make_profile([(1, 1000.0, 1.0)]), OPP)
    policy = phone.cpu.policies["c0"]
    phone.cpu._set_freq(policy, 600_000)
    phone.cpu.track_util = True
    t = phone.cpu.thread("t")
    _busy_loop(phone, t, 1e12, 0)
    phone.run(ms(500))
    assert phone.cpu.core_util(phone.cpu.cores[0]) == pytest.approx(1024 * 0.6, rel=1e-3)


def test_schedutil_follows_utilisation_with_its_rate_limit() -> None:
    phone = _with_opps(make_profile([(1, 1000.0, 1.0)]), OPP)
    cpu = phone.cpu
    policy = cpu.policies["c0"]
    governor = Schedutil(up_rate_limit_us=0, down_rate_limit_us=50_000)
    policy.governor = governor
    governor.start(policy)
    t = cpu.thread("t")
    # 4 M cycles then 2 ms of sleep: busy 91% at 200 MHz, 83% at 400, 77% at 600 MHz,
    # where 1.25 × util / capacity × 1 GHz first resolves to the step itself: it must
    # climb off the bottom step and settle below the top.
    _busy_loop(phone, t, 4e6, ms(2))
    seen: list[int] = []
    for _ in range(100):
        phone.run(ms(5))
        seen.append(policy.cur_khz)
        cpu.check_invariants()
    assert set(seen) <= set(OPP)
    settled = seen[-40:]
    assert OPP[0] < min(settled) and max(settled) < OPP[-1]
    expected = policy.opp.at_least(1.25 * OPP[-1] * cpu.core_util(cpu.cores[0]) / 1024)
    assert abs(OPP.index(policy.cur_khz) - OPP.index(expected)) <= 1
    # the rate limit: after the load stops, the clock may not drop within 50 ms of the
    # last change
    cpu.exit(t)
    last = policy.last_change_ns
    phone.run(ms(49))
    assert policy.last_change_ns == last or policy.last_change_ns - last >= ms(50)


def test_interactive_jumps_to_hispeed_and_holds_min_sample_time() -> None:
    phone = _with_opps(make_profile([(1, 1000.0, 1.0)]), OPP)
    cpu = phone.cpu
    policy = cpu.policies["c0"]
    cpu._set_freq(policy, OPP[0])
    policy._target = OPP[0]
    governor = Interactive(hispeed_freq=600_000, go_hispeed_load=90, target_loads="90",
                           above_hispeed_delay="100000", timer_rate=20_000,
                           min_sample_time=80_000)  # fmt: skip
    policy.governor = governor
    governor.start(policy)
    t = cpu.thread("t")
    _busy_loop(phone, t, 1e12, 0)  # 100% load
    phone.run(ms(21))  # first sample: load ≥ go_hispeed_load → hispeed, not the top
    assert policy.cur_khz == 600_000
    phone.run(ms(60))  # above hispeed only after above_hispeed_delay (100 ms)
    assert policy.cur_khz == 600_000
    phone.run(ms(60))  # the sample at 120 ms: 100 ms after the jump, choose_freq's step
    assert policy.cur_khz == 800_000  # the lowest step where 100% × 600 MHz ≤ 90%
    raised = policy.last_change_ns
    assert raised == ms(120)
    cpu.exit(t)  # load drops to 0: the clock holds min_sample_time since the raise
    phone.run(raised + ms(79) - phone.env.now)
    assert policy.cur_khz == 800_000
    phone.run(ms(40))
    assert policy.cur_khz < 800_000


def test_mtk_hps_onlines_a_core_when_load_crosses_its_threshold_not_before_its_delay() -> None:
    tunables = {"up_threshold": 80, "up_times": 3, "down_threshold": 30, "down_times": 2,
                "interval_ms": 50, "min_cpus": 1}  # fmt: skip
    hotplug = {"name": "mtk_hps", "c0": tunables}
    phone = Phone(_profile([(4, 1000.0, 1.0)], hotplug=hotplug), 0)
    cpu = phone.cpu
    # idle: one core off per down_times samples (the history restarts after a change)
    phone.run(ms(120))
    assert [c.online for c in cpu.cores] == [True, True, True, False]
    phone.run(ms(200))
    assert [c.online for c in cpu.cores] == [True, False, False, False]
    hog = cpu.thread("hog")
    _busy_loop(phone, hog, 1e12, 0)  # 100% of the one online core > 80 × 1
    t0 = phone.env.now
    online_at: list[int] = []
    for _ in range(40):
        phone.run(ms(5))
        cpu.check_invariants()
        if cpu.cores[1].online and not online_at:
            online_at.append(phone.env.now - t0)
    assert online_at, "a second core came online"
    # three samples above the threshold (the first after ≤ 50 ms, then every 50 ms)
    assert ms(100) < online_at[0] <= ms(150) + ms(5)


def test_a_boosted_top_app_thread_wakes_on_an_idle_big_core_and_background_stays_put() -> None:
    boost = {"kind": "schedtune", "top_app": 10, "prefer_idle": True}
    cpusets = {"top-app": "0-3", "background": "0"}
    phone = Phone(_profile([(2, 1000.0, 1.0), (2, 2000.0, 1.0)], boost=boost,
                           cpusets=cpusets), 0)  # fmt: skip
    cpu = phone.cpu
    ui = cpu.thread("ui")
    cpu.set_group(ui, "top-app")
    bg = cpu.thread("bg", Fair(10))
    cpu.set_group(bg, "background")
    seen_ui: list[int] = []
    seen_bg: list[int] = []

    def wake(thread: object, log: list[int]) -> Generator[Event, None, None]:
        while True:
            done = cpu.run(thread, 1e5)  # type: ignore[arg-type]
            core = thread._core  # type: ignore[attr-defined]
            log.append(core.cid if core is not None else -1)
            yield done
            yield phone.env.timeout(ms(3))
            if not thread.alive:  # type: ignore[attr-defined]
                return

    phone.env.process(wake(ui, seen_ui))
    phone.env.process(wake(bg, seen_bg))
    for _ in range(50):
        phone.run(ms(2))
        cpu.check_invariants()
    assert seen_ui and set(seen_ui) <= {2, 3}  # a light thread, but boosted: big
    assert set(seen_bg) == {0}  # never leaves its cpuset


def test_energy_is_power_times_time_on_a_hand_computable_run() -> None:
    phone = _with_opps(make_profile([(2, 1000.0, 1.0)]), [500_000, 1_000_000])
    cpu = phone.cpu
    cp = ClusterPower(speeds_khz=(500_000, 1_000_000), core_ma=(10.0, 30.0), cluster_ma=5.0)
    cpu.power["c0"] = power_table(cpu.policies["c0"].opp, None, cp, 4.0)
    a = cpu.thread("a", cpus=[0])
    b = cpu.thread("b", cpus=[1])
    cpu.run(a, 1_000_000 * 1e3 * 1.0)  # 1 s at 1 GHz on core 0
    cpu.run(b, 1_000_000 * 1e3 * 0.5)  # 0.5 s on core 1
    phone.run(ms(2000))
    row = cpu.energy_table()[0]
    # cores: 1.5 busy core-s × 120 mW; cluster: 1 s active × 20 mW; idle draws 0 here
    assert row["busy_s"] == pytest.approx(1.5, rel=1e-6)
    assert row["energy_j"] == pytest.approx(1.5 * 0.120 + 1.0 * 0.020, rel=1e-6)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), governor=st.sampled_from(
    ["performance", "powersave", "schedutil", "interactive", "ondemand"]))  # fmt: skip
def test_clocks_take_only_opp_values_and_a_core_runs_one_thread(seed: int, governor: str) -> None:
    profile = load_profile("nokia-1")
    profile, _, _ = apply_cpu_knobs(profile, {"governor": governor})
    # One thread per core, clocks on OPPs, no idle core while one waits.
    _random_load_checked(Phone(profile, seed), threads=6, max_nice=5, min_sleep_ms=1, steps=60)


def _random_load_checked(
    phone: Phone, threads: int, max_nice: int, min_sleep_ms: int, steps: int
) -> None:
    """Threads of random nice, bursts and sleeps; the invariants checked at random times."""
    cpu = phone.cpu
    rng = phone.env.rng("test")
    for k in range(threads):
        t = cpu.thread(f"t{k}", Fair(int(rng.integers(-5, max_nice + 1))))
        sleep = ms(int(rng.integers(min_sleep_ms, 30)))
        _busy_loop(phone, t, float(rng.integers(1, 20)) * 1e6, sleep)
    for _ in range(steps):
        phone.env.run(phone.env.now + ms(int(rng.integers(1, 20))))
        cpu.check_invariants()


def _frame_run(overrides: dict[str, str]) -> dict[str, float]:
    record = run_scenario("frame-deadlines", load_profile("nokia-1"), 3, overrides)
    return record.metrics


def test_a_run_is_deterministic_per_seed_under_every_governor() -> None:
    for governor in ("interactive", "schedutil"):
        a = _frame_run({"governor": governor})
        b = _frame_run({"governor": governor})
        assert a == b


def test_performance_governor_changes_a_nokia_1_run() -> None:
    own = run_scenario("frame-deadlines", load_profile("nokia-1"), 0)
    perf = run_scenario("frame-deadlines", load_profile("nokia-1"), 0, {"governor": "performance"})
    assert "governor" not in own.params
    assert perf.params["governor"] == "performance"
    assert own.run_id != perf.run_id
    energy_own, energy_perf = own.metrics["energy_j"], perf.metrics["energy_j"]
    assert energy_perf > energy_own  # the top clock costs more energy for the same frames


def test_profiles_show_lists_the_cpu_platform(capsys: pytest.CaptureFixture[str]) -> None:
    from mqoe.cli.main import main

    assert main(["profiles", "show", "nokia-1"]) == 0
    text = capsys.readouterr().out
    assert "name: interactive" in text and "name: mtk_hps" in text
    assert "opp_khz: [221000, 364000, 494000, 637000, 793000, 858000, 988000, 1092000]" in text
    assert "power_source: soc energy model" in text
    assert "github:bq/aquaris-A4.5" in text  # the tables' source


def test_every_profile_names_its_cpu_sources() -> None:
    from mqoe.device.profiles import list_profiles, load_soc

    for profile in list_profiles():
        cpu = profile.cpu
        assert cpu.soc is not None, profile.name
        assert load_soc(cpu.soc.id).sources.get("opp"), profile.name
        assert profile.sources.get("cpufreq"), profile.name
        if cpu.hotplug is not None:
            assert profile.sources.get("hotplug"), profile.name
        if cpu.cpusets:
            assert profile.sources.get("cgroups"), profile.name
        if cpu.power_profile is not None:
            assert profile.sources.get("power_profile"), profile.name


# -- HMP placement (Qualcomm msm-3.18 / msm-4.4 select_best_cpu) ------------------------

HMP = {"upmigrate": 90, "downmigrate": 80, "spill_nr_run": 3, "restrict_cluster_spill": True}


def _hmp_phone(seed: int = 0, **hmp: object) -> Phone:
    # Two LITTLE cores at 1 GHz, two big at 2 GHz (capacity 512 vs 1024).
    return Phone(_profile([(2, 1000.0, 1.0), (2, 2000.0, 1.0)], hmp={**HMP, **hmp}), seed)


def _spin(phone: Phone, thread: object) -> None:
    """Keep ``thread`` runnable from now on (one long burst)."""
    phone.cpu.run(thread, 1e15)  # type: ignore[arg-type]


def test_hmp_packs_a_small_thread_onto_a_busy_little_core_while_big_cores_idle() -> None:
    phone = _hmp_phone()
    cpu = phone.cpu
    a, b, c = (cpu.thread(n) for n in "abc")
    for t in (a, b):
        _spin(phone, t)
    phone.run(ms(1))
    assert {a._core.cid, b._core.cid} == {0, 1}  # type: ignore[union-attr]
    _spin(phone, c)  # a new thread has no utilisation: it fits the LITTLE cluster
    phone.run(ms(1))
    assert c._core is not None and c._core.cid in (0, 1)  # queued behind a LITTLE thread
    assert cpu.cores[2].current is None and cpu.cores[3].current is None  # big cores idle
    cpu.check_invariants()  # the idle big cores are allowed to idle (restrict_cluster_spill)


def test_hmp_spills_to_big_cores_past_spill_nr_run_and_without_restriction_big_pulls() -> None:
    phone = _hmp_phone()
    cpu = phone.cpu
    threads = [cpu.thread(f"t{k}") for k in range(5)]
    for t in threads:
        _spin(phone, t)
        phone.run(ms(1))
    # Each LITTLE core takes spill_nr_run = 3 runnable threads at most: 2 × 3 = 6 > 5,
    # but once the cluster holds 3 per core on average the big cores may pull.
    on_little = sum(t._core.cid in (0, 1) for t in threads)  # type: ignore[union-attr]
    assert on_little == 5
    sixth, seventh = cpu.thread("t5"), cpu.thread("t6")
    _spin(phone, sixth)
    phone.run(ms(1))
    _spin(phone, seventh)  # both LITTLE cores spilled: it goes to a big core
    phone.run(ms(1))
    assert seventh._core is not None and seventh._core.cid in (2, 3)
    cpu.check_invariants()
    free = _hmp_phone(restrict_cluster_spill=False)
    x, y, z = (free.cpu.thread(n) for n in "xyz")
    for t in (x, y, z):
        _spin(free, t)
    free.run(ms(1))
    # Without the restriction the idle big cores pull at once (no idle core while one waits).
    assert sorted(t._core.cid for t in (x, y, z)) == [0, 1, 2]  # type: ignore[union-attr]
    free.cpu.check_invariants()


def test_hmp_up_migrates_a_thread_past_upmigrate_and_back_under_downmigrate() -> None:
    phone = _hmp_phone()
    cpu = phone.cpu
    heavy = cpu.thread("heavy", cpus=[0])
    _busy_loop(phone, heavy, 1e6, 0)  # always busy on LITTLE core 0: utilisation → 512
    phone.run(ms(300))
    assert heavy._util > 0.9 * 512
    cpu.set_affinity(heavy, None)
    cpu.exit(heavy)
    # A thread of the same history, waking: its utilisation is above 90% of LITTLE's
    # capacity, so it takes an idle big core.
    t = cpu.thread("t")
    t._util = 0.95 * 512
    t._last_core = cpu.cores[0]
    _spin(phone, t)
    phone.run(ms(1))
    assert t._core is not None and t._core.cid in (2, 3)
    # Coming from big, it may come back only under downmigrate (80% of 512).
    u = cpu.thread("u")
    u._util, u._last_core = 0.85 * 512, cpu.cores[2]
    _spin(phone, u)
    phone.run(ms(1))
    assert u._core is not None and u._core.cid == 3
    low = cpu.thread("low", Fair(19))  # niced past upmigrate_min_nice: always small
    low._util, low._last_core = 0.99 * 512, cpu.cores[0]
    _spin(phone, low)
    phone.run(ms(1))
    assert low._core is not None and low._core.cid in (0, 1)
    cpu.check_invariants()


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), restrict=st.booleans())
def test_hmp_placement_keeps_the_scheduler_consistent_under_random_load(
    seed: int, restrict: bool
) -> None:
    phone = _hmp_phone(seed, restrict_cluster_spill=restrict)
    _random_load_checked(phone, threads=9, max_nice=10, min_sleep_ms=0, steps=80)


# -- RT throttling (sched_rt_runtime_us / sched_rt_period_us) ---------------------------


def test_rt_throttling_leaves_fair_threads_five_percent() -> None:
    from mqoe.device.cpu import RealTime

    phone = Phone(make_profile([(1, 1000.0, 1.0)]), 0)
    cpu = phone.cpu
    rt = cpu.thread("rt", RealTime(50))
    fair = cpu.thread("fair")
    _spin(phone, rt)  # a runaway SCHED_FIFO loop
    _spin(phone, fair)
    for _ in range(30):
        phone.run(ms(100))
        cpu.check_invariants()
    cpu.finish()
    running = {t.name: t.state_ns[0] for t in (rt, fair)}
    # 3 s: each 1 s period gives RT 950 ms, then fair runs 50 ms.
    assert running["fair"] == pytest.approx(3 * 50e6, rel=1e-6)
    assert running["rt"] == pytest.approx(3 * 950e6, rel=1e-6)
    off = Phone(make_profile([(1, 1000.0, 1.0)], rt_runtime_us=-1), 0)
    rt2, fair2 = off.cpu.thread("rt", RealTime(50)), off.cpu.thread("fair")
    _spin(off, rt2)
    _spin(off, fair2)
    off.run(ms(3000))
    off.cpu.finish()
    assert fair2.state_ns[0] == 0  # unthrottled: SCHED_FIFO starves CFS


def test_processes_join_the_cgroup_of_their_importance() -> None:
    from mqoe.device.process import (
        CACHED_APP_MIN_ADJ,
        FOREGROUND_APP_ADJ,
        PERCEPTIBLE_APP_ADJ,
        SYSTEM_ADJ,
    )

    cpusets = {"top-app": "0-3", "foreground": "0-2", "background": "0"}
    phone = Phone(_profile([(2, 1000.0, 1.0), (2, 2000.0, 1.0)], cpusets=cpusets), 0)
    procs, cpu = phone.processes, phone.cpu
    app = procs.spawn("app", FOREGROUND_APP_ADJ, 0)
    main = cpu.thread("main", process="app")
    procs.add_threads(app, [main])
    assert main.cpuset == (0, 1, 2, 3) and app.sched_group == "top-app"
    procs.set_adj(app, PERCEPTIBLE_APP_ADJ)
    assert main.cpuset == (0, 1, 2)
    procs.set_adj(app, CACHED_APP_MIN_ADJ)
    late = cpu.thread("late", process="app")
    procs.add_threads(app, [late])  # a thread started while cached joins the group
    assert main.cpuset == late.cpuset == (0,)
    _spin(phone, main)
    _spin(phone, late)
    phone.run(ms(50))
    assert main._core is not None and main._core.cid == 0  # both on the background core
    assert late._core is not None and late._core.cid == 0
    system = procs.spawn("system_server", SYSTEM_ADJ, 0)
    binder = cpu.thread("binder", process="system_server", cpus=[1])
    procs.add_threads(system, [binder])
    assert binder.cpuset == (1,)  # system processes keep the cores they were given
    cpu.check_invariants()


def test_periodic_balancing_evens_out_busy_cores_at_the_balance_interval() -> None:
    phone = Phone(make_profile([(2, 1000.0, 1.0)]), 0)
    cpu = phone.cpu
    a = cpu.thread("a", cpus=[1])
    _spin(phone, a)
    queued = [cpu.thread(f"q{k}", cpus=[0]) for k in range(4)]
    for t in queued:
        _spin(phone, t)
    phone.run(ms(1))
    for t in queued:
        cpu.set_affinity(t, None)  # free to move, but no core is idle: they stay on core 0
    on = lambda cid: sum(t._core is not None and t._core.cid == cid for t in queued)  # noqa: E731
    assert on(0) == 4
    phone.run(ms(60))  # core 1 balances every 2 cores × 32 = 64 ms of being busy
    assert on(0) == 4
    phone.run(ms(10))
    assert on(0) == 3 and on(1) == 1  # 4 : 1 → 3 : 2 threads, no overshoot
    phone.run(ms(500))
    assert on(0) == 3  # balanced within imbalance_pct: nothing more moves
    cpu.check_invariants()
