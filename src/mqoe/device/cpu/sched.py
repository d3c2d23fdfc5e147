"""CPU model: big.LITTLE clusters, Linux-like real-time and CFS scheduling, accounting.

Work is measured in *reference cycles* (cycles of a Cortex-A53, see
``profiles/core_types.toml``); a core retires ``freq_GHz × ipc_factor`` of them per ns, so
the same work takes longer on a LITTLE core.

Scheduling follows the Linux kernel in the parts that shape QoE:

* **Classes.** ``RealTime(priority)`` (SCHED_FIFO: runs until it sleeps; a higher priority
  preempts at once) above ``Fair(nice)`` (CFS: weight from ``sched_prio_to_weight``).
* **CFS.** Per-core run queues ordered by vruntime (ns of run time × 1024 / weight); the
  running thread is preempted when it has used its slice (``sched_latency`` split by
  weight, at least ``min_granularity``) and another thread is queued; a waking thread
  preempts when it is ``wakeup_granularity`` behind; sleepers get at most half a latency
  of credit (GENTLE_FAIR_SLEEPERS).
* **Placement.** A waking fair thread takes an idle allowed core (its previous core first,
  then its previous cluster), else stays on its previous core, as select_idle_sibling
  does; on big.LITTLE a thread whose PELT utilisation (32 ms half-life) exceeds 80% of
  a slower core's capacity takes an idle core of the fastest cluster (up-migration), a
  boosted top-app thread the biggest idle core; a new thread goes to the least-loaded
  allowed core (fork balancing). Phones whose kernels use Qualcomm's HMP scheduler
  (``[cpu.hmp]``) place instead as its select_best_cpu does: the cheapest cluster the
  thread fits, its least-loaded CPU under the spill thresholds — even while bigger
  cores idle. A waking RT thread stays on its previous core unless a higher-or-equal RT
  thread runs there (select_task_rq_rt), else takes the lowest-priority allowed core.
* **Balancing (idealised).** A core going idle pulls queued RT threads of others first,
  then a fair thread from the busiest core (newidle balance); a preempted thread moves to
  an idle allowed core at once. The kernel does this within a few ms; here it is
  immediate, which keeps the invariant "no allowed core idle while a thread waits"
  (except where HMP's restrict_cluster_spill keeps a bigger cluster from pulling).
  Busy cores also balance periodically within their cluster (load_balance every
  sd_weight ms × busy_factor 32: 128 ms on a 4-core cluster), taking queued threads
  from a sibling whose weighted load is over 117% of theirs.
* **RT throttling.** RT threads may use ``sched_rt_runtime_us`` of each core per
  ``sched_rt_period_us`` (950 ms / 1 s): past it the core runs fair threads only until
  the period ends.

Governors, hotplug and energy live in the sibling modules. Not modelled yet: SCHED_RR,
EAS energy-aware placement, cgroup CPU shares, balancing across clusters.

Per-thread accounting splits wall time into Running, Runnable, Runnable (Preempted),
Sleeping and Blocked on I/O, as Perfetto does. Every involuntary switch is logged in
:class:`PreemptionLog` with the victim's wait until it ran again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from heapq import heappush
from typing import Any

from mqoe.device.cpu import pelt
from mqoe.device.cpu.boost import InteractionBoost
from mqoe.device.cpu.energy import PowerTable, power_table
from mqoe.device.cpu.governors import FreqPolicy, make_governor
from mqoe.device.cpu.hotplug import Hotplug, make_hotplug
from mqoe.device.cpu.opp import OppTable
from mqoe.device.profiles import DeviceProfile, core_ipc_factor, load_soc
from mqoe.device.profiles.cpu_schema import HmpSpec
from mqoe.engine import NORMAL, Environment, Event, Timer

# kernel/sched/core.c sched_prio_to_weight[]: nice -20 … 19 → CFS load weight.
NICE_TO_WEIGHT = (
    88761, 71755, 56483, 46273, 36291,
    29154, 23254, 18705, 14949, 11916,
    9548, 7620, 6100, 4904, 3906,
    3121, 2501, 1991, 1586, 1277,
    1024, 820, 655, 526, 423,
    335, 272, 215, 172, 137,
    110, 87, 70, 56, 45,
    36, 29, 23, 18, 15,
)  # fmt: skip
NICE_0_WEIGHT = 1024
_DONE_EPS_CYCLES = 1e-6  # work below this is complete (float round-off of rate × time)
_NEVER = 1 << 62
_INF = math.inf
_ceil = math.ceil


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
_RUNNING = ThreadState.RUNNING
_RUNNABLE = ThreadState.RUNNABLE
_RUNNABLE_PREEMPTED = ThreadState.RUNNABLE_PREEMPTED
_SLEEPING = ThreadState.SLEEPING
_BLOCKED_IO = ThreadState.BLOCKED_IO
_DEAD = ThreadState.DEAD
_PREEMPT_RT = PreemptKind.RT
_PREEMPT_WAKEUP = PreemptKind.WAKEUP
_PREEMPT_SLICE = PreemptKind.SLICE


@dataclass(frozen=True, slots=True)
class SchedSwitch:
    """Trace record, like ftrace's sched_switch (``prev_state`` a :class:`ThreadState`)."""

    time_ns: int
    core: int
    prev_tid: int
    prev_state: int
    next_tid: int


UTIL_HALFLIFE_NS = 32_000_000  # PELT's load-tracking half-life (kernel/sched/pelt.c)
# A thread busier than this on a slower core moves to an idle core of the fastest
# cluster at wake-up (EAS's misfit 80% capacity margin; HMP's sched_upmigrate ≈ 80–95%).
UPMIGRATE_UTIL = 0.8
# sysctl_sched_migration_cost: a thread that ran this recently is cache-hot, not moved.
MIGRATION_COST_NS = 500_000


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
_ROW_TIME, _ROW_WAIT, _ROW_RUN = 0, 5, 6


def _leftmost(cfs: list[Thread]) -> Thread:
    """CFS's pick among a core's queued fair threads: the lowest vruntime, then the
    longest queued."""
    best = cfs[0]
    lowest = best._vruntime
    for t in cfs:
        vruntime = t._vruntime
        if vruntime < lowest or (vruntime == lowest and t._seq < best._seq):
            best, lowest = t, vruntime
    return best


def _highest_rt(rt: list[Thread]) -> Thread:
    """The RT pick among a core's queued RT threads: the highest priority, then the
    longest queued."""
    best = rt[0]
    for t in rt:
        if t.rt_prio > best.rt_prio or (t.rt_prio == best.rt_prio and t._seq < best._seq):
            best = t
    return best


class Cpu:
    """The phone's cores and scheduler. Public surface: ``thread``, ``run``, ``set_io_wait``,
    ``set_affinity``, ``set_policy``, ``exit``, ``thread_table``, ``preemptions``."""

    def __init__(self, env: Environment, profile: DeviceProfile) -> None:
        self.env = env
        spec = profile.cpu
        self.hz = spec.hz
        self.cores: list[Core] = []
        self.clusters: dict[str, tuple[int, ...]] = {}
        self.policies: dict[str, FreqPolicy] = {}
        self.power: dict[str, PowerTable | None] = {}
        soc = load_soc(spec.soc.id) if spec.soc is not None else None
        soc_clusters = {c.name: c for c in soc.clusters} if soc is not None else {}
        tables: dict[str, tuple[OppTable, int]] = {}
        for cluster in spec.clusters:
            sourced = soc_clusters.get(cluster.name)
            max_khz = cluster.max_freq_mhz * 1000
            if sourced is not None:
                opp = OppTable.capped(sourced.opp_khz, sourced.opp_uv or (), max_khz)
                latency_ns = int((sourced.transition_latency_us or 0.0) * 1000)
            else:  # no sourced table: one step, the top clock
                opp, latency_ns = OppTable((round(max_khz),)), 0
            tables[cluster.name] = (opp, latency_ns)
        top = max(tables[c.name][0].max_khz * core_ipc_factor(c) for c in spec.clusters)
        pp = spec.power_profile
        for cluster in spec.clusters:
            ipc = core_ipc_factor(cluster)
            opp, latency_ns = tables[cluster.name]
            cap = pelt.SCALE * opp.max_khz * ipc / top
            first = len(self.cores)
            for _ in range(cluster.cores):
                core = Core(len(self.cores), cluster.name, ipc, opp.max_khz, cap)
                core._opp_i = len(opp.khz) - 1
                core.busy_opp_ns = [0] * len(opp.khz)
                self.cores.append(core)
            self.clusters[cluster.name] = tuple(range(first, len(self.cores)))
            policy = FreqPolicy(self, cluster.name, self.cores[first:], opp, latency_ns)
            for core in policy.cores:
                core.policy = policy
            self.policies[cluster.name] = policy
            self.power[cluster.name] = power_table(
                opp, soc_clusters.get(cluster.name),
                pp.clusters.get(cluster.name) if pp is not None else None,
                pp.battery_voltage_v if pp is not None else 3.8,
            )  # fmt: skip
        self.boost = spec.boost
        self.latency_ns = spec.sched_latency_ns
        # RT throttling (sched_rt_runtime_us / sched_rt_period_us): RT threads may use
        # at most runtime ns of a core per period; the rest is left to fair threads.
        self.rt_period_ns = spec.sched.rt_period_us * 1000
        self.rt_runtime_ns = (
            spec.sched.rt_runtime_us * 1000 if spec.sched.rt_runtime_us >= 0 else _NEVER
        )
        self.min_granularity_ns = spec.sched_min_granularity_ns
        self.wakeup_granularity_ns = spec.sched_wakeup_granularity_ns
        # Periodic load balancing within a cluster (the MC sched domain): a busy core
        # balances every sd_weight ms × busy_factor 32 (kernel/sched/topology.c).
        largest = max(c.cores for c in spec.clusters)
        self._lb_interval_ns = largest * 32 * 1_000_000 if largest > 1 else 0
        self.threads: list[Thread] = []
        self.preemptions = PreemptionLog()
        self._all = tuple(range(len(self.cores)))
        self._n_idle = len(self.cores)
        fastest = max(core.cap_orig for core in self.cores)
        # Heterogeneous (big.LITTLE) CPUs: cores of the fastest cluster, where a thread
        # that no longer fits a slower core goes (up-migration).
        self._fast: frozenset[int] = frozenset(
            core.cid for core in self.cores if core.cap_orig == fastest
        )
        self._hetero = len(self._fast) < len(self.cores)
        self._n_rt_queued = 0
        self._n_cfs_queued = 0
        self._seq = 0
        self._n_online = len(self.cores)
        self.cpusets: dict[str, tuple[int, ...] | None] = {
            group: parse_cpuset(text, len(self.cores)) for group, text in spec.cpusets.items()
        }
        self.hotplugs: list[Hotplug] = []
        # PELT is kept where something reads it: capacity-aware placement (big.LITTLE)
        # and utilisation-driven governors; elsewhere it would only cost time. Set it
        # before the first thread runs to read utilisation on any phone.
        self.track_util = self._hetero  # a utilisation-driven governor turns it on
        # HMP placement (Qualcomm's older kernels), where clusters differ in capacity:
        # tiers of equal capacity, cheapest (smallest) first.
        self.hmp: HmpSpec | None = spec.hmp if self._hetero else None
        caps = sorted({core.cap_orig for core in self.cores})
        self._tier_of = {core.cid: caps.index(core.cap_orig) for core in self.cores}
        self._tiers: tuple[tuple[float, tuple[int, ...]], ...] = tuple(
            (cap, tuple(c.cid for c in self.cores if c.cap_orig == cap)) for cap in caps
        )
        self._on_timer_cb = self._on_timer  # bound once: _arm schedules it on every switch
        # sched_boost (kernel/sched/boost.c), taken and dropped by the interaction boost:
        # 0 none, 1 every thread, 2 the threads of the groups in _boost_groups placed on
        # the biggest cluster. Only where clusters differ (SCHED_BOOST_ON_BIG).
        self.sched_boost = 0
        self._boost_groups: frozenset[str] = frozenset()
        self._start_policies(profile)
        self.interaction_boost: InteractionBoost | None = (
            InteractionBoost(self, spec.interaction_boost)
            if spec.interaction_boost is not None
            else None
        )

    def interaction_hint(self, duration_ns: int = 0) -> None:
        """``POWER_HINT_INTERACTION`` (a touch; a fling with its duration): the profile's
        interaction boost raises its clusters' clock floors for that long, if it has one
        (:mod:`mqoe.device.cpu.boost`)."""
        if self.interaction_boost is not None:
            self.interaction_boost.hint(duration_ns)

    def set_sched_boost(self, kind: int, groups: frozenset[str] = frozenset()) -> None:
        """Write ``/proc/sys/kernel/sched_boost``: ``kind`` 1 (full throttle) or 2
        (conservative: only threads of ``groups``, the stune groups with
        ``sched_boost_no_override``), 0 to drop it. On big.LITTLE a boosted fair thread
        does not fit a smaller cluster (``task_load_will_fit``): it wakes on the biggest
        one, and under HMP load balancing moves no other thread up while the boost
        holds (``can_migrate_task``). Taking the boost kicks the smaller clusters
        (``boost_kick_cpus``): a boosted thread running or waiting there moves up at
        once (the kernel's tick-time ``UP_MIGRATION``). Dropping it moves nothing; threads
        come down at their next wake-up. Homogeneous phones ignore it (the kernel's
        SCHED_BOOST_ON_ALL changes nothing on equal clusters)."""
        if kind not in (0, 1, 2):
            raise ValueError(f"sched_boost must be 0, 1 or 2, got {kind}")
        if not self._hetero:
            return
        self.sched_boost = kind
        self._boost_groups = groups
        if not kind:
            return
        fast = self._fast
        for core in self.cores:
            if core.cid in fast or not core.online:
                continue
            cur = core.current
            fair = core.cfs if cur is None or cur.rt_prio else [*core.cfs, cur]
            movers = [t for t in fair if self._placement_boosted(t)
                      and any(c in fast for c in t.allowed)]  # fmt: skip
            for thread in movers:
                self._detach(thread)
                self._place(thread)
            if movers:
                self._refill(core)

    def _placement_boosted(self, thread: Thread) -> bool:
        """Whether sched_boost places ``thread`` on the biggest cluster (task_sched_boost)."""
        kind = self.sched_boost
        return kind == 1 or (kind == 2 and thread.stune in self._boost_groups)

    def _boost_keeps(self, thread: Thread, dest: int, source: Core) -> bool:
        """HMP under sched_boost: balancing moves neither a thread the boost does not
        cover up to a bigger cluster nor a boosted one down to a cluster it does not
        fit (msm-4.4 ``can_migrate_task``)."""
        if not self.sched_boost or self.hmp is None:
            return False
        to_tier, from_tier = self._tier_of[dest], self._tier_of[source.cid]
        if to_tier == from_tier:
            return False
        return (to_tier > from_tier) != self._placement_boosted(thread)

    def _start_policies(self, profile: DeviceProfile) -> None:
        """Each cluster's governor, then the hotplug policy, from the profile."""
        spec = profile.cpu
        governor = spec.governor
        for name, policy in self.policies.items():
            tunables = governor.clusters.get(name, {})
            where = f"profile {profile.name!r} [cpu.governor.{name}]"
            policy.governor = make_governor(governor.name, tunables, where)
            policy.governor.start(policy)
        if spec.hotplug is not None:
            for name, tunables in spec.hotplug.clusters.items():
                where = f"profile {profile.name!r} [cpu.hotplug.{name}]"
                hotplug = make_hotplug(spec.hotplug.name, tunables, where)
                hotplug.start(self, [self.cores[c] for c in self.clusters[name]])
                self.policies[name].hotplug = hotplug
                self.hotplugs.append(hotplug)

    def energy_table(self) -> list[dict[str, Any]]:
        """Per cluster: busy / idle / offline core-seconds and energy (J; NaN without a
        power table), from each core's time at each OPP (call after :meth:`finish`)."""
        rows = []
        for name, policy in self.policies.items():
            table = self.power[name]
            cores = policy.cores
            busy = [sum(c.busy_opp_ns[i] for c in cores) for i in range(len(policy.opp.khz))]
            idle = sum(c.idle_ns for c in cores)
            active = policy.active_opp_ns
            total_active = sum(active)
            span = self.env.now
            if table is None:
                energy = math.nan
            else:
                energy = sum(b * p for b, p in zip(busy, table.core_busy_mw, strict=True))
                energy += idle * table.core_idle_mw
                energy += sum(a * p for a, p in zip(active, table.cluster_busy_mw, strict=True))
                energy += (span - total_active) * table.cluster_idle_mw
                energy *= 1e-12  # ns × mW → J
            mean_khz = (
                sum(b * f for b, f in zip(busy, policy.opp.khz, strict=True)) / sum(busy)
                if sum(busy) else math.nan
            )  # fmt: skip
            rows.append({
                "cluster": name,
                "busy_s": sum(busy) / 1e9,
                "idle_s": idle / 1e9,
                "offline_s": sum(c.offline_ns for c in cores) / 1e9,
                "mean_busy_khz": mean_khz,
                "freq_changes": policy.changes,
                "energy_j": energy,
                "power_source": table.source if table is not None else "",
            })  # fmt: skip
        return rows

    # -- public API -------------------------------------------------------------------
    def thread(
        self,
        name: str,
        policy: SchedPolicy | None = None,
        *,
        process: str = "",
        cpus: tuple[int, ...] | list[int] | None = None,
    ) -> Thread:
        """Create a sleeping thread. ``cpus`` is its affinity (cpuset); None = all cores."""
        allowed = self._check_cpus(cpus)
        thread = Thread(len(self.threads) + 1, name, process or name, policy or Fair(), allowed)
        online = tuple(c for c in allowed if self.cores[c].online)
        thread.allowed = online or tuple(c.cid for c in self.cores if c.online)
        thread._since = self.env.now
        self.threads.append(thread)
        return thread

    def run(self, thread: Thread, cycles: float) -> Event:
        """Give a sleeping thread ``cycles`` reference cycles of work; the event fires when done.

        ``cycles=math.inf`` is a busy loop: the thread stays runnable until it exits.
        """
        if thread.state == _DEAD:
            raise RuntimeError(f"{thread!r} has exited")
        if thread._done is not None:
            raise RuntimeError(f"{thread!r} already has work; wait for its event first")
        done = Event(self.env)
        if cycles <= 0:
            return done.succeed()
        thread._remaining = float(cycles)
        thread._done = done
        if thread.state == _BLOCKED_IO:  # woken straight out of an I/O wait
            self._count_iowait(thread, -1)
        self._wake(thread)
        return done

    def set_io_wait(self, thread: Thread, waiting: bool) -> None:
        """Mark a sleeping thread as blocked on I/O (D state) or back to plain sleeping."""
        if thread._done is not None or thread.state == _DEAD:
            raise RuntimeError(f"{thread!r} is not sleeping; only a sleeping thread waits on I/O")
        state = _BLOCKED_IO if waiting else _SLEEPING
        if thread.state != state:
            self._count_iowait(thread, 1 if waiting else -1)
        self._set_state(thread, state)

    def _count_iowait(self, thread: Thread, delta: int) -> None:
        """io_schedule's rq->nr_iowait: the thread's last core counts it while it waits."""
        core = thread._last_core
        if core is not None:
            self._account(core)
            core.nr_iowait += delta

    def iowait_ns(self) -> int:
        """Idle time of all cores while a thread waited on I/O, up to now (top's iowait)."""
        for core in self.cores:
            self._account(core)
        return sum(core.iowait_ns for core in self.cores)

    def set_affinity(self, thread: Thread, cpus: tuple[int, ...] | list[int] | None) -> None:
        """Change a thread's cpuset; a thread on a core it may no longer use moves at once."""
        thread.cpuset = self._check_cpus(cpus)
        online = tuple(c for c in thread.cpuset if self.cores[c].online)
        thread.allowed = online or tuple(c.cid for c in self.cores if c.online)
        core = thread._core
        if core is not None and core.cid not in thread.allowed:
            self._detach(thread)
            self._place(thread)
            self._refill(core)

    def set_policy(self, thread: Thread, policy: SchedPolicy) -> None:
        """Change scheduling class or nice (sched_setscheduler / setpriority)."""
        core = self._detach(thread)
        thread._set_policy(policy)
        if core is not None:
            self._place(thread)
            self._refill(core)

    def set_group(self, thread: Thread, group: str) -> None:
        """Move a thread to an Android cgroup (``top-app``, ``foreground``,
        ``background``, ``system-background``, ``restricted``): its cpuset becomes the
        group's cores (all where the profile sets none) and its boost the group's."""
        self.set_affinity(thread, self.cpusets.get(group))
        thread.stune = group
        boost = self.boost
        if boost is None:
            thread.boost = 0
        elif group == "top-app":
            thread.boost = boost.top_app
        elif group == "foreground":
            thread.boost = boost.foreground
        else:
            thread.boost = 0

    def core_util(self, core: Core, boosted: bool = False) -> float:
        """The CPU's PELT utilisation now (capacity units), optionally boosted as
        schedutil sees it: schedtune adds ``boost`` % of the headroom
        (``boosted_cpu_util``), uclamp raises it to ``boost`` % of the scale."""
        if not self.track_util:
            raise RuntimeError("utilisation is not tracked on this phone: set "
                               "cpu.track_util = True before its threads run")  # fmt: skip
        self._sync_util(core)
        util = core.util
        if boosted and self.boost is not None:
            boost = 0
            cur = core.current
            if cur is not None:
                boost = cur.boost
            for t in core.cfs:
                boost = max(boost, t.boost)
            if boost:
                if self.boost.kind == "schedtune":
                    util += (pelt.SCALE - util) * boost / 100
                else:
                    util = max(util, pelt.SCALE * boost / 100)
        return util

    def core_busy_ns(self, core: Core) -> int:
        """The core's total busy time up to now."""
        self._account(core)
        return core._busy_total

    def runnable_on(self, cores: list[Core]) -> int:
        """Threads running or queued on these cores."""
        return sum((c.current is not None) + len(c.cfs) + len(c.rt) for c in cores)

    def set_online_count(self, cores: list[Core], count: int) -> None:
        """Hotplug: keep the first ``count`` of ``cores`` online, the rest offline.
        An offline core's threads move to online allowed cores at once."""
        going = [c for k, c in enumerate(cores) if c.online and k >= count]
        coming = [c for k, c in enumerate(cores) if not c.online and k < count]
        if not going and not coming:
            return
        moved: list[Thread] = []
        for core in going:
            running = core.current
            if running is not None:
                self._update_curr(core)
                self._stop_running(core, running)
                if not running.rt_prio:
                    core.fair_weight -= running.weight
                running._core = None
                self._set_state(running, _RUNNABLE_PREEMPTED)
                moved.append(running)
            for thread in list(core.rt) + list(core.cfs):
                self._dequeue(core, thread)
                moved.append(thread)
            self._account(core)
            core.online = False
            self._n_idle -= 1
        for core in coming:
            self._account(core)
            core.online = True
            self._n_idle += 1
        self._n_online = sum(c.online for c in self.cores)
        online = tuple(c.cid for c in self.cores if c.online)
        for thread in self.threads:
            mask = tuple(c for c in thread.cpuset if self.cores[c].online)
            thread.allowed = mask or online
        for thread in moved:
            self._place(thread)
        for core in coming:
            if core.current is None:
                self._pick_next(core)

    def exit(self, thread: Thread) -> None:
        """The thread dies (process killed): it leaves the CPU at once. Its pending work's
        event still fires, so code waiting on it can see ``thread.alive`` is False and
        clean up (release a stall, stop) instead of waiting forever."""
        if thread.state == _DEAD:
            return
        if thread.state == _BLOCKED_IO:
            self._count_iowait(thread, -1)
        core = self._detach(thread)
        if core is not None:
            self._refill(core)
        done, thread._done = thread._done, None
        thread._remaining = 0.0
        last = thread._last_core
        if last is not None and self.track_util:  # its utilisation leaves the CPU with it
            util = self._util_after(thread, self.env.now - thread._since)
            self._sync_util(last)
            last.util = max(0.0, last.util - util)
        self._set_state(thread, _DEAD)
        if done is not None:
            done.succeed()

    def finish(self) -> None:
        """Close the books at the current time (call once after ``env.run``)."""
        for core in self.cores:
            if core.current is not None:
                self._update_curr(core)
            self._account(core)
            self._sync_util(core)
        for policy in self.policies.values():
            self._account_policy(policy)
        now = self.env.now
        for thread in self.threads:
            if thread.state != _DEAD:
                elapsed = now - thread._since
                thread.state_ns[thread.state] += elapsed
                if elapsed:  # as _set_state: a mid-run snapshot keeps PELT current
                    thread._util = self._util_after(thread, elapsed)
                thread._since = now

    def snapshot(self) -> list[dict[str, Any]]:
        """The thread table as of now, mid-run: subtract two snapshots to get the state
        times of a window (as a trace recorded over part of a session would)."""
        self.finish()
        return self.thread_table()

    def busy_threads(self) -> int:
        """Threads running or waiting for a core (PSI's non-idle, productive tasks)."""
        return self._n_online - self._n_idle + self._n_rt_queued + self._n_cfs_queued

    def thread_table(self) -> list[dict[str, Any]]:
        """Per-thread identity and state times in ns (call after :meth:`finish`)."""
        rows = []
        for t in self.threads:
            rows.append(
                {
                    "tid": t.tid,
                    "thread": t.name,
                    "process": t.process,
                    "policy": "rt" if t.rt_prio else "fair",
                    "priority": t.rt_prio if t.rt_prio else t.nice,
                    "running_ns": t.state_ns[_RUNNING],
                    "runnable_ns": t.state_ns[_RUNNABLE],
                    "runnable_preempted_ns": t.state_ns[_RUNNABLE_PREEMPTED],
                    "sleeping_ns": t.state_ns[_SLEEPING],
                    "blocked_io_ns": t.state_ns[_BLOCKED_IO],
                }
            )
        return rows

    def check_invariants(self) -> None:
        """Raise AssertionError if the scheduler state is inconsistent (used by tests)."""
        for core in self.cores:
            cur = core.current
            if cur is not None:
                assert cur.state == _RUNNING and cur._core is core, cur
                assert core.cid in cur.allowed, f"{cur!r} runs on disallowed core {core.cid}"
            weight = sum(t.weight for t in core.cfs)
            weight += cur.weight if cur is not None and not cur.rt_prio else 0
            assert weight == core.fair_weight, (core, weight, core.fair_weight)
            for queued in core.rt + core.cfs:
                assert queued._core is core and queued.state in (
                    _RUNNABLE,
                    _RUNNABLE_PREEMPTED,
                ), queued
                assert core.cid in queued.allowed, queued
                if queued.rt_prio and core.rt_throttled:
                    continue  # off the RT lists until the period ends
                for cid in queued.allowed:
                    other = self.cores[cid].current
                    if (
                        other is None
                        and not queued.rt_prio
                        and (self._restricted(cid, core) or self._boost_keeps(queued, cid, core))
                    ):
                        continue  # HMP: bigger clusters pull at balance points only; sched_boost
                    assert other is not None, f"core {cid} idle while {queued!r} waits"
                    if queued.rt_prio:
                        assert other.rt_prio >= queued.rt_prio, (
                            f"{queued!r} waits while core {cid} runs {other!r}"
                        )
        assert self._n_idle == sum(c.current is None and c.online for c in self.cores)
        for core in self.cores:
            assert core.online or (core.current is None and not core.cfs and not core.rt)
            policy = core.policy
            assert policy is not None and core.khz == policy.cur_khz
            assert core.khz in policy.opp.khz, f"core {core.cid} at {core.khz} kHz: not an OPP"
        assert self._n_rt_queued == sum(len(c.rt) for c in self.cores)
        assert self._n_cfs_queued == sum(len(c.cfs) for c in self.cores)
        for core in self.cores:
            waiting = sum(t.state == _BLOCKED_IO and t._last_core is core for t in self.threads)
            assert core.nr_iowait == waiting, (core, core.nr_iowait, waiting)

    # -- state and accounting ---------------------------------------------------------
    def _check_cpus(self, cpus: tuple[int, ...] | list[int] | None) -> tuple[int, ...]:
        if cpus is None:
            return self._all
        allowed = tuple(sorted(set(cpus)))
        if not allowed or allowed[0] < 0 or allowed[-1] >= len(self.cores):
            raise ValueError(
                f"cpuset {list(cpus)} is empty or outside cores 0..{len(self.cores) - 1}"
            )
        return allowed

    def _set_state(self, thread: Thread, state: ThreadState) -> None:
        now = self.env.now
        old = thread.state
        if old != _DEAD:
            elapsed = now - thread._since
            thread.state_ns[old] += elapsed
            if elapsed and self.track_util:
                thread._util = self._util_after(thread, elapsed)
        thread.state = state
        thread._since = now

    @staticmethod
    def _util_after(thread: Thread, elapsed: int) -> float:
        """The thread's PELT utilisation after ``elapsed`` ns more in its current state
        (running accrues at its core's current capacity: frequency- and
        capacity-invariant)."""
        decay: float = 0.5 ** (elapsed / UTIL_HALFLIFE_NS)
        level = thread._level if thread.state == _RUNNING else 0.0
        return thread._util * decay + level * (1.0 - decay)

    def _sync_thread(self, thread: Thread) -> None:
        """Bring a thread's state time and utilisation up to now (state unchanged)."""
        now = self.env.now
        elapsed = now - thread._since
        if elapsed and thread.state != _DEAD:
            thread.state_ns[thread.state] += elapsed
            thread._util = self._util_after(thread, elapsed)
            thread._since = now

    def _sync_util(self, core: Core) -> None:
        """The core's utilisation up to now (it accrues while anything runs on it)."""
        now = self.env.now
        elapsed = now - core._util_t
        if elapsed:
            level = core.cap_cur if core.current is not None else 0.0
            core.util = pelt.accrue(core.util, elapsed, level)
            core._util_t = now

    def _attach(self, thread: Thread, core: Core) -> None:
        """A thread moves to ``core``: its utilisation leaves its last core for this one."""
        util = self._util_after(thread, self.env.now - thread._since)
        last = thread._last_core
        if last is not None:
            self._sync_util(last)
            last.util = max(0.0, last.util - util)
        self._sync_util(core)
        core.util += util

    def _account(self, core: Core) -> None:
        """Busy / idle / offline time of the core up to now, busy time per OPP."""
        now = self.env.now
        elapsed = now - core._acct_t
        if elapsed:
            if not core.online:
                core.offline_ns += elapsed
            elif core.current is not None:
                core.busy_opp_ns[core._opp_i] += elapsed
                core._busy_total += elapsed
            else:
                core.idle_ns += elapsed
                if core.nr_iowait:
                    core.iowait_ns += elapsed
            core._acct_t = now

    def _account_policy(self, policy: FreqPolicy) -> None:
        """The cluster's active time (any core busy) per OPP, up to now."""
        now = self.env.now
        elapsed = now - policy.acct_t
        if elapsed:
            if policy.n_busy:
                policy.active_opp_ns[policy.opp.index(policy.cur_khz)] += elapsed
            policy.acct_t = now

    def _set_freq(self, policy: FreqPolicy, khz: int) -> None:
        """The cluster's clock changes: work so far is charged at the old rate, the
        running threads' completion times move."""
        self._account_policy(policy)
        index = policy.opp.index(khz)
        for core in policy.cores:
            self._account(core)
            self._sync_util(core)
            cur = core.current
            if cur is not None:
                self._update_curr(core)
                self._sync_thread(cur)
            core.khz = khz
            core._opp_i = index
            core.rate = khz * 1e-6 * core.ipc
            core.cap_cur = core.cap_orig * khz / policy.opp.max_khz
            if cur is not None:
                cur._level = core.cap_cur
                self._arm(core)
        policy.cur_khz = khz

    def _update_curr(self, core: Core) -> None:
        """Charge the running thread for the time since its last update (update_curr)."""
        cur = core.current
        assert cur is not None
        now = self.env.now
        delta = now - cur._update
        if delta <= 0:
            return
        cur._update = now
        cur._remaining -= delta * core.rate
        if cur.rt_prio:
            self._charge_rt(core, now - delta, now)
            return
        lowest = cur._vruntime = cur._vruntime + delta * NICE_0_WEIGHT / cur.weight
        # update_min_vruntime: the core's min_vruntime follows its lowest fair thread.
        for t in core.cfs:
            if t._vruntime < lowest:
                lowest = t._vruntime
        if lowest > core.min_vruntime:
            core.min_vruntime = lowest

    # -- run queues -------------------------------------------------------------------
    def _detach(self, thread: Thread) -> Core | None:
        """Take a runnable or running thread off its core; returns that core (None if the
        thread was sleeping). The caller re-places the thread and refills the core."""
        core = thread._core
        if core is None:
            return None
        if core.current is thread:
            self._update_curr(core)
            self._put_prev(core, _RUNNABLE)
        self._dequeue(core, thread)
        return core

    def _refill(self, core: Core) -> None:
        if core.current is None:
            self._pick_next(core)

    def _enqueue(self, core: Core, thread: Thread, state: ThreadState) -> None:
        self._seq += 1
        thread._seq = self._seq
        thread._core = core
        if thread._last_core is not core and self.track_util:
            self._attach(thread, core)
        thread._last_core = core
        policy = core.policy
        if policy is not None and policy.wants_enqueue and state == _RUNNABLE:
            policy.governor.on_enqueue(policy, core)
        if thread.rt_prio:
            core.rt.append(thread)
            self._n_rt_queued += 1
        else:
            core.cfs.append(thread)
            self._n_cfs_queued += 1
            core.fair_weight += thread.weight
        # _set_state(thread, state), inlined: every wake-up passes here.
        now = self.env.now
        old = thread.state
        if old != _DEAD:
            elapsed = now - thread._since
            thread.state_ns[old] += elapsed
            if elapsed and self.track_util:
                thread._util = self._util_after(thread, elapsed)
        thread.state = state
        thread._since = now

    def _dequeue(self, core: Core, thread: Thread) -> None:
        """Take a queued thread off its core's queue (and its fair weight off the core)."""
        if thread.rt_prio:
            core.rt.remove(thread)
            self._n_rt_queued -= 1
        else:
            core.cfs.remove(thread)
            self._n_cfs_queued -= 1
            core.fair_weight -= thread.weight
        thread._core = None

    # -- wake-up and placement --------------------------------------------------------
    def _wake(self, thread: Thread) -> None:
        if thread.rt_prio:
            self._place_rt(thread)
            return
        core = self._select_fair_core(thread)
        self._migrate_vruntime(thread, core)
        # GENTLE_FAIR_SLEEPERS: at most half a latency of credit for having slept.
        thread._vruntime = max(thread._vruntime, core.min_vruntime - self.latency_ns / 2)
        self._place_fair(thread, core, waking=True)

    def _place(self, thread: Thread) -> None:
        """Put a runnable thread that is on no queue where it should run (no sleeper credit)."""
        if thread.rt_prio:
            self._place_rt(thread)
            return
        core = self._select_fair_core(thread)
        self._migrate_vruntime(thread, core)
        self._place_fair(thread, core, waking=False)

    def _place_rt(self, thread: Thread) -> None:
        core = self._select_rt_core(thread)
        self._enqueue(core, thread, _RUNNABLE)
        if core.rt_throttled:
            return  # it waits for the period's end
        cur = core.current
        if cur is None:
            self._pick_next(core)
        elif cur.rt_prio < thread.rt_prio:
            self._preempt(core, _PREEMPT_RT)

    def _place_fair(self, thread: Thread, core: Core, waking: bool) -> None:
        self._enqueue(core, thread, _RUNNABLE)
        cur = core.current
        if cur is None:
            self._pick_next(core)
        elif self.hmp is not None and self._n_idle and self._kick_idle(thread, core):
            return
        elif not cur.rt_prio:
            self._update_curr(core)
            gran = self.wakeup_granularity_ns * NICE_0_WEIGHT / thread.weight
            if waking and cur._vruntime - thread._vruntime > gran:
                self._preempt(core, _PREEMPT_WAKEUP)
            else:
                self._arm(core)  # the running thread's slice shrank

    def _migrate_vruntime(self, thread: Thread, dest: Core) -> None:
        """vruntime is relative to the core a thread was last on; rebase it onto ``dest``."""
        source = thread._last_core
        if source is not None and source is not dest and not thread.rt_prio:
            thread._vruntime += dest.min_vruntime - source.min_vruntime

    def _select_fair_core(self, thread: Thread) -> Core:
        """select_task_rq_fair: an idle core (the last one, then its cluster), else stay on
        the last core (select_idle_sibling returns prev when nothing is idle); a thread
        with no usable last core goes to the least-loaded allowed core (fork balancing)."""
        if self.hmp is not None:
            return self._select_hmp(thread, self.hmp)
        cores = self.cores
        last = thread._last_core
        allowed = thread.allowed
        if self.sched_boost and self._placement_boosted(thread):
            # sched_boost: a smaller cluster does not fit (task_fits_max): an idle big
            # core, else the least-loaded one.
            fast = [cores[c] for c in allowed if c in self._fast]
            if fast:
                idle = next((c for c in fast if c.current is None), None)
                return idle if idle is not None else min(fast, key=self._fair_load)
        if last is not None and last.cid not in allowed:
            last = None
        if self._n_idle:
            if self._hetero:
                chosen = self._select_capacity(thread, last)
                if chosen is not None:
                    return chosen
            if last is not None and last.current is None:
                return last
            fallback: Core | None = None
            for cid in allowed:
                core = cores[cid]
                if core.current is None:
                    if last is None or core.cluster == last.cluster:
                        return core
                    if fallback is None:
                        fallback = core
            if fallback is not None:
                return fallback
        if last is not None:
            return last
        best = cores[allowed[0]]
        best_load = self._fair_load(best)
        for cid in allowed[1:]:
            core = cores[cid]
            load = self._fair_load(core)
            if load < best_load:
                best, best_load = core, load
        return best

    def _select_capacity(self, thread: Thread, last: Core | None) -> Core | None:
        """Capacity-aware wake-up on big.LITTLE (EAS find_best_target / HMP): a boosted
        thread (top-app schedtune/uclamp) takes the idle core of the highest capacity;
        a thread that does not fit its last core (utilisation above 80% of its
        capacity: the misfit margin) takes an idle core of the fastest cluster; a
        thread that fits a slower cluster leaves an idle big core for an idle
        LITTLE one (down-migration). None: keep the default idle-sibling choice."""
        cores = self.cores
        if thread.boost:
            best: Core | None = None
            for cid in thread.allowed:
                core = cores[cid]
                if core.current is None and (best is None or core.cap_orig > best.cap_orig):
                    best = core
            return best
        if last is None:
            return None
        util = self._util_after(thread, self.env.now - thread._since)
        if last.cid not in self._fast:
            if util > UPMIGRATE_UTIL * last.cap_orig:
                for cid in thread.allowed:
                    if cid in self._fast and cores[cid].current is None:
                        return cores[cid]
            return None
        fits: Core | None = None
        for cid in thread.allowed:
            core = cores[cid]
            if (core.current is None and core.cap_orig < last.cap_orig
                    and util < UPMIGRATE_UTIL * core.cap_orig
                    and (fits is None or core.cap_orig < fits.cap_orig)):  # fmt: skip
                fits = core
        return fits

    def _select_hmp(self, thread: Thread, hmp: HmpSpec) -> Core:
        """HMP select_best_cpu: the cheapest tier the thread fits (its utilisation under
        ``upmigrate`` % of the tier's capacity, ``downmigrate`` % coming from a bigger
        one; the biggest tier always fits, and so does a thread niced past
        ``upmigrate_min_nice``), its least-loaded allowed CPU that stays under the
        spill thresholds with the thread added (its previous CPU on ties); the next
        tier when every CPU there has spilled; last, the CPU with the most spare
        capacity. Load is the runnable threads' utilisation (HMP's
        cumulative_runnable_avg): a sleeping thread leaves none behind."""
        cores = self.cores
        util = self._util_after(thread, self.env.now - thread._since)
        last = thread._last_core
        last_tier = self._tier_of[last.cid] if last is not None else 0
        policy = thread.policy
        small = isinstance(policy, Fair) and policy.nice > hmp.upmigrate_min_nice
        allowed = thread.allowed
        top = len(self._tiers) - 1
        # sched_boost: a boosted thread fits only the biggest cluster (task_load_will_fit)
        boosted = (self.sched_boost != 0 and self._placement_boosted(thread)
                   and any(c in allowed for c in self._tiers[top][1]))  # fmt: skip
        spill_load = hmp.spill_load / 100
        backup: Core | None = None
        backup_spare = -math.inf
        for tier, (cap, cids) in enumerate(self._tiers):
            if tier < top and boosted:
                continue
            if tier < top and not small:
                limit = hmp.downmigrate if last_tier > tier else hmp.upmigrate
                if util * 100 >= limit * cap:
                    continue
            best: Core | None = None
            best_load = math.inf
            for cid in cids:
                if cid not in allowed:
                    continue
                core = cores[cid]
                load = sum(self._runnable_utils(core, thread))
                if cap - load > backup_spare:
                    backup, backup_spare = core, cap - load
                nr = (core.current is not None) + len(core.cfs) + len(core.rt)
                if nr + 1 > hmp.spill_nr_run or load + util > spill_load * cap:
                    continue
                if load < best_load or (load == best_load and core is last):
                    best, best_load = core, load
            if best is not None:
                return best
        if backup is None:  # every allowed core is in a tier the thread does not fit
            backup = min((cores[c] for c in allowed), key=self._fair_load)
        return backup

    def _kick_idle(self, thread: Thread, core: Core) -> bool:
        """A core with two runnable threads kicks an idle core to balance (nohz idle
        balance): an idle allowed core that may pull from ``core`` takes ``thread``."""
        for cid in thread.allowed:
            idle = self.cores[cid]
            if (idle.current is None and idle.online and self._may_pull(idle, core)
                    and not self._boost_keeps(thread, cid, core)):  # fmt: skip
                self._dequeue(core, thread)
                self._migrate_vruntime(thread, idle)
                self._enqueue(idle, thread, thread.state)
                self._pick_next(idle)
                return True
        return False

    def _runnable_utils(self, core: Core, exclude: Thread | None = None) -> list[float]:
        """The utilisation of each thread running or queued on ``core``."""
        now = self.env.now
        cur = core.current
        threads = core.cfs + core.rt if cur is None else [cur, *core.cfs, *core.rt]
        return [self._util_after(t, now - t._since) for t in threads if t is not exclude]

    def _restricted(self, dest: int, source: Core) -> bool:
        """Whether HMP's restrict_cluster_spill governs pulls from ``source`` to core
        ``dest`` (a bigger tier taking from a smaller one)."""
        hmp = self.hmp
        return (hmp is not None and hmp.restrict_cluster_spill
                and self._tier_of[dest] > self._tier_of[source.cid])  # fmt: skip

    def _may_pull(self, dest: Core, source: Core) -> bool:
        """Whether ``dest`` may take a waiting thread of ``source``: always, except with
        HMP's restrict_cluster_spill from a cheaper tier that is neither overloaded
        (on average past a spill threshold) nor holding a thread too big for it
        (bail_inter_cluster_balance)."""
        hmp = self.hmp
        if hmp is None or not self._restricted(dest.cid, source):
            return True
        cap, cids = self._tiers[self._tier_of[source.cid]]
        online = [self.cores[cid] for cid in cids if self.cores[cid].online]
        utils = [u for core in online for u in self._runnable_utils(core)]
        if any(u * 100 >= hmp.upmigrate * cap for u in utils):
            return True  # a big task on the small cluster
        n = len(online)
        return sum(utils) >= n * cap * hmp.spill_load / 100 or len(utils) >= n * hmp.spill_nr_run

    @staticmethod
    def _fair_load(core: Core) -> int:
        # A core running an RT thread is worse than any fair load: it may run for long.
        cur = core.current
        return core.fair_weight + (1 << 30 if cur is not None and cur.rt_prio else 0)

    def _select_rt_core(self, thread: Thread) -> Core:
        """select_task_rq_rt: stay on the last core unless an RT thread ≥ ours runs there."""
        last = thread._last_core
        if last is not None and last.cid in thread.allowed:
            cur = last.current
            if cur is None or cur.rt_prio < thread.rt_prio:
                return last
        best = self._lowest_core(thread, exclude=None, below=1 << 30)
        assert best is not None
        return best

    def _lowest_core(self, thread: Thread, exclude: Core | None, below: int) -> Core | None:
        """find_lowest_rq: the allowed core running the lowest priority (idle lowest)."""
        best: Core | None = None
        best_prio = below
        last = thread._last_core
        for cid in thread.allowed:
            core = self.cores[cid]
            if core is exclude:
                continue
            prio = -1 if core.current is None else core.current.rt_prio
            if prio < best_prio or (prio == best_prio and core is last):
                best, best_prio = core, prio
        return best

    # -- switching --------------------------------------------------------------------
    def _preempt(self, core: Core, kind: PreemptKind) -> None:
        """The running thread is switched out while runnable; the best queued one runs."""
        victim = core.current
        assert victim is not None
        if victim._update != self.env.now:  # else charged already (a slice end, say)
            self._update_curr(core)
        if victim._remaining <= _DONE_EPS_CYCLES:
            self._complete(core)
            return
        policy = core.policy
        assert policy is not None
        if (
            not victim.rt_prio
            and policy.n_busy > 1
            and (self._n_rt_queued == len(core.rt) or core.rt_throttled)
        ):
            # The common switch (a slice end, a waking thread): fused, see _switch_busy.
            preemptor: Thread | None = self._switch_busy(core, victim)
        else:
            self._put_prev(core, _RUNNABLE_PREEMPTED)
            self._pick_next(core)
            preemptor = core.current
        if preemptor is not None and preemptor is not victim:
            # A PreemptionLog row; wait and run are filled in when known.
            row = [self.env.now, core.cid, victim.tid, preemptor.tid, kind, -1, -1]
            self.preemptions._rows.append(row)
            victim._preempted_row = row
            preemptor._preemptor_row = row
        # _rebalance has work only for an RT thread or when a core is idle.
        if victim.state != _RUNNING and (victim.rt_prio or self._n_idle):
            self._rebalance(victim)

    def _switch_busy(self, core: Core, prev: Thread) -> Thread:
        """``_put_prev(core, RUNNABLE_PREEMPTED)`` then ``_pick_next(core)`` in one step, for
        a fair thread preempted while another core of the cluster is busy, where the
        next thread is the core's own: no RT thread is queued on another core (none to
        pull), so it is the best queued here if any may run, else the leftmost fair
        one (the queue holds at least ``prev``). The core stays busy, so its idle
        count, the cluster's active time and the governor's and hotplug's ``on_busy``
        are untouched. Returns the thread now running."""
        now = self.env.now
        self._switch_out(core, prev, now)
        self._requeue(core, prev, _RUNNABLE_PREEMPTED, now)
        rt = core.rt
        if not rt or core.rt_throttled:
            return self._run_leftmost(core, now)
        best = _highest_rt(rt)
        rt.remove(best)
        self._n_rt_queued -= 1
        core.current = best
        self._start_running(core, best, now)
        return best

    def _run_leftmost(self, core: Core, now: int) -> Thread:
        """A busy core's switch-in: its leftmost queued fair thread runs (as
        :meth:`_pick_fair` picks it, without the idle core's bookkeeping). Returns it."""
        cfs = core.cfs
        best = _leftmost(cfs)
        cfs.remove(best)
        self._n_cfs_queued -= 1
        core.current = best
        self._start_running(core, best, now)
        return best

    def _put_prev(self, core: Core, state: ThreadState) -> None:
        """Switch the current thread out and back into its core's queue."""
        prev = core.current
        assert prev is not None
        self._stop_running(core, prev)
        self._requeue(core, prev, state, self.env.now)

    def _requeue(self, core: Core, prev: Thread, state: ThreadState, now: int) -> None:
        """The just-switched-out ``prev`` back into its core's queue, in ``state``."""
        if prev.rt_prio:
            core.rt.append(prev)
            self._n_rt_queued += 1
        else:
            core.cfs.append(prev)
            self._n_cfs_queued += 1
        self._seq += 1
        prev._seq = self._seq
        # _set_state(prev, state), inlined on this hot path (prev was running: not dead).
        elapsed = now - prev._since
        prev.state_ns[_RUNNING] += elapsed
        if elapsed and self.track_util:
            prev._util = self._util_after(prev, elapsed)
        prev.state = state
        prev._since = now

    def _stop_running(self, core: Core, prev: Thread) -> None:
        now = self.env.now
        self._switch_out(core, prev, now)
        policy = core.policy
        assert policy is not None
        if policy.n_busy == 1:  # the cluster's last busy core: its active time ends
            self._account_policy(policy)
        policy.n_busy -= 1
        core.current = None
        self._n_idle += 1

    def _switch_out(self, core: Core, prev: Thread, now: int) -> None:
        """The running thread's half of a switch-out (``core.current`` still ``prev``):
        the core's busy time and utilisation, its timer, the preemption log, the trace."""
        elapsed = now - core._acct_t  # _account, inlined for a busy core: the hot path
        if elapsed:
            core.busy_opp_ns[core._opp_i] += elapsed
            core._busy_total += elapsed
            core._acct_t = now
        if self.track_util:
            self._sync_util(core)
        timer = core._timer
        if timer is not None:
            timer.cancel()
            core._timer = None
        row = prev._preemptor_row
        if row is not None:
            row[_ROW_RUN] = now - prev._run_start
            prev._preemptor_row = None
        trace = self.env.trace
        if trace.enabled:
            trace.emit(SchedSwitch(now, core.cid, prev.tid, int(prev.state), 0))

    def _rebalance(self, thread: Thread) -> None:
        """A thread just preempted moves to an idle allowed core, or an RT one is pushed."""
        core = thread._core
        assert core is not None
        if thread.rt_prio:
            # push_rt_task: to a core running something of lower priority.
            target = self._lowest_core(thread, exclude=core, below=thread.rt_prio)
        elif self._n_idle:
            target = next(
                (
                    self.cores[c]
                    for c in thread.allowed
                    if self.cores[c].current is None
                    and self._may_pull(self.cores[c], core)
                    and not self._boost_keeps(thread, c, core)
                ),
                None,
            )
        else:
            return
        if target is None:
            return
        self._dequeue(core, thread)
        self._migrate_vruntime(thread, target)
        self._enqueue(target, thread, thread.state)
        if target.current is None:
            self._pick_next(target)
        else:
            self._preempt(target, _PREEMPT_RT)

    def _pick_next(self, core: Core) -> None:
        """Choose what an idle core runs: RT (own or pulled), then CFS (own or pulled)."""
        assert core.current is None
        if core.rt_throttled or not (core.rt or self._n_rt_queued):
            self._pick_fair(core)  # no RT thread may run here
            return
        best = _highest_rt(core.rt) if core.rt else None
        if self._n_rt_queued > len(core.rt):
            for other in self.cores:
                if other is core:
                    continue
                if other.rt_throttled:
                    continue  # a throttled run queue's RT threads are off the lists
                for t in other.rt:
                    if core.cid in t.allowed and (
                        best is None
                        or t.rt_prio > best.rt_prio
                        or (t.rt_prio == best.rt_prio and t._seq < best._seq)
                    ):
                        best = t
        if best is not None:
            source = best._core
            assert source is not None
            self._dequeue(source, best)
            best._core = core
            self._switch_in(core, best)
            return
        self._pick_fair(core)

    def _pick_fair(self, core: Core) -> None:
        """The CFS half of :meth:`_pick_next`: the core's leftmost thread, else a pull."""
        cfs = core.cfs
        if cfs:
            best = _leftmost(cfs)
            cfs.remove(best)
            self._n_cfs_queued -= 1
            self._switch_in(core, best)
            return
        if self._n_cfs_queued:
            pulled = self._pull_fair(core)
            if pulled is not None:
                self._switch_in(core, pulled)

    def _periodic_balance(self, core: Core) -> None:
        """load_balance at a busy core's balance interval, within its cluster: while the
        busiest sibling's fair load exceeds this core's by imbalance_pct (117%), take
        its longest-waiting queued thread that is allowed here, not cache-hot (ran in
        the last sysctl_sched_migration_cost, 0.5 ms) and no heavier than twice the
        imbalance (detach_tasks). An idle core stops balancing (newidle pulls instead)."""
        if core.current is None or not core.online:
            core._lb_armed = False
            return
        self.env.schedule(self._lb_interval_ns, self._periodic_balance, core)
        now = self.env.now
        policy = core.policy
        assert policy is not None
        while True:
            busiest: Core | None = None
            for other in policy.cores:
                if other is core or not other.cfs:
                    continue
                if busiest is None or other.fair_weight > busiest.fair_weight:
                    busiest = other
            if busiest is None or busiest.fair_weight * 100 <= core.fair_weight * 117:
                return
            imbalance = (busiest.fair_weight - core.fair_weight) / 2
            pick: Thread | None = None
            for t in busiest.cfs:
                if (core.cid in t.allowed and t.weight / 2 < imbalance
                        and now - t._update >= MIGRATION_COST_NS
                        and (pick is None or t._seq < pick._seq)):  # fmt: skip
                    pick = t
            if pick is None:
                return
            self._dequeue(busiest, pick)
            self._migrate_vruntime(pick, core)
            self._enqueue(core, pick, pick.state)
            if core.current is not None and not core.current.rt_prio:
                self._arm(core)  # the running thread's slice shrank

    def _pull_fair(self, core: Core) -> Thread | None:
        """newidle balance: take the longest-waiting allowed thread of the busiest core."""
        busiest: Core | None = None
        busiest_n = 0
        may: dict[int, bool] = {}  # per source tier: the verdict is the tier's
        boosting = self.sched_boost != 0 and self.hmp is not None  # can_migrate_task's check
        for other in self.cores:
            if other is core or not other.cfs:
                continue
            tier = self._tier_of[other.cid]
            if tier not in may:
                may[tier] = self._may_pull(core, other)
            if not may[tier]:
                continue
            n = sum(1 for t in other.cfs if core.cid in t.allowed
                    and not (boosting and self._boost_keeps(t, core.cid, other)))  # fmt: skip
            if n > busiest_n:
                busiest, busiest_n = other, n
        if busiest is None:
            return None
        pick: Thread | None = None
        for t in busiest.cfs:
            if (core.cid in t.allowed and (pick is None or t._seq < pick._seq)
                    and not (boosting and self._boost_keeps(t, core.cid, busiest))):  # fmt: skip
                pick = t
        assert pick is not None
        self._dequeue(busiest, pick)
        self._migrate_vruntime(pick, core)
        core.fair_weight += pick.weight
        return pick

    def _charge_rt(self, core: Core, start: int, end: int) -> None:
        """RT run time [start, end) on ``core``, counted in fixed periods of
        sched_rt_period_us from time 0 (only the latest period's share is kept)."""
        period = self.rt_period_ns
        index = end // period
        if index != core.rt_period:
            core.rt_period = index
            core.rt_used_ns = end - max(start, index * period)
        else:
            core.rt_used_ns += end - start

    def _rt_used(self, core: Core) -> int:
        """RT run time on ``core`` in the current period (0 in a period it has not run)."""
        return core.rt_used_ns if core.rt_period == self.env.now // self.rt_period_ns else 0

    def _throttle_rt(self, core: Core) -> None:
        """The core's RT threads used their runtime this period: the running one goes
        back to its queue and fair threads run until the period ends (sched_rt_runtime)."""
        core.rt_throttled = True
        self._put_prev(core, _RUNNABLE_PREEMPTED)
        self._pick_next(core)
        now = self.env.now
        period = self.rt_period_ns
        self.env.schedule((now // period + 1) * period - now, self._unthrottle_rt, core)

    def _unthrottle_rt(self, core: Core) -> None:
        """The period ended: a fresh budget, and the core's RT threads run again."""
        core.rt_throttled = False
        core.rt_period = self.env.now // self.rt_period_ns
        core.rt_used_ns = 0
        if not core.rt:
            return
        cur = core.current
        if cur is None:
            self._pick_next(core)
        elif not cur.rt_prio or max(t.rt_prio for t in core.rt) > cur.rt_prio:
            self._preempt(core, _PREEMPT_RT)

    def _switch_in(self, core: Core, thread: Thread) -> None:
        now = self.env.now
        if core._acct_t != now:  # else already accounted, as the previous thread left
            self._account(core)
        track_util = self.track_util
        if track_util:
            self._sync_util(core)
        policy = core.policy
        assert policy is not None
        if not policy.n_busy:  # the cluster's first busy core: its active time starts
            self._account_policy(policy)
            policy.n_busy = 1
            policy.governor.on_busy(policy)
            if policy.hotplug is not None:
                policy.hotplug.on_busy()
        else:
            policy.n_busy += 1
        core.current = thread
        self._n_idle -= 1
        self._start_running(core, thread, now)

    def _start_running(self, core: Core, thread: Thread, now: int) -> None:
        """The thread's half of a switch-in: ``thread``, just made ``core.current``, runs."""
        thread._core = core
        if thread._last_core is not core and self.track_util:
            self._attach(thread, core)
        thread._last_core = core
        thread._run_start = now
        thread._update = now
        if not core._lb_armed and self._lb_interval_ns:
            core._lb_armed = True
            self.env.schedule(self._lb_interval_ns, self._periodic_balance, core)
        thread._level = core.cap_cur
        row = thread._preempted_row
        if row is not None:
            row[_ROW_WAIT] = now - row[_ROW_TIME]
            thread._preempted_row = None
        # _set_state(thread, _RUNNING), inlined on this hot path (a queued thread: not dead).
        elapsed = now - thread._since
        thread.state_ns[thread.state] += elapsed
        if elapsed and self.track_util:
            thread._util = self._util_after(thread, elapsed)
        thread.state = _RUNNING
        thread._since = now
        trace = self.env.trace
        if trace.enabled:
            trace.emit(SchedSwitch(now, core.cid, 0, int(_RUNNING), thread.tid))
        self._arm(core)

    def _arm(self, core: Core) -> None:
        """(Re)set the core's timer: work completion, or the end of the current slice."""
        cur = core.current
        assert cur is not None
        now = self.env.now
        remaining = cur._remaining
        # Conditional expressions instead of min() / max() below: this runs on every
        # switch, and they pick the same operand as the builtins would (ties included).
        if remaining == _INF:
            when = _NEVER  # unbounded work (a busy loop): only a slice end can stop it
        else:
            needed = _ceil(remaining / core.rate)
            when = now + (needed if needed > 1 else 1)
        cfs = core.cfs
        if not cur.rt_prio:
            if cfs:
                min_gran = self.min_granularity_ns
                span = (len(cfs) + 1) * min_gran
                period = span if span > self.latency_ns else self.latency_ns
                ideal = int(period * cur.weight / core.fair_weight)
                slice_end = cur._run_start + (min_gran if min_gran > ideal else ideal)
                if slice_end < now:
                    slice_end = now
                if slice_end < when:
                    when = slice_end
        elif self.rt_runtime_ns != _NEVER:
            budget = self.rt_runtime_ns - self._rt_used(core)
            budget_end = now + (budget if budget > 1 else 1)
            if budget_end < when:
                when = budget_end
        timer = core._timer
        if timer is not None:
            if timer.time_ns == when:
                return
            timer.cancel()
            core._timer = None
        if when != _NEVER:
            # env.schedule(when - now, …), inlined: one timer per switch.
            env = self.env
            timer = core._timer = Timer(when, self._on_timer_cb, core)
            env._seq += 1
            heappush(env._heap, (when, NORMAL, env._seq, timer))

    def _on_timer(self, core: Core) -> None:
        core._timer = None
        cur = core.current
        assert cur is not None
        self._update_curr(core)
        if cur._remaining <= _DONE_EPS_CYCLES:
            self._complete(core)
        elif not cur.rt_prio and core.cfs:
            self._preempt(core, _PREEMPT_SLICE)
        elif cur.rt_prio and self._rt_used(core) >= self.rt_runtime_ns:
            self._throttle_rt(core)
        else:
            self._arm(core)

    def _complete(self, core: Core) -> None:
        """The running thread finished its work: it sleeps and its event fires."""
        thread = core.current
        assert thread is not None
        policy = core.policy
        assert policy is not None
        # A fair thread of the core's own queue is next, the core stays busy: as in
        # _switch_busy, the core's idle count and the cluster's busy state are untouched.
        stays_busy = (
            policy.n_busy > 1 and (not self._n_rt_queued or core.rt_throttled) and len(core.cfs) > 0
        )
        now = self.env.now
        if stays_busy:
            self._switch_out(core, thread, now)
        else:
            self._stop_running(core, thread)
        if not thread.rt_prio:
            core.fair_weight -= thread.weight
        thread._core = None
        thread._remaining = 0.0
        done, thread._done = thread._done, None
        self._set_state(thread, _SLEEPING)
        assert done is not None
        done.succeed()
        if stays_busy:
            self._run_leftmost(core, now)
        else:
            self._pick_next(core)
