"""Legacy lmkd's swap-aware filter of vmpressure events (lmkd.cpp mp_event_common):
mem_pressure = RAM use over RAM + swap use; Android Go ignores events while swap is
free and RAM is not under pressure, downgrades critical ones, and upgrades events to
critical when the phone is swapping heavily. AOSP defaults leave events unfiltered."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mqoe.device.phone import Phone
from mqoe.device.process import FOREGROUND_APP_ADJ, VISIBLE_APP_ADJ, Process
from mqoe.device.profiles import LmkSpec
from mqoe.engine import ms, seconds
from tests.conftest import make_profile
from tests.device.test_lmk import pressure
from tests.device.test_memory import MB, app, run_gen
from tests.device.test_memory import phone as memory_phone

GO = {"critical_upgrade": True, "upgrade_pressure": 40, "downgrade_pressure": 60}
AOSP: dict[str, Any] = {}  # LmkSpec defaults: off / 100 / 100 / 10
# Filter tests call filtered_level themselves; lmkd must not kill while the state is
# built, or the victim's pages would come back and move mem_pressure.
NO_KILLS = {"medium_adj": 1001, "critical_adj": 1001}
LEVELS = ("low", "medium", "critical")


def swapped_phone(lmk: dict[str, Any], anon_mb: int, gpu_mb: int, **memory: Any) -> Phone:
    """A cold process holds ``anon_mb`` of anon; a foreground one then takes ``gpu_mb``
    of GPU memory (not charged to the memcg), so reclaim pushes the cold anon to zRAM.
    Swappiness 200: anon only, so RAM and swap use are the cold process's alone."""
    p = memory_phone(lmk={**lmk, **NO_KILLS}, swappiness=200, **memory)
    m = p.memory
    idle, thread = app(p, "idle", 900)
    run_gen(p, m.allocate(idle, thread, anon_mb * MB))
    p.run(seconds(10))  # its pages are no longer referenced: reclaim takes them
    hog, hog_thread = app(p, "hog", FOREGROUND_APP_ADJ)
    run_gen(p, m.allocate(hog, hog_thread, gpu_mb * MB, "gpu"))
    p.run(seconds(2))
    m.check()
    return p


def swap_free_percent(p: Phone) -> float:
    m = p.memory
    return 100 * (m.zram_limit - m.zram_stored) / m.zram_limit


def place(p: Phone, process: Process, resident: int, swapped: int) -> None:
    """Give ``process`` resident anon and anon in zRAM by setting the public counters —
    as reclaim would leave them, without simulating the seconds of pressure needed to
    get there — keeping every page in one place (the pool holds swapped / zram_ratio)."""
    m = p.memory
    assert m.zram_stored == 0, "place() sizes the zRAM pool for one process only"
    pool = math.ceil(swapped / m.spec.zram_ratio)
    m.free_pages -= resident + pool
    process.anon_pages += resident
    process.anon_swapped += swapped
    m.zram_stored += swapped
    m.zram_pool += pool
    m.check()


def test_mem_pressure_is_ram_use_over_ram_plus_swap_use() -> None:
    p = swapped_phone(AOSP, anon_mb=150, gpu_mb=170, zram_fraction=1.0, zram_ratio=10)
    idle = next(q for q in p.processes.alive if q.name == "idle")
    assert idle.anon_swapped > 0 and p.memory.file_pages == 0
    ram = idle.anon_pages  # the only memcg-charged pages (GPU pages are not charged)
    # lmkd's integer arithmetic: a whole percentage, rounded down.
    assert p.lmkd.mem_pressure() == 100 * ram // (ram + idle.anon_swapped)


def test_mem_pressure_of_an_empty_phone_is_100() -> None:
    p = memory_phone()
    assert p.lmkd.mem_pressure() == 100.0


@pytest.mark.parametrize(
    ("anon_mb", "gpu_mb", "memory"),
    [
        (50, 0, {}),  # no swap used
        (150, 200, {"zram_fraction": 1.0, "zram_ratio": 10}),  # heavy swapping
        (150, 120, {"zram_fraction": 0.05}),  # swap full
    ],
)
def test_aosp_defaults_pass_medium_and_critical_through_and_drop_low(
    anon_mb: int, gpu_mb: int, memory: dict[str, Any]
) -> None:
    assert (LmkSpec().critical_upgrade, LmkSpec().upgrade_pressure) == (False, 100)
    p = swapped_phone(AOSP, anon_mb, gpu_mb, **memory)
    got = {level: p.lmkd.filtered_level(level) for level in LEVELS}
    assert got == {"low": None, "medium": "medium", "critical": "critical"}


def test_go_ignores_events_while_swap_is_free_and_ram_pressure_is_low() -> None:
    p = swapped_phone(GO, anon_mb=150, gpu_mb=120, zram_fraction=1.0, zram_ratio=10)
    assert p.memory.zram_stored > 0  # some swap in use …
    assert swap_free_percent(p) >= 10  # … but plenty free
    assert p.lmkd.mem_pressure() > GO["downgrade_pressure"]
    assert [p.lmkd.filtered_level(level) for level in LEVELS] == [None, None, None]


def test_go_passes_events_when_free_swap_is_below_its_low_percentage() -> None:
    p = swapped_phone(GO, anon_mb=150, gpu_mb=120, zram_fraction=0.05)  # zRAM fills up
    assert swap_free_percent(p) < 10
    # RAM pressure as high as in the test above, where the same events were ignored.
    assert p.lmkd.mem_pressure() > GO["downgrade_pressure"]
    got = {level: p.lmkd.filtered_level(level) for level in LEVELS}
    assert got == {"low": None, "medium": "medium", "critical": "critical"}


@pytest.mark.parametrize(("free_percent", "ignored"), [(12, True), (8, False)])
def test_go_swap_free_threshold(free_percent: int, ignored: bool) -> None:
    p = memory_phone(lmk={**GO, **NO_KILLS}, zram_fraction=0.1)
    m = p.memory
    process, _ = app(p, "cached", 900)
    swapped = m.zram_limit - m.zram_limit * free_percent // 100
    place(p, process, resident=3 * swapped, swapped=swapped)  # mem_pressure 75
    assert p.lmkd.mem_pressure() == pytest.approx(75)
    assert p.lmkd.filtered_level("medium") == (None if ignored else "medium")


def test_go_upgrades_events_to_critical_when_swapping_heavily() -> None:
    p = swapped_phone(GO, anon_mb=150, gpu_mb=200, zram_fraction=1.0, zram_ratio=10)
    assert p.lmkd.mem_pressure() < GO["upgrade_pressure"]
    assert swap_free_percent(p) >= 10  # free swap left: the downgrade check runs too
    got = {level: p.lmkd.filtered_level(level) for level in LEVELS}
    assert got == {"low": None, "medium": "critical", "critical": "critical"}


def test_without_critical_upgrade_heavy_swapping_leaves_medium_alone() -> None:
    p = swapped_phone(
        {**GO, "critical_upgrade": False}, anon_mb=150, gpu_mb=200, zram_fraction=1.0,
        zram_ratio=10,
    )  # fmt: skip
    assert p.lmkd.mem_pressure() < GO["upgrade_pressure"]
    assert p.lmkd.filtered_level("medium") == "medium"


def test_go_downgrades_critical_to_medium_between_the_two_pressures() -> None:
    p = swapped_phone(GO, anon_mb=150, gpu_mb=170, zram_fraction=1.0, zram_ratio=10)
    assert GO["upgrade_pressure"] < p.lmkd.mem_pressure() <= GO["downgrade_pressure"]
    assert swap_free_percent(p) >= 10
    got = {level: p.lmkd.filtered_level(level) for level in LEVELS}
    assert got == {"low": None, "medium": "medium", "critical": "medium"}


# -- end to end: an event goes through the filter to a kill (or not) ------------------
def test_go_spares_a_cached_app_on_medium_pressure_while_swap_is_free() -> None:
    killed = {}
    for name, lmk in (("go", GO), ("aosp", AOSP)):
        p = memory_phone(lmk=lmk)
        fg, _ = app(p, "video", FOREGROUND_APP_ADJ)
        cached, _ = app(p, "cached", 900)
        place(p, fg, resident=40 * MB, swapped=0)
        place(p, cached, resident=20 * MB, swapped=0)  # no swap used: mem_pressure 100
        pressure(p, "medium")
        p.run(ms(200))
        killed[name] = [k.name for k in p.lmkd.kills]
        assert fg.alive
        p.memory.check()
    assert killed == {"go": [], "aosp": ["cached"]}


def test_go_kills_a_visible_app_on_medium_pressure_when_swapping_heavily() -> None:
    killed = {}
    for name, lmk in (("go", GO), ("aosp", AOSP)):
        p = memory_phone(lmk=lmk)
        visible, _ = app(p, "visible", VISIBLE_APP_ADJ)  # below medium_adj (800)
        place(p, visible, resident=10 * MB, swapped=40 * MB)  # mem_pressure 20
        pressure(p, "medium")
        p.run(ms(200))
        killed[name] = [(k.name, k.reason) for k in p.lmkd.kills]
        p.memory.check()
        assert p.memory.zram_stored == (0 if killed[name] else 40 * MB)
    assert killed == {"go": [("visible", "vmpressure medium→critical")], "aosp": []}


def test_kernel_memory_is_charged_to_no_cgroup_so_lmkd_sees_a_heavier_swap_share() -> None:
    # The same processes and swap: kernel memory (slab, page tables, ...) leaves less
    # RAM for them, so more of their pages are in zRAM; mem_pressure, RAM use over RAM
    # + swap use, falls below Go's upgrade_pressure (40) and events become critical.
    def mem_pressure(kernel_mb: float) -> tuple[float, int]:
        profile = make_profile(
            [(4, 1000.0, 1.0)],
            memory={"ram_mb": 512, "reserved_mb": 0, "zram_fraction": 1.0,
                    "kernel_mb": kernel_mb},
            lmk={"critical_upgrade": True, "upgrade_pressure": 40, "downgrade_pressure": 60},
            low_ram=True,
        )  # fmt: skip
        p = Phone(profile, 1)
        m = p.memory
        assert m.kernel_pools.get("kernel", 0) == kernel_mb * MB
        hog = p.processes.spawn("hog", 0, 0)
        m._zram_add(hog, 300 * MB)  # 300 MB swapped (a 150 MB pool at 2:1) …
        resident = m.free_pages - 10 * MB  # … and the hog fills the RAM left
        m.free_pages -= resident
        hog.anon_pages += resident
        m.check()
        return p.lmkd.mem_pressure(), m.charged_pages

    (plain, plain_ram), (heavy, heavy_ram) = mem_pressure(0), mem_pressure(200)
    assert heavy_ram == plain_ram - 200 * MB
    assert plain > 40 > heavy
    assert plain > 50  # 352 MB of RAM use beside 300 MB of swap
