"""Scheduler events (:class:`_Sched`): ``sched_switch`` (thread states, preemptions,
CPU time, LITTLE saturation) and ``sched_wakeup``/``sched_waking`` (Runnable, binder
waits)."""

from __future__ import annotations

import re

from mqoe.analysis.systrace.state import (
    _DEAD,
    _IO,
    _OTHER,
    _PREEMPTED,
    _RUNNABLE,
    _RUNNING,
    _SLEEPING,
    _State,
)

_SWITCH = re.compile(
    r"prev_comm=(.*?) prev_pid=(\d{1,10}) prev_prio=-?\d{1,6} prev_state=(\S{1,16}) ==> "
    r"next_comm=(.*?) next_pid=(\d{1,10}) next_prio=-?\d{1,6}"
)
_WAKEUP = re.compile(r"comm=(.*?) pid=(\d{1,10}) prio=-?\d{1,6}(?: |$)")
_BINDER_THREADS = ("Binder:", "Binder_", "HwBinder:")


class _Sched(_State):
    """Scheduler events: switches (thread states, preemptions, CPU time, LITTLE
    saturation) and wakeups (Runnable, binder waits)."""

    def _switch(self, cpu: int, t: int, body: str, lineno: int) -> None:
        m = _SWITCH.match(body)
        if m is None:
            self._bad(lineno, "sched_switch: prev_comm= prev_pid= prev_prio= prev_state= ==> "
                      "next_comm= next_pid= next_prio=")  # fmt: skip
            return
        self.stats.switches += 1
        prev_comm, prev_s, prev_state, next_comm, next_s = m.groups()
        prev, nxt = int(prev_s), int(next_s)
        pending = self.pending_cpu.pop(cpu, None)
        if pending is not None:
            self.p_run[pending[0]] = max(0, t - pending[1])
        if prev != 0:
            th = self.threads.get(prev) or self._thread(prev, prev_comm)
            th.comm = prev_comm  # the kernel's name at the switch beats any cached one
            ch = prev_state[0]
            if ch == "R":
                state = _PREEMPTED
                if nxt != 0:
                    idx = len(self.p_time)
                    self.p_time.append(t)
                    self.p_cpu.append(cpu)
                    self.p_victim.append(prev)
                    self.p_preemptor.append(nxt)
                    self.p_wait.append(-1)
                    self.p_run.append(-1)
                    self.pending_victim[prev] = idx
                    self.pending_cpu[cpu] = (idx, t)
                else:
                    self.stats.preempted_by_idle += 1
            elif ch == "S":
                state = _SLEEPING
            elif ch == "D":
                state = _IO
            elif ch == "X" or ch == "x" or ch == "Z":
                state = _DEAD
            else:
                state = _OTHER
            self._set(th, state, t)
        if nxt != 0:
            th = self.threads.get(nxt) or self._thread(nxt, next_comm)
            th.comm = next_comm
            idx = self.pending_victim.pop(nxt, -1)
            if idx >= 0:
                self.p_wait[idx] = max(0, t - self.p_time[idx])
            self._set(th, _RUNNING, t)
        cur = self.cpu_cur.get(cpu)
        if cur is None:
            self.cpu_first[cpu] = t
            self.cpu_busy[cpu] = 0
            self.cpu_switches[cpu] = 0
        elif cur != 0:
            self.cpu_busy[cpu] += max(0, t - self.cpu_since[cpu])
        self.cpu_cur[cpu] = nxt
        self.cpu_since[cpu] = t
        self.cpu_switches[cpu] += 1
        if self.track_saturation:
            self._saturation(cpu, 1 if nxt != 0 else 0, t)

    def _saturation(self, cpu: int, busy: int, t: int) -> None:
        role = self.role.get(cpu)
        if role is None:
            return
        old = self.cpu_status.get(cpu, -1)
        if old == busy:
            return
        self.cpu_status[cpu] = busy
        if role == 0:
            self.little_busy += (busy == 1) - (old == 1)
        else:
            self.big_idle += (busy == 0) - (old == 0)
        on = self.little_busy == len(self.little) and self.big_idle > 0
        if on != self.sat_on:
            if on:
                self.sat_since = t
            elif t > self.sat_since:
                self.sat_start.append(self.sat_since)
                self.sat_end.append(t)
                self.sat_total += t - self.sat_since
            self.sat_on = on

    def _wakeup(self, waker: int, t: int, body: str, lineno: int, context: bool) -> None:
        m = _WAKEUP.match(body)
        if m is None:
            self._bad(lineno, "sched_wakeup: comm= pid= prio= [target_cpu=]")
            return
        self.stats.wakeups += 1
        comm, pid_s = m.groups()
        tid = int(pid_s)
        if tid == 0:
            return
        th = self.threads.get(tid) or self._thread(tid, comm)
        th.comm = comm
        s = th.state
        if s != _RUNNING and s != _RUNNABLE and s != _PREEMPTED:
            self._set(th, _RUNNABLE, t)
            call = th.binder_call
            if call is not None and context:
                if call[0] == waker and t > call[1]:
                    th.binder_waits.append((call[1], t))
                th.binder_call = None
        if context and waker != 0 and comm.startswith(_BINDER_THREADS):
            w = self.threads.get(waker)
            if w is not None and w.hist_t is not None:
                w.binder_call = (tid, t)
