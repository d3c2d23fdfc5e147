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

This module holds :class:`Cpu`, its set-up and its public calls; the scheduler's parts
are mixins of it (mypyc traits: compiled, Cpu is one native class), one module each:
wake-up placement (:mod:`.placement`), load
balancing (:mod:`.balance`), RT throttling (:mod:`.rt_throttle`), the run queues, the
switch path and the per-core timer (:mod:`.switch`), and accounting (:mod:`.accounting`);
threads, cores and policies are in :mod:`.sched_types`. Governors, hotplug and energy
live in the sibling modules. Not modelled yet: SCHED_RR, EAS energy-aware placement,
cgroup CPU shares, balancing across clusters.

Per-thread accounting splits wall time into Running, Runnable, Runnable (Preempted),
Sleeping and Blocked on I/O, as Perfetto does. Every involuntary switch is logged in
:class:`PreemptionLog` with the victim's wait until it ran again.
"""

from __future__ import annotations

from mqoe.device.cpu import pelt
from mqoe.device.cpu.accounting import UTIL_HALFLIFE_NS, AccountingMixin
from mqoe.device.cpu.balance import MIGRATION_COST_NS, BalanceMixin
from mqoe.device.cpu.boost import InteractionBoost
from mqoe.device.cpu.energy import PowerTable, power_table
from mqoe.device.cpu.governors import FreqPolicy, make_governor
from mqoe.device.cpu.hotplug import Hotplug, make_hotplug
from mqoe.device.cpu.opp import OppTable
from mqoe.device.cpu.placement import UPMIGRATE_UTIL, PlacementMixin
from mqoe.device.cpu.rt_throttle import RtThrottleMixin
from mqoe.device.cpu.sched_types import (
    _BLOCKED_IO,
    _DEAD,
    _NEVER,
    _RUNNABLE,
    _RUNNABLE_PREEMPTED,
    _RUNNING,
    _SLEEPING,
    NICE_0_WEIGHT,
    NICE_TO_WEIGHT,
    Core,
    Fair,
    PreemptionLog,
    PreemptKind,
    RealTime,
    SchedPolicy,
    SchedSwitch,
    Thread,
    ThreadState,
    parse_cpuset,
)
from mqoe.device.cpu.switch import SwitchMixin
from mqoe.device.profiles import DeviceProfile, core_ipc_factor, load_soc
from mqoe.device.profiles.cpu_schema import HmpSpec
from mqoe.engine import Environment, Event

__all__ = [
    "MIGRATION_COST_NS",
    "NICE_0_WEIGHT",
    "NICE_TO_WEIGHT",
    "UPMIGRATE_UTIL",
    "UTIL_HALFLIFE_NS",
    "Core",
    "Cpu",
    "Fair",
    "PreemptKind",
    "PreemptionLog",
    "RealTime",
    "SchedPolicy",
    "SchedSwitch",
    "Thread",
    "ThreadState",
    "parse_cpuset",
]


class Cpu(PlacementMixin, BalanceMixin, RtThrottleMixin, SwitchMixin, AccountingMixin):
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

    def _check_cpus(self, cpus: tuple[int, ...] | list[int] | None) -> tuple[int, ...]:
        if cpus is None:
            return self._all
        allowed = tuple(sorted(set(cpus)))
        if not allowed or allowed[0] < 0 or allowed[-1] >= len(self.cores):
            raise ValueError(
                f"cpuset {list(cpus)} is empty or outside cores 0..{len(self.cores) - 1}"
            )
        return allowed
