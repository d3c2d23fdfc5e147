"""Memory: conservation, watermarks, kswapd, direct reclaim, zRAM, refaults, PSI."""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mqoe.device.cpu import ThreadState
from mqoe.device.memory import watermarks
from mqoe.device.phone import Phone
from mqoe.device.process import CACHED_APP_MIN_ADJ, FOREGROUND_APP_ADJ, Process
from mqoe.device.profiles import load_profile
from mqoe.engine import Event, ms, seconds
from tests.conftest import app, make_profile

MB = 256  # pages per MiB


def phone(
    ram_mb: int = 256, seed: int = 0, lmk: dict[str, Any] | None = None, **memory: Any
) -> Phone:
    spec = {"ram_mb": ram_mb, "reserved_mb": 0, **memory}
    return Phone(make_profile([(4, 1000.0, 1.0)], memory=spec, lmk=lmk), seed)


def run_gen(p: Phone, gen: Generator[Event, object, None]) -> None:
    p.env.process(gen)


def test_watermarks_follow_the_kernel_formula_for_the_nokia_1() -> None:
    spec = load_profile("nokia-1").memory
    managed = spec.total_pages - spec.reserved_pages
    min_kb = int(math.sqrt(managed * 4 * 16))
    step = max(min_kb // 4 // 4, managed * 10 // 10000)
    extra = spec.extra_free_kbytes // 4  # ActivityManager's extra_free_kbytes (4803 KB)
    assert extra == 1200
    assert watermarks(spec) == (
        min_kb // 4,
        min_kb // 4 + extra + step,
        min_kb // 4 + extra + 2 * step,
    )


def test_extra_free_kbytes_lifts_low_and_high_but_not_min() -> None:
    spec = load_profile("nokia-1").memory
    base = spec.model_copy(update={"extra_free_kbytes": 0})
    lifted = spec.model_copy(update={"extra_free_kbytes": 4803})
    (min0, low0, high0), (min1, low1, high1) = watermarks(base), watermarks(lifted)
    assert min1 == min0
    assert (low1 - low0, high1 - high0) == (4803 // 4, 4803 // 4)


def test_kswapd_keeps_the_extra_free_memory() -> None:
    p = phone(extra_free_kbytes=8 * 1024)
    m = p.memory
    assert m.high_wmark - m.min_wmark >= 8 * MB
    _, cold_thread = app(p, "cold", CACHED_APP_MIN_ADJ)
    hog, hog_thread = app(p, "hog", FOREGROUND_APP_ADJ)
    run_gen(p, m.add_page_cache(cold_thread, 60 * MB))
    p.run(ms(1))
    run_gen(p, m.allocate(hog, hog_thread, m.free_pages - m.low_wmark + 20))
    p.run(ms(300))
    assert m.kswapd_wakeups == 1
    assert m.free_pages >= m.high_wmark  # 8 MB more free than without the knob
    m.check()


def test_kswapd_sleeps_above_low_and_reclaims_to_high_below_it() -> None:
    p = phone()
    m = p.memory
    _, cold_thread = app(p, "cold", CACHED_APP_MIN_ADJ)
    hog, hog_thread = app(p, "hog", FOREGROUND_APP_ADJ)
    # Fill with reclaimable cache, then allocate down to just above the low watermark.
    run_gen(p, m.add_page_cache(cold_thread, 60 * MB))
    p.run(ms(1))
    run_gen(p, m.allocate(hog, hog_thread, m.free_pages - m.low_wmark - 10))
    p.run(ms(10))
    assert m.kswapd_wakeups == 0
    assert m.pgscan == 0
    run_gen(p, m.allocate(hog, hog_thread, 20))  # crosses low
    p.run(ms(200))
    assert m.kswapd_wakeups == 1
    assert m.free_pages >= m.high_wmark  # reclaimed up to high, then slept
    assert m.free_pages < m.high_wmark + 32  # …in batches of 32, not beyond
    assert p.memory.kswapd.state_ns[ThreadState.RUNNING] > 0
    m.check()


def test_direct_reclaim_stalls_the_allocating_thread() -> None:
    p = phone()
    m = p.memory
    _, cache_thread = app(p, "files", CACHED_APP_MIN_ADJ)
    fg, fg_thread = app(p, "fg", FOREGROUND_APP_ADJ)
    run_gen(p, m.add_page_cache(cache_thread, 100 * MB))
    p.run(ms(1))
    # One allocation far past min before kswapd can help: the allocator must reclaim
    # (once for each 1 MiB fault step that would cross min).
    run_gen(p, m.allocate(fg, fg_thread, m.free_pages - m.min_wmark + 5 * MB))
    p.run(seconds(1))
    assert 1 <= m.allocstall <= 6
    assert m.pgscan_direct > 0
    assert fg_thread.state_ns[ThreadState.RUNNING] > 0  # the reclaim ran on its thread
    assert m.psi_some_ns > 0
    m.check()


def test_anon_pages_go_to_zram_at_its_compression_ratio() -> None:
    p = phone(swappiness=200, zram_ratio=2.0)  # swappiness 200: reclaim anon only
    m = p.memory
    bg, bg_thread = app(p, "bg", CACHED_APP_MIN_ADJ)
    fg, fg_thread = app(p, "fg", FOREGROUND_APP_ADJ)
    run_gen(p, m.allocate(bg, bg_thread, 100 * MB))
    p.run(seconds(5))  # bg's pages age: no longer referenced when reclaim scans them
    run_gen(p, m.allocate(fg, fg_thread, m.free_pages - m.min_wmark + MB))
    p.run(seconds(1))
    assert bg.anon_swapped > 0
    assert m.zram_pool == math.ceil(bg.anon_swapped / 2)
    assert m.pswpout == bg.anon_swapped
    m.check()


def test_touching_evicted_file_pages_reads_them_back_through_mmcqd() -> None:
    p = phone()
    m = p.memory
    proc, thread = app(p, "video", FOREGROUND_APP_ADJ)
    run_gen(p, m.allocate(proc, thread, 10 * MB, kind="file"))
    p.run(ms(1))
    proc.file_resident -= 5 * MB  # evicted earlier (half the working set)
    m.cache_clean += 5 * MB  # …whose pages another owner holds now
    run_gen(p, m.touch(proc, thread, file_pages=1000))
    p.run(seconds(2))
    assert 0 < m.workingset_refault <= 5 * MB
    assert p.storage.reads > 0
    assert thread.state_ns[ThreadState.BLOCKED_IO] > 0  # it waited in D state
    assert p.storage.mmcqd.state_ns[ThreadState.RUNNING] > 0
    m.check()


def test_vmpressure_rises_when_reclaim_hits_hot_pages() -> None:
    p = phone(swappiness=0)  # fg just used all its pages: every scanned one is referenced
    m = p.memory
    fg, fg_thread = app(p, "fg", FOREGROUND_APP_ADJ)
    run_gen(p, m.allocate(fg, fg_thread, 150 * MB, kind="file"))
    p.run(ms(1))
    other, other_thread = app(p, "fg2", FOREGROUND_APP_ADJ)
    run_gen(p, m.allocate(other, other_thread, m.free_pages - m.min_wmark + 2 * MB))
    p.run(seconds(1))
    assert m.vmpressure
    assert max(v.pressure for v in m.vmpressure) >= 60  # only hot pages left to scan
    m.check()


op = st.tuples(
    st.sampled_from(["alloc", "alloc", "file", "gpu", "cache", "cache", "free", "touch", "kill"]),
    st.integers(0, 5),  # process
    st.sampled_from([1, 7, 2 * MB, 9 * MB, 25 * MB, 60 * MB]),  # pages: enough for pressure
    st.integers(0, 300),  # ms later
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=5, max_size=30), st.integers(0, 100), st.integers(0, 200))
@example(  # dirty cache under pressure: pages in writeback must still be counted
    [("cache", 1, 25 * MB, 0)] + [("alloc", i, 60 * MB, 10 * i) for i in (0, 2, 3, 4)], 1, 100
)
def test_every_page_is_in_exactly_one_place_at_every_step(
    ops: list[tuple[str, int, int, int]], seed: int, swappiness: int
) -> None:
    p = phone(seed=seed, swappiness=swappiness)
    m = p.memory
    procs = [app(p, f"p{i}", adj) for i, adj in enumerate([0, 100, 200, 700, 900, 950])]
    acting: set[int] = set()  # threads inside an operation (one at a time per thread)
    for kind, who, pages, delay in ops:
        process, thread = procs[who]

        def act(
            kind: str = kind, process: Process = process, thread: Any = thread, pages: int = pages
        ) -> Generator[Event, object, None]:
            if not process.alive or thread.tid in acting:
                return
            acting.add(thread.tid)
            try:
                if kind in ("alloc", "file", "gpu"):
                    kind = "anon" if kind == "alloc" else kind
                    yield from m.allocate(process, thread, pages, kind)
                elif kind == "cache":
                    yield from m.add_page_cache(thread, pages, dirty=pages % 3 != 0)
                elif kind == "free":
                    m.free(process, pages)
                elif kind == "touch":
                    yield from m.touch(process, thread, pages, pages)
                else:
                    p.lmkd.kill(process, "test")
            finally:
                acting.discard(thread.tid)

        p.env.schedule(ms(delay), lambda _, a=act: p.env.process(a()))
    end = ms(2000)
    while (nxt := p.env.peek()) is not None and nxt < end:
        p.env.step()
        m.check()
    assert m.free_pages >= 0


def test_a_process_killed_mid_refault_releases_its_stall() -> None:
    p = phone()
    m = p.memory
    proc, thread = app(p, "video", FOREGROUND_APP_ADJ)
    run_gen(p, m.allocate(proc, thread, 10 * MB, kind="file"))
    p.run(ms(1))
    proc.file_resident -= 8 * MB
    m.cache_clean += 8 * MB
    run_gen(p, m.touch(proc, thread, file_pages=2000))
    p.run(ms(0.2))  # inside the first refault read
    assert m._stalled == 1
    p.lmkd.kill(proc, "test")
    p.run(seconds(1))
    assert m._stalled == 0  # no leaked stall: PSI stops growing
    some = m.psi_some_ns
    p.run(seconds(1))
    assert m.psi_some_ns == some
    m.check()


def test_the_flusher_writes_dirty_cache_back_after_five_seconds_then_sleeps() -> None:
    p = phone()
    m = p.memory
    _, writer = app(p, "writer", FOREGROUND_APP_ADJ)
    run_gen(p, m.add_page_cache(writer, 300, dirty=True))  # no memory pressure at all
    p.run(seconds(4.9))
    assert m.cache_dirty == 300 and p.storage.writes == 0
    p.run(seconds(1))
    # 300 pages in requests of at most 128: 128 + 128 + 44, all written and now clean.
    assert p.storage.writes == 3 and p.storage.pages_written == 300
    assert m.cache_dirty == m.cache_writeback == 0 and m.cache_clean == 300
    assert p.env.peek() is None  # the flusher sleeps until pages are dirtied again
    m.check()


def test_a_process_with_incompressible_data_fills_the_zram_pool_page_for_page() -> None:
    pools = []
    for ratio in (0.0, 1.0):  # the profile's 2:1, then random bytes (zRAM huge pages)
        p = phone(swappiness=200, zram_ratio=2.0)
        m = p.memory
        bg, bg_thread = app(p, "bg", CACHED_APP_MIN_ADJ)
        bg.zram_ratio = ratio
        fg, fg_thread = app(p, "fg", FOREGROUND_APP_ADJ)
        run_gen(p, m.allocate(bg, bg_thread, 100 * MB))
        p.run(seconds(5))
        run_gen(p, m.allocate(fg, fg_thread, m.free_pages - m.min_wmark + MB))
        p.run(seconds(1))
        assert bg.anon_swapped > 0
        # fg's own pages (the profile's 2:1) may be swapped too once bg runs out.
        compressed = bg.anon_swapped / (ratio or 2.0) + fg.anon_swapped / 2.0
        assert m.zram_pool == math.ceil(compressed)
        m.check()
        pools.append((m.zram_pool - fg.anon_swapped / 2.0) / bg.anon_swapped)
    assert pools[1] > 1.9 * pools[0]  # the same pages cost twice the RAM in zRAM


class _ScriptedLru:
    """An LRU that scans what it is asked to and reclaims ``per_pass`` pages a pass."""

    def __init__(self, per_pass: int) -> None:
        self.per_pass = per_pass
        self.targets: list[int] = []

    def reclaim(self, target: int, batch: Any) -> None:
        self.targets.append(target)
        batch.scanned += target
        batch.reclaimed += min(self.per_pass, target)


def _direct_reclaim(per_pass: int, file_pages: int = 100 * MB) -> tuple[Phone, _ScriptedLru]:
    p = phone()
    m = p.memory
    fg, fg_thread = app(p, "fg", FOREGROUND_APP_ADJ)
    run_gen(p, m.allocate(fg, fg_thread, file_pages, kind="file"))
    p.run(ms(1))
    scripted = _ScriptedLru(per_pass)
    m.lru = scripted  # type: ignore[assignment]
    m.vmpressure_listeners.clear()  # samples only: no lmkd kill may end the reclaim
    run_gen(p, m._try_to_free_pages(fg_thread))
    p.run(seconds(1))
    return p, scripted


def test_direct_reclaim_scans_deeper_at_each_priority_until_a_batch_is_freed() -> None:
    p, scripted = _direct_reclaim(per_pass=5)
    m = p.memory
    lru = m.lru_pages()
    assert 32 < lru >> 9 < 64  # 100 MiB of file pages
    # A batch at priority 12; lru >> 11 and lru >> 10 are below a batch, so a batch
    # each; lru >> 9 is scanned as a batch and the rest; at priority 8 the reclaimer
    # stops after two batches: 7 × 5 pages make the 32 it wanted.
    assert scripted.targets == [32, 32, 32, 32, (lru >> 9) - 32, 32, 32]


def test_a_reclaimer_that_frees_nothing_reports_critical_pressure_from_priority_3() -> None:
    # 32 pages on the LRU: thirteen passes of a batch each scan 416 pages, less than one
    # vmpressure window, so the scans alone would never complete a sample.
    p, scripted = _direct_reclaim(per_pass=0, file_pages=32)
    assert scripted.targets == [32] * 13  # priorities 12 … 0
    assert sum(scripted.targets) < 512
    # vmpressure_prio: from priority 3 each pass adds a window scanned in vain.
    levels = [v.level for v in p.memory.vmpressure]
    assert levels and set(levels) == {"critical"}


def test_a_failing_call_scans_each_pass_whole_in_at_most_sixteen_steps() -> None:
    p, scripted = _direct_reclaim(per_pass=0)
    lru = p.memory.lru_pages()
    # Every priority's whole scan, 12 down to 0: about two LRUs' worth of pages…
    assert sum(scripted.targets) == 32 + sum(max(32, lru >> prio) for prio in range(12))
    # …in a bounded number of LRU-model calls (a batch at a time would be ~1 600).
    assert len(scripted.targets) <= 13 * 16


def test_a_first_pass_that_frees_a_batch_is_the_only_one() -> None:
    p, scripted = _direct_reclaim(per_pass=32)
    assert scripted.targets == [32]
    assert not p.memory.vmpressure  # 32 scanned pages: no window yet
