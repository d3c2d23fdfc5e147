"""Load balancing: newidle pulls, pushing a preempted thread to an idle core, the
nohz idle kick, periodic load_balance within a cluster, and HMP's restrict_cluster_spill
and sched_boost limits on what may move. A mixin of
:class:`~mqoe.device.cpu.sched.Cpu`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mypy_extensions import trait

from mqoe.device.cpu.sched_types import _PREEMPT_RT, Core, Thread

# The methods take ``self: Cpu``, the class that mixes them in, so their bodies are
# checked against it; mypy allows such a self type only for protocols ([misc]).
# A mypyc trait: compiled, Cpu is one native class (which may have one native base
# only, and any number of traits; decision 0004).
# mypy: disable-error-code="misc"

if TYPE_CHECKING:
    from mqoe.device.cpu.sched import Cpu

# sysctl_sched_migration_cost: a thread that ran this recently is cache-hot, not moved.
MIGRATION_COST_NS: Final = 500_000


@trait
class BalanceMixin:
    """Load balancing of :class:`~mqoe.device.cpu.sched.Cpu` (see the module)."""

    def _boost_keeps(self: Cpu, thread: Thread, dest: int, source: Core) -> bool:
        """HMP under sched_boost: balancing moves neither a thread the boost does not
        cover up to a bigger cluster nor a boosted one down to a cluster it does not
        fit (msm-4.4 ``can_migrate_task``)."""
        if not self.sched_boost or self.hmp is None:
            return False
        to_tier, from_tier = self._tier_of[dest], self._tier_of[source.cid]
        if to_tier == from_tier:
            return False
        return (to_tier > from_tier) != self._placement_boosted(thread)

    def _kick_idle(self: Cpu, thread: Thread, core: Core) -> bool:
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

    def _restricted(self: Cpu, dest: int, source: Core) -> bool:
        """Whether HMP's restrict_cluster_spill governs pulls from ``source`` to core
        ``dest`` (a bigger tier taking from a smaller one)."""
        hmp = self.hmp
        return (hmp is not None and hmp.restrict_cluster_spill
                and self._tier_of[dest] > self._tier_of[source.cid])  # fmt: skip

    def _may_pull(self: Cpu, dest: Core, source: Core) -> bool:
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

    def _rebalance(self: Cpu, thread: Thread) -> None:
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

    def _periodic_balance(self: Cpu, core: Core) -> None:
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

    def _pull_fair(self: Cpu, core: Core) -> Thread | None:
        """newidle balance: take the longest-waiting allowed thread of the busiest core."""
        busiest: Core | None = None
        busiest_n = 0
        may: dict[int, bool] = {}  # per source tier: the verdict is the tier's
        hmp = self.hmp
        boosting = self.sched_boost != 0 and hmp is not None  # can_migrate_task's check
        cid = core.cid
        for other in self.cores:
            if other is core or not other.cfs:
                continue
            if hmp is not None:  # without HMP every pull is allowed (_may_pull)
                tier = self._tier_of[other.cid]
                if tier not in may:
                    may[tier] = self._may_pull(core, other)
                if not may[tier]:
                    continue
            n = 0  # the allowed threads of other's queue (a loop: no generator per core)
            for t in other.cfs:
                if cid in t.allowed and not (boosting and self._boost_keeps(t, cid, other)):
                    n += 1
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
