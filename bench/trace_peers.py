"""Trace-driven ABR speed against a peer: Pensieve's ``fixed_env`` chunk loop.

Pensieve (Mao, Netravali and Alizadeh, "Neural Adaptive Video Streaming with Pensieve",
SIGCOMM 2017; github.com/hongzimao/pensieve, ``sim/fixed_env.py``) evaluates ABR rules
with a chunk-level simulator over "cooked" throughput traces (a sample time and a
bandwidth per second). :func:`fixed_env_session` is our own short re-implementation of
its per-chunk step, not its code: for each chunk, walk the trace one sample at a time,
each sample carrying ``bandwidth × duration × 0.95`` bytes (the packet-payload share)
until the chunk is complete (the last sample partly); add the link RTT (no noise, as in
the fixed, evaluation environment); rebuffer by what the download took beyond the
buffer; drain, add the chunk; and when the buffer exceeds its threshold, sleep in
500 ms steps, walking the trace through the sleep without counting it as download time.
One difference from the original: plain Python ``max`` where it calls ``np.maximum`` on
scalars (cheaper, so the peer is the faster of the two).

:func:`figures` times it at a fixed quality against mqoe's trace-driven loop
(:func:`mqoe.workloads.trace_player.session_columns`, the per-segment loop behind
``simulate_session`` without its pandas table) on the same session: a 600 s video of
4 s segments on the 7-rung ladder of ``bench/speed.py``'s ``trace_mode_speed``, over
the same synthetic 3G-like trace (seed 1), the 750 kbit/s rung (index 3) for the fixed
quality, and the trace's 100 ms latency as the RTT. Each figure is the best of several
interleaved rounds (each round times every contender once, so a busy spell on this
shared machine slows all of them rather than one).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

PAYLOAD_FRACTION = 0.95  # Pensieve fixed_env: PACKET_PAYLOAD_PORTION
SLEEP_STEP_MS = 500.0  # Pensieve fixed_env: DRAIN_BUFFER_SLEEP_TIME
BUFFER_THRESHOLD_MS = 60_000.0  # Pensieve fixed_env: BUFFER_THRESH (60 s)
CHUNK_MS = 4000.0  # Pensieve fixed_env: VIDEO_CHUNCK_LEN

SESSION_S = 600.0  # as bench/speed.py's trace_mode_speed
LADDER_KBPS = (235.0, 375.0, 560.0, 750.0, 1050.0, 1400.0, 1750.0)
SEGMENT_S = 4.0
FIXED_INDEX = 3  # 750 kbit/s: about half the trace's 1.5 Mbit/s mean

# One chunk's outcome: (download delay ms incl. RTT, sleep ms, rebuffer s, buffer s after).
Chunk = tuple[float, float, float, float]


def fixed_env_session(
    time_s: Sequence[float],
    mbps: Sequence[float],
    chunk_bytes: Sequence[float],
    rtt_ms: float,
    *,
    chunk_ms: float = CHUNK_MS,
    threshold_ms: float = BUFFER_THRESHOLD_MS,
) -> list[Chunk]:
    """One session of ``chunk_bytes`` (the chosen quality's sizes) over a cooked trace.

    ``time_s[i]`` are sample times from 0 (ascending) and ``mbps[i]`` the bandwidth of
    the interval ending at ``time_s[i]`` (``mbps[0]`` unused); past the last sample the
    trace restarts at time 0. The session starts at time 0 with an empty buffer, so the
    first chunk's download counts as rebuffering, as in Pensieve.
    """
    if not any(rate > 0 for rate in mbps[1:]):
        raise ValueError("the trace carries nothing")
    n = len(mbps)
    ptr = 1  # the trace interval being used: (time_s[ptr - 1], time_s[ptr]]
    clock_s = time_s[0]
    buffer_ms = 0.0
    chunks: list[Chunk] = []
    for size in chunk_bytes:
        sent = 0.0
        delay_s = 0.0
        while True:  # fill the chunk, one trace interval at a time
            bytes_per_s = mbps[ptr] * 1e6 / 8.0
            step_s = time_s[ptr] - clock_s
            payload = bytes_per_s * step_s * PAYLOAD_FRACTION
            if sent + payload > size:  # the chunk completes inside this interval
                part_s = (size - sent) / bytes_per_s / PAYLOAD_FRACTION
                delay_s += part_s
                clock_s += part_s
                break
            sent += payload
            delay_s += step_s
            clock_s = time_s[ptr]
            ptr += 1
            if ptr >= n:
                ptr, clock_s = 1, 0.0
        delay_ms = delay_s * 1000.0 + rtt_ms
        rebuffer_ms = max(delay_ms - buffer_ms, 0.0)
        buffer_ms = max(buffer_ms - delay_ms, 0.0) + chunk_ms
        sleep_ms = 0.0
        if buffer_ms > threshold_ms:  # wait in whole sleep steps; the trace moves on
            sleep_ms = math.ceil((buffer_ms - threshold_ms) / SLEEP_STEP_MS) * SLEEP_STEP_MS
            buffer_ms -= sleep_ms
            left_ms = sleep_ms
            while True:
                step_s = time_s[ptr] - clock_s
                if step_s > left_ms / 1000.0:
                    clock_s += left_ms / 1000.0
                    break
                left_ms -= step_s * 1000.0
                clock_s = time_s[ptr]
                ptr += 1
                if ptr >= n:
                    ptr, clock_s = 1, 0.0
        chunks.append((delay_ms, sleep_ms, rebuffer_ms / 1000.0, buffer_ms / 1000.0))
    return chunks


def cooked(duration_ms: Sequence[float], kbps: Sequence[float]) -> tuple[list[float], list[float]]:
    """A piecewise-constant trace (durations, kbit/s) as a cooked one: sample times from 0
    and Mbit/s, interval ``i`` of ours ending at sample ``i + 1``."""
    times = [0.0]
    for duration in duration_ms:
        times.append(times[-1] + duration / 1000.0)
    return times, [0.0, *(rate / 1000.0 for rate in kbps)]


def _session() -> tuple[Any, Any, list[float], list[float], list[float], float]:
    """(trace, manifest, cooked times, cooked Mbit/s, fixed-quality chunk bytes, RTT ms)."""
    import numpy as np

    from mqoe.generators.throughput_traces import synthetic_manifest
    from mqoe.workloads.trace_player import synthetic_3g_trace

    trace = synthetic_3g_trace(np.random.default_rng(1), SESSION_S)
    n = math.ceil(SESSION_S / SEGMENT_S)
    manifest = synthetic_manifest(LADDER_KBPS, SEGMENT_S, n)
    times, mbps = cooked(trace.duration_ms.tolist(), trace.bandwidth_kbps.tolist())
    chunk_bytes = [bits / 8.0 for bits in manifest.segment_sizes_bits[:, FIXED_INDEX].tolist()]
    return trace, manifest, times, mbps, chunk_bytes, float(trace.latency_ms[0])


def _best_rates(
    contenders: dict[str, Callable[[], object]], work: float, rounds: int
) -> dict[str, float]:
    """``work`` per wall second of each contender: the best of ``rounds`` interleaved rounds."""
    best = dict.fromkeys(contenders, math.inf)
    for _ in range(rounds):
        for name, run in contenders.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: work / seconds for name, seconds in best.items()}


def figures(quick: bool = False) -> dict[str, float]:
    """Media seconds per wall second at a fixed quality (mqoe, the Pensieve loop), and
    ABR decisions (segments) per wall second of mqoe's loop under BOLA and BBA."""
    from mqoe.policies.abr import BBA, AbrRule, Bola, Fixed
    from mqoe.workloads.trace_player import session_columns

    trace, manifest, times, mbps, chunk_bytes, rtt_ms = _session()
    sessions = 5 if quick else 40  # per timed run
    rounds = 3 if quick else 9

    def mqoe_loop(rule: AbrRule) -> Callable[[], object]:
        def run() -> object:
            for _ in range(sessions):
                session_columns(trace, manifest, rule, buffer_max_s=60.0, session_s=SESSION_S)
            return None

        return run

    def pensieve() -> object:
        for _ in range(sessions):
            fixed_env_session(times, mbps, chunk_bytes, rtt_ms)
        return None

    fixed, bola, bba = Fixed(representation=FIXED_INDEX), Bola(), BBA()
    media = _best_rates(
        {"mqoe": mqoe_loop(fixed), "pensieve": pensieve}, sessions * SESSION_S, rounds
    )
    segments = sessions * len(chunk_bytes)
    decisions = _best_rates({"bola": mqoe_loop(bola), "bba": mqoe_loop(bba)}, segments, rounds)
    return {
        "trace_fixed_quality_media_s_per_wall_s": media["mqoe"],
        "pensieve_fixed_env_media_s_per_wall_s": media["pensieve"],
        "trace_bola_decisions_per_s": decisions["bola"],
        "trace_bba_decisions_per_s": decisions["bba"],
    }


if __name__ == "__main__":
    for name, value in figures().items():
        print(f"{name:42s} {value:14,.0f}")
