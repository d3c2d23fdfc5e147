"""A small scheduler simulation behind the synthetic traces: threads running programs
(compute, sleep, I/O, binder calls, markers) on LITTLE and big CPUs, logged as atrace
lines (:class:`_Sim`)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

# The binder threads' name prefixes (the same as the parser's definition of binder waits).
_BINDER_THREADS = ("Binder:", "Binder_", "HwBinder:")

_VSYNC_US = 16_667  # 60 Hz


@dataclass(frozen=True)
class _Spec:
    tid: int
    tgid: int
    comm: str
    prio: int  # as ftrace prints it (RT: 99 − rt_priority; CFS: 120 + nice)
    rank: int  # lower preempts higher in the generator's scheduler
    allowed: tuple[int, ...]


_SimAction = tuple[Any, ...]
_Program = Generator[_SimAction, None, None]


class _SimThread:
    def __init__(self, spec: _Spec) -> None:
        self.spec = spec
        self.prog: _Program | None = None
        self.state = "S"
        self.since = 0
        self.seen = False
        self.acc = {"run": 0, "R": 0, "P": 0, "S": 0, "D": 0}
        self.log: list[tuple[int, str]] = []
        self.remaining = 0
        self.run_start = 0
        self.token = 0
        self.cpu = -1
        self.last_cpu = -1
        self.block: str | None = None  # channel of an untimed block, "timer", None
        self.pending: dict[str, int] = {}
        self.requests: list[int] = []
        self.binder_call: tuple[int, int] | None = None
        self.binder_waits: list[tuple[int, int]] = []
        self.binder_slice_start = -1
        self.binder_slices: list[tuple[int, int]] = []


class _Sim:
    """A small event-driven scheduler that writes ftrace lines as it runs: threads run
    programs (generators of actions), RT/priority ranks preempt, idle CPUs are taken
    after a wakeup latency, everything else waits in a run queue."""

    def __init__(self, rng: np.random.Generator, n_cpus: int, opts: dict[str, Any]) -> None:
        self.rng = rng
        self.n_cpus = n_cpus
        self.opts = opts
        self.now = 0
        self.base_us = int(rng.integers(1_000, 50_000)) * 1_000_000
        self.heap: list[tuple[int, int, str, tuple[int, ...]]] = []
        self.seq = 0
        self.lines: list[str] = []
        self.first_line_us = 0
        self.last_line_us = 0
        self.cur = [0] * n_cpus
        self.incoming: list[int | None] = [None] * n_cpus
        self.in_token = [0] * n_cpus
        self.runq: list[int] = []
        self.threads: dict[int, _SimThread] = {}
        self.pre_rows: list[list[int]] = []
        self.pend_victim: dict[int, int] = {}
        self.pend_cpu: dict[int, tuple[int, int]] = {}
        self.cpu_busy: list[int] = [-1] * n_cpus  # -1 unknown, 0 idle, 1 busy
        self.little: tuple[int, ...] = ()
        self.sat_on = False
        self.sat_since = 0
        self.sat: list[tuple[int, int]] = []
        self.skipped = 0
        self.flags_width = opts["flags_width"]

    # -- bookkeeping ----------------------------------------------------------------------

    def at(self, t: int, kind: str, *args: int) -> None:
        heapq.heappush(self.heap, (t, self.seq, kind, args))
        self.seq += 1

    def add(self, spec: _Spec, program: Callable[[_SimThread], _Program]) -> _SimThread:
        th = self.threads[spec.tid] = _SimThread(spec)
        th.prog = program(th)
        action = next(th.prog)  # every program starts blocked
        self._block(th, action, emit=False)
        return th

    def set_state(self, th: _SimThread, state: str) -> None:
        if th.seen:
            th.acc[th.state] += self.now - th.since
        th.seen = True
        th.state, th.since = state, self.now
        th.log.append((self.now, state))

    def emit(self, task: int, cpu: int, event: str, body: str, flags: str) -> None:
        th = self.threads.get(task)
        comm = th.spec.comm if th is not None else "<idle>"
        ts = self.base_us + self.now
        tgid = ""
        if self.opts["tgid_column"]:
            tgid = f"({th.spec.tgid:>5}) " if th is not None else "(-----) "
        flags = (flags + ".")[: self.flags_width] + " " if self.flags_width else ""
        self.lines.append(
            f"{comm:>16}-{task:<5} {tgid}[{cpu:03d}] {flags}"
            f"{ts // 1_000_000:5d}.{ts % 1_000_000:06d}: {event}: {body}\n"
        )
        if len(self.lines) == 1:
            self.first_line_us = self.now
        self.last_line_us = self.now

    # -- scheduling -----------------------------------------------------------------------

    def _switch(self, cpu: int, prev: int, prev_state: str, nxt: int) -> None:
        p = self.threads.get(prev)
        n = self.threads.get(nxt)
        self.emit(
            prev,
            cpu,
            "sched_switch",
            f"prev_comm={p.spec.comm if p else f'swapper/{cpu}'} prev_pid={prev} "
            f"prev_prio={p.spec.prio if p else 120} prev_state={prev_state} ==> "
            f"next_comm={n.spec.comm if n else f'swapper/{cpu}'} next_pid={nxt} "
            f"next_prio={n.spec.prio if n else 120}",
            "d..2",
        )
        pending = self.pend_cpu.pop(cpu, None)
        if pending is not None:
            self.pre_rows[pending[0]][3] = self.now - pending[1]
        if n is not None:
            idx = self.pend_victim.pop(nxt, -1)
            if idx >= 0:
                self.pre_rows[idx][2] = self.now - self.pre_rows[idx][4]
            self.set_state(n, "run")
            n.cpu = cpu
            n.run_start = self.now
            n.token += 1
            self.at(self.now, "advance", nxt, n.token)
        self.cur[cpu] = nxt
        self._cpu_status(cpu, 1 if nxt else 0)

    def _cpu_status(self, cpu: int, busy: int) -> None:
        self.cpu_busy[cpu] = busy
        if not self.little:
            return
        little = all(self.cpu_busy[c] == 1 for c in self.little)
        big_idle = any(self.cpu_busy[c] == 0 for c in range(self.n_cpus) if c not in self.little)
        on = little and big_idle
        if on and not self.sat_on:
            self.sat_since = self.now
        elif self.sat_on and not on and self.now > self.sat_since:
            self.sat.append((self.sat_since, self.now))
        self.sat_on = on

    def _pick(self, cpu: int) -> int:
        best = -1
        for i, tid in enumerate(self.runq):
            spec = self.threads[tid].spec
            if cpu in spec.allowed and (
                best < 0 or spec.rank < self.threads[self.runq[best]].spec.rank
            ):
                best = i
        return self.runq.pop(best) if best >= 0 else 0

    def _cpu_free(self, cpu: int, prev: int, prev_state: str) -> None:
        nxt = self.incoming[cpu]
        if nxt is not None:
            self.incoming[cpu] = None
            self.in_token[cpu] += 1
            self.runq_remove(nxt)
        else:
            nxt = self._pick(cpu)
        self._switch(cpu, prev, prev_state, nxt)

    def runq_remove(self, tid: int) -> None:
        if tid in self.runq:
            self.runq.remove(tid)

    def _reserve(self, cpu: int, tid: int, kind: str) -> None:
        self.incoming[cpu] = tid
        self.in_token[cpu] += 1
        latency = int(self.rng.integers(5, 60))
        self.at(self.now + latency, kind, cpu, tid, self.in_token[cpu])

    def _place(self, th: _SimThread) -> int:
        allowed = th.spec.allowed
        idle = [c for c in allowed if self.cur[c] == 0 and self.incoming[c] is None]
        if idle:
            cpu = th.last_cpu if th.last_cpu in idle else idle[0]
            self._reserve(cpu, th.spec.tid, "switch_in")
            return cpu
        victims = [
            c
            for c in allowed
            if self.incoming[c] is None and self.threads[self.cur[c]].spec.rank > th.spec.rank
        ]
        if victims:
            cpu = max(victims, key=lambda c: (self.threads[self.cur[c]].spec.rank, -c))
            self._reserve(cpu, th.spec.tid, "preempt")
            return cpu
        self.runq.append(th.spec.tid)
        return th.last_cpu if th.last_cpu >= 0 else allowed[0]

    def _wake_now(self, th: _SimThread, waker: int, cpu: int) -> None:
        th.block = None
        target = self._place(th)
        spec = th.spec
        body = f"comm={spec.comm} pid={spec.tid} prio={spec.prio} "
        body += "success=1 " if self.opts["old_wakeup"] else ""
        body += f"target_cpu={target:03d}"
        if self.opts["waking"]:
            self.emit(waker, cpu, "sched_waking", body, "d..4")
        self.emit(waker, cpu, "sched_wakeup", body, "d..4")
        self.set_state(th, "R")
        call = th.binder_call
        if call is not None:
            if call[0] == waker:
                th.binder_waits.append((call[1], self.now))
            th.binder_call = None

    def wake(self, target: int, waker: int, channel: str, reply_to: int | None) -> None:
        th = self.threads[target]
        if reply_to is not None:
            th.requests.append(reply_to)
        w = self.threads[waker]
        if th.spec.comm.startswith(_BINDER_THREADS) and th.block == channel:
            w.binder_call = (target, self.now)
        if th.block == channel:
            self._wake_now(th, waker, w.cpu)
        else:
            th.pending[channel] = th.pending.get(channel, 0) + 1

    def _block(self, th: _SimThread, action: _SimAction, emit: bool = True) -> None:
        _, state, timeout, channel = action
        cpu = th.cpu
        th.block = channel if timeout is None else "timer"
        if emit:
            self.set_state(th, state)
        else:
            th.state = state
        th.cpu, th.last_cpu = -1, cpu if cpu >= 0 else th.last_cpu
        if timeout is not None:
            th.token += 1
            self.at(self.now + max(1, int(timeout)), "timer", th.spec.tid, th.token)
        if emit:
            self._cpu_free(cpu, th.spec.tid, state)

    def _advance(self, th: _SimThread) -> None:
        assert th.prog is not None
        while True:
            if th.remaining > 0:
                th.run_start = self.now
                th.token += 1
                self.at(self.now + th.remaining, "run_done", th.spec.tid, th.token)
                return
            action = next(th.prog)
            op = action[0]
            if op == "run":
                th.remaining = max(1, int(action[1]))
            elif op == "mark":
                self._mark(th, action[1], action[2] if len(action) > 2 else None)
            elif op == "wake":
                self.wake(action[1], th.spec.tid, action[2], action[3])
            elif op == "block":
                channel = action[3]
                if action[2] is None and th.pending.get(channel, 0) > 0:
                    th.pending[channel] -= 1
                    continue
                self._block(th, action)
                return

    def _mark(self, th: _SimThread, text: str, tag: tuple[str, int] | None) -> None:
        self.emit(th.spec.tid, th.cpu, self.opts["marker_event"], text, "...1")
        if tag is not None:
            self.opts["tags"].append((tag[0], tag[1], self.now))

    def run(self, end_us: int) -> None:
        while self.heap:
            t, _, kind, args = heapq.heappop(self.heap)
            if t > end_us:
                break
            self.now = t
            if kind == "advance" or kind == "run_done":
                th = self.threads[args[0]]
                if args[1] == th.token and th.cpu >= 0:
                    if kind == "run_done":
                        th.remaining = 0
                    self._advance(th)
            elif kind == "timer":
                th = self.threads[args[0]]
                if args[1] == th.token and th.block == "timer":
                    cpu = th.last_cpu if th.last_cpu >= 0 else 0
                    self._wake_now(th, self.cur[cpu], cpu)
            elif kind == "switch_in" or kind == "preempt":
                cpu, tid, token = args
                if token != self.in_token[cpu] or self.incoming[cpu] != tid:
                    continue
                self.incoming[cpu] = None
                self.in_token[cpu] += 1
                self.runq_remove(tid)
                victim = self.cur[cpu]
                if kind == "switch_in" or victim == 0:
                    self._switch(cpu, victim, "R", tid)
                    continue
                v = self.threads[victim]
                v.remaining = max(0, v.remaining - (self.now - v.run_start))
                v.token += 1
                self.set_state(v, "P")
                v.cpu, v.last_cpu = -1, cpu
                self.runq.insert(0, victim)
                self._switch(cpu, victim, "R+" if self.rng.random() < 0.7 else "R", tid)
                self.pend_victim[victim] = len(self.pre_rows)
                self.pend_cpu[cpu] = (len(self.pre_rows), self.now)
                self.pre_rows.append([victim, tid, -1, -1, self.now])
            elif kind == "noise":
                cpu = args[0]
                freq = int(self.rng.choice([300000, 1100000, 1800000]))
                self.emit(self.cur[cpu], cpu, "cpu_frequency", f"state={freq} cpu_id={cpu}", "d..3")
                self.skipped += 1
                self.at(self.now + int(self.rng.integers(2_000, 40_000)), "noise", cpu)
