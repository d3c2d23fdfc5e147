"""ftrace / atrace / systrace text (spec 06): thread states, preemptions, frames, critical
paths and the causes of slow frames, from files pulled from real phones.

The parser streams the file once and feeds the same input tables as simulated runs to
:mod:`mqoe.metrics.sched` and :mod:`mqoe.metrics.jank`, so real and simulated numbers
mean the same thing. Memory does not grow with the lines: per thread and per CPU it
keeps running totals; per frame one row of numbers (a frame's causes are computed when
it is complete, from the state history of its threads, which is then dropped up to the
oldest frame still open). :func:`synth_systrace` writes realistic traces with ground
truth and :func:`write_large_capture` big ones (:mod:`mqoe.analysis.systrace_synth`).

File format accepted
--------------------
Containers (plain, gzip, ``atrace -z``, both generations of systrace HTML report, a
JS-escaped text; any encoding and line end :mod:`mqoe.analysis.textio` reads) are
found by :mod:`mqoe.analysis.systrace_input`. An event line is::

    <task>-<tid> [(<tgid>|-----)] [<cpu>] [<irq-flags>] <seconds>.<fraction>: <event>: <fields>

* ``task`` may hold spaces and dashes (``Binder:1234_2-1250``, ``Jit thread pool-2310``:
  the tid is the digits after the *last* dash that is followed by the CPU column);
  ``<...>`` is atrace's "name unknown" (the kernel's saved_cmdlines had no entry): such a
  thread is named from the ``comm`` fields of its sched events, else from any line that
  names its tid, else stays ``<...>``. A thread's tgid comes from the tgid column of any
  of its lines, else from the pid of its trace markers. The tgid column and the 4- or
  5-character irq-flags column are optional; the fraction has 1–9 digits (µs in
  practice; read as ns).
* ``sched_switch: prev_comm= prev_pid= prev_prio= prev_state= ==> next_comm= next_pid=
  next_prio=``. ``prev_state`` R / R+ → Runnable (Preempted); S → Sleeping; D (D|K, …)
  → Blocked on I/O; X / x / Z → exited (no further accounting); anything else (I, T,
  t, P, W, …) → ``other_ns``.
* ``sched_wakeup`` / ``sched_waking`` / ``sched_wakeup_new``: ``comm= pid= prio=``, then
  optional ``success=`` and ``target_cpu=``.
* Trace markers: ``tracing_mark_write: <payload>``, or ``0: <payload>`` as older kernels
  (Android 4.x) print the same write to ``trace_marker``. Payloads: ``B|pid|name``,
  ``E|pid`` or ``E`` (name after ``E|pid|`` ignored), ``S|pid|name|cookie``,
  ``F|pid|name|cookie``, ``C|pid|name|value`` (a counter track; fields after the value
  are ignored). Other payloads (``I|…``, ``trace_event_clock_sync: …``, free text) are
  counted, not read.
* Any other event is skipped and counted per name. Blank lines, ``#`` comments and
  lines that do not look like events (``TRACE:``, HTML) are ignored and counted.

Errors: a line that looks like an event (``<task>-<tid> … [<cpu>]``) but does not parse,
a known event or marker with malformed fields, or a line over ``MAX_LINE_CHARS`` is an
:class:`~mqoe.errors.InputFileError` naming ``file:line``; with ``skip_bad_lines`` it is
skipped and counted (:attr:`ParseStats.bad_lines`). A file with no event at all is an
error. Timestamps that go backwards on a CPU are counted (``backwards_ts``); durations
are never negative (a thread's clock is clamped to its last change).

Definitions
-----------
* **Thread states** (as Perfetto): a thread's state is known from its first sched event
  (switched in or out, woken) to the end of the trace; Runnable = woken, waiting for a
  CPU; Runnable (Preempted) = switched out with prev_state R/R+ until it runs again. A
  trace without ``sched_switch`` events has no thread states (a warning says so; no
  zeros are reported as measured), nor has a thread seen only in trace markers.
* **Preemption** = one switch with prev_state R/R+ to another thread (not idle):
  ``victim_wait_ns`` until the victim runs again, ``preemptor_run_ns`` until the next
  switch on that CPU (−1 when the trace ends first).
* **Frames**, per process (a marker's pid is its process), by Android release:

  ==============  ==========================  ==========================================
  release         a frame starts with          it ends at
  ==============  ==========================  ==========================================
  5.0 and later   an outermost                 the end of the first outermost
                  ``Choreographer#doFrame``    ``DrawFrame`` (``DrawFrames`` on 12+) of
                  on the main thread           the process that begins after the frame's
                  (``… <vsync id>`` on 12+)    start and before its next frame's start
                                               (RenderThread draws); the doFrame's end if
                                               no such DrawFrame comes
  4.1 – 4.4       an outermost                 the end of the doFrame: the main thread
                  ``Choreographer#doFrame``    draws and swaps inside it (doFrame ›
                                               performTraversals › draw › eglSwapBuffers)
  no doFrame      an outermost                 the end of performTraversals (it holds draw
  traced          ``performTraversals``, in    › eglSwapBuffers), or of a DrawFrame
                  a process with no doFrame    following it, as above
                  anywhere in the trace
  ==============  ==========================  ==========================================

  Duration = start → end. SR/FF by :mod:`mqoe.metrics.jank` (naive: no buffer state in
  the trace). ``vsync_id`` = the number after ``Choreographer#doFrame`` (−1 without).
  Composition = the first outermost SurfaceFlinger ``onMessageReceived``/``composite``/
  ``handleMessageRefresh`` slice starting within ``COMPOSE_WINDOW_NS`` after the frame.
  A frame still open ``MAX_OPEN_FRAME_NS`` after its start (a lost E marker) is given up
  and counted with the incomplete frames.
* **Critical path**: from the frame's root slice (then the DrawFrame) down, the longest
  child at each level, with its self time (duration minus its children's).
* **Per-frame causes** over the frame's main thread and RenderThread during the frame:
  ``sched_delay`` = Runnable + Runnable (Preempted) time, ``io`` = Blocked-on-I/O time,
  ``binder`` = per thread the larger of its ``binder transaction``/``binder reply``
  slices and its waits on a ``Binder:*`` thread (it woke that thread — ``sched_waking``
  context, or ``sched_wakeup`` when the trace has no waking events — and was next woken
  by it). Without ``sched_switch`` events ``sched_delay`` and ``io`` are unknown (NaN).
* **Counter tracks**: per (pid, name) of ``C`` markers: samples, min, max, last value.
* **LITTLE saturation**: given a CPU → cluster map, the time when every LITTLE CPU runs
  a task while some big CPU is idle. A CPU's state is unknown before its first
  sched_switch; an unknown LITTLE CPU is not busy, an unknown big CPU is not idle.
"""

from __future__ import annotations

import bisect
import gzip
import re
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.systrace_input import (
    MAX_LINE_CHARS,
    ContainerStats,
    Lines,
    TraceFile,
    text_lines,
    trace_lines,
)
from mqoe.analysis.systrace_synth import (
    SynthTruth,
    synth_systrace,
    wrap_html,
    wrap_linux_perf_data,
    write_large_capture,
)
from mqoe.analysis.textio import describe_os_error
from mqoe.errors import InputFileError, UserError
from mqoe.metrics.jank import frozen_mask, jank_counts, slow_mask
from mqoe.metrics.sched import STATE_COLUMNS, preemption_summary, thread_states

__all__ = [
    "CAUSES",
    "COMPOSE_WINDOW_NS",
    "MAX_LINE_CHARS",
    "THREAD_COLUMNS",
    "ParseStats",
    "SynthTruth",
    "SystraceReport",
    "SystraceTrace",
    "analyze",
    "cluster_roles",
    "clusters_from_profile",
    "frame_summary",
    "load_systrace",
    "parse_clusters",
    "parse_systrace_lines",
    "parse_systrace_text",
    "saturation_summary",
    "select_threads",
    "slow_frame_correlation",
    "synth_systrace",
    "wrap_html",
    "wrap_linux_perf_data",
    "write_large_capture",
]

MAX_SLICE_DEPTH = 1_000  # deeper B markers on one thread are counted, not kept
MAX_TREE_NODES = 20_000  # per frame slice tree; beyond, children are not collected
MAX_KEYS = 10_000  # distinct skipped-event names, counters, open async slices, names
MAX_TASKS = 100_000  # task columns remembered (Android's pid_max is 32768)
COMPOSE_WINDOW_NS = 50_000_000  # a composition later than this is not the frame's
MAX_OPEN_FRAME_NS = 60_000_000_000  # a frame open this long lost its end marker
SATURATED_FRAME_FRACTION = 0.5  # a frame is "LITTLE-saturated" for at least this share
THREAD_COLUMNS = (*STATE_COLUMNS, "other_ns")
UNKNOWN_COMM = "<...>"  # atrace's name for a task whose comm it did not know
_HOUSEKEEPING_LINES = 1 << 16  # frames are finished and histories pruned this often
_TASK_LOOKS = 64  # lines of a tid whose task columns may still name it (then sched events do)

_RUNNING, _RUNNABLE, _PREEMPTED, _SLEEPING, _IO, _OTHER = range(6)
_UNKNOWN, _DEAD = -1, -2
_ROOT_DOFRAME, _ROOT_DRAW, _ROOT_SF, _ROOT_TRAVERSAL = 1, 2, 3, 4
_UNCOLLECTED = -1
_MAIN, _RENDER = 0, 1

_HEADER = re.compile(
    r"\s*(.+?)-(\d{1,10})\s+(?:\(\s*(\d{1,10}|-+)\)\s+)?\[(\d{1,5})\]\s+(?:\S{4,5}\s+)?"
    r"(\d{1,9})\.(\d{1,9}):\s+(\w{1,64}):\s?(.*)"
)
# The same line without an ``event:`` part: the function tracer's ``func <-caller``.
_FUNCTION_LINE = re.compile(
    r"\s*(.+?)-(\d{1,10})\s+(?:\(\s*(\d{1,10}|-+)\)\s+)?\[(\d{1,5})\]\s+(?:\S{4,5}\s+)?"
    r"(\d{1,9})\.(\d{1,9}):\s+[\w.]+\s+<-\S"
)
_LOST = re.compile(r"\[LOST (\d{1,12}) EVENTS\]")
_LOOKS_LIKE_EVENT = re.compile(r"\S.*-\d+\s+(?:\([^)]{0,16}\)\s+)?\[\d+\]")
_SWITCH = re.compile(
    r"prev_comm=(.*?) prev_pid=(\d{1,10}) prev_prio=-?\d{1,6} prev_state=(\S{1,16}) ==> "
    r"next_comm=(.*?) next_pid=(\d{1,10}) next_prio=-?\d{1,6}"
)
_WAKEUP = re.compile(r"comm=(.*?) pid=(\d{1,10}) prio=-?\d{1,6}(?: |$)")
_VSYNC_SUFFIX = re.compile(r"(.*\S) (\d{1,18})")
_FRAC_SCALE = (0, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1_000, 100, 10, 1)
_BINDER_SLICES = ("binder transaction", "binder reply")
_BINDER_THREADS = ("Binder:", "Binder_", "HwBinder:")
_DOFRAME = ("Choreographer#doFrame",)
_DRAWFRAME = ("DrawFrame", "DrawFrames")
_TRAVERSAL = ("performTraversals",)
_COMPOSITION = ("onMessageReceived", "composite", "handleMessageRefresh")

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _is_root(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + " ") for p in prefixes)


# -- results ----------------------------------------------------------------------------


@dataclass
class ParseStats(ContainerStats):
    """What the file held, and what the parser skipped or repaired in it."""

    lines: int = 0
    events: int = 0
    switches: int = 0  # sched_switch events
    wakeups: int = 0  # sched_wakeup / sched_waking / sched_wakeup_new events
    markers: int = 0  # trace-marker writes (tracing_mark_write or `0:`)
    slices: int = 0  # B markers
    counter_samples: int = 0  # C markers
    async_markers: int = 0  # S and F markers
    comment_lines: int = 0
    other_lines: int = 0  # not trace events (TRACE:, HTML, process dumps)
    skipped_events: dict[str, int] = field(default_factory=dict)  # by event name
    bad_lines: int = 0
    bad_examples: list[tuple[int, str]] = field(default_factory=list)
    overlong_lines: int = 0
    backwards_ts: int = 0
    unsupported_markers: int = 0
    unmatched_ends: int = 0
    unterminated_slices: int = 0
    too_deep_slices: int = 0
    truncated_trees: int = 0
    unassigned_drawframes: int = 0
    incomplete_frames: int = 0
    unmatched_async_finish: int = 0
    dropped_keys: int = 0
    preempted_by_idle: int = 0
    lost_events: int = 0  # "[LOST n EVENTS]": the kernel's ring buffer overflowed
    binary_lines: int = 0  # lines holding NUL bytes or undecodable bytes
    unseen_mapped_cpus: list[int] = field(default_factory=list)  # in the map, never switched
    unmapped_cpus: list[int] = field(default_factory=list)  # switched, not in the map

    @property
    def thread_states_known(self) -> bool:
        """Whether the trace has the scheduler events thread states are built from."""
        return self.switches > 0

    def contents(self) -> dict[str, int]:
        """What the trace holds, by kind of event."""
        return {
            "events": self.events,
            "sched_switch": self.switches,
            "sched_wakeup": self.wakeups,
            "trace_markers": self.markers,
            "slice_begins": self.slices,
            "counter_samples": self.counter_samples,
            "async_markers": self.async_markers,
            "other_events": sum(self.skipped_events.values()),
        }

    def warnings(self) -> list[str]:
        """One line per thing a user should know about, in plain words."""
        out = []
        if self.events and not self.switches:
            out.append("no sched_switch events: thread states, preemptions and CPU use are "
                       "unknown (capture with the 'sched' category to measure them)")  # fmt: skip
        if self.bad_lines:
            where = ", ".join(f"line {n}: {w}" for n, w in self.bad_examples[:3])
            out.append(f"{self.bad_lines} bad lines skipped ({where})")
        named = [
            ("overlong_lines", "lines over the length limit"),
            ("backwards_ts", "timestamps going backwards on a CPU"),
            ("unmatched_ends", "E markers without a B"),
            ("unterminated_slices", "slices still open at the end"),
            ("too_deep_slices", f"slices nested deeper than {MAX_SLICE_DEPTH}"),
            ("truncated_trees", "frame slice trees truncated"),
            ("unassigned_drawframes", "DrawFrame slices without a preceding doFrame"),
            ("incomplete_frames", "frames cut by the end of the trace or a lost E marker"),
            ("unmatched_async_finish", "F markers without an S"),
            ("dropped_keys", "counters/async/event names over the limit"),
            ("html_json_blocks", "JSON trace blocks skipped"),
        ]
        for key, text in named:
            value = getattr(self, key)
            if value:
                out.append(f"{value} {text}")
        if self.trailing_bytes:
            out.append(f"{self.trailing_bytes} bytes after the end of the compressed trace "
                       "were ignored")  # fmt: skip
        if self.lost_events:
            out.append(f"the kernel lost {self.lost_events} events (ring buffer overflow): "
                       "state times and frames near the gaps are approximate")  # fmt: skip
        if self.unseen_mapped_cpus:
            cpus = ",".join(map(str, self.unseen_mapped_cpus))
            out.append(f"CPUs {cpus} of the cluster map never ran a task in the trace "
                       "(offline?): LITTLE saturation treats them as unknown")  # fmt: skip
        if self.unmapped_cpus:
            cpus = ",".join(map(str, self.unmapped_cpus))
            out.append(f"CPUs {cpus} are not in the cluster map")
        return out


@dataclass
class SystraceTrace:
    """One parsed trace. Times are ftrace clock nanoseconds; tables are tidy DataFrames.

    * ``threads``: tid, thread, tgid (−1 unknown), process, the state times
      ``running_ns runnable_ns runnable_preempted_ns sleeping_ns blocked_io_ns other_ns``
      — the input of :func:`mqoe.metrics.sched.thread_states` — and ``states_known``
      (False: no sched event of the thread, or none in the trace; its zeros are not
      measurements).
    * ``preemptions``: time_ns, core, victim_tid, preemptor_tid, victim_wait_ns,
      preemptor_run_ns — the input of :func:`mqoe.metrics.sched.preemption_summary`.
    * ``frames``: one row per complete frame (see the module docstring).
    * ``critical_path``: frame, stage (main/render), depth, name, dur_ns, self_ns.
    * ``compositions``: SurfaceFlinger's outermost composition slices.
    * ``cpus``: per CPU, cluster, known_ns (since its first switch), busy_ns, switches.
    * ``counters``: per (pid, name) C markers: process, samples, min, max, last.
    * ``async_slices``: per (pid, name) S/F pairs: count, total_ns, max_ns.
    """

    source: str
    stats: ParseStats
    start_ns: int
    end_ns: int
    threads: pd.DataFrame
    preemptions: pd.DataFrame
    frames: pd.DataFrame
    critical_path: pd.DataFrame
    compositions: pd.DataFrame
    cpus: pd.DataFrame
    counters: pd.DataFrame
    async_slices: pd.DataFrame
    little_cpus: tuple[int, ...] = ()
    big_cpus: tuple[int, ...] = ()
    saturated_ns: int | None = None  # None: no cluster map (or no big cores)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def saturated_share(self) -> float:
        """Share of trace time with all LITTLE CPUs busy and a big CPU idle (NaN: n/a)."""
        if self.saturated_ns is None or self.duration_ns <= 0:
            return float("nan")
        return self.saturated_ns / self.duration_ns


# -- the parser ---------------------------------------------------------------------------


class _Slice:
    __slots__ = ("children", "end", "frame", "kind", "name", "start")

    def __init__(self, name: str, start: int) -> None:
        self.name = name
        self.start = start
        self.end = start
        self.children: list[_Slice] | None = None
        self.kind = 0
        self.frame: _Frame | None = None


class _Frame:
    """A frame until its row is written (see the frame rule in the module docstring)."""

    __slots__ = (
        "abandoned",
        "closed",
        "draw_end",
        "draw_start",
        "kind",
        "main_path",
        "main_tid",
        "pid",
        "render_path",
        "render_tid",
        "root_end",
        "seq",
        "start",
        "vsync_id",
    )

    def __init__(self, seq: int, kind: int, pid: int, main_tid: int, start: int) -> None:
        self.seq = seq  # frames are numbered in the order they start
        self.kind = kind
        self.pid = pid
        self.main_tid = main_tid
        self.start = start
        self.vsync_id = -1
        self.root_end = -1
        self.render_tid = -1
        self.draw_start = -1
        self.draw_end = -1
        self.main_path: list[tuple[int, str, int, int]] = []
        self.render_path: list[tuple[int, str, int, int]] = []
        self.closed = False  # the process's next frame began: no DrawFrame can join
        self.abandoned = False  # open for MAX_OPEN_FRAME_NS: an end marker was lost

    @property
    def end(self) -> int:
        return self.draw_end if self.render_tid >= 0 else self.root_end

    @property
    def complete(self) -> bool:
        if self.root_end < 0:
            return False
        return self.draw_end >= 0 if self.render_tid >= 0 else self.closed


class _Thread:
    __slots__ = (
        "acc",
        "binder_call",
        "binder_slices",
        "binder_waits",
        "comm",
        "hist_s",
        "hist_t",
        "nodes",
        "overflow",
        "since",
        "stack",
        "state",
        "tgid",
        "tid",
    )

    def __init__(self, tid: int, comm: str) -> None:
        self.tid = tid
        self.comm = comm
        self.tgid = -1  # from its trace markers' pid; the tgid column wins at the end
        self.state = _UNKNOWN
        self.since = 0
        self.acc = [0, 0, 0, 0, 0, 0]
        self.stack: list[_Slice] = []
        self.overflow = 0
        self.nodes = 0
        # State history, kept only for frame threads (main threads, RenderThreads) and
        # only back to the oldest frame not yet written.
        self.hist_t: array[int] | None = None
        self.hist_s: array[int] | None = None
        self.binder_call: tuple[int, int] | None = None  # (binder tid, since)
        self.binder_waits: list[tuple[int, int]] = []
        self.binder_slices: list[tuple[int, int]] = []


class _Interned:
    """Strings kept once each (the first ``MAX_KEYS`` distinct ones; later ones as they
    come), referred to by number."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.values: list[str] = []

    def id(self, text: str) -> int:
        i = self.ids.get(text)
        if i is None:
            i = len(self.values)
            self.values.append(text)
            if len(self.ids) < MAX_KEYS:
                self.ids[text] = i
        return i


# Finished frames are kept as typed columns: about 130 bytes a frame and 27 a
# critical-path row, however long the capture.
_FRAME_COLUMNS = {"seq": "q", "kind": "b", "pid": "q", "main_tid": "q", "render_tid": "q",
                  "start": "q", "end": "q", "root_end": "q", "draw_start": "q",
                  "draw_end": "q", "vsync_id": "q", "delay": "q", "io": "q", "binder": "q",
                  "sat": "q", "path": "i"}  # fmt: skip
_PATH_COLUMNS = {"seq": "i", "stage": "b", "depth": "h", "name": "i", "dur": "q", "self": "q"}


def _critical_path(root: _Slice, root_name: str) -> list[tuple[int, str, int, int]]:
    """(depth, name, dur_ns, self_ns) from ``root`` down the longest child at each level."""
    rows = []
    node: _Slice | None = root
    depth = 0
    while node is not None:
        dur = node.end - node.start
        kids = node.children or []
        self_ns = max(0, dur - sum(k.end - k.start for k in kids))
        rows.append((depth, root_name if depth == 0 else node.name, dur, self_ns))
        best: _Slice | None = None
        for kid in kids:
            if best is None or kid.end - kid.start > best.end - best.start:
                best = kid
        node, depth = best, depth + 1
    return rows


class _Parser:
    """Feeds on trace lines in file order; :meth:`finish` builds the tables."""

    def __init__(
        self,
        source: str,
        stats: ParseStats,
        skip_bad_lines: bool,
        roles: tuple[tuple[int, ...], tuple[int, ...]],
    ) -> None:
        self.source = source
        self.skip_bad_lines = skip_bad_lines
        self.stats = stats
        self.threads: dict[int, _Thread] = {}
        # tid → (task column, tgid column, lines seen) while they may still improve.
        self.tasks: dict[str, tuple[str, str | None, int]] = {}
        self.settled: set[str] = set()
        self.recorded: list[_Thread] = []  # threads whose state history is kept
        self.t_first = -1
        self.t_last = -1
        self.waking_seen = False
        # Preemptions, one entry per involuntary switch.
        self.p_time = array("q")
        self.p_cpu = array("q")
        self.p_victim = array("q")
        self.p_preemptor = array("q")
        self.p_wait = array("q")
        self.p_run = array("q")
        self.pending_victim: dict[int, int] = {}
        self.pending_cpu: dict[int, tuple[int, int]] = {}
        # Per CPU: current tid, since, busy ns, known ns start, switches, last timestamp.
        self.cpu_cur: dict[int, int] = {}
        self.cpu_since: dict[int, int] = {}
        self.cpu_busy: dict[int, int] = {}
        self.cpu_first: dict[int, int] = {}
        self.cpu_switches: dict[int, int] = {}
        self.cpu_last: dict[str, int] = {}  # by the CPU column's text
        # LITTLE saturation: closed intervals back to the oldest unwritten frame, and a total.
        little, big = roles
        self.little, self.big = little, big
        self.track_saturation = bool(little) and bool(big)
        self.role = {c: 0 for c in little} | {c: 1 for c in big}
        self.cpu_status: dict[int, int] = {}  # 1 busy, 0 idle (absent: unknown)
        self.little_busy = 0
        self.big_idle = 0
        self.sat_on = False
        self.sat_since = 0
        self.sat_start = array("q")
        self.sat_end = array("q")
        self.sat_total = 0
        # Frames: open ones (by number), complete ones waiting for their row, the rows.
        self.frame_seq = 0
        self.open_frames: dict[int, _Frame] = {}
        self.ready: list[_Frame] = []
        self.current_frame: dict[int, _Frame] = {}
        self.doframe_pids: set[int] = set()
        self.rows = {name: array(code) for name, code in _FRAME_COLUMNS.items()}
        self.path_rows = {name: array(code) for name, code in _PATH_COLUMNS.items()}
        self.names = _Interned()
        self.paths = _Interned()
        # Compositions, counters, async slices.
        self.c_pid = array("q")
        self.c_tid = array("q")
        self.c_start = array("q")
        self.c_end = array("q")
        self.counters: dict[tuple[int, str], list[float]] = {}
        self.async_open: dict[tuple[int, str, str], int] = {}
        self.async_done: dict[tuple[int, str], list[int]] = {}

    # -- entry ----------------------------------------------------------------------------

    def run(self, lines: Lines, tick: Callable[[], None]) -> None:
        # The hot loop: one regex per line, counters in locals, CPUs keyed by their text.
        match = _HEADER.match
        stats = self.stats
        cpu_last = self.cpu_last
        skipped = stats.skipped_events
        settled = self.settled
        scale = _FRAC_SCALE
        mask = _HOUSEKEEPING_LINES - 1
        n = events = backwards = 0
        for lineno, line in lines:
            n += 1
            if not n & mask:
                tick()
                self._housekeeping(final=False)
            if line is None:
                stats.overlong_lines += 1
                self._bad(lineno, f"a line over {MAX_LINE_CHARS} characters")
                continue
            m = match(line)
            if m is None:
                self._other_line(line, lineno)
                continue
            comm, tid_s, tgid_s, cpu_s, sec, frac, event, body = m.groups()
            if tid_s not in settled:
                self._task(tid_s, comm, tgid_s)
            t = int(sec) * 1_000_000_000 + int(frac) * scale[len(frac)]
            events += 1
            if t > self.t_last:
                if self.t_first < 0:
                    self.t_first = t
                self.t_last = t
            last = cpu_last.get(cpu_s)
            if last is not None and t < last:
                backwards += 1
            cpu_last[cpu_s] = t
            if event == "sched_switch":
                self._switch(int(cpu_s), t, body, lineno)
            elif event == "tracing_mark_write" or event == "0":
                # Kernels before 3.x (Android 4.x) print a trace_marker write as "0: …".
                self._mark(int(tid_s), comm, t, body, lineno)
            elif event == "sched_wakeup" or event == "sched_waking" or event == "sched_wakeup_new":
                if event == "sched_waking":
                    self.waking_seen = True
                    self._wakeup(int(tid_s), t, body, lineno, True)
                else:
                    self._wakeup(int(tid_s), t, body, lineno, not self.waking_seen)
            elif event in skipped:
                skipped[event] += 1
            else:
                self._skip_event(event)
        stats.lines = n
        stats.events += events
        stats.backwards_ts += backwards

    def _task(self, tid_s: str, comm: str, tgid_s: str | None) -> None:
        """Remember the name and tgid a line's task columns give for its tid (the first
        known ones), until they are known or the tid has been seen ``_TASK_LOOKS`` times."""
        tgid = tgid_s if tgid_s is not None and tgid_s[0] != "-" else None
        old = self.tasks.get(tid_s)
        looks = 1
        if old is not None:
            comm = old[0] if old[0] != UNKNOWN_COMM else comm
            tgid = old[1] if old[1] is not None else tgid
            looks = old[2] + 1
        elif len(self.tasks) >= MAX_TASKS:
            return  # more tids than a phone's pid_max: a corrupt file; names stay unknown
        self.tasks[tid_s] = (comm, tgid, looks)
        if (comm != UNKNOWN_COMM and (tgid is not None or tgid_s is None)) or looks >= _TASK_LOOKS:
            self.settled.add(tid_s)

    def _other_line(self, line: str, lineno: int) -> None:
        stripped = line.strip()
        stats = self.stats
        if not stripped:
            return
        if stripped[0] == "#":
            stats.comment_lines += 1
        elif _FUNCTION_LINE.match(line):
            self._skip_event("(function)")
        elif _LOOKS_LIKE_EVENT.match(stripped):
            self._bad(lineno, "an ftrace event line (<task>-<tid> [<cpu>] <seconds>: <event>: …)")
        else:
            lost = _LOST.search(stripped)
            if lost is not None:
                stats.lost_events += int(lost.group(1))
            elif "\x00" in stripped or "\ufffd" in stripped:
                stats.binary_lines += 1
            else:
                stats.other_lines += 1

    def _skip_event(self, event: str) -> None:
        skipped = self.stats.skipped_events
        if event in skipped:
            skipped[event] += 1
        elif len(skipped) < MAX_KEYS:
            skipped[event] = 1
        else:
            self.stats.dropped_keys += 1

    def _bad(self, lineno: int, what: str) -> None:
        if not self.skip_bad_lines:
            raise InputFileError(
                self.source, f"expected {what} (--skip-bad-lines skips such lines)", line=lineno
            )
        self.stats.bad_lines += 1
        if len(self.stats.bad_examples) < 5:
            self.stats.bad_examples.append((lineno, what))

    # -- threads and states ---------------------------------------------------------------

    def _thread(self, tid: int, comm: str) -> _Thread:
        th = self.threads.get(tid)
        if th is None:
            th = self.threads[tid] = _Thread(tid, comm)
            if comm == "RenderThread":
                self._record(th, self.t_last)
        elif th.comm == UNKNOWN_COMM and comm != UNKNOWN_COMM:
            th.comm = comm
        return th

    def _record(self, th: _Thread, t: int) -> None:
        """Start keeping ``th``'s state history (it draws frames)."""
        if th.hist_t is None:
            th.hist_t = array("q", [t])
            th.hist_s = array("b", [th.state if th.state >= 0 else _UNKNOWN])
            self.recorded.append(th)

    def _set(self, th: _Thread, state: int, t: int) -> None:
        since = th.since
        if t < since:
            t = since  # out-of-order line: never a negative duration
        old = th.state
        if old >= 0:
            th.acc[old] += t - since
        th.state = state
        th.since = t
        if th.hist_t is not None:
            th.hist_t.append(t)
            th.hist_s.append(state)  # type: ignore[union-attr]

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

    # -- markers --------------------------------------------------------------------------

    def _mark(self, tid: int, comm: str, t: int, body: str, lineno: int) -> None:
        self.stats.markers += 1
        body = body.rstrip()
        kind = body[:1]
        if kind == "E" and (len(body) == 1 or body[1] == "|"):
            self._end(tid, t)
            return
        if body[1:2] != "|" or kind not in "BCSF":
            self.stats.unsupported_markers += 1
            return
        if kind == "B":
            parts = body.split("|", 2)
            pid_s = parts[1]
            if len(parts) < 3 or not 0 < len(pid_s) <= 10 or not pid_s.isdecimal():
                self._bad(lineno, "a trace marker B|pid|name")
                return
            pid = int(pid_s)
            self.stats.slices += 1
            self._begin(tid, comm, pid, parts[2], t)
        elif kind == "C":
            parts = body.split("|", 4)
            pid = _marker_pid(parts)
            value = _number(parts[3]) if len(parts) >= 4 else None
            if pid < 0 or value is None:
                self._bad(lineno, "a trace marker C|pid|name|value (a number)")
                return
            self.stats.counter_samples += 1
            self._counter(pid, parts[2], value)
        else:
            head, _, cookie = body.rpartition("|")
            parts = head.split("|", 2)
            pid = _marker_pid(parts)
            if pid < 0 or len(parts) < 3 or not cookie.strip().lstrip("-").isdigit():
                self._bad(lineno, f"a trace marker {kind}|pid|name|cookie")
                return
            self.stats.async_markers += 1
            self._async(kind, pid, parts[2], cookie.strip(), t)

    def _begin(self, tid: int, comm: str, pid: int, name: str, t: int) -> None:
        th = self._thread(tid, comm)
        th.tgid = pid
        stack = th.stack
        if th.overflow or len(stack) >= MAX_SLICE_DEPTH:
            th.overflow += 1
            self.stats.too_deep_slices += 1
            return
        node = _Slice(name, t)
        parent = stack[-1] if stack else None
        if parent is not None and parent.children is not None:
            th.nodes += 1
            if th.nodes <= MAX_TREE_NODES:
                node.children = []
            else:
                node.kind = _UNCOLLECTED
                if th.nodes == MAX_TREE_NODES + 1:
                    self.stats.truncated_trees += 1
        elif parent is None or parent.kind != _UNCOLLECTED:
            self._root(th, node, pid, t)
        else:
            node.kind = _UNCOLLECTED
        stack.append(node)

    def _root(self, th: _Thread, node: _Slice, pid: int, t: int) -> None:
        name = node.name
        if _is_root(name, _DOFRAME):
            node.kind = _ROOT_DOFRAME
            node.frame = self._new_frame(_ROOT_DOFRAME, pid, th, t, name)
            self.doframe_pids.add(pid)
        elif _is_root(name, _DRAWFRAME):
            node.kind = _ROOT_DRAW
            frame = self.current_frame.get(pid)
            if frame is not None and frame.render_tid < 0 and not frame.abandoned:
                frame.render_tid = th.tid
                frame.draw_start = t
                node.frame = frame
            else:
                self.stats.unassigned_drawframes += 1
            self._record(th, t)
        elif _is_root(name, _TRAVERSAL):
            node.kind = _ROOT_TRAVERSAL
            node.frame = self._new_frame(_ROOT_TRAVERSAL, pid, th, t, name)
        elif _is_root(name, _COMPOSITION):
            node.kind = _ROOT_SF
        else:
            return
        node.children = []
        th.nodes = 0

    def _new_frame(self, kind: int, pid: int, th: _Thread, t: int, name: str) -> _Frame:
        previous = self.current_frame.get(pid)
        if previous is not None:
            previous.closed = True
            self._check(previous)
        frame = _Frame(self.frame_seq, kind, pid, th.tid, t)
        suffix = _VSYNC_SUFFIX.fullmatch(name)
        if suffix is not None:
            frame.vsync_id = int(suffix.group(2))
        self.frame_seq += 1
        self.open_frames[frame.seq] = frame
        self.current_frame[pid] = frame
        self._record(th, t)
        return frame

    def _check(self, frame: _Frame) -> None:
        """Move a frame that just became complete to the ones waiting for their row."""
        if frame.complete and self.open_frames.pop(frame.seq, None) is not None:
            self.ready.append(frame)

    def _end(self, tid: int, t: int) -> None:
        th = self.threads.get(tid)
        if th is not None and th.overflow:
            th.overflow -= 1
            return
        if th is None or not th.stack:
            self.stats.unmatched_ends += 1
            return
        node = th.stack.pop()
        node.end = max(t, node.start)
        kind = node.kind
        if th.stack:
            parent = th.stack[-1]
            if parent.children is not None and kind != _UNCOLLECTED:
                parent.children.append(node)
        frame = node.frame
        if frame is not None and not frame.abandoned:
            root_name = _root_name(node.name)
            if kind == _ROOT_DRAW:
                frame.draw_end = node.end
                frame.render_path = _critical_path(node, root_name)
            else:
                frame.root_end = node.end
                frame.main_path = _critical_path(node, root_name)
            self._check(frame)
        elif kind == _ROOT_SF:
            self.c_pid.append(th.tgid)
            self.c_tid.append(th.tid)
            self.c_start.append(node.start)
            self.c_end.append(node.end)
        if th.hist_t is not None and node.name.startswith(_BINDER_SLICES):
            th.binder_slices.append((node.start, node.end))

    def _counter(self, pid: int, name: str, value: float) -> None:
        key = (pid, name)
        c = self.counters.get(key)
        if c is None:
            if len(self.counters) >= MAX_KEYS:
                self.stats.dropped_keys += 1
                return
            self.counters[key] = [1.0, value, value, value]
            return
        c[0] += 1.0
        c[1] = min(c[1], value)
        c[2] = max(c[2], value)
        c[3] = value

    def _async(self, kind: str, pid: int, name: str, cookie: str, t: int) -> None:
        key = (pid, name, cookie)
        if kind == "S":
            if len(self.async_open) >= MAX_KEYS:
                self.stats.dropped_keys += 1
            else:
                self.async_open[key] = t
            return
        start = self.async_open.pop(key, None)
        if start is None:
            self.stats.unmatched_async_finish += 1
            return
        done = self.async_done.get((pid, name))
        if done is None:
            if len(self.async_done) >= MAX_KEYS:
                self.stats.dropped_keys += 1
                return
            done = self.async_done[(pid, name)] = [0, 0, 0]
        dur = max(0, t - start)
        done[0] += 1
        done[1] += dur
        done[2] = max(done[2], dur)

    # -- frames, written as they complete -------------------------------------------------

    def _housekeeping(self, final: bool) -> None:
        """Give up frames open too long, write the rows of complete frames, and drop the
        histories no frame still needs: what keeps memory flat however long the trace."""
        limit = self.t_last - MAX_OPEN_FRAME_NS
        stale = [f for f in self.open_frames.values() if f.start < limit]
        for frame in stale:
            del self.open_frames[frame.seq]
            frame.abandoned = True
            self.stats.incomplete_frames += 1
        if self.ready:
            horizon = None if final else self._binder_horizon()
            if horizon is None:
                batch, self.ready = self.ready, []
            else:
                batch = [f for f in self.ready if f.end <= horizon]
                self.ready = [f for f in self.ready if f.end > horizon]
            if batch:
                self._write_rows(batch)
        self._prune()

    def _binder_horizon(self) -> int | None:
        """The earliest start of a binder call still waiting for its reply, or of a
        binder slice still open, on a frame thread: a frame ending later may yet gain
        binder time, so its row waits (None: no such call or slice)."""
        limit = self.t_last - MAX_OPEN_FRAME_NS
        starts = []
        for th in self.recorded:
            if th.binder_call is not None and th.binder_call[1] >= limit:
                starts.append(th.binder_call[1])
            for node in th.stack:
                if node.start >= limit and node.name.startswith(_BINDER_SLICES):
                    starts.append(node.start)
                    break  # the outermost one starts first
        return min(starts) if starts else None

    def _prune(self) -> None:
        keep = min(
            (f.start for f in (*self.open_frames.values(), *self.ready)), default=self.t_last
        )
        for th in self.recorded:
            times, states = th.hist_t, th.hist_s
            assert times is not None and states is not None
            k = bisect.bisect_right(times, keep) - 1  # the entry in force at `keep` stays
            if k > 0:
                del times[:k]
                del states[:k]
            th.binder_slices = [s for s in th.binder_slices if s[1] >= keep]
            th.binder_waits = [s for s in th.binder_waits if s[1] >= keep]
        k = bisect.bisect_left(self.sat_end, keep)
        if k > 0:
            del self.sat_start[:k]
            del self.sat_end[:k]

    def _write_rows(self, batch: list[_Frame]) -> None:
        n = len(batch)
        start = np.fromiter((f.start for f in batch), np.int64, n)
        end = np.fromiter((f.end for f in batch), np.int64, n)
        main = np.fromiter((f.main_tid for f in batch), np.int64, n)
        render = np.fromiter((f.render_tid for f in batch), np.int64, n)
        delay = np.zeros(n, dtype=np.int64)
        io_ns = np.zeros(n, dtype=np.int64)
        binder = np.zeros(n, dtype=np.int64)
        for tid in set(main.tolist()) | set(render.tolist()):
            th = self.threads.get(tid)
            if tid < 0 or th is None or th.hist_t is None:
                continue
            sel = (main == tid) | (render == tid)
            a, b = start[sel], end[sel]
            times = np.array(th.hist_t, dtype=np.int64)
            states = np.array(th.hist_s, dtype=np.int8)
            delay[sel] += _state_overlap(times, states, (_RUNNABLE, _PREEMPTED), a, b)
            io_ns[sel] += _state_overlap(times, states, (_IO,), a, b)
            binder[sel] += np.maximum(
                _interval_overlap(th.binder_slices, a, b),
                _interval_overlap(th.binder_waits, a, b),
            )
        sat = np.zeros(n, dtype=np.int64)
        if self.track_saturation:
            spans = list(zip(self.sat_start, self.sat_end, strict=True))
            if self.sat_on:  # still saturated now, so at least until each frame's end
                spans.append((self.sat_since, max(self.t_last, int(end.max()))))
            sat = _interval_overlap(spans, start, end)
        path_id = self.paths.id
        columns = {
            "seq": [f.seq for f in batch],
            "kind": [f.kind for f in batch],
            "pid": [f.pid for f in batch],
            "main_tid": main,
            "render_tid": render,
            "start": start,
            "end": end,
            "root_end": [f.root_end for f in batch],
            "draw_start": [f.draw_start for f in batch],
            "draw_end": [f.draw_end for f in batch],
            "vsync_id": [f.vsync_id for f in batch],
            "delay": delay,
            "io": io_ns,
            "binder": binder,
            "sat": sat,
            "path": [path_id(_path_text(f)) for f in batch],
        }
        for name, values in columns.items():
            column = self.rows[name]
            if isinstance(values, np.ndarray):
                column.frombytes(values.astype(_DTYPES[column.typecode]).tobytes())
            else:
                column.extend(values)  # type: ignore[arg-type]  # a list of ints
        cp = self.path_rows
        seq, stage_of, depth_of, name_of, dur_of, self_of = (
            cp[k].append for k in ("seq", "stage", "depth", "name", "dur", "self")
        )
        name_id = self.names.id
        for f in batch:
            for stage, rows in ((_MAIN, f.main_path), (_RENDER, f.render_path)):
                for depth, name, dur, self_ns in rows:
                    seq(f.seq)
                    stage_of(stage)
                    depth_of(depth)
                    name_of(name_id(name))
                    dur_of(dur)
                    self_of(self_ns)

    # -- tables ---------------------------------------------------------------------------

    def finish(self) -> SystraceTrace:
        end = self.t_last
        for th in self.threads.values():
            if th.state >= 0 and end > th.since:
                th.acc[th.state] += end - th.since
            th.since = max(th.since, end)
            self.stats.unterminated_slices += len(th.stack) + th.overflow
        for frame in list(self.open_frames.values()):
            frame.closed = True  # the trace is over: no DrawFrame will come
            self._check(frame)
        self.stats.incomplete_frames += len(self.open_frames)
        self.open_frames.clear()
        self._housekeeping(final=True)
        for cpu, cur in self.cpu_cur.items():
            if cur != 0:
                self.cpu_busy[cpu] += max(0, end - self.cpu_since[cpu])
        if self.role:
            self.stats.unseen_mapped_cpus = sorted(set(self.role) - set(self.cpu_cur))
            self.stats.unmapped_cpus = sorted(set(self.cpu_cur) - set(self.role))
        saturated_ns: int | None = None
        if self.track_saturation:
            if self.sat_on and end > self.sat_since:
                self.sat_total += end - self.sat_since
            saturated_ns = self.sat_total
        names = self._names()
        frames, path = self._frames_table(names)
        self.path_rows = {}
        preemptions = pd.DataFrame(
            {
                "time_ns": _view(self.p_time),
                "core": _view(self.p_cpu),
                "victim_tid": _view(self.p_victim),
                "preemptor_tid": _view(self.p_preemptor),
                "victim_wait_ns": _view(self.p_wait),
                "preemptor_run_ns": _view(self.p_run),
            }
        )
        return SystraceTrace(
            source=self.source,
            stats=self.stats,
            start_ns=self.t_first,
            end_ns=end,
            threads=self._threads_table(names),
            preemptions=preemptions,
            frames=frames,
            critical_path=path,
            compositions=self._compositions_table(),
            cpus=self._cpus_table(),
            counters=pd.DataFrame(
                [
                    (p, _process(names, p), n, int(c[0]), c[1], c[2], c[3])
                    for (p, n), c in self.counters.items()
                ],
                columns=["pid", "process", "name", "samples", "min", "max", "last"],
            ),
            async_slices=pd.DataFrame(
                [(p, n, *d) for (p, n), d in self.async_done.items()],
                columns=["pid", "name", "count", "total_ns", "max_ns"],
            ),
            little_cpus=self.little,
            big_cpus=self.big,
            saturated_ns=saturated_ns,
        )

    def _names(self) -> dict[int, tuple[str, int]]:
        """tid → (name, tgid): a thread's own, else what any line's task columns said."""
        out: dict[int, tuple[str, int]] = {}
        for tid_s, (comm, tgid_s, _) in self.tasks.items():
            tid = int(tid_s)
            out[tid] = (comm, int(tgid_s) if tgid_s is not None else -1)
        for tid, th in self.threads.items():
            seen = out.get(tid)
            comm = th.comm
            if comm == UNKNOWN_COMM and seen is not None:
                comm = seen[0]
            tgid = seen[1] if seen is not None and seen[1] >= 0 else th.tgid
            out[tid] = (comm, tgid)
        return out

    def _threads_table(self, names: dict[int, tuple[str, int]]) -> pd.DataFrame:
        known = self.stats.thread_states_known
        rows = []
        for th in self.threads.values():
            comm, tgid = names[th.tid]
            rows.append((th.tid, comm, tgid, _process(names, tgid), *th.acc,
                         known and th.state != _UNKNOWN))  # fmt: skip
        table = pd.DataFrame(
            rows, columns=["tid", "thread", "tgid", "process", *THREAD_COLUMNS, "states_known"]
        )
        for column in ("tid", "tgid", *THREAD_COLUMNS):
            table[column] = table[column].astype(np.int64)
        table["states_known"] = table["states_known"].astype(bool)
        return table.sort_values("tid", ignore_index=True)

    def _cpus_table(self) -> pd.DataFrame:
        rows = []
        for cpu in sorted(self.cpu_cur):
            known = max(0, self.t_last - self.cpu_first[cpu])
            cluster = "little" if cpu in self.little else "big" if cpu in self.big else "unmapped"
            busy = self.cpu_busy[cpu]
            rows.append(
                (cpu, cluster, known, busy, busy / known if known else float("nan"),
                 self.cpu_switches[cpu])
            )  # fmt: skip
        return pd.DataFrame(
            rows, columns=["cpu", "cluster", "known_ns", "busy_ns", "busy_share", "switches"]
        )

    def _compositions_table(self) -> pd.DataFrame:
        table = pd.DataFrame(
            {
                "pid": np.array(self.c_pid, dtype=np.int64),
                "tid": np.array(self.c_tid, dtype=np.int64),
                "start_ns": np.array(self.c_start, dtype=np.int64),
                "end_ns": np.array(self.c_end, dtype=np.int64),
            }
        )
        table["dur_ms"] = (table["end_ns"] - table["start_ns"]) / 1e6
        return table

    def _frames_table(self, names: dict[int, tuple[str, int]]) -> tuple[pd.DataFrame, pd.DataFrame]:
        raw = {k: _view(v) for k, v in self.rows.items()}
        # Start order; a performTraversals frame counts only in a process without doFrame.
        order = np.argsort(raw["seq"], kind="stable")
        traversal_only = ~np.isin(raw["pid"], np.array(sorted(self.doframe_pids), np.int64))
        keep = (raw["kind"] != _ROOT_TRAVERSAL) | traversal_only
        order = order[keep[order]]
        col = {k: v[order].astype(np.int64) for k, v in raw.items()}
        del raw
        self.rows = {}  # copied out: free them before the critical-path table is built
        start, end = col["start"], col["end"]
        dur = end - start
        has_draw = col["render_tid"] >= 0
        pids = col["pid"]
        by_pid = {int(p): _process(names, int(p)) for p in np.unique(pids)}
        columns: dict[str, Any] = {
            "pid": pids,
            "process": np.array([by_pid[p] for p in pids.tolist()], dtype=object),
            "frame": np.arange(len(order), dtype=np.int64),
            "vsync_id": col["vsync_id"],
            "main_tid": col["main_tid"],
            "render_tid": col["render_tid"],
            "start_ns": start,
            "end_ns": end,
            "dur_ns": dur,
            "dur_ms": dur / 1e6,
            "doframe_ms": (col["root_end"] - start) / 1e6,
            "drawframe_ms": np.where(has_draw, col["draw_end"] - col["draw_start"], np.nan) / 1e6,
            "composite_ms": self._composite_ms(end),
            "slow": slow_mask(dur),
            "frozen": frozen_mask(dur),
            "sched_delay_ns": col["delay"],
            "io_ns": col["io"],
            "binder_ns": col["binder"],
        }
        if not self.stats.thread_states_known:  # no sched events: unknown, not zero
            columns["sched_delay_ns"] = np.full(len(order), np.nan)
            columns["io_ns"] = np.full(len(order), np.nan)
        if self.track_saturation:
            sat = col["sat"]
            columns["little_saturated_ns"] = sat
            share = np.where(dur > 0, sat / np.maximum(dur, 1), 0.0)
            columns["little_saturated"] = share >= SATURATED_FRAME_FRACTION
        # Paths repeat from frame to frame: a categorical holds each once.
        columns["critical_path"] = _categorical(col["path"], self.paths.values)
        table = pd.DataFrame(columns, copy=False)
        return table, self._path_table(col["seq"], pids)

    def _path_table(self, seqs: IntArray, pids: IntArray) -> pd.DataFrame:
        cp = {k: _view(v) for k, v in self.path_rows.items()}
        number = np.full(self.frame_seq + 1, -1, dtype=np.int64)
        number[seqs] = np.arange(len(seqs))
        unsorted = number[cp["seq"]]
        del number
        # Rows were written frame by frame (main, then render, by depth), in the order the
        # frames completed; a stable sort by frame number restores the start order.
        order = np.argsort(unsorted, kind="stable")
        order = order[unsorted[order] >= 0]
        frame = unsorted[order]
        del unsorted
        return pd.DataFrame(
            {
                "frame": frame,
                "pid": pids[frame],
                "stage": _categorical(cp["stage"][order], ["main", "render"]),
                "depth": cp["depth"][order].astype(np.int64),
                "name": _categorical(cp["name"][order], self.names.values),
                "dur_ns": cp["dur"][order],
                "self_ns": cp["self"][order],
            },
            copy=False,
        )

    def _composite_ms(self, frame_end: IntArray) -> FloatArray:
        out = np.full(len(frame_end), np.nan)
        if not len(self.c_start) or not len(frame_end):
            return out
        starts = _view(self.c_start)
        order = np.argsort(starts, kind="stable")
        starts = starts[order]
        durs = (_view(self.c_end)[order] - starts) / 1e6
        j = np.searchsorted(starts, frame_end, side="left")
        ok = j < len(starts)
        jj = np.minimum(j, len(starts) - 1)
        ok &= starts[jj] - frame_end <= COMPOSE_WINDOW_NS
        out[ok] = durs[jj[ok]]
        return out


_DTYPES: dict[str, type[np.signedinteger[Any]]] = {
    "q": np.int64, "i": np.int32, "h": np.int16, "b": np.int8,
}  # fmt: skip


def _view(values: array[int]) -> npt.NDArray[Any]:
    """An array module buffer as a numpy array, without a copy."""
    dtype = _DTYPES[values.typecode]
    return np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype)


def _categorical(codes: npt.NDArray[Any], values: list[str]) -> Any:
    """Strings by number as a categorical (1–4 bytes a row, each string stored once)."""
    unique: dict[str, int] = {}
    remap = np.array([unique.setdefault(v, len(unique)) for v in values], dtype=np.int32)
    mapped: npt.NDArray[np.int32] = remap[codes] if len(codes) else np.zeros(0, np.int32)
    return pd.Categorical.from_codes(mapped, pd.Index(list(unique) or [""]))


def _process(names: dict[int, tuple[str, int]], tgid: int) -> str:
    """A process's name: its main thread's (tid = tgid); "" when unknown."""
    main = names.get(tgid)
    if main is None or tgid <= 0 or main[0] == UNKNOWN_COMM:
        return ""
    return main[0]


def _root_name(name: str) -> str:
    """A frame root's name without the vsync id Android 12+ appends."""
    suffix = _VSYNC_SUFFIX.fullmatch(name)
    if suffix is not None and _is_root(name, (*_DOFRAME, *_DRAWFRAME)):
        return suffix.group(1)
    return name


def _path_text(frame: _Frame) -> str:
    text = " > ".join(r[1] for r in frame.main_path)
    if frame.render_path:
        text += " | " + " > ".join(r[1] for r in frame.render_path)
    return text


def _marker_pid(parts: list[str]) -> int:
    if len(parts) < 2 or not 0 < len(parts[1]) <= 10:
        return -1
    try:
        return int(parts[1])
    except ValueError:
        return -1


def _number(text: str) -> float | None:
    text = text.strip()
    if not 0 < len(text) <= 40:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if np.isfinite(value) else None


def _state_overlap(
    times: IntArray,
    states: npt.NDArray[np.int8],
    wanted: tuple[int, ...],
    a: IntArray,
    b: IntArray,
) -> IntArray:
    """Time in ``wanted`` states within each [a, b], from a step history (a state holds
    from its time to the next change; the last one to the end of the trace)."""
    if not len(times):
        return np.zeros(len(a), dtype=np.int64)
    inside = np.isin(states, wanted).astype(np.int64)
    cum = np.concatenate(([0], np.cumsum(np.diff(times) * inside[:-1])))

    def at(t: IntArray) -> IntArray:
        k = np.searchsorted(times, t, side="right") - 1
        kk = np.maximum(k, 0)
        # t < times[k + 1], so the part of segment k before t never exceeds the segment.
        part = np.maximum(t - times[kk], 0) * inside[kk]
        return np.where(k >= 0, cum[kk] + part, 0)

    return (at(b) - at(a)).astype(np.int64)


def _interval_overlap(intervals: Sequence[tuple[int, int]], a: IntArray, b: IntArray) -> IntArray:
    """Length of the union of ``intervals`` inside each [a, b]."""
    if not intervals or not len(a):
        return np.zeros(len(a), dtype=np.int64)
    merged: list[list[int]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    starts = np.array([m[0] for m in merged], dtype=np.int64)
    ends = np.array([m[1] for m in merged], dtype=np.int64)
    cum = np.concatenate(([0], np.cumsum(ends - starts)))

    def covered(t: IntArray) -> IntArray:
        k = np.searchsorted(starts, t, side="right") - 1
        kk = np.maximum(k, 0)
        part = np.clip(t - starts[kk], 0, ends[kk] - starts[kk])
        return np.where(k >= 0, cum[kk] + part, 0)

    return (covered(b) - covered(a)).astype(np.int64)


# -- public entry points ------------------------------------------------------------------


def parse_clusters(spec: str) -> dict[int, str]:
    """``"0-3:little,4-7:big"`` → {cpu: cluster name}. Raises :class:`UserError`."""
    out: dict[int, str] = {}
    for item in spec.split(","):
        cpus, sep, name = item.strip().partition(":")
        name = name.strip()
        lo, dash, hi = cpus.strip().partition("-")
        try:
            first, last = int(lo), int(hi) if dash else int(lo)
        except ValueError:
            first = last = -1
        if not sep or not name or first < 0 or last < first or last > 4095:
            raise UserError(
                f"bad --clusters item {item.strip()!r}: expected CPUS:NAME with CPUS like "
                "'0-3' or '4' (e.g. '0-3:little,4-7:big')"
            )
        for cpu in range(first, last + 1):
            if cpu in out:
                raise UserError(f"--clusters: CPU {cpu} is in two clusters")
            out[cpu] = name
    return out


def clusters_from_profile(profile: Any) -> dict[int, str]:
    """CPU → cluster name of an mqoe device profile (clusters are listed LITTLE first
    and numbered in order, as the kernel does)."""
    out: dict[int, str] = {}
    for cluster in profile.cpu.clusters:
        for _ in range(cluster.cores):
            out[len(out)] = cluster.name
    return out


def cluster_roles(clusters: Mapping[int, str] | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(LITTLE CPUs, big CPUs): the cluster named ``little`` (any case), or else the
    cluster of the lowest-numbered CPU, is LITTLE; every other cluster is big."""
    if not clusters:
        return (), ()
    names = {n.lower() for n in clusters.values()}
    little_name = "little" if "little" in names else clusters[min(clusters)].lower()
    little = tuple(sorted(c for c, n in clusters.items() if n.lower() == little_name))
    big = tuple(sorted(c for c, n in clusters.items() if n.lower() != little_name))
    return little, big


def _parse(
    lines: Lines,
    source: str,
    stats: ParseStats,
    clusters: Mapping[int, str] | None,
    skip_bad_lines: bool,
    tick: Callable[[], None],
) -> SystraceTrace:
    parser = _Parser(source, stats, skip_bad_lines, cluster_roles(clusters))
    parser.run(lines, tick)
    if stats.events == 0:
        hint = ""
        if stats.html_json_blocks and not (stats.html_text_blocks or stats.html_js_blocks):
            hint = " (this HTML holds only JSON trace data; only text ftrace is read)"
        elif stats.json_input:
            hint = " (this looks like a JSON trace; only text ftrace is read)"
        elif stats.binary_lines:
            hint = " (the file looks binary: a Perfetto protobuf trace needs `traceconv systrace`)"
        elif stats.bad_lines:
            hint = f" ({stats.bad_lines} bad lines were skipped)"
        raise InputFileError(
            source,
            "no ftrace events found: expected text lines like "
            "'<task>-<tid> [<cpu>] <seconds>: sched_switch: …' (atrace/systrace text or "
            "HTML; convert binary Perfetto traces with `traceconv systrace`)" + hint,
        )
    return parser.finish()


def parse_systrace_text(
    text: str,
    *,
    source: str = "<text>",
    clusters: Mapping[int, str] | None = None,
    skip_bad_lines: bool = False,
) -> SystraceTrace:
    """Parse trace text held in memory (see :func:`load_systrace`)."""
    stats = ParseStats()
    lines = text_lines(text, stats, source)
    return _parse(lines, source, stats, clusters, skip_bad_lines, lambda: None)


def parse_systrace_lines(
    lines: Iterable[str],
    *,
    source: str = "<lines>",
    clusters: Mapping[int, str] | None = None,
    skip_bad_lines: bool = False,
) -> SystraceTrace:
    """Parse trace lines from any iterable of text (a pipe from ``adb shell atrace``, an
    open text file), streaming: containers are sniffed as in :func:`load_systrace`;
    line ends are dropped; a line over ``MAX_LINE_CHARS`` is a bad line."""
    stats = ParseStats()

    def bare() -> Iterator[str | None]:
        for line in lines:
            line = line.rstrip("\r\n")
            yield line if len(line) <= MAX_LINE_CHARS else None

    return _parse(trace_lines(bare(), stats, source), source, stats, clusters,
                  skip_bad_lines, lambda: None)  # fmt: skip


def load_systrace(
    path: str | Path,
    *,
    clusters: Mapping[int, str] | None = None,
    skip_bad_lines: bool = False,
    progress: Callable[[float], None] | None = None,
) -> SystraceTrace:
    """Parse one capture, streaming it: ftrace/atrace text (any encoding and line end),
    gzip, ``atrace -z`` or a systrace HTML report (see :mod:`mqoe.analysis.systrace_input`).

    ``clusters`` maps CPU → cluster name for the LITTLE-saturation measure;
    ``progress`` is called with the fraction of the file read. Raises
    :class:`InputFileError` (file:line) on bad input and for unreadable paths.
    """
    path = Path(path)
    stats = ParseStats()
    try:
        trace_file = TraceFile(path, stats)
    except (EOFError, zlib.error) as exc:
        raise InputFileError(path, f"corrupt or truncated compressed data ({exc})") from None

    def tick() -> None:
        if progress is not None:
            progress(trace_file.fraction_read())

    try:
        return _parse(trace_file.lines, str(path), stats, clusters, skip_bad_lines, tick)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputFileError(path, f"corrupt or truncated compressed data ({exc})") from None
    except OSError as exc:
        raise InputFileError(path, describe_os_error(exc)) from None
    finally:
        trace_file.close()


# -- analysis -----------------------------------------------------------------------------


@dataclass
class SystraceReport:
    """Tables over one or more traces; each has a ``trace`` column (the file)."""

    traces: list[SystraceTrace]
    tables: dict[str, pd.DataFrame]


def _tagged(trace: SystraceTrace, frame: pd.DataFrame) -> pd.DataFrame:
    # A shallow copy and a one-category column: a big table (frames, critical path) is
    # not duplicated, nor the file name repeated on each of its rows.
    frame = frame.copy(deep=False)
    codes = np.zeros(len(frame), dtype=np.int8)
    tag = pd.Categorical.from_codes(codes, pd.Index([trace.source]))
    frame.insert(0, "trace", pd.Series(tag, index=frame.index))
    return frame


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f.columns)]
    nonempty = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    if len(nonempty) <= 1:
        return (nonempty or frames)[0].reset_index(drop=True)
    return pd.concat(nonempty, ignore_index=True)


CAUSES = ("binder", "io", "sched_delay")


def slow_frame_correlation(frames: pd.DataFrame) -> pd.DataFrame:
    """Per process and cause: mean time per slow (SR or FF) frame vs per normal frame.

    Causes: ``binder``, ``io``, ``sched_delay`` and, when the trace had a cluster map,
    ``little_saturated`` (a cause the trace cannot measure, NaN, is left out); ``ratio``
    = slow mean / normal mean (inf when normal is 0).
    """
    columns = ["pid", "process", "cause", "slow_frames", "normal_frames",
               "slow_mean_ms", "normal_mean_ms", "ratio"]  # fmt: skip
    rows = []
    causes = [
        c
        for c in (*CAUSES, "little_saturated")
        if c + "_ns" in frames.columns and frames[c + "_ns"].notna().any()
    ]
    for (pid, process), group in frames.groupby(["pid", "process"], sort=True):
        bad = group["slow"] | group["frozen"]
        for cause in causes:
            values = group[cause + "_ns"] / 1e6
            slow_mean = float(values[bad].mean()) if bad.any() else float("nan")
            normal_mean = float(values[~bad].mean()) if (~bad).any() else float("nan")
            if normal_mean > 0:
                ratio = slow_mean / normal_mean
            elif slow_mean > 0:
                ratio = float("inf")
            else:
                ratio = float("nan")
            rows.append((pid, process, cause, int(bad.sum()), int((~bad).sum()),
                         slow_mean, normal_mean, ratio))  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def frame_summary(frames: pd.DataFrame) -> pd.DataFrame:
    """Per process: frames, sr, ff, sr_pct, ff_pct (:func:`mqoe.metrics.jank.jank_counts`)
    and the 50th/90th/99th percentile frame time."""
    rows = []
    for (pid, process), group in frames.groupby(["pid", "process"], sort=True):
        counts = jank_counts(group["dur_ns"].to_numpy())
        q = np.percentile(group["dur_ns"].to_numpy(), [50, 90, 99]) / 1e6
        rows.append({"pid": pid, "process": process, **counts,
                     "p50_ms": q[0], "p90_ms": q[1], "p99_ms": q[2]})  # fmt: skip
    columns = ["pid", "process", "frames", "sr", "ff", "sr_pct", "ff_pct",
               "p50_ms", "p90_ms", "p99_ms"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def saturation_summary(trace: SystraceTrace) -> dict[str, Any]:
    """The LITTLE-saturation share of trace time and how many slow frames saw it."""
    frames = trace.frames
    bad = (frames["slow"] | frames["frozen"]) if len(frames) else pd.Series([], dtype=bool)
    hit = int((frames["little_saturated"] & bad).sum()) if "little_saturated" in frames else 0
    known = trace.saturated_ns is not None
    return {
        "little_cpus": ",".join(map(str, trace.little_cpus)),
        "big_cpus": ",".join(map(str, trace.big_cpus)),
        "trace_s": trace.duration_ns / 1e9,
        "saturated_s": trace.saturated_ns / 1e9 if known else float("nan"),  # type: ignore[operator]
        "saturated_pct": 100.0 * trace.saturated_share,
        "slow_frames": int(bad.sum()),
        "slow_frames_saturated": hit if known else -1,
    }


def analyze(traces: Sequence[SystraceTrace]) -> SystraceReport:
    """The report tables: thread_states (:func:`mqoe.metrics.sched.thread_states`, only
    threads whose states the trace measured), preemptions, preemption_summary
    (:func:`mqoe.metrics.sched.preemption_summary`), frames, frame_summary,
    critical_path, correlation, saturation, cpus, compositions, counters."""
    tables: dict[str, list[pd.DataFrame]] = {k: [] for k in (
        "thread_states", "preemptions", "preemption_summary", "frames", "frame_summary",
        "critical_path", "correlation", "saturation", "cpus", "compositions",
        "counters")}  # fmt: skip
    for tr in traces:
        measured = tr.threads[tr.threads["states_known"]].drop(columns="states_known")
        states = thread_states(measured.reset_index(drop=True))
        tables["thread_states"].append(_tagged(tr, states))
        tables["preemptions"].append(_tagged(tr, tr.preemptions))
        tables["preemption_summary"].append(
            _tagged(tr, preemption_summary(tr.preemptions, tr.threads))
        )
        tables["frames"].append(_tagged(tr, tr.frames))
        tables["frame_summary"].append(_tagged(tr, frame_summary(tr.frames)))
        tables["critical_path"].append(_tagged(tr, tr.critical_path))
        tables["correlation"].append(_tagged(tr, slow_frame_correlation(tr.frames)))
        tables["saturation"].append(_tagged(tr, pd.DataFrame([saturation_summary(tr)])))
        tables["cpus"].append(_tagged(tr, tr.cpus))
        tables["compositions"].append(_tagged(tr, tr.compositions))
        tables["counters"].append(_tagged(tr, tr.counters))
    return SystraceReport(list(traces), {k: _concat(v) for k, v in tables.items()})


def select_threads(states: pd.DataFrame, pattern: str | None, top: int) -> pd.DataFrame:
    """Threads whose name or process matches ``pattern`` (a regex), else the ``top``
    threads by running time, per trace."""
    if states.empty:
        return states
    if pattern is not None:
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise UserError(f"bad --threads regular expression {pattern!r}: {exc}") from None
        hit = states["thread"].map(lambda s: bool(rx.search(str(s))))
        hit |= states["process"].map(lambda s: bool(rx.search(str(s))))
        states = states[hit]
    order = {name: i for i, name in enumerate(dict.fromkeys(states["trace"]))}
    ordered = states.assign(_order=states["trace"].map(order)).sort_values(
        ["_order", "running_ns"], ascending=[True, False], kind="stable"
    )
    ordered = ordered.drop(columns="_order")
    return ordered if pattern is not None else ordered.groupby("trace", sort=False).head(top)
