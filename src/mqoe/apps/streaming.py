"""The segment-fetch loop every simulated player runs.

A DASH/HLS player, whatever else it does, repeats one loop: wait until the buffer has
room for another segment, ask the ABR rule what to fetch (the state: the ladder, the
buffer, the download history, the device's signals), fetch it, hand it to the player.
:class:`SegmentFetcher` is that loop, once; the players differ only in what they plug
in:

* ``buffer()`` — media buffered ahead of the playhead (s): a
  :class:`~mqoe.apps.playback.PlaybackBuffer`'s level, or the video player's own
  playhead;
* ``fetch(nbytes)`` — a process step that brings the bytes (an HTTP GET over the
  simulated network, a LAN, the phone's receive path) and returns what it learnt (a
  :class:`~mqoe.device.net.Response`, or None);
* ``on_segment(download, media_s, buffer_s, result)`` — a process step that hands the
  segment to the player (its playback buffer, the source buffer's memory);
* ``signals()`` — the device's signals for the rule's state (trim level, frames dropped
  per rung, memory stall share); none for a host whose device is not modelled.

Users: the memory-pressure study's video player (:mod:`mqoe.apps.video`), the
downward-spiral study's client (:mod:`mqoe.apps.stream_client`) and the NetPIS video
app (:mod:`mqoe.apps.net_apps`). The trace-driven mode (:mod:`mqoe.workloads.
trace_player`) runs the same loop in closed form on a throughput trace, and the
testbed's real-socket client (:mod:`mqoe.emulation`) on real sockets; tests check both
against this one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from mqoe.device.net import HttpClient
from mqoe.engine import Environment, Event, seconds
from mqoe.policies.abr.base import AbrRule, AbrState, Download, Representation, checked

Step = Generator[Event, object, Any]
Fetch = Callable[[int], Step]
OnSegment = Callable[[Download, float, float, object], Step]


def _no_signals() -> Mapping[str, Any]:
    return {}


def http_fetch(http: HttpClient) -> Fetch:
    """``fetch`` for a player on an :class:`~mqoe.device.net.HttpClient`: one GET per
    segment; the step returns the :class:`~mqoe.device.net.Response`."""

    def fetch(nbytes: int) -> Step:
        response = yield http.get(nbytes)
        return response

    return fetch


def segment_bytes(rate_kbps: float, media_s: float) -> int:
    """Bytes of a segment of ``media_s`` seconds at ``rate_kbps`` (at least one)."""
    return max(1, round(rate_kbps * 1000 / 8 * media_s))


class SegmentFetcher:
    """Fetch ``media_s`` seconds of media (∞: until stopped) segment by segment."""

    def __init__(
        self,
        env: Environment,
        rule: AbrRule,
        ladder: Sequence[Representation],
        *,
        segment_s: float,
        buffer_max_s: float,
        buffer: Callable[[], float],
        fetch: Fetch,
        on_segment: OnSegment,
        media_s: float = math.inf,
        signals: Callable[[], Mapping[str, Any]] = _no_signals,
    ) -> None:
        if not (segment_s > 0 and buffer_max_s >= segment_s and media_s > 0):
            raise ValueError("need segment_s > 0, buffer_max_s ≥ segment_s and media_s > 0")
        self.env = env
        self.rule = rule
        self.ladder = tuple(ladder)
        self.segment_s = segment_s
        self.buffer_max_s = buffer_max_s
        self.buffer = buffer
        self.fetch = fetch
        self.on_segment = on_segment
        self.media_s = media_s
        self.signals = signals
        self.downloads: list[Download] = []  # the rule's history, oldest first
        self.last: int | None = None  # the previous decision's ladder index
        self.fetched_s = 0.0  # media fetched so far

    def retarget(self, rule: AbrRule, media_s: float) -> None:
        """Another rule and length before the first decision (warm starts)."""
        if self.downloads or self.fetched_s:
            raise RuntimeError("retarget() after the first segment: the rule is in use")
        if not media_s > 0:
            raise ValueError("media_s must be positive")
        self.rule = rule
        self.media_s = media_s

    def run(self) -> Generator[Event, object, None]:
        """The loop, as a process step (``env.process(fetcher.run())`` or ``yield from``)."""
        env, ladder = self.env, self.ladder
        segment = 0
        while self.fetched_s < self.media_s - 1e-9:
            buffer_s = yield from self._wait_for_room()
            now_s = env.now / 1e9
            state = AbrState(
                now_s=now_s,
                ladder=ladder,
                segment_s=self.segment_s,
                buffer_s=buffer_s,
                buffer_max_s=self.buffer_max_s,
                downloads=self.downloads,
                last=self.last,
                **self.signals(),
            )
            decision = checked(self.rule.choose(state), ladder, self.rule)
            rate_kbps = decision.effective_kbps(ladder)
            media_s = min(self.segment_s, self.media_s - self.fetched_s)
            size = segment_bytes(rate_kbps, media_s)
            result = yield from self.fetch(size)
            download = Download(
                segment, decision.representation, rate_kbps, size, now_s, env.now / 1e9
            )
            self.downloads.append(download)
            self.fetched_s += media_s
            self.last = decision.representation
            yield from self.on_segment(download, media_s, buffer_s, result)
            segment += 1

    def _wait_for_room(self) -> Generator[Event, object, float]:
        """Sleep until one more segment fits the buffer; the buffer level then (s)."""
        room_at = self.buffer_max_s - self.segment_s
        level = self.buffer()
        while level > room_at:
            wait_ns = seconds(level - room_at)
            if wait_ns <= 0:  # above by less than the clock's 1 ns: it fits
                break
            yield self.env.timeout(wait_ns)
            level = self.buffer()
        return level
