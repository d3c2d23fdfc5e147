"""Per-phone statistics of the memory-pressure study (Coal Not Diamonds, CoNEXT 2022): the
timeline of states (gaps over ``max_gap_s`` are unknown), time per state, and one row per
phone (:data:`PHONE_COLUMNS`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mqoe.analysis.memlog.model import (
    _STATE_OF_LEVEL,
    STATES,
    BoolArray,
    FloatArray,
    IntArray,
    PhoneLog,
)

# -- per-phone statistics -----------------------------------------------------------------


@dataclass(frozen=True)
class _Timeline:
    """A phone's sample intervals and state runs, in seconds from its first record."""

    start_s: FloatArray  # per sample
    cover_s: FloatArray  # the time each sample stands for
    run_start_s: FloatArray  # per run of T: lines setting one state
    run_state: IntArray  # index into STATES
    censored: BoolArray  # run contains a logger silence > max_gap_s (or is the last)


def _timeline(phone: PhoneLog, max_gap_s: float) -> _Timeline:
    sample_ms = phone.samples["unix_ms"].to_numpy(np.int64)
    trim_ms = phone.trims["unix_ms"].to_numpy(np.int64)
    alive_ms = np.unique(
        np.concatenate([sample_ms, trim_ms, phone.broadcasts["unix_ms"].to_numpy(np.int64)])
    )
    origin = int(alive_ms[0]) if len(alive_ms) else 0
    start = (sample_ms - origin) / 1000.0
    cover = np.append(np.minimum(np.diff(start), max_gap_s), 0.0) if len(start) else start
    levels = phone.trims["level"].to_numpy(np.int64)
    states = _STATE_OF_LEVEL[levels]  # levels were checked to be in TRIM_LEVELS
    first = np.ones(len(states), dtype=np.bool_)
    first[1:] = states[1:] != states[:-1]
    run_start = (trim_ms[first] - origin) / 1000.0
    run_state = states[first]
    alive = (alive_ms - origin) / 1000.0
    silent = np.flatnonzero(np.diff(alive) > max_gap_s)
    gap_from, gap_to = alive[silent], alive[silent + 1]
    censored = np.ones(len(run_start), dtype=np.bool_)  # the last run stays open
    if len(run_start) > 1:
        nxt = np.searchsorted(gap_to, run_start[:-1], side="right")
        inside = nxt < len(gap_to)
        inside[inside] = gap_from[nxt[inside]] < run_start[1:][inside]
        censored[:-1] = inside
    return _Timeline(start, cover, run_start, run_state, censored)


def _state_seconds(timeline: _Timeline, mask: BoolArray) -> FloatArray:
    """Seconds spent in each state within the intervals of the samples in ``mask``."""
    a = timeline.start_s[mask]
    b = a + timeline.cover_s[mask]
    if not len(a):
        return np.zeros(len(STATES))
    origin = min(float(a[0]), float(timeline.run_start_s[0]) if len(timeline.run_start_s) else 0)
    knots = np.concatenate(([origin], timeline.run_start_s))
    state = np.concatenate(([0], timeline.run_state))
    onehot = np.eye(len(STATES))[state]
    cumulative = np.vstack(
        (np.zeros(len(STATES)), np.cumsum(np.diff(knots)[:, None] * onehot[:-1], 0))
    )

    def upto(t: FloatArray) -> FloatArray:  # seconds in each state from ``origin`` to t
        k = np.searchsorted(knots, t, side="right") - 1
        result: FloatArray = cumulative[k] + (t - knots[k])[:, None] * onehot[k]
        return result

    seconds: FloatArray = (upto(b) - upto(a)).sum(axis=0)
    return seconds


PHONE_COLUMNS = (
    "phone", "kept", "drop_reason", "manufacturer", "api", "total_mem_bytes",
    "is_low_ram_device", "n_samples", "logged_h", "interactive_h", "median_utilisation",
    "moderate_per_h", "low_per_h", "critical_per_h", "pressure_per_h", "share_normal",
    "share_moderate", "share_low", "share_critical", "reordered", "duplicates", "truncated",
    "skipped_lines", "unknown_lines",
)  # fmt: skip


def _phone_row(
    phone: PhoneLog,
    timeline: _Timeline,
    state_s: FloatArray,
    over: str,
    min_hours: float,
) -> dict[str, Any]:
    """One row of the ``phones`` table (see :data:`PHONE_COLUMNS`)."""
    screen = phone.samples["screen_on"].to_numpy(np.bool_)
    interactive_s = float(timeline.cover_s[screen].sum())
    hours = interactive_s / 3600.0
    config = phone.config
    utilisation = math.nan
    if config is not None:
        avail = phone.samples["avail_bytes"].to_numpy(np.float64)
        chosen = avail if over == "all" else avail[screen]
        if len(chosen):
            utilisation = float(np.median(1.0 - chosen / config.total_mem_bytes))
    levels = phone.trims["level"].to_numpy(np.int64)
    counted = levels[phone.trims["screen_on"].to_numpy(np.bool_)]
    per_hour = {
        name: np.count_nonzero(np.isin(counted, lvls)) / hours if hours > 0 else math.nan
        for name, lvls in (
            ("moderate_per_h", [5]),
            ("low_per_h", [10]),
            ("critical_per_h", [15]),
            ("pressure_per_h", [5, 10, 15]),
        )
    }
    shares = {
        "share_" + state.lower(): value / interactive_s if interactive_s > 0 else math.nan
        for state, value in zip(STATES, state_s.tolist(), strict=True)
    }
    reasons = []
    if config is None:
        reasons.append("no C: configuration line (total memory unknown)")
    if not hours > min_hours:
        reasons.append(f"{hours:.1f} h of interactive data (needs > {min_hours:g} h)")
    stats = phone.stats
    return {
        "phone": phone.name,
        "kept": not reasons,
        "drop_reason": "; ".join(reasons),
        "manufacturer": config.manufacturer if config else "",
        "api": config.api if config else math.nan,
        "total_mem_bytes": config.total_mem_bytes if config else math.nan,
        "is_low_ram_device": config.is_low_ram_device if config else math.nan,
        "n_samples": len(phone.samples),
        "logged_h": float(timeline.cover_s.sum()) / 3600.0,
        "interactive_h": hours,
        "median_utilisation": utilisation,
        **per_hour,
        **shares,
        "reordered": stats.reordered,
        "duplicates": stats.duplicates,
        "truncated": stats.truncated,
        "skipped_lines": stats.n_skipped,
        "unknown_lines": sum(stats.unknown_tags.values()),
    }
