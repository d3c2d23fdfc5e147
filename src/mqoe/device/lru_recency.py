"""The ``recency`` LRU model (the default, :class:`RecencyLru`): reclaim takes the
processes by LRU age — the one that used its memory longest ago first; one global LRU,
as the kernel has, not an oom_score_adj order — splitting each batch between file and
anon pages by ``swappiness``. A scanned page its process used recently is *referenced*
and rotated instead of reclaimed: uses fall uniformly on a process's working set, so a
resident page was used since the scanner last passed with chance
1 − exp(−uses / working set), uses decayed over the profile's ``referenced_window_ms``
(about one scanner pass); pages just faulted back in count as used (the kernel's
workingset activation). Light thrashing keeps reclaim efficient; a process whose
resident set is mostly pages it just faulted back makes almost every scan futile —
critical vmpressure.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mqoe.device.lru_model import FaultRead, ReclaimBatch
from mqoe.engine.rounding import round_half_even

if TYPE_CHECKING:
    from mqoe.device.memory import Memory
    from mqoe.device.process import Process


class RecencyLru:
    """One global recency order over processes (least recently used first) and, within
    a process, referenced pages by recent use: a resident page was used since the
    scanner last passed with chance 1 − exp(−uses / working set), uses decayed over the
    profile's ``referenced_window_ms``; pages just faulted back count as used."""

    def __init__(self, memory: Memory) -> None:
        self.m = memory
        # The reclaim order (least recently used first), kept between batches: a use
        # moves its process to the tail (its last use is now, no earlier than any
        # other's), so no batch sorts every process. It is rebuilt (sorted) only when
        # the living processes or an oom_score_adj (the tie-break) changed:
        # ``_order_alive`` is the table's living list it was built from, ``_order_adj``
        # the table's oom_score_adj count then.
        self._order: list[Process] = []
        self._order_alive: list[Process] | None = None
        self._order_adj = -1

    def allocating(self, process: Process, file_pages: int, anon_pages: int) -> None:
        self._used(process, file_pages, anon_pages)

    def added(self, process: Process, kind: str, pages: int) -> None:
        pass

    def touched(self, process: Process, file_pages: int, anon_pages: int) -> tuple[int, int]:
        self._used(process, file_pages, anon_pages)
        if not file_pages or process.file_resident >= process.file_ws_pages:
            return 0, 0
        evicted_share = 1 - process.file_resident / process.file_ws_pages
        return 0, self.m._draws.binomial(file_pages, evicted_share)

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

    def reclaim(self, target: int, batch: ReclaimBatch) -> None:
        m = self.m
        spec = m.spec
        anon_share = spec.swappiness / 200 if m.zram_stored < m.zram_limit else 0.0
        anon_target = round_half_even(target * anon_share)
        file_target = target - anon_target
        file_target = m._scan_cache(file_target, batch)
        # Then processes, least recently used first. When one kind runs out (no file
        # pages left, or zRAM full) the rest of the batch goes to the other, as
        # get_scan_count() balances the LRUs by what they hold.
        if file_target > 0 or anon_target > 0:
            victims = self._victims()
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

    def reclaim_from(self, process: Process, target: int, batch: ReclaimBatch) -> None:
        m = self.m
        room = m.zram_stored < m.zram_limit
        anon_target = round_half_even(target * m.spec.swappiness / 200) if room else 0
        file_left, anon_left = self._scan([process], target - anon_target, anon_target, batch)
        if file_left and room:  # one kind ran out: the rest of the batch goes to the other
            self._scan([process], 0, file_left, batch)
        elif anon_left:
            self._scan([process], anon_left, 0, batch)

    def _victims(self) -> list[Process]:
        """The living processes, least recently used first (then the more important,
        then the older pid): the kept order, rebuilt if the processes or their
        oom_score_adj changed since it was built."""
        table = self.m.processes
        alive = table.alive
        if alive is not self._order_alive or table._adj_seq != self._order_adj:
            self._order = sorted(alive, key=lambda p: (p.last_use_ns, -p.oom_score_adj, p.pid))
            self._order_alive = alive
            self._order_adj = table._adj_seq
        return self._order

    def _moved_to_tail(self, process: Process) -> None:
        """``process`` was just used (its ``last_use_ns`` is now, no earlier than any
        other's): it goes after every process used before now, and among those used
        now by importance, then pid — where sorting would put it."""
        order = self._order
        if order and order[-1] is process:
            return  # the tail already (or a stale order, which the next batch rebuilds)
        table = self.m.processes
        if table._alive is not self._order_alive or table._adj_seq != self._order_adj:
            return  # the order is stale anyway: the next batch rebuilds it
        try:
            order.remove(process)
        except ValueError:  # not a living process of the table: reclaim never takes it
            return
        now = process.last_use_ns
        adj, pid = -process.oom_score_adj, process.pid
        i = len(order)
        while i:
            other = order[i - 1]
            if other.last_use_ns != now:
                break
            other_adj = -other.oom_score_adj
            if other_adj < adj or (other_adj == adj and other.pid < pid):
                break
            i -= 1
        order.insert(i, process)

    def _scan(
        self, victims: list[Process], file_target: int, anon_target: int, batch: ReclaimBatch
    ) -> tuple[int, int]:
        """One pass over ``victims``; returns the file and anon targets left unscanned."""
        m = self.m
        for process in victims:
            if file_target <= 0 and anon_target <= 0:
                break
            if file_target > 0 and process.file_resident:
                file_target -= self._reclaim_file(process, file_target, batch)
            if anon_target > 0 and process.anon_pages and m.zram_stored < m.zram_limit:
                anon_target -= self._reclaim_anon(process, anon_target, batch)
        return (file_target if file_target > 0 else 0), (anon_target if anon_target > 0 else 0)

    def _used(
        self, process: Process, file_pages: int, anon_pages: int, refaulted: bool = False
    ) -> None:
        """``process`` used pages now (none: just decay its recent-use counts to now);
        ``refaulted``: they were faulted back in (refaults or swap-ins)."""
        now = self.m.env.now
        elapsed = now - process.recent_at_ns
        if elapsed:  # _decay, inlined: every page use passes here
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
            if process.last_use_ns != now:
                process.last_use_ns = now
                self._moved_to_tail(process)

    def _decay(self, process: Process) -> None:
        """Decay ``process``'s recent-use counts to now (``_used`` with no pages)."""
        now = self.m.env.now
        elapsed = now - process.recent_at_ns
        if elapsed:
            decay = math.exp(-elapsed / self.m._ref_window_ns)
            process.recent_file *= decay
            process.recent_anon *= decay
            process.recent_refault_file *= decay
            process.recent_refault_anon *= decay
            process.recent_at_ns = now

    def _reclaim_file(self, process: Process, want: int, batch: ReclaimBatch) -> int:
        """Scan up to ``want`` of the process's resident file pages; returns how many were
        scanned. A referenced page is rotated, the rest dropped."""
        self._decay(process)
        pool = process.file_resident
        scanned = pool if pool < want else want
        referenced = 0
        uses = process.recent_file
        if scanned and uses >= 1.0:
            referenced = self._referenced(
                scanned, uses, process.recent_refault_file, pool, process.file_ws_pages
            )
        taken = scanned - referenced
        process.file_resident -= taken
        m = self.m
        m.free_pages += taken
        batch.scanned += scanned
        batch.reclaimed += taken
        return scanned

    def _reclaim_anon(self, process: Process, want: int, batch: ReclaimBatch) -> int:
        """Scan up to ``want`` of the process's resident anon pages; returns how many were
        scanned. A referenced page is rotated, the rest compressed into zRAM (as much
        as it has room for)."""
        self._decay(process)
        pool = process.anon_pages
        scanned = pool if pool < want else want
        referenced = 0
        uses = process.recent_anon
        if scanned and uses >= 1.0:
            working_set = process.anon_pages + process.anon_swapped
            referenced = self._referenced(
                scanned, uses, process.recent_refault_anon, pool, working_set
            )
        m = self.m
        taken = scanned - referenced
        room = m.zram_limit - m.zram_stored
        if room < taken:
            taken = room
        batch.compressed += taken
        process.anon_pages -= taken
        m._zram_add(process, taken)
        m.pswpout += taken
        m.free_pages += taken
        batch.scanned += scanned
        batch.reclaimed += taken
        return scanned

    def _referenced(
        self, scanned: int, uses: float, faulted: float, pool: int, working_set: int
    ) -> int:
        """How many of ``scanned`` pages of a pool were used since the scanner last passed.
        Uses fall uniformly on the working set, so a resident page was used since then
        (about one window ago) with chance 1 − e^(−uses/ws); pages just faulted back in
        were all used (workingset activation)."""
        p_ref = faulted / pool - math.expm1(-uses / working_set)
        return self.m._draws.binomial(scanned, p_ref if p_ref < 1.0 else 1.0)
