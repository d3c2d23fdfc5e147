"""ftrace / atrace / systrace text (spec 06): thread states, preemptions, frames, critical
paths and the causes of slow frames, from files pulled from real phones.

The parser streams the file once (memory grows with the threads, frames and preemptions
found, not with the lines) and feeds the same input tables as simulated runs to
:mod:`mqoe.metrics.sched` and :mod:`mqoe.metrics.jank`, so real and simulated numbers
mean the same thing. :func:`synth_systrace` writes realistic traces with ground truth.

File format accepted
--------------------
Plain ftrace text (``adb shell atrace …``, ``/sys/kernel/tracing/trace``), optionally
gzip-compressed, or a systrace HTML file whose trace is embedded in ``<script
class="trace-data" type="application/text">`` blocks (every text block is read in file
order; JSON blocks are skipped and counted). Decoded as UTF-8 (bad bytes replaced).
An event line is::

    <task>-<tid> [(<tgid>|-----)] [<cpu>] [<irq-flags>] <seconds>.<fraction>: <event>: <fields>

* ``task`` may hold spaces and dashes (``Binder:1234_2-1250``, ``Jit thread pool-2310``:
  the tid is the digits after the *last* dash that is followed by the CPU column);
  the tgid column and the 4- or 5-character irq-flags column are optional; the
  fraction has 1–9 digits (µs in practice; read as ns).
* ``sched_switch: prev_comm= prev_pid= prev_prio= prev_state= ==> next_comm= next_pid=
  next_prio=``. ``prev_state`` R / R+ → Runnable (Preempted); S → Sleeping; D (D|K, …)
  → Blocked on I/O; X / x / Z → exited (no further accounting); anything else (I, T,
  t, P, W, …) → ``other_ns``.
* ``sched_wakeup`` / ``sched_waking`` / ``sched_wakeup_new``: ``comm= pid= prio=``, then
  optional ``success=`` and ``target_cpu=``.
* ``tracing_mark_write``: ``B|pid|name``, ``E|pid`` or ``E`` (name after ``E|pid|``
  ignored), ``S|pid|name|cookie``, ``F|pid|name|cookie``, ``C|pid|name|value``. Other
  payloads (``I|…``, ``trace_event_clock_sync: …``, free text) are counted, not read.
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
  CPU; Runnable (Preempted) = switched out with prev_state R/R+ until it runs again.
* **Preemption** = one switch with prev_state R/R+ to another thread (not idle):
  ``victim_wait_ns`` until the victim runs again, ``preemptor_run_ns`` until the next
  switch on that CPU (−1 when the trace ends first).
* **Frames**: an outermost ``Choreographer#doFrame`` slice starts a frame of its
  process (the marker's pid); the first outermost ``DrawFrame``/``DrawFrames`` slice
  of that process beginning after it (and before the next doFrame) is its draw stage.
  Duration = doFrame start → end of its DrawFrame (→ doFrame end without one). SR/FF
  by :mod:`mqoe.metrics.jank` (naive: no buffer state in the trace). Composition = the
  first outermost SurfaceFlinger ``onMessageReceived``/``composite``/
  ``handleMessageRefresh`` slice starting within ``COMPOSE_WINDOW_NS`` after the frame.
* **Critical path**: from the doFrame (then the DrawFrame) down, the longest child at
  each level, with its self time (duration minus its children's).
* **Per-frame causes** over the frame's main thread and RenderThread during the frame:
  ``sched_delay`` = Runnable + Runnable (Preempted) time, ``io`` = Blocked-on-I/O time,
  ``binder`` = per thread the larger of its ``binder transaction``/``binder reply``
  slices and its waits on a ``Binder:*`` thread (it woke that thread — ``sched_waking``
  context, or ``sched_wakeup`` when the trace has no waking events — and was next woken
  by it).
* **LITTLE saturation**: given a CPU → cluster map, the time when every LITTLE CPU runs
  a task while some big CPU is idle. A CPU's state is unknown before its first
  sched_switch; an unknown LITTLE CPU is not busy, an unknown big CPU is not idle.
"""

from __future__ import annotations

import bisect
import gzip
import heapq
import io
import re
import zlib
from array import array
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.errors import InputFileError, UserError
from mqoe.metrics.jank import frozen_mask, jank_counts, slow_mask
from mqoe.metrics.sched import STATE_COLUMNS, preemption_summary, thread_states

MAX_LINE_CHARS = 65_536  # longer lines are bad lines (atrace caps a marker at 1 KiB)
MAX_SLICE_DEPTH = 1_000  # deeper B markers on one thread are counted, not kept
MAX_TREE_NODES = 20_000  # per frame slice tree; beyond, children are not collected
MAX_KEYS = 10_000  # distinct skipped-event names, counters, open async slices
COMPOSE_WINDOW_NS = 50_000_000  # a composition later than this is not the frame's
SATURATED_FRAME_FRACTION = 0.5  # a frame is "LITTLE-saturated" for at least this share
THREAD_COLUMNS = (*STATE_COLUMNS, "other_ns")

_RUNNING, _RUNNABLE, _PREEMPTED, _SLEEPING, _IO, _OTHER = range(6)
_UNKNOWN, _DEAD = -1, -2
_ROOT_DOFRAME, _ROOT_DRAW, _ROOT_SF = 1, 2, 3
_UNCOLLECTED = -1

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
_SCRIPT_OPEN = re.compile(r"<script[^>]*class=[\"']?trace-data[^>]*>", re.IGNORECASE)
_SCRIPT_CLOSE = re.compile(r"</script\s*>", re.IGNORECASE)
_FRAC_SCALE = (0, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1_000, 100, 10, 1)
_BINDER_SLICES = ("binder transaction", "binder reply")
_BINDER_THREADS = ("Binder:", "Binder_", "HwBinder:")

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _is_root(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + " ") for p in prefixes)


# -- results ----------------------------------------------------------------------------


@dataclass
class ParseStats:
    """What the parser skipped or repaired in one file."""

    lines: int = 0
    events: int = 0
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
    html_text_blocks: int = 0
    html_json_blocks: int = 0
    lost_events: int = 0  # "[LOST n EVENTS]": the kernel's ring buffer overflowed
    binary_lines: int = 0  # lines holding NUL bytes or undecodable bytes
    json_input: bool = False  # the file starts like a JSON trace
    unseen_mapped_cpus: list[int] = field(default_factory=list)  # in the map, never switched
    unmapped_cpus: list[int] = field(default_factory=list)  # switched, not in the map

    def warnings(self) -> list[str]:
        """One line per thing a user should know about, in plain words."""
        out = []
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
            ("incomplete_frames", "frames cut by the end of the trace"),
            ("unmatched_async_finish", "F markers without an S"),
            ("dropped_keys", "counters/async/event names over the limit"),
            ("html_json_blocks", "JSON trace blocks skipped"),
        ]
        for key, text in named:
            value = getattr(self, key)
            if value:
                out.append(f"{value} {text}")
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

    * ``threads``: tid, thread, tgid (−1 unknown), process, and the state times
      ``running_ns runnable_ns runnable_preempted_ns sleeping_ns blocked_io_ns other_ns``
      — the input of :func:`mqoe.metrics.sched.thread_states`.
    * ``preemptions``: time_ns, core, victim_tid, preemptor_tid, victim_wait_ns,
      preemptor_run_ns — the input of :func:`mqoe.metrics.sched.preemption_summary`.
    * ``frames``: one row per complete frame (see the module docstring).
    * ``critical_path``: frame, stage (main/render), depth, name, dur_ns, self_ns.
    * ``compositions``: SurfaceFlinger's outermost composition slices.
    * ``cpus``: per CPU, cluster, known_ns (since its first switch), busy_ns, switches.
    * ``counters``: per (pid, name) C markers: samples, min, max, last.
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


# -- reading lines ------------------------------------------------------------------------


def _open(path: Path) -> tuple[IO[str], Any, int]:
    """A text stream over the file (gzip or not), its byte source and size (progress)."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
        size = path.stat().st_size
    except OSError as exc:
        raise InputFileError(path, f"cannot read the file: {exc.strerror or exc}") from None
    source: Any = raw
    head = raw.peek(64)[:64]
    if head[:2] == b"\x1f\x8b":
        source = gzip.GzipFile(fileobj=raw, mode="rb")
    else:
        # `atrace -z` writes "TRACE:\n" then a zlib stream (0x78 is zlib's first byte).
        for prefix in (b"TRACE:\n", b"TRACE:\r\n"):
            if head.startswith(prefix) and head[len(prefix) : len(prefix) + 1] == b"\x78":
                raw.read(len(prefix))
                source = io.BufferedReader(_Inflate(raw))
    text = io.TextIOWrapper(source, encoding="utf-8", errors="replace", newline=None)
    return text, raw, size


class _Inflate(io.RawIOBase):
    """A zlib stream read in bounded chunks (a small file cannot inflate into a huge
    buffer); anything after the end of the stream is ignored."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._z = zlib.decompressobj()
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf and not self._z.eof:
            data = self._z.unconsumed_tail or self._raw.read(1 << 16)
            if not data:
                raise EOFError("the compressed stream ends early")
            self._buf = self._z.decompress(data, 1 << 20)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def _read_lines(text: IO[str]) -> Iterator[tuple[int, str | None]]:
    """(line number, line) for every line; ``None`` for a line over the limit."""
    limit = MAX_LINE_CHARS + 1
    readline = text.readline
    n = 0
    while True:
        line = readline(limit)
        if not line:
            return
        n += 1
        if len(line) == limit and line[-1] != "\n":
            while True:  # drop the rest of the huge line without holding it
                more = readline(limit)
                if not more or more[-1] == "\n":
                    break
            yield n, None
            continue
        yield n, line


def _trace_lines(text: IO[str], stats: ParseStats) -> Iterator[tuple[int, str | None]]:
    """The lines that hold trace text: all of them, or those of an HTML file's text
    ``trace-data`` blocks (their line numbers are the HTML file's)."""
    lines = _read_lines(text)
    first: tuple[int, str | None] | None = None
    for item in lines:
        line = item[1]
        if line is not None and not line.strip("\ufeff \t\r\n"):
            yield item
            continue
        first = item
        break
    if first is None:
        return
    head = (first[1] or "").lstrip("\ufeff \t").lower()
    stats.json_input = head[:1] in ("{", "[")
    if not (head.startswith("<!doctype html") or head.startswith("<html")):
        yield first
        yield from lines
        return
    yield from _html_blocks(_chain(first, lines), stats)


def _chain(
    first: tuple[int, str | None], rest: Iterator[tuple[int, str | None]]
) -> Iterator[tuple[int, str | None]]:
    yield first
    yield from rest


def _html_blocks(
    lines: Iterator[tuple[int, str | None]], stats: ParseStats
) -> Iterator[tuple[int, str | None]]:
    state = "out"  # out | probe (block open, kind unknown) | text | json
    for n, line in lines:
        if line is None:  # a huge line: minified HTML/JS outside, or a JSON trace
            if state == "text":
                yield n, None
            continue
        rest = line
        while rest:
            if state == "out":
                m = _SCRIPT_OPEN.search(rest)
                if m is None:
                    break
                state, rest = "probe", rest[m.end() :]
                continue
            close = _SCRIPT_CLOSE.search(rest)
            body = rest if close is None else rest[: close.start()]
            if state == "probe" and body.strip():
                json_block = body.lstrip()[0] in "{["
                state = "json" if json_block else "text"
                if json_block:
                    stats.html_json_blocks += 1
                else:
                    stats.html_text_blocks += 1
            if state == "text" and body.strip():
                yield n, body
            if close is None:
                break
            state, rest = "out", rest[close.end() :]


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
    __slots__ = (
        "doframe_end",
        "draw_end",
        "draw_start",
        "main_path",
        "main_tid",
        "pid",
        "render_path",
        "render_tid",
        "start",
    )

    def __init__(self, pid: int, main_tid: int, start: int) -> None:
        self.pid = pid
        self.main_tid = main_tid
        self.start = start
        self.doframe_end = -1
        self.render_tid = -1
        self.draw_start = -1
        self.draw_end = -1
        self.main_path: list[tuple[int, str, int, int]] = []
        self.render_path: list[tuple[int, str, int, int]] = []


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
        self.tgid = -1
        self.state = _UNKNOWN
        self.since = 0
        self.acc = [0, 0, 0, 0, 0, 0]
        self.stack: list[_Slice] = []
        self.overflow = 0
        self.nodes = 0
        # State history, kept only for frame threads (main threads, RenderThreads).
        self.hist_t: array[int] | None = None
        self.hist_s: array[int] | None = None
        self.binder_call: tuple[int, int] | None = None  # (binder tid, since)
        self.binder_waits: list[tuple[int, int]] = []
        self.binder_slices: list[tuple[int, int]] = []


def _critical_path(root: _Slice) -> list[tuple[int, str, int, int]]:
    """(depth, name, dur_ns, self_ns) from ``root`` down the longest child at each level."""
    rows = []
    node: _Slice | None = root
    depth = 0
    while node is not None:
        dur = node.end - node.start
        kids = node.children or []
        rows.append((depth, node.name, dur, max(0, dur - sum(k.end - k.start for k in kids))))
        best: _Slice | None = None
        for kid in kids:
            if best is None or kid.end - kid.start > best.end - best.start:
                best = kid
        node, depth = best, depth + 1
    return rows


class _Parser:
    """Feeds on trace lines in file order; :meth:`finish` builds the tables."""

    def __init__(
        self, source: str, skip_bad_lines: bool, roles: tuple[tuple[int, ...], tuple[int, ...]]
    ) -> None:
        self.source = source
        self.skip_bad_lines = skip_bad_lines
        self.stats = ParseStats()
        self.threads: dict[int, _Thread] = {}
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
        self.cpu_last: dict[int, int] = {}
        # LITTLE saturation.
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
        # Frames, compositions, counters, async slices.
        self.frames: list[_Frame] = []
        self.current_frame: dict[int, _Frame] = {}
        self.comps: list[tuple[int, int, int, int]] = []
        self.counters: dict[tuple[int, str], list[float]] = {}
        self.async_open: dict[tuple[int, str, str], int] = {}
        self.async_done: dict[tuple[int, str], list[int]] = {}

    # -- entry ----------------------------------------------------------------------------

    def run(self, lines: Iterable[tuple[int, str | None]], tick: Callable[[], None]) -> None:
        match = _HEADER.match
        stats = self.stats
        cpu_last = self.cpu_last
        skipped = stats.skipped_events
        n = 0
        for lineno, line in lines:
            n += 1
            if n & 0xFFFF == 0:
                tick()
            if line is None:
                stats.overlong_lines += 1
                self._bad(lineno, f"a line over {MAX_LINE_CHARS} characters")
                continue
            m = match(line)
            if m is None:
                self._other_line(line, lineno)
                continue
            comm, tid_s, tgid_s, cpu_s, sec, frac, event, body = m.groups()
            cpu = int(cpu_s)
            t = int(sec) * 1_000_000_000 + int(frac) * _FRAC_SCALE[len(frac)]
            stats.events += 1
            if self.t_first < 0:
                self.t_first = t
            if t > self.t_last:
                self.t_last = t
            last = cpu_last.get(cpu)
            if last is not None and t < last:
                stats.backwards_ts += 1
            cpu_last[cpu] = t
            if event == "sched_switch":
                self._switch(cpu, t, body, lineno, tgid_s)
            elif event == "sched_wakeup" or event == "sched_waking" or event == "sched_wakeup_new":
                if event == "sched_waking":
                    self.waking_seen = True
                    self._wakeup(int(tid_s), t, body, lineno, True)
                else:
                    self._wakeup(int(tid_s), t, body, lineno, not self.waking_seen)
            elif event == "tracing_mark_write":
                self._mark(int(tid_s), comm, tgid_s, t, body, lineno)
            elif event in skipped:
                skipped[event] += 1
            else:
                self._skip_event(event)
        stats.lines = n

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
        return th

    def _record(self, th: _Thread, t: int) -> None:
        """Start keeping ``th``'s state history (it draws frames)."""
        if th.hist_t is None:
            th.hist_t = array("q", [t])
            th.hist_s = array("b", [th.state if th.state >= 0 else _UNKNOWN])

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

    def _switch(self, cpu: int, t: int, body: str, lineno: int, tgid_s: str | None) -> None:
        m = _SWITCH.match(body)
        if m is None:
            self._bad(lineno, "sched_switch: prev_comm= prev_pid= prev_prio= prev_state= ==> "
                      "next_comm= next_pid= next_prio=")  # fmt: skip
            return
        prev_comm, prev_s, prev_state, next_comm, next_s = m.groups()
        prev, nxt = int(prev_s), int(next_s)
        pending = self.pending_cpu.pop(cpu, None)
        if pending is not None:
            self.p_run[pending[0]] = max(0, t - pending[1])
        if prev != 0:
            th = self._thread(prev, prev_comm)
            th.comm = prev_comm
            if tgid_s is not None and tgid_s[0] != "-":
                th.tgid = int(tgid_s)  # the line's task is prev
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
            th = self._thread(nxt, next_comm)
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
            self.sat_on = on

    def _wakeup(self, waker: int, t: int, body: str, lineno: int, context: bool) -> None:
        m = _WAKEUP.match(body)
        if m is None:
            self._bad(lineno, "sched_wakeup: comm= pid= prio= [target_cpu=]")
            return
        comm, pid_s = m.groups()
        tid = int(pid_s)
        if tid == 0:
            return
        th = self._thread(tid, comm)
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

    def _mark(
        self, tid: int, comm: str, tgid_s: str | None, t: int, body: str, lineno: int
    ) -> None:
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
            pid = _marker_pid(parts)
            if pid < 0 or len(parts) < 3:
                self._bad(lineno, "a tracing_mark_write B|pid|name")
                return
            self._begin(tid, comm, pid, parts[2], t)
        elif kind == "C":
            parts = body.split("|", 4)
            pid = _marker_pid(parts)
            value = _number(parts[3]) if len(parts) >= 4 else None
            if pid < 0 or value is None:
                self._bad(lineno, "a tracing_mark_write C|pid|name|value (a number)")
                return
            self._counter(pid, parts[2], value)
        else:
            head, _, cookie = body.rpartition("|")
            parts = head.split("|", 2)
            pid = _marker_pid(parts)
            if pid < 0 or len(parts) < 3 or not cookie.strip().lstrip("-").isdigit():
                self._bad(lineno, f"a tracing_mark_write {kind}|pid|name|cookie")
                return
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
        if _is_root(name, ("Choreographer#doFrame",)):
            node.kind = _ROOT_DOFRAME
            frame = _Frame(pid, th.tid, t)
            self.frames.append(frame)
            self.current_frame[pid] = frame
            node.frame = frame
            self._record(th, t)
        elif _is_root(name, ("DrawFrame", "DrawFrames")):
            node.kind = _ROOT_DRAW
            frame_or_none = self.current_frame.get(pid)
            if frame_or_none is not None and frame_or_none.render_tid < 0:
                frame_or_none.render_tid = th.tid
                frame_or_none.draw_start = t
                node.frame = frame_or_none
            else:
                self.stats.unassigned_drawframes += 1
            self._record(th, t)
        elif _is_root(name, ("onMessageReceived", "composite", "handleMessageRefresh")):
            node.kind = _ROOT_SF
        else:
            return
        node.children = []
        th.nodes = 0

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
        if kind == _ROOT_DOFRAME and node.frame is not None:
            node.frame.doframe_end = node.end
            node.frame.main_path = _critical_path(node)
        elif kind == _ROOT_DRAW and node.frame is not None:
            node.frame.draw_end = node.end
            node.frame.render_path = _critical_path(node)
        elif kind == _ROOT_SF:
            self.comps.append((th.tgid, th.tid, node.start, node.end))
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

    # -- tables ---------------------------------------------------------------------------

    def finish(self) -> SystraceTrace:
        end = self.t_last
        for th in self.threads.values():
            if th.state >= 0 and end > th.since:
                th.acc[th.state] += end - th.since
            th.since = max(th.since, end)
            self.stats.unterminated_slices += len(th.stack) + th.overflow
        for cpu, cur in self.cpu_cur.items():
            if cur != 0:
                self.cpu_busy[cpu] += max(0, end - self.cpu_since[cpu])
        if self.role:
            self.stats.unseen_mapped_cpus = sorted(set(self.role) - set(self.cpu_cur))
            self.stats.unmapped_cpus = sorted(set(self.cpu_cur) - set(self.role))
        saturated_ns: int | None = None
        if self.track_saturation:
            if self.sat_on and end > self.sat_since:
                self.sat_start.append(self.sat_since)
                self.sat_end.append(end)
            saturated_ns = int(sum(self.sat_end) - sum(self.sat_start))
        frames, path = self._frames_table()
        return SystraceTrace(
            source=self.source,
            stats=self.stats,
            start_ns=self.t_first,
            end_ns=end,
            threads=self._threads_table(),
            preemptions=pd.DataFrame(
                {
                    "time_ns": np.frombuffer(self.p_time, dtype=np.int64),
                    "core": np.frombuffer(self.p_cpu, dtype=np.int64),
                    "victim_tid": np.frombuffer(self.p_victim, dtype=np.int64),
                    "preemptor_tid": np.frombuffer(self.p_preemptor, dtype=np.int64),
                    "victim_wait_ns": np.frombuffer(self.p_wait, dtype=np.int64),
                    "preemptor_run_ns": np.frombuffer(self.p_run, dtype=np.int64),
                }
            ).copy(),
            frames=frames,
            critical_path=path,
            compositions=pd.DataFrame(
                self.comps, columns=["pid", "tid", "start_ns", "end_ns"], dtype=np.int64
            ).assign(dur_ms=lambda d: (d["end_ns"] - d["start_ns"]) / 1e6),
            cpus=self._cpus_table(),
            counters=pd.DataFrame(
                [(p, n, int(c[0]), c[1], c[2], c[3]) for (p, n), c in self.counters.items()],
                columns=["pid", "name", "samples", "min", "max", "last"],
            ),
            async_slices=pd.DataFrame(
                [(p, n, *d) for (p, n), d in self.async_done.items()],
                columns=["pid", "name", "count", "total_ns", "max_ns"],
            ),
            little_cpus=self.little,
            big_cpus=self.big,
            saturated_ns=saturated_ns,
        )

    def _process_name(self, tgid: int) -> str:
        main = self.threads.get(tgid)
        return main.comm if main is not None and tgid > 0 else ""

    def _threads_table(self) -> pd.DataFrame:
        rows = [
            (th.tid, th.comm, th.tgid, self._process_name(th.tgid), *th.acc)
            for th in self.threads.values()
        ]
        table = pd.DataFrame(rows, columns=["tid", "thread", "tgid", "process", *THREAD_COLUMNS])
        for column in ("tid", "tgid", *THREAD_COLUMNS):
            table[column] = table[column].astype(np.int64)
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

    def _frames_table(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        done = []
        for f in self.frames:
            if f.doframe_end < 0 or (f.render_tid >= 0 and f.draw_end < 0):
                self.stats.incomplete_frames += 1
            else:
                done.append(f)
        start = np.array([f.start for f in done], dtype=np.int64)
        end = np.array(
            [f.draw_end if f.render_tid >= 0 else f.doframe_end for f in done], dtype=np.int64
        )
        main = np.array([f.main_tid for f in done], dtype=np.int64)
        render = np.array([f.render_tid for f in done], dtype=np.int64)
        delay = np.zeros(len(done), dtype=np.int64)
        io_ns = np.zeros(len(done), dtype=np.int64)
        binder = np.zeros(len(done), dtype=np.int64)
        for tids in (main, render):
            for tid in np.unique(tids):
                th = self.threads.get(int(tid))
                if th is None or th.hist_t is None:
                    continue
                sel = tids == tid
                a, b = start[sel], end[sel]
                times = np.frombuffer(th.hist_t, dtype=np.int64)
                states = np.frombuffer(th.hist_s, dtype=np.int8)  # type: ignore[arg-type]
                delay[sel] += _state_overlap(times, states, (_RUNNABLE, _PREEMPTED), a, b)
                io_ns[sel] += _state_overlap(times, states, (_IO,), a, b)
                binder[sel] += np.maximum(
                    _interval_overlap(th.binder_slices, a, b),
                    _interval_overlap(th.binder_waits, a, b),
                )
        dur = end - start
        table = pd.DataFrame(
            {
                "pid": np.array([f.pid for f in done], dtype=np.int64),
                "process": [self._process_name(f.pid) for f in done],
                "frame": np.arange(len(done), dtype=np.int64),
                "main_tid": main,
                "render_tid": render,
                "start_ns": start,
                "end_ns": end,
                "dur_ns": dur,
                "dur_ms": dur / 1e6,
                "doframe_ms": np.array([f.doframe_end - f.start for f in done]) / 1e6,
                "drawframe_ms": np.array(
                    [f.draw_end - f.draw_start if f.render_tid >= 0 else np.nan for f in done],
                    dtype=np.float64,
                )
                / 1e6,
                "composite_ms": self._composite_ms(end),
                "slow": slow_mask(dur),
                "frozen": frozen_mask(dur),
                "sched_delay_ns": delay,
                "io_ns": io_ns,
                "binder_ns": binder,
            }
        )
        if self.track_saturation:
            sat = _interval_overlap(
                list(zip(self.sat_start, self.sat_end, strict=True)), start, end
            )
            table["little_saturated_ns"] = sat
            share = np.where(dur > 0, sat / np.maximum(dur, 1), 0.0)
            table["little_saturated"] = share >= SATURATED_FRAME_FRACTION
        table["critical_path"] = [
            " > ".join(r[1] for r in f.main_path)
            + (" | " + " > ".join(r[1] for r in f.render_path) if f.render_path else "")
            for f in done
        ]
        path_rows = [
            (i, f.pid, stage, depth, name, dur_ns, self_ns)
            for i, f in enumerate(done)
            for stage, rows in (("main", f.main_path), ("render", f.render_path))
            for depth, name, dur_ns, self_ns in rows
        ]
        path = pd.DataFrame(
            path_rows, columns=["frame", "pid", "stage", "depth", "name", "dur_ns", "self_ns"]
        )
        return table, path

    def _composite_ms(self, frame_end: IntArray) -> FloatArray:
        out = np.full(len(frame_end), np.nan)
        if not self.comps or not len(frame_end):
            return out
        comps = sorted(self.comps, key=lambda c: c[2])
        starts = np.array([c[2] for c in comps], dtype=np.int64)
        durs = np.array([c[3] - c[2] for c in comps], dtype=np.float64) / 1e6
        j = np.searchsorted(starts, frame_end, side="left")
        ok = j < len(starts)
        jj = np.minimum(j, len(starts) - 1)
        ok &= starts[jj] - frame_end <= COMPOSE_WINDOW_NS
        out[ok] = durs[jj[ok]]
        return out


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


def _parse_stream(
    text: IO[str],
    source: str,
    clusters: Mapping[int, str] | None,
    skip_bad_lines: bool,
    tick: Callable[[], None],
) -> SystraceTrace:
    parser = _Parser(source, skip_bad_lines, cluster_roles(clusters))
    parser.run(_trace_lines(text, parser.stats), tick)
    if parser.stats.events == 0:
        hint = ""
        if parser.stats.html_json_blocks and not parser.stats.html_text_blocks:
            hint = " (this HTML holds only JSON trace data; only text ftrace is read)"
        elif parser.stats.json_input:
            hint = " (this looks like a JSON trace; only text ftrace is read)"
        elif parser.stats.binary_lines:
            hint = " (the file looks binary: a Perfetto protobuf trace needs `traceconv systrace`)"
        elif parser.stats.bad_lines:
            hint = f" ({parser.stats.bad_lines} bad lines were skipped)"
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
    return _parse_stream(io.StringIO(text), source, clusters, skip_bad_lines, lambda: None)


def load_systrace(
    path: str | Path,
    *,
    clusters: Mapping[int, str] | None = None,
    skip_bad_lines: bool = False,
    progress: Callable[[float], None] | None = None,
) -> SystraceTrace:
    """Parse one ftrace/atrace text, gzip or systrace HTML file, streaming it.

    ``clusters`` maps CPU → cluster name for the LITTLE-saturation measure;
    ``progress`` is called with the fraction of the file read. Raises
    :class:`InputFileError` (file:line) on bad input.
    """
    path = Path(path)
    if path.is_dir():
        raise InputFileError(path, "is a folder; expected a trace file")
    text, raw, size = _open(path)

    def tick() -> None:
        if progress is not None and size > 0:
            progress(min(1.0, raw.tell() / size))

    try:
        with text:
            return _parse_stream(text, str(path), clusters, skip_bad_lines, tick)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputFileError(path, f"corrupt or truncated compressed data ({exc})") from None
    except OSError as exc:
        raise InputFileError(path, f"cannot read the file: {exc.strerror or exc}") from None


# -- analysis -----------------------------------------------------------------------------


@dataclass
class SystraceReport:
    """Tables over one or more traces; each has a ``trace`` column (the file)."""

    traces: list[SystraceTrace]
    tables: dict[str, pd.DataFrame]


def _tagged(trace: SystraceTrace, frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame.insert(0, "trace", trace.source)
    return frame


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f.columns)]
    nonempty = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    return pd.concat(nonempty or frames[:1], ignore_index=True)


CAUSES = ("binder", "io", "sched_delay")


def slow_frame_correlation(frames: pd.DataFrame) -> pd.DataFrame:
    """Per process and cause: mean time per slow (SR or FF) frame vs per normal frame.

    Causes: ``binder``, ``io``, ``sched_delay`` and, when the trace had a cluster map,
    ``little_saturated``; ``ratio`` = slow mean / normal mean (inf when normal is 0).
    """
    columns = ["pid", "process", "cause", "slow_frames", "normal_frames",
               "slow_mean_ms", "normal_mean_ms", "ratio"]  # fmt: skip
    rows = []
    causes = [c for c in (*CAUSES, "little_saturated") if c + "_ns" in frames.columns]
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
    """The report tables: thread_states (:func:`mqoe.metrics.sched.thread_states`),
    preemptions, preemption_summary (:func:`mqoe.metrics.sched.preemption_summary`),
    frames, frame_summary, critical_path, correlation, saturation, cpus, compositions."""
    tables: dict[str, list[pd.DataFrame]] = {k: [] for k in (
        "thread_states", "preemptions", "preemption_summary", "frames", "frame_summary",
        "critical_path", "correlation", "saturation", "cpus", "compositions")}  # fmt: skip
    for tr in traces:
        states = thread_states(tr.threads)
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


# -- a synthetic trace with ground truth --------------------------------------------------

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
        self.emit(th.spec.tid, th.cpu, "tracing_mark_write", text, "...1")
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

    def main(th: _SimThread) -> _Program:
        k = 0
        while True:
            vsync = (sim.now // _VSYNC_US + 1) * _VSYNC_US
            yield ("block", "S", vsync - sim.now, None)
            yield b(app, "Choreographer#doFrame", ("frame_start", k))
            yield b(app, "traversal")
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
    sim.add(_Spec(app, app, "com.example.app", 110, 2, every), main)
    sim.add(_Spec(rt_tid, app, "RenderThread", 110, 2, every), render)
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
    main, rt = sim.threads[2300], sim.threads[2345]
    ends = by.get("binder_end", {})
    calls = sorted((t, ends[k]) for k, t in by.get("binder_start", {}).items() if k in ends)
    frames = []
    for k, a in sorted(by.get("frame_start", {}).items()):
        b = by.get("frame_end", {}).get(k)
        if b is None or k not in by.get("doframe_end", {}):
            continue
        delay = sum(_log_overlap(x.log, end, a, b, ("R", "P")) for x in (main, rt))
        io_us = sum(_log_overlap(x.log, end, a, b, ("D",)) for x in (main, rt))
        binder_us = _span_overlap(calls if slices else main.binder_waits, a, b)
        frames.append(
            (2300, 2300, 2345, (base + a) * ns, (base + b) * ns, (b - a) * ns, delay * ns,
             io_us * ns, binder_us * ns, _span_overlap(sim.sat, a, b) * ns)
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
