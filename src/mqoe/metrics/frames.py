"""Frame metrics, shared by simulated runs and real-data analysers.

Frame deadlines (:func:`deadline_summary`): a frame is *due* at every V-Sync whose
deadline (the next V-Sync) falls within the observed window; it is *on time* if its
work ended by that deadline. Frames never started (the thread was still busy at their
V-Sync) and late frames are both misses: ``missed_deadline_rate = 1 − on_time / due``.

Video playback (:func:`playback_summary`): a video frame is *due* at its presentation
time while playback runs; it is *dropped* if it was not shown — decoded too late, or
never decoded — as a player's dropped-frame counter (ExoPlayer's
``DecoderCounters.droppedBufferCount``, dash.js's ``getVideoPlaybackQuality``) counts
it: ``frame_drop_pct = 100 · (1 − shown / due)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def deadline_summary(frames: pd.DataFrame, period_ns: int, window_ns: int) -> dict[str, float]:
    """Summarise frames (columns vsync_ns, end_ns, deadline_ns) over ``[0, window_ns)``."""
    due = window_ns // period_ns
    counted = frames[frames["deadline_ns"] <= window_ns]
    late_mask = counted["end_ns"] > counted["deadline_ns"]
    on_time = int((~late_mask).sum())
    started = len(counted)
    latency_ms = (counted["end_ns"] - counted["vsync_ns"]).to_numpy() / 1e6
    return {
        "frames_due": float(due),
        "frames_on_time": float(on_time),
        "frames_late": float(late_mask.sum()),
        "frames_skipped": float(max(0, due - started)),
        "missed_deadline_rate": 1.0 - on_time / due if due else float("nan"),
        "frame_latency_p50_ms": float(np.percentile(latency_ms, 50)) if started else float("nan"),
        "frame_latency_p95_ms": float(np.percentile(latency_ms, 95)) if started else float("nan"),
    }


def playback_summary(
    frames: pd.DataFrame, due: int, start_ns: int, played_s: float
) -> tuple[dict[str, float], pd.DataFrame]:
    """A video session's frames (columns ``due_ns``, ``shown``; one row per frame the
    player handled) with ``due`` frames due since playback started at ``start_ns`` and
    ``played_s`` seconds of playback: ``frame_drop_pct`` (100 if nothing was due),
    ``rendered_fps`` and a table of frames shown per second of playback
    (``second``, ``rendered_fps``)."""
    shown_mask = frames["shown"].astype(bool)
    shown = int(shown_mask.sum())
    per_second = (
        frames.loc[shown_mask]
        .assign(second=lambda f: (f["due_ns"] - start_ns) // 10**9)
        .groupby("second").size().rename("rendered_fps").reset_index()
    )  # fmt: skip
    metrics = {
        "frame_drop_pct": 100.0 * (1 - shown / due) if due else 100.0,
        "rendered_fps": shown / played_s,
    }
    return metrics, per_second
