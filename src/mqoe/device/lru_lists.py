"""The ``lists`` LRU model (:class:`ListLru`): Linux's inactive/active lists per
process (their data structures and moves: :mod:`mqoe.device.lru`) with workingset
refault detection, readaround on major faults and get_scan_count's split between the
lists (docs/decisions/0002-memory-lru.md).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mqoe.device import lru as lists
from mqoe.device.lru import Lruvec
from mqoe.device.lru_model import FaultRead, ReclaimBatch

if TYPE_CHECKING:
    from mqoe.device.memory import Memory
    from mqoe.device.process import Process


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
    def reclaim(self, target: int, batch: ReclaimBatch) -> None:
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

    def reclaim_from(self, process: Process, target: int, batch: ReclaimBatch) -> None:
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
        batch: ReclaimBatch,
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

    def _file_scanned(
        self, process: Process, vec: Lruvec, out: lists.Scan, batch: ReclaimBatch
    ) -> None:
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
