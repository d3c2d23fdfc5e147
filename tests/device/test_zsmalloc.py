"""The zsmalloc-like pool: class table, fullest-first placement, page accounting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from mqoe.device.zsmalloc import (
    ZS_PAGE_BYTES,
    SizeClass,
    ZsPool,
    class_index,
    size_classes,
)


def sizes(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def snapshot(pool: ZsPool) -> tuple[int, int, int, int, list[dict[str, int]]]:
    return (
        pool.pages,
        pool.stored_bytes,
        pool.objects,
        pool.fragmentation_bytes,
        pool.class_stats(),
    )


# -- the class table --------------------------------------------------------------------
def test_classes_run_from_32_to_4096_bytes_in_16_byte_steps() -> None:
    table = size_classes()
    assert len(table) == 255
    assert [c.size_bytes for c in table] == list(range(32, 4097, 16))


@pytest.mark.parametrize(
    ("size", "pages", "objs"),
    [
        # usage% = (k*4096 // size) * size * 100 // (k*4096), k = 1..4, first best wins.
        (32, 1, 128),  # k=1: 128*32 = 4096 → 100%
        # 48: k=1 85*48=4080 → 99, k=2 170*48=8160 → 99, k=3 256*48=12288 → 100
        (48, 3, 256),
        # 112: k=1 36*112=4032 → 98, k=2 73*112=8176 → 99, k=3,4 → 99 (not better)
        (112, 2, 73),
        # 176: k=1 23 → 98, k=2 46 → 98, k=3 69 → 98, k=4 93*176=16368 → 99
        (176, 4, 93),
        # 3008: k=1 1 → 73, k=2 2 → 73, k=3 4*3008=12032 → 97, k=4 5*3008=15040 → 91
        (3008, 3, 4),
        (3280, 1, 1),  # one object whatever k: every k gives 80%, so k=1
        (4096, 1, 1),  # 100% at k=1
    ],
)
def test_pages_per_zspage_minimises_the_wasted_tail(size: int, pages: int, objs: int) -> None:
    table = size_classes()
    assert table[(size - 32) // 16] == SizeClass(size, pages, objs)


def test_objs_per_zspage_fill_the_zspage_without_overflowing_it() -> None:
    for c in size_classes():
        zspage_bytes = c.pages_per_zspage * ZS_PAGE_BYTES
        assert c.objs_per_zspage * c.size_bytes <= zspage_bytes
        assert (c.objs_per_zspage + 1) * c.size_bytes > zspage_bytes


@pytest.mark.parametrize(
    ("size", "class_bytes"), [(1, 32), (26, 32), (32, 32), (33, 48), (48, 48), (4096, 4096)]
)
def test_an_object_goes_into_the_smallest_class_that_holds_it(size: int, class_bytes: int) -> None:
    assert size_classes()[class_index(size)].size_bytes == class_bytes


@pytest.mark.parametrize("size", [0, -1, 4097])
def test_class_index_rejects_sizes_outside_1_to_4096(size: int) -> None:
    with pytest.raises(ValueError):
        class_index(size)


def test_merged_classes_share_zspages_of_the_same_shape() -> None:
    # 1008 B and 1024 B classes both hold 4 objects in 1 page (1008: every k gives 98%),
    # so the kernel's can_merge lets the 1008 class use the 1024 class's zspages.
    plain, merged = ZsPool(), ZsPool(merge_classes=True)
    for pool in (plain, merged):
        pool.alloc(sizes(1000, 1024, 3500, 4096))
        pool.check()
    assert [r["size_bytes"] for r in plain.class_stats()] == [1008, 1024, 3504, 4096]
    assert plain.pages == 1 + 1 + 1 + 1
    # 3504 and 4096 are both 1 page, 1 object: merged too, with nothing to share.
    assert merged.class_stats() == [
        {"size_bytes": 1024, "zspages": 1, "objects": 2, "pages": 1, "slots_free": 2},
        {"size_bytes": 4096, "zspages": 2, "objects": 2, "pages": 2, "slots_free": 0},
    ]
    assert merged.pages == 3


# -- placement --------------------------------------------------------------------------
def test_objects_share_a_zspage_until_it_is_full() -> None:
    pool = ZsPool()  # 100 B → class 112: 2 pages, 73 objects per zspage
    pool.alloc(sizes(100))
    assert pool.pages == 2
    assert pool.fragmentation_bytes == 2 * 4096 - 100
    pool.alloc(sizes(100))
    assert pool.pages == 2
    pool.alloc(np.full(71, 100))
    assert pool.pages == 2 and pool.objects == 73
    pool.alloc(sizes(100))
    assert pool.pages == 4
    assert pool.class_stats() == [
        {"size_bytes": 112, "zspages": 2, "objects": 74, "pages": 4, "slots_free": 72}
    ]
    pool.check()


def test_classes_keep_separate_zspages() -> None:
    pool = ZsPool()
    handles = pool.alloc(sizes(26, 100, 26, 4096, 4096))
    assert handles.tolist() == [1, 2, 3, 4, 5]
    assert pool.pages == 1 + 2 + 2  # class 32, class 112, two 4096 zspages
    assert [row["size_bytes"] for row in pool.class_stats()] == [32, 112, 4096]
    assert pool.stored_bytes == 26 + 100 + 26 + 4096 + 4096


def two_full_zspages_of_class_32(pool: ZsPool) -> tuple[np.ndarray, np.ndarray]:
    """Zspage A (created first) then zspage B, 128 objects of 32 B each."""
    a = pool.alloc(np.full(128, 32))
    b = pool.alloc(np.full(128, 32))
    assert pool.pages == 2
    return a, b


def test_a_new_object_takes_a_slot_in_the_fullest_zspage() -> None:
    pool = ZsPool()
    a, b = two_full_zspages_of_class_32(pool)
    pool.free(a[:10])  # A: 118 used
    pool.free(b[:5])  # B: 123 used, the fuller
    pool.alloc(np.full(5, 32))  # B's holes first…
    assert pool.free(a[10:]) == 1  # …so A empties: nothing new went there
    assert pool.free(b[5:]) == 0  # B still holds the 5 new objects
    pool.check()


def test_a_new_object_fills_the_older_of_two_equally_full_zspages() -> None:
    pool = ZsPool()
    a, b = two_full_zspages_of_class_32(pool)
    pool.free(b[:5])
    pool.free(a[:5])  # both 123 used: the tie goes to A, the lower zspage id
    (new,) = pool.alloc(sizes(32))
    assert pool.free(b[5:]) == 1
    assert pool.free(a[5:]) == 0
    assert pool.free(np.array([new])) == 1


def test_a_class_with_free_slots_takes_no_new_pages() -> None:
    pool = ZsPool()
    a, _ = two_full_zspages_of_class_32(pool)
    pool.free(a[:3])
    assert pool.pages_needed(np.full(3, 26)) == 0
    assert pool.pages_needed(np.full(4, 26)) == 1
    assert pool.pages_needed(sizes(4096, 3000, 3000, 3000, 3000, 3000)) == 1 + 2 * 3


def test_the_fullest_zspage_is_still_chosen_after_many_single_frees() -> None:
    # Each free pushes a heap entry; >64 stale entries make the class's heap be rebuilt.
    pool = ZsPool()
    a, b = two_full_zspages_of_class_32(pool)
    c = pool.alloc(np.full(128, 32))
    for h in [b[0], *a[:50], *c[:60]]:  # B: 127 used, A: 78, C: 68
        pool.free(np.array([h]))
    pool.check()
    pool.alloc(sizes(32))
    assert pool.free(b[1:]) == 0  # B took the new object
    assert pool.free(a[50:]) == 1
    assert pool.free(c[60:]) == 1


# -- freeing ----------------------------------------------------------------------------
def test_free_returns_the_pages_of_the_zspages_it_empties() -> None:
    pool = ZsPool()
    h = pool.alloc(sizes(3000, 3000, 3000, 3000, 3000, 4096))  # 2 zspages of 3 pages + 1
    assert pool.pages == 3 + 3 + 1
    assert pool.free(h[[0, 1, 2]]) == 0  # the first zspage still holds h[3]
    assert pool.free(h[[3, 5]]) == 3 + 1
    assert pool.free(h[[4]]) == 3
    assert snapshot(pool) == (0, 0, 0, 0, [])
    pool.check()


@pytest.mark.parametrize("bad", [[0], [99], [-1], [1, 1], [2, 4, 2], [2, 3]])
def test_a_bad_free_raises_and_changes_nothing(bad: list[int]) -> None:
    pool = ZsPool()
    pool.alloc(sizes(100, 200, 4096, 26))  # classes 112 (2 pages), 208 (2), 4096, 32
    pool.free(np.array([3]))
    before = snapshot(pool)
    with pytest.raises(ValueError):
        pool.free(np.array(bad))  # [2, 3]: 2 is live but 3 was freed: all or nothing
    assert snapshot(pool) == before
    pool.check()
    assert pool.free(np.array([1, 2, 4])) == 2 + 2 + 1


@pytest.mark.parametrize("bad", [[0], [4097], [100, -5], [[1, 2]]])
def test_a_bad_size_raises_and_stores_nothing(bad: list[int]) -> None:
    pool = ZsPool()
    pool.alloc(sizes(100))
    before = snapshot(pool)
    with pytest.raises(ValueError):
        pool.alloc(np.array(bad))
    with pytest.raises(ValueError):
        pool.pages_needed(np.array(bad))
    assert snapshot(pool) == before
    assert pool.alloc(sizes(5)).tolist() == [2]  # no handle was consumed


def test_empty_batches_are_no_ops() -> None:
    pool = ZsPool()
    assert pool.alloc(np.array([], dtype=np.int64)).shape == (0,)
    assert pool.pages_needed(np.array([], dtype=np.int64)) == 0
    assert pool.free(np.array([], dtype=np.int64)) == 0
    assert snapshot(pool) == (0, 0, 0, 0, [])


# -- compaction -------------------------------------------------------------------------
def test_compact_packs_a_class_into_its_fullest_zspages() -> None:
    pool = ZsPool()
    a, b = two_full_zspages_of_class_32(pool)
    c = pool.alloc(np.full(128, 32))
    pool.free(a[:100])  # A: 28 used
    pool.free(b[:28])  # B: 100 used
    pool.free(c[:8])  # C: 120 used → 248 objects need 2 zspages: C and B stay
    assert pool.compact() == 1
    assert pool.pages == 2
    pool.check()
    assert pool.compact() == 0
    # A's 28 objects moved, the fewest possible: 8 filled C, 20 went into B. Handles
    # stay valid, and freeing A's and B's objects now empties B alone.
    assert pool.free(np.concatenate([a[100:], b[28:]])) == 1
    assert pool.free(c[8:]) == 1


# -- properties -------------------------------------------------------------------------
# Sizes that exercise full and non-full zspages quickly (few objects per zspage), the
# class of LZ4's ~26-byte zero page and arbitrary ones.
SIZES = st.one_of(st.sampled_from([26, 100, 1000, 2000, 3000, 3264, 4096]), st.integers(1, 4096))
BATCH = st.lists(SIZES, min_size=0, max_size=12)


class RefPool:
    """A slow, obviously-correct zsmalloc: scan for the fullest zspage per object."""

    def __init__(self, merge: bool) -> None:
        self.merge = merge
        self.zspages: list[list[int]] = []  # [class, used]
        self.home: dict[int, int] = {}  # handle → zspage

    def class_of(self, size: int) -> int:
        table = size_classes()
        c = class_index(size)
        shape = (table[c].pages_per_zspage, table[c].objs_per_zspage)
        while self.merge and c + 1 < len(table):  # climb while the next has the same shape
            if (table[c + 1].pages_per_zspage, table[c + 1].objs_per_zspage) != shape:
                break
            c += 1
        return c

    def alloc(self, batch: list[int], handles: list[int]) -> None:
        table = size_classes()
        for size, handle in zip(batch, handles, strict=True):
            c = self.class_of(size)
            k = table[c].objs_per_zspage
            open_ = [i for i, (cc, u) in enumerate(self.zspages) if cc == c and 0 < u < k]
            if open_:
                z = max(open_, key=lambda i: (self.zspages[i][1], -i))
            else:
                z = len(self.zspages)
                self.zspages.append([c, 0])
            self.zspages[z][1] += 1
            self.home[handle] = z

    def free(self, handles: list[int]) -> None:
        for handle in handles:
            self.zspages[self.home.pop(handle)][1] -= 1

    @property
    def pages(self) -> int:
        table = size_classes()
        return sum(table[c].pages_per_zspage for c, used in self.zspages if used)


class PoolMachine(RuleBasedStateMachine):
    """Random interleavings of alloc and free batches against the reference pool."""

    @initialize(merge=st.booleans())
    def start(self, merge: bool) -> None:
        self.pool = ZsPool(merge_classes=merge)
        self.ref = RefPool(merge)
        self.live: dict[int, int] = {}  # handle → size
        self.allocated_bytes = 0
        self.freed_bytes = 0

    @rule(batch=BATCH)
    def alloc(self, batch: list[int]) -> None:
        need = self.pool.pages_needed(np.array(batch, dtype=np.int64))
        before = self.pool.pages
        handles = self.pool.alloc(np.array(batch, dtype=np.int64)).tolist()
        assert self.pool.pages - before == need
        assert len(set(handles) | set(self.live)) == len(handles) + len(self.live)
        self.live.update(zip(handles, batch, strict=True))
        self.ref.alloc(batch, handles)
        self.allocated_bytes += sum(batch)

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def free(self, data: st.DataObject) -> None:
        handles = data.draw(st.lists(st.sampled_from(sorted(self.live)), unique=True))
        before = self.pool.pages
        released = self.pool.free(np.array(handles, dtype=np.int64))
        assert before - self.pool.pages == released
        for h in handles:
            self.freed_bytes += self.live.pop(h)
        self.ref.free(handles)

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def double_free_is_refused(self, data: st.DataObject) -> None:
        live = data.draw(st.sampled_from(sorted(self.live)))
        before = snapshot(self.pool)
        with pytest.raises(ValueError):
            self.pool.free(np.array([live, live]))
        assert snapshot(self.pool) == before

    @invariant()
    def books_agree(self) -> None:
        pool = self.pool
        pool.check()
        assert pool.pages == self.ref.pages
        assert pool.objects == len(self.live)
        assert pool.stored_bytes == self.allocated_bytes - self.freed_bytes
        assert pool.stored_bytes == sum(self.live.values())
        assert pool.pages * ZS_PAGE_BYTES >= pool.stored_bytes
        assert pool.fragmentation_bytes == pool.pages * ZS_PAGE_BYTES - pool.stored_bytes


PoolMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)
TestPoolMachine = PoolMachine.TestCase


def some_of(handles: np.ndarray) -> st.SearchStrategy[list[int]]:
    if len(handles) == 0:
        return st.just([])
    return st.lists(st.sampled_from(handles.tolist()), unique=True)


@settings(max_examples=60, deadline=None)
@given(prior=st.lists(BATCH, max_size=6), frees=st.data(), batch=BATCH, merge=st.booleans())
def test_pages_needed_is_what_alloc_then_takes(
    prior: list[list[int]], frees: st.DataObject, batch: list[int], merge: bool
) -> None:
    pool = ZsPool(merge_classes=merge)
    handles = np.concatenate([pool.alloc(np.array(b, dtype=np.int64)) for b in [[], *prior]])
    drop = frees.draw(some_of(handles))
    pool.free(np.array(drop, dtype=np.int64))
    before = snapshot(pool)
    need = pool.pages_needed(np.array(batch, dtype=np.int64))
    assert snapshot(pool) == before
    pool.alloc(np.array(batch, dtype=np.int64))
    assert pool.pages - before[0] == need


@settings(max_examples=40, deadline=None)
@given(prior=st.lists(BATCH, max_size=8), data=st.data(), merge=st.booleans())
def test_compact_leaves_at_most_one_open_zspage_per_class(
    prior: list[list[int]], data: st.DataObject, merge: bool
) -> None:
    pool = ZsPool(merge_classes=merge)
    handles = np.concatenate([pool.alloc(np.array(b, dtype=np.int64)) for b in [[], *prior]])
    drop = data.draw(some_of(handles))
    pool.free(np.array(drop, dtype=np.int64))
    before = pool.pages
    released = pool.compact()
    pool.check()
    assert before - pool.pages == released
    table = {c.size_bytes: c for c in size_classes()}
    for row in pool.class_stats():
        c = table[row["size_bytes"]]
        assert row["zspages"] == -(-row["objects"] // c.objs_per_zspage)
    held = pool.pages
    assert pool.free(np.setdiff1d(handles, drop)) == held  # every handle still frees
    assert pool.pages == 0


def run_script(seed: int, merge: bool) -> tuple[list[list[int]], list[dict[str, int]], int]:
    rng = np.random.default_rng(seed)
    pool = ZsPool(merge_classes=merge)
    live = np.empty(0, dtype=np.int64)
    issued = []
    for _ in range(40):
        handles = pool.alloc(rng.integers(1, 4097, 64))
        issued.append(handles.tolist())
        live = np.concatenate([live, handles])
        rng.shuffle(live)
        pool.free(live[:40])
        live = live[40:]
    return issued, pool.class_stats(), pool.pages


@pytest.mark.parametrize("merge", [False, True])
def test_the_same_calls_give_the_same_handles_and_state(merge: bool) -> None:
    assert run_script(7, merge) == run_script(7, merge)
    assert run_script(7, merge) != run_script(8, merge)
