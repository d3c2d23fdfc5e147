"""Locality of file-page uses under the "lists" LRU model: a hot set that takes most of
a process's uses and a cold tail (``[memory] hot_fraction`` / ``hot_use_share``), and
file faults read one at a time with their readaround window."""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mqoe.device import lru
from mqoe.device.lru import Lists
from mqoe.device.phone import Phone
from mqoe.device.process import FOREGROUND_APP_ADJ, Process
from mqoe.device.profiles import MemorySpec
from mqoe.device.storage import IoRequest
from mqoe.engine import Event, ms, seconds
from tests.conftest import app, make_profile

MB = 256  # pages per MiB
NO_KILLS = {"medium_adj": 1001, "critical_adj": 1001}
HOT = {"hot_fraction": 0.2, "hot_use_share": 0.9}


def phone(seed: int = 0, **memory: Any) -> Phone:
    spec = {"ram_mb": 256, "reserved_mb": 0, "lru": "lists", "kernel_version": "3.18", **memory}
    return Phone(make_profile([(4, 1000.0, 1.0)], memory=spec, lmk=NO_KILLS), seed)


def start(p: Phone, gen: Generator[Event, object, None]) -> None:
    p.env.process(gen)


def resident(process: Process) -> tuple[int, int]:
    """(hot, cold) file pages in RAM."""
    vec = process.lru
    assert vec is not None
    return vec.hot_file_pages, vec.file_pages - vec.hot_file_pages


def evict_file(p: Phone, process: Process, hot: bool = True) -> None:
    """The cold (and with ``hot`` the hot) file pages of ``process`` leave RAM, as
    reclaim would take them, without leaving shadow entries."""
    vec = process.lru
    assert vec is not None
    parts = ("code", "data", "code_hot", "data_hot") if hot else ("code", "data")
    for name in parts:
        pages = getattr(vec, name).pages
        setattr(vec, name, Lists())
        process.file_resident -= pages
        p.memory.free_pages += pages
    p.memory.check()


def user_missing(p: Phone, file_mb: int, missing_mb: int) -> tuple[Process, Any]:
    """A process with ``file_mb`` of data pages of which ``missing_mb`` (drawn at
    random, hot or cold) are evicted."""
    user, thread = app(p, "user", 900)
    start(p, p.memory.allocate(user, thread, file_mb * MB, "file"))
    p.run(p.env.now + ms(500))
    vec = user.lru
    assert vec is not None and user.file_resident == file_mb * MB
    lru.remove(vec.data, missing_mb * MB, np.random.default_rng(0))
    user.file_resident -= missing_mb * MB
    p.memory.free_pages += missing_mb * MB
    p.memory.check()
    return user, thread


def recording_reads(p: Phone) -> list[int]:
    """The page counts of the storage requests from now on."""
    reads: list[int] = []

    def record(request: IoRequest) -> None:
        if not request.discard:
            reads.append(request.pages)

    p.memory.storage.request_listener = record
    return reads


# -- a list held in two parts --------------------------------------------------------------
def test_a_scan_of_a_list_in_two_parts_takes_the_old_cold_pages_and_keeps_the_young_hot_ones() -> (
    None
):
    cold, hot = Lists(inactive=300), Lists(inactive=100, inactive_young=100)
    out = lru.scan_inactive((cold, hot), "code", 400, np.random.default_rng(0))
    assert (out.scanned, out.reclaimed, out.activated) == (400, 300, 100)
    assert (cold.pages, hot.inactive, hot.active) == (0, 0, 100)


parts_st = st.tuples(*(st.integers(0, 200) for _ in range(4)))


@settings(max_examples=200, deadline=None)
@given(parts_st, parts_st, st.integers(0, 500), st.sampled_from(lru.FILE_KINDS), st.integers(0, 9))
def test_a_scan_over_two_parts_conserves_pages_and_scans_no_more_than_the_list_holds(
    a: tuple[int, ...], b: tuple[int, ...], n: int, kind: str, seed: int
) -> None:
    def lists(sizes: tuple[int, ...]) -> Lists:
        inactive, active, young_i, young_a = sizes
        return Lists(inactive, active, min(young_i, inactive), min(young_a, active))

    cold, hot = lists(a), lists(b)
    gen = np.random.default_rng(seed)
    before = cold.pages + hot.pages
    inactive = cold.inactive + hot.inactive
    out = lru.scan_inactive((cold, hot), kind, n, gen)
    assert out.scanned == min(n, inactive)
    assert cold.pages + hot.pages + out.reclaimed == before
    active, left = cold.active + hot.active, cold.pages + hot.pages
    out = lru.scan_active((cold, hot), kind, n, gen)
    assert out.scanned == min(n, active)
    assert out.rotated + out.deactivated == out.scanned
    assert cold.pages + hot.pages == left  # aging moves pages, never frees them
    cold.check()
    hot.check()


# -- Memory with a hot set ---------------------------------------------------------------
def test_under_pressure_the_hot_set_stays_resident_while_the_cold_tail_is_evicted() -> None:
    p = phone(swappiness=0, **HOT)
    m = p.memory
    user, thread = app(p, "user", 900)
    start(p, m.allocate(user, thread, 60 * MB, "file"))
    p.run(ms(100))
    assert resident(user) == (12 * MB, 48 * MB)  # 20% of the working set is hot

    def use() -> Generator[Event, object]:
        while True:  # 12 MB of uses per 50 ms: 90% on the hot 12 MB, 10% on the cold 48 MB
            yield from m.touch(user, thread, file_pages=12 * MB)
            yield p.env.timeout(ms(50))

    start(p, use())
    hog, hog_thread = app(p, "hog", FOREGROUND_APP_ADJ)
    want = m.free_pages - m.min_wmark + 30 * MB  # 30 MB must come from user's files
    start(p, m.allocate(hog, hog_thread, want, "gpu"))
    p.run(seconds(4))
    assert hog.gpu_pages == want
    hot, cold = resident(user)
    assert hot >= 0.9 * 12 * MB  # the hot set stayed…
    assert cold <= 48 * MB - 25 * MB  # …the cold tail paid for the hog
    m.check()


def test_the_same_uses_fault_less_when_they_fall_on_a_resident_hot_set() -> None:
    def refaults(memory: dict[str, Any]) -> int:
        p = phone(swappiness=0, **memory)
        m = p.memory
        # 48 of the 60 MB evicted: with a hot set, its cold pages; without, any pages.
        user, thread = user_missing(p, 60, 0 if memory else 48)
        if memory:
            evict_file(p, user, hot=False)
        before = m.workingset_refault
        start(p, m.touch(user, thread, file_pages=4 * MB))
        p.run(seconds(2))
        m.check()
        return m.workingset_refault - before

    # 10% of 4 MB of uses reach the cold 48 MB: ~0.4 MB of faults, read with their
    # readaround windows; uniform uses fault ~3.2 MB (80% of them miss).
    assert refaults(HOT) < refaults({}) / 3


def evicted_user(hot: bool) -> tuple[Phone, Process, Any]:
    """A hot-set phone whose one process has 40 MB of data pages, its cold pages (and
    with ``hot`` its hot ones) evicted."""
    p = phone(**HOT)
    user, thread = app(p, "user", 900)
    start(p, p.memory.allocate(user, thread, 40 * MB, "file"))
    p.run(ms(100))
    evict_file(p, user, hot=hot)
    return p, user, thread


def test_faults_on_a_wholly_evicted_working_set_read_whole_windows() -> None:
    p, user, thread = evicted_user(hot=True)
    m = p.memory
    reads = recording_reads(p)
    # Uses that touch every page: every page faults. Each read serves the faults on the
    # pages its window brings in, so readaround never stops (mmap_miss stays low).
    start(p, m.touch(user, thread, file_pages=10**9))
    p.run(seconds(5))
    window = m.storage.spec.readahead_pages
    assert user.file_resident == 40 * MB == sum(reads) == m.workingset_refault
    assert reads[0] == window and max(reads) == window
    # Each read brings 1 + Binomial(31, missing share) pages: filling the working set
    # W takes ∫ dm / (1 + 31 m / W) = W / 31 × ln 32 reads.
    expected = 40 * MB / (window - 1) * math.log(window)
    assert abs(len(reads) - expected) < 0.05 * expected
    m.check()


def test_a_fault_reads_only_the_missing_pages_of_its_window() -> None:
    p = phone()
    m = p.memory
    # 16 of the 40 MB are gone: a window's 31 other pages are each missing with chance
    # 0.4, so reads average ~13 pages.
    user, thread = user_missing(p, 40, 16)
    reads = recording_reads(p)
    start(p, m.touch(user, thread, file_pages=MB // 4))
    p.run(seconds(2))
    assert 15 < len(reads) < 60
    assert max(reads) <= m.storage.spec.readahead_pages
    assert 9 < sum(reads) / len(reads) < 17
    m.check()


def test_a_fault_with_nothing_left_to_read_is_no_miss() -> None:
    p, user, _ = evicted_user(hot=False)  # only cold pages are missing
    m = p.memory
    vec = user.lru
    assert vec is not None and vec.mmap_miss == 0
    # Hot faults pending, no hot page missing, no cold fault: no read and no miss.
    assert m.lru.read_around(user, 3, 0, 32) == (0, 0, 0, 0)
    assert vec.mmap_miss == 0
    assert m.lru.read_around(user, 0, 1, 32).cold_served == 1
    assert vec.mmap_miss == 1


def test_readaround_stops_when_faults_keep_missing_the_pages_it_brought() -> None:
    p = phone()
    m = p.memory
    user, thread = user_missing(p, 200, 150)  # 3 pages in 4 evicted
    vec = user.lru
    assert vec is not None
    reads = recording_reads(p)

    def use() -> Generator[Event, object]:
        for _ in range(300):  # one use at a time: the faults are scattered
            yield from m.touch(user, thread, file_pages=1)

    start(p, use())
    p.run(seconds(10))
    assert len(reads) > 150
    assert sum(reads[:50]) / 50 > 15  # readaround: ~24 missing pages in a window…
    assert reads[-50:] == [1] * 50  # …until mmap_miss passes MMAP_LOTSAMISS
    assert vec.mmap_miss > lru.MMAP_LOTSAMISS
    m.check()


def test_a_hot_set_run_is_deterministic_per_seed() -> None:
    def run(seed: int) -> tuple[int, int, int]:
        p = phone(seed, swappiness=30, **HOT)
        m = p.memory
        a, a_thread = app(p, "a", 900)
        b, b_thread = app(p, "b", 0)
        start(p, m.allocate(a, a_thread, 100 * MB, "file"))
        start(p, m.allocate(b, b_thread, 60 * MB, "code"))

        def use() -> Generator[Event, object]:
            for _ in range(20):
                yield from m.touch(a, a_thread, file_pages=10 * MB)
                yield from m.allocate(b, b_thread, 8 * MB, "anon")
                yield p.env.timeout(ms(50))

        start(p, use())
        p.run(seconds(3))
        m.check()
        return m.pgscan, m.workingset_refault, m.workingset_activate

    first = run(1)
    assert first[1] > 0
    assert run(1) == first
    assert any(run(seed) != first for seed in (2, 3))


@pytest.mark.parametrize(
    ("fraction", "share"), [(0.2, 0.0), (0.0, 0.9)], ids=["no-share", "no-fraction"]
)
def test_a_hot_set_needs_both_its_size_and_its_share_of_uses(fraction: float, share: float) -> None:
    with pytest.raises(ValidationError, match="hot_fraction and hot_use_share"):
        MemorySpec(ram_mb=1024, hot_fraction=fraction, hot_use_share=share)
