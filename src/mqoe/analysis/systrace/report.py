"""What the CLI prints of one or more traces (:func:`analyze`): frame summaries, slow
frames against their causes, LITTLE saturation, the threads to show."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mqoe.analysis.systrace.model import SystraceTrace
from mqoe.errors import UserError
from mqoe.metrics.jank import jank_counts
from mqoe.metrics.sched import preemption_summary, thread_states

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
