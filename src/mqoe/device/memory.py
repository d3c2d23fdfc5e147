"""Memory: page-accurate accounting, watermarks, kswapd, direct reclaim, zRAM, refaults,
vmpressure and PSI — the mechanisms of spec 01.

Every 4 KB page is in exactly one place (the conservation invariant,
:meth:`Memory.check`): free, reserved (carve-outs and kernel), the unmapped page cache
(clean, dirty or under writeback), a process's resident anon, file or GPU pages, the
zRAM pool (the RAM holding compressed anon pages), or a named kernel pool (pages other
kernel allocators hold, e.g. the zsmalloc pool of compressed GPU buffers, spec 02).

* **Watermarks** (spec 06): min_free_kbytes = √(lowmem_kb × 16) clamped to 128 KB–64 MB;
  low = min + max(min/4, managed × scale/10000); high = min + 2 × that.
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
* **Direct reclaim**: an allocation that would leave free memory below *min* makes the
  allocating thread reclaim itself (CPU on that thread, a memory stall).
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
from collections.abc import Callable, Generator
from dataclasses import dataclass

from mqoe.device.cpu import Cpu, Fair, Thread
from mqoe.device.process import Process, ProcessTable
from mqoe.device.profiles import MemorySpec
from mqoe.device.storage import Storage
from mqoe.engine import Environment, Event, ms

PAGE_BYTES = 4096
SWAP_CLUSTER_MAX = 32  # pages per reclaim batch (include/linux/swap.h)
VMPRESSURE_WINDOW = 512  # scanned pages per vmpressure sample (mm/vmpressure.c)
VMPRESSURE_MEDIUM = 60
VMPRESSURE_CRITICAL = 95
_OOM_WAIT_NS = ms(10)  # nothing left to reclaim: wait for lmkd (congestion_wait)
_FAULT_STEP_PAGES = 256  # allocations fault in 1 MiB at a time
_WRITEBACK_INTERVAL_NS = ms(5000)  # vm.dirty_writeback_centisecs = 500
WRITEBACK_PAGES = 128  # pages per writeback request (512 KB, max_sectors_kb of eMMC)


def watermarks(spec: MemorySpec) -> tuple[int, int, int]:
    """(min, low, high) in pages, by the kernel's formulas (spec 06)."""
    managed = spec.total_pages - spec.reserved_pages
    lowmem_kb = managed * 4
    min_kb = min(max(int(math.sqrt(lowmem_kb * 16)), 128), 65536)
    min_pages = min_kb // 4
    step = max(min_pages // 4, managed * spec.watermark_scale_factor // 10000)
    return min_pages, min_pages + step, min_pages + 2 * step


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
    writeback: int = 0


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
        self.zram_pool = 0  # RAM pages holding them
        self.kernel_pools: dict[str, int] = {}  # name → pages (grow_pool / shrink_pool)
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
        self.kswapd_wakeups = 0

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

    # -- public API -------------------------------------------------------------------
    def allocate(
        self, process: Process, thread: Thread, pages: int, kind: str = "anon"
    ) -> Generator[Event, object, None]:
        """Give ``process`` ``pages`` new pages (``kind`` anon | gpu | file); the calling
        thread reclaims directly if that would leave free memory below *min*."""
        if kind not in ("anon", "gpu", "file"):
            raise ValueError(f"unknown page kind {kind!r}")
        self._used(process, pages if kind == "file" else 0, pages if kind == "anon" else 0)
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
            pages -= step
            self._maybe_wake_kswapd()

    def free(self, process: Process, pages: int, kind: str = "anon") -> None:
        """``process`` unmaps ``pages`` of its own (anon pages in zRAM go first for anon)."""
        if kind == "anon":
            from_zram = min(pages - min(pages, process.anon_pages), process.anon_swapped)
            resident = min(pages, process.anon_pages)
            process.anon_pages -= resident
            self.free_pages += resident
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
        """``thread`` uses ``file_pages`` of its process's file working set and
        ``anon_pages`` of its anon memory; evicted pages fault back in (memory stalls)."""
        rng = self._rng
        if file_pages or anon_pages:
            self._used(process, file_pages, anon_pages)
        if file_pages and process.file_resident < process.file_ws_pages:
            evicted_share = 1 - process.file_resident / process.file_ws_pages
            faults = int(rng.binomial(file_pages, evicted_share))
            while faults > 0 and process.alive and thread.alive:
                chunk = min(self.storage.spec.readahead_pages, faults,
                            process.file_ws_pages - process.file_resident)  # fmt: skip
                if chunk <= 0:
                    break
                self._stall_begin(reclaiming=False)
                try:
                    yield from self._make_room(thread, chunk)
                    if not (process.alive and thread.alive):
                        return
                    chunk = min(chunk, process.file_ws_pages - process.file_resident)
                    # The page-cache pages are allocated now and filled by the read.
                    self.free_pages -= chunk
                    process.file_resident += chunk
                    self.workingset_refault += chunk
                    self._used(process, chunk, 0, refaulted=True)
                    self.cpu.set_io_wait(thread, True)
                    yield self.storage.submit(chunk)
                    if thread.alive:
                        self.cpu.set_io_wait(thread, False)
                finally:
                    self._stall_end(reclaiming=False)
                faults -= chunk
                self._maybe_wake_kswapd()
        if anon_pages and process.anon_swapped and process.alive and thread.alive:
            total = process.anon_pages + process.anon_swapped
            faults = int(rng.binomial(anon_pages, process.anon_swapped / total))
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
                        self._used(process, 0, faults, refaulted=True)
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
        process.anon_pages = process.gpu_pages = process.file_resident = 0
        process.file_ws_pages = 0

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
            while self.free_pages - pages < self.min_wmark and thread.alive:
                self._maybe_wake_kswapd()
                batch = self._reclaim(self.spec.reclaim_batch_pages, direct=True)
                if batch.cycles:
                    yield self.cpu.run(thread, batch.cycles)
                if batch.reclaimed == 0 and thread.alive:
                    yield self.env.timeout(_OOM_WAIT_NS)  # wait for kswapd / lmkd
        finally:
            self._stall_end(reclaiming=True)

    def _kswapd_loop(self) -> Generator[Event, object, None]:
        """kswapd: sleep above *low*; once woken, reclaim batches until above *high*."""
        while True:
            if self.free_pages >= self.low_wmark:
                self._kswapd_wake = Event(self.env)
                yield self._kswapd_wake
            self._kswapd_wake = None
            while self.free_pages < self.high_wmark:
                batch = self._reclaim(self.spec.reclaim_batch_pages, direct=False)
                if batch.cycles:
                    yield self.cpu.run(self.kswapd, batch.cycles)
                if batch.reclaimed == 0 and batch.writeback == 0:
                    # Nothing reclaimable: back off like kswapd's failed balance.
                    yield self.env.timeout(ms(100))
                    break

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

    def _reclaim(self, target: int, direct: bool) -> _Batch:
        """Scan the pools coldest first, splitting the target between file and anon."""
        batch = _Batch()
        spec = self.spec
        anon_share = spec.swappiness / 200 if self.zram_stored < self.zram_limit else 0.0
        anon_target = round(target * anon_share)
        file_target = target - anon_target
        file_target = self._scan_cache(file_target, batch)
        # Then processes, least recently used first. When one kind runs out (no file
        # pages left, or zRAM full) the rest of the batch goes to the other, as
        # get_scan_count() balances the LRUs by what they hold.
        if file_target > 0 or anon_target > 0:
            victims = sorted(
                self.processes.alive,
                key=lambda p: (p.last_use_ns, -p.oom_score_adj, p.pid),
            )
            file_target, anon_target = self._scan(victims, file_target, anon_target, batch)
            if file_target and self.zram_stored < self.zram_limit:
                _, unscanned = self._scan(victims, 0, file_target, batch)
                file_target, anon_target = 0, anon_target + unscanned
            elif anon_target:
                unscanned, _ = self._scan(victims, self._scan_cache(anon_target, batch), 0, batch)
                file_target, anon_target = file_target + unscanned, 0
            left = file_target + anon_target
            if left:
                # Nothing of either kind to take: the kernel goes on scanning pages it
                # cannot reclaim (unevictable, anon with zRAM full) at rising priority
                # — scanned, not reclaimed, which drives vmpressure to critical.
                batch.scanned += left
        batch.cycles += batch.scanned * spec.scan_cycles_per_page
        self.pgscan += batch.scanned
        self.pgsteal += batch.reclaimed
        if direct:
            self.pgscan_direct += batch.scanned
        self._vmpressure(batch.scanned, batch.reclaimed)
        return batch

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

    def _scan(
        self, victims: list[Process], file_target: int, anon_target: int, batch: _Batch
    ) -> tuple[int, int]:
        """One pass over ``victims``; returns the file and anon targets left unscanned."""
        for process in victims:
            if file_target <= 0 and anon_target <= 0:
                break
            if file_target > 0 and process.file_resident:
                file_target -= self._reclaim_pages(process, "file", file_target, batch)
            if anon_target > 0 and process.anon_pages and self.zram_stored < self.zram_limit:
                anon_target -= self._reclaim_pages(process, "anon", anon_target, batch)
        return max(0, file_target), max(0, anon_target)

    def _used(
        self, process: Process, file_pages: int, anon_pages: int, refaulted: bool = False
    ) -> None:
        """``process`` used pages now (none: just decay its recent-use counts to now);
        ``refaulted``: they were faulted back in (refaults or swap-ins)."""
        now = self.env.now
        elapsed = now - process.recent_at_ns
        if elapsed:
            decay = math.exp(-elapsed / self._ref_window_ns)
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
            referenced = int(self._rng.binomial(scanned, p_ref))
        taken = scanned - referenced
        if kind == "anon":
            taken = min(taken, self.zram_limit - self.zram_stored)
            batch.cycles += taken * self.spec.compress_cycles_per_page
            process.anon_pages -= taken
            self._zram_add(process, taken)
            self.pswpout += taken
        else:
            process.file_resident -= taken
        self.free_pages += taken
        batch.scanned += scanned
        batch.reclaimed += taken
        return scanned

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

    def _account_psi(self) -> None:
        """Charge the interval since the last change: "some" if anyone was stalled, "full"
        if no thread was doing useful work (every busy thread was a reclaimer)."""
        now = self.env.now
        if self._stalled:
            self.psi_some_ns += now - self._stall_since
            if self.cpu.busy_threads() <= self._reclaimers:
                self.psi_full_ns += now - self._stall_since
        self._stall_since = now
