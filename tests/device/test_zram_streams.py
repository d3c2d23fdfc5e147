"""zRAM as the kernel runs it: compression streams (max_comp_streams) and swap
readahead (vm.page-cluster) on kernels before 4.15."""

from __future__ import annotations

from collections.abc import Generator

from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.device.memory_reclaim import ZramStreams
from mqoe.device.phone import Phone
from mqoe.device.process import CACHED_APP_MIN_ADJ, FOREGROUND_APP_ADJ
from mqoe.engine import Environment, Event, ms, seconds
from tests.conftest import app
from tests.device.test_memory import phone

MB = 256  # pages per MiB


# -- the stream lock --------------------------------------------------------------------
def test_a_single_stream_is_handed_to_waiters_in_order() -> None:
    env = Environment(0)
    streams = ZramStreams(env, 1)
    assert streams.acquire() is None  # taken at once
    first, second = streams.acquire(), streams.acquire()
    assert first is not None and second is not None
    assert not first.triggered and not second.triggered
    streams.release(None)  # the holder is done: the first waiter gets it
    assert first.triggered and not second.triggered
    streams.release(first)
    assert second.triggered
    streams.release(second)
    assert streams.acquire() is None  # free again


def test_a_waiter_killed_before_its_turn_leaves_the_queue() -> None:
    env = Environment(0)
    streams = ZramStreams(env, 1)
    assert streams.acquire() is None
    gone, next_one = streams.acquire(), streams.acquire()
    assert gone is not None and next_one is not None
    streams.release(gone)  # killed while waiting: never held it
    assert not next_one.triggered  # the holder still has the stream
    streams.release(None)
    assert next_one.triggered


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 4), ops=st.lists(st.booleans(), max_size=60))
def test_never_more_holders_than_streams(n: int, ops: list[bool]) -> None:
    """Random acquires and releases: holders ≤ n, and nobody waits while one is free."""
    env = Environment(0)
    streams = ZramStreams(env, n)
    holders: list[Event | None] = []
    waiting: list[Event] = []
    for take in ops:
        if take:
            wait = streams.acquire()
            (holders if wait is None else waiting).append(wait)
        elif holders:
            streams.release(holders.pop(0))
        for wait in [w for w in waiting if w.triggered]:
            waiting.remove(wait)
            holders.append(wait)
        assert len(holders) <= n
        assert not waiting or len(holders) == n


# -- reclaim through the streams --------------------------------------------------------
def _swap_storm(streams: int) -> tuple[Phone, int]:
    """kswapd and a direct reclaimer both compress at once: anon only (swappiness
    200), expensive compression so the two overlap."""
    p = phone(swappiness=200, zram_streams=streams, compress_cycles_per_page=400_000)
    m = p.memory
    bg, bg_thread = app(p, "bg", CACHED_APP_MIN_ADJ)
    fg, fg_thread = app(p, "fg", FOREGROUND_APP_ADJ)
    p.env.process(m.allocate(bg, bg_thread, 150 * MB))
    p.run(seconds(5))
    done: list[int] = []

    def allocate() -> Generator[Event, object, None]:
        yield from m.allocate(fg, fg_thread, m.free_pages - m.min_wmark + 4 * MB)
        done.append(p.env.now)

    p.env.process(allocate())
    p.run(seconds(20))
    m.check()
    assert done, "the allocation never finished"
    return p, done[0]


def test_one_stream_makes_concurrent_compressors_wait_asleep() -> None:
    (one, done_one), (many, done_many) = _swap_storm(1), _swap_storm(0)
    assert many.memory.zram_stream_waits == 0
    assert one.memory.zram_stream_waits > 0
    assert one.memory.pswpout > 0 and many.memory.pswpout > 0
    # Waiting for kswapd's stream makes the allocation take longer…
    assert done_one > done_many
    # …while the same pages go to zRAM either way.
    assert abs(one.memory.pswpout - many.memory.pswpout) < 64


# -- swap readahead ---------------------------------------------------------------------
def _swapped_in(kernel: str, cluster: int) -> tuple[int, int]:
    """(faults asked for, pages swapped in) for one touch of a half-swapped process."""
    p = phone(kernel_version=kernel, page_cluster=cluster, decompress_cycles_per_page=1)
    m = p.memory
    proc, thread = app(p, "app", FOREGROUND_APP_ADJ)
    p.env.process(m.allocate(proc, thread, 40 * MB))
    p.run(ms(10))
    # Half its pages went to zRAM earlier (as reclaim would have put them there).
    half = 20 * MB
    proc.anon_pages -= half
    m.lru.removed(proc, "anon", half)
    m.free_pages += half
    m._zram_add(proc, half)
    p.env.process(m.touch(proc, thread, 0, anon_pages=200))
    p.run(seconds(1))
    m.check()
    return 200, m.pswpin


def test_before_4_15_a_swap_in_reads_its_whole_cluster() -> None:
    _, single = _swapped_in("4.19", 3)  # zRAM skips readahead from 4.15
    _, none = _swapped_in("3.18", 0)
    _, cluster = _swapped_in("3.18", 3)
    assert 60 < single < 140  # ≈ half of 200 touches fault
    assert none == single  # the same draws: one page per fault
    # Each fault also brings the cluster's 7 other slots, ≈ half of them still in use.
    assert 3 * single < cluster < 6 * single
