"""Accounting: thread state times, PELT utilisation of threads and cores, busy / idle /
iowait / offline time per core and OPP, cluster active time, run time charged to the
running thread (update_curr), clock changes, and the tables and energy read from them.
A mixin of :class:`~mqoe.device.cpu.sched.Cpu`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

from mypy_extensions import trait

from mqoe.device.cpu import pelt
from mqoe.device.cpu.sched_types import (
    _BLOCKED_IO,
    _DEAD,
    _RUNNABLE,
    _RUNNABLE_PREEMPTED,
    _RUNNING,
    _SLEEPING,
    NICE_0_WEIGHT,
    Core,
    Thread,
    ThreadState,
)

# The methods take ``self: Cpu``, the class that mixes them in, so their bodies are
# checked against it; mypy allows such a self type only for protocols ([misc]).
# A mypyc trait: compiled, Cpu is one native class (which may have one native base
# only, and any number of traits; decision 0004).
# mypy: disable-error-code="misc"

if TYPE_CHECKING:
    from mqoe.device.cpu.governors import FreqPolicy
    from mqoe.device.cpu.sched import Cpu

UTIL_HALFLIFE_NS: Final = 32_000_000  # PELT's load-tracking half-life (kernel/sched/pelt.c)


@trait
class AccountingMixin:
    """Accounting of :class:`~mqoe.device.cpu.sched.Cpu` (see the module)."""

    def energy_table(self: Cpu) -> list[dict[str, Any]]:
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

    def _count_iowait(self: Cpu, thread: Thread, delta: int) -> None:
        """io_schedule's rq->nr_iowait: the thread's last core counts it while it waits."""
        core = thread._last_core
        if core is not None:
            self._account(core)
            core.nr_iowait += delta

    def iowait_ns(self: Cpu) -> int:
        """Idle time of all cores while a thread waited on I/O, up to now (top's iowait)."""
        for core in self.cores:
            self._account(core)
        return sum(core.iowait_ns for core in self.cores)

    def core_util(self: Cpu, core: Core, boosted: bool = False) -> float:
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

    def core_busy_ns(self: Cpu, core: Core) -> int:
        """The core's total busy time up to now."""
        self._account(core)
        return core._busy_total

    def finish(self: Cpu) -> None:
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

    def snapshot(self: Cpu) -> list[dict[str, Any]]:
        """The thread table as of now, mid-run: subtract two snapshots to get the state
        times of a window (as a trace recorded over part of a session would)."""
        self.finish()
        return self.thread_table()

    def busy_threads(self: Cpu) -> int:
        """Threads running or waiting for a core (PSI's non-idle, productive tasks)."""
        return self._n_online - self._n_idle + self._n_rt_queued + self._n_cfs_queued

    def thread_table(self: Cpu) -> list[dict[str, Any]]:
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

    def _set_state(self: Cpu, thread: Thread, state: ThreadState) -> None:
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

    def _sync_thread(self: Cpu, thread: Thread) -> None:
        """Bring a thread's state time and utilisation up to now (state unchanged)."""
        now = self.env.now
        elapsed = now - thread._since
        if elapsed and thread.state != _DEAD:
            thread.state_ns[thread.state] += elapsed
            thread._util = self._util_after(thread, elapsed)
            thread._since = now

    def _sync_util(self: Cpu, core: Core) -> None:
        """The core's utilisation up to now (it accrues while anything runs on it)."""
        now = self.env.now
        elapsed = now - core._util_t
        if elapsed:
            level = core.cap_cur if core.current is not None else 0.0
            core.util = pelt.accrue(core.util, elapsed, level)
            core._util_t = now

    def _attach(self: Cpu, thread: Thread, core: Core) -> None:
        """A thread moves to ``core``: its utilisation leaves its last core for this one."""
        util = self._util_after(thread, self.env.now - thread._since)
        last = thread._last_core
        if last is not None:
            self._sync_util(last)
            last.util = max(0.0, last.util - util)
        self._sync_util(core)
        core.util += util

    def _account(self: Cpu, core: Core) -> None:
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

    def _account_policy(self: Cpu, policy: FreqPolicy) -> None:
        """The cluster's active time (any core busy) per OPP, up to now."""
        now = self.env.now
        elapsed = now - policy.acct_t
        if elapsed:
            if policy.n_busy:
                policy.active_opp_ns[policy.opp.index(policy.cur_khz)] += elapsed
            policy.acct_t = now

    def _set_freq(self: Cpu, policy: FreqPolicy, khz: int) -> None:
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

    def _update_curr(self: Cpu, core: Core) -> None:
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
