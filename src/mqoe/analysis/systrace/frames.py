"""Trace markers and frames (:class:`_Frames`): ``B``/``E`` slices, frame roots by
Android release, counters and async slices; complete frames get their critical path
and causes and are written as rows, then state histories are pruned."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mqoe.analysis.systrace.model import (
    MAX_KEYS,
    MAX_OPEN_FRAME_NS,
    MAX_SLICE_DEPTH,
    MAX_TREE_NODES,
    IntArray,
)
from mqoe.analysis.systrace.state import (
    _DTYPES,
    _IO,
    _MAIN,
    _PREEMPTED,
    _RENDER,
    _ROOT_DOFRAME,
    _ROOT_DRAW,
    _ROOT_SF,
    _ROOT_TRAVERSAL,
    _RUNNABLE,
    _UNCOLLECTED,
    _Frame,
    _Slice,
    _State,
    _Thread,
)

_VSYNC_SUFFIX = re.compile(r"(.*\S) (\d{1,18})")
_BINDER_SLICES = ("binder transaction", "binder reply")
_DOFRAME = ("Choreographer#doFrame",)
_DRAWFRAME = ("DrawFrame", "DrawFrames")
_TRAVERSAL = ("performTraversals",)
_COMPOSITION = ("onMessageReceived", "composite", "handleMessageRefresh")


def _is_root(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + " ") for p in prefixes)


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


class _Frames(_State):
    """Trace markers (slices, frames, counters, async slices), and frames written as
    they complete."""

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
