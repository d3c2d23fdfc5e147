"""bench/trace_peers.py: the Pensieve fixed_env re-implementation's session facts by hand."""

from __future__ import annotations

import pytest

from trace_peers import SESSION_S, _session, cooked, figures, fixed_env_session

# 1 s samples at 8 Mbit/s: 1 MB/s, of which 0.95 MB/s is payload.
TIMES = [0.0, 1.0, 2.0, 3.0]
MBPS = [0.0, 8.0, 8.0, 8.0]


def _flat(chunks: list[tuple[float, float, float, float]]) -> list[float]:
    return [value for chunk in chunks for value in chunk]


def test_a_chunk_takes_its_payload_time_plus_the_rtt_and_the_first_is_a_stall() -> None:
    chunks = fixed_env_session(TIMES, MBPS, [1.9e6, 0.95e6], 100.0)
    # 1.9 MB at 0.95 MB/s = 2 s + 100 ms, all rebuffering (empty buffer); then 1 s + 0.1 s
    # drained from the 4 s chunk: 4 − 1.1 + 4 = 6.9 s.
    assert _flat(chunks) == pytest.approx([2100.0, 0.0, 2.1, 4.0, 1100.0, 0.0, 0.0, 6.9])


def test_a_full_buffer_sleeps_in_half_seconds_while_the_trace_moves_on() -> None:
    chunks = fixed_env_session(TIMES, MBPS, [1.9e6, 0.95e6, 0.95e6], 100.0, threshold_ms=5000.0)
    # 6.9 s > 5 s: sleep ceil(1.9 / 0.5) × 0.5 = 2 s (4.9 s left), which walks the looped
    # trace from 0 to 2 s; the next chunk drains 1.1 s: 4.9 − 1.1 + 4 = 7.8 s, sleep 3 s.
    assert _flat(chunks) == pytest.approx(
        [2100.0, 0.0, 2.1, 4.0, 1100.0, 2000.0, 0.0, 4.9, 1100.0, 3000.0, 0.0, 4.8]
    )
    media_s = 4.0 * len(chunks)
    assert media_s == 12.0
    assert sum(chunk[2] for chunk in chunks) == pytest.approx(2.1)


def test_a_slow_interval_is_crossed_then_the_chunk_ends_in_the_next() -> None:
    # 1 Mbit/s for 1 s carries 118 750 B of payload; 200 000 B needs 81 250 B more at 8 Mbit/s.
    chunks = fixed_env_session([0.0, 1.0, 2.0], [0.0, 1.0, 8.0], [200_000.0], 0.0)
    assert chunks[0][0] == pytest.approx(1000.0 + 81_250 / 950_000 * 1000.0)


def test_a_dead_trace_is_refused_and_cooking_shifts_by_one_sample() -> None:
    with pytest.raises(ValueError, match="carries nothing"):
        fixed_env_session([0.0, 1.0], [5.0, 0.0], [1.0], 0.0)
    assert cooked([1000.0, 500.0], [2000.0, 300.0]) == ([0.0, 1.0, 1.5], [0.0, 2.0, 0.3])


def test_the_benchmark_session_streams_600_media_seconds_within_the_buffer() -> None:
    _, manifest, times, mbps, chunk_bytes, rtt_ms = _session()
    chunks = fixed_env_session(times, mbps, chunk_bytes, rtt_ms)
    assert len(chunks) * manifest.segment_s == SESSION_S
    assert rtt_ms == 100.0
    assert all(0.0 < buffer_s <= 60.0 for *_, buffer_s in chunks)
    assert any(sleep_ms > 0 for _, sleep_ms, _, _ in chunks)  # 750 kbit/s fills the buffer


def test_figures_names_the_four_rates() -> None:
    values = figures(quick=True)
    assert sorted(values) == [
        "pensieve_fixed_env_media_s_per_wall_s",
        "trace_bba_decisions_per_s",
        "trace_bola_decisions_per_s",
        "trace_fixed_quality_media_s_per_wall_s",
    ]
    assert all(value > 0 for value in values.values())
