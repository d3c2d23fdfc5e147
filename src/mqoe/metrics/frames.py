"""Frame-deadline metrics, shared by simulated runs and real-data analysers.

Definitions: a frame is *due* at every V-Sync whose deadline (the next V-Sync) falls
within the observed window; it is *on time* if its work ended by that deadline. Frames
never started (the thread was still busy at their V-Sync) and late frames are both
misses: ``missed_deadline_rate = 1 − on_time / due``.
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
