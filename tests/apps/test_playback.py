"""The shared playback buffer: media is conserved and wall time is played or stalled."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mqoe.apps.playback import PlaybackBuffer

steps = st.lists(
    st.tuples(st.integers(0, 10_000_000_000), st.floats(0.0, 10.0)), min_size=1, max_size=40
)


@given(steps)
def test_media_is_conserved_and_time_is_played_or_stalled(events: list[tuple[int, float]]) -> None:
    now = [0]
    buffer = PlaybackBuffer(lambda: now[0])
    added = 0.0
    started_ns = None
    for gap_ns, media_s in events:
        now[0] += gap_ns
        assert buffer.level_s() >= 0.0  # never negative
        buffer.add(media_s)
        added += media_s
        if started_ns is None:
            started_ns = now[0]
            buffer.playing = True
    now[0] += 5_000_000_000
    level = buffer.level_s()
    assert abs(buffer.played_s + level - added) < 1e-6
    assert started_ns is not None
    elapsed = (now[0] - started_ns) / 1e9
    assert abs(buffer.played_s + buffer.rebuffer_s - elapsed) < 1e-6


def test_nothing_drains_before_playback_starts() -> None:
    now = [0]
    buffer = PlaybackBuffer(lambda: now[0])
    buffer.add(4.0)
    now[0] = 3_000_000_000
    assert buffer.level_s() == 4.0 and buffer.rebuffer_s == 0.0
    buffer.playing = True
    now[0] = 10_000_000_000
    assert buffer.level_s() == 0.0
    assert buffer.played_s == 4.0 and abs(buffer.rebuffer_s - 3.0) < 1e-9
