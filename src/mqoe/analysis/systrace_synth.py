"""Synthetic systrace captures with ground truth: what :func:`synth_systrace`
scheduled is known exactly, so the parser's thread states, preemptions, frames and
causes can be checked against it; :func:`write_large_capture` repeats such a capture
into a big file for benchmarks; :func:`wrap_html` and :func:`wrap_linux_perf_data` put a
trace in the two generations of systrace HTML reports.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mqoe.metrics.sched import STATE_COLUMNS
from mqoe.results.atomic import atomic_write

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


@dataclass
class SynthTruth:
    """What :func:`synth_systrace` scheduled, in ns on the trace clock.

    ``threads``: tid, thread, tgid and the five state columns (from each thread's first
    sched event to the last event line); ``preemptions``: victim_tid, preemptor_tid,
    victim_wait_ns, preemptor_run_ns (−1 open); ``frames``: pid, main_tid, render_tid,
    start_ns, end_ns, dur_ns, sched_delay_ns, io_ns, binder_ns, little_saturated_ns.
    """

    threads: pd.DataFrame
    preemptions: pd.DataFrame
    frames: pd.DataFrame
    clusters: dict[int, str]
    saturated_ns: int
    start_ns: int
    end_ns: int
    event_lines: int
    skipped_events: int


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


def _u(rng: np.random.Generator, lo_ms: float, hi_ms: float) -> int:
    return int(rng.uniform(lo_ms, hi_ms) * 1000)


def synth_systrace(
    rng: np.random.Generator,
    *,
    duration_s: float = 2.0,
    n_cpus: int = 4,
    n_little: int = 2,
    tgid_column: bool = True,
    irq_flags: int = 4,
    waking: bool = True,
    old_wakeup_format: bool = False,
    binder_slices: bool = True,
    bare_end: bool = False,
    atrace_header: bool = True,
    slow_prob: float = 0.12,
    frozen_prob: float = 0.0,
    io_prob: float = 0.2,
    binder_prob: float = 0.25,
    render_thread: bool = True,
    doframe: bool = True,
    marker_event: str = "tracing_mark_write",
) -> tuple[str, SynthTruth]:
    """A realistic atrace text of an app drawing frames, with its ground truth.

    CPUs ``0 … n_little−1`` are LITTLE. Threads: the app's main thread (doFrame:
    traversal > measure/layout/draw, sometimes a binder call to system_server's
    ``Binder:1234_2``) and RenderThread (DrawFrame: syncFrameState, flush commands —
    sometimes waiting on an I/O served by ``mmcqd/0``, an RT thread that preempts —,
    eglSwapBuffers > queueBuffer), SurfaceFlinger (pinned to LITTLE, composes at the
    next V-Sync), kswapd0, a JIT thread (name with spaces) and a background worker
    (name with a dash) that load the LITTLE cores. ``irq_flags``: width of the irq-flags
    column (0 = absent, 4 or 5). Timestamps have µs resolution, as ftrace prints them.

    Older releases: ``render_thread=False`` is Android 4.1–4.4 (no RenderThread: the main
    thread draws and calls eglSwapBuffers inside its doFrame › performTraversals);
    with ``doframe=False`` too, Choreographer is not traced and performTraversals is the
    outermost slice. ``marker_event="0"`` writes trace markers as old kernels print them
    (``0: B|pid|name``).
    """
    if n_little < 1 or n_cpus <= n_little:
        raise ValueError("need at least one LITTLE and one big CPU")
    tags: list[tuple[str, int, int]] = []
    opts = {
        "tgid_column": tgid_column,
        "flags_width": irq_flags,
        "waking": waking,
        "old_wakeup": old_wakeup_format,
        "tags": tags,
        "marker_event": marker_event,
        "render_thread": render_thread,
    }
    sim = _Sim(rng, n_cpus, opts)
    little = tuple(range(n_little))
    every = tuple(range(n_cpus))
    sim.little = little
    app, rt_tid, binder, mmc, sf = 2300, 2345, 1250, 145, 600
    end_mark = "E" if bare_end else "E|{pid}"
    rt_queue: list[int] = []

    def b(pid: int, name: str, tag: tuple[str, int] | None = None) -> _SimAction:
        return ("mark", f"B|{pid}|{name}", tag) if tag else ("mark", f"B|{pid}|{name}")

    def e(pid: int, tag: tuple[str, int] | None = None) -> _SimAction:
        text = end_mark.format(pid=pid)
        return ("mark", text, tag) if tag else ("mark", text)

    def measure_layout_binder(k: int) -> _Program:
        # The UI thread's work before drawing, the same on every release: measure, a
        # layout whose length decides slow and frozen frames, maybe a binder call.
        yield b(app, "measure")
        yield ("run", _u(rng, 0.3, 2.0))
        yield e(app)
        yield b(app, "layout")
        heavy = rng.random()
        if heavy < frozen_prob:
            yield ("run", _u(rng, 720, 900))
        elif heavy < frozen_prob + slow_prob:
            yield ("run", _u(rng, 15, 40))
        else:
            yield ("run", _u(rng, 0.3, 2.0))
        yield e(app)
        if rng.random() < binder_prob:
            if binder_slices:
                yield b(app, "binder transaction", ("binder_start", k))
            yield ("wake", binder, "work", app)
            yield ("block", "S", None, "reply")
            if binder_slices:
                yield e(app, ("binder_end", k))

    def main(th: _SimThread) -> _Program:
        k = 0
        while True:
            vsync = (sim.now // _VSYNC_US + 1) * _VSYNC_US
            yield ("block", "S", vsync - sim.now, None)
            yield b(app, "Choreographer#doFrame", ("frame_start", k))
            yield b(app, "traversal")
            yield from measure_layout_binder(k)
            yield b(app, "draw")
            yield ("run", _u(rng, 0.5, 3.0))
            rt_queue.append(k)
            yield ("wake", rt_tid, "work", None)
            yield ("block", "S", None, "reply")  # syncFrameState
            yield ("run", _u(rng, 0.05, 0.3))
            yield e(app)
            yield e(app)
            yield e(app, ("doframe_end", k))
            k += 1

    def main_draws(th: _SimThread) -> _Program:
        # Android 4.x: no RenderThread; the UI thread records, draws and swaps itself.
        k = 0
        root = "Choreographer#doFrame" if doframe else "performTraversals"
        while True:
            vsync = (sim.now // _VSYNC_US + 1) * _VSYNC_US
            yield ("block", "S", vsync - sim.now, None)
            yield b(app, root, ("frame_start", k))
            if doframe:
                yield b(app, "performTraversals")
            yield from measure_layout_binder(k)
            yield b(app, "draw")
            yield ("run", _u(rng, 0.5, 3.0))
            if rng.random() < io_prob:
                yield b(app, "shader cache read")
                yield ("wake", mmc, "work", app)
                yield ("block", "D", None, "io")
                yield e(app)
            yield b(app, "eglSwapBuffers")
            yield ("run", _u(rng, 0.1, 0.5))
            yield ("wake", sf, "work", None)
            yield ("run", _u(rng, 0.05, 0.2))
            yield e(app)
            yield e(app)
            if doframe:
                yield e(app)
            yield e(app, ("frame_end", k))
            k += 1

    def render(th: _SimThread) -> _Program:
        while True:
            yield ("block", "S", None, "work")
            k = rt_queue.pop(0)
            yield b(app, "DrawFrame", ("draw_start", k))
            yield b(app, "syncFrameState")
            yield ("run", _u(rng, 0.2, 0.6))
            yield e(app)
            yield ("wake", app, "reply", None)
            yield b(app, "flush commands")
            yield ("run", _u(rng, 1.0, 5.0) if rng.random() > slow_prob / 2 else _u(rng, 12, 30))
            if rng.random() < io_prob:
                yield b(app, "shader cache read")
                yield ("wake", mmc, "work", rt_tid)
                yield ("block", "D", None, "io")
                yield e(app)
            yield e(app)
            yield b(app, "eglSwapBuffers")
            yield ("run", _u(rng, 0.1, 0.5))
            yield b(app, "queueBuffer")
            yield ("wake", sf, "work", None)
            yield ("run", _u(rng, 0.05, 0.2))
            yield e(app)
            yield e(app)
            yield e(app, ("frame_end", k))

    def surfaceflinger(th: _SimThread) -> _Program:
        while True:
            yield ("block", "S", None, "work")
            vsync = (sim.now // _VSYNC_US + 1) * _VSYNC_US
            yield ("block", "S", vsync - sim.now, None)
            yield b(sf, "onMessageReceived")
            yield b(sf, "handleMessageRefresh")
            yield ("run", _u(rng, 1.0, 4.0))
            yield e(sf)
            yield e(sf)

    def binder_thread(th: _SimThread) -> _Program:
        while True:
            yield ("block", "S", None, "work")
            if binder_slices:
                yield b(1234, "binder reply")
            yield ("run", _u(rng, 0.2, 4.0) if rng.random() > 0.2 else _u(rng, 10, 25))
            if binder_slices:
                yield e(1234)
            while th.requests:
                yield ("wake", th.requests.pop(0), "reply", None)

    def mmcqd(th: _SimThread) -> _Program:
        while True:
            yield ("block", "S", None, "work")
            yield ("run", _u(rng, 0.3, 3.0) if rng.random() > 0.15 else _u(rng, 5, 15))
            while th.requests:
                yield ("wake", th.requests.pop(0), "io", None)

    def periodic(
        lo: float, hi: float, run_lo: float, run_hi: float, io: float
    ) -> Callable[[_SimThread], _Program]:
        def program(th: _SimThread) -> _Program:
            while True:
                yield ("block", "S", _u(rng, lo, hi), None)
                yield ("run", _u(rng, run_lo, run_hi))
                if rng.random() < io:
                    yield ("wake", mmc, "work", None)

        return program

    sim.add(_Spec(101, 101, "kswapd0", 120, 3, every), periodic(30, 200, 1, 8, 0.5))
    # mmcqd follows its eMMC interrupt's affinity (one big CPU here), so it preempts
    # whatever runs there, the app's threads included.
    sim.add(_Spec(mmc, mmc, "mmcqd/0", 0, 0, (n_cpus - 1,)), mmcqd)
    sim.add(_Spec(sf, sf, "surfaceflinger", 112, 1, little), surfaceflinger)
    sim.add(_Spec(binder, 1234, "Binder:1234_2", 120, 2, every), binder_thread)
    if render_thread:
        sim.add(_Spec(app, app, "com.example.app", 110, 2, every), main)
        sim.add(_Spec(rt_tid, app, "RenderThread", 110, 2, every), render)
    else:
        sim.add(_Spec(app, app, "com.example.app", 110, 2, every), main_draws)
    sim.add(_Spec(2310, app, "Jit thread pool", 129, 3, little), periodic(20, 100, 2, 10, 0))
    sim.add(_Spec(3105, 3100, "Sync-Worker 1", 130, 4, little), periodic(1, 12, 2, 15, 0.3))
    for cpu in range(n_cpus):
        sim.at(int(rng.integers(1, 20_000)), "noise", cpu)
    end_us = int(duration_s * 1e6)
    sim.run(end_us)
    return _synth_text(sim, atrace_header), _synth_truth(sim, tags, little, binder_slices)


def _synth_text(sim: _Sim, atrace_header: bool) -> str:
    head = "TRACE:\n" if atrace_header else ""
    tgid = "  TGID  " if sim.opts["tgid_column"] else ""
    head += (
        "# tracer: nop\n#\n"
        f"# entries-in-buffer/entries-written: {len(sim.lines)}/{len(sim.lines)}   "
        f"#P:{sim.n_cpus}\n#\n"
        f"#           TASK-PID  {tgid} CPU#  ||||    TIMESTAMP  FUNCTION\n"
        "#              | |        |      ||||       |         |\n"
    )
    return head + "".join(sim.lines)


def _log_overlap(
    log: list[tuple[int, str]], end: int, a: int, b: int, states: tuple[str, ...]
) -> int:
    """Time in ``states`` within [a, b] from a thread's (time, state) log (lasting to end)."""
    total = 0
    i = max(0, bisect.bisect_right(log, (a, "~")) - 1)
    while i < len(log) and log[i][0] < b:
        t0 = log[i][0]
        t1 = log[i + 1][0] if i + 1 < len(log) else end
        if log[i][1] in states:
            total += max(0, min(t1, b) - max(t0, a))
        i += 1
    return total


def _span_overlap(spans: list[tuple[int, int]], a: int, b: int) -> int:
    """Time within [a, b] covered by sorted, non-overlapping ``spans``."""
    total = 0
    i = max(0, bisect.bisect_right(spans, (a, a)) - 1)
    while i < len(spans) and spans[i][0] < b:
        s, e = spans[i]
        total += max(0, min(e, b) - max(s, a))
        i += 1
    return total


def _synth_truth(
    sim: _Sim, tags: list[tuple[str, int, int]], little: tuple[int, ...], slices: bool
) -> SynthTruth:
    end = sim.last_line_us
    if sim.sat_on and end > sim.sat_since:
        sim.sat.append((sim.sat_since, end))
    base, ns = sim.base_us, 1000
    rows = []
    for th in sim.threads.values():
        if not th.seen:
            continue
        acc = dict(th.acc)
        acc[th.state] += max(0, end - th.since)
        rows.append(
            (th.spec.tid, th.spec.comm, th.spec.tgid,
             acc["run"] * ns, acc["R"] * ns, acc["P"] * ns, acc["S"] * ns, acc["D"] * ns)
        )  # fmt: skip
    threads = pd.DataFrame(rows, columns=["tid", "thread", "tgid", *STATE_COLUMNS])
    pre = pd.DataFrame(
        [(v, p, w * ns if w >= 0 else -1, r * ns if r >= 0 else -1)
         for v, p, w, r, _ in sim.pre_rows],
        columns=["victim_tid", "preemptor_tid", "victim_wait_ns", "preemptor_run_ns"],
    )  # fmt: skip
    by: dict[str, dict[int, int]] = {}
    for name, k, t in tags:
        by.setdefault(name, {})[k] = t
    drawing = [sim.threads[2300]]
    rt = sim.threads.get(2345)
    if rt is not None:
        drawing.append(rt)
    ends = by.get("binder_end", {})
    calls = sorted((t, ends[k]) for k, t in by.get("binder_start", {}).items() if k in ends)
    frames = []
    for k, a in sorted(by.get("frame_start", {}).items()):
        b = by.get("frame_end", {}).get(k)
        if b is None or (rt is not None and k not in by.get("doframe_end", {})):
            continue
        delay = sum(_log_overlap(x.log, end, a, b, ("R", "P")) for x in drawing)
        io_us = sum(_log_overlap(x.log, end, a, b, ("D",)) for x in drawing)
        binder_us = _span_overlap(calls if slices else drawing[0].binder_waits, a, b)
        render_tid = rt.spec.tid if rt is not None else -1
        frames.append(
            (2300, 2300, render_tid, (base + a) * ns, (base + b) * ns, (b - a) * ns,
             delay * ns, io_us * ns, binder_us * ns, _span_overlap(sim.sat, a, b) * ns)
        )  # fmt: skip
    frame_table = pd.DataFrame(
        frames,
        columns=["pid", "main_tid", "render_tid", "start_ns", "end_ns", "dur_ns",
                 "sched_delay_ns", "io_ns", "binder_ns", "little_saturated_ns"],
    )  # fmt: skip
    return SynthTruth(
        threads=threads,
        preemptions=pre,
        frames=frame_table,
        clusters={c: "little" if c in little else "big" for c in range(sim.n_cpus)},
        saturated_ns=sum(e - s for s, e in sim.sat) * ns,
        start_ns=(base + sim.first_line_us) * ns,
        end_ns=(base + end) * ns,
        event_lines=len(sim.lines),
        skipped_events=sim.skipped,
    )


def wrap_html(text: str, json_block: bool = True) -> str:
    """Embed trace text in a systrace-style HTML page (optionally after a JSON block)."""
    parts = [
        '<!DOCTYPE html>\n<html>\n<head i18n-values="dir:textdirection;">\n'
        '<meta charset="utf-8"/>\n<title>Android System Trace</title>\n'
        "<script>var x = 1 - 2; /* <idle>-0 [001] not a trace line */</script>\n"
        "</head>\n<body>\n"
    ]
    if json_block:
        parts.append(
            '  <script class="trace-data" type="application/text">\n'
            '{"traceEvents": [], "systemTraceEvents": ""}\n  </script>\n'
        )
    parts.append('  <script class="trace-data" type="application/text">\n')
    parts.append(text)
    parts.append("  </script>\n</body>\n</html>\n")
    return "".join(parts)


def wrap_linux_perf_data(text: str, escape: bool = True) -> str:
    """Embed trace text as the older ``systrace.py`` did: a JavaScript string literal
    ``var linuxPerfData = "…";`` with one trace line per source line, each ending in an
    escaped line end and a line continuation (``\\n\\``). ``escape=False`` leaves
    backslashes and quotes as they are (old systrace.py did not escape them)."""
    if escape:
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    body = "".join(line + "\\n\\\n" for line in text.splitlines())
    return (
        '<!DOCTYPE html>\n<html>\n<head i18n-values="dir:textdirection;">\n'
        "<title>Android System Trace</title>\n"
        '<script language="javascript">function onLoad(){reload()}function reload(){'
        'if(linuxPerfData){var g=new tracing.TimelineModel;g.importEvents("[]",!0,'
        "[linuxPerfData])}}</script>\n</head>\n<body>\n"
        "  <div class=\"view\">\n  </div>\n  <script>\n  'use strict';\n"
        '  var linuxPerfData = "\\\n' + body + '         \\n";\n  </script>\n</body>\n</html>\n'
    )


# -- a big capture for benchmarks ---------------------------------------------------------

_LARGE_BLOCK_S = 2.0  # one generated block; the file repeats blocks
_LARGE_TEMPLATES = 2  # distinct blocks, alternated
_SECONDS = re.compile(r"\] (?:\S{4,5} )?( *\d+)\.\d{6}: ")
_MARK_TID = re.compile(r"-(\d+)\s+(?:\([^)]*\)\s+)?\[\d+\].*?: tracing_mark_write: ([BE])")
_PLACEHOLDER = b"\x00"


def write_large_capture(path: Path, target_bytes: int, seed: int = 0) -> None:
    """Write an atrace text capture of about ``target_bytes`` (at least one block) to
    ``path``, fast (hundreds of MB/s): a few :func:`synth_systrace` blocks of
    ``_LARGE_BLOCK_S`` s, cut where no trace-marker slice is open, repeated with their
    timestamps shifted by whole seconds so every CPU's clock keeps going forward. The
    same threads go on from block to block (as in a long capture), and each block's
    frames are complete, so the parser sees one long, valid session."""
    blocks = [
        _template(np.random.default_rng(np.random.SeedSequence([seed, k])))
        for k in range(_LARGE_TEMPLATES)
    ]
    header = (
        b"TRACE:\n# tracer: nop\n#\n"
        b"#           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION\n"
        b"#              | |        |      |   ||||       |         |\n"
    )

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(header)
            written, second, k = len(header), 1_000, 0
            while k == 0 or written < target_bytes:
                groups, span_s = blocks[k % len(blocks)]
                for offset, chunk in groups:
                    data = chunk.replace(_PLACEHOLDER, b"%5d" % (second + offset))
                    f.write(data)
                    written += len(data)
                second += span_s
                k += 1

    atomic_write(path, write)


def _template(rng: np.random.Generator) -> tuple[list[tuple[int, bytes]], int]:
    """One block as (seconds offset, lines of that second with the seconds field left
    as a placeholder) groups, and its span in whole seconds."""
    text, _ = synth_systrace(rng, duration_s=_LARGE_BLOCK_S, atrace_header=False)
    lines = _balanced(line for line in text.splitlines(keepends=True) if line[:1] != "#")
    groups: list[tuple[int, bytes]] = []
    first = current = -1
    run: list[str] = []
    for line in lines:
        m = _SECONDS.search(line)
        if m is None:
            continue
        second = int(m.group(1))
        first = second if first < 0 else first
        if second != current and run:
            groups.append((current - first, "".join(run).encode()))
            run = []
        current = second
        run.append(line[: m.start(1)] + "\x00" + line[m.end(1) :])
    groups.append((current - first, "".join(run).encode()))
    return groups, current - first + 1


def _balanced(lines: Iterable[str]) -> list[str]:
    """The lines up to the last point where no thread has a B marker open."""
    kept: list[str] = []
    depth: dict[str, int] = {}
    open_slices = cut = 0
    for line in lines:
        kept.append(line)
        m = _MARK_TID.search(line)
        if m is not None:
            tid, kind = m.groups()
            if kind == "B":
                depth[tid] = depth.get(tid, 0) + 1
                open_slices += 1
            elif depth.get(tid, 0) > 0:
                depth[tid] -= 1
                open_slices -= 1
        if open_slices == 0:
            cut = len(kept)
    return kept[:cut]
