"""Background apps and the pressure generator: pages land where they should, cached apps
get distinct LRU-ordered adj, the generator stops at its trim target and lmkd kills the
oldest cached apps on the way there."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mqoe.apps.background import (
    BOOT_APPS,
    USER_APPS,
    AppCatalogue,
    CachedApp,
    PressureGenerator,
    ServiceRestarts,
    boot_background,
    open_apps,
)
from mqoe.device.cpu import Fair, ThreadState
from mqoe.device.lmk import TRIM_NONE, TRIM_RUNNING_CRITICAL, TRIM_RUNNING_MODERATE
from mqoe.device.phone import Phone
from mqoe.device.process import CACHED_APP_MAX_ADJ, CACHED_APP_MIN_ADJ
from mqoe.engine import ms, seconds
from tests.conftest import make_profile

MB = 256  # pages per MiB


LMKD_MODES = ["minfree", "vmpressure", "psi"]


def small_phone(seed: int = 1, mode: str = "minfree") -> Phone:
    """512 MB, no carve-outs, minfree lmkd (the Go phones' mode), trims at 6/5/3 cached."""
    lmk = {"mode": mode, "trim_cached_thresholds": [6, 5, 3]}
    memory = {"ram_mb": 512, "reserved_mb": 0}
    return Phone(make_profile([(4, 1000.0, 1.0)], memory=memory, lmk=lmk, low_ram=True), seed)


def pressured(
    target: str, seed: int = 1, mode: str = "minfree"
) -> tuple[Phone, PressureGenerator, list[CachedApp]]:
    """Eight boot apps (none restarted after a kill), trims armed, then the generator; run
    until it is done."""
    p = small_phone(seed, mode)
    no_restarts = dataclasses.replace(BOOT_APPS, sticky=frozenset())
    apps = boot_background(p, 8, np.random.default_rng(seed), no_restarts)
    p.run(ms(1))
    p.trims.arm()
    generator = PressureGenerator(p, target)
    for _ in range(600):
        if generator.done.processed:
            break
        p.run(ms(100))
    assert generator.done.processed, "the target never arrived within 60 s"
    return p, generator, apps


# -- CachedApp -------------------------------------------------------------------------------


def test_cached_app_allocates_its_anon_and_file_pages_through_the_memory_model() -> None:
    p = small_phone()
    free_before = p.memory.free_pages
    app = CachedApp(p, "com.example.notes", anon_mb=20.0, file_mb=12.0)
    p.run(ms(1))
    process = app.process
    assert app.ready.processed and app.ready.value is True
    assert process.anon_pages == 20 * MB
    assert process.file_ws_pages == process.file_resident == 12 * MB
    assert p.memory.free_pages == free_before - 32 * MB
    assert process.oom_score_adj == CACHED_APP_MIN_ADJ and process.cached
    assert process.threads == [app.thread]
    p.memory.check()


def test_a_killed_cached_app_leaves_nothing_running() -> None:
    p = small_phone()
    app = CachedApp(p, "com.example.mail", anon_mb=10.0, file_mb=5.0, wake_interval_s=1.0)
    p.run(ms(2500))
    assert app.wakeups == 2  # woke at 1 s and 2 s
    p.lmkd.kill(app.process, "test")
    p.run(seconds(5))
    assert app.wakeups == 2
    assert app.thread.state == ThreadState.DEAD
    assert app.process.anon_pages == app.process.file_ws_pages == 0  # torn down
    assert p.env.peek() is None  # no wake-up timer left: nothing of the app is scheduled
    p.memory.check()


def test_a_waking_cached_app_faults_its_evicted_pages_back() -> None:
    p = small_phone()
    app = CachedApp(p, "com.example.news", anon_mb=8.0, file_mb=8.0, wake_interval_s=1.0)
    p.run(ms(1))
    # kswapd dropped its whole file working set meanwhile.
    p.memory.free_pages += app.process.file_resident
    app.process.file_resident = 0
    p.run(seconds(2))
    assert p.memory.workingset_refault > 0
    assert app.process.file_resident > 0
    p.memory.check()


# -- boot_background / open_apps ---------------------------------------------------------


def test_boot_background_gives_n_cached_processes_with_distinct_adj_oldest_highest() -> None:
    p = small_phone()
    apps = boot_background(p, 10, np.random.default_rng(7))
    p.run(ms(1))
    adjs = [app.process.oom_score_adj for app in apps]
    assert len(apps) == 10 == p.processes.cached_count()
    assert len(set(adjs)) == 10
    assert all(CACHED_APP_MIN_ADJ <= adj <= CACHED_APP_MAX_ADJ for adj in adjs)
    assert adjs == sorted(adjs)  # returned newest first: the newest has the lowest adj
    assert apps[-1].process.pid < apps[0].process.pid  # …and the oldest was opened first
    for app in apps:
        assert BOOT_APPS.anon_mb[0] * MB <= app.process.anon_pages <= BOOT_APPS.anon_mb[1] * MB
        assert BOOT_APPS.file_mb[0] * MB <= app.process.file_ws_pages <= BOOT_APPS.file_mb[1] * MB
    p.memory.check()


def test_opened_apps_are_more_recent_than_boot_apps_and_bigger() -> None:
    p = Phone(make_profile([(4, 1000.0, 1.0)], memory={"ram_mb": 2048, "reserved_mb": 0}), 1)
    rng = np.random.default_rng(3)
    boot = boot_background(p, 12, rng)
    opened = open_apps(p, 8, rng)
    p.run(ms(1))
    boot_adj = [app.process.oom_score_adj for app in boot]
    opened_adj = [app.process.oom_score_adj for app in opened]
    assert len(set(boot_adj + opened_adj)) == 20
    assert max(opened_adj) < min(boot_adj)  # the user's apps went cached after the boot ones
    assert boot_adj == sorted(boot_adj) and opened_adj == sorted(opened_adj)  # order kept
    assert max(boot_adj + opened_adj) <= CACHED_APP_MAX_ADJ
    mean = np.mean
    assert mean([a.process.anon_pages for a in opened]) > mean([a.process.anon_pages for a in boot])
    assert all(a.process.anon_pages >= USER_APPS.anon_mb[0] * MB for a in opened)
    p.memory.check()


def test_background_sizes_follow_the_seed() -> None:
    def sizes(seed: int) -> list[tuple[str, int, int]]:
        p = small_phone()
        apps = boot_background(p, 6, np.random.default_rng(seed))
        return [(a.name, a.anon_pages, a.file_pages) for a in apps]

    assert sizes(5) == sizes(5)
    assert sizes(5) != sizes(6)


# -- PressureGenerator -------------------------------------------------------------------


@pytest.mark.parametrize("mode", LMKD_MODES)
def test_generator_stops_allocating_once_the_target_trim_arrives(mode: str) -> None:
    p, generator, _ = pressured("moderate", mode=mode)
    at_done = generator.allocated_pages
    assert generator.done.value is True
    assert at_done > 0 and generator.reached_ns > 0
    first_moderate = next(t for t in p.trims.history if t.level >= TRIM_RUNNING_MODERATE)
    assert first_moderate.time_ns == generator.reached_ns
    p.run(seconds(10))
    assert generator.allocated_pages == at_done
    held = generator.process.anon_pages + generator.process.anon_swapped
    assert held == at_done  # holds what it allocated (touching it, not adding to it)
    assert generator.process.alive
    p.memory.check()


def test_generator_for_normal_allocates_nothing() -> None:
    p, generator, apps = pressured("normal")
    p.run(seconds(5))
    assert generator.allocated_pages == 0
    assert generator.reached_ns == generator.process.started_ns  # at once
    assert generator.done.value is True
    assert not p.lmkd.kills and all(app.alive for app in apps)
    assert p.trims.level == TRIM_NONE
    p.memory.check()


@pytest.mark.parametrize("mode", LMKD_MODES)
def test_critical_takes_longer_and_more_memory_than_moderate(mode: str) -> None:
    _, moderate, _ = pressured("moderate", mode=mode)
    p, critical, _ = pressured("critical", mode=mode)
    assert critical.reached_ns > moderate.reached_ns
    assert critical.allocated_pages > moderate.allocated_pages
    assert p.trims.history[-1].level == TRIM_RUNNING_CRITICAL
    assert p.trims.history[-1].cached <= 3


@pytest.mark.parametrize("mode", LMKD_MODES)
def test_lmkd_kills_the_cached_apps_on_the_way_highest_adj_first(mode: str) -> None:
    p, generator, apps = pressured("critical", mode=mode)
    kills = p.lmkd.kills
    assert len(kills) >= 5  # 8 cached → at most 3 left at critical
    adjs = [kill.oom_score_adj for kill in kills]
    assert adjs == sorted(adjs, reverse=True)
    assert all(adj >= CACHED_APP_MIN_ADJ for adj in adjs)
    oldest = sorted(apps, key=lambda app: app.process.oom_score_adj, reverse=True)
    assert [kill.pid for kill in kills] == [app.process.pid for app in oldest[: len(kills)]]
    assert generator.process.alive and generator.killed_ns == -1
    p.memory.check()


def test_generator_thread_runs_at_nice_minus_17() -> None:
    _, generator, _ = pressured("moderate")
    assert generator.thread.policy == Fair(-17)
    assert generator.thread.process == generator.process.name
    assert generator.process.threads == [generator.thread]
    assert generator.thread.state_ns[ThreadState.RUNNING] > 0  # first-touch faults cost CPU


def test_a_killed_generator_records_it_and_stops() -> None:
    p = small_phone()
    boot_background(p, 8, np.random.default_rng(1))
    p.trims.arm()
    generator = PressureGenerator(p, "critical")
    p.run(ms(500))
    assert generator.allocated_pages > 0 and not generator.done.triggered
    p.lmkd.kill(generator.process, "test")
    killed_at = p.env.now
    p.run(seconds(3))
    assert generator.killed_ns == killed_at
    assert generator.done.value is False and generator.reached_ns == -1
    allocated = generator.allocated_pages
    p.run(seconds(1))
    assert generator.allocated_pages == allocated
    assert generator.process.anon_pages == 0
    p.memory.check()


def test_generator_rejects_an_unknown_target() -> None:
    with pytest.raises(ValueError, match="target"):
        PressureGenerator(small_phone(), "severe")


# -- ServiceRestarts (ActivityManager restarts killed sticky services) ----------------------


def _sticky_app(p: Phone, name: str = "svc", anon_mb: float = 4.0) -> CachedApp:
    app = CachedApp(p, name, anon_mb=anon_mb, file_mb=2.0)
    ServiceRestarts.of(p).watch(app)
    return app


def test_a_killed_sticky_service_restarts_after_a_second_as_the_newest_cached_process() -> None:
    p = small_phone()
    old = CachedApp(p, "older", anon_mb=1.0, file_mb=1.0)
    app = _sticky_app(p)
    p.run(ms(500))
    p.lmkd.kill(app.process, "test")
    killed_at = p.env.now
    p.run(seconds(2))
    restarts = ServiceRestarts.of(p).restarted
    assert len(restarts) == 1
    at, new = restarts[0]
    assert at - killed_at == ServiceRestarts.RESTART_NS
    assert new.name == "svc" and new.process.pid != app.process.pid and new.alive
    assert new.process.anon_pages == 4 * MB  # it loads its state again
    assert new.process.oom_score_adj == CACHED_APP_MIN_ADJ
    assert old.process.oom_score_adj > new.process.oom_score_adj


def test_a_service_killed_again_soon_after_its_restart_backs_off_by_four() -> None:
    p = small_phone()
    restarts = ServiceRestarts.of(p)
    current = _sticky_app(p).process
    p.run(ms(100))
    delays = []
    for _ in range(3):
        p.lmkd.kill(current, "test")
        killed_at = p.env.now
        p.run(seconds(17))  # long enough for a 16 s backoff
        at, app = restarts.restarted[-1]
        delays.append(at - killed_at)
        current = app.process
        if p.env.now < at + seconds(15):
            p.run(at + seconds(15) - p.env.now)  # killed again 15 s after its restart
    first = ServiceRestarts.RESTART_NS
    assert delays == [first, first * 4, first * 16]


def test_a_service_that_lived_a_minute_restarts_after_a_second_again() -> None:
    p = small_phone()
    restarts = ServiceRestarts.of(p)
    app = _sticky_app(p)
    p.run(ms(100))
    p.lmkd.kill(app.process, "test")
    p.run(seconds(2))
    app = restarts.restarted[-1][1]
    p.run(seconds(61))  # it ran longer than SERVICE_RESET_RUN_DURATION
    p.lmkd.kill(app.process, "test")
    killed_at = p.env.now
    p.run(seconds(2))
    assert restarts.restarted[-1][0] - killed_at == ServiceRestarts.RESTART_NS


def test_restarts_of_different_services_are_ten_seconds_apart() -> None:
    p = small_phone()
    apps = [_sticky_app(p, f"svc{i}") for i in range(3)]
    p.run(ms(100))
    for app in apps:
        p.lmkd.kill(app.process, "test")
    p.run(seconds(40))
    times = [t for t, _ in ServiceRestarts.of(p).restarted]
    assert len(times) == 3
    assert np.diff(times).tolist() == [ServiceRestarts.MIN_BETWEEN_NS] * 2


def test_only_sticky_catalogue_apps_are_restarted() -> None:
    p = small_phone()
    apps = boot_background(p, len(BOOT_APPS.names), np.random.default_rng(3))
    p.run(ms(100))
    for app in apps:
        p.lmkd.kill(app.process, "test")
    p.run(seconds(120))
    names = {app.name for _, app in ServiceRestarts.of(p).restarted}
    assert names == set(BOOT_APPS.sticky)
    assert BOOT_APPS.sticky < set(BOOT_APPS.names)


def test_a_catalogue_rejects_sticky_names_it_does_not_hold() -> None:
    with pytest.raises(ValueError, match="sticky"):
        AppCatalogue(names=("a",), anon_mb=(1, 2), file_mb=(1, 2), sticky=frozenset({"b"}))
