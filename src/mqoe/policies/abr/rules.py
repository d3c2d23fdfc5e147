"""The ABR rules players use, behind the one protocol of :mod:`mqoe.policies.abr.base`.

Each rule is a frozen dataclass of parameters (units in the names, the source of each
default beside it) with ``choose(state) -> Decision``. Rules are pure functions of the
state: no history is kept between calls, everything is recomputed from the last few
downloads in ``state.downloads``, so one rule object can serve many players and a run
replays identically. They are called once per segment in hot loops, so they use plain
Python over a handful of numbers (no pandas, no numpy).

Rules are chosen by name from :data:`ABR_RULES` with Mahimahi-style arguments
(``"bba:reservoir_s=20,cushion_s=30"``); ``"+"`` joins rules into
:class:`MostConservative` (``"throughput+dropped-frames"``), which is how players stack a
throughput rule with caps.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from mqoe.errors import UserError
from mqoe.params import make_component
from mqoe.policies.abr.base import (
    AbrRule,
    AbrState,
    BufferChoice,
    Decision,
    Download,
    Representation,
    as_rule,
    highest_at_most,
)
from mqoe.policies.abr.rungs import BbaRung, BolaRung, FixedRung

# ExoPlayer DefaultBandwidthMeter: SlidingPercentile window (DEFAULT_SLIDING_WINDOW_MAX_WEIGHT)
_EXO_MAX_WEIGHT = 2000
# ExoPlayer DefaultBandwidthMeter: the estimate replaces the initial one only after
# ELAPSED_MILLIS_FOR_ESTIMATE (2000 ms) or BYTES_TRANSFERRED_FOR_ESTIMATE (512 KiB) in total.
_EXO_ELAPSED_FOR_ESTIMATE_S = 2.0
_EXO_BYTES_FOR_ESTIMATE = 512 * 1024


# --- helpers ------------------------------------------------------------------------------


def _require_positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")


def _require_non_negative(name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")


def _mean_throughput_kbps(downloads: Sequence[Download], window: int) -> float | None:
    """Arithmetic mean of the last ``window`` per-download throughputs (None if no history)."""
    recent = downloads[-window:]
    if not recent:
        return None
    total = 0.0
    for download in recent:
        total += download.throughput_kbps
    return total / len(recent)


def _previous_index(last: int | None, top: int) -> int:
    """The previous decision as a valid index (None, the start, counts as the lowest)."""
    if last is None or last < 0:
        return 0
    return min(last, top)


# --- throughput rules ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConservativeThroughput:
    """The downward-spiral study's commercial client: a conservative rate from a 10-segment mean.

    The estimate is the arithmetic mean of the last ``window`` download throughputs.
    *discrete*: the highest ladder rate ≤ ``discrete_safety`` × estimate. *continuous*:
    request ``c`` × estimate as a byte range, clamped to [lowest rung, ``max_kbps`` or the
    top rung] (never below the lowest rung, even if ``max_kbps`` is), on the ladder index
    of the highest rung at or below that rate. No history yet: the lowest rung.
    """

    name: ClassVar[str] = "conservative"

    mode: Literal["discrete", "continuous"] = "discrete"  # the downward-spiral study's client
    c: float = 0.7  # downward-spiral study: continuous mode requests c × estimate, c = 0.7 or 1.0
    window: int = 10  # downward-spiral study: the client averages the last 10 segments
    # Calibration constant, not a published value: the study says only "a ladder rate well
    # below the estimate"; with 0.6 the client alone on 5 Mbit/s (3000) takes the top
    # rung and the 2.5 Mbit/s fair share (1500) still fits the 1400 kbit/s rung.
    discrete_safety: float = 0.6
    max_kbps: float | None = None  # continuous cap; None = the ladder's top rate (the study)

    def __post_init__(self) -> None:
        if self.mode not in ("discrete", "continuous"):
            raise ValueError(f"mode must be 'discrete' or 'continuous', got {self.mode!r}")
        _require_positive("c", self.c)
        _require_positive("discrete_safety", self.discrete_safety)
        if self.window < 1:
            raise ValueError(f"window must be at least 1 download, got {self.window!r}")
        if self.max_kbps is not None:
            _require_positive("max_kbps", self.max_kbps)

    def choose(self, state: AbrState) -> Decision:
        ladder = state.ladder
        lowest_kbps = ladder[0].bitrate_kbps
        estimate = _mean_throughput_kbps(state.downloads, self.window)
        if self.mode == "discrete":
            if estimate is None:
                return Decision(0)
            return Decision(highest_at_most(ladder, self.discrete_safety * estimate))
        if estimate is None:
            return Decision(0, lowest_kbps)
        cap = ladder[-1].bitrate_kbps if self.max_kbps is None else self.max_kbps
        rate = max(lowest_kbps, min(self.c * estimate, cap))
        return Decision(highest_at_most(ladder, rate), rate)


@dataclass(frozen=True, slots=True, kw_only=True)
class Throughput:
    """dash.js ThroughputRule-style: the highest rung ≤ safety × recent mean throughput.

    A simplification of dash.js: a plain arithmetic mean over the last ``window``
    downloads (dash.js also offers EWMA and latency-aware variants). No history yet: the
    lowest rung.
    """

    name: ClassVar[str] = "throughput"

    safety: float = 0.9  # dash.js settings abr.bandwidthSafetyFactor = 0.9
    window: int = 3  # dash.js ThroughputHistory: 3 samples for live (4 for VOD)

    def __post_init__(self) -> None:
        _require_positive("safety", self.safety)
        if self.window < 1:
            raise ValueError(f"window must be at least 1 download, got {self.window!r}")

    def choose(self, state: AbrState) -> Decision:
        estimate = _mean_throughput_kbps(state.downloads, self.window)
        if estimate is None:
            return Decision(0)
        return Decision(highest_at_most(state.ladder, self.safety * estimate))


@dataclass(frozen=True, slots=True, kw_only=True)
class ExoPlayerLike:
    """ExoPlayer's AdaptiveTrackSelection over DefaultBandwidthMeter, with its defaults.

    Estimate: the weighted median of per-download throughputs, weight ⌊√bytes⌋, over the
    newest downloads up to a total weight of 2000 (the oldest one kept partially), as
    SlidingPercentile does. Approximations: one download = one meter sample (ExoPlayer
    samples per transfer, overlapping transfers merged); the estimate stays at
    ``initial_estimate_kbps`` until 2 s or 512 KiB have been downloaded in total, as in
    DefaultBandwidthMeter. Ideal = the highest rung ≤ ``bandwidth_fraction`` × estimate;
    an up-switch waits for ``min_buffer_for_increase_s`` of buffer, and a down-switch is
    deferred while the buffer holds ``max_buffer_for_decrease_s`` or more.
    """

    name: ClassVar[str] = "exoplayer"

    bandwidth_fraction: float = 0.7  # AdaptiveTrackSelection.DEFAULT_BANDWIDTH_FRACTION
    # AdaptiveTrackSelection.DEFAULT_MIN_DURATION_FOR_QUALITY_INCREASE_MS = 10000
    min_buffer_for_increase_s: float = 10.0
    # AdaptiveTrackSelection.DEFAULT_MAX_DURATION_FOR_QUALITY_DECREASE_MS = 25000
    max_buffer_for_decrease_s: float = 25.0
    initial_estimate_kbps: float = 1000.0  # DefaultBandwidthMeter.DEFAULT_INITIAL_BITRATE_ESTIMATE

    def __post_init__(self) -> None:
        _require_positive("bandwidth_fraction", self.bandwidth_fraction)
        _require_non_negative("min_buffer_for_increase_s", self.min_buffer_for_increase_s)
        _require_non_negative("max_buffer_for_decrease_s", self.max_buffer_for_decrease_s)
        _require_positive("initial_estimate_kbps", self.initial_estimate_kbps)

    def choose(self, state: AbrState) -> Decision:
        ladder = state.ladder
        estimate = _sliding_median_kbps(state.downloads)
        if estimate is None:
            estimate = self.initial_estimate_kbps
        ideal = highest_at_most(ladder, self.bandwidth_fraction * estimate)
        if state.last is None:
            return Decision(ideal)
        previous = _previous_index(state.last, len(ladder) - 1)
        ideal_kbps = ladder[ideal].bitrate_kbps
        previous_kbps = ladder[previous].bitrate_kbps
        if ideal_kbps > previous_kbps and state.buffer_s < self.min_buffer_for_increase_s:
            return Decision(previous)  # not enough buffer to risk a higher rate yet
        if ideal_kbps < previous_kbps and state.buffer_s >= self.max_buffer_for_decrease_s:
            return Decision(previous)  # enough buffer to ride out the dip
        return Decision(ideal)


def _sliding_median_kbps(downloads: Sequence[Download]) -> float | None:
    """DefaultBandwidthMeter's estimate, or None while it would keep its initial value."""
    if not _enough_for_estimate(downloads):
        return None
    samples: list[tuple[float, int]] = []
    remaining = _EXO_MAX_WEIGHT
    for download in reversed(downloads):  # newest first: the window keeps the newest
        if download.duration_s <= 0:
            continue  # ExoPlayer adds no sample for a zero-time transfer
        weight = int(math.sqrt(download.size_bytes))
        if weight >= remaining:
            samples.append((download.throughput_kbps, remaining))
            remaining = 0
            break
        samples.append((download.throughput_kbps, weight))
        remaining -= weight
    if not samples:
        return None
    samples.sort()
    desired = 0.5 * (_EXO_MAX_WEIGHT - remaining)
    accumulated = 0
    for value, weight in samples:
        accumulated += weight
        if accumulated >= desired:
            return value
    return samples[-1][0]


def _enough_for_estimate(downloads: Sequence[Download]) -> bool:
    elapsed_s = 0.0
    size_bytes = 0
    for download in downloads:  # oldest first: stops after the first few downloads
        elapsed_s += download.duration_s
        size_bytes += download.size_bytes
        if elapsed_s >= _EXO_ELAPSED_FOR_ESTIMATE_S or size_bytes >= _EXO_BYTES_FOR_ESTIMATE:
            return True
    return False


# --- buffer rules -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BBA:
    """BBA-0 (Huang et al., SIGCOMM 2014): the rate is a function of buffer occupancy.

    f(B) is the lowest rate up to the reservoir, the highest from reservoir + cushion on,
    and linear in between; the paper's map adds hysteresis: move up only when f(B)
    reaches the next higher rate (then to the highest rate below f(B)), down only when
    f(B) falls to the next lower rate (then to the lowest rate above f(B)), else stay.

    Scaling rule for small buffers: a player only asks for a segment when it fits, so the
    buffer seen at a decision is at most ``buffer_max_s − segment_s``. When reservoir +
    cushion exceed that room both shrink by the same factor so that reservoir + cushion
    equals it (with the memory-pressure study's 60 s buffer and 4 s segments: 23.3 s + 32.7 s).
    """

    name: ClassVar[str] = "bba"

    reservoir_s: float = 90.0  # Huang et al. 2014, BBA-0 with a 240 s buffer
    cushion_s: float = 126.0  # Huang et al. 2014: 240 s − 90 s reservoir − 24 s upper reservoir

    def __post_init__(self) -> None:
        _require_non_negative("reservoir_s", self.reservoir_s)
        _require_non_negative("cushion_s", self.cushion_s)

    def bounds_s(self, buffer_max_s: float, segment_s: float) -> tuple[float, float]:
        """(reservoir end, cushion end) in seconds of buffer, after the small-buffer scaling."""
        total_s = self.reservoir_s + self.cushion_s
        room_s = max(buffer_max_s - segment_s, 0.0)
        if total_s <= room_s:
            return self.reservoir_s, total_s
        return self.reservoir_s * room_s / total_s, room_s

    def choose(self, state: AbrState) -> Decision:
        ladder = state.ladder
        top = len(ladder) - 1
        reservoir_end_s, cushion_end_s = self.bounds_s(state.buffer_max_s, state.segment_s)
        buffer_s = state.buffer_s
        if buffer_s <= reservoir_end_s:
            return Decision(0)
        if buffer_s >= cushion_end_s:
            return Decision(top)
        r_min = ladder[0].bitrate_kbps
        r_max = ladder[top].bitrate_kbps
        f_kbps = r_min + (r_max - r_min) * (buffer_s - reservoir_end_s) / (
            cushion_end_s - reservoir_end_s
        )
        previous = _previous_index(state.last, top)
        return Decision(_bba_step(ladder, previous, f_kbps))

    def buffer_choice(
        self, ladder: Sequence[Representation], segment_s: float, buffer_max_s: float
    ) -> BufferChoice | None:
        """:meth:`choose` as a function of (buffer, last) for one session (see
        :func:`~mqoe.policies.abr.base.buffer_choice`): the bounds and each rung's
        neighbours computed once, the rate map's scans as bisections (ladders whose rates
        strictly ascend; None otherwise). Same arithmetic, so the same choices."""
        rates = [rep.bitrate_kbps for rep in ladder]
        if any(b <= a for a, b in itertools.pairwise(rates)):
            return None
        reservoir_end_s, cushion_end_s = self.bounds_s(buffer_max_s, segment_s)
        bands = [_bba_band(ladder, previous) for previous in range(len(rates))]
        plus = [rate_plus for rate_plus, _ in bands]
        minus = [rate_minus for _, rate_minus in bands]
        return BbaRung(rates, plus, minus, reservoir_end_s, cushion_end_s)


def _bba_band(ladder: Sequence[Representation], previous: int) -> tuple[float, float]:
    """(R+, R−): the next higher and next lower rate than the previous rung's (or the
    top / bottom rate at the ends), as BBA-0's Algorithm 1 defines them."""
    previous_kbps = ladder[previous].bitrate_kbps
    rate_plus = ladder[-1].bitrate_kbps  # next higher rate, or R_max at the top
    rate_minus = ladder[0].bitrate_kbps  # next lower rate, or R_min at the bottom
    for rep in ladder:
        rate = rep.bitrate_kbps
        if previous_kbps < rate < rate_plus:
            rate_plus = rate
        if rate_minus < rate < previous_kbps:
            rate_minus = rate
    return rate_plus, rate_minus


def _bba_step(ladder: Sequence[Representation], previous: int, f_kbps: float) -> int:
    """BBA-0's rate map with hysteresis, on ladder indices (Huang et al. 2014, Algorithm 1)."""
    rate_plus, rate_minus = _bba_band(ladder, previous)
    if f_kbps >= rate_plus:  # max{R_i : R_i < f(B)}
        up = previous
        for index, rep in enumerate(ladder):
            if rep.bitrate_kbps < f_kbps:
                up = max(up, index)
        return up
    if f_kbps <= rate_minus:  # min{R_i : R_i > f(B)}
        for index, rep in enumerate(ladder):
            if rep.bitrate_kbps > f_kbps:
                return min(index, previous)
        return previous
    return previous


@dataclass(frozen=True, slots=True, kw_only=True)
class Bola:
    """BOLA-BASIC (Spiteri, Urgaonkar and Sitaraman, INFOCOM 2016).

    Utilities v_m = ln(S_m / S_1) with segment sizes S_m proportional to bitrate; buffer
    in segments Q = buffer_s / segment_s, Q_max = buffer_max_s / segment_s;
    V = (Q_max − 1) / (v_M + γp). Picks the m maximising (V·(v_m + γp) − Q) / S_m (ties →
    the lower rung). When every score is negative the paper would wait instead of
    downloading; waiting is the player's business (it asks only when a segment fits), so
    the argmax is returned anyway, as dash.js's BolaRule picks its quality.
    """

    name: ClassVar[str] = "bola"

    gamma_p: float = 5.0  # Spiteri et al. 2016, the γp used for BOLA-BASIC

    def __post_init__(self) -> None:
        _require_positive("gamma_p", self.gamma_p)

    def choose(self, state: AbrState) -> Decision:
        ladder = state.ladder
        gamma_p = self.gamma_p
        size_1 = ladder[0].bitrate_kbps
        q = state.buffer_s / state.segment_s
        q_max = state.buffer_max_s / state.segment_s
        v_scale = (q_max - 1.0) / (math.log(ladder[-1].bitrate_kbps / size_1) + gamma_p)
        best = 0
        best_score = -math.inf
        for index, rep in enumerate(ladder):
            size = rep.bitrate_kbps
            score = (v_scale * (math.log(size / size_1) + gamma_p) - q) / size
            if score > best_score:
                best, best_score = index, score
        return Decision(best)

    def buffer_choice(
        self, ladder: Sequence[Representation], segment_s: float, buffer_max_s: float
    ) -> BufferChoice:
        """:meth:`choose` as a function of the buffer for one session (see
        :func:`~mqoe.policies.abr.base.buffer_choice`): each rung's ``V·(v_m + γp)``
        computed once by the same expression, so every score has the same bits."""
        gamma_p = self.gamma_p
        size_1 = ladder[0].bitrate_kbps
        q_max = buffer_max_s / segment_s
        v_scale = (q_max - 1.0) / (math.log(ladder[-1].bitrate_kbps / size_1) + gamma_p)
        utility = [v_scale * (math.log(rep.bitrate_kbps / size_1) + gamma_p) for rep in ladder]
        return BolaRung(utility, [rep.bitrate_kbps for rep in ladder], segment_s)


# --- caps and fixed choices ---------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DroppedFrames:
    """dash.js DroppedFramesRule: cap the quality below the lowest rung that drops frames.

    The lowest index i with at least ``min_frames`` frames shown and a drop ratio above
    ``max_drop_ratio`` caps the choice at i − 1 (at least 0). Without such a rung it
    returns the top index: no restriction, meant to be combined with
    :class:`MostConservative` (``"throughput+dropped-frames"``).
    """

    name: ClassVar[str] = "dropped-frames"

    max_drop_ratio: float = 0.15  # dash.js DroppedFramesRule DROPPED_PERCENTAGE_FORBID
    # dash.js DroppedFramesRule GOOD_SAMPLE_SIZE (dash.js needs > 375; here ≥ min_frames)
    min_frames: int = 375

    def __post_init__(self) -> None:
        _require_non_negative("max_drop_ratio", self.max_drop_ratio)
        if self.min_frames < 0:
            raise ValueError(f"min_frames must not be negative, got {self.min_frames!r}")

    def choose(self, state: AbrState) -> Decision:
        n = len(state.ladder)
        worst = n
        for index, (dropped, total) in state.frame_stats.items():
            if (
                0 <= index < worst
                and total > 0
                and total >= self.min_frames
                and dropped / total > self.max_drop_ratio
            ):
                worst = index
        if worst == n:
            return Decision(n - 1)
        return Decision(max(worst - 1, 0))


@dataclass(frozen=True, slots=True, kw_only=True)
class Fixed:
    """Always the same rung: fixed-quality runs (the memory-pressure study's dash.js
    runs had no adaptation)."""

    name: ClassVar[str] = "fixed"

    representation: int = 0  # the lowest rung; the memory-pressure study set one per run

    def __post_init__(self) -> None:
        if self.representation < 0:
            raise ValueError(
                f"representation must be a ladder index ≥ 0, got {self.representation}"
            )

    def choose(self, state: AbrState) -> Decision:
        if self.representation >= len(state.ladder):
            raise UserError(
                f"ABR rule 'fixed': representation {self.representation} is not on the "
                f"ladder (indices 0..{len(state.ladder) - 1})"
            )
        return Decision(self.representation)

    def buffer_choice(
        self, ladder: Sequence[Representation], segment_s: float, buffer_max_s: float
    ) -> BufferChoice:
        """The one rung, checked against the ladder once (see
        :func:`~mqoe.policies.abr.base.buffer_choice`)."""
        state = AbrState(0.0, ladder, segment_s, 0.0, buffer_max_s, ())
        index = self.choose(state).representation  # the same error for a rung off the ladder
        return FixedRung(index)


# --- combination --------------------------------------------------------------------------


class MostConservative:
    """Ask every rule and take the decision with the lowest effective rate.

    Ties go to the lower ladder index. This is how players stack a throughput or buffer
    rule with caps (dropped frames, memory trim signals). Rules may be rule objects or
    plain functions (see :func:`~mqoe.policies.abr.base.as_rule`).
    """

    __slots__ = ("rules",)

    def __init__(self, rules: Iterable[AbrRule | Callable[[AbrState], Decision | int]]) -> None:
        self.rules: tuple[AbrRule, ...] = tuple(as_rule(rule) for rule in rules)
        if not self.rules:
            raise ValueError("MostConservative needs at least one rule")

    @property
    def name(self) -> str:
        return "+".join(str(getattr(rule, "name", type(rule).__name__)) for rule in self.rules)

    def __repr__(self) -> str:
        return f"MostConservative({list(self.rules)!r})"

    def choose(self, state: AbrState) -> Decision:
        ladder = state.ladder
        best: Decision | None = None
        best_kbps = math.inf
        for rule in self.rules:
            decision = rule.choose(state)
            kbps = decision.effective_kbps(ladder)
            if (
                best is None
                or kbps < best_kbps
                or (kbps == best_kbps and decision.representation < best.representation)
            ):
                best, best_kbps = decision, kbps
        assert best is not None  # the constructor refuses an empty rule list
        return best


# --- registry -----------------------------------------------------------------------------

# The explicit registry (no import-time magic): a new rule is one line here.
ABR_RULES: dict[str, type[AbrRule]] = {
    "conservative": ConservativeThroughput,
    "bba": BBA,
    "bola": Bola,
    "throughput": Throughput,
    "exoplayer": ExoPlayerLike,
    "dropped-frames": DroppedFrames,
    "fixed": Fixed,
}


def make_rule(spec: str) -> AbrRule:
    """Build a rule from ``"name"`` or ``"name:key=value,key=value"``; ``"a+b"`` combines.

    Values are parsed by the constructor's annotations (int, float, str, bool, a
    ``Literal`` choice, or ``None`` for optional ones). Raises ``UserError`` with one line
    naming what exists for unknown names, unknown keys and bad values.
    """
    parts = spec.split("+")
    if len(parts) == 1:
        return _make_one(parts[0], spec)
    return MostConservative([_make_one(part, spec) for part in parts])


def _make_one(part: str, spec: str) -> AbrRule:
    name = part.strip().partition(":")[0].strip()
    if name not in ABR_RULES:  # named with the whole spec, which may combine several rules
        available = ", ".join(sorted(ABR_RULES))
        raise UserError(f"unknown ABR rule {name!r} in {spec!r}; available: {available}")
    return make_component(part, ABR_RULES, "ABR rule")
