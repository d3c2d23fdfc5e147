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

**File space** (the file-system allocator, FITRIM, aging) is the mixin
:mod:`mqoe.device.file_space`; the flash's internal costs and the write benchmark are
:mod:`mqoe.device.flash_timing`.

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
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from mqoe.device.cpu import Cpu, RealTime, Thread
from mqoe.device.file_space import FileSpace, FileSystem, StorageFull
from mqoe.device.flash_timing import BENCH_MIN_VICTIMS, FLASH_TIMING, FlashTiming, write_speed
from mqoe.device.ftl import DEFAULT_CAPACITY_PAGES, PAGE_BYTES, FlashCost, Ftl, LpnArray
from mqoe.device.profiles import StorageSpec
from mqoe.engine import Environment, Event, us

MMCQD_PRIORITY: Final = RealTime(1)  # above every fair thread, below other RT work
MAX_REQUEST_PAGES: Final = 128  # assumed: the block layer's max_sectors_kb = 512 KB per request
# A scaled model charges writes the GC rate of about this many recent victims (assumed:
# long enough to smooth single victims, short enough to follow a burst of discards).
GC_RATE_VICTIMS: Final = 32
_GIB_PAGES: Final = (1 << 30) // PAGE_BYTES


WaitListener = Callable[[Thread, str | None], None]


@dataclass(eq=False, slots=True)
class IoRequest:
    write: bool
    pages: int
    done: Event
    submitted_ns: int
    lpns: LpnArray | None = None  # model logical pages (writes through the FTL, discards)
    discard: bool = False


class Storage(FileSystem):
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
        # Told of every request as it is queued (blktrace's Q events): reads, writes and
        # discards alike, with their pages and model logical pages.
        self.request_listener: Callable[[IoRequest], None] | None = None
        real_pages = spec.capacity_gb * _GIB_PAGES
        model_pages = ftl.physical_pages if ftl is not None else DEFAULT_CAPACITY_PAGES
        self._ftl_pages = min(model_pages, real_pages)
        # Real 4 KB pages per model page (1: a full-size model of the device).
        self.scale = max(1, round(real_pages / self._ftl_pages))
        self._ftl = ftl  # else built on first use: the base I/O path needs none
        self._fs: FileSpace | None = None
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

    # -- flash --------------------------------------------------------------------------
    @property
    def ftl(self) -> Ftl:
        """The modelled flash (built on first use)."""
        if self._ftl is None:
            self._ftl = Ftl(self._ftl_pages, gc_policy=self.spec.gc_policy)
        return self._ftl

    # -- internals ----------------------------------------------------------------------
    def _enqueue(self, request: IoRequest) -> None:
        if self.request_listener is not None:
            self.request_listener(request)
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


__all__ = [
    "BENCH_MIN_VICTIMS",
    "FLASH_TIMING",
    "GC_RATE_VICTIMS",
    "MAX_REQUEST_PAGES",
    "MMCQD_PRIORITY",
    "FlashTiming",
    "IoRequest",
    "Storage",
    "StorageFull",
    "WaitListener",
    "write_speed",
]
