"""Memory: page-accurate accounting, watermarks, allocation, the page cache, kernel
pools, refaults, zRAM and writeback — the mechanisms of the memory-pressure study
(CoNEXT 2022), with reclaim (:mod:`mqoe.device.memory_reclaim`), vmpressure and PSI
(:mod:`mqoe.device.memory_pressure`) as mixins of :class:`Memory`.

Every 4 KB page is in exactly one place (the conservation invariant,
:meth:`Memory.check`): free, reserved (carve-outs and kernel), the unmapped page cache
(clean, dirty or under writeback), a process's resident anon, file or GPU pages, the
zRAM pool (the RAM holding compressed anon pages), or a named kernel pool (pages other
kernel allocators hold, e.g. the zsmalloc pool of compressed GPU buffers, GPU-buffer study).

* **Watermarks** (Linux mm/page_alloc.c): min_free_kbytes = √(lowmem_kb × 16) clamped to
  128 KB–64 MB; low = min + max(min/4, managed × scale/10000); high = min + 2 × that.
* **Allocation** below *min* reclaims directly on the allocating thread; GFP_ATOMIC
  allocations (:meth:`Memory.grow_pool_atomic`) never reclaim and dig into the atomic
  reserve instead. Reclaim itself — kswapd, direct reclaim and its throttling,
  soft-limit reclaim — is :mod:`mqoe.device.memory_reclaim`.
* **Two LRU models** (``LRU_MODELS``, chosen by the profile's ``[memory] lru``) decide
  which pages reclaim takes, behind :class:`~mqoe.device.lru_model.LruModel`: the
  recency model (:mod:`mqoe.device.lru_recency`, the default) and ``lists``, Linux's
  inactive/active lists per process with workingset refault detection
  (:mod:`mqoe.device.lru_lists`, :mod:`mqoe.device.lru`,
  docs/decisions/0002-memory-lru.md).
* **Writeback**: dirty page cache is written every 5 s by the flusher (and by reclaim
  when it reaches dirty pages), in requests through mmcqd.
* **Refaults**: :meth:`touch` is how a running process uses its working set; touching
  evicted file pages reads them back through storage (the thread waits on I/O), touching
  swapped anon pages decompresses them (CPU) — both are memory stalls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Final

from mqoe.device.cpu import Cpu, Fair, Thread
from mqoe.device.lru_lists import ListLru
from mqoe.device.lru_model import FaultRead, LruModel
from mqoe.device.lru_recency import RecencyLru
from mqoe.device.memory_pressure import (
    VMPRESSURE_CRITICAL,
    VMPRESSURE_MEDIUM,
    VMPRESSURE_WINDOW,
    VmPressure,
)
from mqoe.device.memory_reclaim import SWAP_CLUSTER_MAX, Reclaim, ZramStreams
from mqoe.device.process import NATIVE_ADJ, Process, ProcessTable
from mqoe.device.profiles import MemorySpec
from mqoe.device.storage import Storage
from mqoe.engine import Environment, Event, ms
from mqoe.engine.draws import Draws, PyDraws

PAGE_BYTES: Final = 4096
KERNEL_POOL: Final = "kernel"  # the kernel_pools entry of [memory] kernel_mb
_FAULT_STEP_PAGES: Final = 256  # allocations fault in 1 MiB at a time
_WRITEBACK_INTERVAL_NS: Final = ms(5000)  # vm.dirty_writeback_centisecs = 500
WRITEBACK_PAGES: Final = 128  # pages per writeback request (512 KB, max_sectors_kb of eMMC)


def watermarks(spec: MemorySpec) -> tuple[int, int, int]:
    """(min, low, high) in pages, by the kernel's formulas (mm/page_alloc.c)."""
    managed = spec.total_pages - spec.reserved_pages
    lowmem_kb = managed * 4
    min_kb = min(max(int(math.sqrt(lowmem_kb * 16)), 128), 65536)
    min_pages = min_kb // 4
    step = max(min_pages // 4, managed * spec.watermark_scale_factor // 10000)
    extra = spec.extra_free_kbytes // 4  # __setup_per_zone_wmarks: low and high gain it
    return min_pages, min_pages + extra + step, min_pages + extra + 2 * step


class Memory(Reclaim):
    """The phone's RAM. Public: ``allocate``, ``touch``, ``free``, ``add_page_cache``,
    ``release``, counters and ``check``. Reclaim, vmpressure and PSI are its mixins
    (:class:`~mqoe.device.memory_reclaim.Reclaim`, which builds on
    :class:`~mqoe.device.memory_pressure.Pressure`)."""

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
        self._streams = ZramStreams(env, spec.zram_streams)
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
        self._draws: PyDraws = Draws(self._rng)  # scalar draws from it, without numpy's overhead
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
            draws = self._draws
            total = process.anon_pages + process.anon_swapped
            share = process.anon_swapped / total
            faults = draws.binomial(anon_pages, share)
            if faults and self._swap_cluster > 1:
                # swapin_readahead: each fault also reads the other slots of its
                # cluster; those still in use hold pages of the same process (reclaim
                # swaps a process's pages out together). They are decompressed too.
                extra = draws.binomial(faults * (self._swap_cluster - 1), share)
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

    # -- zRAM and writeback -------------------------------------------------------------
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


LRU_MODELS: Final[dict[str, Callable[[Memory], LruModel]]] = {
    "recency": RecencyLru,
    "lists": ListLru,
}

__all__ = [
    "KERNEL_POOL",
    "LRU_MODELS",
    "PAGE_BYTES",
    "SWAP_CLUSTER_MAX",
    "VMPRESSURE_CRITICAL",
    "VMPRESSURE_MEDIUM",
    "VMPRESSURE_WINDOW",
    "WRITEBACK_PAGES",
    "FaultRead",
    "ListLru",
    "LruModel",
    "Memory",
    "RecencyLru",
    "VmPressure",
    "watermarks",
]
