"""RT bandwidth throttling (sched_rt_runtime_us per sched_rt_period_us): the RT run time
charged per core and period, throttling a core whose RT threads used their budget and
lifting it when the period ends. A mixin of :class:`~mqoe.device.cpu.sched.Cpu`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import trait

from mqoe.device.cpu.sched_types import _PREEMPT_RT, _RUNNABLE_PREEMPTED, Core

# The methods take ``self: Cpu``, the class that mixes them in, so their bodies are
# checked against it; mypy allows such a self type only for protocols ([misc]).
# A mypyc trait: compiled, Cpu is one native class (which may have one native base
# only, and any number of traits; decision 0004).
# mypy: disable-error-code="misc"

if TYPE_CHECKING:
    from mqoe.device.cpu.sched import Cpu


@trait
class RtThrottleMixin:
    """RT throttling of :class:`~mqoe.device.cpu.sched.Cpu` (see the module)."""

    def _charge_rt(self: Cpu, core: Core, start: int, end: int) -> None:
        """RT run time [start, end) on ``core``, counted in fixed periods of
        sched_rt_period_us from time 0 (only the latest period's share is kept)."""
        period = self.rt_period_ns
        index = end // period
        if index != core.rt_period:
            core.rt_period = index
            core.rt_used_ns = end - max(start, index * period)
        else:
            core.rt_used_ns += end - start

    def _rt_used(self: Cpu, core: Core) -> int:
        """RT run time on ``core`` in the current period (0 in a period it has not run)."""
        return core.rt_used_ns if core.rt_period == self.env.now // self.rt_period_ns else 0

    def _throttle_rt(self: Cpu, core: Core) -> None:
        """The core's RT threads used their runtime this period: the running one goes
        back to its queue and fair threads run until the period ends (sched_rt_runtime)."""
        core.rt_throttled = True
        self._put_prev(core, _RUNNABLE_PREEMPTED)
        self._pick_next(core)
        now = self.env.now
        period = self.rt_period_ns
        self.env.schedule((now // period + 1) * period - now, self._unthrottle_rt, core)

    def _unthrottle_rt(self: Cpu, core: Core) -> None:
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
