"""Memory: page-accurate accounting, watermarks, kswapd, direct reclaim, zRAM, refaults,
vmpressure and PSI — the mechanisms of the memory-pressure study (CoNEXT 2022).

Every 4 KB page is in exactly one place (the conservation invariant,
:meth:`Memory.check`): free, reserved (carve-outs and kernel), the unmapped page cache
(clean, dirty or under writeback), a process's resident anon, file or GPU pages, the
zRAM pool (the RAM holding compressed anon pages), or a named kernel pool (pages other
kernel allocators hold, e.g. the zsmalloc pool of compressed GPU buffers, GPU-buffer study).

* **Watermarks** (Linux mm/page_alloc.c): min_free_kbytes = √(lowmem_kb × 16) clamped to
  128 KB–64 MB; low = min + max(min/4, managed × scale/10000); high = min + 2 × that.
* **kswapd** is a fair-class thread at nice 0 — the foreground's priority — woken below
  *low*, reclaiming batches of 32 pages until free memory is above *high*.
* **Reclaim** scans the coldest pools first — the unmapped cache, then processes by
  LRU age (the process that used its memory longest ago first; one global LRU, as the
  kernel has, not an oom_score_adj order) — splitting each batch between file and anon
  pages by ``swappiness``. Clean file pages are dropped (they refault if their process
  touches them again); dirty ones are written back first; anon pages are compressed
  into zRAM (CPU on the reclaiming thread). A scanned page its process used recently is
  *referenced* and rotated instead of reclaimed — the scanned-but-not-reclaimed pages
  that raise vmpressure. Uses fall uniformly on a process's working set, so a resident
  page was used since the scanner last passed with chance 1 − exp(−uses / working set),
  uses decayed over the profile's ``referenced_window_ms`` (about one scanner pass);
  pages just faulted back in count as used (the kernel's workingset activation). Light
  thrashing keeps reclaim efficient; a process whose resident set is mostly pages it
  just faulted back makes almost every scan futile — critical vmpressure.
* **Two LRU models** (``LRU_MODELS``, chosen by the profile's ``[memory] lru``): the
  recency model above (the default) and ``lists``, Linux's inactive/active lists per
  process with workingset refault detection (:class:`ListLru`, :mod:`mqoe.device.lru`,
  docs/decisions/0002-memory-lru.md).
* **Direct reclaim**: an allocation that would leave free memory below *min* makes the
  allocating thread reclaim itself (CPU on that thread, a memory stall), in passes of
  falling priority that scan deeper until a batch is reclaimed (do_try_to_free_pages).
  From priority 3 down each pass tells vmpressure of a critical window
  (vmpressure_prio): the critical events a reclaimer that finds nothing to take sends.
* **Writeback**: dirty page cache is written every 5 s by the flusher (and by reclaim
  when it reaches dirty pages), in requests through mmcqd.
* **Refaults**: :meth:`touch` is how a running process uses its working set; touching
  evicted file pages reads them back through storage (the thread waits on I/O), touching
  swapped anon pages decompresses them (CPU) — both are memory stalls.
* **vmpressure** (mm/vmpressure.c): per 512 scanned pages, (scanned − reclaimed) /
  scanned × 100; ≥ 60 medium, ≥ 95 critical. **PSI**: "some" = time at least one thread
  is stalled on memory; "full" = time a stalled thread has no runnable company.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from mqoe.device import lru as lists
from mqoe.device.cpu import Cpu, Fair, Thread
from mqoe.device.lru import Lruvec
from mqoe.device.process import NATIVE_ADJ, Process, ProcessTable
from mqoe.device.profiles import MemorySpec
from mqoe.device.storage import Storage
from mqoe.engine import Environment, Event, ms

PAGE_BYTES = 4096
KERNEL_POOL = "kernel"  # the kernel_pools entry of [memory] kernel_mb
SWAP_CLUSTER_MAX = 32  # pages per reclaim batch (include/linux/swap.h)
VMPRESSURE_WINDOW = 512  # scanned pages per vmpressure sample (mm/vmpressure.c)
VMPRESSURE_MEDIUM = 60
VMPRESSURE_CRITICAL = 95
# Direct reclaim starts at lists.DEF_PRIORITY and scans lru_size >> priority;
# vmpressure_level_critical_prio = ilog2(100 / 10) (mm/vmpressure.c).
VMPRESSURE_CRITICAL_PRIO = 3
# A direct-reclaim pass is scanned in at most this many steps, each then checked for a
# reclaimed batch. The kernel checks after every 32 pages of each list, but with a
# memory cgroup per app a global pass visits every cgroup's lruvec first, so it too
# reclaims past the batch; the steps bound the model's cost of a pass that fails.
_PASS_STEPS = 16
# mem_cgroup_soft_reclaim shrinks one cgroup at most MEM_CGROUP_MAX_RECLAIM_LOOPS (100)
# times; mem_cgroup_soft_limit_reclaim tries the next cgroup over its limit while none
# yields anything, until its loop count passes MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS
# (2): three cgroups at most (Linux 3.18 mm/memcontrol.c).
_SOFT_RECLAIM_LOOPS = 100
_SOFT_LIMIT_TRIES = 3
_OOM_WAIT_NS = ms(10)  # nothing left to reclaim: wait for lmkd (congestion_wait)
# too_many_isolated: a direct reclaimer finding more pages isolated by reclaimers than
# the inactive list holds sleeps congestion_wait(BLK_RW_ASYNC, HZ/10) and looks again
# (shrink_inactive_list, mm/vmscan.c). Nothing clears a congestion the model does not
# keep, so the sleep runs its whole 100 ms.
_ISOLATED_WAIT_NS = ms(100)
_FAULT_STEP_PAGES = 256  # allocations fault in 1 MiB at a time
_WRITEBACK_INTERVAL_NS = ms(5000)  # vm.dirty_writeback_centisecs = 500
WRITEBACK_PAGES = 128  # pages per writeback request (512 KB, max_sectors_kb of eMMC)


def watermarks(spec: MemorySpec) -> tuple[int, int, int]:
    """(min, low, high) in pages, by the kernel's formulas (mm/page_alloc.c)."""
    managed = spec.total_pages - spec.reserved_pages
    lowmem_kb = managed * 4
    min_kb = min(max(int(math.sqrt(lowmem_kb * 16)), 128), 65536)
    min_pages = min_kb // 4
    step = max(min_pages // 4, managed * spec.watermark_scale_factor // 10000)
    extra = spec.extra_free_kbytes // 4  # __setup_per_zone_wmarks: low and high gain it
    return min_pages, min_pages + extra + step, min_pages + extra + 2 * step


@dataclass(frozen=True, slots=True)
class VmPressure:
    """One vmpressure sample (a 512-page scan window)."""

    time_ns: int
    pressure: float  # 0–100
    level: str  # low | medium | critical


@dataclass(slots=True)
class _Batch:
    scanned: int = 0
    reclaimed: int = 0
    cycles: float = 0.0
    compressed: int = 0  # anon pages put into zRAM (their compression is run apart)
    writeback: int = 0
    aged: int = 0  # pages moved between the LRU lists (activated, rotated, deactivated)


class FaultRead(NamedTuple):
    """One storage read for file faults: the pages it brings in (``hot`` of them hot
    pages) and how many of the pending hot and cold faults it serves."""

    pages: int
    hot: int
    hot_served: int
    cold_served: int


class _Streams:
    """zRAM's compression streams (max_comp_streams): compressing a page needs one, and
    with all ``n`` taken the next compressor sleeps until one is released (zcomp's
    stream lock). ``n`` = 0: a stream per CPU, never waited for."""

    def __init__(self, env: Environment, n: int) -> None:
        self._env = env
        self._free = n
        self._waiting: deque[Event] = deque()

    def acquire(self) -> Event | None:
        """None if a stream was free (now taken), else the event that hands one over."""
        if self._free > 0:
            self._free -= 1
            return None
        wait = Event(self._env)
        self._waiting.append(wait)
        return wait

    def release(self, wait: Event | None) -> None:
        """Give back the stream ``acquire`` returned ``wait`` for; a waiter that never
        got one (killed while waiting) just leaves the queue."""
        if wait is not None and not wait.triggered:
            self._waiting.remove(wait)
            return
        if self._waiting:
            self._waiting.popleft().succeed()  # the stream passes to the next waiter
        else:
            self._free += 1


class Memory:
    """The phone's RAM. Public: ``allocate``, ``touch``, ``free``, ``add_page_cache``,
    ``release``, counters and ``check``."""

    def __init__(
        self,
        env: Environment,
        cpu: Cpu,
        storage: Storage,
        processes: ProcessTable,
        spec: MemorySpec,
    ) -> None:
        self.env = env
        self.cpu = cpu
        self.storage = storage
        self.processes = processes
        self.spec = spec
        self.total_pages = spec.total_pages
        self.reserved_pages = spec.reserved_pages
        self.min_wmark, self.low_wmark, self.high_wmark = watermarks(spec)
        self.free_pages = self.total_pages - self.reserved_pages
        self.cache_clean = 0  # unmapped page cache (files read or written, no owner)
        self.cache_dirty = 0
        self.cache_writeback = 0  # dirty pages being written (/proc/meminfo Writeback)
        self.zram_stored = 0  # anon pages held in zRAM (uncompressed count)
        self.zram_limit = int(spec.total_pages * spec.zram_fraction)
        self._zram_bytes = 0.0  # compressed bytes
        self._streams = _Streams(env, spec.zram_streams)
        # Swap readahead: a swap-in reads its aligned cluster of 2**page_cluster slots.
        # From Linux 4.15 a synchronous swap device (zRAM) skips it for pages only one
        # process maps (do_swap_page's SWP_SYNCHRONOUS_IO path): one page per fault.
        self._swap_cluster = 1 << spec.page_cluster if spec.kernel < (4, 15) else 1
        self.zram_pool = 0  # RAM pages holding them
        self.kernel_pools: dict[str, int] = {}  # name → pages (grow_pool / shrink_pool)
        # The kernel's own memory within MemTotal (slab, page tables, kernel stacks,
        # driver allocations): held from boot, never reclaimed, charged to no cgroup.
        kernel = round(spec.kernel_mb * 256)
        if kernel:  # below MemTotal: the profile's validator checks it
            self.free_pages -= kernel
            self.kernel_pools[KERNEL_POOL] = kernel
        self._rng = env.rng("reclaim")
        self._ref_window_ns = ms(spec.referenced_window_ms)
        # kswapd
        self.kswapd: Thread = cpu.thread("kswapd0", Fair(0), process="kernel")
        self._kswapd_wake: Event | None = None
        env.process(self._kswapd_loop(), "kswapd0")
        self._flush_armed = False
        # vmpressure and PSI
        self._window_scanned = 0
        self._window_reclaimed = 0
        self.vmpressure: list[VmPressure] = []
        self.vmpressure_listeners: list[Callable[[VmPressure], None]] = []
        # Called after every reclaim pass, as shrink_slab calls the kernel's shrinkers
        # (the in-kernel low-memory killer is one).
        self.shrinker_listeners: list[Callable[[], None]] = []
        self._stalled = 0  # threads in a memory stall (reclaim, refault I/O, swap-in)
        self._reclaimers = 0  # …of which busy on the CPU (direct reclaim, decompression)
        self._stall_since = 0
        self.psi_some_ns = 0
        self.psi_full_ns = 0
        # Counters (as /proc/vmstat names them).
        self.pgscan = 0
        self.pgsteal = 0
        self.pgscan_direct = 0
        self.pswpout = 0
        self.pswpin = 0
        self.workingset_refault = 0
        self.pgpgout = 0
        self.allocstall = 0
        self.pgscan_direct_throttle = 0  # direct reclaimers throttled (pfmemalloc_wait)
        self.isolated_waits = 0  # too_many_isolated sleeps of direct reclaimers
        self.isolated = 0  # pages direct reclaimers hold off the LRU (NR_ISOLATED_*)
        self._pfmemalloc_wait: Event | None = None
        self.zram_stream_waits = 0  # reclaim passes that waited for a compression stream
        self.kswapd_wakeups = 0
        self.atomic_failures = 0  # GFP_ATOMIC allocations refused (grow_pool_atomic)
        self.workingset_activate = 0
        self.evictions = 0  # file pages evicted (the node's inactive_age, mm/workingset.c)
        self.lru: LruModel = LRU_MODELS[spec.lru](self)
        # zygote's preloaded image (boot image, framework and native libraries): file
        # pages every Java process maps (see set_preload).
        self.preload: Process | None = None
        # Memory-cgroup soft limits (pages; None: the process has no cgroup of its own).
        # Set by whoever writes them (lmkd with per-app memory cgroups); None: none.
        self.soft_limit: Callable[[Process], int | None] | None = None

    # -- the conservation invariant -----------------------------------------------------
    def used_by_processes(self) -> int:
        """Pages mapped by processes, including the dead ones still being torn down."""
        return sum(p.anon_pages + p.file_resident + p.gpu_pages for p in self.processes.processes)

    def check(self) -> None:
        """Raise AssertionError unless every page is in exactly one place."""
        parts = (
            self.free_pages,
            self.reserved_pages,
            self.cache_clean,
            self.cache_dirty,
            self.cache_writeback,
            self.used_by_processes(),
            self.zram_pool,
            sum(self.kernel_pools.values()),
        )
        assert min(parts) >= 0, parts
        assert min(self.kernel_pools.values(), default=0) >= 0, self.kernel_pools
        assert sum(parts) == self.total_pages, (parts, sum(parts), self.total_pages)
        for p in self.processes.processes:
            assert 0 <= p.file_resident <= p.file_ws_pages, p
            assert min(p.anon_pages, p.anon_swapped, p.gpu_pages) >= 0, p
        assert self.zram_stored == sum(p.anon_swapped for p in self.processes.processes)
        self.lru.check()

    # -- public API -------------------------------------------------------------------
    def allocate(
        self, process: Process, thread: Thread, pages: int, kind: str = "anon"
    ) -> Generator[Event, object, None]:
        """Give ``process`` ``pages`` new pages (``kind`` anon | gpu | file | code — file
        pages mapped executable); the calling thread reclaims directly if that would
        leave free memory below *min*."""
        if kind not in ("anon", "gpu", "file", "code"):
            raise ValueError(f"unknown page kind {kind!r}")
        file_pages = pages if kind in ("file", "code") else 0
        self.lru.allocating(process, file_pages, pages if kind == "anon" else 0)
        # Pages arrive as they are faulted in, a step at a time, so free memory falls
        # gradually (lmkd and kswapd see it happen) rather than all at once.
        while pages > 0 and process.alive and thread.alive:
            step = min(pages, _FAULT_STEP_PAGES)
            yield from self._make_room(thread, step)
            if not (process.alive and thread.alive):
                return
            self.free_pages -= step
            if kind == "anon":
                process.anon_pages += step
            elif kind == "gpu":
                process.gpu_pages += step
            else:
                process.file_ws_pages += step
                process.file_resident += step
                if kind == "code":
                    process.code_ws_pages += step
            self.lru.added(process, kind, step)
            pages -= step
            self._maybe_wake_kswapd()

    def free(self, process: Process, pages: int, kind: str = "anon") -> None:
        """``process`` unmaps ``pages`` of its own (anon pages in zRAM go first for anon)."""
        if kind == "anon":
            from_zram = min(pages - min(pages, process.anon_pages), process.anon_swapped)
            resident = min(pages, process.anon_pages)
            process.anon_pages -= resident
            self.free_pages += resident
            self.lru.removed(process, "anon", resident)
            self._zram_remove(process, from_zram)
        elif kind == "gpu":
            n = min(pages, process.gpu_pages)
            process.gpu_pages -= n
            self.free_pages += n
        else:
            raise ValueError(f"free() takes anon or gpu pages, not {kind!r}")

    def grow_pool(self, name: str, thread: Thread, pages: int) -> Generator[Event, object, None]:
        """A kernel allocator takes ``pages`` free pages into pool ``name``; ``thread``
        (the one allocating, in kernel context) reclaims directly if free memory would
        fall below *min*. Nothing is taken if the thread dies while waiting."""
        if pages < 0:
            raise ValueError(f"pages must not be negative, got {pages}")
        yield from self._make_room(thread, pages)
        if not thread.alive:
            return
        self.free_pages -= pages
        self.kernel_pools[name] = self.kernel_pools.get(name, 0) + pages
        self._maybe_wake_kswapd()

    def set_preload(self, process: Process) -> None:
        """``process``'s file pages are zygote's preloaded image, mapped by every Java
        process (oom_score_adj above native): their touches of file pages fall on it in
        proportion to its size, and reclaim's rmap walk visits every mapping."""
        self.preload = process

    def maps_preload(self, process: Process) -> bool:
        preload = self.preload
        return (
            preload is not None
            and process is not preload
            and preload.alive
            and process.oom_score_adj > NATIVE_ADJ
        )

    def preload_mappings(self) -> int:
        """How many processes map the preloaded image (zygote and the Java processes)."""
        return 1 + sum(1 for p in self.processes.alive if self.maps_preload(p))

    def grow_pool_atomic(self, name: str, pages: int) -> bool:
        """A GFP_ATOMIC allocation into pool ``name`` (interrupt or softirq context: it
        cannot sleep, so it never reclaims). It may dig below *min* into the atomic
        reserve — __zone_watermark_ok lowers the mark by half for __GFP_HIGH and by a
        quarter of that for ALLOC_HARDER, to 3/8 of *min* — and fails below that, as a
        network driver's buffer allocation fails and the packet is dropped. Wakes kswapd
        (__GFP_KSWAPD_RECLAIM) either way when free memory is under *low*."""
        if pages < 0:
            raise ValueError(f"pages must not be negative, got {pages}")
        ok = self.free_pages - pages >= self.min_wmark * 3 // 8
        if ok:
            self.free_pages -= pages
            self.kernel_pools[name] = self.kernel_pools.get(name, 0) + pages
        else:
            self.atomic_failures += 1
        self._maybe_wake_kswapd()
        return ok

    def shrink_pool(self, name: str, pages: int) -> None:
        """Pool ``name`` gives ``pages`` back to the free list."""
        held = self.kernel_pools.get(name, 0)
        if not 0 <= pages <= held:
            raise ValueError(f"pool {name!r} holds {held} pages, cannot give back {pages}")
        self.kernel_pools[name] = held - pages
        self.free_pages += pages

    def add_page_cache(
        self, thread: Thread, pages: int, dirty: bool = False
    ) -> Generator[Event, object, None]:
        """File data read or written through the page cache with no owning process."""
        yield from self._make_room(thread, pages)
        if not thread.alive:
            return
        self.free_pages -= pages
        if dirty:
            self.cache_dirty += pages
            self._arm_flusher()
        else:
            self.cache_clean += pages
        self._maybe_wake_kswapd()

    def touch(
        self, process: Process, thread: Thread, file_pages: int, anon_pages: int = 0
    ) -> Generator[Event, object, None]:
        """``thread`` uses ``file_pages`` of its process's file mappings and ``anon_pages``
        of its anon memory; evicted pages fault back in (memory stalls). A Java process's
        file uses fall on the preloaded image (if any) in proportion to its size."""
        preload = self.preload
        if file_pages and preload is not None and self.maps_preload(process):
            # Uses of file pages fall on the shared image as on the process's own files.
            shared = round(file_pages * preload.file_ws_pages
                           / (preload.file_ws_pages + process.file_ws_pages))  # fmt: skip
            file_pages -= shared
            if shared:
                yield from self.touch(preload, thread, shared)
        hot_faults, cold_faults = 0, 0
        if file_pages or anon_pages:
            hot_faults, cold_faults = self.lru.touched(process, file_pages, anon_pages)
        window = self.storage.spec.readahead_pages
        while hot_faults + cold_faults > 0 and process.alive and thread.alive:
            read = self.lru.read_around(process, hot_faults, cold_faults, window)
            if read.pages <= 0:
                break
            self._stall_begin(reclaiming=False)
            try:
                yield from self._make_room(thread, read.pages)
                if not (process.alive and thread.alive):
                    return
                chunk = min(read.pages, process.file_ws_pages - process.file_resident)
                # The page-cache pages are allocated now and filled by the read.
                self.free_pages -= chunk
                process.file_resident += chunk
                self.workingset_refault += chunk
                self.lru.refaulted(process, "file", chunk, min(read.hot, chunk))
                self.cpu.set_io_wait(thread, True)
                yield self.storage.submit(chunk)
                if thread.alive:
                    self.cpu.set_io_wait(thread, False)
            finally:
                self._stall_end(reclaiming=False)
            hot_faults -= min(read.hot_served, chunk)
            cold_faults -= min(read.cold_served, chunk)
            self._maybe_wake_kswapd()
        if anon_pages and process.anon_swapped and process.alive and thread.alive:
            rng = self._rng
            total = process.anon_pages + process.anon_swapped
            share = process.anon_swapped / total
            faults = int(rng.binomial(anon_pages, share))
            if faults and self._swap_cluster > 1:
                # swapin_readahead: each fault also reads the other slots of its
                # cluster; those still in use hold pages of the same process (reclaim
                # swaps a process's pages out together). They are decompressed too.
                extra = int(rng.binomial(faults * (self._swap_cluster - 1), share))
                faults = min(process.anon_swapped, faults + extra)
            if faults:
                self._stall_begin(reclaiming=True)
                try:
                    yield from self._make_room(thread, faults)
                    faults = min(faults, process.anon_swapped)
                    if process.alive and thread.alive and faults:
                        self._zram_remove(process, faults)
                        self.free_pages -= faults
                        process.anon_pages += faults
                        self.pswpin += faults
                        self.lru.refaulted(process, "anon", faults)
                        yield self.cpu.run(thread, faults * self.spec.decompress_cycles_per_page)
                finally:
                    self._stall_end(reclaiming=True)
                self._maybe_wake_kswapd()

    def release(self, process: Process) -> None:
        """A dead process's memory goes back: anon, GPU and zRAM pages are freed; its
        file pages stay in the page cache as clean, unmapped pages."""
        self.free_pages += process.anon_pages + process.gpu_pages
        self.cache_clean += process.file_resident
        self._zram_remove(process, process.anon_swapped)
        self.lru.released(process)
        process.anon_pages = process.gpu_pages = process.file_resident = 0
        process.file_ws_pages = process.code_ws_pages = 0

    # -- levels -----------------------------------------------------------------------
    @property
    def file_pages(self) -> int:
        """Page cache (mapped + unmapped), as /proc/meminfo Cached."""
        return (
            self.cache_clean + self.cache_dirty + sum(p.file_resident for p in self.processes.alive)
        )

    @property
    def charged_pages(self) -> int:
        """Pages charged to the root memory cgroup: process anon and file pages plus the
        page cache (GPU/ION buffers and the zRAM pool are kernel memory, not charged)."""
        return (
            self.cache_clean + self.cache_dirty + self.cache_writeback
            + sum(p.anon_pages + p.file_resident for p in self.processes.processes)
        )  # fmt: skip

    @property
    def available_pages(self) -> int:
        """Roughly MemAvailable: free above the low watermark plus reclaimable cache."""
        return max(0, self.free_pages - self.low_wmark) + self.file_pages

    # -- allocation and reclaim -------------------------------------------------------
    def _maybe_wake_kswapd(self) -> None:
        wake = self._kswapd_wake
        if self.free_pages < self.low_wmark and wake is not None and not wake.triggered:
            self.kswapd_wakeups += 1
            wake.succeed()

    def _make_room(self, thread: Thread, pages: int) -> Generator[Event, object, None]:
        """Direct reclaim until ``pages`` can be taken without going below *min*."""
        if self.free_pages - pages >= self.min_wmark:
            return
        self.allocstall += 1
        self._stall_begin(reclaiming=True)
        try:
            yield from self._throttle_direct_reclaim(thread)
            while self.free_pages - pages < self.min_wmark and thread.alive:
                self._maybe_wake_kswapd()
                progress = yield from self._try_to_free_pages(thread)
                if not progress and thread.alive:
                    yield self.env.timeout(_OOM_WAIT_NS)  # wait for kswapd / lmkd
        finally:
            self._stall_end(reclaiming=True)

    def _pfmemalloc_ok(self) -> bool:
        """pfmemalloc_watermark_ok: free memory above half the min watermark."""
        return self.free_pages > self.min_wmark // 2

    def _throttle_direct_reclaim(self, thread: Thread) -> Generator[Event, object, None]:
        """throttle_direct_reclaim: below half the min watermark (the reserve atomic
        allocations dip into) a user thread does not reclaim; it sleeps until kswapd
        has brought free memory back above it. Kernel threads are never throttled."""
        if self._pfmemalloc_ok() or thread.process == "kernel":
            return
        self.pgscan_direct_throttle += 1
        while not self._pfmemalloc_ok() and thread.alive:
            self._maybe_wake_kswapd()
            if self._pfmemalloc_wait is None:
                self._pfmemalloc_wait = Event(self.env)
            yield self._pfmemalloc_wait

    def _wake_throttled(self) -> None:
        """kswapd wakes the throttled reclaimers once the reserve is back."""
        wait = self._pfmemalloc_wait
        if wait is not None and self._pfmemalloc_ok():
            self._pfmemalloc_wait = None
            wait.succeed()

    def _too_many_isolated(self) -> bool:
        """too_many_isolated: direct reclaimers hold more pages off the LRU than the
        inactive list it would shrink holds (file, and anon while swap has room)."""
        if not self.isolated:
            return False
        inactive = self.lru.inactive_pages()
        if inactive is None:
            return False  # the model keeps no inactive lists
        anon, file = inactive
        swap_ok = self.zram_stored < self.zram_limit
        return self.isolated > file or (swap_ok and self.isolated > anon)

    def _try_to_free_pages(self, thread: Thread) -> Generator[Event, object, bool]:
        """do_try_to_free_pages: passes at falling priority, each scanning up to
        ``lru_size >> priority`` pages (at least a batch) in steps of a batch or a
        sixteenth of the pass, until a batch of pages is reclaimed (shrink_lruvec stops
        global direct reclaim there).
        From priority 3 down (an eighth of the LRU scanned in vain) each pass first
        reports a critical window to vmpressure (vmpressure_prio), so a reclaimer that
        keeps finding only referenced or unswappable pages tells lmkd. Returns whether
        anything was reclaimed or aged."""
        want = self.spec.reclaim_batch_pages
        reclaimed = aged = 0
        for priority in range(lists.DEF_PRIORITY, -1, -1):
            if priority <= VMPRESSURE_CRITICAL_PRIO:
                self._vmpressure(VMPRESSURE_WINDOW, 0)
            if priority == lists.DEF_PRIORITY:
                scan = want
            else:
                scan = max(want, self.lru_pages() >> priority)
            step = max(want, scan // _PASS_STEPS)
            while self._too_many_isolated() and thread.alive:
                self.isolated_waits += 1
                yield self.env.timeout(_ISOLATED_WAIT_NS)
            if not thread.alive:
                break
            batch = _Batch()
            first = True
            while scan > 0 and reclaimed + batch.reclaimed < want:
                chunk = min(step, scan)
                scanned = batch.scanned + batch.aged
                # shrink_zones: soft-limit reclaim first, once per pass
                self._reclaim(chunk, direct=True, batch=batch, soft=first)
                first = False
                scan -= chunk
                if batch.scanned + batch.aged == scanned:
                    break  # nothing left to scan
            # The pages of the batch are off the LRU while the reclaimer works on them
            # (shrink_inactive_list isolates up to SWAP_CLUSTER_MAX at a time).
            held = min(batch.scanned + batch.aged, SWAP_CLUSTER_MAX)
            self.isolated += held
            try:
                yield from self._run_batch(thread, batch)
            finally:
                self.isolated -= held
            reclaimed += batch.reclaimed
            aged += batch.aged
            if reclaimed >= want or not thread.alive:
                break
        return reclaimed > 0 or aged > 0

    def lru_pages(self) -> int:
        """Pages reclaim may scan: the page cache, and anon while zRAM has room
        (get_scan_count scans only the file lists once swap is full)."""
        pages = self.file_pages
        if self.zram_stored < self.zram_limit:
            pages += sum(p.anon_pages for p in self.processes.alive)
        return pages

    def _kswapd_loop(self) -> Generator[Event, object, None]:
        """kswapd: sleep above *low*; once woken, reclaim batches until above *high*."""
        while True:
            self._wake_throttled()
            if self.free_pages >= self.low_wmark:
                self._kswapd_wake = Event(self.env)
                yield self._kswapd_wake
            self._kswapd_wake = None
            # balance_pgdat runs soft-limit reclaim once per round, each round asking
            # shrink_zone for up to the high watermark's worth of pages; after a round
            # it wakes the throttled direct reclaimers (and when it goes to sleep).
            soft_due = 0
            while self.free_pages < self.high_wmark:
                soft = soft_due <= 0
                batch = self._reclaim(self.spec.reclaim_batch_pages, direct=False, soft=soft)
                soft_due = (self.high_wmark if soft else soft_due) - batch.scanned - batch.aged
                yield from self._run_batch(self.kswapd, batch)
                if soft_due <= 0:  # a round's end: wake the throttled if the reserve is back
                    self._wake_throttled()
                if batch.reclaimed == 0 and batch.writeback == 0 and batch.aged == 0:
                    # Nothing reclaimable: back off like kswapd's failed balance.
                    yield self.env.timeout(ms(100))
                    break

    def _run_batch(self, thread: Thread, batch: _Batch) -> Generator[Event, object, None]:
        """``thread`` does a reclaim pass's work: the scan, then the compression of the
        pages it swapped out, on one of zRAM's compression streams (waiting, asleep,
        while every stream is taken)."""
        if batch.cycles:
            yield self.cpu.run(thread, batch.cycles)
        if batch.compressed:
            wait = self._streams.acquire()
            try:
                if wait is not None:
                    self.zram_stream_waits += 1
                    yield wait
                yield self.cpu.run(thread, batch.compressed * self.spec.compress_cycles_per_page)
            finally:  # also when the thread is killed, holding a stream or waiting
                self._streams.release(wait)

    def _arm_flusher(self) -> None:
        """Dirty pages wake the writeback flusher dirty_writeback_centisecs (5 s) later."""
        if not self._flush_armed:
            self._flush_armed = True
            self.env.schedule(_WRITEBACK_INTERVAL_NS, self._flush)

    def _flush(self, _: object) -> None:
        """The flusher: the dirty page cache goes to storage in requests of up to
        WRITEBACK_PAGES (it sleeps again until pages are dirtied)."""
        self._flush_armed = False
        while self.cache_dirty:
            flush = min(self.cache_dirty, WRITEBACK_PAGES)
            self.cache_dirty -= flush
            self._writeback(flush)

    def _reclaim(
        self, target: int, direct: bool, batch: _Batch | None = None, soft: bool = False
    ) -> _Batch:
        """One reclaim pass of ``target`` pages (the LRU model decides which), added to
        ``batch`` (a new one if None); ``soft``: soft-limit reclaim first (if the phone
        has soft limits), which kswapd lets stand alone when it balanced the zone."""
        if batch is None:
            batch = _Batch()
        scanned, reclaimed, compressed = batch.scanned, batch.reclaimed, batch.compressed
        soft_scanned = soft_reclaimed = 0
        if soft and self.soft_limit is not None:
            self._soft_limit_reclaim(batch)
            soft_scanned, soft_reclaimed = batch.scanned - scanned, batch.reclaimed - reclaimed
            if not direct and self.free_pages >= self.high_wmark:
                target = 0  # kswapd_shrink_zone: the zone is balanced, no shrink_zone
        if target:
            self.lru.reclaim(target, batch)
        scanned, reclaimed = batch.scanned - scanned, batch.reclaimed - reclaimed
        batch.cycles += scanned * self.spec.scan_cycles_per_page
        if not self.spec.zram_streams:  # no stream to wait for: one stretch of work
            batch.cycles += (batch.compressed - compressed) * self.spec.compress_cycles_per_page
            batch.compressed = compressed
        self.pgscan += scanned
        self.pgsteal += reclaimed
        if direct:
            self.pgscan_direct += scanned
        # Only shrink_zone reports to vmpressure: soft-limit reclaim goes unseen.
        self._vmpressure(scanned - soft_scanned, reclaimed - soft_reclaimed)
        for shrinker in self.shrinker_listeners:
            shrinker()
        return batch

    def soft_limit_excess(self, process: Process) -> int:
        """Pages ``process``'s cgroup holds above its soft limit (its charged RAM: anon
        and file pages; 0 without a limit)."""
        limit = self.soft_limit(process) if self.soft_limit is not None else None
        if limit is None:
            return 0
        return max(0, process.anon_pages + process.file_resident - limit)

    def _soft_limit_reclaim(self, batch: _Batch) -> None:
        """mem_cgroup_soft_limit_reclaim (Linux 3.x–4.x): from the cgroup furthest over
        its soft limit, shrink (a batch's worth each time, every list by get_scan_count)
        until a quarter of its excess is reclaimed or it is under its limit
        (mem_cgroup_soft_reclaim); if it yields nothing, the next furthest."""
        over = [(self.soft_limit_excess(p), p) for p in self.processes.alive]
        over = sorted((e for e in over if e[0] > 0), key=lambda e: (-e[0], e[1].pid))
        batch_pages = self.spec.reclaim_batch_pages
        for excess, process in over[:_SOFT_LIMIT_TRIES]:
            goal = max(batch_pages, excess >> 2)
            total = idle = 0
            for _ in range(_SOFT_RECLAIM_LOOPS):
                reclaimed, moved = batch.reclaimed, batch.scanned + batch.aged
                self.lru.reclaim_from(process, max(batch_pages, goal - total), batch)
                total += batch.reclaimed - reclaimed
                if total >= goal or not self.soft_limit_excess(process):
                    break
                # Nothing taken twice running (or nothing left to scan): give up on it.
                idle = 0 if batch.reclaimed > reclaimed else idle + 1
                if idle == 2 or batch.scanned + batch.aged == moved:
                    break
            if total:
                return

    def _scan_cache(self, file_target: int, batch: _Batch) -> int:
        """The unmapped page cache first: clean pages go at once, dirty ones to
        writeback. Returns the file target left."""
        take = min(self.cache_clean, file_target)
        self.cache_clean -= take
        self.free_pages += take
        batch.scanned += take
        batch.reclaimed += take
        file_target -= take
        if file_target > 0 and self.cache_dirty:
            flush = min(self.cache_dirty, file_target)
            self.cache_dirty -= flush
            batch.scanned += flush
            batch.writeback += flush
            self._writeback(flush)
            file_target -= flush
        return file_target

    def _zram_add(self, process: Process, pages: int) -> None:
        process.anon_swapped += pages
        self.zram_stored += pages
        self._zram_bytes += pages * PAGE_BYTES / (process.zram_ratio or self.spec.zram_ratio)
        self._resize_zram_pool()

    def _zram_remove(self, process: Process, pages: int) -> None:
        if pages <= 0:
            return
        process.anon_swapped -= pages
        self.zram_stored -= pages
        ratio = process.zram_ratio or self.spec.zram_ratio
        self._zram_bytes = max(0.0, self._zram_bytes - pages * PAGE_BYTES / ratio)
        self._resize_zram_pool()

    def _resize_zram_pool(self) -> None:
        pool = math.ceil(self._zram_bytes / PAGE_BYTES - 1e-9) if self.zram_stored else 0
        self.free_pages -= pool - self.zram_pool
        self.zram_pool = pool

    def _writeback(self, pages: int) -> None:
        """Dirty cache goes to storage; once written the pages are clean (reclaimable)."""
        self.pgpgout += pages
        self.cache_writeback += pages
        done = self.storage.submit(pages, write=True)

        def cleaned(_: Event) -> None:
            self.cache_writeback -= pages
            self.cache_clean += pages

        done.callbacks.append(cleaned)  # type: ignore[union-attr]

    # -- vmpressure and PSI -------------------------------------------------------------
    def _vmpressure(self, scanned: int, reclaimed: int) -> None:
        self._window_scanned += scanned
        self._window_reclaimed += reclaimed
        if self._window_scanned < VMPRESSURE_WINDOW:
            return
        s, r = self._window_scanned, self._window_reclaimed
        self._window_scanned = self._window_reclaimed = 0
        pressure = (s - r) / s * 100
        level = (
            "critical"
            if pressure >= VMPRESSURE_CRITICAL
            else "medium"
            if pressure >= VMPRESSURE_MEDIUM
            else "low"
        )
        sample = VmPressure(self.env.now, pressure, level)
        self.vmpressure.append(sample)
        for listener in self.vmpressure_listeners:
            listener(sample)

    def _stall_begin(self, reclaiming: bool) -> None:
        self._account_psi()
        self._stalled += 1
        self._reclaimers += reclaiming

    def _stall_end(self, reclaiming: bool) -> None:
        self._account_psi()
        self._stalled -= 1
        self._reclaimers -= reclaiming

    def psi_some_now_ns(self) -> int:
        """PSI memory "some" up to now (ns), without closing the current interval."""
        open_ns = self.env.now - self._stall_since if self._stalled else 0
        return self.psi_some_ns + open_ns

    def _account_psi(self) -> None:
        """Charge the interval since the last change: "some" if anyone was stalled, "full"
        if no thread was doing useful work (every busy thread was a reclaimer)."""
        now = self.env.now
        if self._stalled:
            self.psi_some_ns += now - self._stall_since
            if self.cpu.busy_threads() <= self._reclaimers:
                self.psi_full_ns += now - self._stall_since
        self._stall_since = now


# -- LRU models ---------------------------------------------------------------------------
class LruModel(Protocol):
    """How reclaim chooses pages: the per-process state it keeps (told of every page
    that arrives, is used, faults back or leaves) and one reclaim pass."""

    def allocating(self, process: Process, file_pages: int, anon_pages: int) -> None: ...
    def added(self, process: Process, kind: str, pages: int) -> None: ...
    def touched(self, process: Process, file_pages: int, anon_pages: int) -> tuple[int, int]:
        """Uses of pages; returns how many of the file uses fault (hot, cold pages)."""
        ...

    def read_around(
        self, process: Process, hot_faults: int, cold_faults: int, window: int
    ) -> FaultRead:
        """The read for the next of the pending file faults (on hot and cold pages),
        with a readaround ``window`` of pages."""
        ...

    def refaulted(self, process: Process, kind: str, pages: int, hot: int = 0) -> None: ...
    def removed(self, process: Process, kind: str, pages: int) -> None: ...
    def released(self, process: Process) -> None: ...
    def reclaim(self, target: int, batch: _Batch) -> None: ...
    def reclaim_from(self, process: Process, target: int, batch: _Batch) -> None:
        """Scan ``target`` pages of one process's memory (its cgroup's lruvec)."""
        ...

    def inactive_pages(self) -> tuple[int, int] | None:
        """The node's inactive (anon, file) pages, or None if the model keeps no lists."""
        ...

    def check(self) -> None: ...


class RecencyLru:
    """One global recency order over processes (least recently used first) and, within
    a process, referenced pages by recent use: a resident page was used since the
    scanner last passed with chance 1 − exp(−uses / working set), uses decayed over the
    profile's ``referenced_window_ms``; pages just faulted back count as used."""

    def __init__(self, memory: Memory) -> None:
        self.m = memory

    def allocating(self, process: Process, file_pages: int, anon_pages: int) -> None:
        self._used(process, file_pages, anon_pages)

    def added(self, process: Process, kind: str, pages: int) -> None:
        pass

    def touched(self, process: Process, file_pages: int, anon_pages: int) -> tuple[int, int]:
        self._used(process, file_pages, anon_pages)
        if not file_pages or process.file_resident >= process.file_ws_pages:
            return 0, 0
        evicted_share = 1 - process.file_resident / process.file_ws_pages
        return 0, int(self.m._rng.binomial(file_pages, evicted_share))

    def read_around(
        self, process: Process, hot_faults: int, cold_faults: int, window: int
    ) -> FaultRead:
        # Up to a window of faulting pages share one read (their locality stands in
        # for the readaround window's neighbours).
        missing = process.file_ws_pages - process.file_resident
        chunk = max(0, min(window, cold_faults, missing))
        return FaultRead(chunk, 0, 0, chunk)

    def refaulted(self, process: Process, kind: str, pages: int, hot: int = 0) -> None:
        if kind == "anon":
            self._used(process, 0, pages, refaulted=True)
        else:
            self._used(process, pages, 0, refaulted=True)

    def removed(self, process: Process, kind: str, pages: int) -> None:
        pass

    def released(self, process: Process) -> None:
        pass

    def check(self) -> None:
        pass

    def reclaim(self, target: int, batch: _Batch) -> None:
        m = self.m
        spec = m.spec
        anon_share = spec.swappiness / 200 if m.zram_stored < m.zram_limit else 0.0
        anon_target = round(target * anon_share)
        file_target = target - anon_target
        file_target = m._scan_cache(file_target, batch)
        # Then processes, least recently used first. When one kind runs out (no file
        # pages left, or zRAM full) the rest of the batch goes to the other, as
        # get_scan_count() balances the LRUs by what they hold.
        if file_target > 0 or anon_target > 0:
            victims = sorted(
                m.processes.alive,
                key=lambda p: (p.last_use_ns, -p.oom_score_adj, p.pid),
            )
            file_target, anon_target = self._scan(victims, file_target, anon_target, batch)
            if file_target and m.zram_stored < m.zram_limit:
                _, unscanned = self._scan(victims, 0, file_target, batch)
                file_target, anon_target = 0, anon_target + unscanned
            elif anon_target:
                unscanned, _ = self._scan(victims, m._scan_cache(anon_target, batch), 0, batch)
                file_target, anon_target = file_target + unscanned, 0
            left = file_target + anon_target
            if left:
                # Nothing of either kind to take: the kernel goes on scanning pages it
                # cannot reclaim (unevictable, anon with zRAM full) at rising priority
                # — scanned, not reclaimed, which drives vmpressure to critical.
                batch.scanned += left

    def inactive_pages(self) -> tuple[int, int] | None:
        return None

    def reclaim_from(self, process: Process, target: int, batch: _Batch) -> None:
        m = self.m
        room = m.zram_stored < m.zram_limit
        anon_target = round(target * m.spec.swappiness / 200) if room else 0
        file_left, anon_left = self._scan([process], target - anon_target, anon_target, batch)
        if file_left and room:  # one kind ran out: the rest of the batch goes to the other
            self._scan([process], 0, file_left, batch)
        elif anon_left:
            self._scan([process], anon_left, 0, batch)

    def _scan(
        self, victims: list[Process], file_target: int, anon_target: int, batch: _Batch
    ) -> tuple[int, int]:
        """One pass over ``victims``; returns the file and anon targets left unscanned."""
        m = self.m
        for process in victims:
            if file_target <= 0 and anon_target <= 0:
                break
            if file_target > 0 and process.file_resident:
                file_target -= self._reclaim_pages(process, "file", file_target, batch)
            if anon_target > 0 and process.anon_pages and m.zram_stored < m.zram_limit:
                anon_target -= self._reclaim_pages(process, "anon", anon_target, batch)
        return max(0, file_target), max(0, anon_target)

    def _used(
        self, process: Process, file_pages: int, anon_pages: int, refaulted: bool = False
    ) -> None:
        """``process`` used pages now (none: just decay its recent-use counts to now);
        ``refaulted``: they were faulted back in (refaults or swap-ins)."""
        now = self.m.env.now
        elapsed = now - process.recent_at_ns
        if elapsed:
            decay = math.exp(-elapsed / self.m._ref_window_ns)
            process.recent_file *= decay
            process.recent_anon *= decay
            process.recent_refault_file *= decay
            process.recent_refault_anon *= decay
            process.recent_at_ns = now
        if refaulted:
            process.recent_refault_file += file_pages
            process.recent_refault_anon += anon_pages
        elif file_pages or anon_pages:
            process.recent_file += file_pages
            process.recent_anon += anon_pages
            process.last_use_ns = now

    def _reclaim_pages(self, process: Process, kind: str, want: int, batch: _Batch) -> int:
        """Scan up to ``want`` pages of one pool; returns how many were scanned."""
        m = self.m
        self._used(process, 0, 0)  # decay its recent-use counts to now
        pool = process.file_resident if kind == "file" else process.anon_pages
        scanned = min(pool, want)
        if kind == "file":
            uses, faulted = process.recent_file, process.recent_refault_file
            working_set = process.file_ws_pages
        else:
            uses, faulted = process.recent_anon, process.recent_refault_anon
            working_set = process.anon_pages + process.anon_swapped
        referenced = 0
        if scanned and uses >= 1.0:
            # Uses fall uniformly on the working set, so a resident page was used since
            # the scanner last passed (about one window ago) with chance 1 − e^(−uses/ws);
            # pages just faulted back in were all used (workingset activation).
            p_ref = min(1.0, faulted / pool - math.expm1(-uses / working_set))
            referenced = int(m._rng.binomial(scanned, p_ref))
        taken = scanned - referenced
        if kind == "anon":
            taken = min(taken, m.zram_limit - m.zram_stored)
            batch.compressed += taken
            process.anon_pages -= taken
            m._zram_add(process, taken)
            m.pswpout += taken
        else:
            process.file_resident -= taken
        m.free_pages += taken
        batch.scanned += scanned
        batch.reclaimed += taken
        return scanned


class ListLru:
    """Linux's LRU lists per process (:mod:`mqoe.device.lru`): each pass takes the
    unmapped page cache first (pages written or read once, the oldest on the file
    lists), then one lruvec chosen with chance proportional to its size (reclaim scans
    every lruvec ``size >> priority`` pages), split between its lists by get_scan_count
    and aged by shrink_active_list whenever its inactive list is low."""

    def __init__(self, memory: Memory) -> None:
        self.m = memory
        spec = memory.spec
        self._rng = memory._rng
        self._kernel = spec.kernel
        # Shadow entries and the refault distance: per lruvec from Linux 4.7 (memcg-aware
        # workingset), per node before it.
        self._per_lruvec_workingset = spec.kernel >= (4, 7)

    @staticmethod
    def vec(process: Process) -> Lruvec:
        if process.lru is None:
            process.lru = Lruvec()
        return process.lru

    # -- pages arriving, used, leaving -------------------------------------------------
    def allocating(self, process: Process, file_pages: int, anon_pages: int) -> None:
        process.last_use_ns = self.m.env.now

    def added(self, process: Process, kind: str, pages: int) -> None:
        vec = self.vec(process)
        if kind == "anon":
            lists.add(vec.anon, pages, active=True)
        elif kind in ("code", "file"):
            kind = "code" if kind == "code" else "data"
            cold, hot = vec.parts(kind)
            # The process's working set grew by ``pages`` (allocate counted them first);
            # its hot set grows with it.
            ws = self._ws(process, kind)
            hot_pages = self._hot(ws) - self._hot(ws - pages)
            lists.add(hot, hot_pages, active=False)
            lists.add(cold, pages - hot_pages, active=False)

    def _hot(self, pages: int) -> int:
        """The hot pages of a working set of ``pages``."""
        return round(pages * self.m.spec.hot_fraction)

    @staticmethod
    def _ws(process: Process, kind: str) -> int:
        """The process's file working set of one kind (code or data)."""
        if kind == "code":
            return process.code_ws_pages
        return process.file_ws_pages - process.code_ws_pages

    def _evicted(self, process: Process, vec: Lruvec) -> tuple[int, int, int, int]:
        """Its evicted working-set pages: hot code, hot data, cold code, cold data."""
        code_ws = process.code_ws_pages
        data_ws = process.file_ws_pages - code_ws
        hot_code, hot_data = self._hot(code_ws), self._hot(data_ws)
        return (
            max(0, hot_code - vec.code_hot.pages),
            max(0, hot_data - vec.data_hot.pages),
            max(0, code_ws - hot_code - vec.code.pages),
            max(0, data_ws - hot_data - vec.data.pages),
        )

    def touched(self, process: Process, file_pages: int, anon_pages: int) -> tuple[int, int]:
        process.last_use_ns = self.m.env.now
        vec, rng = self.vec(process), self._rng
        faults = [0, 0]
        ws = process.file_ws_pages
        if file_pages and ws:
            # Uses fall on the hot pages and the cold tail by the profile's locality;
            # within each, uniformly. A page is used with chance 1 − e^(−uses per page):
            # a resident one becomes young, an evicted one faults.
            hot_ws = self._hot(process.code_ws_pages) + self._hot(ws - process.code_ws_pages)
            hot_uses = round(file_pages * self.m.spec.hot_use_share) if hot_ws else 0
            evicted = self._evicted(process, vec)
            split = ((hot_uses, hot_ws), (file_pages - hot_uses, ws - hot_ws))
            for i, (uses, size) in enumerate(split):
                if uses <= 0 or size <= 0:
                    continue
                p = -math.expm1(-uses / size)
                for kind in ("code", "data"):
                    lists.mark(vec.parts(kind)[1 - i], p, rng)
                faults[i] = lists.draw(rng, evicted[2 * i] + evicted[2 * i + 1], p)
        swapped = process.anon_pages + process.anon_swapped
        if anon_pages and swapped:
            lists.touch(vec.anon, round(anon_pages * process.anon_pages / swapped), rng)
        return faults[0], faults[1]

    def read_around(
        self, process: Process, hot_faults: int, cold_faults: int, window: int
    ) -> FaultRead:
        """Each major fault is its own read (filemap_fault waits for it): the faulting
        page and the readaround window's other pages of the working set not in RAM.
        Pending faults on the pages it brings in are served by it too (minor faults).
        do_sync_mmap_readahead counts major faults less those minor faults (mmap_miss,
        kept here per process rather than per file): past MMAP_LOTSAMISS readaround
        stops, and a fault reads its own page only."""
        ws = process.file_ws_pages
        missing = ws - process.file_resident
        if missing <= 0:
            return FaultRead(0, 0, hot_faults, cold_faults)
        rng, vec = self._rng, self.vec(process)
        hot_code, hot_data, _, _ = self._evicted(process, vec)
        hot_missing = hot_code + hot_data
        hot_faults = min(hot_faults, hot_missing)
        cold_faults = min(cold_faults, missing - hot_missing)
        if hot_faults + cold_faults <= 0:
            return FaultRead(0, 0, 0, 0)
        vec.mmap_miss = min(vec.mmap_miss + 1, 10 * lists.MMAP_LOTSAMISS)  # a major fault
        if vec.mmap_miss > lists.MMAP_LOTSAMISS:
            window = 1
        first_hot = lists.draw(rng, 1, hot_faults / (hot_faults + cold_faults))
        # The window's other pages: each missing as the working set's other pages are.
        neighbours = lists.draw(rng, min(window - 1, missing - 1), (missing - 1) / max(1, ws - 1))
        hot_neighbours = lists.pick(rng, neighbours, hot_missing - first_hot, missing - 1)
        cold_neighbours = neighbours - hot_neighbours
        # Pending faults are spread over the missing pages of their kind: those on the
        # neighbours are served by this read.
        first_cold = 1 - first_hot
        hot_served = first_hot + lists.pick(
            rng, hot_faults - first_hot, hot_neighbours, hot_missing - first_hot
        )
        cold_served = first_cold + lists.pick(
            rng, cold_faults - first_cold, cold_neighbours, missing - hot_missing - first_cold
        )
        vec.mmap_miss = max(0, vec.mmap_miss - (hot_served + cold_served - 1))
        return FaultRead(1 + neighbours, first_hot + hot_neighbours, hot_served, cold_served)

    def refaulted(self, process: Process, kind: str, pages: int, hot: int = 0) -> None:
        vec, m, rng = self.vec(process), self.m, self._rng
        if kind == "anon":  # swap-in: read_swap_cache_async adds to the inactive list
            lists.add(vec.anon, pages, active=False)
            return
        hot_code, hot_data, cold_code, cold_data = self._evicted(process, vec)
        hot = min(hot, hot_code + hot_data)
        cold = min(pages - hot, cold_code + cold_data)
        hot = pages - cold  # ≤ the hot pages evicted: pages ≤ all evicted
        hot_code = lists.pick(rng, hot, hot_code, hot_code + hot_data)
        cold_code = lists.pick(rng, cold, cold_code, cold_code + cold_data)
        groups = (  # (list, its pages refaulting)
            (vec.code_hot, hot_code),
            (vec.data_hot, hot - hot_code),
            (vec.code, cold_code),
            (vec.data, cold - cold_code),
        )
        activate = 0
        if vec.shadow_pages:  # (the node-wide active list is summed only when needed)
            if self._per_lruvec_workingset:
                counter, active = vec.evictions, vec.file_active
            else:
                counter, active = m.evictions, self._active_file()
            activate = lists.refaulted(vec, pages, counter, active, rng)
        m.workingset_activate += activate
        # An activation ages the inactive list too (workingset_refault: inactive_age++).
        if self._per_lruvec_workingset:
            vec.evictions += activate
        m.evictions += activate
        # The activated pages, drawn over the refaulting ones without replacement.
        left, left_pages = activate, pages
        for target, n in groups:
            active_n = lists.pick(rng, left, n, left_pages)
            left -= active_n
            left_pages -= n
            lists.add(target, active_n, active=True)
            lists.add(target, n - active_n, active=False)

    def removed(self, process: Process, kind: str, pages: int) -> None:
        lists.remove(self.vec(process).of(kind), pages, self._rng)

    def released(self, process: Process) -> None:
        process.lru = None

    def check(self) -> None:
        for p in self.m.processes.processes:
            if p.lru is None:
                assert p.anon_pages == p.file_resident == 0 or not p.alive, p
                continue
            p.lru.check()
            assert p.lru.anon.pages == p.anon_pages, (p, p.lru)
            assert p.lru.file_pages == p.file_resident, (p, p.lru)
            assert min(self._evicted(p, p.lru)) >= 0, (p, p.lru)
            for kind in ("code", "data"):
                ws = self._ws(p, kind)
                assert p.lru.pages(kind) <= ws, (p, p.lru)
                assert p.lru.parts(kind)[1].pages <= self._hot(ws), (p, p.lru)

    def _active_file(self) -> int:
        return sum(p.lru.file_active for p in self.m.processes.alive if p.lru is not None)

    # -- reclaim ------------------------------------------------------------------------
    def reclaim(self, target: int, batch: _Batch) -> None:
        m = self.m
        swap_ok = m.zram_stored < m.zram_limit
        # Global reclaim visits every memory cgroup's lruvec in turn, each by its size
        # (shrink_zone's mem_cgroup_iter): the unmapped page cache is the root cgroup's
        # file lists, one lruvec among the processes' rather than a pool taken first.
        unmapped = m.cache_clean + m.cache_dirty
        candidates: list[tuple[Process, Lruvec, int]] = []
        total = mapped_file = 0
        for p in m.processes.alive:
            vec = p.lru
            if vec is None:
                continue
            file = vec.file_pages
            mapped_file += file
            size = file + (vec.anon.pages if swap_ok else 0)
            if size:
                candidates.append((p, vec, size))
                total += size
        if unmapped and (not total or self._rng.random() * (total + unmapped) < unmapped):
            target = m._scan_cache(target, batch)
            if target <= 0:
                return
        if not total:
            # Nothing of either kind to take: the kernel goes on scanning pages it
            # cannot reclaim (unevictable, anon with zRAM full) at rising priority —
            # scanned, not reclaimed, which drives vmpressure to critical.
            batch.scanned += target
            return
        pick = self._rng.random() * total
        chosen = candidates[-1]
        for candidate in candidates:
            pick -= candidate[2]
            if pick < 0:
                chosen = candidate
                break
        # The page cache as /proc/meminfo Cached counts it (Memory.file_pages).
        cached = m.cache_clean + m.cache_dirty + mapped_file
        self._shrink_lruvec(chosen[0], chosen[1], target, batch, swap_ok, cached)

    def inactive_pages(self) -> tuple[int, int] | None:
        m = self.m
        anon = file = 0
        for p in m.processes.alive:
            if p.lru is not None:
                anon += p.lru.anon.inactive
                file += p.lru.file_inactive
        return anon, file + m.cache_clean + m.cache_dirty  # the unmapped cache: inactive

    def reclaim_from(self, process: Process, target: int, batch: _Batch) -> None:
        if process.lru is None:
            return
        m = self.m
        swap_ok = m.zram_stored < m.zram_limit
        self._shrink_lruvec(process, process.lru, target, batch, swap_ok, m.file_pages)

    def _shrink_lruvec(
        self,
        process: Process,
        vec: Lruvec,
        target: int,
        batch: _Batch,
        swap_ok: bool,
        cached: int,
    ) -> None:
        """shrink_lruvec: scan ``target`` pages of one process's lists (``cached``: the
        node's page cache, for get_scan_count's SCAN_ANON test)."""
        m, rng = self.m, self._rng
        file_inactive, file_active = vec.file_inactive, vec.file_active
        ratio = lists.inactive_ratio("file", file_inactive + file_active, self._kernel)
        file_low = lists.inactive_is_low(file_inactive, file_active, ratio)
        ratio = lists.inactive_ratio("anon", vec.anon.pages, self._kernel)
        anon_low = lists.inactive_is_low(vec.anon.inactive, vec.anon.active, ratio)
        if not swap_ok or not vec.anon.pages:
            fa, ff = 0.0, 1.0  # SCAN_FILE: no swap space
        elif cached + m.free_pages <= m.high_wmark:
            fa, ff = 1.0, 0.0  # SCAN_ANON: the page cache is nearly gone
        elif not file_low and file_inactive >> lists.DEF_PRIORITY:
            fa, ff = 0.0, 1.0  # SCAN_FILE: enough inactive page cache
        else:
            fa, ff = lists.scan_fractions(vec, m.spec.swappiness, True)
        weights = (
            vec.anon.inactive * fa,
            file_inactive * ff,
            vec.anon.active * fa if anon_low else 0.0,
            file_active * ff if file_low else 0.0,
        )
        whole = sum(weights)
        if whole <= 0:
            batch.scanned += target  # scanned, nothing to take (see reclaim)
            return
        n_ia, n_if, n_aa, n_af = (round(target * w / whole) for w in weights)
        cost = m.spec.scan_cycles_per_page
        # page_referenced and try_to_unmap walk every mapping of a file page: the
        # preloaded image is mapped by every Java process.
        rmap = 0
        if process is m.preload:
            rmap = (m.preload_mappings() - 1) * m.spec.rmap_cycles_per_mapping
        # Age the active lists first (shrink_list calls shrink_active_list when the
        # inactive list is low).
        if n_af:
            code = lists.pick(rng, n_af, vec.active("code"), file_active)
            for kind, n in (("code", code), ("data", n_af - code)):
                out = lists.scan_active(vec.parts(kind), kind, n, rng)
                vec.recent_scanned[1] += out.scanned
                vec.recent_rotated[1] += out.rotated
                batch.aged += out.scanned
                batch.cycles += out.scanned * (cost + rmap)
        if n_aa:
            out = lists.shrink_active(vec.anon, "anon", n_aa, rng)
            vec.recent_scanned[0] += out.scanned  # anon: every scanned page deactivated
            batch.aged += out.scanned
            batch.cycles += out.scanned * cost
        if n_if:
            code = lists.pick(rng, n_if, vec.inactive("code"), file_inactive)
            for kind, n in (("code", code), ("data", n_if - code)):
                out = lists.scan_inactive(vec.parts(kind), kind, n, rng)
                self._file_scanned(process, vec, out, batch)
                batch.cycles += (out.scanned + out.reclaimed) * rmap
        if n_ia:
            room = m.zram_limit - m.zram_stored
            out = lists.shrink_inactive(vec.anon, "anon", n_ia, rng)
            if out.reclaimed > room:  # zRAM filled mid-batch: the rest stay
                extra = out.reclaimed - room
                lists.put_back(vec.anon, extra)
                out.reclaimed -= extra
                out.rotated += extra
            vec.recent_scanned[0] += out.scanned
            vec.recent_rotated[0] += out.activated
            taken = out.reclaimed
            batch.compressed += taken
            process.anon_pages -= taken
            m._zram_add(process, taken)
            m.pswpout += taken
            m.free_pages += taken
            batch.scanned += out.scanned
            batch.reclaimed += taken
            batch.aged += out.activated + out.rotated

    def _file_scanned(self, process: Process, vec: Lruvec, out: lists.Scan, batch: _Batch) -> None:
        m = self.m
        vec.recent_scanned[1] += out.scanned
        vec.recent_rotated[1] += out.activated
        taken = out.reclaimed
        process.file_resident -= taken
        m.free_pages += taken
        if self._per_lruvec_workingset:
            lists.evicted(vec, taken, vec.evictions)
            vec.evictions += taken
        else:
            lists.evicted(vec, taken, m.evictions)
        m.evictions += taken
        batch.scanned += out.scanned
        batch.reclaimed += taken
        batch.aged += out.activated + out.rotated


LRU_MODELS: dict[str, Callable[[Memory], LruModel]] = {"recency": RecencyLru, "lists": ListLru}
