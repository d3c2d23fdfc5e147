"""Memory pressure as the kernel reports it: vmpressure samples and PSI stall time,
a mixin of :class:`~mqoe.device.memory.Memory` (which keeps their state).

* **vmpressure** (mm/vmpressure.c): per 512 scanned pages, (scanned − reclaimed) /
  scanned × 100; ≥ 60 medium, ≥ 95 critical. Listeners (lmkd) get every sample.
* **PSI**: "some" = time at least one thread is stalled on memory; "full" = time a
  stalled thread has no runnable company (every busy thread is a reclaimer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from mqoe.device.cpu import Cpu
    from mqoe.engine import Environment

VMPRESSURE_WINDOW: Final = 512  # scanned pages per vmpressure sample (mm/vmpressure.c)
VMPRESSURE_MEDIUM: Final = 60
VMPRESSURE_CRITICAL: Final = 95


@dataclass(frozen=True, slots=True)
class VmPressure:
    """One vmpressure sample (a 512-page scan window)."""

    time_ns: int
    pressure: float  # 0–100
    level: str  # low | medium | critical


class Pressure:
    """vmpressure and PSI accounting of :class:`~mqoe.device.memory.Memory`."""

    env: Environment
    cpu: Cpu
    _window_scanned: int
    _window_reclaimed: int
    vmpressure: list[VmPressure]
    vmpressure_listeners: list[Callable[[VmPressure], None]]
    _stalled: int  # threads in a memory stall (reclaim, refault I/O, swap-in)
    _reclaimers: int  # …of which busy on the CPU (direct reclaim, decompression)
    _stall_since: int
    psi_some_ns: int
    psi_full_ns: int

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
