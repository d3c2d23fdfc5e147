"""The flash model's fast paths give exactly the state of its general ones.

Small writes and discards go page by page (:data:`mqoe.device.ftl.FEW_PAGES`), GC's
single victim is an argmin, idle GC first counts the blocks that could be empty, and
the file-space allocator takes the pages at its cursor without scanning when they are
free, and a repeated aging is a copy of the kept result: each is compared here with the
general code on the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mqoe.device.file_space as file_space
import mqoe.device.ftl as ftl_module
from mqoe.device.file_space import _ALLOC_WINDOW, FileSpace
from mqoe.device.ftl import GC_POLICIES, Ftl, GcPolicy
from mqoe.device.phone import Phone
from tests.conftest import make_profile


def _state(ftl: Ftl) -> tuple[object, ...]:
    arrays = (ftl.l2p, ftl.p2l, ftl.valid, ftl.written, ftl.erase_counts, ftl.modified)
    counters = (ftl.clock, ftl.host_pages_written, ftl.programmed_pages, ftl.gc_copies,
                ftl.erases, ftl.discarded_pages, ftl._open, ftl._gc_open,
                ftl._idle_work)  # fmt: skip
    return (*(a.tobytes() for a in arrays), counters, tuple(ftl._free))


def _empty_closed_blocks(ftl: Ftl) -> int:
    """What idle GC erases, computed directly."""
    empty = np.flatnonzero((ftl.written == ftl.pages_per_block) & (ftl.valid == 0))
    return int(np.count_nonzero((empty != ftl._open) & (empty != ftl._gc_open)))


def _workload(seed: int, gc_policy: GcPolicy, gc_frontier: bool) -> tuple[Ftl, list[int]]:
    """An aged small FTL through small and large, rising and shuffled writes, discards
    and idle GC; returns it and what each idle GC erased."""
    rng = np.random.default_rng(seed)
    ftl = Ftl(4096, pages_per_block=32, gc_policy=gc_policy, gc_frontier=gc_frontier)
    ftl.fill(0.6, rng)
    erased = []
    for _ in range(600):
        n = int(rng.choice([1, 2, 3, 8, 16, 17, 40, 200]))
        start = int(rng.integers(0, ftl.logical_pages - n))
        pages = np.arange(start, start + n, dtype=np.int64)
        if rng.random() < 0.3:
            pages = rng.permutation(pages)  # not rising: the general path
        if rng.random() < 0.1:
            pages = np.concatenate([pages, pages[:1]])  # a page written twice
        if rng.random() < 0.4:
            ftl.discard(pages)
        else:
            ftl.write(pages)
        if rng.random() < 0.5:
            expected = _empty_closed_blocks(ftl) if ftl._idle_work else 0
            erased.append(ftl.erase_invalid_blocks())
            assert erased[-1] == expected
    ftl.check()
    return ftl, erased


@pytest.mark.parametrize("gc_policy", GC_POLICIES)
@pytest.mark.parametrize("gc_frontier", [True, False])
def test_page_by_page_writes_and_discards_leave_the_vectorised_state(
    gc_policy: GcPolicy, gc_frontier: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, fast_erased = _workload(7, gc_policy, gc_frontier)
    monkeypatch.setattr(ftl_module, "FEW_PAGES", 0)  # every write and discard vectorised
    general, general_erased = _workload(7, gc_policy, gc_frontier)
    assert fast_erased == general_erased and sum(fast_erased) > 0
    assert _state(fast) == _state(general)


def test_few_page_writes_and_discards_check_their_pages() -> None:
    ftl = Ftl(4096, pages_per_block=32)
    for bad in ([-1], [0, ftl.logical_pages]):
        with pytest.raises(ValueError, match="logical pages"):
            ftl.write(bad)
        with pytest.raises(ValueError, match="logical pages"):
            ftl.discard(bad)
    assert ftl.host_pages_written == 0 and ftl.write([]).programmed_pages == 0


@pytest.mark.parametrize("gc_policy", GC_POLICIES)
def test_the_single_victim_is_the_first_of_the_ranking(gc_policy: GcPolicy) -> None:
    rng = np.random.default_rng(3)
    ftl = Ftl(4096, pages_per_block=32, gc_policy=gc_policy)
    ftl.fill(0.7, rng)
    for _ in range(300):
        ranking = ftl.victims(3)
        assert ftl.victims(1).tolist() == ranking[:1].tolist()
        ftl.write(rng.integers(0, ftl.logical_pages, 7))
    ftl.discard(np.arange(64))  # whole blocks empty: ties at the best key
    assert ftl.victims(1).tolist() == ftl.victims(4)[:1].tolist()


def _reference_take(used: np.ndarray, cursor: int, n: int) -> tuple[list[int], int]:
    """take_from's rule page by page (arrays shorter than its window): the first free run
    of at least n pages from the cursor to the end, else the next n free pages, wrapping."""
    size = len(used)
    run = 0
    for page in range(cursor, size):
        run = 0 if used[page] else run + 1
        if n > 1 and run == n:
            first = page - n + 1
            return list(range(first, first + n)), (first + n) % size
    order = [p for p in [*range(cursor, size), *range(cursor)] if not used[p]][:n]
    return order, (order[-1] + 1) % size if order else cursor


@settings(max_examples=300, deadline=None)
@given(
    used=st.lists(st.booleans(), min_size=1, max_size=64),
    cursor=st.integers(0, 63),
    n=st.integers(0, 6),
)
def test_allocation_at_the_cursor_is_the_scans_choice(
    used: list[bool], cursor: int, n: int
) -> None:
    assert len(used) < _ALLOC_WINDOW
    cursor %= len(used)
    n = min(n, used.count(False))
    space = FileSpace(np.array(used), np.zeros(len(used), bool), np.zeros(len(used), bool),
                      used.count(False))  # fmt: skip
    expected, after = _reference_take(np.array(used), cursor, n)
    pages, cursor_after = space.take_from(cursor, n)
    assert pages.tolist() == expected and cursor_after == after
    assert pages.dtype == np.int64 and space.free == used.count(False) - n
    assert space.used[pages].all() and int(np.count_nonzero(~space.used)) == space.free


def _aged(
    monkeypatch: pytest.MonkeyPatch, kept: bool, seed: int, goals: bool, fill: float = 0.6
) -> tuple[tuple[object, ...], float]:
    """A phone's storage aged from a file history (cached aging or not): its state, and
    the next draw of the aging generator."""
    if not kept:
        monkeypatch.setattr(file_space, "_AGED", {})
    phone = Phone(make_profile([(2, 1000.0, 1.0)]), 1)
    storage = phone.storage
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 400, 40_000)
    kinds = rng.choice(np.array(["cache", "media", "app"]), len(sizes)) if goals else None
    storage.age(fill, rng, file_pages=sizes, file_goals=kinds)
    fs = storage._space()
    space = (fs.used.tobytes(), fs.untrimmed.tobytes(), fs.freed_since_trim.tobytes(),
             fs.free, fs.cursor, fs.carry_pages, sorted(fs.cursors.items()))  # fmt: skip
    return (_state(storage.ftl), space), float(rng.random())


@pytest.mark.parametrize("goals", [False, True])
def test_a_repeated_aging_gives_the_aged_device_and_generator(
    goals: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_space, "_AGED", {})
    first = _aged(monkeypatch, True, 5, goals)
    assert len(file_space._AGED) == 1
    again = _aged(monkeypatch, True, 5, goals)  # from the kept result
    assert len(file_space._AGED) == 1
    assert again == first == _aged(monkeypatch, False, 5, goals)
    other_seed = _aged(monkeypatch, True, 6, goals)
    other_fill = _aged(monkeypatch, True, 5, goals, fill=0.5)
    assert other_seed[0] != first[0] and other_fill[0] != first[0]


def test_the_kept_aged_devices_are_few_and_independent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_space, "_AGED", {})
    phones = [Phone(make_profile([(2, 1000.0, 1.0)]), 1) for _ in range(2)]
    for phone in phones:
        phone.storage.age(0.6, np.random.default_rng(1))
    phones[0].storage.ftl.write(np.arange(100))  # the copy of one is not the other's
    assert not np.array_equal(phones[0].storage.ftl.l2p, phones[1].storage.ftl.l2p)
    phones[1].storage.ftl.check()
    for seed in range(2, 2 + file_space._AGED_MAX + 2):
        Phone(make_profile([(2, 1000.0, 1.0)]), 1).storage.age(0.6, np.random.default_rng(seed))
    assert len(file_space._AGED) == file_space._AGED_MAX


def test_restore_takes_every_attribute_of_an_ftl() -> None:
    """What a kept aged device is restored from: every attribute, compiled (mypyc lists a
    native class's attributes in ``__mypyc_attrs__``) or interpreted (``vars``)."""
    fresh = Ftl(1 << 14)
    attributes = getattr(Ftl, "__mypyc_attrs__", None) or tuple(vars(fresh))
    assert set(ftl_module._STATE) == set(attributes) - {"__dict__"}
    used = Ftl(1 << 14)
    used.fill(0.6, np.random.default_rng(3))
    used.write(np.arange(500))
    fresh.restore(used)
    assert _state(fresh) == _state(used)
    assert all(
        np.array_equal(getattr(fresh, name), getattr(used, name)) for name in ftl_module._STATE
    )
    fresh.write(np.arange(50))  # independent: the source does not change
    assert _state(fresh) != _state(used)
