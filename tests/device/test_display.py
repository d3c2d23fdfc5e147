"""V-Sync, BufferQueue and SurfaceFlinger: hand-computed timings, back-pressure, the
buffer-in-reserve rule, LITTLE saturation and SurfaceFlinger's cpuset."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from mqoe.apps.cpu_load import BurstThread, CpuHog
from mqoe.device.cpu import Fair, RealTime, SchedSwitch
from mqoe.device.display import (
    BufferQueue,
    Display,
    DisplayConfig,
    little_cores,
    surfaceflinger_policy,
)
from mqoe.device.phone import Phone
from mqoe.device.profiles import DeviceProfile, load_profile
from mqoe.device.profiles.schema import DisplaySpec
from mqoe.engine import Event, ms
from tests.conftest import make_profile

PERIOD_NS = 16_666_667  # 60 Hz
FULL_HD_PX = 1080 * 1920


def _profile(
    clusters: list[tuple[int, float, float]], width: int = 1080, height: int = 1920, hz: float = 60
) -> DeviceProfile:
    base = make_profile(clusters)
    return base.model_copy(
        update={"display": DisplaySpec(width_px=width, height_px=height, refresh_hz=hz)}
    )


def _display(phone: Phone, **config: object) -> Display:
    return Display(phone.env, phone.cpu, phone.profile, DisplayConfig(**config))  # type: ignore[arg-type]


def _producer(phone: Phone, queue: BufferQueue, offset_ns: int) -> Generator[Event, object, None]:
    """Queues a buffer every V-Sync period (offset into it) whenever one is free."""
    env = phone.env
    yield env.timeout(offset_ns)
    while True:
        if queue.try_dequeue():
            queue.queue()
        yield env.timeout(PERIOD_NS)


# -- V-Sync ------------------------------------------------------------------------------


def test_vsync_period_follows_the_panel_rate() -> None:
    phone = Phone(_profile([(1, 1000.0, 1.0)], hz=90.0))
    display = _display(phone)
    assert display.period_ns == 11_111_111
    assert display.next_vsync(0) == 11_111_111
    assert display.next_vsync(11_111_110) == 11_111_111
    assert display.next_vsync(11_111_111) == 22_222_222  # strictly after


# -- BufferQueue ---------------------------------------------------------------------------


def test_a_queue_hands_out_at_most_its_buffers() -> None:
    display = _display(Phone(_profile([(1, 1000.0, 1.0)])))
    queue = display.create_surface("app", 3)
    assert [queue.try_dequeue() for _ in range(4)] == [True, True, True, False]


def test_surfaceflinger_latches_the_oldest_buffer_once_per_vsync() -> None:
    phone = Phone(_profile([(1, 1000.0, 1.0)]))
    display = _display(phone, sf_cycles_per_frame=1e6)
    queue = display.create_surface("app", 3)
    for _ in range(3):
        assert queue.try_dequeue()
    phone.env.schedule(ms(1), lambda _: [queue.queue() for _ in range(3)])
    phone.run(ms(70))
    comps = display.compositions()
    assert comps["vsync_ns"].tolist() == [PERIOD_NS, 2 * PERIOD_NS, 3 * PERIOD_NS]
    # 1e6 reference cycles on a 1-cycle/ns core for a full-HD panel: 1 ms each.
    assert (comps["end_ns"] - comps["vsync_ns"]).tolist() == [1_000_000] * 3
    # The last latched buffer stays on screen; the two it replaced are free again.
    assert queue.free == 2 and queue.queued == 0


def test_composition_cost_scales_with_the_panel_pixels() -> None:
    phone = Phone(_profile([(1, 1000.0, 1.0)], width=540, height=960))  # a quarter of full HD
    display = _display(phone, sf_cycles_per_frame=1e6)
    queue = display.create_surface("app")
    assert queue.try_dequeue()
    queue.queue()
    phone.run(ms(20))
    row = display.compositions().iloc[0]
    assert row["end_ns"] - row["vsync_ns"] == 250_000


def _queue_at(phone: Phone, queue: BufferQueue, time_ns: int, n: int) -> None:
    phone.env.schedule(time_ns, lambda _: [queue.queue() for _ in range(n)])


def test_dequeue_blocks_until_surfaceflinger_releases_a_buffer() -> None:
    """Double buffering: with both buffers queued, the third dequeue waits until SF has
    latched the second and composed it, releasing the first (back-pressure)."""
    phone = Phone(_profile([(1, 1000.0, 1.0)]))
    display = _display(phone, sf_cycles_per_frame=1e6)
    queue = display.create_surface("app", 2)
    assert queue.try_dequeue() and queue.try_dequeue()
    assert not queue.try_dequeue()
    _queue_at(phone, queue, ms(1), 2)
    woke: list[tuple[int, object]] = []

    def waiter() -> Generator[Event, object, None]:
        value = yield queue.wait_dequeue()
        woke.append((phone.env.now, value))

    phone.env.process(waiter())
    phone.run(ms(50))
    assert woke == [(2 * PERIOD_NS + 1_000_000, 0)]  # second latch + composition, no delay


def test_a_single_buffer_goes_back_to_the_app_once_composed() -> None:
    phone = Phone(_profile([(1, 1000.0, 1.0)]))
    display = _display(phone, buffers=1, sf_cycles_per_frame=1e6)
    queue = display.create_surface("app")
    assert queue.try_dequeue()
    _queue_at(phone, queue, ms(1), 1)
    phone.run(PERIOD_NS + 999_999)
    assert queue.free == 0  # SurfaceFlinger is still composing it
    phone.env.run(PERIOD_NS + 1_000_001)
    assert queue.free == 1


def test_in_reserve_means_queued_before_and_not_latched_yet() -> None:
    phone = Phone(_profile([(1, 1000.0, 1.0)]))
    display = _display(phone, sf_cycles_per_frame=1e5)
    queue = display.create_surface("app", 3)
    assert queue.try_dequeue() and queue.try_dequeue()
    _queue_at(phone, queue, ms(1), 2)  # SF latches them at one and two periods
    phone.run(ms(50))
    t = ms(1) + 1  # just after they were queued
    since = [t, t, t, ms(1), t]
    at = [PERIOD_NS, PERIOD_NS + 1, 2 * PERIOD_NS + 1, PERIOD_NS, 2 * PERIOD_NS]
    assert queue.in_reserve(since, at).tolist() == [True, True, False, False, True]


# -- LITTLE cores, saturation and SurfaceFlinger's cpuset ---------------------------------


def test_little_cluster_is_the_named_or_the_slowest_one() -> None:
    assert little_cores(Phone(load_profile("redmi-5")).cpu) == (0, 1, 2, 3)
    phone = Phone(_profile([(2, 2000.0, 2.0), (2, 1000.0, 1.0)]))  # slow cluster second
    assert little_cores(phone.cpu) == (2, 3)


def test_surfaceflinger_policy_by_android_release() -> None:
    assert surfaceflinger_policy(load_profile("redmi-5")) == Fair(-8)  # Android 7
    assert surfaceflinger_policy(load_profile("black-shark")) == RealTime(2)  # Android 9


def test_little_saturation_share_sees_hogs_on_every_little_core() -> None:
    phone = Phone(_profile([(2, 1000.0, 1.0), (2, 2000.0, 2.0)]))
    display = _display(phone)
    phone.env.schedule(ms(50), lambda _: [CpuHog(phone, f"hog{c}", cpus=(c,)) for c in (0, 1)])
    phone.run(ms(100))
    # Samples every 8.33 ms; the hogs start at 50 ms, just after the sample at 49.99 ms.
    starts, ends = [0, ms(60), ms(20), ms(40)], [ms(40), ms(100), ms(80), ms(60)]
    share = display.little_saturated_share(starts, ends)
    assert share.tolist() == pytest.approx([0.0, 1.0, 3 / 7, 1 / 3])


def _sf_run(sf_cpuset: str, hogs: bool) -> tuple[Phone, Display]:
    """Little (2 cores) + big (2 cores); SF a fair thread at nice -8 (as on Android 7); a
    producer queues a frame each V-Sync; optionally two nice -10 hogs (top-app threads
    boosted by ActivityManager) keep the LITTLE cores busy."""
    phone = Phone(_profile([(2, 1000.0, 1.0), (2, 2000.0, 2.0)]), trace=True)
    display = _display(phone, sf_cpuset=sf_cpuset, sf_policy=Fair(-8), sf_cycles_per_frame=2e6)
    queue = display.create_surface("app")
    phone.env.process(_producer(phone, queue, ms(3)))
    if hogs:
        for core in (0, 1):
            CpuHog(phone, f"hog{core}", Fair(-10), cpus=(core,))
    phone.run(ms(500))
    return phone, display


def _sf_cores(phone: Phone, display: Display) -> list[tuple[int, int]]:
    tid = display.sf_thread.tid
    return [(r.time_ns, r.core) for r in phone.env.trace.records(SchedSwitch) if r.next_tid == tid]


@pytest.mark.parametrize("hogs", [False, True])
def test_surfaceflinger_stays_on_little_cores_by_default(hogs: bool) -> None:
    phone, display = _sf_run("little", hogs)
    cores = {core for _, core in _sf_cores(phone, display)}
    assert cores and cores <= {0, 1}
    comps = display.compositions()
    assert len(comps) > 20 and not comps["widened"].any()


def test_surfaceflinger_uses_big_cores_only_when_every_little_core_is_busy() -> None:
    phone, display = _sf_run("big_when_little_saturated", hogs=True)
    comps = display.compositions()
    # The affinity is widened exactly at the V-Syncs where both LITTLE cores are busy...
    assert (comps["widened"] == (comps["little_busy"] == 2)).all()
    assert comps["widened"].all()
    # ... and SF then runs on a big core, inside a widened composition.
    runs = _sf_cores(phone, display)
    on_big = [t for t, core in runs if core in (2, 3)]
    assert on_big
    widened = comps[comps["widened"]]
    for t in on_big:
        assert ((widened["vsync_ns"] <= t) & (t <= widened["end_ns"])).any()


def test_surfaceflinger_keeps_little_cores_when_they_are_not_saturated() -> None:
    phone, display = _sf_run("big_when_little_saturated", hogs=False)
    assert not display.compositions()["widened"].any()
    assert {core for _, core in _sf_cores(phone, display)} <= {0, 1}


def test_widening_moves_surfaceflinger_off_saturated_little_cores() -> None:
    """The fix is a placement change: SF composes on an idle, faster big core instead of
    a LITTLE core (where CFS's sleeper credit gets it the core, at LITTLE speed)."""
    _, pinned = _sf_run("little", hogs=True)
    _, fixed = _sf_run("big_when_little_saturated", hogs=True)
    span = {
        name: (d.compositions()["end_ns"] - d.compositions()["vsync_ns"]).to_numpy()
        for name, d in (("pinned", pinned), ("fixed", fixed))
    }
    assert (span["pinned"] == 2_000_000).all()  # 2e6 cycles at 1 cycle/ns, never delayed
    assert (span["fixed"] == 500_000).all()  # on a big core: 4 cycles/ns


def test_widening_removes_surfaceflinger_waits_behind_real_time_little_work() -> None:
    """Real-time bursts (an mmcqd/audio-like thread per LITTLE core) delay a fair SF
    pinned to LITTLE; widened at saturated V-Syncs it takes an idle big core instead."""
    runnable = {}
    for mode in ("little", "big_when_little_saturated"):
        phone = Phone(_profile([(2, 1000.0, 1.0), (2, 2000.0, 2.0)]))
        display = _display(phone, sf_cpuset=mode, sf_policy=Fair(-8), sf_cycles_per_frame=2e6)
        phone.env.process(_producer(phone, display.create_surface("app"), ms(3)))
        for core in (0, 1):
            BurstThread(phone, f"rt{core}", RealTime(10), 100.0, 6e6, cpus=(core,))
        phone.run(ms(2000))
        comps = display.compositions()
        assert len(comps) > 100
        runnable[mode] = comps["runnable_ns"].sum()
    assert runnable["little"] > 0
    assert runnable["big_when_little_saturated"] < runnable["little"] / 2


# -- the app's BufferQueue calls into SurfaceFlinger ----------------------------------------


def _buffer_calls(
    phone: Phone, display: Display, calls: list[int], period_ns: int = PERIOD_NS
) -> Generator[Event, object, None]:
    """A RenderThread-like client on a big core: dequeueBuffer, 1 ms of drawing (1 ms on
    big cores: 4e6 cycles), queueBuffer, every period; appends each call's latency to
    ``calls``."""
    env, cpu = phone.env, phone.cpu
    thread = cpu.thread("RenderThread", Fair(-10), process="app", cpus=(2, 3))
    queue = display.create_surface("app")
    while True:
        t0 = env.now
        yield from queue.dequeue(thread)
        t1 = env.now
        yield cpu.run(thread, 4e6)
        t2 = env.now
        yield from queue.queue_buffer(thread)
        calls += [t1 - t0, env.now - t2]
        yield env.timeout(period_ns - (env.now - t0) % period_ns)


def test_buffer_calls_are_binder_transactions_served_on_surfaceflinger_cores() -> None:
    """Before Android 12 the BufferQueue lives in SurfaceFlinger: each dequeueBuffer and
    queueBuffer is a Binder call that one of SF's pool threads serves on SF's cores."""
    phone = Phone(_profile([(2, 1000.0, 1.0), (2, 2000.0, 2.0)]), trace=True)
    display = _display(phone, sf_policy=Fair(-8))
    assert display.producer_binder  # the test profile is Android 10
    calls: list[int] = []
    phone.env.process(_buffer_calls(phone, display, calls))
    phone.run(ms(200))
    assert len(calls) >= 20 and display.sf_binder.calls == len(calls)
    # (60 000 server + 50 000 transaction cycles) at 1 cycle/ns on an idle LITTLE core
    assert set(calls) == {110_000}
    pool = {t.tid for t in display.sf_binder.threads}
    cores = {r.core for r in phone.env.trace.records(SchedSwitch) if r.next_tid in pool}
    assert cores and cores <= {0, 1}


def test_buffer_calls_stay_in_the_app_from_android_12() -> None:
    phone = Phone(_profile([(2, 1000.0, 1.0), (2, 2000.0, 2.0)]))
    phone.profile = phone.profile.model_copy(update={"android_version": "12"})
    display = _display(phone)
    assert not display.producer_binder
    calls: list[int] = []
    phone.env.process(_buffer_calls(phone, display, calls))
    phone.run(ms(100))
    assert display.sf_binder.calls == 0
    assert set(calls) == {0}


def test_saturated_little_cores_delay_the_apps_buffer_calls_until_sf_may_use_big_ones() -> None:
    """The responsiveness study's big.LITTLE case on the app's side: real-time bursts on
    every LITTLE core hold up the SurfaceFlinger Binder threads serving the app's buffer
    calls; with the fix the pool moves to the idle big cores at saturated V-Syncs."""
    mean = {}
    for mode in ("little", "big_when_little_saturated", "all"):
        phone = Phone(_profile([(2, 1000.0, 1.0), (2, 2000.0, 2.0)]))
        display = _display(phone, sf_cpuset=mode, sf_policy=Fair(-8))
        calls: list[int] = []
        phone.env.process(_buffer_calls(phone, display, calls))
        for core in (0, 1):
            BurstThread(phone, f"rt{core}", RealTime(10), 100.0, 6e6, cpus=(core,))
        phone.run(ms(2000))
        assert len(calls) > 200
        mean[mode] = sum(calls) / len(calls)
    # Unloaded, a call takes 110 µs on a LITTLE core, 27.5 µs on a big one.
    assert mean["little"] > 4 * 110_000
    # Widened only at V-Syncs where both LITTLE cores are busy: about half the delay goes.
    assert mean["big_when_little_saturated"] < 0.6 * mean["little"]
    # Free to use any core, the pool still wakes on an idle LITTLE core first (its
    # previous one) and is sometimes caught there by a burst.
    assert mean["all"] < mean["little"] / 4


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="buffers"):
        DisplayConfig(buffers=0)
    with pytest.raises(ValueError, match="sf_cpuset"):
        DisplayConfig(sf_cpuset="big")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sf_binder_threads"):
        DisplayConfig(sf_binder_threads=0)
    with pytest.raises(ValueError, match="bq_call_cycles"):
        DisplayConfig(bq_call_cycles=-1.0)
