"""The storage I/O path: a request queue served by the ``mmcqd`` kernel thread, over flash.

mmcqd runs each request: it spends CPU in the block layer and host driver (a real-time
thread, so it preempts every fair-class thread — the memory-pressure study), then the
device takes its service time. The thread that asked waits in uninterruptible sleep
(Blocked on I/O).

**Queue order.** Requests are served one at a time in arrival order (FIFO): mmcqd
fetches them from the block queue one by one and the eMMC driver issues a discard
synchronously, the card staying busy until it is done. So a large discard holds back
every read and write queued after it — the blocking story of the responsiveness study
(MobiCom 2020).

**Flash** (as in the responsiveness study). A write that names its logical pages
(``lpns``) goes through the flash translation layer (:mod:`mqoe.device.ftl`): its device
time is the profile's base cost (``write_us`` + ``page_us`` per extra page, unchanged)
plus the time of the garbage-collection work the FTL did for it (page copies and block
erases, :class:`FlashTiming`; on a scaled model amortised at the collector's recent rate,
see ``_gc_charge_ns``). On a fresh FTL no GC is needed and a write costs exactly the base.
Writes without logical pages (the memory model's writeback and swap) and all reads keep
the base cost; they do not age the modelled flash. Whenever the queue runs empty the
device erases its blocks that hold no valid page (idle-time GC, :meth:`Ftl.
erase_invalid_blocks`), so discarded space comes back as erased blocks.

**Discard and fsync.** :meth:`Storage.discard` queues a discard (TRIM) request and
returns at once — discards are asynchronous — and mmcqd serves it in turn
(``discard_us`` + ``discard_page_us`` per page). :meth:`Storage.fsync` writes the dirty
pages and then waits until every discard queued *before* it has completed: the
quasi-asynchronous dependency of the responsiveness study (Linux ext4 with
``-o discard``: the journal commit waits for the discards of the transactions before
it); the thread is in D state throughout.

**File space.** A minimal file-system allocator hands out logical pages
(:meth:`allocate`: a file takes the first free extent ahead that holds it whole, else
pieces) and takes them back (:meth:`release`); freed pages not discarded at once are
remembered as untrimmed, so a batched trim (:meth:`fitrim`, FITRIM with a start and
length) can discard them range by range later — only free extents of at least the
queue's discard granularity, as ext4 does (4 MiB on an eMMC: Linux's ``pref_erase``).
:meth:`age` ages a fresh device file by file (a file history's survivors) or page by
page.

**Model scale.** The FTL models a sample of the phone's flash: one model page per
``scale`` real 4 KB pages (``scale`` = real capacity / model capacity, 1 for a full-size
model: ``Storage(..., ftl=Ftl(capacity_gb × 262144))``). Logical page numbers
(``lpns``) in this interface are *model* pages; request sizes (``pages``) and times are
real. A file of ``n`` real pages gets ``n / scale`` model pages (the remainder carried
to the next allocation) and the FTL's GC work for a write is multiplied by ``scale``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from mqoe.device.cpu import Cpu, RealTime, Thread
from mqoe.device.ftl import DEFAULT_CAPACITY_PAGES, PAGE_BYTES, FlashCost, Ftl, LpnArray
from mqoe.device.profiles import StorageSpec
from mqoe.engine import Environment, Event, us

MMCQD_PRIORITY = RealTime(1)  # above every fair thread, below other RT work
MAX_REQUEST_PAGES = 128  # assumed: the block layer's max_sectors_kb = 512 KB per request
# The write benchmark charges GC at the rate of the collector's next victims, at least this
# many (assumed: smooths a single lucky block; see write_speed).
BENCH_MIN_VICTIMS = 16
# A scaled model charges writes the GC rate of about this many recent victims (assumed:
# long enough to smooth single victims, short enough to follow a burst of discards).
GC_RATE_VICTIMS = 32
_GIB_PAGES = (1 << 30) // PAGE_BYTES
_ALLOC_WINDOW = 4096  # model pages the allocator scans at a time from its cursor
_MB = 1 << 20


@dataclass(frozen=True, slots=True)
class FlashTiming:
    """Device-internal costs of the FTL's work: per 4 KB page copied by GC, per block
    erased, per discard request and per 4 KB page discarded (µs)."""

    gc_copy_us: float
    erase_us: float
    discard_us: float
    discard_page_us: float

    @classmethod
    def for_type(cls, storage_type: str) -> FlashTiming:
        return FLASH_TIMING[storage_type]


FLASH_TIMING: dict[str, FlashTiming] = {
    "emmc": FlashTiming(
        # assumed: NAND page program ~400 µs per 16 KB page (datasheet range 200–600 µs)
        # plus a ~50 µs page read, over 2 planes in parallel → (400 + 50) / 4 / 2 per 4 KB.
        gc_copy_us=56.0,
        erase_us=3000.0,  # datasheet range: block erase 2–5 ms (MLC/TLC NAND)
        discard_us=4000.0,  # assumed: eMMC busy per TRIM command (as mqoe.workloads.fleet)
        # assumed: eMMC 5.1 trims ~200 MB/s over large ranges (fstrim of tens of GB takes
        # minutes on eMMC phones; the responsiveness study: discards are slow and
        # stall fsync).
        discard_page_us=20.48,
    ),
    "ufs": FlashTiming(
        gc_copy_us=14.0,  # assumed: as eMMC over ~8 planes (UFS 2.x: 4 channels/dies)
        erase_us=1000.0,  # assumed: 2–5 ms block erases overlapped across ~3 dies
        discard_us=2000.0,  # assumed: UNMAP queues, but the FTL updates its map
        discard_page_us=5.12,  # assumed: UFS 2.1 UNMAP ~800 MB/s over large ranges
    ),
}


class StorageFull(Exception):
    """The file system has no free logical pages left for an allocation."""


WaitListener = Callable[[Thread, str | None], None]


@dataclass(eq=False, slots=True)
class IoRequest:
    write: bool
    pages: int
    done: Event
    submitted_ns: int
    lpns: LpnArray | None = None  # model logical pages (writes through the FTL, discards)
    discard: bool = False


@dataclass(eq=False, slots=True)
class _FileSpace:
    """Which model logical pages the file system uses, and which free ones are untrimmed.

    Allocation goes forward from ``cursor``, wrapping at the end — as log-structured
    f2fs, and ext4's goal-directed block allocator, stream new data forward instead of
    into the blocks just freed. A file takes the first free extent ahead that holds it
    whole (ext4's mballoc looks for a free extent of the request's size before it
    settles for pieces: ext4_mb_regular_allocator's criteria), else the next free pages
    in pieces. So a freed page stays free (and, until it is discarded, valid to the
    flash) until the allocator comes round to it again."""

    used: npt.NDArray[np.bool_]
    untrimmed: npt.NDArray[np.bool_]  # free, and never discarded since it was freed
    # A page freed since the last FITRIM over it (ext4 clears a group's WAS_TRIMMED flag
    # on any free). False at first: the phone has trimmed since it booted (the flags
    # live in memory; a first fstrim after boot would trim every group).
    freed_since_trim: npt.NDArray[np.bool_]
    free: int  # free model pages
    cursor: int = 0
    carry_pages: int = 0  # real pages allocated but not yet worth a model page
    # Each goal's own cursor (a directory's block groups), else ``cursor``.
    cursors: dict[str, int] = field(default_factory=dict)

    def take(self, n: int, goal: str | None = None) -> LpnArray:
        """As :meth:`take_from` the cursor of ``goal`` (the shared one if None)."""
        if goal is None:
            lpns, self.cursor = self.take_from(self.cursor, n)
        else:
            lpns, self.cursors[goal] = self.take_from(self.cursors.get(goal, self.cursor), n)
        return lpns

    def take_from(self, cursor: int, n: int) -> tuple[LpnArray, int]:
        """``n`` free pages for a new file, and the cursor after them: the first free
        extent of at least ``n`` pages in the window from ``cursor`` on, else the next
        ``n`` free pages (the caller checked ``free``)."""
        used, size = self.used, len(self.used)
        pos = cursor
        end = min(size, pos + max(_ALLOC_WINDOW, 4 * n))
        if n > 1:
            starts, ends = _runs(~used[pos:end])
            fits = np.flatnonzero(ends - starts >= n)
            if len(fits):
                first = pos + int(starts[fits[0]])
                found = np.arange(first, first + n, dtype=np.int64)
                used[found] = True
                self.free -= n
                return found, (first + n) % size
        parts: list[LpnArray] = []
        need = n
        while need > 0:
            end = min(size, pos + max(_ALLOC_WINDOW, 2 * need))
            found = np.flatnonzero(~used[pos:end])[:need].astype(np.int64) + pos
            used[found] = True  # so a wrapped scan can never pick a page twice
            parts.append(found)
            need -= len(found)
            pos = (int(found[-1]) + 1 if need == 0 else end) % size if size else 0
        self.free -= n
        return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)), pos

    def next_free(self) -> LpnArray:
        """Every free page in the order the allocator would hand them out."""
        free = np.flatnonzero(~self.used).astype(np.int64)
        split = int(np.searchsorted(free, self.cursor))
        return np.concatenate([free[split:], free[:split]])


class Storage:
    """The phone's block device: ``submit``/``read``/``write``/``discard``/``fsync`` on
    the I/O queue, ``allocate``/``release``/``fitrim`` on the file space, ``ftl`` the
    modelled flash (default: a 1 GiB sample of it; pass ``ftl`` to choose), ``timing``
    the flash-internal costs (default by storage type, :data:`FLASH_TIMING`)."""

    def __init__(
        self,
        env: Environment,
        cpu: Cpu,
        spec: StorageSpec,
        *,
        ftl: Ftl | None = None,
        timing: FlashTiming | None = None,
    ) -> None:
        self.env = env
        self.cpu = cpu
        self.spec = spec
        self.timing = timing or FlashTiming.for_type(spec.type)
        self.mmcqd: Thread = cpu.thread("mmcqd", MMCQD_PRIORITY, process="kernel")
        self._queue: deque[IoRequest] = deque()
        self._wake: Event | None = None
        self.reads = 0
        self.writes = 0
        self.pages_read = 0
        self.pages_written = 0
        # The writes that went through the FTL (named their logical pages): real pages
        # and their device time, GC included — the phone's own write throughput.
        self.flash_write_pages = 0
        self.flash_write_ns = 0
        self.discards = 0
        self.pages_discarded = 0
        self.fsyncs = 0
        # Told when a thread starts (what) and stops (None) waiting in fsync, so a
        # watchdog can say what a blocked thread waited on (mqoe.apps.watchdog.Waits).
        self.wait_listener: WaitListener | None = None
        real_pages = spec.capacity_gb * _GIB_PAGES
        model_pages = ftl.physical_pages if ftl is not None else DEFAULT_CAPACITY_PAGES
        self._ftl_pages = min(model_pages, real_pages)
        # Real 4 KB pages per model page (1: a full-size model of the device).
        self.scale = max(1, round(real_pages / self._ftl_pages))
        self._ftl = ftl  # else built on first use: the base I/O path needs none
        self._fs: _FileSpace | None = None
        self._discards_queued = 0
        self._discards_done = 0
        self._barriers: list[tuple[int, Event]] = []
        self._gc_work_us = 0.0  # recent GC work (µs, unscaled) …
        self._gc_reclaimed_pages = 0.0  # … and the free pages it reclaimed (decayed sums)
        self._gc_unpaid_us = 0.0  # GC work (µs, scaled) no write has paid for yet
        env.process(self._mmcqd(), "mmcqd")

    # -- requests -----------------------------------------------------------------------
    def submit(self, pages: int, write: bool = False, lpns: npt.ArrayLike | None = None) -> Event:
        """Queue a request of ``pages`` 4 KB pages; the event fires when it completes.

        A write with ``lpns`` (model logical pages) also programs them in the FTL."""
        pages_array = None if lpns is None else np.asarray(lpns, dtype=np.int64).reshape(-1)
        request = IoRequest(write, max(1, pages), Event(self.env), self.env.now, pages_array)
        self._enqueue(request)
        return request.done

    def read(self, thread: Thread, pages: int) -> Generator[Event, object, None]:
        """A synchronous read by ``thread`` (it sleeps in D state until the data is in)."""
        done = self.submit(pages)
        self.cpu.set_io_wait(thread, True)
        yield done
        if thread.alive:
            self.cpu.set_io_wait(thread, False)

    def write(
        self, thread: Thread, pages: int, lpns: npt.ArrayLike | None = None
    ) -> Generator[Event, object, None]:
        """A synchronous write by ``thread``, in requests of at most
        :data:`MAX_REQUEST_PAGES` queued together; the thread is in D state until the
        last completes."""
        if pages <= 0:
            return
        self.cpu.set_io_wait(thread, True)
        yield from self._write_requests(pages, lpns)
        if thread.alive:
            self.cpu.set_io_wait(thread, False)

    def discard(self, lpns: npt.ArrayLike, pages: int | None = None) -> Event:
        """Queue a discard of model logical pages (``pages`` real ones, default
        ``len(lpns) × scale``); the caller does not wait. The event fires when it is
        done, with the number of model pages it named."""
        array = np.asarray(lpns, dtype=np.int64).reshape(-1)
        real = len(array) * self.scale if pages is None else pages
        request = IoRequest(False, max(1, real), Event(self.env), self.env.now, array, True)
        self._discards_queued += 1
        self._enqueue(request)
        return request.done

    def fsync(
        self, thread: Thread, pages: int = 0, lpns: npt.ArrayLike | None = None
    ) -> Generator[Event, object, None]:
        """``fsync``: write ``pages`` dirty pages, then wait for every discard queued
        before this call (the responsiveness study's quasi-async dependency); D state throughout."""
        barrier = self._discards_queued
        listener = self.wait_listener
        if listener is not None:
            listener(thread, "fsync")
        self.cpu.set_io_wait(thread, True)
        try:
            if pages > 0:
                yield from self._write_requests(pages, lpns)
            if self._discards_done < barrier:
                wait = Event(self.env)
                self._barriers.append((barrier, wait))
                yield wait
        finally:  # also when the waiting process is stopped (its app killed)
            if listener is not None:
                listener(thread, None)
        if thread.alive:
            self.cpu.set_io_wait(thread, False)
        self.fsyncs += 1

    def service_ns(self, request: IoRequest) -> int:
        """The device's base time for a read or write (without GC work)."""
        base = self.spec.write_us if request.write else self.spec.read_us
        return us(base + (request.pages - 1) * self.spec.page_us)

    def gc_ns(self, cost: FlashCost) -> int:
        """Device time of the FTL's extra work, scaled to the real device (exact)."""
        timing = self.timing
        return us(self.scale * (cost.gc_copies * timing.gc_copy_us + cost.erases * timing.erase_us))

    def _gc_charge_ns(self, cost: FlashCost, model_pages: int) -> int:
        """GC time a write pays. A full-size model pays its GC exactly. On a scaled model
        one collection stands for ``scale`` real ones that the device spreads over
        ``scale`` times more writes; so once GC is in its steady state (free blocks at
        the low-water mark) a write pays, per model page, the recent GC work per free
        page reclaimed (decayed over ~:data:`GC_RATE_VICTIMS` victims) — without
        multi-second lumps that a real device does not have — out of the GC work done
        and not yet paid for. So the writes pay exactly the GC done, over time: a write
        into a block that a discard emptied (erased in idle, no GC) pays nothing once the
        collections before it are paid for."""
        timing = self.timing
        work_us = cost.gc_copies * timing.gc_copy_us + cost.erases * timing.erase_us
        if self.scale == 1:
            return us(work_us)
        ftl = self.ftl
        decay = (1.0 - 1.0 / GC_RATE_VICTIMS) ** cost.erases
        self._gc_work_us = self._gc_work_us * decay + work_us
        reclaimed = cost.erases * ftl.pages_per_block - cost.gc_copies
        self._gc_reclaimed_pages = self._gc_reclaimed_pages * decay + reclaimed
        self._gc_unpaid_us += self.scale * work_us
        if ftl.free_blocks > ftl.gc_low_blocks + 1 or self._gc_reclaimed_pages <= 0:
            pay = self.scale * work_us  # not (yet) in the steady state: as it came
        else:
            rate = self._gc_work_us / self._gc_reclaimed_pages
            pay = min(self._gc_unpaid_us, self.scale * model_pages * rate)
        self._gc_unpaid_us -= pay
        return us(pay)

    @property
    def discards_pending(self) -> int:
        """Discards queued and not yet completed."""
        return self._discards_queued - self._discards_done

    # -- flash and file space -------------------------------------------------------------
    @property
    def ftl(self) -> Ftl:
        """The modelled flash (built on first use)."""
        if self._ftl is None:
            self._ftl = Ftl(self._ftl_pages, gc_policy=self.spec.gc_policy)
        return self._ftl

    def allocate(self, pages: int, goal: str | None = None) -> LpnArray:
        """The file system allocates a file of ``pages`` real pages: its model logical
        pages (``pages / scale``, remainder carried). ``goal`` names where the file's
        directory lives: files of one goal are allocated forward from their own cursor,
        as ext4 places a file in its directory's block group (the Orlov allocator spreads
        top-level directories; mballoc's goal is the inode's group). Raises
        :class:`StorageFull`."""
        fs = self._space()
        total = fs.carry_pages + max(0, pages)
        n = total // self.scale
        if n > fs.free:
            raise StorageFull(f"no room for {pages} pages ({fs.free * self.scale} free)")
        fs.carry_pages = total - n * self.scale
        lpns = fs.take(n, goal)
        fs.untrimmed[lpns] = False
        return lpns

    def release(
        self, lpns: npt.ArrayLike, *, discard: bool, pages: int | None = None
    ) -> Event | None:
        """A file is deleted: its pages are free. With ``discard`` a discard request is
        queued now (real-time WAM; its event is returned); else they wait, untrimmed,
        for a batched trim."""
        fs = self._space()
        array = np.asarray(lpns, dtype=np.int64).reshape(-1)
        if len(array) and not fs.used[array].all():
            raise ValueError("releasing logical pages that are not allocated")
        fs.used[array] = False
        fs.free += len(array)
        fs.freed_since_trim[array] = True
        if discard:
            return self.discard(array, pages)
        fs.untrimmed[array] = True
        return None

    def fitrim(self, start_lpn: int, length: int, all_free: bool = False) -> Event | None:
        """FITRIM on ``[start_lpn, start_lpn + length)``, one ext4 block group: if a page
        there was freed since the range's last FITRIM (or ``all_free``), discard every
        free extent in it of at least the queue's discard granularity — the ones trimmed
        before too, as ext4_trim_all_free does — else nothing (the group's WAS_TRIMMED
        flag). None when there is nothing to discard.

        The minimum: ext4 raises FITRIM's ``minlen`` to the queue's discard granularity
        (``StorageSpec.discard_granularity_kb``; "no point to try to trim less than
        discard granularity"), and Android's fstrim passes ``minlen = 0``. A shorter free
        extent stays valid to the flash until frees around it make it long enough and
        the group is trimmed again; real-time discards know no minimum."""
        fs = self._space()
        span = slice(start_lpn, start_lpn + length)
        if not (all_free or fs.freed_since_trim[span].any()):
            return None
        fs.freed_since_trim[span] = False
        candidates = ~fs.used[span]
        minlen = math.ceil(self.spec.discard_granularity_kb * 1024 / PAGE_BYTES / self.scale)
        if minlen > 1:
            candidates = _long_runs(candidates, minlen)
        lpns = np.flatnonzero(candidates).astype(np.int64) + start_lpn
        if not len(lpns):
            return None
        fs.untrimmed[lpns] = False
        return self.discard(lpns)

    def forget_trims(self) -> None:
        """A reboot: ext4 keeps WAS_TRIMMED in memory only, so the next FITRIM trims
        every block group's free extents again."""
        self._space().freed_since_trim[:] = True

    @property
    def untrimmed_pages(self) -> int:
        """Free model pages waiting for a batched trim."""
        return 0 if self._fs is None else int(np.count_nonzero(self._fs.untrimmed))

    @property
    def free_pages(self) -> int:
        """Real pages the file system could still allocate."""
        return self._space().free * self.scale

    def preload(self, pages: int) -> LpnArray:
        """Allocate and write a file instantly (state before the run; no I/O time)."""
        lpns = self.allocate(pages)
        self.ftl.write(lpns)
        return lpns

    def age(
        self,
        fraction: float,
        rng: np.random.Generator,
        fragmented: bool = True,
        file_pages: npt.ArrayLike | None = None,
        file_goals: npt.ArrayLike | None = None,
    ) -> None:
        """Age a fresh device (:meth:`Ftl.fill`); the aged data is the file system's.

        With ``file_pages`` (sizes in real 4 KB pages of the files the phone has
        written, in order) the file system is aged file by file: the files lie end to
        end over the logical space (as written into an empty file system) and each
        survives with probability ``fraction``, so the free space is the extents of
        the deleted files, merged where they were neighbours. ``file_goals`` (one per
        file, see :meth:`allocate`) puts each goal's files together, in the order of
        the goals' first files, and starts each goal's cursor where its files begin.
        Without ``file_pages``, the data is a random set of pages."""
        if self._fs is not None:
            raise ValueError("age a storage before allocating any file")
        ftl = self.ftl
        data = None
        if file_pages is not None:
            # File i spans model pages [bounds[i], bounds[i + 1]) (real pages / scale,
            # so small files share model pages as the allocator's carry does).
            sizes = np.asarray(file_pages, dtype=np.int64)
            real = np.concatenate(([0], np.cumsum(sizes)))
            if real[-1] // self.scale < ftl.logical_pages:
                raise ValueError("file_pages must fill the logical space at least once")
            fits = int(np.searchsorted(real // self.scale, ftl.logical_pages)) + 1
            sizes = sizes[:fits]  # the files written until the space was full
            starts: dict[str, int] = {}
            if file_goals is not None:
                goals = np.asarray(file_goals).reshape(-1)[:fits]
                if len(goals) != len(sizes):
                    raise ValueError("file_goals must name a goal for every file")
                names, first = np.unique(goals, return_index=True)
                rank = np.empty(len(names), dtype=np.int64)
                rank[np.argsort(first)] = np.arange(len(names))
                order = np.argsort(rank[np.searchsorted(names, goals)], kind="stable")
                sizes, goals = sizes[order], goals[order]
            first_page = np.concatenate(([0], np.cumsum(sizes))) // self.scale
            bounds = np.minimum(first_page, ftl.logical_pages)
            if file_goals is not None:
                at = np.flatnonzero(np.concatenate(([True], goals[1:] != goals[:-1])))
                starts = {str(goals[i]): int(first_page[i]) for i in at}
            kept = rng.random(len(bounds) - 1) < fraction
            owner = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
            layout = np.flatnonzero(kept[owner]).astype(np.int64)
            data = layout[rng.permutation(len(layout))] if fragmented else layout
        ftl.fill(fraction, rng, fragmented, data=data)
        fs = self._space()
        fs.used[:] = ftl.l2p >= 0
        fs.free = int(np.count_nonzero(~fs.used))
        fs.cursor = 0
        if file_pages is not None:
            fs.cursors = {g: start % ftl.logical_pages for g, start in starts.items()}

    def write_speed(
        self,
        pattern: Literal["random", "sequential"],
        rng: np.random.Generator | None = None,
        total_mb: float = 64.0,
        request_kb: int | None = None,
    ) -> float:
        """Benchmark (see :func:`write_speed`) on copies of this device's flash, writing
        into the pages the file system would allocate next; the device is unchanged."""
        fs = self._space()
        return write_speed(
            self.ftl,
            self.spec,
            pattern,
            rng if rng is not None else self.env.rng("storage.benchmark"),
            total_mb=total_mb,
            request_kb=request_kb,
            scale=self.scale,
            timing=self.timing,
            file_lpns=fs.next_free(),  # next allocated first
        )

    # -- internals ----------------------------------------------------------------------
    def _space(self) -> _FileSpace:
        if self._fs is None:
            logical = self.ftl.logical_pages
            self._fs = _FileSpace(
                np.zeros(logical, dtype=np.bool_),
                np.zeros(logical, dtype=np.bool_),
                np.zeros(logical, dtype=np.bool_),
                logical,
            )
        return self._fs

    def _enqueue(self, request: IoRequest) -> None:
        self._queue.append(request)
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def _write_requests(
        self, pages: int, lpns: npt.ArrayLike | None
    ) -> Generator[Event, object, None]:
        """The file's dirty pages go out together, as writeback submits them all before
        it waits (filemap_write_and_wait_range): requests of at most
        :data:`MAX_REQUEST_PAGES`, the model pages spread over them as evenly as
        ``np.array_split`` would; done when the last completes (FIFO: all have)."""
        n = max(1, math.ceil(pages / MAX_REQUEST_PAGES))
        array = None if lpns is None else np.asarray(lpns, dtype=np.int64)
        per, extra = divmod(0 if array is None else len(array), n)
        last: Event | None = None
        start = 0
        for i in range(n):
            size = min(MAX_REQUEST_PAGES, pages - i * MAX_REQUEST_PAGES)
            if array is None:
                last = self.submit(size, write=True)
            else:
                end = start + per + (i < extra)
                last = self.submit(size, write=True, lpns=array[start:end])
                start = end
        assert last is not None
        yield last

    def _device_ns(self, request: IoRequest) -> int:
        lpns = request.lpns
        if request.discard:
            if lpns is not None and len(lpns):
                self.ftl.discard(lpns)
            return us(self.timing.discard_us + request.pages * self.timing.discard_page_us)
        time_ns = self.service_ns(request)
        if request.write and lpns is not None and len(lpns):
            time_ns += self._gc_charge_ns(self.ftl.write(lpns), len(lpns))
            self.flash_write_pages += request.pages
            self.flash_write_ns += time_ns
        return time_ns

    def _discard_done(self) -> None:
        self._discards_done += 1
        if self._barriers:
            done = self._discards_done
            waiting = []
            for barrier, event in self._barriers:
                if barrier <= done:
                    event.succeed()
                else:
                    waiting.append((barrier, event))
            self._barriers = waiting

    def _mmcqd(self) -> Generator[Event, object, None]:
        while True:
            if not self._queue:
                if self._ftl is not None:
                    self._ftl.erase_invalid_blocks()  # the device's idle-time GC
                self._wake = Event(self.env)
                yield self._wake
                continue
            request = self._queue.popleft()
            yield self.cpu.run(self.mmcqd, self.spec.request_cycles)
            yield self.env.timeout(self._device_ns(request))
            if request.discard:
                self.discards += 1
                self.pages_discarded += request.pages
                request.done.succeed(0 if request.lpns is None else len(request.lpns))
                self._discard_done()
                continue
            if request.write:
                self.writes += 1
                self.pages_written += request.pages
            else:
                self.reads += 1
                self.pages_read += request.pages
            request.done.succeed()


def _runs(free: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The runs of True in ``free``: their starts and their ends (exclusive)."""
    edges = np.diff(np.concatenate(([0], free.astype(np.int8), [0])))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def _long_runs(free: npt.NDArray[np.bool_], minlen: int) -> npt.NDArray[np.bool_]:
    """The pages of ``free`` that lie in runs of at least ``minlen`` free pages."""
    starts, ends = _runs(free)
    keep = ends - starts >= minlen
    marks = np.zeros(len(free) + 1, dtype=np.int32)
    np.add.at(marks, starts[keep], 1)
    np.add.at(marks, ends[keep], -1)
    return np.cumsum(marks[:-1]) > 0


def write_speed(
    ftl: Ftl,
    spec: StorageSpec,
    pattern: Literal["random", "sequential"],
    rng: np.random.Generator,
    *,
    total_mb: float = 64.0,
    request_kb: int | None = None,
    scale: int = 1,
    timing: FlashTiming | None = None,
    file_lpns: npt.ArrayLike | None = None,
) -> float:
    """Write speed in MB/s (MB = 2^20 bytes) as a storage benchmark app measures it.

    ``sequential``: a ``total_mb`` file written in order in ``request_kb`` requests
    (default 512 KB). ``random``: the file is laid out first (not timed), then
    ``total_mb`` of ``request_kb`` writes (default 4 KB) land at random offsets in it.
    Time = the requests' base device time + GC time. Device time only (no mmcqd CPU).
    The file goes to ``file_lpns`` (model pages, in order) or else to the lowest
    unmapped logical pages. ``ftl`` is not changed (a copy is written).

    GC comes in lumps: a device whose free blocks are at the low-water mark collects
    whole victims each time it opens a block. On a scaled model a benchmark is a few
    model pages, each lump ``scale`` real blocks, so whether the window holds a block
    switch would decide the result. Once GC is in its steady state (free blocks at the
    mark after the writes), the GC time is therefore charged at the rate the collector
    pays — GC time per page of free space it reclaims (erased pages − pages copied) —
    over the victims the device's GC would take next for writes of this size in the state
    after them (at least :data:`BENCH_MIN_VICTIMS`); before that (free blocks above the
    mark) the exact GC time is used.
    """
    if pattern not in ("random", "sequential"):
        raise ValueError(f"pattern must be 'random' or 'sequential', got {pattern!r}")
    timing = timing or FlashTiming.for_type(spec.type)
    request_pages = max(1, (request_kb or (4 if pattern == "random" else 512)) * 1024 // PAGE_BYTES)
    real_pages = max(request_pages, round(total_mb * _MB / PAGE_BYTES))
    n_model = max(1, real_pages // scale)
    if file_lpns is None:
        file_lpns = np.flatnonzero(ftl.l2p < 0)
    free = np.asarray(file_lpns, dtype=np.int64)
    target = free[:n_model]
    if len(target) < n_model:
        raise ValueError(f"not enough free space for a {total_mb} MB test file")
    bench = ftl.copy()
    writes = target
    if pattern == "random":
        bench.write(target)  # the benchmark's file exists before the timed writes
        writes = target[rng.integers(0, n_model, n_model)]
    cost = bench.write(writes)
    copies, erases = cost.gc_copies, cost.erases
    if bench.free_blocks <= bench.gc_low_blocks + 1:
        # The victims the benchmark's own writes need (one model block stands for
        # ``scale`` real ones, so the same share of the device at any scale).
        victims = max(BENCH_MIN_VICTIMS, math.ceil(n_model / bench.pages_per_block))
        copies, erases = bench.victim_cost(victims)
        ppb = bench.pages_per_block
        reclaimed = erases * ppb - copies  # > 0: victims always hold invalid pages
        per_page_us = (copies * timing.gc_copy_us + erases * timing.erase_us) / reclaimed
        gc_us = scale * n_model * per_page_us
    else:
        gc_us = scale * (copies * timing.gc_copy_us + erases * timing.erase_us)
    requests = real_pages / request_pages
    base_us = spec.write_us + (request_pages - 1) * spec.page_us
    seconds = (requests * base_us + gc_us) * 1e-6
    return real_pages * PAGE_BYTES / _MB / seconds
