"""Reclaim, a mixin of :class:`~mqoe.device.memory.Memory` (which keeps its state):
kswapd, direct reclaim with its throttling, soft-limit reclaim and the reclaim pass.

* **kswapd** is a fair-class thread at nice 0 — the foreground's priority — woken below
  *low*, reclaiming batches of 32 pages until free memory is above *high*.
* **A reclaim pass** scans the coldest pages first, as the LRU model chooses them
  (:mod:`mqoe.device.lru_model`). Clean file pages are dropped (they refault if their
  process touches them again); dirty ones are written back first; anon pages are
  compressed into zRAM (CPU on the reclaiming thread, on one of zRAM's compression
  streams). Every pass reports to vmpressure and calls the shrinkers.
* **Direct reclaim**: an allocation that would leave free memory below *min* makes the
  allocating thread reclaim itself (CPU on that thread, a memory stall), in passes of
  falling priority that scan deeper until a batch is reclaimed (do_try_to_free_pages).
  From priority 3 down each pass tells vmpressure of a critical window
  (vmpressure_prio): the critical events a reclaimer that finds nothing to take sends.
  Below half of *min* a user thread is throttled instead (throttle_direct_reclaim), and
  a reclaimer finding too many pages isolated by others sleeps (too_many_isolated).
* **Soft limits**: with per-app memory cgroups, reclaim first shrinks the cgroups over
  their soft limits (mem_cgroup_soft_limit_reclaim).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Final

from mqoe.device import lru as lists
from mqoe.device.lru_model import ReclaimBatch
from mqoe.device.memory_pressure import VMPRESSURE_WINDOW, Pressure
from mqoe.engine import Environment, Event, ms

if TYPE_CHECKING:
    from mqoe.device.cpu import Thread
    from mqoe.device.lru_model import LruModel
    from mqoe.device.process import Process, ProcessTable
    from mqoe.device.profiles import MemorySpec

SWAP_CLUSTER_MAX: Final = 32  # pages per reclaim batch (include/linux/swap.h)
# Direct reclaim starts at lists.DEF_PRIORITY and scans lru_size >> priority;
# vmpressure_level_critical_prio = ilog2(100 / 10) (mm/vmpressure.c).
VMPRESSURE_CRITICAL_PRIO: Final = 3
# A direct-reclaim pass is scanned in at most this many steps, each then checked for a
# reclaimed batch. The kernel checks after every 32 pages of each list, but with a
# memory cgroup per app a global pass visits every cgroup's lruvec first, so it too
# reclaims past the batch; the steps bound the model's cost of a pass that fails.
_PASS_STEPS: Final = 16
# mem_cgroup_soft_reclaim shrinks one cgroup at most MEM_CGROUP_MAX_RECLAIM_LOOPS (100)
# times; mem_cgroup_soft_limit_reclaim tries the next cgroup over its limit while none
# yields anything, until its loop count passes MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS
# (2): three cgroups at most (Linux 3.18 mm/memcontrol.c).
_SOFT_RECLAIM_LOOPS: Final = 100
_SOFT_LIMIT_TRIES: Final = 3
_OOM_WAIT_NS: Final = ms(10)  # nothing left to reclaim: wait for lmkd (congestion_wait)
# too_many_isolated: a direct reclaimer finding more pages isolated by reclaimers than
# the inactive list holds sleeps congestion_wait(BLK_RW_ASYNC, HZ/10) and looks again
# (shrink_inactive_list, mm/vmscan.c). Nothing clears a congestion the model does not
# keep, so the sleep runs its whole 100 ms.
_ISOLATED_WAIT_NS: Final = ms(100)


class ZramStreams:
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


class Reclaim(Pressure):
    """kswapd, direct reclaim and the reclaim pass of :class:`~mqoe.device.memory.Memory`
    (with its vmpressure and PSI accounting, :class:`Pressure`)."""

    spec: MemorySpec
    processes: ProcessTable
    lru: LruModel
    free_pages: int
    min_wmark: int
    low_wmark: int
    high_wmark: int
    cache_clean: int
    cache_dirty: int
    zram_stored: int
    zram_limit: int
    isolated: int
    kswapd: Thread
    _kswapd_wake: Event | None
    _pfmemalloc_wait: Event | None
    _streams: ZramStreams
    soft_limit: Callable[[Process], int | None] | None
    shrinker_listeners: list[Callable[[], None]]
    allocstall: int
    isolated_waits: int
    kswapd_wakeups: int
    pgscan: int
    pgscan_direct: int
    pgscan_direct_throttle: int
    pgsteal: int
    zram_stream_waits: int

    # Memory's (declared here, not in an ``if TYPE_CHECKING`` block: a compiled class
    # body takes no statements, and its methods call these through the class's vtable).
    @property
    def file_pages(self) -> int:
        raise NotImplementedError

    def _writeback(self, pages: int) -> None:
        raise NotImplementedError

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
            batch = ReclaimBatch()
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

    def _run_batch(self, thread: Thread, batch: ReclaimBatch) -> Generator[Event, object, None]:
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

    def _reclaim(
        self, target: int, direct: bool, batch: ReclaimBatch | None = None, soft: bool = False
    ) -> ReclaimBatch:
        """One reclaim pass of ``target`` pages (the LRU model decides which), added to
        ``batch`` (a new one if None); ``soft``: soft-limit reclaim first (if the phone
        has soft limits), which kswapd lets stand alone when it balanced the zone."""
        if batch is None:
            batch = ReclaimBatch()
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

    def _soft_limit_reclaim(self, batch: ReclaimBatch) -> None:
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

    def _scan_cache(self, file_target: int, batch: ReclaimBatch) -> int:
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
