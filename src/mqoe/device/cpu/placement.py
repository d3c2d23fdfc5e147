"""Where a thread runs when it wakes or must move: select_task_rq_fair (idle sibling,
capacity-aware up/down-migration on big.LITTLE, sched_boost), Qualcomm HMP's
select_best_cpu, select_task_rq_rt / find_lowest_rq, and the enqueue that follows
(sleeper credit, wake-up preemption). A mixin of :class:`~mqoe.device.cpu.sched.Cpu`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

from mypy_extensions import trait

from mqoe.device.cpu.sched_types import (
    _PREEMPT_RT,
    _PREEMPT_WAKEUP,
    _RUNNABLE,
    NICE_0_WEIGHT,
    Core,
    Fair,
    Thread,
)

# The methods take ``self: Cpu``, the class that mixes them in, so their bodies are
# checked against it; mypy allows such a self type only for protocols ([misc]).
# A mypyc trait: compiled, Cpu is one native class (which may have one native base
# only, and any number of traits; decision 0004).
# mypy: disable-error-code="misc"

if TYPE_CHECKING:
    from mqoe.device.cpu.sched import Cpu
    from mqoe.device.profiles.cpu_schema import HmpSpec

# A thread busier than this on a slower core moves to an idle core of the fastest
# cluster at wake-up (EAS's misfit 80% capacity margin; HMP's sched_upmigrate ≈ 80–95%).
UPMIGRATE_UTIL: Final = 0.8


@trait
class PlacementMixin:
    """Wake-up and placement of :class:`~mqoe.device.cpu.sched.Cpu` (see the module)."""

    def set_sched_boost(self: Cpu, kind: int, groups: frozenset[str] = frozenset()) -> None:
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

    def _placement_boosted(self: Cpu, thread: Thread) -> bool:
        """Whether sched_boost places ``thread`` on the biggest cluster (task_sched_boost)."""
        kind = self.sched_boost
        return kind == 1 or (kind == 2 and thread.stune in self._boost_groups)

    def _wake(self: Cpu, thread: Thread) -> None:
        if thread.rt_prio:
            self._place_rt(thread)
            return
        core = self._select_fair_core(thread)
        # _migrate_vruntime, inlined (every wake-up passes here): vruntime is relative
        # to the core the thread was last on; rebase it onto ``core``.
        vruntime = thread._vruntime
        source = thread._last_core
        if source is not None and source is not core:
            vruntime += core.min_vruntime - source.min_vruntime
        # GENTLE_FAIR_SLEEPERS: at most half a latency of credit for having slept (the
        # larger of the two, as max() picks it).
        floor = core.min_vruntime - self.latency_ns / 2
        thread._vruntime = floor if floor > vruntime else vruntime
        self._place_fair(thread, core, waking=True)

    def _place(self: Cpu, thread: Thread) -> None:
        """Put a runnable thread that is on no queue where it should run (no sleeper credit)."""
        if thread.rt_prio:
            self._place_rt(thread)
            return
        core = self._select_fair_core(thread)
        self._migrate_vruntime(thread, core)
        self._place_fair(thread, core, waking=False)

    def _place_rt(self: Cpu, thread: Thread) -> None:
        core = self._select_rt_core(thread)
        self._enqueue(core, thread, _RUNNABLE)
        if core.rt_throttled:
            return  # it waits for the period's end
        cur = core.current
        if cur is None:
            self._pick_next(core)
        elif cur.rt_prio < thread.rt_prio:
            self._preempt(core, _PREEMPT_RT)

    def _place_fair(self: Cpu, thread: Thread, core: Core, waking: bool) -> None:
        self._enqueue(core, thread, _RUNNABLE)
        cur = core.current
        if cur is None:
            if core.rt_throttled or not (core.rt or self._n_rt_queued):
                self._pick_fair(core)  # _pick_next's own shortcut: no RT thread may run
            else:
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

    def _migrate_vruntime(self: Cpu, thread: Thread, dest: Core) -> None:
        """vruntime is relative to the core a thread was last on; rebase it onto ``dest``."""
        source = thread._last_core
        if source is not None and source is not dest and not thread.rt_prio:
            thread._vruntime += dest.min_vruntime - source.min_vruntime

    def _select_fair_core(self: Cpu, thread: Thread) -> Core:
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

    def _select_capacity(self: Cpu, thread: Thread, last: Core | None) -> Core | None:
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

    def _select_hmp(self: Cpu, thread: Thread, hmp: HmpSpec) -> Core:
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

    def _runnable_utils(self: Cpu, core: Core, exclude: Thread | None = None) -> list[float]:
        """The utilisation of each thread running or queued on ``core``."""
        now = self.env.now
        cur = core.current
        threads = core.cfs + core.rt if cur is None else [cur, *core.cfs, *core.rt]
        return [self._util_after(t, now - t._since) for t in threads if t is not exclude]

    @staticmethod
    def _fair_load(core: Core) -> int:
        # A core running an RT thread is worse than any fair load: it may run for long.
        cur = core.current
        return core.fair_weight + (1 << 30 if cur is not None and cur.rt_prio else 0)

    def _select_rt_core(self: Cpu, thread: Thread) -> Core:
        """select_task_rq_rt: stay on the last core unless an RT thread ≥ ours runs there."""
        last = thread._last_core
        if last is not None and last.cid in thread.allowed:
            cur = last.current
            if cur is None or cur.rt_prio < thread.rt_prio:
                return last
        best = self._lowest_core(thread, exclude=None, below=1 << 30)
        assert best is not None
        return best

    def _lowest_core(self: Cpu, thread: Thread, exclude: Core | None, below: int) -> Core | None:
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
