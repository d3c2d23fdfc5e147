"""Network apps for the NetPIS study: a streaming video player, an app-store download, a browser.

Each app is a process (pid, zygote child) owning its sockets (``Connection.owner_pid``)
and reads its sockets itself: a loader thread wakes every ``read_period`` and drains
what arrived (``receiver.read()``), so unread data — what NetPIS-D traces — piles up in
the kernel between reads, as with a real app's read loop.

* :class:`VideoApp` — download-then-pause streaming of a finite video: segments are
  fetched back to back until ``buffer_max_s`` of media is buffered, then the player
  pauses until there is room for one more segment; an ABR rule picks each segment's
  rate; service time = play pressed → last frame shown (video length + start-up delay +
  stalls).
* :class:`AppStoreDownload` — one long download (NetPIS study: a 1.1 GB app-store update).
* :class:`BrowsingApp` — page loads: bursts of small objects over several persistent
  connections (as a browser's per-host pool), with think time between pages.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

from mqoe.apps.playback import PlaybackBuffer
from mqoe.apps.streaming import SegmentFetcher, http_fetch
from mqoe.device.net import BulkFlow, Connection, HttpClient, Network, TcpConfig
from mqoe.device.net.network import Owner
from mqoe.engine import Environment, Event, seconds
from mqoe.policies.abr.base import AbrRule, Download, Representation

APP_STORE_BYTES = 1_100_000_000  # NetPIS study: the 1.1 GB background update


class SocketReader:
    """An app's read loop: every ``period_ns`` it drains every socket ``sockets()`` lists."""

    def __init__(
        self, env: Environment, period_ns: int, sockets: Callable[[], Sequence[Connection]]
    ) -> None:
        if period_ns <= 0:
            raise ValueError("the read period must be positive")
        self.env = env
        self.period_ns = period_ns
        self.sockets = sockets
        self.bytes_read = 0
        self.stopped = False
        env.schedule(period_ns, self._tick)

    def _tick(self, _: object) -> None:
        for conn in self.sockets():
            self.bytes_read += conn.receiver.read()
        if not self.stopped:
            self.env.schedule(self.period_ns, self._tick)


@dataclass(frozen=True, slots=True)
class VideoSegment:
    representation: int
    rate_kbps: float
    size_bytes: int
    request_s: float
    done_s: float


class VideoApp:
    """A finite video streamed download-then-pause; ``done`` fires at the last frame."""

    def __init__(
        self,
        env: Environment,
        http: HttpClient,
        rule: AbrRule,
        ladder: Sequence[Representation],
        *,
        video_s: float,
        segment_s: float,
        buffer_max_s: float,
    ) -> None:
        self.env = env
        self.http = http
        self.segments: list[VideoSegment] = []
        self.started_ns = env.now
        self.first_frame_ns = -1
        self.ended_ns = -1
        self.downloaded_ns = -1  # the last segment is in
        self.playback = PlaybackBuffer(lambda: env.now)
        self.done = Event(env)
        self.fetcher = SegmentFetcher(
            env, rule, ladder, segment_s=segment_s, buffer_max_s=buffer_max_s,
            buffer=self.playback.level_s, fetch=http_fetch(http), on_segment=self._on_segment,
            media_s=video_s,
        )  # fmt: skip
        self.downloads = self.fetcher.downloads
        env.process(self._run(), "video")

    @property
    def service_s(self) -> float:
        """Play pressed → last frame (nan until the video has ended)."""
        if self.ended_ns < 0:
            return float("nan")
        return (self.ended_ns - self.started_ns) / 1e9

    @property
    def rebuffer_s(self) -> float:
        return self.playback.rebuffer_s

    def _run(self) -> Generator[Event, object, None]:
        yield from self.fetcher.run()
        self.downloaded_ns = self.env.now
        yield self.env.timeout(seconds(self.playback.level_s()))
        self.playback.level_s()  # account the last stretch of playback (played_s, rebuffer_s)
        self.ended_ns = self.env.now
        self.done.succeed(self)

    def _on_segment(
        self, download: Download, media_s: float, buffer_s: float, result: object
    ) -> Generator[Event, object, None]:
        self.segments.append(
            VideoSegment(
                download.representation, download.rate_kbps, download.size_bytes,
                download.start_s, download.end_s,
            )
        )  # fmt: skip
        playback = self.playback
        playback.add(media_s)
        if not playback.playing:
            playback.playing = True
            self.first_frame_ns = self.env.now
        yield from ()


class AppStoreDownload:
    """One long download of ``nbytes`` from ``server`` (the NetPIS study's app-store update)."""

    def __init__(
        self, net: Network, server: str, client: str, cfg: TcpConfig, owner_pid: int = -1,
        nbytes: int = APP_STORE_BYTES, owner: Owner | None = None,
    ) -> None:  # fmt: skip
        self.flow = BulkFlow(
            net, server, client, cfg, auto_read=False, owner_pid=owner_pid, owner=owner
        )
        self.nbytes = nbytes

    def start(self) -> None:
        self.flow.start(self.nbytes)

    @property
    def connection(self) -> Connection:
        return self.flow.connection

    @property
    def bytes_received(self) -> int:
        return self.flow.bytes_received


class BrowsingApp:
    """Page loads: ``objects`` fetched over ``parallel`` persistent connections per page.

    Object sizes are lognormal (median ``object_median_bytes``, σ = ``object_sigma``),
    drawn from the named stream ``rng``; think time ``think_s`` between pages.
    """

    def __init__(
        self,
        env: Environment,
        net: Network,
        server: str,
        client: str,
        cfg: TcpConfig,
        rng: object,
        *,
        owner_pid: int = -1,
        owner: Owner | None = None,
        pages: int,
        objects: int = 30,
        parallel: int = 6,  # browsers keep up to 6 connections per host (HTTP/1.1 practice)
        object_median_bytes: int = 12_000,
        object_sigma: float = 1.2,
        think_s: float = 8.0,
    ) -> None:
        self.env = env
        self.clients = [
            HttpClient(net, server, client, cfg, auto_read=False, owner_pid=owner_pid, owner=owner)
            for _ in range(parallel)
        ]
        self.rng = rng
        self.pages = pages
        self.objects = objects
        self.object_median_bytes = object_median_bytes
        self.object_sigma = object_sigma
        self.think_s = think_s
        self.page_load_s: list[float] = []
        self.done = Event(env)
        env.process(self._run(), "browser")

    @property
    def connections(self) -> list[Connection]:
        return [c for client in self.clients for c in client.connections]

    def _run(self) -> Generator[Event, object, None]:
        import math

        env = self.env
        for _ in range(self.pages):
            sizes = self.rng.lognormal(  # type: ignore[attr-defined]
                math.log(self.object_median_bytes), self.object_sigma, self.objects
            )
            queue = [max(1, int(s)) for s in sizes]
            start = env.now
            workers = [
                env.process(self._worker(client, queue), "browser-conn") for client in self.clients
            ]
            yield from workers
            self.page_load_s.append((env.now - start) / 1e9)
            yield env.timeout(seconds(self.think_s))
        self.done.succeed(self)

    def _worker(self, client: HttpClient, queue: list[int]) -> Generator[Event, object, None]:
        while queue:
            size = queue.pop(0)
            yield client.get(size)
