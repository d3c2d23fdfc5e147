"""Root causes of slow and frozen frames (the responsiveness study's rendering findings,
MobiCom 2020), from per-frame records.

The study sorts SR/FF events into three classes: complex UI / heavy rendering work, slow
I/O and Binder transactions, and long CPU scheduling delay. Given a frame table (the
simulator's :meth:`mqoe.apps.ui.UiApp.frames`, or any table with the same columns), each
slow frame gets the class whose time dominates it:

* ``ui_complex`` — the render stages' own CPU work: ``main_running_ns +
  render_running_ns`` (measure/layout/inflation on the main thread, drawing on the
  RenderThread);
* ``io_binder`` — ``binder_ns + io_ns``: the main thread waiting for a Binder reply or
  a storage read;
* ``sched_delay`` — ``main_runnable_ns + render_runnable_ns`` (the frame's threads
  ready but without a core) plus, when the RenderThread waited for a buffer, the part of
  that wait SurfaceFlinger itself spent runnable (``min(dequeue_wait_ns,
  sf_delay_ns)``; both columns optional).

Ties go to the earlier class in :data:`CAUSES`. A frame whose own three components are
all smaller than the time it spent waiting for the frames before it (its late start,
``main_start_ns − intended_vsync_ns``, plus its sync and buffer waits) was slow because
of them: it **inherits** the class of the previous slow frame of the same app when
there is one (how one FF drags the SRs after it). Two flags are passed through:
``little_saturated`` (every LITTLE core busy during the frame) and ``ruir`` (the app had
redundant layers); missing columns read as False.

Temporal clustering: per app, in intended-V-Sync order, each slow frame's gap to the
previous slow frame in frames (``gap_frames``, 1 = adjacent) and ms (``gap_ms``, start
to start; NaN for an app's first).

Pure pandas/numpy: shared by simulated runs and real traces, never imports the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from mqoe.metrics.jank import frozen_mask, slow_mask

CAUSES: tuple[str, ...] = ("ui_complex", "io_binder", "sched_delay")
SEVERE_SLOW_NS = 400_000_000  # severe SR: > 400 ms (responsiveness study's RUIR results)
REQUIRED = (
    "intended_vsync_ns",
    "duration_ns",
    "main_running_ns",
    "render_running_ns",
    "binder_ns",
    "io_ns",
    "main_runnable_ns",
    "render_runnable_ns",
)
CAUSE_COLUMNS = (
    "app",
    "frame",
    "intended_vsync_ns",
    "duration_ns",
    "kind",
    "cause",
    "inherited",
    "ui_ns",
    "io_binder_ns",
    "sched_ns",
    "waited_ns",
    "little_saturated",
    "ruir",
    "gap_frames",
    "gap_ms",
)


def _column(frames: pd.DataFrame, name: str, default: float | bool | str = 0) -> pd.Series:
    if name in frames:
        return frames[name]
    return pd.Series(default, index=frames.index)


def _flag(frames: pd.DataFrame, name: str) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """A boolean column; missing column or missing values read as False."""
    if name not in frames:
        return np.zeros(len(frames), dtype=np.bool_)
    return frames[name].fillna(False).to_numpy(np.bool_)


def attribute_causes(frames: pd.DataFrame, *, buffer_aware: bool = True) -> pd.DataFrame:
    """One row per slow frame (SR or FF) with its cause (module docstring).

    ``buffer_aware``: skip slow frames a ready buffer hid (column ``ready_buffer``, if
    present); False attributes every long frame. Columns: :data:`CAUSE_COLUMNS`."""
    missing = [c for c in REQUIRED if c not in frames]
    if missing:
        raise ValueError(f"frame table lacks columns: {', '.join(missing)}")
    duration = frames["duration_ns"].to_numpy(np.int64)
    sr, ff = slow_mask(duration), frozen_mask(duration)
    app = _column(frames, "app", "").astype(str).to_numpy()
    if "frame" in frames:
        index = frames["frame"].to_numpy(np.int64)
    else:
        index = np.arange(len(frames), dtype=np.int64)
    order = np.lexsort((frames["intended_vsync_ns"].to_numpy(np.int64), app))
    ui = (frames["main_running_ns"] + frames["render_running_ns"]).to_numpy(np.int64)
    io = (frames["binder_ns"] + frames["io_ns"]).to_numpy(np.int64)
    dequeue = _column(frames, "dequeue_wait_ns").to_numpy(np.int64)
    sf = np.minimum(dequeue, _column(frames, "sf_delay_ns").to_numpy(np.int64))
    sched = (frames["main_runnable_ns"] + frames["render_runnable_ns"]).to_numpy(np.int64) + sf
    late = np.zeros(len(frames), dtype=np.int64)
    if "main_start_ns" in frames:
        late = frames["main_start_ns"].to_numpy(np.int64) - frames["intended_vsync_ns"].to_numpy(
            np.int64
        )
    waited = late + _column(frames, "sync_wait_ns").to_numpy(np.int64) + dequeue - sf
    own = np.argmax(np.stack([ui, io, sched]), axis=0)  # first maximum on ties
    dominated = waited > np.maximum(np.maximum(ui, io), sched)
    hidden = _flag(frames, "ready_buffer") if buffer_aware else np.zeros(len(frames), np.bool_)
    slow = (sr | ff) & ~hidden
    rows = order[slow[order]]
    cause = own[rows].copy()
    inherited = np.zeros(len(rows), dtype=np.bool_)
    start = frames["intended_vsync_ns"].to_numpy(np.int64)
    gap_frames = np.full(len(rows), np.nan)
    gap_ms = np.full(len(rows), np.nan)
    rank = np.empty(len(frames), dtype=np.int64)
    rank[order] = np.arange(len(order))
    for k in range(1, len(rows)):  # slow frames only: a short loop
        prev, cur = rows[k - 1], rows[k]
        if app[prev] != app[cur]:
            continue
        gap_frames[k] = rank[cur] - rank[prev]
        gap_ms[k] = (start[cur] - start[prev]) / 1e6
        if dominated[cur]:
            cause[k] = cause[k - 1]
            inherited[k] = True
    return pd.DataFrame(
        {
            "app": app[rows],
            "frame": index[rows],
            "intended_vsync_ns": start[rows],
            "duration_ns": duration[rows],
            "kind": np.where(ff[rows], "ff", "sr"),
            "cause": np.asarray(CAUSES, dtype=object)[cause],
            "inherited": inherited,
            "ui_ns": ui[rows],
            "io_binder_ns": io[rows],
            "sched_ns": sched[rows],
            "waited_ns": waited[rows],
            "little_saturated": _flag(frames, "little_saturated")[rows],
            "ruir": _flag(frames, "ruir")[rows],
            "gap_frames": gap_frames,
            "gap_ms": gap_ms,
        },
        columns=list(CAUSE_COLUMNS),
    )


def cause_shares(causes: pd.DataFrame) -> dict[str, float]:
    """Share of slow frames per cause (NaN when there are none), plus the share of
    ``ui_complex`` frames on apps with redundant layers and the LITTLE-saturated share."""
    n = len(causes)
    out: dict[str, float] = {}
    for cause in CAUSES:
        out[cause] = float((causes["cause"] == cause).sum() / n) if n else float("nan")
    ui = causes[causes["cause"] == "ui_complex"]
    out["ui_complex_ruir"] = float(ui["ruir"].mean()) if len(ui) else float("nan")
    out["little_saturated"] = float(causes["little_saturated"].mean()) if n else float("nan")
    return out


def clustering(causes: pd.DataFrame, near_frames: int = 5) -> Mapping[str, float]:
    """How clustered slow frames are: the median gap (frames, ms) to the previous slow
    frame, the share within ``near_frames`` of it, and the share of FFs followed by an
    SR within ``near_frames`` (the responsiveness study: an FF is usually followed
    by SRs)."""
    gaps = causes["gap_frames"].dropna()
    near = float((gaps <= near_frames).mean()) if len(gaps) else float("nan")
    kinds = causes["kind"].to_numpy()
    nxt_gap = causes["gap_frames"].to_numpy()[1:]
    same_app = causes["app"].to_numpy()[1:] == causes["app"].to_numpy()[:-1]
    ff = kinds[:-1] == "ff"
    followed = ff & same_app & (kinds[1:] == "sr") & (nxt_gap <= near_frames)
    n_ff = int((kinds == "ff").sum())
    return {
        "median_gap_frames": float(gaps.median()) if len(gaps) else float("nan"),
        "median_gap_ms": float(causes["gap_ms"].dropna().median()) if len(gaps) else float("nan"),
        "near_share": near,
        "ff_followed_by_sr": float(followed.sum() / n_ff) if n_ff else float("nan"),
    }


def severe_slow(frames: pd.DataFrame, *, buffer_aware: bool = True) -> int:
    """SR frames over 400 ms (severe SR), not counting hidden ones when ``buffer_aware``."""
    duration = frames["duration_ns"].to_numpy(np.int64)
    severe = slow_mask(duration) & (duration > SEVERE_SLOW_NS)
    if buffer_aware:
        severe &= ~_flag(frames, "ready_buffer")
    return int(severe.sum())
