"""Slow and frozen frames (the responsiveness study's definitions, MobiCom 2020; Android
vitals), one definition shared by simulated runs and the real-data analysers.

* **SR** (slow rendering): a frame that took more than 16.67 ms and at most 700 ms.
* **FF** (frozen frame): a frame that took more than 700 ms.
  (The two are disjoint: ``sr`` + ``ff`` = frame-dropping events.)
* **Buffer-aware** counting: a slow frame is only visible to the user when the app had
  no ready buffer to show at the V-Sync it missed (with triple buffering a slow frame
  can be hidden by a buffer queued earlier). A naive count ignores that; the difference
  is the naive count's false positives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

SLOW_FRAME_NS = 16_670_000  # > 16.67 ms: one 60 Hz V-Sync period missed
FROZEN_FRAME_NS = 700_000_000  # > 700 ms (Android vitals: frozen frame)

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def slow_mask(durations_ns: npt.ArrayLike) -> BoolArray:
    """Frames in (16.67 ms, 700 ms]."""
    d = np.asarray(durations_ns)
    return (d > SLOW_FRAME_NS) & (d <= FROZEN_FRAME_NS)


def frozen_mask(durations_ns: npt.ArrayLike) -> BoolArray:
    """Frames over 700 ms."""
    return np.asarray(durations_ns) > FROZEN_FRAME_NS


def jank_counts(
    durations_ns: npt.ArrayLike, ready_buffer: npt.ArrayLike | None = None
) -> dict[str, Any]:
    """Frame count, SR and FF counts and rates (percent of frames).

    ``ready_buffer``: per frame, whether the app had a ready buffer queued when the frame
    missed its V-Sync; such frames are not counted (buffer-aware). ``None``: naive count.
    """
    d = np.asarray(durations_ns)
    sr, ff = slow_mask(d), frozen_mask(d)
    if ready_buffer is not None:
        hidden = np.asarray(ready_buffer, dtype=bool)
        if hidden.shape != d.shape:
            raise ValueError("ready_buffer must have one entry per frame")
        sr, ff = sr & ~hidden, ff & ~hidden
    frames = int(d.size)
    n_sr, n_ff = int(sr.sum()), int(ff.sum())
    return {
        "frames": frames,
        "sr": n_sr,
        "ff": n_ff,
        "sr_pct": 100.0 * n_sr / frames if frames else float("nan"),
        "ff_pct": 100.0 * n_ff / frames if frames else float("nan"),
    }
