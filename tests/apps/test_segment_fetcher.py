"""The one segment-fetch loop (apps/streaming.py), and the trace-driven mode mirroring it."""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
import pytest

from mqoe.analysis.throughput_traces import ThroughputTrace
from mqoe.apps.playback import PlaybackBuffer
from mqoe.apps.streaming import SegmentFetcher, segment_bytes
from mqoe.engine import Environment, Event, seconds
from mqoe.generators.throughput_traces import synthetic_manifest
from mqoe.policies.abr import Representation, make_rule
from mqoe.policies.abr.base import Download
from mqoe.workloads.trace_player import simulate_session

LADDER = tuple(Representation(float(r)) for r in (300, 750, 1200, 1850, 2850, 4300))


def _player(
    env: Environment,
    rule_spec: str,
    *,
    rate_kbps: float,
    latency_s: float = 0.0,
    media_s: float = float("inf"),
    segment_s: float = 4.0,
    buffer_max_s: float = 20.0,
) -> tuple[SegmentFetcher, PlaybackBuffer]:
    """A player on a constant link: a segment takes the latency, then size / rate."""
    playback = PlaybackBuffer(lambda: env.now)

    def fetch(nbytes: int) -> Generator[Event, object, None]:
        yield env.timeout(seconds(latency_s + nbytes * 8 / (rate_kbps * 1000)))

    def take(
        d: Download, media: float, level: float, result: object
    ) -> Generator[Event, object, None]:
        playback.add(media)
        playback.playing = True
        yield from ()

    fetcher = SegmentFetcher(
        env, make_rule(rule_spec), LADDER, segment_s=segment_s, buffer_max_s=buffer_max_s,
        buffer=playback.level_s, fetch=fetch, on_segment=take, media_s=media_s,
    )  # fmt: skip
    env.process(fetcher.run(), "player")
    return fetcher, playback


def test_a_finite_video_ends_with_a_partial_segment() -> None:
    env = Environment(1)
    fetcher, _ = _player(env, "fixed:representation=1", rate_kbps=5000, media_s=10.0)
    env.run(seconds(60))
    sizes = [d.size_bytes for d in fetcher.downloads]
    assert sizes == [segment_bytes(750, 4.0)] * 2 + [segment_bytes(750, 2.0)]
    assert fetcher.fetched_s == pytest.approx(10.0)


def test_a_full_buffer_paces_requests_at_one_segment_per_segment_duration() -> None:
    env = Environment(1)
    fetcher, playback = _player(env, "fixed:representation=0", rate_kbps=10_000)
    env.run(seconds(200))
    starts = [d.start_s for d in fetcher.downloads]
    steady = np.diff(starts[10:])
    assert steady == pytest.approx(np.full(len(steady), 4.0), abs=1e-6)
    assert playback.level_s() <= 20.0 + 1e-9


def test_the_rule_sees_the_history_and_the_buffer() -> None:
    seen: list[tuple[int, float]] = []

    class Spy:
        def choose(self, state):  # type: ignore[no-untyped-def]
            seen.append((len(state.downloads), state.buffer_s))
            from mqoe.policies.abr import Decision

            return Decision(0)

    env = Environment(1)
    playback = PlaybackBuffer(lambda: env.now)

    def fetch(nbytes: int) -> Generator[Event, object, None]:
        yield env.timeout(seconds(1))

    def take(
        d: Download, media: float, level: float, result: object
    ) -> Generator[Event, object, None]:
        playback.add(media)
        playback.playing = True
        yield from ()

    fetcher = SegmentFetcher(env, Spy(), LADDER, segment_s=4.0, buffer_max_s=8.0,
                             buffer=playback.level_s, fetch=fetch, on_segment=take,
                             media_s=16.0)  # fmt: skip
    env.process(fetcher.run(), "p")
    env.run(seconds(60))
    assert [n for n, _ in seen] == [0, 1, 2, 3]
    assert seen[0][1] == 0.0 and seen[1][1] == pytest.approx(4.0)
    assert all(level <= 4.0 + 1e-9 for _, level in seen)  # room for one more segment


@pytest.mark.parametrize("rule", ["throughput", "bba", "bola"])
def test_the_trace_driven_mode_makes_the_same_choices_as_the_loop(rule: str) -> None:
    """The closed-form trace loop and the event-driven loop on the same constant link."""
    rate_kbps, latency_s = 2200.0, 0.05
    trace = ThroughputTrace(
        name="constant", duration_ms=np.array([1000.0]), bandwidth_kbps=np.array([rate_kbps]),
        latency_ms=np.array([latency_s * 1000.0]),
    )  # fmt: skip
    manifest = synthetic_manifest([r.bitrate_kbps for r in LADDER], 4.0, 40)
    table = simulate_session(trace, manifest, make_rule(rule), buffer_max_s=20.0)
    env = Environment(1)
    fetcher, _ = _player(
        env, rule, rate_kbps=rate_kbps, latency_s=latency_s, media_s=160.0, buffer_max_s=20.0
    )
    env.run(seconds(1000))
    assert [d.representation for d in fetcher.downloads] == list(table["representation"])
    assert [d.end_s for d in fetcher.downloads] == pytest.approx(
        list(table["download_end_s"]), abs=1e-6
    )
