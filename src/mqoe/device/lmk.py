"""lmkd (the low-memory killer daemon) and ActivityManager's trim signals (AOSP).

lmkd modes — what makes it kill, a :class:`KillTrigger` from :data:`LMK_TRIGGERS`
chosen by the profile's ``[lmk] mode``:

* ``vmpressure`` (legacy lmkd, as in the memory-pressure study): a vmpressure *medium*
  sample makes processes with oom_score_adj ≥ ``medium_adj`` (cached/background)
  killable, *critical* makes everything ≥ ``critical_adj`` (the foreground too)
  killable. lmkd first filters the event by swap use (:meth:`Lmkd.filtered_level`): on
  Android Go a phone that still has free swap ignores events, and one that is swapping
  heavily upgrades them to critical.
* ``minfree`` (the in-kernel LMK, a shrinker): after every reclaim pass, the first level
  whose minfree exceeds both the free memory above the kernel's reserve (the high
  watermark) and the file cache gives the minimum killable adj. MediaTek's variant
  (``swap_aggressive``) falls back to lower levels while swap is filling.
* ``psi``: lmkd polls memory PSI over 1 s windows; "full" stall ≥ ``psi_complete_stall_ms``
  is critical (adj ≥ 0 killable); "some" ≥ the partial threshold with free memory below
  the low watermark or heavy refaulting kills adj > 200 (simplified from lmkd.cpp's
  reasons: low watermark, critical PSI, thrashing).

A kill costs lmkd CPU (it reads every process's /proc files), picks the process with
the highest oom_score_adj at or above the minimum (among equals the heaviest, or with
``kill_heaviest_task`` off the one whose adj was set least recently), makes all
its threads exit at once and returns its pages after a teardown delay; lmkd handles no
new event until then (one kill per event, as on low-RAM devices).

Trim signals: when the number of cached processes falls to the configured thresholds
(memory-pressure study: 6 / 5 / 3 on the 1 GB Go phone) the foreground app is sent
``onTrimMemory(RUNNING_MODERATE / LOW / CRITICAL)``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import ClassVar, Final, Protocol

from mqoe.device.cpu import Cpu, RealTime
from mqoe.device.memory import Memory
from mqoe.device.memory_pressure import VmPressure
from mqoe.device.process import (
    HOME_APP_ADJ,
    PERCEPTIBLE_APP_ADJ,
    PREVIOUS_APP_ADJ,
    SYSTEM_ADJ,
    Process,
    ProcessTable,
)
from mqoe.device.profiles import LmkSpec
from mqoe.engine import Environment, Event, ms

# Android's ComponentCallbacks2 trim levels.
TRIM_NONE: Final = 0
TRIM_RUNNING_MODERATE: Final = 5
TRIM_RUNNING_LOW: Final = 10
TRIM_RUNNING_CRITICAL: Final = 15
_PSI_WINDOW_NS: Final = ms(1000)
_PSI_POLL_NS: Final = ms(100)
_MTK_SMALL_RAM_PAGES: Final = 0x40000  # totalram_pages < 1 GiB: where to_be_aggressive applies
_SOFT_LIMIT_UNIT_PAGES: Final = 2048  # lmkd's EIGHT_MEGA, in 4 KB pages
# cmd_procprio (Android 10 lmkd.c): an app cgroup's soft limit in units of 8 MB, by the
# lowest oom_score_adj of each band (checked from the top); below 0 (persistent): 64.
_SOFT_LIMIT_UNITS: Final = ((700, 0), (600, 1), (400, 0), (300, 1), (200, 8), (100, 10), (0, 20))
_PERSISTENT_SOFT_LIMIT_UNITS: Final = 64


def soft_limit_units(oom_score_adj: int) -> int:
    """The soft limit lmkd writes for an app at ``oom_score_adj``, in units of 8 MB."""
    for lowest, units in _SOFT_LIMIT_UNITS:
        if oom_score_adj >= lowest:
            return units
    return _PERSISTENT_SOFT_LIMIT_UNITS


@dataclass(frozen=True, slots=True)
class Kill:
    time_ns: int
    pid: int
    name: str
    oom_score_adj: int
    rss_pages: int
    reason: str


@dataclass(frozen=True, slots=True)
class Trim:
    time_ns: int
    level: int
    cached: int


class Lmkd:
    def __init__(
        self,
        env: Environment,
        cpu: Cpu,
        memory: Memory,
        processes: ProcessTable,
        spec: LmkSpec,
        low_ram: bool,
    ) -> None:
        self.env = env
        self.cpu = cpu
        self.memory = memory
        self.processes = processes
        self.spec = spec
        self.thread = cpu.thread("lmkd", RealTime(1), process="lmkd")  # SCHED_FIFO, lmkd.cpp
        self.kills: list[Kill] = []
        self._busy = False
        self.low_ram = low_ram
        # What makes it kill: the profile's mode, from the registry of triggers.
        self.trigger = LMK_TRIGGERS[spec.mode]()
        # Per-app memory cgroups: lmkd writes their soft limits (not with the in-kernel
        # LMK, whose interface cmd_procprio leaves at once).
        self.per_app_memcg = spec.per_app_memcg and not self.trigger.in_kernel
        if self.per_app_memcg:
            memory.soft_limit = self.soft_limit_pages
        self.trigger.install(self)

    def soft_limit_pages(self, process: Process) -> int | None:
        """The soft limit of ``process``'s memory cgroup in pages (None: it has none —
        native daemons and system_server live outside /dev/memcg/apps)."""
        if process.oom_score_adj <= SYSTEM_ADJ:
            return None
        return soft_limit_units(process.oom_score_adj) * _SOFT_LIMIT_UNIT_PAGES

    def recorded_adj(self, process: Process) -> int:
        """The adj lmkd records for ``process``: with per-app memory cgroups cmd_procprio
        records the launcher (home, 600–699) as perceptible (200), "don't kill it"."""
        adj = process.oom_score_adj
        if self.per_app_memcg and HOME_APP_ADJ <= adj < PREVIOUS_APP_ADJ:
            return PERCEPTIBLE_APP_ADJ
        return adj

    # -- triggers ---------------------------------------------------------------------
    def mem_pressure(self) -> float:
        """lmkd's mem_pressure: RAM usage as a % of RAM + swap usage (root memcg's
        memory.usage_in_bytes over memory.memsw.usage_in_bytes)."""
        memory = self.memory
        ram = memory.charged_pages
        swap = memory.zram_stored
        return float(ram * 100 // (ram + swap)) if ram + swap else 100.0  # lmkd's int math

    def filtered_level(self, level: str) -> str | None:
        """The level lmkd acts on after its swap checks (None: the event is ignored)."""
        spec, memory = self.spec, self.memory
        if level == "low":
            return None
        pressure = self.mem_pressure()
        if spec.critical_upgrade and level != "critical" and pressure < spec.upgrade_pressure:
            level = "critical"  # swapping too much
        swap_total = memory.zram_limit
        swap_free = swap_total - memory.zram_stored
        # With no swap at all lmkd's check (0 ≥ 0) would ignore every event and leave
        # the phone stuck in reclaim; mqoe treats "no swap" as "no swap to wait for".
        if swap_total and swap_free * 100 >= swap_total * spec.swap_free_low_percentage:
            if pressure > spec.downgrade_pressure:
                return None  # enough memory available
            if level == "critical" and pressure > spec.upgrade_pressure:
                level = "medium"
        return level

    def minfree_level(self) -> tuple[int, int] | None:
        """The in-kernel LMK's choice (lowmem_scan): (minfree KB of the matched level,
        minimum killable adj), or None while memory is above every level."""
        spec, memory = self.spec, self.memory
        free_kb = max(0, memory.free_pages - memory.high_wmark) * 4  # − totalreserve_pages
        if free_kb >= max(spec.minfree_kb, default=0):
            return None  # above every level: no need to add up the file pages
        file_kb = memory.file_pages * 4
        for i, minfree in enumerate(spec.minfree_kb):
            if free_kb < minfree and file_kb < minfree:
                managed = memory.total_pages - memory.reserved_pages
                if spec.swap_aggressive and managed < _MTK_SMALL_RAM_PAGES and i > 3:
                    i = max(3, i - self.swap_aggression())
                return minfree, spec.minfree_adj[i]
        return None

    def swap_aggression(self) -> int:
        """MediaTek's to_be_aggressive: 1 with over half of swap used, 2 over three
        quarters."""
        total = self.memory.zram_limit
        swap_free = total - self.memory.zram_stored
        return (swap_free * 2 < total) + (swap_free * 4 < total)

    # -- killing ----------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """A victim of the last kill is still dying (lmkd handles no new event)."""
        return self._busy

    def request(self, min_adj: int, reason: str) -> None:
        """A trigger asks for a kill of the highest adj ≥ ``min_adj`` (ignored while a
        victim of the last one is still dying: one kill per event)."""
        if self._busy:
            return
        self._busy = True
        self.env.process(self._kill(min_adj, reason), "lmkd-kill")

    def victim(self, min_adj: int) -> Process | None:
        """The highest oom_score_adj ≥ ``min_adj`` (as lmkd records it); among equals
        the heaviest, or (lmkd with ``kill_heaviest_task`` off) the one whose adj was set
        least recently."""
        adj = self.recorded_adj
        eligible = [p for p in self.processes.alive if adj(p) >= min_adj]
        if not eligible:
            return None
        if self.spec.kill_heaviest_task or self.trigger.in_kernel:
            return max(eligible, key=lambda p: (adj(p), p.rss_pages, p.pid))
        return max(eligible, key=lambda p: (adj(p), -p.adj_seq))

    def _kill(self, min_adj: int, reason: str) -> Generator[Event, object, None]:
        yield self.cpu.run(self.thread, self.spec.event_cycles)
        process = self.victim(min_adj)
        if process is not None:
            yield self.cpu.run(self.thread, self.spec.kill_cycles)
            if process.alive:
                self.kill(process, reason)
                yield self.env.timeout(ms(self.spec.kill_free_delay_ms))
        self._busy = False

    def kill(self, process: Process, reason: str) -> None:
        """SIGKILL: threads exit now; pages come back after the teardown delay."""
        if not process.alive:
            return
        now = self.env.now
        self.kills.append(
            Kill(now, process.pid, process.name, process.oom_score_adj, process.rss_pages, reason)
        )
        for thread in process.threads:
            self.cpu.exit(thread)
        self.processes.mark_killed(process, now, reason)
        self.env.schedule(ms(self.spec.kill_free_delay_ms), lambda _: self.memory.release(process))


# -- what makes it kill: triggers behind a protocol, chosen by the profile's lmk.mode -----
class KillTrigger(Protocol):
    """What makes lmkd kill: :meth:`install` subscribes to the memory model's signals
    and calls :meth:`Lmkd.request` with the minimum killable adj. ``in_kernel``: the
    in-kernel LMK (a shrinker) rather than the userspace daemon — it kills the heaviest
    of the equals and knows nothing of per-app memory cgroups."""

    name: ClassVar[str]
    in_kernel: ClassVar[bool]

    def install(self, lmkd: Lmkd) -> None: ...


class VmpressureTrigger:
    """Legacy lmkd: vmpressure *medium* makes cached/background processes
    (≥ ``medium_adj``) killable, *critical* everything ≥ ``critical_adj``, after lmkd's
    swap filter (:meth:`Lmkd.filtered_level`)."""

    name: ClassVar[str] = "vmpressure"
    in_kernel: ClassVar[bool] = False

    def install(self, lmkd: Lmkd) -> None:
        def on_sample(sample: VmPressure) -> None:
            if lmkd.busy:
                return
            level = lmkd.filtered_level(sample.level)
            if level == "critical":
                upgraded = "" if sample.level == "critical" else f"{sample.level}→"
                lmkd.request(lmkd.spec.critical_adj, f"vmpressure {upgraded}critical")
            elif level == "medium":
                lmkd.request(lmkd.spec.medium_adj, "vmpressure medium")

        lmkd.memory.vmpressure_listeners.append(on_sample)


class MinfreeTrigger:
    """The in-kernel LMK: after every reclaim pass, the minfree level the free memory and
    the file cache are both under (:meth:`Lmkd.minfree_level`)."""

    name: ClassVar[str] = "minfree"
    in_kernel: ClassVar[bool] = True

    def install(self, lmkd: Lmkd) -> None:
        def on_shrink() -> None:
            if lmkd.busy:  # lowmem_deathpending: a victim is still dying
                return
            level = lmkd.minfree_level()
            if level is not None:
                lmkd.request(level[1], f"minfree {level[0]} KB")

        lmkd.memory.shrinker_listeners.append(on_shrink)


class PsiTrigger:
    """lmkd on PSI: polls memory pressure over 1 s windows; a "full" stall ≥
    ``psi_complete_stall_ms`` is critical (adj ≥ 0), a "some" stall ≥ the partial
    threshold with free memory under the low watermark or heavy refaulting kills adj >
    200 (simplified from lmkd.cpp's reasons)."""

    name: ClassVar[str] = "psi"
    in_kernel: ClassVar[bool] = False

    def install(self, lmkd: Lmkd) -> None:
        partial = lmkd.spec.psi_partial_stall_ms or (200 if lmkd.low_ram else 70)
        self.partial_ns = ms(partial)
        self.thrashing_limit = 30 if lmkd.low_ram else 100  # %
        lmkd.env.process(self._monitor(lmkd), "lmkd-psi")

    def _monitor(self, lmkd: Lmkd) -> Generator[Event, object, None]:
        history: deque[tuple[int, int, int, int]] = deque()
        memory = lmkd.memory
        while True:
            yield lmkd.env.timeout(_PSI_POLL_NS)
            memory._account_psi()
            now = lmkd.env.now
            history.append((now, memory.psi_some_ns, memory.psi_full_ns, memory.workingset_refault))
            while history and history[0][0] < now - _PSI_WINDOW_NS:
                history.popleft()
            _, some0, full0, refault0 = history[0]
            some, full = memory.psi_some_ns - some0, memory.psi_full_ns - full0
            fired = True
            if full >= ms(lmkd.spec.psi_complete_stall_ms):
                lmkd.request(0, "critical PSI")
            elif some >= self.partial_ns:
                file_lru = max(1, memory.file_pages)
                thrashing = (memory.workingset_refault - refault0) * 100 / file_lru
                if memory.free_pages < memory.low_wmark:
                    lmkd.request(PERCEPTIBLE_APP_ADJ + 1, "low watermark")
                elif thrashing >= self.thrashing_limit:
                    lmkd.request(PERCEPTIBLE_APP_ADJ + 1, "thrashing")
                else:
                    fired = False
            else:
                fired = False
            if fired:  # a kernel PSI trigger fires at most once per tracking window
                history.clear()
                history.append((now, memory.psi_some_ns, memory.psi_full_ns,
                                memory.workingset_refault))  # fmt: skip


# The explicit registry (the profile's [lmk] mode names one): a new trigger is one line.
LMK_TRIGGERS: Final[dict[str, type[KillTrigger]]] = {
    "vmpressure": VmpressureTrigger,
    "minfree": MinfreeTrigger,
    "psi": PsiTrigger,
}


class TrimSignals:
    """ActivityManager's memory factor from the cached-process count → onTrimMemory."""

    def __init__(self, env: Environment, processes: ProcessTable, spec: LmkSpec) -> None:
        self.env = env
        self.processes = processes
        self.thresholds = spec.trim_cached_thresholds
        self.level = TRIM_NONE
        self.history: list[Trim] = []
        self.listeners: list[Callable[[int], None]] = []
        self.armed = False
        processes.listeners.append(self._on_change)

    def arm(self) -> None:
        """Start signalling (after the workload has set up the phone's processes)."""
        self.armed = True
        self._on_change(None, "arm")

    def level_for(self, cached: int) -> int:
        moderate, low, critical = self.thresholds
        if cached <= critical:
            return TRIM_RUNNING_CRITICAL
        if cached <= low:
            return TRIM_RUNNING_LOW
        if cached <= moderate:
            return TRIM_RUNNING_MODERATE
        return TRIM_NONE

    def _on_change(self, _: Process | None, event: str) -> None:
        if not self.armed:
            return
        cached = self.processes.cached_count()
        level = self.level_for(cached)
        if level != self.level:
            self.level = level
            self.history.append(Trim(self.env.now, level, cached))
            for listener in self.listeners:
                listener(level)
