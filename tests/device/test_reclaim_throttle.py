"""Direct reclaim throttles (Linux 3.18 mm/vmscan.c): throttle_direct_reclaim below half
the min watermark, and too_many_isolated's congestion_wait."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from mqoe.device.memory import KERNEL_POOL
from mqoe.device.phone import Phone
from mqoe.device.process import CACHED_APP_MIN_ADJ, FOREGROUND_APP_ADJ
from mqoe.engine import Event, ms
from tests.conftest import app, make_profile

MB = 256  # pages per MiB


def phone(**memory: Any) -> Phone:
    spec = {"ram_mb": 256, "reserved_mb": 0, "zram_fraction": 0.0, **memory}
    return Phone(make_profile([(4, 1000.0, 1.0)], memory=spec), 0)


def run_gen(p: Phone, gen: Generator[Event, object, None]) -> None:
    p.env.process(gen)


def below_half_min(p: Phone) -> None:
    """Cache to reclaim, then an atomic allocation (a kernel pool) takes free memory to
    a quarter of the min watermark, as GFP_ATOMIC allocations may."""
    m = p.memory
    _, reader = app(p, "reader", CACHED_APP_MIN_ADJ)
    run_gen(p, m.add_page_cache(reader, 60 * MB))
    p.run(ms(1))
    atomic = m.free_pages - m.min_wmark // 4
    m.free_pages -= atomic
    m.kernel_pools[KERNEL_POOL] = m.kernel_pools.get(KERNEL_POOL, 0) + atomic
    m.check()


def test_a_user_thread_below_half_the_min_watermark_waits_for_kswapd() -> None:
    p = phone()
    m = p.memory
    below_half_min(p)
    fg, fg_thread = app(p, "fg", FOREGROUND_APP_ADJ)
    done: list[int] = []

    def alloc() -> Generator[Event, object, None]:
        yield from m.allocate(fg, fg_thread, 1)
        done.append(p.env.now)

    run_gen(p, alloc())
    p.run(p.env.now + ms(200))
    assert m.pgscan_direct_throttle == 1
    assert m.pgscan_direct == 0  # it slept; kswapd did the reclaiming
    assert done and m.free_pages > m.min_wmark
    assert fg.anon_pages == 1
    m.check()


def test_a_kernel_thread_is_not_throttled() -> None:
    p = phone()
    m = p.memory
    below_half_min(p)
    worker, _ = app(p, "kworker", 0)
    thread = p.cpu.thread("kworker", process="kernel")
    run_gen(p, m.allocate(worker, thread, 1))
    p.run(p.env.now + ms(200))
    assert m.pgscan_direct_throttle == 0
    assert m.pgscan_direct > 0  # it reclaimed for itself
    m.check()


def squeezed_direct_reclaim(lru: str, isolated_by_others: int | None) -> tuple[Phone, list[int]]:
    """A cached app's files fill memory; a foreground allocation must reclaim directly
    while other reclaimers hold ``isolated_by_others`` pages off the LRU (None: more than
    the inactive file list) for the first 250 ms."""
    p = phone(lru=lru)
    m = p.memory
    bg, bg_thread = app(p, "bg", CACHED_APP_MIN_ADJ)
    run_gen(p, m.allocate(bg, bg_thread, m.free_pages - m.high_wmark - 2 * MB, kind="file"))
    p.run(ms(100))
    inactive = m.lru.inactive_pages()
    held = (inactive[1] + 1 if inactive else 1) if isolated_by_others is None else 0
    m.isolated += held
    p.env.schedule(ms(250), lambda _: setattr(m, "isolated", m.isolated - held))
    fg, fg_thread = app(p, "fg", FOREGROUND_APP_ADJ)
    done: list[int] = []
    start = p.env.now

    def alloc() -> Generator[Event, object, None]:
        yield from m.allocate(fg, fg_thread, 4 * MB)
        done.append(p.env.now - start)

    run_gen(p, alloc())
    p.run(start + ms(1000))
    m.check()
    return p, done


def test_too_many_isolated_makes_a_direct_reclaimer_sleep_100_ms_per_look() -> None:
    p, done = squeezed_direct_reclaim("lists", isolated_by_others=None)
    # Looks at 0, 100 and 200 ms find too many isolated; the one at 300 ms goes on.
    assert p.memory.isolated_waits == 3
    assert done and done[0] >= ms(300)
    p, done = squeezed_direct_reclaim("lists", isolated_by_others=0)
    assert p.memory.isolated_waits == 0
    assert done and done[0] < ms(100)


def test_the_recency_model_keeps_no_inactive_list_to_compare() -> None:
    p, done = squeezed_direct_reclaim("recency", isolated_by_others=None)
    assert p.memory.isolated_waits == 0
    assert done and done[0] < ms(100)
