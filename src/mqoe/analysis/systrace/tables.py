"""The tables of a finished trace (:class:`_Tables`): threads, CPUs, compositions,
frames and critical paths, as tidy DataFrames."""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.systrace.frames import _Frames
from mqoe.analysis.systrace.model import (
    COMPOSE_WINDOW_NS,
    SATURATED_FRAME_FRACTION,
    THREAD_COLUMNS,
    UNKNOWN_COMM,
    FloatArray,
    IntArray,
    SystraceTrace,
)
from mqoe.analysis.systrace.state import _DTYPES, _ROOT_TRAVERSAL, _UNKNOWN
from mqoe.metrics.jank import frozen_mask, slow_mask


class _Tables(_Frames):
    """The tables of a finished trace (:meth:`finish`)."""

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
