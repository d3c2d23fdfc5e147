"""The parser's running state: threads with their state totals (and, for threads that
draw frames, their state history), slices, open frames, the frame rows written so far,
and the helpers every kind of event uses (:class:`_State`)."""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from mqoe.analysis.systrace.model import MAX_KEYS, UNKNOWN_COMM, ParseStats
from mqoe.errors import InputFileError

_RUNNING, _RUNNABLE, _PREEMPTED, _SLEEPING, _IO, _OTHER = range(6)
_UNKNOWN, _DEAD = -1, -2
_ROOT_DOFRAME, _ROOT_DRAW, _ROOT_SF, _ROOT_TRAVERSAL = 1, 2, 3, 4
_UNCOLLECTED = -1
_MAIN, _RENDER = 0, 1


# -- slices, frames, threads -------------------------------------------------------------


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


class _State:
    """What the parser keeps while it reads: threads and their states, preemptions, CPUs,
    LITTLE saturation, frames and their rows, compositions, counters and async slices;
    and the helpers every kind of event uses."""

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


_DTYPES: dict[str, type[np.signedinteger[Any]]] = {
    "q": np.int64, "i": np.int32, "h": np.int16, "b": np.int8,
}  # fmt: skip
