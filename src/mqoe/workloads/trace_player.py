"""Trace-driven fast mode: replay a throughput trace under an ABR rule, one step per segment.

This is the Sabre/Pensieve style of ABR study: no packets, no TCP, no device. A segment
of ``S`` bits requested at time ``t`` arrives after the trace's latency at ``t`` plus the
time the piecewise-constant bandwidth takes to carry ``S`` bits from then on (the trace
loops). The playback buffer drains at 1 s/s while playing; when it empties during a
download the player stalls (rebuffers) until the segment arrives. Before each request
the player waits while the buffer holds more than ``buffer_max_s − segment_s`` (no room
for the next segment). Playback starts once ``startup_segments`` have arrived.

Because the link is a replayed capacity curve, outcomes that need transport dynamics —
the downward spiral of the IMC 2012 study (slow start after idle, a shared drop-tail queue, a
competing flow) — cannot appear here; that study needs the packet-level TCP model.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from mqoe.analysis.throughput_traces import (
    ThroughputTrace,
    VideoManifest,
    load_manifest,
    load_trace,
)
from mqoe.device.no_device import NoDevice
from mqoe.engine import seconds
from mqoe.errors import UserError
from mqoe.generators.throughput_traces import synthetic_manifest
from mqoe.metrics.video_qoe import qoe_summary_columns
from mqoe.policies.abr.base import (
    AbrRule,
    AbrState,
    Decision,
    Download,
    as_rule,
    buffer_choice,
)
from mqoe.policies.abr.rungs import as_rung
from mqoe.results.tables import ColumnTable
from mqoe.workloads.base import ScenarioOutput, Session
from mqoe.workloads.trace_loop import SessionColumns, TraceLink, play

if TYPE_CHECKING:  # pandas is imported when a table is built, not with the module
    import pandas as pd

# The synthetic "3G-like" trace used when no trace file is given.
SYNTHETIC_MEAN_KBPS = 1500.0  # per-log means of the hsdpa-3g logs span 0.3–1.6 Mbit/s
SYNTHETIC_LOG_SD = 0.5  # log-space spread; the hsdpa-3g logs' 0.3–1.6 include long outages
SYNTHETIC_STEP_MS = 1000.0  # the hsdpa-3g logs are ~1 s samples
SYNTHETIC_LATENCY_MS = 100.0  # Sabre's conversion of the hsdpa-3g logs uses 100 ms
# The ladder of the downward-spiral study (the IMC 2012 service), with its 4 s segments.
SYNTHETIC_LADDER_KBPS = (235.0, 375.0, 560.0, 750.0, 1050.0, 1400.0, 1750.0)
SYNTHETIC_SEGMENT_S = 4.0

SEGMENT_TABLE_COLUMNS = (
    "segment",
    "representation",
    "bitrate_kbps",
    "size_bits",
    "download_start_s",
    "download_end_s",
    "rebuffer_s",
    "buffer_after_s",
)


def _trace_link(trace: ThroughputTrace) -> TraceLink:
    """The trace as :class:`~mqoe.workloads.trace_loop.TraceLink`'s cumulative lists.
    Plain lists + bisection beat ``np.searchsorted`` on scalars by ~7× (no array boxing
    per call)."""
    duration_s = trace.duration_ms / 1000.0
    bps_array = trace.bandwidth_kbps * 1000.0
    bounds_s: list[float] = np.concatenate(([0.0], np.cumsum(duration_s))).tolist()
    cum_bits: list[float] = np.concatenate(([0.0], np.cumsum(duration_s * bps_array))).tolist()
    period_bits = cum_bits[-1]
    if not period_bits > 0 or not math.isfinite(period_bits):
        raise UserError(f"trace {trace.name!r} delivers no data (all bandwidths are 0)")
    latency_s: list[float] = (trace.latency_ms / 1000.0).tolist()
    return TraceLink(bounds_s, cum_bits, bps_array.tolist(), latency_s)


_LINKS: dict[int, tuple[weakref.ref[ThroughputTrace], TraceLink]] = {}


def _link_of(trace: ThroughputTrace) -> TraceLink:
    """The trace's :class:`~mqoe.workloads.trace_loop.TraceLink`, built once while the
    trace lives (studies replay one trace under many rules); keyed by identity, as the
    trace's arrays are unhashable."""
    key = id(trace)
    hit = _LINKS.get(key)
    if hit is not None and hit[0]() is trace:
        return hit[1]
    link = _trace_link(trace)

    def forget(ref: weakref.ref[ThroughputTrace]) -> None:
        if _LINKS.get(key, (None,))[0] is ref:
            del _LINKS[key]

    _LINKS[key] = (weakref.ref(trace, forget), link)
    return link


def simulate_session(
    trace: ThroughputTrace,
    manifest: VideoManifest,
    rule: AbrRule | Callable[[AbrState], Decision | int],
    *,
    buffer_max_s: float = 60.0,
    session_s: float | None = None,
    startup_segments: int = 1,
) -> pd.DataFrame:
    """Play ``manifest`` over ``trace`` under ``rule``; one row per segment.

    ``session_s`` is the media time to stream (``ceil(session_s / segment_s)`` segments;
    ``None`` = the whole manifest); a session longer than the manifest loops its segment
    sizes, as one longer than the trace loops the trace. Columns:
    :data:`SEGMENT_TABLE_COLUMNS` (times in seconds from the first request, sizes in
    bits, ``buffer_after_s`` just after the segment arrived).
    """
    columns = session_columns(
        trace,
        manifest,
        rule,
        buffer_max_s=buffer_max_s,
        session_s=session_s,
        startup_segments=startup_segments,
    )
    return _table(columns)


def session_columns(
    trace: ThroughputTrace,
    manifest: VideoManifest,
    rule: AbrRule | Callable[[AbrState], Decision | int],
    *,
    buffer_max_s: float = 60.0,
    session_s: float | None = None,
    startup_segments: int = 1,
) -> SessionColumns:
    """:func:`simulate_session`'s columns as plain lists, without building the table.

    A rule with a fast path (:func:`~mqoe.policies.abr.base.buffer_choice`: BBA, BOLA,
    fixed) is asked for its rung from the buffer alone; any other rule sees an
    :class:`AbrState` with the growing download history.
    """
    segment_s = manifest.segment_s
    n = _segment_count(manifest, session_s)
    check_buffer(segment_s, buffer_max_s, startup_segments)
    checked_rule = as_rule(rule)
    choice = buffer_choice(checked_rule, manifest.ladder, segment_s, buffer_max_s)
    rung = None if choice is None else as_rung(choice)
    history: list[Download] | None = None
    by_state = None
    if rung is None:
        history = []
        by_state = _by_state(checked_rule, manifest, buffer_max_s, history)
    sizes, rates = _sizes_of(manifest)
    link = _link_of(trace)
    return play(link, rung, by_state, history, sizes, rates, n, segment_s, buffer_max_s,
                startup_segments)  # fmt: skip


def _by_state(
    rule: AbrRule, manifest: VideoManifest, buffer_max_s: float, history: list[Download]
) -> Callable[[int, float, float, int | None], tuple[int, float, int]]:
    """``decide(k, now, buffer, last) -> (index, kbps, bits)``: the rule asked with a full
    :class:`AbrState` (``history`` grows as the player appends to it), its answer checked."""
    choose = rule.choose
    ladder = manifest.ladder
    segment_s = manifest.segment_s
    sizes, rates = _sizes_of(manifest)
    no_frames: Mapping[int, tuple[int, int]] = MappingProxyType({})

    def decide(k: int, now: float, buffer: float, last: int | None) -> tuple[int, float, int]:
        state = AbrState(now, ladder, segment_s, buffer, buffer_max_s, history, last,
                         trim_level=0, frame_stats=no_frames)  # fmt: skip
        decision = choose(state)
        index = decision.representation
        if not 0 <= index < len(ladder):
            raise UserError(f"ABR rule chose representation {index}; the ladder has {len(ladder)}")
        rate = decision.rate_kbps
        if rate is None:
            return index, rates[index], sizes[k % len(sizes)][index]
        return index, float(rate), _continuous_size(rate, segment_s)

    return decide


_SIZES: dict[int, tuple[weakref.ref[VideoManifest], list[list[int]], list[float]]] = {}


def _sizes_of(manifest: VideoManifest) -> tuple[list[list[int]], list[float]]:
    """The manifest's segment sizes as lists (rows per segment) and its ladder rates,
    converted once while the manifest lives (it is frozen)."""
    key = id(manifest)
    hit = _SIZES.get(key)
    if hit is not None and hit[0]() is manifest:
        return hit[1], hit[2]
    sizes: list[list[int]] = manifest.segment_sizes_bits.tolist()
    rates = [float(rate) for rate in manifest.bitrates_kbps]  # one type, compiled or not

    def forget(ref: weakref.ref[VideoManifest]) -> None:
        if _SIZES.get(key, (None,))[0] is ref:
            del _SIZES[key]

    _SIZES[key] = (weakref.ref(manifest, forget), sizes, rates)
    return sizes, rates


def _table(columns: SessionColumns) -> pd.DataFrame:
    """The per-segment table from its columns."""
    import pandas as pd

    return pd.DataFrame(_arrays(columns))


def _arrays(columns: SessionColumns) -> dict[str, np.ndarray]:
    """The table's columns as numpy arrays (cheaper than lists to pandas and Arrow).

    The segment numbers are ``arange`` and the four time columns, always Python floats,
    go through ``fromiter`` (each ~2-5× cheaper than ``np.array`` of a list, which
    first infers the dtype); the rule-given columns keep ``np.array``'s inference.
    """
    segment, reps, kbps, bits, *times = columns
    n = len(segment)
    arrays = [np.arange(n), np.array(reps), np.array(kbps), np.array(bits)]
    arrays += [np.fromiter(values, np.float64, n) for values in times]
    return dict(zip(SEGMENT_TABLE_COLUMNS, arrays, strict=True))


def check_buffer(segment_s: float, buffer_max_s: float, startup_segments: int) -> None:
    """The buffer must hold the startup segments (else playback could never begin)."""
    if not (segment_s <= buffer_max_s < math.inf):
        raise UserError(f"buffer_max_s must hold one {segment_s:g} s segment, got {buffer_max_s}")
    if not 1 <= startup_segments <= buffer_max_s / segment_s:
        raise UserError(
            f"startup_segments={startup_segments}: must be at least 1 and fit in"
            f" buffer_max_s={buffer_max_s:g} ({segment_s:g} s segments)"
        )


def _segment_count(manifest: VideoManifest, session_s: float | None) -> int:
    if session_s is None:
        return manifest.n_segments
    if not (0 < session_s < math.inf):
        raise UserError(f"session_s must be a positive number of seconds, got {session_s}")
    return max(1, math.ceil(session_s / manifest.segment_s - 1e-9))


def _continuous_size(rate_kbps: float, segment_s: float) -> int:
    """A byte-range request of ``rate × segment`` (the spiral study's continuous mode), in bits."""
    if not (0 < rate_kbps < math.inf):
        raise UserError(f"ABR rule asked for a continuous rate of {rate_kbps} kbit/s")
    return max(1, round(rate_kbps * 1000.0 * segment_s))


def synthetic_3g_trace(rng: np.random.Generator, duration_s: float) -> ThroughputTrace:
    """A 3G-like trace: 1 s steps of i.i.d. lognormal bandwidth, mean 1.5 Mbit/s, 100 ms.

    Log-space s.d. :data:`SYNTHETIC_LOG_SD`; the median is therefore below the mean
    (≈ 1.32 Mbit/s). No autocorrelation and no outages, unlike the real logs.
    """
    steps = max(1, math.ceil(duration_s * 1000.0 / SYNTHETIC_STEP_MS))
    mu = math.log(SYNTHETIC_MEAN_KBPS) - SYNTHETIC_LOG_SD**2 / 2  # so the mean is the target
    bandwidth = rng.lognormal(mu, SYNTHETIC_LOG_SD, steps)
    return ThroughputTrace(
        "synthetic-3g",
        np.full(steps, SYNTHETIC_STEP_MS),
        bandwidth,
        np.full(steps, SYNTHETIC_LATENCY_MS),
    )


# -- the scenario ---------------------------------------------------------------------


@dataclass(frozen=True)
class TraceAbrParams:
    trace: str = ""  # trace file (Sabre JSON, Mahimahi, time_s/Mbps text); "" = synthetic 3G
    trace_format: str = "auto"  # auto, sabre, mahimahi or text
    latency_ms: float = 0.0  # for Mahimahi and text traces, which carry none (Mahimahi default)
    manifest: str = ""  # Sabre-style manifest JSON; "" = the spiral study's ladder, 4 s
    rule: str = "bba"  # ABR rule spec for make_rule (BBA: Huang et al. 2014)
    buffer_max_s: float = 60.0  # Pensieve's simulator caps the playback buffer at 60 s
    session_s: float = 600.0  # media seconds streamed (Pensieve's evaluation videos ≈ 193 s)
    startup_segments: int = 1  # segments buffered before playback starts (Sabre: 1)

    def __post_init__(self) -> None:
        if not (0 < self.session_s < math.inf) or not (0 < self.buffer_max_s < math.inf):
            raise ValueError("session_s and buffer_max_s must be positive numbers of seconds")
        if not (0 <= self.latency_ms < math.inf):
            raise ValueError("latency_ms must be a number ≥ 0")
        if self.startup_segments < 1:
            raise ValueError("startup_segments must be at least 1")
        if self.trace_format not in ("auto", "sabre", "mahimahi", "text"):
            raise ValueError(
                f"trace_format must be auto, sabre, mahimahi or text, got {self.trace_format!r}"
            )


class TraceAbr:
    """Scenario ``trace-abr``: an ABR rule against a replayed throughput trace.

    The whole session is computed by :func:`simulate_session` when results are
    collected; the engine has no events to run here (no packets, no device), so the
    runner only moves the clock to ``session_s``. It models no phone (``device =
    False``): it is built on a :class:`~mqoe.device.no_device.NoDevice`, takes no profile
    and loads none, and its records have no energy table. Trace and manifest files are read,
    and the synthetic trace drawn from the run's ``"trace"`` stream, at build time, so
    bad inputs fail before the run.
    """

    name = "trace-abr"
    summary = "an ABR rule over a replayed throughput trace (Sabre-style fast mode, no TCP)"
    params_type = TraceAbrParams
    quick: Mapping[str, str] = MappingProxyType({"session_s": "60"})
    device = False  # no phone: see mqoe.workloads.base.runs_on_a_phone

    def build(self, phone: NoDevice, params: TraceAbrParams) -> Session:
        from mqoe.policies.abr import as_rule, make_rule  # lazily: the fast mode needs none

        if params.trace:
            trace = load_trace(params.trace, params.trace_format, latency_ms=params.latency_ms)
        else:
            trace = synthetic_3g_trace(phone.env.rng("trace"), params.session_s)
        if params.manifest:
            manifest = load_manifest(params.manifest)
        else:
            n = math.ceil(params.session_s / SYNTHETIC_SEGMENT_S)
            manifest = synthetic_manifest(SYNTHETIC_LADDER_KBPS, SYNTHETIC_SEGMENT_S, n)
        try:
            check_buffer(manifest.segment_s, params.buffer_max_s, params.startup_segments)
            component = phone.take_component("abr")
            rule: AbrRule = make_rule(params.rule) if component is None else as_rule(component)
        except UserError as exc:
            raise UserError(f"scenario {self.name!r}: {exc}") from None

        def collect() -> ScenarioOutput:
            # The table stays columns (a DataFrame when a reader asks): no pandas here.
            columns = session_columns(
                trace,
                manifest,
                rule,
                buffer_max_s=params.buffer_max_s,
                session_s=params.session_s,
                startup_segments=params.startup_segments,
            )
            _, _, kbps, _, starts, ends, stalls, buffers = columns
            watch_s = ends[-1] + buffers[-1]  # until the last segment has played out
            metrics = qoe_summary_columns(
                kbps,
                stalls,
                starts,
                ends,
                watch_s,
                min_bitrate_kbps=manifest.bitrates_kbps[0],
                startup_segments=params.startup_segments,
            )
            segments = ColumnTable(_arrays(columns))
            return ScenarioOutput(metrics=metrics, tables={"segments": segments})

        return Session(seconds(params.session_s), collect)
