"""The scheduler's data: policies (:class:`Fair`, :class:`RealTime`), cpusets, thread
states, :class:`Thread`, :class:`Core`, the sched_switch trace record and the
:class:`PreemptionLog`. :class:`~mqoe.device.cpu.sched.Cpu` creates and schedules them.

The state and preemption-kind members are also module constants (``_RUNNING`` …): the
scheduler reads them on every switch.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from mqoe.device.cpu.governors import FreqPolicy
    from mqoe.engine import Event, Timer

# kernel/sched/core.c sched_prio_to_weight[]: nice -20 … 19 → CFS load weight.
NICE_TO_WEIGHT: Final = (
    88761, 71755, 56483, 46273, 36291,
    29154, 23254, 18705, 14949, 11916,
    9548, 7620, 6100, 4904, 3906,
    3121, 2501, 1991, 1586, 1277,
    1024, 820, 655, 526, 423,
    335, 272, 215, 172, 137,
    110, 87, 70, 56, 45,
    36, 29, 23, 18, 15,
)  # fmt: skip
NICE_0_WEIGHT: Final = 1024
_NEVER: Final = 1 << 62  # a time (ns) never reached: no timer due, no RT limit


@dataclass(frozen=True, slots=True)
class Fair:
    """SCHED_NORMAL (CFS) with a nice value in −20…19."""

    nice: int = 0

    def __post_init__(self) -> None:
        if not -20 <= self.nice <= 19:
            raise ValueError(f"nice must be in -20..19, got {self.nice}")

    @property
    def weight(self) -> int:
        return NICE_TO_WEIGHT[self.nice + 20]


@dataclass(frozen=True, slots=True)
class RealTime:
    """SCHED_FIFO with a priority in 1…99 (higher runs first, as in sched_setscheduler)."""

    priority: int = 50

    def __post_init__(self) -> None:
        if not 1 <= self.priority <= 99:
            raise ValueError(f"RT priority must be in 1..99, got {self.priority}")


SchedPolicy = Fair | RealTime


def parse_cpuset(text: str, n_cores: int) -> tuple[int, ...] | None:
    """Parse a cpuset list like ``"0-3,6"`` (as in /dev/cpuset/*/cpus); "" or "all" → None."""
    text = text.strip()
    if text in ("", "all"):
        return None
    cores: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise ValueError(f"cpuset {text!r}: expected a list like 0-3,6") from None
        if first > last:
            raise ValueError(f"cpuset {text!r}: range {part!r} runs backwards")
        cores.update(range(first, last + 1))
    if max(cores) >= n_cores:
        raise ValueError(f"cpuset {text!r}: this phone has cores 0-{n_cores - 1}")
    return tuple(sorted(cores))


class ThreadState(IntEnum):
    RUNNING = 0
    RUNNABLE = 1
    RUNNABLE_PREEMPTED = 2
    SLEEPING = 3
    BLOCKED_IO = 4
    DEAD = 5


class PreemptKind(IntEnum):
    RT = 0  # a real-time thread took the core
    WAKEUP = 1  # a waking fair thread was far enough behind in vruntime
    SLICE = 2  # the running fair thread used up its slice


# The members as module constants: the scheduler reads them on every switch, and an
# attribute of an Enum class costs ~15× a global read (EnumType lookup, Python 3.11).
_RUNNING: Final = ThreadState.RUNNING
_RUNNABLE: Final = ThreadState.RUNNABLE
_RUNNABLE_PREEMPTED: Final = ThreadState.RUNNABLE_PREEMPTED
_SLEEPING: Final = ThreadState.SLEEPING
_BLOCKED_IO: Final = ThreadState.BLOCKED_IO
_DEAD: Final = ThreadState.DEAD
_PREEMPT_RT: Final = PreemptKind.RT
_PREEMPT_WAKEUP: Final = PreemptKind.WAKEUP
_PREEMPT_SLICE: Final = PreemptKind.SLICE


@dataclass(frozen=True, slots=True)
class SchedSwitch:
    """Trace record, like ftrace's sched_switch (``prev_state`` a :class:`ThreadState`)."""

    time_ns: int
    core: int
    prev_tid: int
    prev_state: int
    next_tid: int


class Thread:
    """A schedulable thread. Created by :meth:`Cpu.thread`; give it work with :meth:`Cpu.run`."""

    __slots__ = (
        "_core",
        "_done",
        "_last_core",
        "_level",
        "_preempted_row",
        "_preemptor_row",
        "_remaining",
        "_run_start",
        "_seq",
        "_since",
        "_update",
        "_util",
        "_vruntime",
        "allowed",
        "boost",
        "cpuset",
        "name",
        "nice",
        "process",
        "rt_prio",
        "state",
        "state_ns",
        "stune",
        "tid",
        "weight",
    )

    def __init__(
        self, tid: int, name: str, process: str, policy: SchedPolicy, allowed: tuple[int, ...]
    ) -> None:
        self.tid = tid
        self.name = name
        self.process = process
        self.cpuset = allowed  # the thread's cpuset (affinity) as set
        self.allowed = allowed  # the cpuset's online cores (all online ones if none is)
        self.boost = 0  # schedtune.boost / uclamp.min of its group, percent
        self.stune = ""  # its Android cgroup (set_group); "" for the root group
        self.rt_prio = 0
        self.nice = 0
        self.weight = NICE_0_WEIGHT
        self._set_policy(policy)
        self.state = _SLEEPING
        self.state_ns = [0, 0, 0, 0, 0]
        self._since = 0
        self._core: Core | None = None  # queued or running there
        self._last_core: Core | None = None
        self._vruntime = 0.0
        self._remaining = 0.0
        self._done: Event | None = None
        self._run_start = 0
        self._update = 0
        self._seq = 0
        # Its open PreemptionLog rows: as the victim (wait not known yet), as the preemptor
        # (run not known yet).
        self._preempted_row: list[int] | None = None
        self._preemptor_row: list[int] | None = None
        self._util = 0.0  # PELT utilisation, capacity units (see pelt.py)
        self._level = 0.0  # capacity of the core it runs on, at its current clock

    def _set_policy(self, policy: SchedPolicy) -> None:
        if isinstance(policy, RealTime):
            self.rt_prio, self.nice, self.weight = policy.priority, 0, NICE_0_WEIGHT
        else:
            self.rt_prio, self.nice, self.weight = 0, policy.nice, policy.weight

    @property
    def policy(self) -> SchedPolicy:
        return RealTime(self.rt_prio) if self.rt_prio else Fair(self.nice)

    @property
    def busy(self) -> bool:
        """True while the thread has work (running or runnable)."""
        return self._done is not None

    @property
    def alive(self) -> bool:
        return self.state != _DEAD

    def __repr__(self) -> str:
        return f"Thread({self.tid}, {self.name!r}, {self.state.name})"


class Core:
    __slots__ = (
        "_acct_t",
        "_busy_total",
        "_lb_armed",
        "_opp_i",
        "_timer",
        "_util_t",
        "busy_opp_ns",
        "cap_cur",
        "cap_orig",
        "cfs",
        "cid",
        "cluster",
        "current",
        "fair_weight",
        "idle_ns",
        "iowait_ns",
        "ipc",
        "khz",
        "min_vruntime",
        "nr_iowait",
        "offline_ns",
        "online",
        "policy",
        "rate",
        "rt",
        "rt_period",
        "rt_throttled",
        "rt_used_ns",
        "util",
    )

    def __init__(self, cid: int, cluster: str, ipc: float, khz: int, cap_orig: float) -> None:
        self.cid = cid
        self.cluster = cluster
        self.ipc = ipc  # reference cycles per clock
        self.khz = khz  # current clock
        self.rate = khz * 1e-6 * ipc  # reference cycles per ns at the current clock
        self.cap_orig = cap_orig  # capacity at the top step (1024 = the fastest core)
        self.cap_cur = cap_orig  # capacity at the current clock
        self.online = True
        self.policy: FreqPolicy | None = None
        self.util = 0.0  # PELT: Σ attached threads' utilisation, as of _util_t
        self._util_t = 0
        self._acct_t = 0  # busy/idle time accounted up to here
        self._busy_total = 0  # ns busy since the start
        self._opp_i = 0  # index of khz in the policy's table
        self.busy_opp_ns: list[int] = []  # ns busy at each OPP
        self.idle_ns = 0
        # /proc/stat iowait: idle time while a thread that last ran here waits on I/O
        # (rq->nr_iowait, kernel/sched/cputime.c account_idle_time)
        self.nr_iowait = 0
        self.iowait_ns = 0
        self.offline_ns = 0
        self.current: Thread | None = None
        self.rt: list[Thread] = []  # queued RT threads (not the current one)
        self.cfs: list[Thread] = []  # queued fair threads (not the current one)
        self.rt_used_ns = 0  # RT run time in RT period number rt_period
        self.rt_period = 0
        self.rt_throttled = False  # RT budget spent: fair threads only until the period ends
        self.fair_weight = 0  # weights of queued + running fair threads
        self.min_vruntime = 0.0
        self._timer: Timer | None = None
        self._lb_armed = False  # periodic load balancing runs while the core is busy

    def __repr__(self) -> str:
        return f"Core({self.cid}, {self.cluster}, current={self.current})"


class PreemptionLog:
    """Log of involuntary switches (who preempted whom, for how long), one row per
    switch: ``[time_ns, core, victim, preemptor, kind, wait_ns, preemptor_run_ns]``.
    ``wait_ns`` runs until the victim ran again, ``preemptor_run_ns`` is the preemptor's
    run on that core (-1 while unknown). Rows rather than columns: a switch appends one
    list (the scheduler fills in the rest through it); :meth:`rows` builds the columns."""

    __slots__ = ("_rows",)

    def __init__(self) -> None:
        self._rows: list[list[int]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def rows(self) -> dict[str, list[int]]:
        names = ("time_ns", "core", "victim_tid", "preemptor_tid", "kind",
                 "victim_wait_ns", "preemptor_run_ns")  # fmt: skip
        rows = self._rows
        return {name: [row[i] for row in rows] for i, name in enumerate(names)}


# PreemptionLog row fields the scheduler completes later.
_ROW_TIME: Final = 0
_ROW_WAIT: Final = 5
_ROW_RUN: Final = 6
