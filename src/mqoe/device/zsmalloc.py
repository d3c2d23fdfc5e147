"""A zsmalloc-like pool for compressed pages (the GPU-buffer study's compression).

Linux's zsmalloc (``mm/zsmalloc.c``) stores compressed pages — objects of 1..4096 bytes —
without the waste of a power-of-two allocator. Physical 4 KB pages are chained into
*zspages* of 1..4 pages, and each zspage holds objects of one *size class* only. The
classes are 16 bytes apart (32, 48, …, 4096); for each, ``get_pages_per_zspage`` picks the
chain length that wastes the least of the zspage's tail. An object goes into the smallest
class that holds it, in a free slot of the *fullest* non-full zspage of that class (the
kernel's fullness groups), so holes left by frees are refilled before a new zspage is
taken; a zspage whose last object is freed goes back, pages and all. The pool's
fragmentation — physical bytes held minus bytes stored — comes from the rounding up to a
class, the tail a zspage cannot use, and the holes in partly-empty zspages.

What this model keeps: the class table computed as the kernel computes it, fullest-first
allocation, release of empty zspages, and exact page accounting, so that
:meth:`ZsPool.pages_needed` can tell the memory model how many pages to find *before*
objects are stored. What it simplifies:

* **Fullness is exact.** The kernel sorts zspages into coarse fullness groups (almost
  full / almost empty in older kernels, 10%-wide in-use ratios in newer ones) and takes
  the list head of the fullest group; here the fullest zspage is chosen exactly, ties
  going to the lowest zspage id, which makes runs deterministic by construction.
* **Class merging is opt-in.** ``zs_create_pool`` lets a class share the zspages of the
  next larger one when both have the same pages and objects per zspage (``can_merge``),
  leaving 69 distinct classes of the 255. By default each class keeps its own zspages, as
  the GPU-buffer study describes; ``ZsPool(merge_classes=True)`` does what the kernel does. Merged
  classes share their partly-filled zspages, which matters for small pools: with the
  benchmark's size mix, fragmentation at 20,000 live objects is about 8% unmerged and 4%
  merged (3.5% and 2.5% at 200,000).
* **Slots are counted, not placed.** A zspage is its count of used slots; which slot an
  object occupies, the object headers and the handle encoding do not change memory.
* **No per-CPU caches, no page migration, no separate "huge" class** (from 3280 bytes
  up an object takes a 1-page zspage of its own either way), and at most
  :data:`ZS_MAX_PAGES_PER_ZSPAGE` = 4 pages per zspage (the kernel's value until 6.3
  made the chain length configurable).
* **Compaction only on request.** :meth:`ZsPool.compact` packs each class's objects into
  its fullest zspages as the kernel's ``zs_compact`` does (triggered there by the
  shrinker or zram's ``compact`` attribute); nothing here calls it automatically.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cache
from typing import Final

import numpy as np
import numpy.typing as npt

ZS_PAGE_BYTES: Final = 4096  # PAGE_SIZE on arm64 Android
ZS_SIZE_CLASS_DELTA: Final = 16  # mm/zsmalloc.c: ZS_SIZE_CLASS_DELTA = PAGE_SIZE >> CLASS_BITS
ZS_MIN_ALLOC_SIZE: Final = 32  # mm/zsmalloc.c: ZS_MIN_ALLOC_SIZE on 64-bit kernels
ZS_MAX_PAGES_PER_ZSPAGE: Final = 4  # mm/zsmalloc.c before 6.3 (ZS_MAX_ZSPAGE_ORDER = 2)

_N_CLASSES: Final = (ZS_PAGE_BYTES - ZS_MIN_ALLOC_SIZE) // ZS_SIZE_CLASS_DELTA + 1  # 255
# Heap keys pack (free slots, zspage id) into one int so the min-heap compares ints:
# fewest free slots first (the fullest zspage), then the lowest id.
_FREE_SHIFT: Final = 40
_ID_MASK: Final = (1 << _FREE_SHIFT) - 1
_FREE_ONE: Final = 1 << _FREE_SHIFT
_HEAP_SLACK: Final = 64  # stale heap entries tolerated before a class's heap is rebuilt

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class SizeClass:
    """One zsmalloc size class: the slot size and the zspage shape chosen for it."""

    size_bytes: int  # slot size; holds objects of size_bytes - 15 .. size_bytes bytes
    pages_per_zspage: int  # physical 4 KB pages chained in one zspage (1..4)
    objs_per_zspage: int  # slots in one zspage


def _pages_per_zspage(size_bytes: int) -> int:
    """The chain length (1..4 pages) wasting the least, as ``get_pages_per_zspage``.

    The usage percentage is integer-truncated and the first best wins, exactly as in the
    kernel, so ties go to the shorter chain.
    """
    best_pct, best_pages = 0, 1
    for pages in range(1, ZS_MAX_PAGES_PER_ZSPAGE + 1):
        zspage_bytes = pages * ZS_PAGE_BYTES
        used_pct = (zspage_bytes // size_bytes) * size_bytes * 100 // zspage_bytes
        if used_pct > best_pct:
            best_pct, best_pages = used_pct, pages
    return best_pages


@cache
def size_classes() -> tuple[SizeClass, ...]:
    """The 255 classes (32, 48, …, 4096 bytes) with their zspage shapes."""
    classes = []
    for size in range(ZS_MIN_ALLOC_SIZE, ZS_PAGE_BYTES + 1, ZS_SIZE_CLASS_DELTA):
        pages = _pages_per_zspage(size)
        classes.append(SizeClass(size, pages, pages * ZS_PAGE_BYTES // size))
    return tuple(classes)


@cache
def _merged_classes() -> tuple[int, ...]:
    """For each class, the class whose zspages it uses in the kernel after ``can_merge``.

    ``zs_create_pool`` walks from the largest class down and points a class at the
    previous (larger) one when both have the same pages and objects per zspage.
    """
    table = size_classes()
    target = list(range(len(table)))
    for i in range(len(table) - 2, -1, -1):
        here, bigger = table[i], table[target[i + 1]]
        if (here.pages_per_zspage, here.objs_per_zspage) == (
            bigger.pages_per_zspage,
            bigger.objs_per_zspage,
        ):
            target[i] = target[i + 1]
    return tuple(target)


def class_index(size_bytes: int) -> int:
    """Index in :func:`size_classes` of the smallest class holding ``size_bytes``.

    A pool made with ``merge_classes=True`` may store it in a larger class of the same
    zspage shape.
    """
    if not 1 <= size_bytes <= ZS_PAGE_BYTES:
        raise ValueError(f"zsmalloc object size must be 1..{ZS_PAGE_BYTES} bytes: {size_bytes}")
    return _class_of(max(size_bytes, ZS_MIN_ALLOC_SIZE))


def _class_of(size_bytes: int) -> int:
    # The smallest class >= size: ceil((size - 32) / 16); ZsPool._classes does the same
    # on whole batches.
    return (size_bytes - ZS_MIN_ALLOC_SIZE + ZS_SIZE_CLASS_DELTA - 1) // ZS_SIZE_CLASS_DELTA


class ZsPool:
    """A pool of compressed objects in zspages; handles are ints 1, 2, 3, … never reused.

    Bookkeeping: per handle (numpy, grown geometrically) its zspage, size and liveness;
    per zspage (Python lists, since the hot loops read them one at a time) its used-slot
    count and class — a released zspage has 0 used slots and its id is not reused (16
    bytes per zspage ever opened, which keeps ids unambiguous in the lazy heaps); per
    class a min-heap of its non-full zspages keyed by (free slots, id), with lazy
    invalidation: an entry is current iff its free count still matches the zspage, and a
    class's heap is rebuilt once stale entries outnumber current ones.
    """

    def __init__(self, merge_classes: bool = False) -> None:
        """``merge_classes``: share zspages between classes of the same shape, as the kernel."""
        table = size_classes()
        targets = _merged_classes() if merge_classes else range(len(table))
        self._class_map: IntArray = np.array(targets, dtype=np.int64)
        self._ppz: list[int] = [c.pages_per_zspage for c in table]
        self._objs: list[int] = [c.objs_per_zspage for c in table]
        self._ppz_arr: IntArray = np.array(self._ppz, dtype=np.int64)
        self._objs_arr: IntArray = np.array(self._objs, dtype=np.int64)
        # Per handle; index 0 is never a handle (callers may use 0 as "none").
        self._next_handle = 1
        self._h_zspage: IntArray = np.zeros(1024, dtype=np.int64)
        self._h_size: IntArray = np.zeros(1024, dtype=np.int64)
        self._h_alive: npt.NDArray[np.bool_] = np.zeros(1024, dtype=np.bool_)
        # Per zspage.
        self._used: list[int] = []
        self._zclass: list[int] = []
        # Per class.
        self._heaps: list[list[int]] = [[] for _ in table]
        self._heap_limit: list[int] = [_HEAP_SLACK] * len(table)
        self._c_zspages: IntArray = np.zeros(len(table), dtype=np.int64)
        self._c_objects: IntArray = np.zeros(len(table), dtype=np.int64)
        self._c_free_slots: IntArray = np.zeros(len(table), dtype=np.int64)
        # Totals.
        self._pages = 0
        self._stored_bytes = 0
        self._objects = 0

    # -- levels -------------------------------------------------------------------------
    @property
    def pages(self) -> int:
        """Physical 4 KB pages held by all zspages."""
        return self._pages

    @property
    def stored_bytes(self) -> int:
        """Sum of the live objects' sizes as requested (not rounded up to a class)."""
        return self._stored_bytes

    @property
    def objects(self) -> int:
        """Live objects."""
        return self._objects

    @property
    def fragmentation_bytes(self) -> int:
        """Physical bytes held minus bytes stored: class rounding, zspage tails and holes."""
        return self._pages * ZS_PAGE_BYTES - self._stored_bytes

    def class_stats(self) -> list[dict[str, int]]:
        """One row per class holding any zspage, smallest class first."""
        table = size_classes()
        return [
            {
                "size_bytes": table[c].size_bytes,
                "zspages": int(self._c_zspages[c]),
                "objects": int(self._c_objects[c]),
                "pages": int(self._c_zspages[c]) * table[c].pages_per_zspage,
                "slots_free": int(self._c_free_slots[c]),
            }
            for c in np.flatnonzero(self._c_zspages).tolist()
        ]

    # -- allocation ---------------------------------------------------------------------
    def pages_needed(self, sizes: npt.ArrayLike) -> int:
        """Physical pages that ``alloc(sizes)`` would take now; changes nothing.

        Fullest-first allocation fills every free slot of a class before it opens a new
        zspage, so the count depends only on each class's free slots, not on which
        zspages hold them. The caller obtains these pages from the memory model first.
        """
        counts = np.bincount(self._classes(sizes), minlength=_N_CLASSES)
        return int(self._new_zspages(counts) @ self._ppz_arr)

    def alloc(self, sizes: npt.ArrayLike) -> IntArray:
        """Store objects of the given sizes (1..4096 bytes each) in order; one handle each.

        Raises ValueError, changing nothing, if any size is outside 1..4096.
        """
        s = _as_int_array(sizes, "sizes")
        classes = self._classes(s)
        n = len(s)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        counts = np.bincount(classes, minlength=_N_CLASSES)
        new_zspages = self._new_zspages(counts)
        self._pages += int(new_zspages @ self._ppz_arr)
        self._c_zspages += new_zspages
        self._c_objects += counts
        self._c_free_slots += new_zspages * self._objs_arr - counts
        self._stored_bytes += int(s.sum())
        self._objects += n

        first = self._next_handle
        self._reserve(first + n)
        handles = np.arange(first, first + n, dtype=np.int64)
        self._h_zspage[first : first + n] = self._place(classes.tolist())
        self._h_size[first : first + n] = s
        self._h_alive[first : first + n] = True
        self._next_handle = first + n
        return handles

    def _place(self, classes: list[int]) -> list[int]:
        """Put one object per entry of ``classes`` in a slot; return their zspage ids."""
        used, zclass, heaps, objs = self._used, self._zclass, self._heaps, self._objs
        heappop, heapreplace, heappush = heapq.heappop, heapq.heapreplace, heapq.heappush
        next_zspage = len(used)
        placed = []
        for c in classes:
            heap = heaps[c]
            while heap:
                key = heap[0]
                z = key & _ID_MASK
                free = key >> _FREE_SHIFT
                if used[z] + free == objs[c]:  # a current entry: the fullest zspage
                    used[z] += 1
                    if free == 1:
                        heappop(heap)
                    else:
                        heapreplace(heap, key - _FREE_ONE)
                    break
                heappop(heap)  # stale
            else:  # no free slot in the class: a new zspage
                z = next_zspage
                next_zspage += 1
                used.append(1)
                zclass.append(c)
                if objs[c] > 1:
                    heappush(heap, ((objs[c] - 1) << _FREE_SHIFT) | z)
            placed.append(z)
        return placed

    # -- freeing ------------------------------------------------------------------------
    def free(self, handles: npt.ArrayLike) -> int:
        """Free these objects; return the physical pages released (emptied zspages).

        The whole batch is validated first: an unknown handle, an already-freed one or
        one given twice raises ValueError and leaves the pool unchanged.
        """
        h = self._validate_handles(handles)
        if len(h) == 0:
            return 0
        sizes = self._h_size[h]
        self._h_alive[h] = False
        freed = np.bincount(self._classes(sizes), minlength=_N_CLASSES)
        self._c_objects -= freed
        self._c_free_slots += freed
        self._stored_bytes -= int(sizes.sum())
        self._objects -= len(h)

        released = self._unplace(self._h_zspage[h].tolist())
        if not released:
            return 0
        emptied = np.bincount(np.array(released, dtype=np.int64), minlength=_N_CLASSES)
        self._c_zspages -= emptied
        self._c_free_slots -= emptied * self._objs_arr
        pages = int(emptied @ self._ppz_arr)
        self._pages -= pages
        return pages

    def _unplace(self, zspages: list[int]) -> list[int]:
        """Vacate one slot per entry of ``zspages``; return the classes of emptied ones."""
        used, zclass, heaps, objs = self._used, self._zclass, self._heaps, self._objs
        limits = self._heap_limit
        heappush = heapq.heappush
        released = []
        for z in zspages:
            u = used[z] - 1
            used[z] = u
            c = zclass[z]
            if u == 0:
                released.append(c)
                continue
            heap = heaps[c]
            heappush(heap, ((objs[c] - u) << _FREE_SHIFT) | z)
            if len(heap) > limits[c]:
                self._rebuild_heap(c)
        return released

    def _rebuild_heap(self, c: int) -> None:
        """Drop the stale entries of class ``c``'s heap (amortised: limit doubles)."""
        heap, used, k = self._heaps[c], self._used, self._objs[c]
        current = sorted({key for key in heap if used[key & _ID_MASK] + (key >> _FREE_SHIFT) == k})
        heap[:] = current  # a sorted list is a valid heap
        self._heap_limit[c] = 2 * len(current) + _HEAP_SLACK

    # -- compaction ---------------------------------------------------------------------
    def compact(self) -> int:
        """Pack each class's objects into its fullest zspages; return the pages released.

        As ``zs_compact``: objects migrate from the emptiest zspages into the free slots
        of the fullest until at most one zspage per class is partly filled. Handles stay
        valid (the kernel's handles are indirect for the same reason). Costs a pass over
        every handle ever issued, so call it rarely, as the kernel's shrinker does.
        """
        used = np.array(self._used, dtype=np.int64)
        zclass = np.array(self._zclass, dtype=np.int64)
        live = np.flatnonzero(used)
        open_z = live[used[live] < self._objs_arr[zclass[live]]]  # non-full, ascending id
        moves: list[tuple[int, IntArray, IntArray]] = []  # (class, sources, target slots)
        for c in np.unique(zclass[open_z]).tolist():
            zs = open_z[zclass[open_z] == c]
            zs = zs[np.lexsort((zs, -used[zs]))]  # fullest first, then lowest id
            keep = -(-int(used[zs].sum()) // self._objs[c])
            if keep < len(zs):
                dst, src = zs[:keep], zs[keep:]
                slots = np.repeat(dst, self._objs[c] - used[dst])
                moves.append((c, src, slots[: int(used[src].sum())]))
        if not moves:
            return 0
        is_src = np.zeros(len(used), dtype=np.bool_)
        for _, src, _ in moves:
            is_src[src] = True
        alive = np.flatnonzero(self._h_alive[: self._next_handle])
        moving = alive[is_src[self._h_zspage[alive]]]  # ascending handle
        moving = moving[np.argsort(zclass[self._h_zspage[moving]], kind="stable")]
        targets = np.concatenate([slots for _, _, slots in moves])  # classes ascending
        self._h_zspage[moving] = targets
        used[is_src] = 0
        used += np.bincount(targets, minlength=len(used))
        self._used = used.tolist()
        released = 0
        for c, src, _ in moves:
            self._c_zspages[c] -= len(src)
            self._c_free_slots[c] -= len(src) * self._objs[c]
            released += len(src) * self._ppz[c]
            self._rebuild_heap_from_state(c, zclass, used)
        self._pages -= released
        return released

    def _rebuild_heap_from_state(self, c: int, zclass: IntArray, used: IntArray) -> None:
        k = self._objs[c]
        zs = np.flatnonzero((zclass == c) & (used > 0) & (used < k))
        keys = ((k - used[zs]) << _FREE_SHIFT) | zs
        self._heaps[c] = sorted(keys.tolist())
        self._heap_limit[c] = 2 * len(zs) + _HEAP_SLACK

    # -- invariants ---------------------------------------------------------------------
    def check(self) -> None:
        """Raise AssertionError unless the pool's books agree with its objects."""
        end = self._next_handle
        live = np.flatnonzero(self._h_alive[:end])
        assert not self._h_alive[0], "handle 0 is never issued"
        used = np.array(self._used, dtype=np.int64)
        zclass = np.array(self._zclass, dtype=np.int64)
        # Every live handle sits in one slot of a live zspage, and slot counts match.
        per_zspage = np.bincount(self._h_zspage[live], minlength=len(used))
        assert per_zspage.shape == used.shape, "a handle points past the last zspage"
        assert np.array_equal(per_zspage, used), "slot counts disagree with handles"
        assert (used <= self._objs_arr[zclass]).all(), "a zspage holds more than its slots"
        assert (used >= 0).all()
        # A live handle's class is its size's class.
        sizes = self._h_size[live]
        assert ((sizes >= 1) & (sizes <= ZS_PAGE_BYTES)).all()
        assert np.array_equal(zclass[self._h_zspage[live]], self._classes(sizes))
        # Per-class counters and totals (released zspages have 0 used slots).
        in_use = used > 0
        zspages = np.bincount(zclass[in_use], minlength=_N_CLASSES)
        assert np.array_equal(zspages, self._c_zspages), "zspage counts"
        objects = np.bincount(zclass, weights=used, minlength=_N_CLASSES).astype(np.int64)
        assert np.array_equal(objects, self._c_objects), "object counts"
        assert np.array_equal(zspages * self._objs_arr - objects, self._c_free_slots)
        assert self._pages == int(zspages @ self._ppz_arr), "pages"
        assert self._stored_bytes == int(sizes.sum()), "stored bytes"
        assert self._objects == len(live), "objects"
        # Every non-full live zspage has a current entry in its class's heap.
        open_z = np.flatnonzero(in_use & (used < self._objs_arr[zclass]))
        expected = set(zip(zclass[open_z].tolist(), open_z.tolist(), strict=True))
        current = set()
        for c, heap in enumerate(self._heaps):
            assert all(heap[(i - 1) // 2] <= heap[i] for i in range(1, len(heap))), "heap order"
            k = self._objs[c]
            for key in heap:
                z = key & _ID_MASK
                if used[z] + (key >> _FREE_SHIFT) == k:
                    current.add((c, z))
        assert current == expected, "non-full zspages missing from the class heaps"

    # -- helpers ------------------------------------------------------------------------
    def _classes(self, sizes: npt.ArrayLike) -> IntArray:
        """Index of the class whose zspages hold each size (validated to 1..4096)."""
        s = _as_int_array(sizes, "sizes")
        if len(s) and (int(s.min()) < 1 or int(s.max()) > ZS_PAGE_BYTES):
            raise ValueError("zsmalloc object sizes must be 1..4096 bytes")
        at_least_min = np.maximum(s, ZS_MIN_ALLOC_SIZE)
        own = (at_least_min - ZS_MIN_ALLOC_SIZE + ZS_SIZE_CLASS_DELTA - 1) // ZS_SIZE_CLASS_DELTA
        target: IntArray = self._class_map[own]
        return target

    def _new_zspages(self, counts: IntArray) -> IntArray:
        """Zspages each class must open to take ``counts`` more objects."""
        over = np.maximum(counts - self._c_free_slots, 0)
        zspages: IntArray = -(-over // self._objs_arr)  # ceil division
        return zspages

    def _validate_handles(self, handles: npt.ArrayLike) -> IntArray:
        h = _as_int_array(handles, "handles")
        if len(h) == 0:
            return h
        if int(h.min()) < 1 or int(h.max()) >= self._next_handle:
            raise ValueError("unknown zsmalloc handle")
        if not self._h_alive[h].all():
            raise ValueError("zsmalloc handle already freed")
        # Handles come back mostly in the rising order they were handed out: a rising
        # batch holds no handle twice without sorting it.
        if not (h[1:] > h[:-1]).all() and len(np.unique(h)) != len(h):
            raise ValueError("zsmalloc handle freed twice in one batch")
        return h

    def _reserve(self, capacity: int) -> None:
        """Grow the per-handle arrays geometrically to hold ``capacity`` entries."""
        size = len(self._h_alive)
        if capacity <= size:
            return
        while size < capacity:
            size *= 2
        grow = size - len(self._h_alive)
        self._h_zspage = np.concatenate([self._h_zspage, np.zeros(grow, dtype=np.int64)])
        self._h_size = np.concatenate([self._h_size, np.zeros(grow, dtype=np.int64)])
        self._h_alive = np.concatenate([self._h_alive, np.zeros(grow, dtype=np.bool_)])


def _as_int_array(values: npt.ArrayLike, what: str) -> IntArray:
    """A 1-D int64 view of ``values``; ValueError for other shapes or non-integer data."""
    a = np.asarray(values)
    if a.ndim != 1:
        if a.ndim == 0 or a.size:
            raise ValueError(what + " must be a 1-D array")
        a = a.reshape(0)
    if a.dtype.kind not in "iu":
        if a.size:
            raise ValueError(what + " must be integers")
        a = a.astype(np.int64)
    return a.astype(np.int64, copy=False)
