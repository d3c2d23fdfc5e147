"""Video-session QoE from a per-segment table, shared by simulated runs and real logs.

Input: one row per downloaded segment, in playback order, with columns ``segment``,
``bitrate_kbps``, ``download_start_s``, ``download_end_s``, ``rebuffer_s`` (stall time
while that segment downloaded, *after* playback had started — the startup wait is not a
stall) and ``buffer_after_s``.

Definitions (all segments have the same media duration, so the time-weighted mean
bitrate is the plain mean):

* ``startup_delay_s`` — from the first request to the end of the download that starts
  playback (segment ``startup_segments − 1``); reported apart from stalls.
* ``rebuffer_s``, ``rebuffer_count`` (segments during whose download playback stalled:
  a stall ends when a segment arrives, so each is a separate event) and
  ``rebuffer_ratio = rebuffer_s / session_s``.
* ``switch_count`` — consecutive segments at different bitrates;
  ``mean_abs_bitrate_change_kbps`` — mean of |R_{k+1} − R_k| over all consecutive pairs
  (the per-step smoothness penalty, 0 for a single segment).
* QoE of Yin et al., SIGCOMM 2015 (MPC), with the weights Pensieve (SIGCOMM 2017) used:
  ``QoE = Σ q(R_k) − λ·Σ rebuffer − μ·Σ |q(R_{k+1}) − q(R_k)|`` with

  - ``qoe_lin``: q(R) = R in Mbit/s, λ = 4.3, μ = 1;
  - ``qoe_log``: q(R) = ln(R / R_min), λ = 2.66, μ = 1, R_min the ladder's lowest rate.

  The startup term of MPC (μ_s·T_s) is left out, as in Pensieve's comparison; the
  startup delay is its own metric. ``*_per_segment`` divides the session total by the
  number of segments (Pensieve's "average QoE per chunk").

:func:`qoe_summary` reads a DataFrame; :func:`qoe_summary_columns` gives the same
metrics, bit for bit, from the columns as arrays or lists (no pandas: the trace-driven
mode's whole run costs less than importing it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pandas as pd

# Yin et al. 2015 / Mao et al. 2017 (Pensieve) QoE weights.
LIN_REBUFFER_PENALTY = 4.3  # λ for q(R) = R in Mbit/s: the top rate of their 4.3 Mbit/s ladder
LOG_REBUFFER_PENALTY = 2.66  # λ for q(R) = ln(R / R_min)
SMOOTHNESS_PENALTY = 1.0  # μ in both

SEGMENT_COLUMNS = (
    "segment",
    "bitrate_kbps",
    "download_start_s",
    "download_end_s",
    "rebuffer_s",
    "buffer_after_s",
)


def qoe_summary(
    segments: pd.DataFrame,
    session_s: float,
    *,
    min_bitrate_kbps: float | None = None,
    startup_segments: int = 1,
) -> dict[str, float]:
    """Summarise one session (see the module docstring for every definition).

    ``session_s`` — the watch time the rebuffer ratio is relative to, seconds;
    ``min_bitrate_kbps`` — R_min of the log QoE (default: the lowest bitrate in the
    table, for real logs without a ladder); ``startup_segments`` — how many segments
    were buffered before playback began.
    """
    missing = [c for c in SEGMENT_COLUMNS if c not in segments.columns]
    if missing:
        raise ValueError(f"segment table lacks columns {missing}")
    return _summary(
        segments["bitrate_kbps"].to_numpy(dtype=np.float64),
        float(segments["rebuffer_s"].sum()),
        float((segments["rebuffer_s"].to_numpy() > 0).sum()),
        _startup_delay_s(segments, startup_segments),
        session_s,
        min_bitrate_kbps,
    )


def qoe_summary_columns(
    bitrate_kbps: Sequence[float] | npt.NDArray[np.float64],
    rebuffer_s: Sequence[float] | npt.NDArray[np.float64],
    download_start_s: Sequence[float] | npt.NDArray[np.float64],
    download_end_s: Sequence[float] | npt.NDArray[np.float64],
    session_s: float,
    *,
    min_bitrate_kbps: float | None = None,
    startup_segments: int = 1,
) -> dict[str, float]:
    """:func:`qoe_summary` of the table with these columns (one item per segment, in
    playback order), without building it: the same metrics, bit for bit."""
    rebuffers = np.asarray(rebuffer_s, dtype=np.float64)
    n = len(rebuffers)
    if not len(bitrate_kbps) == len(download_start_s) == len(download_end_s) == n:
        raise ValueError("segment columns have different lengths")
    if n:
        index = min(max(startup_segments, 1), n) - 1
        startup = float(download_end_s[index]) - float(download_start_s[0])
    else:
        startup = math.nan
    return _summary(
        np.asarray(bitrate_kbps, dtype=np.float64),
        float(np.nansum(rebuffers)),  # as pandas' sum: NaN skipped
        float((rebuffers > 0).sum()),
        startup,
        session_s,
        min_bitrate_kbps,
    )


def _summary(
    rates: npt.NDArray[np.float64],
    rebuffer: float,
    stalls: float,
    startup_delay_s: float,
    session_s: float,
    min_bitrate_kbps: float | None,
) -> dict[str, float]:
    n = len(rates)
    steps_kbps = np.abs(np.diff(rates))
    out = {
        "segments": float(n),
        "mean_bitrate_kbps": float(rates.mean()) if n else math.nan,
        "rebuffer_s": rebuffer,
        "rebuffer_count": stalls,
        "rebuffer_ratio": float(rebuffer / session_s) if session_s > 0 else math.nan,
        "switch_count": float((steps_kbps > 0).sum()),
        "mean_abs_bitrate_change_kbps": float(steps_kbps.mean()) if n > 1 else 0.0,
        "startup_delay_s": startup_delay_s,
    }
    r_min = min_bitrate_kbps if min_bitrate_kbps is not None else (rates.min() if n else 1.0)
    lin = _qoe(rates / 1000.0, rebuffer, LIN_REBUFFER_PENALTY)
    log = _qoe(np.log(rates / r_min), rebuffer, LOG_REBUFFER_PENALTY)
    out["qoe_lin"] = lin
    out["qoe_log"] = log
    out["qoe_lin_per_segment"] = lin / n if n else math.nan
    out["qoe_log_per_segment"] = log / n if n else math.nan
    return out


def _qoe(quality: np.ndarray, rebuffer_s: float, rebuffer_penalty: float) -> float:
    """Σ q − λ·rebuffer − μ·Σ|Δq| for one session."""
    smoothness = float(np.abs(np.diff(quality)).sum())
    return float(quality.sum()) - rebuffer_penalty * rebuffer_s - SMOOTHNESS_PENALTY * smoothness


def _startup_delay_s(segments: pd.DataFrame, startup_segments: int) -> float:
    if len(segments) == 0:
        return math.nan
    first = float(segments["download_start_s"].iloc[0])
    index = min(max(startup_segments, 1), len(segments)) - 1
    return float(segments["download_end_s"].iloc[index]) - first
