"""A segment-based adaptive streaming client over HTTP (the spiral's video client).

It keeps a playback buffer of at most ``buffer_max_s``, drained at 1 s per second once
playback starts (after the first segment), asks for the next segment whenever there is
room for one, and lets an ABR rule choose what to ask for. Its throughput samples are
what it measures (bytes / download time), so a short download that never leaves slow
start looks slow — the root of the downward spiral (the IMC 2012 study).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass

from mqoe.apps.playback import PlaybackBuffer
from mqoe.apps.streaming import SegmentFetcher, http_fetch
from mqoe.device.net import HttpClient, Response
from mqoe.engine import Environment, Event
from mqoe.policies.abr.base import AbrRule, Download, Representation


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
        self.env = env
        self.http = http
        self.segments: list[SegmentRecord] = []
        self.playback = PlaybackBuffer(lambda: env.now)
        self.fetcher = SegmentFetcher(
            env, rule, ladder, segment_s=segment_s, buffer_max_s=buffer_max_s,
            buffer=self.playback.level_s, fetch=http_fetch(http), on_segment=self._on_segment,
        )  # fmt: skip
        self.downloads = self.fetcher.downloads
        self.process = env.process(self.fetcher.run(), name)

    def buffer_s(self) -> float:
        """Media buffered ahead of the playhead now."""
        return self.playback.level_s()

    @property
    def rebuffer_s(self) -> float:
        return self.playback.rebuffer_s

    def _on_segment(
        self, download: Download, media_s: float, buffer_s: float, result: object
    ) -> Generator[Event, object, None]:
        assert isinstance(result, Response)
        self.segments.append(
            SegmentRecord(
                download.segment,
                download.representation,
                download.rate_kbps,
                download.size_bytes,
                download.start_s,
                download.end_s,
                buffer_s,
                result.new_connection,
            )
        )
        self.playback.add(media_s)
        self.playback.playing = True
        yield from ()
