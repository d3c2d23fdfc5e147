"""The playback buffer every streaming client shares, simulated or on real sockets.

Media buffered ahead of the playhead drains in real time once playback has started;
time the playhead spends waiting on an empty buffer is rebuffering. The clock is a
function returning nanoseconds (the simulator's ``env.now`` or ``time.monotonic_ns``), so
the same arithmetic runs in simulated and in wall-clock time.
"""

from __future__ import annotations

from collections.abc import Callable


class PlaybackBuffer:
    """Seconds of media ahead of the playhead, drained lazily whenever it is read."""

    __slots__ = ("_clock", "_level_s", "_updated_ns", "played_s", "playing", "rebuffer_s")

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._level_s = 0.0
        self._updated_ns = clock()
        self.played_s = 0.0
        self.playing = False  # set by the client at its first frame
        self.rebuffer_s = 0.0

    def level_s(self) -> float:
        """Media buffered ahead of the playhead now."""
        now = self._clock()
        elapsed = (now - self._updated_ns) / 1e9
        self._updated_ns = now
        if self.playing and elapsed > 0:
            played = min(self._level_s, elapsed)
            self._level_s -= played
            self.played_s += played
            self.rebuffer_s += elapsed - played  # the playhead waited on an empty buffer
        return self._level_s

    def add(self, media_s: float) -> None:
        """``media_s`` seconds of media arrived."""
        self.level_s()
        self._level_s += media_s


__all__ = ["PlaybackBuffer"]
