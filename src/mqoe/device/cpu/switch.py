"""The switch path: run-queue insertion and removal, picking what a core runs next,
switching threads in and out (preemption, completion), and each core's timer (work
done, slice end, RT budget end). A mixin of :class:`~mqoe.device.cpu.sched.Cpu`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

from mypy_extensions import trait

from mqoe.device.cpu.sched_types import (
    _DEAD,
    _NEVER,
    _PREEMPT_SLICE,
    _ROW_RUN,
    _ROW_TIME,
    _ROW_WAIT,
    _RUNNABLE,
    _RUNNABLE_PREEMPTED,
    _RUNNING,
    _SLEEPING,
    Core,
    PreemptKind,
    SchedSwitch,
    Thread,
    ThreadState,
)
from mqoe.engine import Timer

# The methods take ``self: Cpu``, the class that mixes them in, so their bodies are
# checked against it; mypy allows such a self type only for protocols ([misc]).
# A mypyc trait: compiled, Cpu is one native class (which may have one native base
# only, and any number of traits; decision 0004).
# mypy: disable-error-code="misc"

if TYPE_CHECKING:
    from mqoe.device.cpu.sched import Cpu

_DONE_EPS_CYCLES: Final = 1e-6  # work below this is complete (float round-off of rate × time)


def _leftmost(cfs: list[Thread]) -> int:
    """CFS's pick among a core's queued fair threads: the lowest vruntime, then the
    longest queued. Its index (the caller pops it: no second search, as ``remove``'s)."""
    best = cfs[0]
    lowest = best._vruntime
    at = 0
    for i, t in enumerate(cfs):
        vruntime = t._vruntime
        if vruntime < lowest or (vruntime == lowest and t._seq < best._seq):
            best, lowest, at = t, vruntime, i
    return at


def _highest_rt(rt: list[Thread]) -> Thread:
    """The RT pick among a core's queued RT threads: the highest priority, then the
    longest queued."""
    best = rt[0]
    for t in rt:
        if t.rt_prio > best.rt_prio or (t.rt_prio == best.rt_prio and t._seq < best._seq):
            best = t
    return best


@trait
class SwitchMixin:
    """Run queues and switching of :class:`~mqoe.device.cpu.sched.Cpu` (see the module)."""

    def _detach(self: Cpu, thread: Thread) -> Core | None:
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

    def _refill(self: Cpu, core: Core) -> None:
        if core.current is None:
            self._pick_next(core)

    def _enqueue(self: Cpu, core: Core, thread: Thread, state: ThreadState) -> None:
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

    def _dequeue(self: Cpu, core: Core, thread: Thread) -> None:
        """Take a queued thread off its core's queue (and its fair weight off the core)."""
        if thread.rt_prio:
            core.rt.remove(thread)
            self._n_rt_queued -= 1
        else:
            core.cfs.remove(thread)
            self._n_cfs_queued -= 1
            core.fair_weight -= thread.weight
        thread._core = None

    def _preempt(self: Cpu, core: Core, kind: PreemptKind) -> None:
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

    def _switch_busy(self: Cpu, core: Core, prev: Thread) -> Thread:
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

    def _run_leftmost(self: Cpu, core: Core, now: int) -> Thread:
        """A busy core's switch-in: its leftmost queued fair thread runs (as
        :meth:`_pick_fair` picks it, without the idle core's bookkeeping). Returns it."""
        cfs = core.cfs
        best = cfs.pop(_leftmost(cfs))
        self._n_cfs_queued -= 1
        core.current = best
        self._start_running(core, best, now)
        return best

    def _put_prev(self: Cpu, core: Core, state: ThreadState) -> None:
        """Switch the current thread out and back into its core's queue."""
        prev = core.current
        assert prev is not None
        self._stop_running(core, prev)
        self._requeue(core, prev, state, self.env.now)

    def _requeue(self: Cpu, core: Core, prev: Thread, state: ThreadState, now: int) -> None:
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

    def _stop_running(self: Cpu, core: Core, prev: Thread) -> None:
        now = self.env.now
        self._switch_out(core, prev, now)
        policy = core.policy
        assert policy is not None
        if policy.n_busy == 1:  # the cluster's last busy core: its active time ends
            self._account_policy(policy)
        policy.n_busy -= 1
        core.current = None
        self._n_idle += 1

    def _switch_out(self: Cpu, core: Core, prev: Thread, now: int) -> None:
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

    def _pick_next(self: Cpu, core: Core) -> None:
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

    def _pick_fair(self: Cpu, core: Core) -> None:
        """The CFS half of :meth:`_pick_next`: the core's leftmost thread, else a pull."""
        cfs = core.cfs
        if cfs:
            best = cfs.pop(_leftmost(cfs))
            self._n_cfs_queued -= 1
            self._switch_in(core, best)
            return
        if self._n_cfs_queued:
            pulled = self._pull_fair(core)
            if pulled is not None:
                self._switch_in(core, pulled)

    def _switch_in(self: Cpu, core: Core, thread: Thread) -> None:
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

    def _start_running(self: Cpu, core: Core, thread: Thread, now: int) -> None:
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

    def _arm(self: Cpu, core: Core) -> None:
        """(Re)set the core's timer: work completion, or the end of the current slice."""
        cur = core.current
        assert cur is not None
        now = self.env.now
        remaining = cur._remaining
        # Conditional expressions instead of min() / max() below: this runs on every
        # switch, and they pick the same operand as the builtins would (ties included).
        if remaining == math.inf:
            when = _NEVER  # unbounded work (a busy loop): only a slice end can stop it
        else:
            needed = math.ceil(remaining / core.rate)
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
            # env.schedule(when - now, …) without its checks and callback: one timer
            # per switch.
            timer = core._timer = Timer(when, self._on_timer_cb, core)
            self.env._push_timer(timer)

    def _on_timer(self: Cpu, core: Core) -> None:
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

    def _complete(self: Cpu, core: Core) -> None:
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
        self._switch_out(core, thread, now)
        if not stays_busy:  # _stop_running's other half: the core goes idle
            if policy.n_busy == 1:  # the cluster's last busy core: its active time ends
                self._account_policy(policy)
            policy.n_busy -= 1
            core.current = None
            self._n_idle += 1
        if not thread.rt_prio:
            core.fair_weight -= thread.weight
        thread._core = None
        thread._remaining = 0.0
        done, thread._done = thread._done, None
        # _set_state(thread, SLEEPING), inlined (thread was running: not dead).
        elapsed = now - thread._since
        thread.state_ns[_RUNNING] += elapsed
        if elapsed and self.track_util:
            thread._util = self._util_after(thread, elapsed)
        thread.state = _SLEEPING
        thread._since = now
        assert done is not None
        done.succeed()
        if stays_busy:
            self._run_leftmost(core, now)
        elif core.rt_throttled or not (core.rt or self._n_rt_queued):
            self._pick_fair(core)  # _pick_next's own shortcut: no RT thread may run
        else:
            self._pick_next(core)
