"""A realistic atrace text of an app drawing frames, with its ground truth
(:func:`synth_systrace`, :class:`SynthTruth`)."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mqoe.generators.systrace.sim import _VSYNC_US, _Program, _Sim, _SimAction, _SimThread, _Spec
from mqoe.metrics.sched import STATE_COLUMNS


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
