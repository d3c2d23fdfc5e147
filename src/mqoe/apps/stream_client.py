"""A segment-based adaptive streaming client over HTTP (the spiral's video client).

It keeps a playback buffer of at most ``buffer_max_s``, drained at 1 s per second once
playback starts (after the first segment), asks for the next segment whenever there is
room for one, and lets an ABR rule choose what to ask for. Its throughput samples are
what it measures (bytes / download time), so a short download that never leaves slow
start looks slow — the root of the downward spiral (spec 03).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass

from mqoe.apps.playback import PlaybackBuffer
from mqoe.device.net import HttpClient, Response
from mqoe.engine import Environment, Event, seconds
from mqoe.policies.abr.base import AbrRule, AbrState, Download, Representation, checked


@dataclass(frozen=True, slots=True)
class SegmentRecord:
    segment: int
    representation: int
    rate_kbps: float
    size_bytes: int
    request_s: float
    done_s: float
    buffer_at_request_s: float
    new_connection: bool

    @property
    def throughput_kbps(self) -> float:
        return self.size_bytes * 8 / 1000 / max(self.done_s - self.request_s, 1e-9)


class StreamingClient:
    def __init__(
        self,
        env: Environment,
        http: HttpClient,
        rule: AbrRule,
        ladder: Sequence[Representation],
        *,
        segment_s: float = 4.0,
        buffer_max_s: float = 240.0,
        name: str = "video",
    ) -> None:
        if buffer_max_s < segment_s:
            raise ValueError("the buffer must hold at least one segment")
        self.env = env
        self.http = http
        self.rule = rule
        self.ladder = tuple(ladder)
        self.segment_s = segment_s
        self.buffer_max_s = buffer_max_s
        self.name = name
        self.downloads: list[Download] = []
        self.segments: list[SegmentRecord] = []
        self.playback = PlaybackBuffer(lambda: env.now)
        self.process = env.process(self._run(), name)

    def buffer_s(self) -> float:
        """Media buffered ahead of the playhead now."""
        return self.playback.level_s()

    @property
    def rebuffer_s(self) -> float:
        return self.playback.rebuffer_s

    def _run(self) -> Generator[Event, object, None]:
        env, last = self.env, None
        segment = 0
        while True:
            room_at = self.buffer_max_s - self.segment_s
            buffer_s = self.buffer_s()
            if buffer_s > room_at:
                yield env.timeout(seconds(buffer_s - room_at))
                buffer_s = self.buffer_s()
            now_s = env.now / 1e9
            state = AbrState(
                now_s=now_s,
                ladder=self.ladder,
                segment_s=self.segment_s,
                buffer_s=buffer_s,
                buffer_max_s=self.buffer_max_s,
                downloads=self.downloads,
                last=last,
            )
            decision = checked(self.rule.choose(state), self.ladder, self.rule)
            rate_kbps = decision.effective_kbps(self.ladder)
            size = max(1, round(rate_kbps * 1000 / 8 * self.segment_s))
            response = yield self.http.get(size)
            assert isinstance(response, Response)
            done_s = response.done_ns / 1e9
            self.downloads.append(
                Download(segment, decision.representation, rate_kbps, size, now_s, done_s)
            )
            record = SegmentRecord(
                segment,
                decision.representation,
                rate_kbps,
                size,
                now_s,
                done_s,
                buffer_s,
                response.new_connection,
            )
            self.segments.append(record)
            self.playback.add(self.segment_s)
            self.playback.playing = True
            last = decision.representation
            segment += 1
