"""lmkd: who dies, when, by which mode's rule; trims follow the cached-process count."""

from __future__ import annotations

from typing import Any

import pytest

from mqoe.device.lmk import (
    TRIM_NONE,
    TRIM_RUNNING_CRITICAL,
    TRIM_RUNNING_LOW,
    TRIM_RUNNING_MODERATE,
)
from mqoe.device.memory import VmPressure
from mqoe.device.phone import Phone
from mqoe.device.process import Process
from mqoe.engine import ms, seconds
from tests.conftest import make_profile

MB = 256


def phone(lmk: dict[str, Any] | None = None, low_ram: bool = False) -> Phone:
    memory = {"ram_mb": 512, "reserved_mb": 0}
    return Phone(make_profile([(4, 1000.0, 1.0)], memory=memory, lmk=lmk, low_ram=low_ram), 1)


def spawn(p: Phone, name: str, adj: int, mb: int) -> Process:
    process = p.processes.spawn(name, adj, 0)
    thread = p.cpu.thread(name, process=name)
    process.threads.append(thread)
    p.memory.free_pages -= mb * MB
    process.anon_pages += mb * MB
    return process


def pressure(p: Phone, level: str) -> None:
    value = {"low": 10.0, "medium": 70.0, "critical": 99.0}[level]
    for listener in p.memory.vmpressure_listeners:
        listener(VmPressure(p.env.now, value, level))


def test_vmpressure_mode_kills_cached_apps_first_heaviest_among_equals() -> None:
    p = phone()
    fg = spawn(p, "video", 0, 100)
    light = spawn(p, "light", 900, 10)
    heavy = spawn(p, "heavy", 900, 40)
    oldest = spawn(p, "oldest", 950, 5)
    order = []
    for _ in range(4):
        pressure(p, "medium")
        p.run(ms(200))
        order.append(p.lmkd.kills[-1].name if p.lmkd.kills else None)
    assert order == ["oldest", "heavy", "light", "light"]  # then nothing ≥ 800 is left
    assert fg.alive and not light.alive and not heavy.alive and not oldest.alive
    assert all(k.oom_score_adj >= 800 for k in p.lmkd.kills)
    p.memory.check()


def test_go_lmkd_kills_the_process_whose_adj_was_set_least_recently_among_equals() -> None:
    p = phone({"kill_heaviest_task": False})
    heavy = spawn(p, "heavy", 900, 40)
    spawn(p, "light", 900, 10)
    moved = spawn(p, "moved", 800, 30)
    p.processes.set_adj(moved, 900)  # its adj is set last: it goes last
    p.processes.set_adj(heavy, 900)  # unchanged: ActivityManager tells lmkd nothing
    order = []
    for _ in range(3):
        pressure(p, "medium")
        p.run(ms(200))
        order.append(p.lmkd.kills[-1].name)
    assert order == ["heavy", "light", "moved"]  # by when each got adj 900, not by size
    p.memory.check()


def test_the_in_kernel_lmk_takes_the_heaviest_whatever_lmkd_is_told() -> None:
    p = phone({"mode": "minfree", "kill_heaviest_task": False})
    spawn(p, "light", 900, 10)
    heavy = spawn(p, "heavy", 900, 40)
    assert p.lmkd.victim(900) is heavy


def test_only_critical_vmpressure_kills_the_foreground() -> None:
    p = phone()
    fg = spawn(p, "video", 0, 100)
    pressure(p, "low")
    pressure(p, "medium")
    p.run(ms(200))
    assert fg.alive
    pressure(p, "critical")
    p.run(ms(200))
    assert not fg.alive
    assert fg.threads[0].state.name == "DEAD"
    assert p.lmkd.kills[-1].reason == "vmpressure critical"


def test_a_kill_frees_memory_only_after_the_teardown_delay() -> None:
    p = phone({"kill_free_delay_ms": 80})
    spawn(p, "victim", 900, 50)
    before = p.memory.free_pages
    pressure(p, "medium")
    p.run(ms(30))  # lmkd has spent its CPU and sent SIGKILL …
    assert p.lmkd.kills and p.memory.free_pages == before  # … but pages are not back yet
    p.run(ms(100))
    assert p.memory.free_pages == before + 50 * MB
    assert p.lmkd.thread.state_ns[0] > 0  # lmkd's own CPU cost
    p.memory.check()


@pytest.mark.parametrize(("free_mb", "killable"), [(100, None), (40, 900), (11, 0)])
def test_minfree_mode_uses_the_first_level_below_both_free_and_file(
    free_mb: int, killable: int | None
) -> None:
    p = phone({"mode": "minfree"})
    fg = spawn(p, "fg", 0, 1)
    bg = spawn(p, "cached", 900, 1)
    p.memory.free_pages = free_mb * MB - 2 * MB  # the two processes hold 2 MB
    p.memory.free_pages += p.memory.high_wmark  # free memory above the kernel's reserve
    pressure(p, "critical")  # the in-kernel LMK ignores vmpressure …
    p.run(ms(200))
    assert not p.lmkd.kills
    shrink(p)  # … and runs as a shrinker after a reclaim pass
    p.run(ms(200))
    killed = {k.name for k in p.lmkd.kills}
    if killable is None:
        assert not killed  # 100 MB free is above every minfree level
    elif killable == 900:
        assert killed == {"cached"} and fg.alive  # 40 MB: the 43008 KB level, adj 900
    else:
        assert "cached" in killed or not bg.alive  # 11 MB: level adj 0, cached goes first


def shrink(p: Phone) -> None:
    for shrinker in p.memory.shrinker_listeners:
        shrinker()


@pytest.mark.parametrize(
    ("swap_used_pct", "aggressive", "killable"),
    [(40, True, 950), (60, True, 900), (80, True, 250), (80, False, 950)],
)
def test_mediatek_lmk_falls_back_to_lower_levels_as_swap_fills(
    swap_used_pct: int, aggressive: bool, killable: int
) -> None:
    p = phone({"mode": "minfree", "swap_aggressive": aggressive})  # 512 MB < 1 GiB
    m = p.memory
    m.free_pages = m.high_wmark  # nothing free above the reserve
    m.zram_stored = m.zram_limit * swap_used_pct // 100
    m.cache_clean = 46 * MB  # file cache: only the last level (48 MB, adj 950) is hit
    assert p.lmkd.minfree_level() == (49152, killable)
    victims = {adj: spawn(p, f"adj{adj}", adj, 1) for adj in (200, 250, 900)}
    m.free_pages = m.high_wmark
    shrink(p)
    p.run(ms(200))
    killed = [k.oom_score_adj for k in p.lmkd.kills]
    assert killed == ([] if killable == 950 else [900])  # the highest adj ≥ the minimum
    assert victims[200].alive


def test_mediatek_lmk_rule_is_for_phones_under_1_gib() -> None:
    p = Phone(make_profile([(4, 1000.0, 1.0)], memory={"ram_mb": 2048, "reserved_mb": 0},
                           lmk={"mode": "minfree", "swap_aggressive": True}), 1)  # fmt: skip
    m = p.memory
    m.free_pages = m.high_wmark
    m.zram_stored = m.zram_limit
    m.cache_clean = 46 * MB
    assert p.lmkd.swap_aggression() == 2
    assert p.lmkd.minfree_level() == (49152, 950)  # 2 GB: no fallback


def test_trim_levels_follow_the_cached_process_count() -> None:
    p = phone({"trim_cached_thresholds": [6, 5, 3]})
    spawn(p, "video", 0, 10)
    cached = [spawn(p, f"bg{i}", 900 + i, 5) for i in range(8)]
    seen: list[int] = []
    p.trims.listeners.append(seen.append)
    p.trims.arm()
    levels = []
    for process in cached:
        p.lmkd.kill(process, "test")
        levels.append(p.trims.level)
    # cached count after each kill: 7 6 5 4 3 2 1 0
    assert levels == [TRIM_NONE, TRIM_RUNNING_MODERATE, TRIM_RUNNING_LOW, TRIM_RUNNING_LOW,
                      TRIM_RUNNING_CRITICAL, TRIM_RUNNING_CRITICAL, TRIM_RUNNING_CRITICAL,
                      TRIM_RUNNING_CRITICAL]  # fmt: skip
    assert seen == [TRIM_RUNNING_MODERATE, TRIM_RUNNING_LOW, TRIM_RUNNING_CRITICAL]


def test_psi_mode_kills_on_a_full_stall() -> None:
    p = phone({"mode": "psi"})
    fg = spawn(p, "fg", 0, 10)
    bg = spawn(p, "bg", 900, 10)
    p.run(seconds(1))
    assert bg.alive
    p.memory.psi_full_ns += ms(800)  # a second in which memory stalls stopped all work
    p.memory.psi_some_ns += ms(800)
    p.run(ms(300))
    assert not bg.alive  # critical PSI: the highest adj goes first
    assert fg.alive
    assert p.lmkd.kills[0].reason == "critical PSI"


def test_the_lmk_modes_are_the_registry_of_triggers() -> None:
    from typing import get_args

    from mqoe.device.lmk import LMK_TRIGGERS
    from mqoe.device.profiles.schema import LmkSpec

    modes = get_args(LmkSpec.model_fields["mode"].annotation)
    assert set(LMK_TRIGGERS) == set(modes)
    assert all(trigger.name == name for name, trigger in LMK_TRIGGERS.items())
    assert [n for n, t in LMK_TRIGGERS.items() if t.in_kernel] == ["minfree"]
