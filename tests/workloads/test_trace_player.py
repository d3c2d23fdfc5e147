"""Trace-driven fast mode: download times, stalls, looping and bit conservation by hand."""

from __future__ import annotations

import json
import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.analysis.throughput_traces.model import ThroughputTrace, VideoManifest
from mqoe.device.profiles import load_profile
from mqoe.errors import InputFileError, UserError
from mqoe.generators.throughput_traces import synthetic_manifest
from mqoe.policies.abr.base import AbrState, Decision, Download, highest_at_most
from mqoe.workloads import SCENARIOS
from mqoe.workloads.conformance import check_scenario
from mqoe.workloads.runner import run_scenario
from mqoe.workloads.trace_player import TraceAbr, simulate_session


class FixedRule:
    """Always the same ladder index (or a continuous rate)."""

    def __init__(self, index: int, rate_kbps: float | None = None) -> None:
        self.index = index
        self.rate_kbps = rate_kbps
        self.seen: list[Sequence[Download]] = []

    def choose(self, state: AbrState) -> Decision:
        self.seen.append(state.downloads)
        return Decision(self.index, self.rate_kbps)


class LastThroughput:
    """Highest rate below the last segment's throughput (index 0 first)."""

    def choose(self, state: AbrState) -> Decision:
        if not state.downloads:
            return Decision(0)
        return Decision(highest_at_most(state.ladder, state.downloads[-1].throughput_kbps))


def _trace(
    durations_ms: Sequence[float], kbps: Sequence[float], latency_ms: float = 0.0
) -> ThroughputTrace:
    n = len(durations_ms)
    return ThroughputTrace("t", np.array(durations_ms), np.array(kbps), np.full(n, latency_ms))


def _constant(kbps: float, latency_ms: float = 0.0) -> ThroughputTrace:
    return _trace([10_000.0], [kbps], latency_ms)


def test_download_time_is_latency_plus_size_over_bandwidth() -> None:
    manifest = synthetic_manifest([500, 1000], 2.0, 6)  # 500 kbps × 2 s = 1 Mbit
    table = simulate_session(_constant(1000.0, latency_ms=50.0), manifest, FixedRule(0))
    durations = table["download_end_s"] - table["download_start_s"]
    assert durations.tolist() == pytest.approx([0.05 + 1.0] * 6)
    assert table["rebuffer_s"].tolist() == [0.0] * 6
    assert table["buffer_after_s"].tolist()[:3] == pytest.approx([2.0, 2.95, 3.90])
    assert table["bitrate_kbps"].tolist() == [500.0] * 6
    assert table["size_bits"].tolist() == [1_000_000] * 6


def test_a_rate_above_the_bandwidth_stalls_by_the_shortfall() -> None:
    # 2000 kbps × 2 s = 4 Mbit over 1 Mbit/s + 0.1 s latency: 4.1 s per 2 s of media.
    manifest = synthetic_manifest([500, 2000], 2.0, 4)
    table = simulate_session(_constant(1000.0, latency_ms=100.0), manifest, FixedRule(1))
    # The first segment only delays startup; each later one drains 2 s, stalls 2.1 s.
    assert table["rebuffer_s"].tolist() == pytest.approx([0.0, 2.1, 2.1, 2.1])
    assert table["rebuffer_s"].sum() == pytest.approx(6.3)
    assert table["buffer_after_s"].tolist() == pytest.approx([2.0] * 4)
    assert table["download_end_s"].iloc[-1] == pytest.approx(4 * 4.1)


def test_the_trace_loops_and_zero_bandwidth_carries_nothing() -> None:
    # 1 s at 1 Mbit/s then 1 s of outage, looped: 1 Mbit per 2 s period.
    on_off = _trace([1000.0, 1000.0], [1000.0, 0.0])
    manifest = synthetic_manifest([1250], 2.0, 2)  # 2.5 Mbit per segment
    table = simulate_session(on_off, manifest, FixedRule(0))
    # 1 Mbit by 1 s, 2 by 3 s, 2.5 by 4.5 s; then 0.5 by 5, 1.5 by 7, 2.5 by 9.
    assert table["download_end_s"].tolist() == pytest.approx([4.5, 9.0])
    assert table["rebuffer_s"].tolist() == pytest.approx([0.0, 4.5 - 2.0])


def test_a_download_ends_when_its_last_bit_arrives_not_after_the_outage() -> None:
    on_off = _trace([1000.0, 1000.0], [1000.0, 0.0])
    table = simulate_session(on_off, synthetic_manifest([500], 2.0, 1), FixedRule(0))
    assert table["download_end_s"].tolist() == pytest.approx([1.0])


def test_a_full_buffer_waits_for_room_for_the_next_segment() -> None:
    manifest = synthetic_manifest([100], 2.0, 8)  # 0.2 Mbit: 0.02 s at 10 Mbit/s
    table = simulate_session(_constant(10_000.0), manifest, FixedRule(0), buffer_max_s=6.0)
    # Once the buffer exceeds 6 − 2 = 4 s, a request waits until it is back to 4 s.
    before = table["buffer_after_s"].shift() - (
        table["download_start_s"] - table["download_end_s"].shift()
    )
    assert before.iloc[3:].tolist() == pytest.approx([4.0] * 5)
    assert table["buffer_after_s"].max() <= 6.0


def test_startup_segments_delay_playback_and_draining() -> None:
    manifest = synthetic_manifest([500], 2.0, 3)
    table = simulate_session(_constant(1000.0), manifest, FixedRule(0), startup_segments=2)
    # Nothing drains until the second segment is in: 2, 4, then 4 − 1 + 2.
    assert table["buffer_after_s"].tolist() == pytest.approx([2.0, 4.0, 5.0])


def test_continuous_requests_are_rate_times_segment() -> None:
    manifest = synthetic_manifest([500, 1000], 4.0, 2)
    table = simulate_session(_constant(2000.0), manifest, FixedRule(0, rate_kbps=800.0))
    assert table["size_bits"].tolist() == [3_200_000, 3_200_000]
    assert table["bitrate_kbps"].tolist() == [800.0, 800.0]
    assert (table["download_end_s"] - table["download_start_s"]).tolist() == pytest.approx(
        [1.6, 1.6]
    )


def test_the_rule_sees_one_growing_history() -> None:
    rule = FixedRule(0)
    simulate_session(_constant(1000.0), synthetic_manifest([500], 2.0, 4), rule)
    assert all(seen is rule.seen[0] for seen in rule.seen)  # the same list, never copied
    assert [d.segment for d in rule.seen[0]] == [0, 1, 2, 3]
    assert rule.seen[0][0].size_bytes == 125_000


def test_session_length_picks_segments_and_loops_the_manifest() -> None:
    manifest = VideoManifest(
        2.0, synthetic_manifest([100], 2.0, 1).ladder, np.array([[100], [300]])
    )
    table = simulate_session(_constant(1000.0), manifest, FixedRule(0), session_s=9.0)
    assert len(table) == 5  # ceil(9 / 2)
    assert table["size_bits"].tolist() == [100, 300, 100, 300, 100]


def test_a_throughput_rule_climbs_the_ladder_on_a_fast_link() -> None:
    manifest = synthetic_manifest([235, 750, 1750], 4.0, 10)
    table = simulate_session(_constant(5000.0, 20.0), manifest, LastThroughput())
    assert table["representation"].tolist() == [0] + [2] * 9


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"buffer_max_s": 1.0}, "buffer_max_s must hold one"),
        ({"startup_segments": 0}, "startup_segments=0"),
        ({"startup_segments": 40}, "startup_segments=40"),
        ({"session_s": -5.0}, "session_s must be a positive"),
    ],
)
def test_bad_session_parameters_are_user_errors(kwargs: dict[str, Any], fragment: str) -> None:
    manifest = synthetic_manifest([500], 2.0, 2)
    with pytest.raises(UserError, match=fragment):
        simulate_session(_constant(1000.0), manifest, FixedRule(0), **kwargs)


def test_bad_rule_output_and_dead_traces_are_user_errors() -> None:
    manifest = synthetic_manifest([500], 2.0, 2)
    with pytest.raises(UserError, match="chose representation 3"):
        simulate_session(_constant(1000.0), manifest, FixedRule(3))
    with pytest.raises(UserError, match="continuous rate"):
        simulate_session(_constant(1000.0), manifest, FixedRule(0, rate_kbps=-1.0))
    with pytest.raises(UserError, match="delivers no data"):
        simulate_session(_trace([1000.0], [0.0]), manifest, FixedRule(0))


def test_a_plain_function_is_a_rule() -> None:
    table = simulate_session(
        _constant(1000.0), synthetic_manifest([500, 900], 2.0, 2), lambda state: 1
    )
    assert table["representation"].tolist() == [1, 1]


class BufferSteps:
    """A user's rule with its own fast path, a plain function of (buffer, last)."""

    def __init__(self, off_ladder: bool = False) -> None:
        self.off_ladder = off_ladder
        self.asked: list[tuple[float, int | None]] = []

    def choose(self, state: AbrState) -> Decision:
        return Decision(self._rung(state.buffer_s, state.last))

    def _rung(self, buffer_s: float, last: int | None) -> int:
        self.asked.append((buffer_s, last))
        if self.off_ladder and last is not None:
            return 7
        return 0 if buffer_s < 3.0 else 1

    def buffer_choice(self, ladder: object, segment_s: float, buffer_max_s: float) -> object:
        return self._rung


def test_a_users_fast_path_is_asked_with_none_first_and_its_rungs_are_checked() -> None:
    manifest = synthetic_manifest([500, 900], 2.0, 4)
    rule = BufferSteps()
    fast = simulate_session(_constant(4000.0), manifest, rule)
    assert rule.asked[0] == (0.0, None)  # no previous rung before the first decision
    assert [last for _, last in rule.asked[1:]] == fast["representation"].tolist()[:-1]
    slow = simulate_session(_constant(4000.0), manifest, lambda state: rule.choose(state))
    pd.testing.assert_frame_equal(fast, slow)  # the fast path plays what choose() would
    with pytest.raises(UserError, match="chose representation 7; the ladder has 2"):
        simulate_session(_constant(4000.0), manifest, BufferSteps(off_ladder=True))


# -- properties: buffer bounds and bit conservation -------------------------------------


def _reference_bits(trace: ThroughputTrace, start_s: float, end_s: float) -> float:
    """Bits carried in [start, end), walking the looped trace segment by segment."""
    total, t, i = 0.0, 0.0, 0
    n = len(trace.duration_ms)
    while t < end_s:
        seg_end = t + trace.duration_ms[i % n] / 1000.0
        overlap = min(seg_end, end_s) - max(t, start_s)
        if overlap > 0:
            total += overlap * trace.bandwidth_kbps[i % n] * 1000.0
        t, i = seg_end, i + 1
    return total


def _reference_latency(trace: ThroughputTrace, at_s: float) -> float:
    t, i, n = 0.0, 0, len(trace.duration_ms)
    while t + trace.duration_ms[i % n] / 1000.0 <= at_s:
        t, i = t + trace.duration_ms[i % n] / 1000.0, i + 1
    return float(trace.latency_ms[i % n]) / 1000.0


@st.composite
def sessions(draw: st.DrawFn) -> tuple[ThroughputTrace, VideoManifest, list[int], float, int]:
    n = draw(st.integers(1, 6))
    durations = draw(st.lists(st.integers(100, 3000), min_size=n, max_size=n))
    kbps = draw(st.lists(st.sampled_from([0.0, 150.0, 600.0, 2500.0]), min_size=n, max_size=n))
    kbps[draw(st.integers(0, n - 1))] = draw(st.floats(500.0, 8000.0))
    latency = draw(st.integers(0, 200))
    trace = _trace([float(d) for d in durations], kbps, float(latency))
    segment_s = draw(st.sampled_from([1.0, 2.0, 4.0]))
    manifest = synthetic_manifest([200, 800, 2000], segment_s, draw(st.integers(1, 25)))
    choices = draw(st.lists(st.integers(0, 2), min_size=1, max_size=10))
    buffer_max_s = segment_s * draw(st.integers(1, 6)) + draw(st.floats(0.0, 1.0))
    startup = draw(st.integers(1, int(buffer_max_s // segment_s)))
    return trace, manifest, choices, buffer_max_s, startup


class Scripted:
    def __init__(self, choices: list[int]) -> None:
        self.choices = choices

    def choose(self, state: AbrState) -> Decision:
        return Decision(self.choices[len(state.downloads) % len(self.choices)])


@settings(max_examples=150, deadline=None)
@given(case=sessions())
def test_buffer_stays_within_bounds_and_every_bit_is_carried_by_the_trace(
    case: tuple[ThroughputTrace, VideoManifest, list[int], float, int],
) -> None:
    trace, manifest, choices, buffer_max_s, startup = case
    table = simulate_session(
        trace, manifest, Scripted(choices), buffer_max_s=buffer_max_s, startup_segments=startup
    )
    assert len(table) == manifest.n_segments
    assert (table["buffer_after_s"] >= 0).all()
    assert (table["buffer_after_s"] <= buffer_max_s + 1e-9).all()
    assert (table["rebuffer_s"] >= 0).all()
    assert (table["rebuffer_s"].iloc[:startup] == 0).all()  # startup is not a stall
    gaps = table["download_start_s"].iloc[1:].to_numpy() - table["download_end_s"].iloc[:-1]
    assert (gaps.to_numpy() >= -1e-12).all()
    carried = [
        _reference_bits(trace, start + _reference_latency(trace, start), end)
        for start, end in zip(table["download_start_s"], table["download_end_s"], strict=True)
    ]
    np.testing.assert_allclose(carried, table["size_bits"].to_numpy(), rtol=1e-7)
    assert sum(carried) == pytest.approx(float(table["size_bits"].sum()), rel=1e-7)


# -- the scenario -----------------------------------------------------------------------


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    abr = pytest.importorskip("mqoe.policies.abr")
    if not hasattr(abr, "make_rule"):
        pytest.skip("mqoe.policies.abr has no make_rule yet")
    monkeypatch.setitem(SCENARIOS, "trace-abr", TraceAbr())


def _run(seed: int = 1, **overrides: object) -> tuple[dict[str, object], pd.DataFrame]:
    params = {"session_s": "60", **{k: str(v) for k, v in overrides.items()}}
    record = run_scenario("trace-abr", load_profile("nokia-1"), seed, params)
    return dict(record.metrics), record.tables["segments"]


@pytest.mark.usefixtures("registered")
def test_the_scenario_streams_the_synthetic_session_by_default() -> None:
    metrics, table = _run()
    assert len(table) == 15  # 60 s of 4 s segments
    assert set(table["bitrate_kbps"]) <= {235.0, 375.0, 560.0, 750.0, 1050.0, 1400.0, 1750.0}
    assert metrics["segments"] == 15
    assert metrics["mean_bitrate_kbps"] == pytest.approx(table["bitrate_kbps"].mean())


@pytest.mark.usefixtures("registered")
def test_the_synthetic_trace_comes_from_the_seed() -> None:
    _, first = _run(seed=1)
    _, again = _run(seed=1)
    _, other = _run(seed=2)
    pd.testing.assert_frame_equal(first, again)
    assert not first["download_end_s"].equals(other["download_end_s"])


@pytest.mark.usefixtures("registered")
def test_the_scenario_conforms() -> None:
    check_scenario("trace-abr", load_profile("nokia-1"))


@pytest.mark.usefixtures("registered")
def test_the_scenario_models_no_phone_so_a_given_profile_plays_no_part() -> None:
    quick = {"session_s": "40", "rule": "bola"}
    alone = run_scenario("trace-abr", None, 3, quick)
    for name in ("nokia-1", "nexus-5"):
        given = run_scenario("trace-abr", load_profile(name), 3, quick)
        assert given.run_id == alone.run_id and given.profile == "none"
        assert given.metrics == alone.metrics
    assert alone.run_id.startswith("trace-abr-s3-") and list(alone.tables) == ["segments"]
    with pytest.raises(UserError, match="models no phone; --set hotplug applies to phone"):
        run_scenario("trace-abr", None, 3, {**quick, "hotplug": "off"})
    with pytest.raises(UserError, match="scenario 'video' runs on a phone: give it a profile"):
        run_scenario("video", None, 3, {})


@pytest.mark.usefixtures("registered")
def test_the_scenario_replays_a_trace_file(tmp_path: Path) -> None:
    path = tmp_path / "flat.json"
    path.write_text(json.dumps([{"duration_ms": 1000, "bandwidth_kbps": 500, "latency_ms": 0}]))
    metrics, table = _run(trace=path, rule="throughput")
    # 500 kbps can never carry a 560 kbps segment in time; the top rate sustained is 375.
    assert table["bitrate_kbps"].max() <= 375.0
    assert math.isfinite(float(str(metrics["qoe_lin"])))


@pytest.mark.usefixtures("registered")
@pytest.mark.parametrize(
    ("overrides", "error", "fragment"),
    [
        ({"session_s": "-1"}, UserError, "session_s"),
        ({"trace_format": "pcap"}, UserError, "trace_format"),
        ({"startup_segments": "100"}, UserError, "startup_segments=100"),
        ({"rule": "no-such-rule"}, UserError, "no-such-rule"),
        ({"trace": "/nonexistent/trace.json"}, InputFileError, "no such file"),
        ({"manifest": "/nonexistent/m.json"}, InputFileError, "no such file"),
    ],
)
def test_bad_scenario_parameters_are_user_errors(
    overrides: dict[str, str], error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error, match=fragment):
        run_scenario("trace-abr", load_profile("nokia-1"), 0, overrides)


# -- the fast loop against the straightforward one --------------------------------------


def _reference_session(
    trace: ThroughputTrace, manifest: VideoManifest, rule: Any, buffer_max_s: float, n: int
) -> list[tuple[float, ...]]:
    """The player as first written: a full AbrState and Download every segment, and the
    trace located by separate lookups (same formulas: results must match bit for bit)."""
    dur = trace.duration_ms / 1000.0
    bps_arr = trace.bandwidth_kbps * 1000.0
    bounds = np.concatenate(([0.0], np.cumsum(dur))).tolist()
    cum = np.concatenate(([0.0], np.cumsum(dur * bps_arr))).tolist()
    bps, lat = bps_arr.tolist(), (trace.latency_ms / 1000.0).tolist()
    period_s, period_bits = bounds[-1], cum[-1]

    def locate(t: float) -> tuple[int, float, int]:
        loops = math.floor(t / period_s)
        into = t - loops * period_s
        return loops, into, min(bisect_right(bounds, into) - 1, len(bps) - 1)

    def end_of(start: float, size: float) -> float:
        first = start + lat[locate(start)[2]]
        loops, into, i = locate(first)
        bits = loops * period_bits + cum[i] + bps[i] * (into - bounds[i]) + size
        loops = math.ceil(bits / period_bits) - 1
        rest = bits - loops * period_bits
        if rest <= 0.0:
            loops, rest = loops - 1, rest + period_bits
        i = min(bisect_left(cum, rest), len(cum) - 1) - 1
        return loops * period_s + bounds[i] + (rest - cum[i]) / bps[i]

    rows, history = [], []
    now, buffer, last, segment_s = 0.0, 0.0, None, manifest.segment_s
    for k in range(n):
        room = buffer_max_s - segment_s
        if buffer > room:
            now, buffer = now + (buffer - room), room
        state = AbrState(now, manifest.ladder, segment_s, buffer, buffer_max_s, history, last)
        decision = rule.choose(state)
        index, rate = decision.representation, decision.rate_kbps
        if rate is None:
            rate = manifest.ladder[index].bitrate_kbps
            size = int(manifest.segment_sizes_bits[k % manifest.n_segments, index])
        else:
            size = max(1, round(rate * 1000.0 * segment_s))
        end = end_of(now, size)
        stall = 0.0
        if k > 0:  # startup_segments = 1: playing from the second segment's download on
            buffer -= end - now
            if buffer < 0.0:
                stall, buffer = -buffer, 0.0
        buffer += segment_s
        history.append(Download(k, index, rate, (size + 4) // 8, now, end))
        rows.append((k, index, rate, size, now, end, stall, buffer))
        last, now = index, end
    return rows


REFERENCE_RULES = ["bba", "bola", "fixed:representation=2", "throughput",
                   "conservative:mode=continuous", "bba:reservoir_s=4,cushion_s=6",
                   "bola:gamma_p=1", "exoplayer"]  # fmt: skip


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(st.integers(50, 3000), st.floats(0.0, 9000.0)), min_size=1, max_size=12),
    st.sampled_from([0.0, 40.0, 100.0]),
    st.sampled_from([1.0, 2.0, 4.0]),
    st.integers(1, 60),
    st.integers(2, 15),
    st.sampled_from(REFERENCE_RULES),
)
def test_the_player_matches_the_straightforward_loop_bit_for_bit(
    steps: list[tuple[int, float]],
    latency_ms: float,
    segment_s: float,
    n_segments: int,
    buffer_segments: int,
    spec: str,
) -> None:
    from mqoe.policies.abr import make_rule

    kbps = [rate for _, rate in steps]
    kbps[0] = max(kbps[0], 100.0)  # the trace carries something
    trace = _trace([float(d) for d, _ in steps], kbps, latency_ms)
    manifest = synthetic_manifest([200, 450, 800, 1500, 2600], segment_s, n_segments)
    buffer_max_s = segment_s * buffer_segments
    table = simulate_session(trace, manifest, make_rule(spec), buffer_max_s=buffer_max_s)
    expected = _reference_session(trace, manifest, make_rule(spec), buffer_max_s, n_segments)
    got = list(table.itertuples(index=False, name=None))
    assert [tuple(map(float, row)) for row in got] == [tuple(map(float, r)) for r in expected]
    assert list(table.dtypes.astype(str)) == ["int64"] * 2 + ["float64", "int64"] + ["float64"] * 4
