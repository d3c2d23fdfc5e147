"""The CPU scheduler: hand-computed cases and property tests of its invariants.

Rates in these profiles are chosen so 1 reference cycle = 1 ns on a 1000 MHz, ipc 1 core.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.device.cpu import (
    NICE_TO_WEIGHT,
    Fair,
    PreemptKind,
    RealTime,
    SchedSwitch,
    Thread,
    ThreadState,
    parse_cpuset,
)
from mqoe.device.phone import Phone
from mqoe.engine import Event, ms, seconds

PhoneFactory = Callable[..., Phone]
ONE_CORE = [(1, 1000.0, 1.0)]


def _after(phone: Phone, delay_ns: int, thread: Thread, cycles: float, log: list[int]) -> None:
    def proc() -> Generator[Event, None, None]:
        yield phone.env.timeout(delay_ns)
        yield phone.cpu.run(thread, cycles)
        log.append(phone.env.now)

    phone.env.process(proc())


def _states(thread: Thread) -> dict[str, int]:
    return {s.name: thread.state_ns[s] for s in ThreadState if s != ThreadState.DEAD}


def test_work_is_slower_on_a_little_core(phone_factory: PhoneFactory) -> None:
    phone = phone_factory([(1, 1000.0, 1.0), (1, 2000.0, 2.0)])  # 1 vs 4 cycles per ns
    little = phone.cpu.thread("little", cpus=[0])
    big = phone.cpu.thread("big", cpus=[1])
    done: list[int] = []
    _after(phone, 0, little, 1e6, done)
    _after(phone, 0, big, 1e6, done)
    phone.run(ms(5))
    assert sorted(done) == [250_000, 1_000_000]


def test_rt_wakeup_preempts_a_fair_thread_at_once(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)
    hog = phone.cpu.thread("hog")
    phone.cpu.run(hog, math.inf)
    rt = phone.cpu.thread("mmcqd", RealTime(50))
    done: list[int] = []
    _after(phone, ms(1), rt, 500_000, done)
    phone.run(ms(3))
    assert done == [ms(1.5)]  # started at the wake-up instant, ran uninterrupted
    log = phone.cpu.preemptions.rows()
    assert log["kind"] == [PreemptKind.RT]
    assert (log["victim_tid"], log["preemptor_tid"]) == ([hog.tid], [rt.tid])
    assert log["victim_wait_ns"] == [ms(0.5)]
    assert log["preemptor_run_ns"] == [ms(0.5)]
    assert hog.state_ns[ThreadState.RUNNING] == ms(2.5)
    assert hog.state_ns[ThreadState.RUNNABLE_PREEMPTED] == ms(0.5)


def test_higher_rt_priority_preempts_but_equal_priority_waits(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)
    low = phone.cpu.thread("low", RealTime(50))
    high = phone.cpu.thread("high", RealTime(60))
    peer = phone.cpu.thread("peer", RealTime(50))
    low_done: list[int] = []
    high_done: list[int] = []
    peer_done: list[int] = []
    _after(phone, 0, low, 1_000_000, low_done)
    _after(phone, ms(0.2), high, 100_000, high_done)
    _after(phone, ms(0.4), peer, 100_000, peer_done)
    phone.run(ms(5))
    assert high_done == [ms(0.3)]
    assert low_done == [ms(1.1)]  # delayed by exactly the higher-priority run
    assert peer_done == [ms(1.2)]  # FIFO: an equal priority never preempts


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(-12, 12), st.integers(-12, 12))
def test_fair_threads_share_a_core_by_weight(
    phone_factory: PhoneFactory, nice_a: int, nice_b: int
) -> None:
    phone = phone_factory(ONE_CORE)
    a = phone.cpu.thread("a", Fair(nice_a))
    b = phone.cpu.thread("b", Fair(nice_b))
    phone.cpu.run(a, math.inf)
    phone.cpu.run(b, math.inf)
    phone.run(seconds(20))
    wa, wb = NICE_TO_WEIGHT[nice_a + 20], NICE_TO_WEIGHT[nice_b + 20]
    ran_a, ran_b = a.state_ns[ThreadState.RUNNING], b.state_ns[ThreadState.RUNNING]
    assert ran_a + ran_b == seconds(20)
    assert ran_a / (ran_a + ran_b) == pytest.approx(wa / (wa + wb), rel=0.02)


def test_two_equal_hogs_alternate_in_half_latency_slices(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)  # 1 CPU: sched_latency 6 ms, min granularity 0.75 ms
    for name in ("a", "b"):
        phone.cpu.run(phone.cpu.thread(name), math.inf)
    phone.run(ms(30))
    log = phone.cpu.preemptions.rows()
    assert set(log["kind"]) == {PreemptKind.SLICE}
    assert log["time_ns"][:4] == [ms(3), ms(6), ms(9), ms(12)]
    assert set(log["victim_wait_ns"][:-1]) == {ms(3)}


def test_many_threads_stretch_the_period_to_min_granularity(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)
    for i in range(10):  # period = max(6 ms, 10 × 0.75 ms) = 7.5 ms → 0.75 ms each
        phone.cpu.run(phone.cpu.thread(f"t{i}"), math.inf)
    phone.run(ms(7.5))
    times = phone.cpu.preemptions.rows()["time_ns"]
    assert times[:3] == [ms(0.75), ms(1.5), ms(2.25)]


def test_a_long_sleeper_preempts_a_hog_on_wakeup(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)
    phone.cpu.run(phone.cpu.thread("hog"), math.inf)
    ui = phone.cpu.thread("ui")
    done: list[int] = []
    _after(phone, ms(50), ui, 1_000_000, done)
    phone.run(ms(60))
    # Half a latency of sleeper credit (3 ms) beats the 1 ms wake-up granularity.
    assert done == [ms(51)]
    assert phone.cpu.preemptions.rows()["kind"] == [PreemptKind.WAKEUP]


def test_hogs_spread_one_per_core(phone_factory: PhoneFactory) -> None:
    phone = phone_factory([(2, 1000.0, 1.0), (2, 2000.0, 2.0)])
    hogs = [phone.cpu.thread(f"hog{i}") for i in range(4)]
    for hog in hogs:
        phone.cpu.run(hog, math.inf)
    phone.run(ms(100))
    assert [h.state_ns[ThreadState.RUNNING] for h in hogs] == [ms(100)] * 4


def test_a_preempted_thread_moves_to_an_idle_core(phone_factory: PhoneFactory) -> None:
    phone = phone_factory([(2, 1000.0, 1.0)])
    hog = phone.cpu.thread("hog")
    phone.cpu.run(hog, math.inf)  # lands on core 0
    rt = phone.cpu.thread("rt", RealTime(10), cpus=[0])
    _after(phone, ms(1), rt, 1_000_000, [])
    phone.run(ms(5))
    assert phone.cpu.preemptions.rows()["victim_wait_ns"] == [0]
    assert hog.state_ns[ThreadState.RUNNING] == ms(5)


def test_an_idle_core_pulls_a_waiting_thread(phone_factory: PhoneFactory) -> None:
    phone = phone_factory([(2, 1000.0, 1.0)])
    short = phone.cpu.thread("short", RealTime(10))
    phone.cpu.run(short, 2_000_000)  # core 0 for 2 ms
    hogs = [phone.cpu.thread(f"hog{i}") for i in range(2)]
    for hog in hogs:
        phone.cpu.run(hog, math.inf)  # core 1; the second queues there (core 0 runs RT)
    phone.run(ms(3))
    assert short.state == ThreadState.SLEEPING
    assert all(h.state == ThreadState.RUNNING for h in hogs)
    # The second hog shared core 1 by slices until core 0 went idle at 2 ms, then moved.
    assert sum(h.state_ns[ThreadState.RUNNING] for h in hogs) == ms(3) + ms(1)


def test_cpusets_are_respected(phone_factory: PhoneFactory) -> None:
    phone = phone_factory([(2, 1000.0, 1.0), (2, 2000.0, 2.0)], trace=True)
    pinned = {
        phone.cpu.thread("little-only", cpus=[0, 1]).tid: {0, 1},
        phone.cpu.thread("big-only", cpus=[2, 3]).tid: {2, 3},
        phone.cpu.thread("core-3", cpus=[3]).tid: {3},
    }
    for t in phone.cpu.threads:
        phone.cpu.run(t, math.inf)
    for i in range(5):
        phone.cpu.run(phone.cpu.thread(f"free{i}"), math.inf)
    phone.run(ms(200))
    switches = phone.env.trace.records(SchedSwitch)
    assert switches
    for record in switches:
        if record.next_tid in pinned:
            assert record.core in pinned[record.next_tid]


def test_changing_affinity_moves_a_running_thread(phone_factory: PhoneFactory) -> None:
    phone = phone_factory([(2, 1000.0, 1.0)], trace=True)
    t = phone.cpu.thread("t", cpus=[0])
    phone.cpu.run(t, math.inf)
    phone.env.schedule(ms(1), lambda _: phone.cpu.set_affinity(t, [1]))
    phone.run(ms(2))
    runs = [(r.time_ns, r.core) for r in phone.env.trace.records(SchedSwitch) if r.next_tid]
    assert runs == [(0, 0), (ms(1), 1)]
    assert t.state_ns[ThreadState.RUNNING] == ms(2)


def test_an_exiting_thread_frees_its_core(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)
    first, second = phone.cpu.thread("first"), phone.cpu.thread("second")
    phone.cpu.run(first, math.inf)
    phone.cpu.run(second, math.inf)
    phone.env.schedule(ms(1), lambda _: phone.cpu.exit(first))
    phone.run(ms(10))
    assert first.state == ThreadState.DEAD
    assert second.state == ThreadState.RUNNING
    assert first.state_ns[ThreadState.RUNNING] + second.state_ns[ThreadState.RUNNING] == ms(10)


def test_io_wait_is_accounted_separately_from_sleep(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)
    t = phone.cpu.thread("reader")
    phone.env.schedule(ms(2), lambda _: phone.cpu.set_io_wait(t, True))
    phone.env.schedule(ms(7), lambda _: phone.cpu.set_io_wait(t, False))
    phone.run(ms(10))
    assert _states(t)["BLOCKED_IO"] == ms(5)
    assert _states(t)["SLEEPING"] == ms(5)


def test_iowait_is_idle_time_of_the_core_a_blocked_thread_last_ran_on(
    phone_factory: PhoneFactory,
) -> None:
    """/proc/stat iowait: the reader's core idles 1–4 ms and 6–8 ms while it waits
    (a hog runs there 4–6 ms: busy, not iowait); after it exits nothing accrues."""
    phone = phone_factory(ONE_CORE)
    cpu, env = phone.cpu, phone.env
    reader, hog = cpu.thread("reader"), cpu.thread("hog")
    cpu.run(reader, 1000)  # runs at once, so core 0 is its last core
    env.schedule(ms(1), lambda _: cpu.set_io_wait(reader, True))
    env.schedule(ms(4), lambda _: cpu.run(hog, 2 * cpu.cores[0].rate * ms(1)))
    env.schedule(ms(8), lambda _: cpu.exit(reader))
    while (nxt := env.peek()) is not None and nxt < ms(12):
        env.step()
        cpu.check_invariants()
    phone.run(ms(12) - env.now)
    assert cpu.iowait_ns() == ms(3) + ms(2)
    assert cpu.cores[0].nr_iowait == 0


def test_waking_a_thread_straight_out_of_io_wait_ends_its_iowait(
    phone_factory: PhoneFactory,
) -> None:
    phone = phone_factory(ONE_CORE)
    cpu, env = phone.cpu, phone.env
    t = cpu.thread("t")
    cpu.run(t, 1000)
    env.schedule(ms(1), lambda _: cpu.set_io_wait(t, True))
    env.schedule(ms(3), lambda _: cpu.run(t, 1000))
    phone.run(ms(10))
    cpu.check_invariants()
    assert cpu.iowait_ns() == ms(2)


def test_giving_work_to_a_busy_thread_is_a_programming_error(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)
    t = phone.cpu.thread("t")
    phone.cpu.run(t, 1000)
    with pytest.raises(RuntimeError):
        phone.cpu.run(t, 1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", None), ("all", None), ("0-3", (0, 1, 2, 3)), ("3,0-1", (0, 1, 3)), ("2", (2,))],
)
def test_parse_cpuset(text: str, expected: tuple[int, ...] | None) -> None:
    assert parse_cpuset(text, 4) == expected


@pytest.mark.parametrize("text", ["4", "x", "3-1", "0-9"])
def test_parse_cpuset_rejects_bad_lists(text: str) -> None:
    with pytest.raises(ValueError, match="cpuset"):
        parse_cpuset(text, 4)


# -- property tests over random thread mixes -------------------------------------------
thread_spec = st.tuples(
    st.one_of(
        st.integers(-20, 19).map(Fair),
        st.integers(1, 99).map(RealTime),
    ),
    st.sets(st.integers(0, 3), min_size=1),  # cpuset on a 2+2 big.LITTLE phone
    st.integers(20_000, 3_000_000),  # work per burst, cycles
    st.integers(0, 4_000_000),  # sleep between bursts, ns
)


def _random_mix(phone: Phone, specs: list[tuple[object, set[int], int, int]]) -> None:
    for i, (policy, cpus, work, sleep) in enumerate(specs):
        thread = phone.cpu.thread(f"t{i}", policy, cpus=sorted(cpus))  # type: ignore[arg-type]

        def loop(t: Thread = thread, w: int = work, s: int = sleep) -> Generator[Event, None, None]:
            rng = phone.env.rng(t.name)
            while True:
                yield phone.cpu.run(t, w * (0.5 + rng.random()))
                if s:
                    yield phone.env.timeout(int(s * rng.random()))

        phone.env.process(loop())


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(thread_spec, min_size=1, max_size=9), st.integers(0, 1000))
def test_scheduler_invariants_hold_after_every_event(
    phone_factory: PhoneFactory, specs: list[tuple[object, set[int], int, int]], seed: int
) -> None:
    """No allowed core idles while a thread waits; a waiting RT thread finds no core
    running lower priority; queues and weights stay consistent; accounting is exact."""
    phone = phone_factory([(2, 1000.0, 1.0), (2, 2000.0, 1.9)], seed=seed)
    _random_mix(phone, specs)
    end = ms(60)
    env = phone.env
    while (nxt := env.peek()) is not None and nxt < end:
        env.step()
        phone.cpu.check_invariants()
    phone.run(end - env.now)
    for thread in phone.cpu.threads:
        assert sum(thread.state_ns) == end  # Running+Runnable+Preempted+Sleeping+IO = wall
        assert min(thread.state_ns) >= 0


def test_same_seed_gives_an_identical_trace(phone_factory: PhoneFactory) -> None:
    def trace(seed: int) -> list[SchedSwitch]:
        phone = phone_factory([(2, 1000.0, 1.0), (2, 2000.0, 1.9)], seed=seed, trace=True)
        specs = [
            (Fair(0), {0, 1, 2, 3}, 2_000_000, 3_000_000),
            (Fair(-5), {0, 1}, 1_000_000, 1_000_000),
            (RealTime(50), {0, 1, 2, 3}, 300_000, 2_000_000),
            (Fair(10), {2, 3}, 5_000_000, 0),
            (Fair(0), {0, 1, 2, 3}, 900_000, 500_000),
        ]
        _random_mix(phone, specs)  # type: ignore[arg-type]
        phone.run(ms(200))
        return phone.env.trace.records(SchedSwitch)

    first = trace(5)
    assert len(first) > 100
    assert first == trace(5)
    assert first != trace(6)


def test_a_disabled_recorder_keeps_nothing(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE, trace=False)
    phone.cpu.run(phone.cpu.thread("a"), math.inf)
    phone.cpu.run(phone.cpu.thread("b"), math.inf)
    phone.run(ms(50))
    assert len(phone.cpu.preemptions) > 0
    assert len(phone.env.trace) == 0


def test_raising_a_fair_thread_to_real_time_preempts_at_once(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)
    hog, worker = phone.cpu.thread("hog"), phone.cpu.thread("worker")
    phone.cpu.run(hog, math.inf)
    phone.cpu.run(worker, math.inf)
    phone.env.schedule(ms(1), lambda _: phone.cpu.set_policy(worker, RealTime(20)))
    phone.run(ms(10))
    phone.cpu.check_invariants()
    assert worker.policy == RealTime(20)
    assert worker.state == ThreadState.RUNNING
    # Shared by slices for 1 ms, then the worker (now FIFO) keeps the core.
    assert hog.state_ns[ThreadState.RUNNING] <= ms(1)
    assert worker.state_ns[ThreadState.RUNNING] >= ms(9)


def test_renicing_a_sleeping_thread_changes_its_weight(phone_factory: PhoneFactory) -> None:
    phone = phone_factory(ONE_CORE)
    t = phone.cpu.thread("t")
    phone.cpu.set_policy(t, Fair(10))
    assert (t.nice, t.weight) == (10, NICE_TO_WEIGHT[30])


def _periodic(
    phone: Phone, thread: Thread, cycles: float, period_ns: int, cores: list[int]
) -> None:
    """``thread`` wakes every ``period_ns`` to run ``cycles``; records the core it ran on."""

    def proc() -> Generator[Event, None, None]:
        while True:
            done = phone.cpu.run(thread, cycles)
            core = thread._core
            cores.append(-1 if core is None else core.cid)
            yield done
            yield phone.env.timeout(period_ns)

    phone.env.process(proc())


@pytest.mark.parametrize(("cycles", "moves_up"), [(9_000_000, True), (2_000_000, False)])
def test_a_thread_that_no_longer_fits_a_little_core_moves_to_an_idle_big_one(
    phone_factory: PhoneFactory, cycles: float, moves_up: bool
) -> None:
    # Cores 0-1 little (1 cycle/ns), 2-3 big (2 cycles/ns). A thread starting on a little
    # core that runs 9 ms of every 10 ms there is busier than the 80% margin: at a
    # wake-up it takes an idle big core. One running 2 ms of every 10 ms stays little.
    phone = phone_factory([(2, 1000.0, 1.0), (2, 2000.0, 1.0)])
    heavy = phone.cpu.thread("compositor", cpus=[0, 1, 2, 3])
    phone.cpu.set_affinity(heavy, [0])  # start it on a little core …
    cores: list[int] = []
    _periodic(phone, heavy, cycles, ms(1), cores)
    phone.run(ms(300))  # long enough for its running fraction to settle (32 ms half-life)
    phone.cpu.set_affinity(heavy, [0, 1, 2, 3])  # … then let the scheduler choose
    before = len(cores)
    phone.run(ms(200))
    later = cores[before + 2 :]
    assert later, "the thread kept waking"
    if moves_up:
        assert set(later) <= {2, 3}
    else:
        assert set(later) <= {0, 1}
    phone.cpu.check_invariants()
