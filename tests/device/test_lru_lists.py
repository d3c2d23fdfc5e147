"""Linux's LRU lists as page counts (mqoe.device.lru) and the "lists" LRU model of
Memory: the page moves of shrink_inactive_list / shrink_active_list, workingset refault
distances, get_scan_count's weights, and conservation under reclaim."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mqoe.device import lru
from mqoe.device.cpu import ThreadState
from mqoe.device.lru import Lists, Lruvec
from mqoe.device.phone import Phone
from mqoe.device.process import CACHED_APP_MIN_ADJ, FOREGROUND_APP_ADJ, Process
from mqoe.engine import Event, ms, seconds
from tests.conftest import app, make_profile

MB = 256  # pages per MiB
ALL = 10**9  # touch hits so many that every page's accessed bit is set (p = 1)
NO_KILLS = {"medium_adj": 1001, "critical_adj": 1001}  # lmkd stays out of the way


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- shrink_inactive: page_check_references ----------------------------------------------
def test_a_young_data_page_is_rotated_once_then_activated_on_its_second_reference() -> None:
    data = Lists(inactive=100, inactive_young=100)
    first = lru.shrink_inactive(data, "data", 100, rng())
    # Referenced once: PG_referenced set, kept on the inactive list, accessed bit cleared.
    assert (first.scanned, first.rotated, first.activated, first.reclaimed) == (100, 100, 0, 0)
    assert (data.inactive, data.active, data.inactive_young, data.referenced) == (100, 0, 0, 100)
    lru.touch(data, ALL, rng())
    assert data.inactive_young == 100
    second = lru.shrink_inactive(data, "data", 100, rng())
    # Referenced again with PG_referenced already set: promoted.
    assert (second.activated, second.rotated, second.reclaimed) == (100, 0, 0)
    assert (data.inactive, data.active, data.referenced) == (0, 100, 0)
    data.check()


@pytest.mark.parametrize("kind", ["anon", "code"])
def test_young_anon_and_code_pages_are_activated_on_their_first_scan(kind: str) -> None:
    lists = Lists(inactive=50, inactive_young=50)
    out = lru.shrink_inactive(lists, kind, 50, rng())
    assert (out.activated, out.rotated, out.reclaimed) == (50, 0, 0)
    assert (lists.inactive, lists.active, lists.referenced) == (0, 50, 0)
    assert lists.active_young == 0  # page_referenced cleared the bits it read
    lists.check()


@pytest.mark.parametrize("kind", ["anon", "code", "data"])
def test_inactive_pages_not_young_are_reclaimed(kind: str) -> None:
    lists = Lists(inactive=40, active=7)
    out = lru.shrink_inactive(lists, kind, 30, rng())
    assert (out.scanned, out.reclaimed, out.activated, out.rotated) == (30, 30, 0, 0)
    assert (lists.inactive, lists.active) == (10, 7)
    lists.check()


def test_unreclaimable_anon_is_scanned_but_stays_when_zram_is_full() -> None:
    anon = Lists(inactive=40)
    out = lru.shrink_inactive(anon, "anon", 40, rng(), reclaimable=False)
    assert (out.scanned, out.reclaimed, out.rotated) == (40, 0, 40)
    assert anon.inactive == 40
    anon.check()


def test_a_scan_takes_no_more_than_the_inactive_list_holds() -> None:
    lists = Lists(inactive=5, active=100)
    out = lru.shrink_inactive(lists, "data", 32, rng())
    assert (out.scanned, out.reclaimed) == (5, 5)
    assert (lists.inactive, lists.active) == (0, 100)


# -- shrink_active -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["anon", "code", "data"])
def test_unreferenced_active_pages_are_deactivated(kind: str) -> None:
    lists = Lists(inactive=3, active=60)
    out = lru.shrink_active(lists, kind, 60, rng())
    assert (out.deactivated, out.rotated) == (60, 0)
    assert (lists.inactive, lists.active) == (63, 0)
    lists.check()


@pytest.mark.parametrize(("kind", "stays_active"), [("anon", 0), ("data", 0), ("code", 60)])
def test_only_young_code_pages_stay_active(kind: str, stays_active: int) -> None:
    lists = Lists(active=60, active_young=60)
    out = lru.shrink_active(lists, kind, 60, rng())
    assert (out.rotated, out.deactivated) == (stays_active, 60 - stays_active)
    assert (lists.active, lists.inactive) == (stays_active, 60 - stays_active)
    assert lists.active_young == lists.inactive_young == 0  # bits read and cleared
    lists.check()


def test_exec_pages_survive_a_scan_that_evicts_plain_file_pages() -> None:
    # The same history for both: 50 old inactive pages, 50 active pages used just now.
    kept = {}
    for kind in ("code", "data"):
        lists = Lists(inactive=50, active=50, active_young=50)
        aged = lru.shrink_active(lists, kind, 50, rng())  # inactive list is low: age it
        reclaimed = lru.shrink_inactive(lists, kind, 100, rng()).reclaimed
        kept[kind] = (lists.active, lists.inactive, reclaimed, aged.rotated)
        lists.check()
    assert kept["code"] == (50, 0, 50, 50)  # the young exec pages were rotated, kept
    assert kept["data"] == (0, 0, 100, 0)  # …while the data pages were all evicted


# -- workingset refaults -----------------------------------------------------------------
def test_a_refault_within_the_active_file_size_is_activated() -> None:
    vec = Lruvec()
    lru.evicted(vec, 100, counter=2048)
    assert vec.shadow_pages == 100
    # Distance 500 pages ≤ 1000 active file pages: activate.
    assert lru.refaulted(vec, 40, counter=2548, active_file=1000, rng=rng()) == 40
    assert vec.shadow_pages == 60
    vec.check()


def test_a_refault_beyond_the_active_file_size_is_not_activated() -> None:
    vec = Lruvec()
    lru.evicted(vec, 100, counter=2048)
    # Distance 20 000 pages > 1000 active file pages: the page was not part of the
    # working set the active list protects.
    assert lru.refaulted(vec, 40, counter=22_048, active_file=1000, rng=rng()) == 0
    assert vec.shadow_pages == 60
    vec.check()


def test_refaults_activate_in_proportion_to_the_shadows_within_reach() -> None:
    vec = Lruvec()
    lru.evicted(vec, 10_000, counter=0)  # long ago
    lru.evicted(vec, 10_000, counter=100_000)  # just now
    assert len(vec.shadows) == 2
    activate = lru.refaulted(vec, 1000, counter=101_000, active_file=5000, rng=rng(3))
    assert 400 < activate < 600  # half of the shadows are within reach
    assert vec.shadow_pages == 19_000
    # The activated refaults are drawn from the recent shadows, the others from the old.
    assert vec.shadows == [[0, 10_000 - (1000 - activate)], [100_000 // 1024, 10_000 - activate]]


def test_more_refaults_than_shadows_consume_them_all() -> None:
    vec = Lruvec()
    lru.evicted(vec, 10, counter=0)
    assert lru.refaulted(vec, 25, counter=0, active_file=100, rng=rng()) == 10
    assert vec.shadows == [] and vec.shadow_pages == 0
    assert lru.refaulted(vec, 5, counter=0, active_file=100, rng=rng()) == 0


# -- list balance and get_scan_count -----------------------------------------------------
# The lists' own size sets the ratio (a memory cgroup's lruvec), in GB of 4 KB pages.
@pytest.mark.parametrize(
    ("kind", "total_gb", "kernel", "ratio"),
    [
        ("file", 1.0, (3, 18), 1.0),  # file lists kept 1:1 before 4.8
        ("file", 4.0, (3, 18), 1.0),
        ("anon", 1.0, (3, 18), 3.0),  # int_sqrt(10)
        ("anon", 4.0, (4, 4), 6.0),  # int_sqrt(40)
        ("file", 4.0, (4, 9), 6.0),  # from 4.8 the file lists too
        ("anon", 0.9, (4, 9), 1.0),  # below 1 GB
        ("file", 0.5, (4, 9), 1.0),
    ],
)
def test_inactive_ratio_follows_the_kernel(
    kind: str, total_gb: float, kernel: tuple[int, int], ratio: float
) -> None:
    assert lru.inactive_ratio(kind, int(total_gb * 262144), kernel) == ratio


def test_the_inactive_list_is_low_below_active_over_ratio() -> None:
    assert lru.inactive_is_low(10, 31, 3.0)
    assert not lru.inactive_is_low(10, 30, 3.0)
    assert not lru.inactive_is_low(10, 10, 1.0)


def lruvec(pages: int = 1000) -> Lruvec:
    half = pages // 2
    return Lruvec(anon=Lists(inactive=half, active=half), data=Lists(inactive=half, active=half))


def test_scan_fractions_without_history_are_swappiness_and_200_minus_it() -> None:
    assert lru.scan_fractions(lruvec(), 60, anon_scannable=True) == (60.0, 140.0)
    assert lru.scan_fractions(lruvec(), 200, anon_scannable=True) == (200.0, 0.0)


def test_a_list_whose_scanned_pages_were_rotated_back_weighs_less() -> None:
    vec = lruvec()
    vec.recent_scanned = [100.0, 100.0]
    vec.recent_rotated = [0.0, 100.0]  # every scanned file page came back
    anon, file = lru.scan_fractions(vec, 60, anon_scannable=True)
    assert anon == 60 * 101 / 1
    assert file == 140 * 101 / 101
    assert file / 140 < anon / 60


def test_scan_history_is_halved_past_a_quarter_of_the_lists() -> None:
    vec = lruvec(1000)
    vec.recent_scanned = [300.0, 200.0]  # anon: 300 > 1000 / 4; file: 200 ≤ 250
    vec.recent_rotated = [100.0, 50.0]
    lru.scan_fractions(vec, 60, anon_scannable=True)
    assert vec.recent_scanned == [150.0, 200.0]
    assert vec.recent_rotated == [50.0, 50.0]


def test_without_swap_space_only_the_file_lists_are_scanned() -> None:
    assert lru.scan_fractions(lruvec(), 60, anon_scannable=False) == (0.0, 1.0)
    assert lru.scan_fractions(lruvec(), 0, anon_scannable=True) == (0.0, 1.0)


# -- invariants under random operations --------------------------------------------------
list_op = st.tuples(
    st.sampled_from(["add", "add_active", "remove", "touch", "inactive", "active", "stuck"]),
    st.sampled_from(["anon", "code", "data"]),
    st.integers(0, 300),
)


def apply(lists: Lists, op: tuple[str, str, int], gen: np.random.Generator) -> tuple[int, int]:
    """One operation; returns (pages added, pages taken off the lists)."""
    what, kind, n = op
    if what in ("add", "add_active"):
        lru.add(lists, n, active=what == "add_active", young=n % 2 == 0)
        return n, 0
    if what == "remove":
        before = lists.pages
        lru.remove(lists, n, gen)
        assert before - lists.pages == min(n, before)
        return 0, min(n, before)
    if what == "touch":
        lru.touch(lists, n, gen)
        return 0, 0
    if what == "active":
        out = lru.shrink_active(lists, kind, n, gen)
        assert out.rotated + out.deactivated == out.scanned <= n
        return 0, 0
    out = lru.shrink_inactive(lists, kind, n, gen, reclaimable=what == "inactive")
    assert out.reclaimed + out.activated + out.rotated == out.scanned <= n
    return 0, out.reclaimed


def counts_are_consistent(lists: Lists) -> None:
    """Lists.check() without the active accessed-bit bound (see the next test)."""
    assert min(lists.inactive, lists.active, lists.active_young) >= 0, lists
    assert 0 <= lists.inactive_young <= lists.inactive, lists
    assert 0 <= lists.referenced <= lists.inactive, lists


@settings(max_examples=300, deadline=None)
@given(st.lists(list_op, max_size=40), st.integers(0, 2**32 - 1))
def test_list_operations_conserve_pages(ops: list[tuple[str, str, int]], seed: int) -> None:
    lists, gen = Lists(), rng(seed)
    added = taken = 0
    for op in ops:
        a, t = apply(lists, op, gen)
        added, taken = added + a, taken + t
        assert lists.pages == added - taken
        counts_are_consistent(lists)


@settings(max_examples=300, deadline=None)
@given(st.lists(list_op, max_size=40), st.integers(0, 2**32 - 1))
@example([("add_active", "data", 10), ("add_active", "data", 1), ("active", "data", 11)], 4)
def test_list_operations_keep_every_list_consistent(
    ops: list[tuple[str, str, int]], seed: int
) -> None:
    lists, gen = Lists(), rng(seed)
    for op in ops:
        apply(lists, op, gen)
        lists.check()


# -- Memory with the "lists" LRU model ---------------------------------------------------
def phone(seed: int = 0, **memory: Any) -> Phone:
    spec = {"ram_mb": 256, "reserved_mb": 0, "lru": "lists", "kernel_version": "3.18", **memory}
    return Phone(make_profile([(4, 1000.0, 1.0)], memory=spec, lmk=NO_KILLS), seed)


def start(p: Phone, gen: Generator[Event, object, None]) -> None:
    p.env.process(gen)


def run_checked(p: Phone, duration_ns: int) -> None:
    """Run, checking page conservation after every event."""
    end = p.env.now + duration_ns
    while (nxt := p.env.peek()) is not None and nxt < end:
        p.env.step()
        p.memory.check()
    p.env.run(end)
    p.finish()
    p.memory.check()


def workload(p: Phone, check: bool = False) -> list[Process]:
    """Three apps whose anon, data and code pages add up to more than RAM, used
    unevenly: reclaim ages, rotates, evicts and refaults; one app is killed."""
    m = p.memory
    run = run_checked if check else Phone.run
    (a, a_thread), (b, b_thread), (c, c_thread) = (
        app(p, name, adj) for name, adj in (("a", 900), ("b", 700), ("c", 0))
    )

    def load(process: Process, thread: Any) -> Generator[Event, object]:
        yield from m.allocate(process, thread, 40 * MB, "anon")
        yield from m.allocate(process, thread, 30 * MB, "file")
        yield from m.allocate(process, thread, 15 * MB, "code")

    def use() -> Generator[Event, object]:  # b keeps using its pages…
        for _ in range(10):
            yield p.env.timeout(ms(150))
            yield from m.touch(b, b_thread, file_pages=20 * MB, anon_pages=20 * MB)
        m.free(b, 10 * MB)
        yield from m.touch(b, b_thread, file_pages=45 * MB, anon_pages=30 * MB)

    def grow() -> Generator[Event, object]:  # …while c grows past what is free
        for i in range(4):
            yield from m.allocate(c, c_thread, 25 * MB, "anon" if i % 2 else "file")
        yield from m.allocate(c, c_thread, 30 * MB, "code")

    start(p, load(a, a_thread))
    start(p, load(b, b_thread))
    run(p, seconds(1))
    start(p, use())
    start(p, grow())
    p.env.schedule(ms(1500), lambda _: p.lmkd.kill(a, "test"))
    run(p, seconds(3))
    return [a, b, c]


def counters(p: Phone) -> tuple[int, ...]:
    m = p.memory
    return (m.pgscan, m.pgsteal, m.workingset_refault, m.workingset_activate, m.pswpout)


def test_every_page_is_in_exactly_one_place_under_list_reclaim() -> None:
    p = phone()
    m = p.memory
    a, b, c = workload(p, check=True)
    assert m.pgsteal > 0 and m.pswpout > 0 and m.evictions > 0
    assert m.workingset_refault > 0
    assert m.pgsteal <= m.pgscan
    assert not a.alive and a.lru is None and a.anon_pages == a.file_resident == 0
    for process in (b, c):
        vec = process.lru
        assert vec is not None
        assert vec.anon.pages == process.anon_pages
        assert vec.code.pages + vec.data.pages == process.file_resident
    assert b.anon_swapped + c.anon_swapped == m.zram_stored


def test_the_same_seed_gives_the_same_reclaim_and_other_seeds_differ() -> None:
    def run(seed: int) -> tuple[int, ...]:
        p = phone(seed)
        workload(p)
        p.memory.check()
        return counters(p)

    first = run(1)
    assert first[0] > 0
    assert run(1) == first
    assert any(run(seed)[0] != first[0] for seed in (2, 3, 4))


def test_an_allocation_below_min_reclaims_on_the_allocating_thread_first() -> None:
    p = phone()
    m = p.memory
    idle, idle_thread = app(p, "idle", CACHED_APP_MIN_ADJ)
    start(p, m.allocate(idle, idle_thread, 120 * MB, "file"))
    p.run(seconds(1))
    assert m.allocstall == 0 and m.pgscan == 0
    fg, fg_thread = app(p, "fg", FOREGROUND_APP_ADJ)
    got: list[tuple[int, int]] = []  # (time, the thread's CPU time) when the pages came

    def alloc(pages: int) -> Generator[Event, object]:
        yield from m.allocate(fg, fg_thread, pages, "anon")
        got.append((p.env.now, fg_thread.state_ns[ThreadState.RUNNING]))

    start(p, alloc(MB))  # well above min: no reclaim, no wait
    p.run(ms(1))
    assert got == [(seconds(1), 0)] and m.allocstall == 0
    want = m.free_pages - m.min_wmark + 4 * MB
    start(p, alloc(want))
    p.run(seconds(1))
    assert m.allocstall >= 1 and m.pgscan_direct > 0
    done_ns, cpu_ns = got[1]
    assert done_ns > seconds(1) + ms(1)  # it waited for its pages…
    assert cpu_ns > 0  # …running reclaim on its own thread
    assert fg.anon_pages + fg.anon_swapped == MB + want  # every page it asked for
    assert m.free_pages >= m.min_wmark
    m.check()


def test_a_process_using_its_file_pages_keeps_more_of_them_than_an_idle_one() -> None:
    p = phone(swappiness=0)  # file pages only
    m = p.memory
    busy, busy_thread = app(p, "busy", 900)
    idle, idle_thread = app(p, "idle", 900)
    for process, thread in ((busy, busy_thread), (idle, idle_thread)):
        start(p, m.allocate(process, thread, 60 * MB, "file"))
    p.run(ms(100))

    def use() -> Generator[Event, object]:
        while True:
            yield from m.touch(busy, busy_thread, file_pages=60 * MB)
            yield p.env.timeout(ms(50))

    start(p, use())
    hog, hog_thread = app(p, "hog", FOREGROUND_APP_ADJ)
    # GPU pages are on no LRU list: the 16 MB past min must come from busy or idle.
    want = m.free_pages - m.min_wmark + 16 * MB
    start(p, m.allocate(hog, hog_thread, want, "gpu"))
    p.run(seconds(4))
    assert hog.gpu_pages == want
    lost_busy = 60 * MB - busy.file_resident
    lost_idle = 60 * MB - idle.file_resident
    assert lost_busy + lost_idle >= 16 * MB
    assert lost_idle >= 15 * MB  # nearly all of it came from the idle app…
    assert busy.file_resident > idle.file_resident + 12 * MB  # …whose pages were not used
    assert idle.lru is not None and idle.lru.shadow_pages == lost_idle
    m.check()


def test_a_scan_of_a_whole_list_takes_exactly_its_young_and_old_pages() -> None:
    """Which scanned pages are young is drawn without replacement: scanning all 11 pages
    of a list with 10 young finds exactly 10 young and 1 old, on any seed."""
    for seed in range(20):
        inactive = Lists(inactive=11, inactive_young=10)
        out = lru.shrink_inactive(inactive, "anon", 11, rng(seed))
        assert (out.activated, out.reclaimed) == (10, 1)
        active = Lists(active=11, active_young=10)
        out = lru.shrink_active(active, "code", 11, rng(seed))
        assert (out.rotated, out.deactivated) == (10, 1)
        active.check()


def test_the_unmapped_page_cache_is_one_lruvec_among_the_processes_not_taken_first() -> None:
    # Global reclaim visits every cgroup's lruvec by size: with 100 MB of unmapped cache
    # and an app's 60 MB of idle anon, the app's anon is swapped while cache remains.
    p = phone(swappiness=100)
    m = p.memory
    user, thread = app(p, "user", 900)
    _reader, reader_thread = app(p, "reader", 0)
    start(p, m.allocate(user, thread, 60 * MB, "anon"))
    p.run(ms(100))
    start(p, m.add_page_cache(reader_thread, 100 * MB))
    p.run(ms(200))
    hog, hog_thread = app(p, "hog", FOREGROUND_APP_ADJ)
    start(p, m.allocate(hog, hog_thread, m.free_pages + 40 * MB, "anon"))
    p.run(seconds(2))
    taken_from_cache = 100 * MB - m.cache_clean
    assert m.pswpout > 5 * MB  # the app's anon goes to zRAM while cache remains …
    assert m.cache_clean > 20 * MB
    assert taken_from_cache > m.pswpout  # … the cache, larger, gives more
    assert taken_from_cache + m.pswpout >= 40 * MB  # what the hog needed
    m.check()
