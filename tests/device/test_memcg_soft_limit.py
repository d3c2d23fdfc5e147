"""Per-app memory cgroups: the soft limits lmkd writes by adj (Android 10 cmd_procprio),
and reclaim that takes from the cgroups over their soft limit first, unseen by
vmpressure (Linux 3.18 mem_cgroup_soft_limit_reclaim)."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from mqoe.device.lmk import soft_limit_units
from mqoe.device.memory import VmPressure
from mqoe.device.phone import Phone
from mqoe.device.process import NATIVE_ADJ, SYSTEM_ADJ, Process
from mqoe.engine import Event, ms, seconds
from tests.conftest import app, make_profile

MB = 256  # pages per MiB


def phone(per_app: bool, mode: str = "vmpressure") -> Phone:
    # No swap: only file pages are reclaimable, so the tests see which cgroup lost them.
    memory = {"ram_mb": 256, "reserved_mb": 0, "zram_fraction": 0.0}
    lmk = {"per_app_memcg": per_app, "mode": mode}
    return Phone(make_profile([(4, 1000.0, 1.0)], memory=memory, lmk=lmk, low_ram=True), 0)


def run_gen(p: Phone, gen: Generator[Event, object, None]) -> None:
    p.env.process(gen)


def with_files(p: Phone, name: str, adj: int, mb: int) -> Process:
    process, thread = app(p, name, adj)
    run_gen(p, p.memory.allocate(process, thread, mb * MB, kind="file"))
    p.run(p.env.now + ms(10))
    return process


@pytest.mark.parametrize(
    ("adj", "mb"),
    [
        (999, 0),  # cached
        (900, 0),
        (800, 0),  # service B
        (700, 0),  # previous
        (600, 8),  # home
        (500, 0),  # service A
        (400, 0),  # heavy weight
        (300, 8),  # backup
        (250, 64),
        (200, 64),  # perceptible
        (100, 80),  # visible
        (0, 160),  # foreground
        (-700, 512),  # persistent service
        (-800, 512),  # persistent
    ],
)
def test_lmkd_writes_android_10s_soft_limits_by_adj(adj: int, mb: int) -> None:
    p = phone(per_app=True)
    process, _ = app(p, "x", adj)
    assert soft_limit_units(adj) * 8 == mb
    assert p.lmkd.soft_limit_pages(process) == mb * MB


def test_system_server_and_native_daemons_have_no_app_cgroup() -> None:
    p = phone(per_app=True)
    for adj in (SYSTEM_ADJ, NATIVE_ADJ):
        process = with_files(p, f"adj{adj}", adj, 20)
        assert p.lmkd.soft_limit_pages(process) is None
        assert p.memory.soft_limit_excess(process) == 0


def test_no_soft_limits_unless_asked_or_with_the_in_kernel_lmk() -> None:
    assert phone(per_app=False).memory.soft_limit is None
    assert phone(per_app=True, mode="minfree").memory.soft_limit is None
    assert phone(per_app=True).memory.soft_limit is not None


def squeeze(per_app: bool) -> tuple[Phone, Process, Process]:
    """The foreground's files are older than a cached app's; then a system process
    (no cgroup) takes memory just below the low watermark (above min), waking kswapd."""
    p = phone(per_app)
    fg = with_files(p, "fg", 0, 40)  # under its 160 MB limit
    bg = with_files(p, "bg", 900, 40)  # 40 MB over its limit of 0
    p.run(p.env.now + seconds(10))  # the allocations' uses decay: nothing is referenced
    hog, hog_thread = app(p, "hog", SYSTEM_ADJ)
    m = p.memory
    run_gen(p, m.allocate(hog, hog_thread, m.free_pages - m.low_wmark + 64))
    p.run(p.env.now + ms(500))
    m.check()
    return p, fg, bg


def test_reclaim_takes_from_the_cgroup_over_its_soft_limit_before_the_lru_order() -> None:
    _, fg, bg = squeeze(per_app=False)
    assert fg.file_resident < 40 * MB  # recency: the least recently used first
    assert bg.file_resident == 40 * MB
    _, fg, bg = squeeze(per_app=True)
    assert fg.file_resident == 40 * MB  # under its limit: untouched
    assert bg.file_resident < 40 * MB


def test_soft_limit_reclaim_takes_a_quarter_of_the_excess_and_vmpressure_sees_none() -> None:
    p, _, bg = squeeze(per_app=True)
    m = p.memory
    # kswapd needed under 1 MB to reach the high watermark, but
    # mem_cgroup_soft_reclaim goes on until a quarter of the 40 MB excess is reclaimed.
    assert 40 * MB - bg.file_resident >= 10 * MB
    assert m.free_pages > m.high_wmark + 8 * MB
    # Soft-limit reclaim reports nothing to vmpressure (only shrink_zone does): no
    # 512-page window was filled although 20 of them were scanned.
    assert m.pgscan >= 10 * MB
    assert m.vmpressure == []


def test_the_next_cgroup_over_its_limit_when_the_furthest_yields_nothing() -> None:
    p = phone(per_app=True)
    m = p.memory
    stuck, stuck_thread = app(p, "stuck", 950)  # 60 MB of anon, no swap: unreclaimable
    run_gen(p, m.allocate(stuck, stuck_thread, 60 * MB))
    small = with_files(p, "small", 900, 20)
    p.run(p.env.now + seconds(10))
    hog, hog_thread = app(p, "hog", SYSTEM_ADJ)
    run_gen(p, m.allocate(hog, hog_thread, m.free_pages - m.low_wmark + 64))
    p.run(p.env.now + ms(500))
    assert stuck.anon_pages == 60 * MB
    assert 20 * MB - small.file_resident >= 5 * MB  # a quarter of its own excess
    m.check()


def test_lmkd_records_the_launcher_as_perceptible_with_per_app_cgroups() -> None:
    first_killed = []
    for per_app in (False, True):
        p = phone(per_app)
        with_files(p, "launcher", 600, 10)
        with_files(p, "service", 500, 10)
        for listener in p.memory.vmpressure_listeners:
            listener(VmPressure(p.env.now, 99.0, "critical"))
        p.run(p.env.now + ms(200))
        first_killed.append(p.lmkd.kills[0].name)
    # cmd_procprio: "Launcher should be perceptible, don't kill it" (recorded at 200).
    assert first_killed == ["launcher", "service"]
