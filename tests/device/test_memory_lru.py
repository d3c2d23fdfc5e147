"""Reclaim by LRU age: cold processes go first whatever their oom_score_adj, recently
used pages are referenced (rotated, not reclaimed), and when one page kind runs out the
batch goes to the other — only when both are gone does scanning fail (vmpressure)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mqoe.device.lru_recency import RecencyLru
from mqoe.device.memory import (
    SWAP_CLUSTER_MAX,
    VMPRESSURE_CRITICAL,
    VMPRESSURE_MEDIUM,
    Memory,
)
from mqoe.device.phone import Phone
from mqoe.device.process import FOREGROUND_APP_ADJ, Process
from mqoe.engine import ms, seconds
from tests.device.test_memory import MB, app, run_gen
from tests.device.test_memory import phone as memory_phone

# lmkd may not kill here: these tests look at reclaim alone, and a kill would hand the
# victim's pages back and hide what reclaim did. No process has an adj ≥ 1001.
NO_KILLS = {"medium_adj": 1001, "critical_adj": 1001}
IDLE_S = 10  # ten referenced_window_ms (1 s): recent use decays to e^-10 of itself


def phone(**memory: Any) -> Phone:
    return memory_phone(lmk=NO_KILLS, **memory)


def squeeze(p: Phone, past_min_mb: int, settle_s: float = 1.0) -> Process:
    """A foreground process takes GPU pages (never scanned, never referenced) until free
    memory would sit ``past_min_mb`` below *min*: reclaim must find that much."""
    m = p.memory
    hog, thread = app(p, "hog", FOREGROUND_APP_ADJ)
    run_gen(p, m.allocate(hog, thread, m.free_pages - m.min_wmark + past_min_mb * MB, "gpu"))
    p.run(seconds(settle_s))
    return hog


def pressures(m: Memory) -> list[float]:
    assert m.vmpressure, "reclaim scanned fewer than one vmpressure window"
    return [v.pressure for v in m.vmpressure]


def test_the_least_recently_used_process_is_reclaimed_first_whatever_its_adj() -> None:
    p = phone()
    m = p.memory
    idle, idle_thread = app(p, "system-ish", -700)  # important, but unused for long
    hot, hot_thread = app(p, "cached-ish", 900)  # expendable, but used a moment ago
    for process, thread in ((idle, idle_thread), (hot, hot_thread)):
        run_gen(p, m.allocate(process, thread, 30 * MB, "file"))
        run_gen(p, m.allocate(process, thread, 30 * MB, "anon"))
    p.run(seconds(IDLE_S))
    # hot uses a handful of its pages: a referenced share of 16 / (30 MB) — almost none,
    # so an adj-ordered reclaim would take its pages freely. LRU order must not scan it.
    run_gen(p, m.touch(hot, hot_thread, file_pages=16, anon_pages=16))
    p.run(ms(1))
    assert hot.last_use_ns > idle.last_use_ns
    squeeze(p, past_min_mb=4)
    taken_from_idle = (30 * MB - idle.file_resident) + idle.anon_swapped
    assert taken_from_idle >= 4 * MB  # reclaim found its pages in the LRU-oldest process
    assert taken_from_idle < 60 * MB  # …which it never emptied: no need to scan another
    assert hot.file_resident == 30 * MB and hot.anon_swapped == 0 and hot.anon_pages == 30 * MB
    m.check()


@pytest.mark.parametrize("idle_s", [0, IDLE_S])
def test_pages_just_used_are_referenced_and_pages_idle_for_long_are_not(idle_s: int) -> None:
    p = phone(swappiness=0)  # file pages only: one pool, one process
    m = p.memory
    user, thread = app(p, "user", 900)
    run_gen(p, m.allocate(user, thread, 150 * MB, "file"))  # allocating = using them
    p.run(seconds(idle_s) or ms(1))
    squeeze(p, past_min_mb=8)
    if idle_s == 0:
        # recent ≈ resident: almost every scanned page is referenced and rotated, until
        # the recent-use count decays (over referenced_window_ms) and pages come free.
        assert pressures(m)[0] >= VMPRESSURE_MEDIUM
        assert m.pgsteal < m.pgscan / 2
    else:
        # e^-10 of the pages are still "recent": practically none is referenced.
        assert max(pressures(m)) < VMPRESSURE_MEDIUM
        assert m.pgsteal >= 8 * MB
        assert 150 * MB - user.file_resident == m.pgsteal
    m.check()


def test_anon_is_reclaimed_when_there_are_no_file_pages_without_scan_failures() -> None:
    p = phone(swappiness=60)  # a batch is 60/200 anon, the rest file
    m = p.memory
    idle, thread = app(p, "idle", 900)
    run_gen(p, m.allocate(idle, thread, 100 * MB, "anon"))
    p.run(seconds(IDLE_S))
    assert m.file_pages == 0  # nothing of the file share's kind exists anywhere
    anon_share = round(SWAP_CLUSTER_MAX * 60 / 200)
    assert anon_share < SWAP_CLUSTER_MAX / 2  # so most of each batch was meant for file
    squeeze(p, past_min_mb=8)
    assert idle.anon_swapped >= 8 * MB  # the file share went to anon, into zRAM
    assert m.pgsteal == m.pswpout == idle.anon_swapped
    # Counting the file share as scanned-not-reclaimed would read (32 − 10)/32 ≈ 69%.
    assert max(pressures(m)) < VMPRESSURE_MEDIUM
    assert m.pgscan - m.pgsteal < m.pgscan / 100
    m.check()


def test_file_is_reclaimed_when_there_are_no_anon_pages_without_scan_failures() -> None:
    p = phone(swappiness=140)  # a batch is 70% anon
    m = p.memory
    idle, thread = app(p, "idle", 900)
    run_gen(p, m.allocate(idle, thread, 100 * MB, "file"))
    p.run(seconds(IDLE_S))
    squeeze(p, past_min_mb=8)
    dropped = 100 * MB - idle.file_resident
    assert dropped >= 8 * MB and m.pswpout == 0 and m.zram_stored == 0
    assert max(pressures(m)) < VMPRESSURE_MEDIUM
    m.check()


def test_with_zram_full_and_no_file_pages_reclaim_is_critical() -> None:
    p = phone(swappiness=60, zram_fraction=0.01)  # zRAM holds 2.56 MB of anon
    m = p.memory
    idle, thread = app(p, "idle", 900)
    run_gen(p, m.allocate(idle, thread, 100 * MB, "anon"))
    p.run(seconds(IDLE_S))
    squeeze(p, past_min_mb=8)  # more than zRAM can absorb
    assert m.zram_stored == m.zram_limit == int(m.total_pages * 0.01)
    assert idle.anon_swapped == m.zram_limit
    assert pressures(m)[-1] >= VMPRESSURE_CRITICAL
    assert m.vmpressure[-1].level == "critical"
    m.check()


def test_with_zram_full_the_batch_goes_to_cold_file_pages() -> None:
    p = phone(swappiness=60, zram_fraction=0.01)
    m = p.memory
    idle, thread = app(p, "idle", 900)
    run_gen(p, m.allocate(idle, thread, 60 * MB, "anon"))
    run_gen(p, m.allocate(idle, thread, 60 * MB, "file"))
    p.run(seconds(IDLE_S))
    squeeze(p, past_min_mb=8)
    assert m.zram_stored == m.zram_limit  # zRAM filled …
    assert 60 * MB - idle.file_resident >= 8 * MB - m.zram_limit  # … file covered the rest
    assert max(pressures(m)) < VMPRESSURE_MEDIUM
    m.check()


def test_pages_just_faulted_back_are_referenced_so_a_thrashing_process_makes_scans_futile() -> None:
    # Two processes with the same 40 MB file working set, each using 4 MB of it a moment
    # ago. "quiet" has it all resident: its uses fall on a working set ten times larger,
    # so few resident pages are referenced. "thrash" has only 4 MB resident — the pages
    # it just faulted back in — so nearly every scanned page is referenced.
    def pressure_after(refault: bool) -> float:
        p = phone(swappiness=0)
        m = p.memory
        proc, thread = app(p, "proc", 900)
        run_gen(p, m.allocate(proc, thread, 40 * MB, "file"))
        p.run(seconds(IDLE_S))  # the allocation's own use decays away
        if refault:
            proc.file_resident = 0  # evicted earlier; its pages went back to free memory
            m.free_pages += 40 * MB
        run_gen(p, m.touch(proc, thread, file_pages=4 * MB))
        p.run(ms(100))  # 32 readaround reads of ~1.7 ms each
        assert (proc.file_resident < 8 * MB) == refault
        m.check()
        squeeze(p, past_min_mb=3, settle_s=0.5)
        return pressures(m)[0]

    # Expected from the formula's two parts: ~0.15 s after the uses they have decayed to
    # e^-0.15 ≈ 0.86 of themselves.
    uniform = -math.expm1(-4 / 40)  # ≈ 0.10 of resident pages used, for either process
    assert pressure_after(refault=False) < 100 * (uniform + 0.1)
    assert pressure_after(refault=True) >= 100 * (0.86 * 1.0)  # all resident = refaulted


def test_the_kept_reclaim_order_is_the_full_sort_through_uses_adj_changes_and_kills() -> None:
    # The recency model keeps its victim order between batches (a use moves a process
    # to the tail) instead of sorting every process per batch: after every step it must
    # equal the sort by (last use, -oom_score_adj, pid), ties at one instant included.
    p = phone()
    m = p.memory
    lru = m.lru
    assert isinstance(lru, RecencyLru)
    procs = [app(p, f"app{k}", adj) for k, adj in enumerate((900, 0, 900, 200, -700))]

    def check() -> None:
        alive = m.processes.alive
        expected = sorted(alive, key=lambda q: (q.last_use_ns, -q.oom_score_adj, q.pid))
        assert lru._victims() == expected

    check()
    for step in range(40):
        process, thread = procs[(step * 7) % len(procs)]
        if process.alive:
            run_gen(p, m.touch(process, thread, file_pages=step % 3, anon_pages=1))
        if step % 5 == 0:  # several uses at one instant: ties broken by adj, then pid
            for process, thread in procs[::2]:
                if process.alive:
                    run_gen(p, m.allocate(process, thread, 4, "anon"))
        if step == 11:
            m.processes.set_adj(procs[1][0], 900)
        if step == 17:
            procs.append(app(p, "late", 500))
        if step == 23:
            m.processes.mark_killed(procs[2][0], p.env.now, "test")
        p.run(p.env.now + (ms(1) if step % 4 else 0))
        check()
