"""The flash translation layer (FTL): page-mapped NAND flash with garbage collection.

Flash programs pages but erases whole blocks (128–256 pages per block), and a
programmed page cannot be rewritten in place. So the FTL writes append-only into an
open block (the *write frontier*) and keeps a logical→physical page map; overwriting a
logical page only marks its old physical copy invalid. When free blocks fall to a
low-water mark, garbage collection picks a closed block by its policy (``cost-benefit``,
the default, or ``greedy``: :meth:`Ftl.victims`), copies its valid pages to a frontier
of its own and erases it. Each copy is a page
program the host did not ask for: **write amplification**, WA = flash pages programmed
/ host pages written (≥ 1). It grows with how full the flash is and with how scattered
the invalid pages are. A discard (TRIM) tells the FTL that the file system no longer
uses some logical pages: they become invalid at once, so GC does not copy them.

Two frontiers: the host's writes and GC's copies go to different open blocks, as flash
controllers keep separate active blocks for host data and for relocated data (Chiang,
Lee and Chang, "Using data clustering to improve cleaning performance for flash memory",
Software: Practice and Experience 29(3), 1999; Desnoyers, "Analytic modeling of SSD
write performance", SYSTOR 2012). Data GC copies has survived at least one collection
and is mostly long-lived; new host data is mostly short-lived (app caches, downloads).
Mixed in one block, the short-lived data's deaths leave the block half valid and GC
copies the long-lived rest again and again; kept apart, the host's blocks empty out as
their files are deleted — what discards are for. ``gc_frontier=False`` gives the single
frontier (for comparison).

Over-provisioning: the host sees ``logical_pages`` = (1 − over_provisioning) × the
physical pages; the spare blocks (7% by default, the GB-vs-GiB gap of consumer flash)
guarantee that GC always finds a block with an invalid page.

Pages here are 4 KB units (the file system's block). A model FTL can stand for a larger
device: :class:`mqoe.device.storage.Storage` maps a phone's flash onto a model of
``capacity_pages`` (a uniform sample of its logical pages, one model page per
``scale`` real ones) and multiplies the GC work by ``scale``; WA depends on utilisation,
block size and fragmentation, not on the number of blocks, so the sample behaves like
the whole device.

Pure model: no engine, no time. Every write is processed in segments that fit the open
block, invalidating a segment's old copies just before programming it; since GC only
runs when a new block is opened, this is exactly the page-by-page semantics, vectorised
(a few pages, :data:`FEW_PAGES`, go page by page: the same state, without numpy's cost
per call on tiny arrays).
"""

from __future__ import annotations

import copy
import itertools
from collections import deque
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

PAGE_BYTES: Final = 4096
DEFAULT_CAPACITY_PAGES: Final = 1 << 18  # 1 GiB of 4 KB pages: a sample of the phone's flash
DEFAULT_PAGES_PER_BLOCK: Final = 256  # responsiveness study: 128–256 pages per erase block
DEFAULT_OVER_PROVISIONING: Final = 0.07  # assumed: 7% spare (GB sold vs GiB of NAND)

# Writes and discards of at most this many pages go page by page (same state, faster).
FEW_PAGES: Final = 16

LpnArray = npt.NDArray[np.int64]
GcPolicy = Literal["greedy", "cost-benefit"]
GC_POLICIES: Final[tuple[GcPolicy, ...]] = ("greedy", "cost-benefit")


@dataclass(frozen=True, slots=True)
class FlashCost:
    """What one host write or GC pass cost the flash (pages of 4 KB, blocks erased)."""

    programmed_pages: int  # host pages + GC copies
    gc_copies: int  # valid pages GC moved (each a page read + program)
    erases: int


# Every attribute of an Ftl (what restore copies; a test checks none is missing).
_STATE: Final = ("pages_per_block", "blocks", "physical_pages", "logical_pages", "gc_low_blocks",
          "l2p", "p2l", "valid", "written", "erase_counts", "gc_policy", "clock", "modified",
          "_free", "_open", "gc_frontier", "_gc_open", "_idle_work", "host_pages_written",
          "programmed_pages", "gc_copies", "erases", "idle_erases", "discarded_pages")  # fmt: skip


class Ftl:
    """A page-mapped FTL over ``capacity_pages`` physical 4 KB pages.

    Public read-only state: ``l2p`` (logical → physical page, −1 unmapped), ``p2l``
    (physical → logical page, −1 if the page is free or invalid), ``valid`` and
    ``written`` per block (valid pages; programmed pages = the block's write pointer),
    ``erase_counts`` per block. Counters: ``host_pages_written``, ``programmed_pages``,
    ``gc_copies``, ``erases`` (``idle_erases`` of them by :meth:`erase_invalid_blocks`),
    ``discarded_pages``.
    """

    def __init__(
        self,
        capacity_pages: int = DEFAULT_CAPACITY_PAGES,
        pages_per_block: int = DEFAULT_PAGES_PER_BLOCK,
        over_provisioning: float = DEFAULT_OVER_PROVISIONING,
        gc_low_blocks: int | None = None,
        gc_policy: GcPolicy = "cost-benefit",
        gc_frontier: bool = True,
    ) -> None:
        if gc_policy not in GC_POLICIES:
            choices = ", ".join(GC_POLICIES)
            raise ValueError(f"gc_policy must be one of {choices}, got {gc_policy!r}")
        if pages_per_block < 2:
            raise ValueError(f"pages_per_block must be at least 2, got {pages_per_block}")
        if not 0.0 < over_provisioning < 1.0:
            raise ValueError(f"over_provisioning must be in (0, 1), got {over_provisioning}")
        blocks = capacity_pages // pages_per_block
        # GC starts when free blocks fall to this many (assumed: ~1.5% of the blocks,
        # at least 2 so GC's own copies always find a block to go to).
        low = max(2, blocks // 64) if gc_low_blocks is None else gc_low_blocks
        if low < 2:
            raise ValueError(f"gc_low_blocks must be at least 2, got {low}")
        physical = blocks * pages_per_block
        logical = int(physical * (1.0 - over_provisioning))
        # Greedy GC makes progress only if the closed blocks cannot all be fully valid.
        if logical < 1 or logical > (blocks - low - 2) * pages_per_block:
            raise ValueError(
                f"{blocks} blocks with {low} reserved for GC leave no room for "
                f"{over_provisioning:.0%} over-provisioning; use more capacity or spare"
            )
        self.pages_per_block = pages_per_block
        self.blocks = blocks
        self.physical_pages = physical
        self.logical_pages = logical
        self.gc_low_blocks = low
        self.l2p = np.full(logical, -1, dtype=np.int32)
        self.p2l = np.full(physical, -1, dtype=np.int32)
        self.valid = np.zeros(blocks, dtype=np.int32)
        self.written = np.zeros(blocks, dtype=np.int32)
        self.erase_counts = np.zeros(blocks, dtype=np.int32)
        self.gc_policy: GcPolicy = gc_policy
        # Logical time (host pages written) and, per block, when it last changed: opened,
        # or one of its pages invalidated (cost-benefit GC's age).
        self.clock = 0
        self.modified = np.zeros(blocks, dtype=np.int64)
        self._free: deque[int] = deque(range(1, blocks))  # erased blocks, oldest first
        self._open = 0
        # GC's copies go to a block of their own (-1: none open yet), not the host's.
        self.gc_frontier = gc_frontier
        self._gc_open = -1
        # Whether a block may have become closed and empty since the last idle erase
        # (only an invalidation or the open block's closing can make one).
        self._idle_work = False
        self.host_pages_written = 0
        self.programmed_pages = 0
        self.gc_copies = 0
        self.erases = 0
        self.idle_erases = 0  # of which erase_invalid_blocks (idle time, no copies)
        self.discarded_pages = 0

    # -- the host interface -------------------------------------------------------------
    def write(self, lpns: npt.ArrayLike) -> FlashCost:
        """Write logical pages in order; returns what it cost the flash (incl. GC)."""
        pages = np.asarray(lpns, dtype=np.int64).reshape(-1)
        # A few distinct pages in rising order (a small file's) are programmed one by one
        # with Python ints: numpy's calls on tiny arrays cost more than the work.
        few = self._few(pages)
        if few is None:
            pages = self._lpns(pages)
        elif not all(a < b for a, b in itertools.pairwise(few)):
            few = None
        before = (self.programmed_pages, self.gc_copies, self.erases)
        ppb = self.pages_per_block
        n = len(pages)
        i = 0
        while i < n:
            self._ensure_room(collect=True)
            k = min(ppb - int(self.written[self._open]), n - i)
            if few is not None:
                self._program_few(few[i : i + k])
            else:
                self._program_host(pages[i : i + k])
            self.clock += k
            i += k
        self.host_pages_written += n
        return FlashCost(
            self.programmed_pages - before[0], self.gc_copies - before[1], self.erases - before[2]
        )

    def discard(self, lpns: npt.ArrayLike) -> int:
        """TRIM: the logical pages hold nothing any more; returns the pages invalidated."""
        few = self._few(np.asarray(lpns, dtype=np.int64).reshape(-1))
        if few is not None:
            return self._discard_few(few)
        pages = np.unique(self._lpns(lpns))
        old = self.l2p[pages]
        mapped = old >= 0
        old = old[mapped]
        self._invalidate(old)
        self.l2p[pages[mapped]] = -1
        self.discarded_pages += len(old)
        return len(old)

    def fill(
        self,
        fraction: float,
        rng: np.random.Generator,
        fragmented: bool = True,
        drive_writes: float = 2.0,
        data: npt.ArrayLike | None = None,
    ) -> None:
        """Age a fresh device: ``fraction`` of the logical pages end up holding data.

        Not fragmented: the data was written once, in order (full blocks, free ones
        behind). Fragmented — a phone after months of use without discards: the data is a
        random subset of the logical space, then random overwrites of it until the flash
        has been written ``drive_writes`` times over (assumed default 2: enough for
        greedy GC to reach its steady state), scattering invalid pages over the blocks.
        The counters are reset afterwards, so they describe what happens after aging.
        ``data`` names the logical pages that hold data (in the order first written)
        instead of ``fraction`` of them drawn at random.
        """
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], got {fraction}")
        if self.written.any() or self.erase_counts.any():
            raise ValueError("fill ages a fresh FTL; this one has been written already")
        if data is not None:
            pages = self._lpns(data)
            n = len(pages)
        else:
            n = round(fraction * self.logical_pages)
            if fragmented:
                pages = rng.permutation(self.logical_pages)[:n].astype(np.int64)
            else:
                pages = np.arange(n, dtype=np.int64)
        if n:
            self.write(pages)
        if fragmented and n:
            overwrites = max(0, round(drive_writes * self.physical_pages) - n)
            self.write(pages[rng.integers(0, n, overwrites)])
        self.reset_counters()

    def erase_invalid_blocks(self) -> int:
        """Background GC while the device is idle (eMMC BKOPS, UFS idle-time GC): erase
        the closed blocks that hold no valid page — no copies, just erases, so later
        writes find erased blocks instead of paying GC. Returns the blocks erased.

        Only a discard or an overwrite can empty a block, so this is how real-time
        discards give "fresh blocks" (the responsiveness study) and untrimmed deletes do not."""
        if not self._idle_work:
            return 0
        self._idle_work = False
        # A cheaper test first: count the blocks without a valid page that are neither
        # free (a free block holds none) nor a frontier; if none, none is closed and empty.
        valid = self.valid
        others = np.count_nonzero(valid == 0) - len(self._free) - int(valid[self._open] == 0)
        gc_open = self._gc_open
        if gc_open >= 0 and gc_open != self._open and valid[gc_open] == 0:
            others -= 1
        if others <= 0:
            return 0
        ppb = self.pages_per_block
        empty = np.flatnonzero((self.written == ppb) & (self.valid == 0))
        empty = empty[(empty != self._open) & (empty != self._gc_open)]
        if len(empty):
            self.written[empty] = 0
            self.erase_counts[empty] += 1
            self.erases += len(empty)
            self.idle_erases += len(empty)
            self._free.extend(empty.tolist())
        return len(empty)

    def copy(self) -> Ftl:
        """An independent copy (to benchmark a device without changing it)."""
        return copy.deepcopy(self)

    def restore(self, other: Ftl) -> None:
        """Take ``other``'s whole state (a copy of it: the two stay independent)."""
        for name in _STATE:
            setattr(self, name, copy.deepcopy(getattr(other, name)))

    def reset_counters(self) -> None:
        self.host_pages_written = 0
        self.programmed_pages = 0
        self.gc_copies = 0
        self.erases = 0
        self.idle_erases = 0
        self.discarded_pages = 0

    # -- derived state ------------------------------------------------------------------
    @property
    def write_amplification(self) -> float:
        """Flash pages programmed per host page written since the last reset (1 if none)."""
        if not self.host_pages_written:
            return 1.0
        return self.programmed_pages / self.host_pages_written

    @property
    def valid_pages(self) -> int:
        return int(self.valid.sum())

    @property
    def invalid_pages(self) -> int:
        return int(self.written.sum()) - self.valid_pages

    @property
    def free_pages(self) -> int:
        """Erased pages (free blocks and the open block's unwritten tail)."""
        return self.physical_pages - int(self.written.sum())

    @property
    def free_blocks(self) -> int:
        return len(self._free)

    @property
    def mapped_pages(self) -> int:
        return int(np.count_nonzero(self.l2p >= 0))

    def check(self) -> None:
        """Raise RuntimeError if the maps and counts disagree (for tests and debugging)."""
        ppb = self.pages_per_block
        page = np.arange(self.physical_pages)
        block = page // ppb
        programmed = (page % ppb) < self.written[block]
        valid = self.p2l >= 0
        problems = []
        if np.any(valid & ~programmed):
            problems.append("a valid page lies beyond its block's write pointer")
        if not np.array_equal(np.bincount(block[valid], minlength=self.blocks), self.valid):
            problems.append("per-block valid counts disagree with the reverse map")
        mapped = np.flatnonzero(self.l2p >= 0)
        if not np.array_equal(self.p2l[self.l2p[mapped]], mapped):
            problems.append("a mapped logical page does not own its physical page")
        if len(mapped) != int(valid.sum()):
            problems.append("valid physical pages are not exactly the mapped logical ones")
        free = np.fromiter(self._free, dtype=np.int64, count=len(self._free))
        if len(set(self._free)) != len(free) or {self._open, self._gc_open} & set(self._free):
            problems.append("the free-block list repeats a block or holds the open one")
        if np.any(self.written[free] != 0):
            problems.append("a free block has programmed pages")
        if problems:
            raise RuntimeError("; ".join(problems))

    # -- internals ----------------------------------------------------------------------
    def _lpns(self, lpns: npt.ArrayLike) -> LpnArray:
        pages = np.asarray(lpns, dtype=np.int64).reshape(-1)
        # One pass: a negative page, read as unsigned, is beyond any bound too.
        if len(pages) and pages.view(np.uint64).max() >= self.logical_pages:
            raise ValueError(f"logical pages must be in [0, {self.logical_pages})")
        return pages

    def _few(self, pages: LpnArray) -> list[int] | None:
        """``pages`` as Python ints if there are at most :data:`FEW_PAGES` (checked as
        :meth:`_lpns` checks them), else None."""
        if len(pages) > FEW_PAGES:
            return None
        few: list[int] = pages.tolist()
        if few and (min(few) < 0 or max(few) >= self.logical_pages):
            raise ValueError(f"logical pages must be in [0, {self.logical_pages})")
        return few

    def _invalidate(self, ppns: npt.NDArray[np.int32]) -> None:
        """Old copies become invalid (``ppns`` distinct and currently valid)."""
        if len(ppns):
            self.p2l[ppns] = -1
            blocks = ppns // self.pages_per_block
            self.valid -= np.bincount(blocks, minlength=self.blocks).astype(np.int32)
            self.modified[blocks] = self.clock
            self._idle_work = True

    def _program_few(self, seg: list[int]) -> None:
        """:meth:`_program_host` of a segment of distinct pages, page by page (the same
        state: no page's old copy can be one programmed here)."""
        l2p, p2l, valid, modified = self.l2p, self.p2l, self.valid, self.modified
        ppb, clock = self.pages_per_block, self.clock
        block = self._open
        base = block * ppb + int(self.written[block])
        for ppn, lpn in enumerate(seg, base):
            old = int(l2p[lpn])
            if old >= 0:  # as _invalidate
                p2l[old] = -1
                valid[old // ppb] -= 1
                modified[old // ppb] = clock
                self._idle_work = True
            p2l[ppn] = lpn
            l2p[lpn] = ppn
        k = len(seg)
        valid[block] += k
        self.written[block] += k
        self.programmed_pages += k

    def _discard_few(self, lpns: list[int]) -> int:
        """:meth:`discard` of a few (checked) pages, page by page."""
        l2p, p2l, valid, modified = self.l2p, self.p2l, self.valid, self.modified
        ppb, clock = self.pages_per_block, self.clock
        count = 0
        for lpn in set(lpns):
            old = int(l2p[lpn])
            if old >= 0:  # as _invalidate
                p2l[old] = -1
                valid[old // ppb] -= 1
                modified[old // ppb] = clock
                l2p[lpn] = -1
                count += 1
        if count:
            self._idle_work = True
        self.discarded_pages += count
        return count

    def _program_host(self, seg: LpnArray) -> None:
        """Program a segment that fits the open block; a page written twice in it leaves
        its first copy invalid, as writing page by page would."""
        k = len(seg)
        last: npt.NDArray[np.bool_] | None = None
        if k > 1 and not (seg[1:] > seg[:-1]).all():  # (a rising run repeats nothing)
            _, first_rev = np.unique(seg[::-1], return_index=True)
            if len(first_rev) < k:
                last = np.zeros(k, dtype=np.bool_)
                last[k - 1 - first_rev] = True
        live = seg if last is None else seg[last]
        old = self.l2p[live]
        self._invalidate(old[old >= 0])
        base = self._open * self.pages_per_block + int(self.written[self._open])
        ppns = np.arange(base, base + k, dtype=np.int32)
        self.p2l[ppns] = seg
        if last is not None:
            self.p2l[ppns[~last]] = -1
            ppns = ppns[last]
        self.l2p[live] = ppns
        self.valid[self._open] += len(live)
        self.written[self._open] += k
        self.programmed_pages += k

    def _ensure_room(self, collect: bool) -> None:
        """Make the open block writable: GC first if free blocks are at the low-water
        mark (host writes only; GC's own copies just take the next free block)."""
        if self.written[self._open] < self.pages_per_block:
            return
        if collect:
            while len(self._free) <= self.gc_low_blocks:
                self._collect()
            if self.written[self._open] < self.pages_per_block:
                return  # GC left room in a block it opened
        self._open = self._free.popleft()
        self.modified[self._open] = self.clock
        self._idle_work = True  # the block it closed may hold no valid page

    def victims(self, k: int) -> npt.NDArray[np.int64]:
        """The next ``k`` blocks GC would collect in the current state, best first
        (fewer if fewer closed blocks hold an invalid page).

        ``greedy``: the fewest valid pages. ``cost-benefit`` (Rosenblum and Ousterhout,
        "The Design and Implementation of a Log-Structured File System", SOSP 1991;
        Kawaguchi, Nishioka and Motoda, USENIX 1995, for flash): the highest
        (1 − u) · age / 2u, u the block's valid share and age the host pages written
        since the block last changed — a block whose pages are still being invalidated
        is left to empty further, so GC does not copy data that is about to die. A
        block with no valid page costs nothing and always comes first."""
        ppb = self.pages_per_block
        closed = (self.written == ppb) & (self.valid < ppb)
        closed[self._open] = False  # the frontiers, even full, wait for their successors
        if self._gc_open >= 0:
            closed[self._gc_open] = False
        candidates = np.flatnonzero(closed)
        k = min(k, len(candidates))
        if k <= 0:
            return candidates[:0]
        valid = self.valid[candidates]
        if self.gc_policy == "greedy":
            key = valid.astype(np.float64)  # smallest first
        else:
            u = valid / ppb
            age = (self.clock - self.modified[candidates] + 1).astype(np.float64)
            with np.errstate(divide="ignore"):
                score = np.where(valid == 0, np.inf, (1.0 - u) * age / (2.0 * u))
            key = -score
        if k == 1:  # GC's own choice: the first best key is the lowest such block
            best = int(np.argmin(key))
            return candidates[best : best + 1]
        return candidates[np.lexsort((candidates, key))[:k]]  # ties: the lower block

    def victim_cost(self, k: int) -> tuple[int, int]:
        """(valid pages to copy, blocks erased) of the next ``k`` collections as the
        device's policy would choose them in this state (see :meth:`victims`)."""
        chosen = self.victims(k)
        if not len(chosen):
            raise RuntimeError("FTL full: no block with an invalid page to reclaim")
        return int(self.valid[chosen].sum()), len(chosen)

    def _gc_room(self) -> int:
        """The block GC copies into: its own frontier (a free block once the last is
        full), or the host's open block when the device has one frontier."""
        if not self.gc_frontier:
            self._ensure_room(collect=False)
            return self._open
        if self._gc_open < 0 or self.written[self._gc_open] >= self.pages_per_block:
            self._gc_open = self._free.popleft()
            self.modified[self._gc_open] = self.clock
        return self._gc_open

    def _collect(self) -> None:
        """GC of one block by the device's policy: copy its valid pages to the
        frontier, erase it."""
        ppb = self.pages_per_block
        chosen = self.victims(1)
        if not len(chosen):
            raise RuntimeError("FTL full: no block with an invalid page to reclaim")
        victim = int(chosen[0])
        span = slice(victim * ppb, (victim + 1) * ppb)
        movers = self.p2l[span]
        movers = movers[movers >= 0].astype(np.int64)
        self.p2l[span] = -1
        self.valid[victim] = 0
        i, n = 0, len(movers)
        while i < n:
            dest = self._gc_room()
            room = ppb - int(self.written[dest])
            seg = movers[i : i + room]
            base = dest * ppb + int(self.written[dest])
            ppns = np.arange(base, base + len(seg), dtype=np.int32)
            self.p2l[ppns] = seg
            self.l2p[seg] = ppns
            self.valid[dest] += len(seg)
            self.written[dest] += len(seg)
            i += len(seg)
        self.programmed_pages += n
        self.gc_copies += n
        self.written[victim] = 0
        self.erase_counts[victim] += 1
        self.erases += 1
        self._free.append(victim)
