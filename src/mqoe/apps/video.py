"""A DASH video player on the phone (memory-pressure study, CoNEXT 2022): frames are work
on named threads.

The player host (browser-like or app-like) is a process with threads:

* ``decoder`` (MediaCodec's CPU side) decodes frames in order, up to ``queue_frames``
  ahead of the playhead, once their chunk has arrived;
* ``compositor`` composites each decoded frame when it is due, with the ``main`` thread's
  per-frame work (the page/player logic) — a browser host has a heavier main thread;
* SurfaceFlinger (a system thread) composes the screen.

Frame *i* is due at ``start + i/fps`` and must be on screen by the next frame time; a
frame decoded too late is dropped before compositing, one composed too late is dropped
too (the player keeps 1× playback by skipping). A decoder that falls behind the clock by
more than the host's threshold skips to the next keyframe, dropping the frames in between
undecoded (Gecko, ExoPlayer). Drop rate = dropped / frames due.
Every frame's work touches the threads' working sets through the memory model, so
evicted pages refault (storage reads behind mmcqd) and swapped pages decompress.

Memory (the PSS that grows with resolution and frame rate) is allocated through the
memory model: the host's baseline, decoder output buffers, compositor textures
(both ∝ pixels × buffered frames) and the MSE source buffer (compressed chunks, ∝
bitrate × buffered seconds). A kill by lmkd stops everything: a crash.

Chunks come from a :class:`~mqoe.apps.segments.SegmentSource`: by default a fast LAN
that is never the bottleneck (as in the study), where a 4 s chunk arrives after
``size / lan_mbps``; or HTTP over the phone's own network and receive path
(:class:`~mqoe.apps.segments.HttpSegments`). Its bytes go to the page cache (the
browser's media cache) and the source buffer. When the playhead reaches a chunk that has
not arrived, playback stalls (rebuffers) and the clock resumes with the chunk's first
decoded frame, as players do when their buffer runs dry.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Final

from mqoe.apps.segments import LanSegments, SegmentSource
from mqoe.apps.streaming import SegmentFetcher
from mqoe.device.cpu import Fair, Thread
from mqoe.device.phone import Phone
from mqoe.device.process import FOREGROUND_APP_ADJ, Process
from mqoe.engine import Event, seconds
from mqoe.engine.rounding import round_half_even
from mqoe.policies.abr.base import AbrRule, Download, Representation

MB_PAGES: Final = 256
SKIPPED: Final = -1.0  # the cost weight of a frame skipped to the next keyframe (not decoded)
RESOLUTIONS: Final = {240: (426, 240), 360: (640, 360), 480: (854, 480), 720: (1280, 720),
               1080: (1920, 1080), 1440: (2560, 1440)}  # fmt: skip


@dataclass(frozen=True)
class PlayerHost:
    """What kind of app plays the video (calibration constants; the memory-pressure study used a
    browser)."""

    name: str
    base_anon_mb: float  # JS heap, DOM, player state
    base_file_mb: float  # code and libraries touched while playing
    main_weight: float  # × the device's main-thread cycles per frame
    queue_frames: int  # decoded frames the decoder may run ahead
    touch_pages_per_frame: int  # working-set pages each frame's work touches
    back_buffer_s: float  # played media kept in the source buffer
    # Other threads of the host woken every frame (a browser's renderer, image bridge,
    # media state machine, JS timers): each runs helper_cycles × main_weight per frame
    # alongside the compositor. Off the frame's critical path, but they compete for
    # the cores at the same instants, which is where the video threads' Runnable time
    # comes from.
    helpers: tuple[str, ...] = ()
    helper_cycles_per_frame: float = 0.0
    # Skip to the next keyframe when decoding falls this far behind the playback clock
    # (None: never): the frames up to that keyframe are dropped without being decoded.
    skip_behind_s: float | None = None


# Firefox + dash.js-like: Gecko's per-frame threads besides the compositor. Gecko's
# MediaDecoderStateMachine skips the video to the next keyframe once the decoded video
# ends more than LOW_VIDEO_THRESHOLD (60 ms) behind the clock
# (DecodingState::NeedToSkipToNextKeyframe, dom/media/MediaDecoderStateMachine.cpp).
BROWSER: Final = PlayerHost(
    "browser", 160.0, 90.0, 1.0, 4, 48, 30.0,
    helpers=("Renderer", "ImageBridgeChld", "MediaDecoderStateMachine", "DOM Worker"),
    helper_cycles_per_frame=1.0e6, skip_behind_s=0.060,
)  # fmt: skip
# ExoPlayer drops to the next keyframe when a frame is over 500 ms late
# (MediaCodecVideoRenderer.shouldDropBuffersToKeyframe).
APP: Final = PlayerHost("app", 60.0, 40.0, 0.3, 6, 24, 0.0, skip_behind_s=0.5)  # ExoPlayer-like
HOSTS: Final = {"browser": BROWSER, "app": APP}

# Decode complexity relative to a travel vlog (the memory-pressure study: genres differ only in it).
GENRES: Final = {"travel": 1.0, "news": 0.8, "animation": 0.7, "sports": 1.3, "gaming": 1.2}


@dataclass(frozen=True, slots=True)
class FrameRecord:
    index: int
    due_ns: int
    shown: bool
    representation: int


class VideoPlayer:
    def __init__(
        self,
        phone: Phone,
        ladder: Sequence[Representation],
        rule: AbrRule,
        *,
        host: PlayerHost = BROWSER,
        genre: str = "travel",
        duration_s: float = 120.0,
        segment_s: float = 4.0,
        buffer_max_s: float = 60.0,
        gop_s: float = 2.0,
        lan_mbps: float = 100.0,
        autoplay: bool = True,
        source: SegmentSource | None = None,
    ) -> None:
        if genre not in GENRES:
            raise ValueError(f"genre must be one of {', '.join(GENRES)}")
        if not gop_s > 0:
            raise ValueError(f"gop_s must be positive, got {gop_s}")
        self.phone = phone
        self.ladder = tuple(ladder)
        self.rule = rule
        self.host = host
        self.complexity = GENRES[genre]
        self.duration_s = duration_s
        self.segment_s = segment_s
        self.buffer_max_s = buffer_max_s
        self.gop_ns = seconds(gop_s)  # keyframe spacing (memory-pressure study: 2 s GOP)
        self.source: SegmentSource = source or LanSegments(lan_mbps)
        env, cpu = phone.env, phone.cpu
        self.process: Process = phone.processes.spawn(host.name, FOREGROUND_APP_ADJ, env.now)
        self.decoder = cpu.thread("MediaCodec", Fair(-2), process=host.name)
        self.compositor = cpu.thread("Compositor", Fair(-4), process=host.name)
        self.main = cpu.thread("main", Fair(0), process=host.name)
        self.network = cpu.thread("network", Fair(0), process=host.name)
        self.helpers = [cpu.thread(name, Fair(0), process=host.name) for name in host.helpers]
        phone.processes.add_threads(
            self.process, [self.decoder, self.compositor, self.main, self.network, *self.helpers]
        )
        self._frame_tick: Event = env.event()  # fires at each frame's compose time
        self.surfaceflinger = _surfaceflinger(phone)
        self.crashed_ns = -1
        self.frames: list[FrameRecord] = []
        self.trim_level = 0
        self.last_trim_s: float | None = None
        self._chunks: list[int] = []  # representation of each downloaded chunk
        # Decoded frames: (due offset ns, period ns, representation, cost weight); a
        # frame skipped to the next keyframe is queued with weight SKIPPED, in order.
        self._decoded: deque[tuple[int, int, int, float]] = deque()
        self._decoded_frames = 0  # …of which really decoded (the decoder's look-ahead)
        self.keyframe_skips = 0
        self.skipped_frames = 0
        sigma = phone.profile.video.frame_cost_sigma
        self._frame_rng = phone.env.rng("video-frames")
        self._sigma = sigma
        self._released_chunks = 0
        self._skip_until_ns = 0  # stream time of the keyframe a skip is heading for
        self._wake_decoder: Event | None = None
        self._wake_renderer: Event | None = None
        self._wake_network: Event | None = None
        self._start_ns = -1
        self._chunk_ready_ns: list[int] = []  # when each chunk was in the source buffer
        self.stalled_ns = 0  # playback clock paused for want of data (rebuffering)
        # Per ladder index: (dropped, total) frames so far (what dash.js's
        # DroppedFramesRule reads), and PSI memory "some" at the previous decision.
        self._frame_stats: dict[int, tuple[int, int]] = {}
        self._psi_mark = (env.now, phone.memory.psi_some_ns)
        self.stalls = 0
        self.stall_by_chunk: dict[int, int] = {}  # chunk → the stall waiting for it (ns)
        self.buffer_after_s: list[float] = []  # media buffered as each chunk came in
        self._frame_buffers_pages = 0
        self.process.on_kill.append(self._on_kill)
        phone.trims.listeners.append(self._on_trim)
        self.loaded: Event = env.event()  # the host's own memory is in (page loaded)
        self._play: Event = env.event()
        if autoplay:
            self._play.succeed()
        self.source.open(phone, self.process, self.network)
        # Whole segments: a duration that is not a multiple of the segment still
        # fetches (and buffers) its last segment whole.
        self.fetcher = SegmentFetcher(
            env, rule, self.ladder, segment_s=segment_s, buffer_max_s=buffer_max_s,
            buffer=lambda: max(0.0, self._buffered_s()), fetch=self.source.fetch,
            on_segment=self._take_segment,
            media_s=math.ceil(duration_s / segment_s) * segment_s,
            signals=self._signals,
        )  # fmt: skip
        self.downloads = self.fetcher.downloads
        self._procs = [env.process(self._boot_and_download(), "player")]

    # -- public results ---------------------------------------------------------------
    @property
    def crashed(self) -> bool:
        return self.crashed_ns >= 0

    def frames_due(self, until_ns: int) -> int:
        """Frames whose slot began before ``until_ns``, on the renderer's own grid (chunk
        offsets plus whole frame periods in integer ns), so shown ≤ due always holds."""
        if self._start_ns < 0:
            return 0
        elapsed = min(until_ns, self._end_ns()) - self._start_ns - self.stalled_ns
        due = 0
        for k, rep in enumerate(self._chunks):
            offset = seconds(k * self.segment_s)
            if offset >= elapsed:
                break
            period = seconds(1 / self._fps_of(rep))
            per_chunk = round_half_even(self._fps_of(rep) * self.segment_s)
            due += min(per_chunk, -(-(elapsed - offset) // period))
        return due

    def crashed_during_playback(self) -> bool:
        """Killed while the video was still playing (a kill after the end is no crash)."""
        return self.crashed and (self._start_ns < 0 or self.crashed_ns < self._end_ns())

    @property
    def playback_end_ns(self) -> int | None:
        """When the last frame's slot ends (None until the first frame is on its way)."""
        return self._end_ns() if self._start_ns >= 0 else None

    def pss_pages(self) -> int:
        p = self.process
        return p.anon_pages + p.file_resident + p.gpu_pages + p.anon_swapped // 2

    def retarget(self, rule: AbrRule, duration_s: float, genre: str) -> None:
        """Another rule, length and genre, before playback (a warm start's run, from the
        state its set-up shared): until :meth:`play` none of them has been read."""
        if self._play.triggered:
            raise RuntimeError("retarget() after play(): the rule and length are in use")
        if genre not in GENRES:
            raise ValueError(f"genre must be one of {', '.join(GENRES)}")
        self.rule = rule
        self.duration_s = duration_s
        self.complexity = GENRES[genre]
        self.fetcher.retarget(rule, math.ceil(duration_s / self.segment_s) * self.segment_s)

    def play(self) -> None:
        """Start streaming (a player built with ``autoplay=False`` loads and waits)."""
        if not self._play.triggered:
            self._play.succeed()

    # -- processes --------------------------------------------------------------------
    def _on_kill(self, _: Process) -> None:
        self.crashed_ns = self.phone.env.now
        for proc in self._procs:
            proc.stop()

    def _on_trim(self, level: int) -> None:
        self.trim_level = level
        if level:
            self.last_trim_s = self.phone.env.now / 1e9

    def _fps_of(self, representation: int) -> float:
        return self.ladder[representation].fps or 30.0

    def _pixels(self, representation: int) -> int:
        height = self.ladder[representation].height_px or 480
        width, h = RESOLUTIONS.get(height, (height * 16 // 9, height))
        return width * h

    def _end_ns(self) -> int:
        return self._start_ns + seconds(self.duration_s) + self.stalled_ns

    def _boot_and_download(self) -> Generator[Event, object, None]:
        memory, host = self.phone.memory, self.host
        yield from memory.allocate(
            self.process, self.main, int(host.base_file_mb * MB_PAGES), "file"
        )
        yield from memory.allocate(self.process, self.main, int(host.base_anon_mb * MB_PAGES))
        self.loaded.succeed()
        yield self._play
        env = self.phone.env
        self._procs.append(env.process(self._decode_loop(), "decoder"))
        self._procs.append(env.process(self._render_loop(), "renderer"))
        for helper in self.helpers:
            self._procs.append(env.process(self._helper_loop(helper), helper.name))
        yield from self.fetcher.run()

    def _buffered_s(self) -> float:
        if self._start_ns < 0:
            played = 0.0
        else:
            played = (self.phone.env.now - self._start_ns - self.stalled_ns) / 1e9
        return len(self._chunks) * self.segment_s - played

    def _signals(self) -> dict[str, object]:
        """The device's signals for the rule (trim level, frames dropped, PSI)."""
        return {
            "trim_level": self.trim_level,
            "last_trim_s": self.last_trim_s,
            "frame_stats": dict(self._frame_stats),
            "memory_stall_pct": self._memory_stall_pct(),
        }

    def _take_segment(
        self, download: Download, media_s: float, buffer_s: float, result: object
    ) -> Generator[Event, object, None]:
        """Into the media cache (page cache) and the MSE source buffer (the app's memory)."""
        memory = self.phone.memory
        pages = download.size_bytes // 4096 + 1
        yield from memory.add_page_cache(self.network, pages, dirty=True)  # media cache
        yield from memory.allocate(self.process, self.network, pages)  # MSE source buffer
        self._chunks.append(download.representation)
        self._chunk_ready_ns.append(self.phone.env.now)
        self.buffer_after_s.append(max(0.0, self._buffered_s()))
        self._nudge("_wake_decoder")

    def _record(self, due: int, shown: bool, rep: int) -> None:
        self.frames.append(FrameRecord(len(self.frames), due, shown, rep))
        dropped, total = self._frame_stats.get(rep, (0, 0))
        self._frame_stats[rep] = (dropped + (not shown), total + 1)

    def _memory_stall_pct(self) -> float:
        """Share of the time since the previous decision that some task was stalled
        on memory (PSI memory "some", /proc/pressure/memory), in %."""
        now, stalled = self.phone.env.now, self.phone.memory.psi_some_now_ns()
        then, before = self._psi_mark
        self._psi_mark = (now, stalled)
        return 100.0 * (stalled - before) / (now - then) if now > then else 0.0

    def _nudge(self, name: str) -> None:
        event = getattr(self, name)
        if event is not None and not event.triggered:
            event.succeed()

    def _decode_loop(self) -> Generator[Event, object, None]:
        """Decode chunk by chunk, frame by frame, up to ``queue_frames`` ahead."""
        env, memory, spec = self.phone.env, self.phone.memory, self.phone.profile.video
        touch = self.host.touch_pages_per_frame
        chunk = 0
        while True:
            while chunk >= len(self._chunks):
                self._wake_decoder = Event(env)
                yield self._wake_decoder
            rep = self._chunks[chunk]
            fps = self._fps_of(rep)
            period = seconds(1 / fps)
            offset = seconds(chunk * self.segment_s)
            yield from self._ensure_frame_buffers(rep)
            cycles = spec.decode_cycles_per_mpixel * self._pixels(rep) / 1e6 * self.complexity
            for j in range(round_half_even(fps * self.segment_s)):
                while self._decoded_frames >= self.host.queue_frames:
                    self._wake_decoder = Event(env)
                    yield self._wake_decoder
                at = offset + j * period
                if self._skips_to_keyframe(at, period):
                    self._decoded.append((at, period, rep, SKIPPED))
                    self.skipped_frames += 1
                    self._nudge("_wake_renderer")
                    continue
                yield from memory.touch(self.process, self.decoder, touch, touch // 2)
                weight = self._frame_weight()  # this frame's complexity, for both stages
                yield self.phone.cpu.run(self.decoder, cycles * weight)
                self._decoded.append((at, period, rep, weight))
                self._decoded_frames += 1
                self._nudge("_wake_renderer")
            chunk += 1

    def _skips_to_keyframe(self, at: int, period: int) -> bool:
        """Whether the frame at stream time ``at`` is skipped: it lies before the keyframe
        a skip is heading for, or decoding has fallen more than the host's threshold
        behind the playback clock — then the decoder skips to the first keyframe at or
        after the clock (Gecko's SkipVideoDemuxToNextKeyFrame, ExoPlayer's
        maybeDropBuffersToKeyframe), and everything before it is dropped undecoded. Frame times are
        whole ns periods, so the keyframe is the frame within half a period of its time."""
        if at + period // 2 < self._skip_until_ns:
            return True
        behind = self.host.skip_behind_s
        if behind is None or self._start_ns < 0:
            return False
        clock = self.phone.env.now - self._start_ns - self.stalled_ns
        if clock - at <= seconds(behind):
            return False
        self._skip_until_ns = -(-clock // self.gop_ns) * self.gop_ns
        self.keyframe_skips += 1
        return True

    def _frame_weight(self) -> float:
        """A mean-one lognormal cost multiplier for one frame."""
        if self._sigma == 0:
            return 1.0
        sigma = self._sigma
        return float(self._frame_rng.lognormal(-sigma * sigma / 2, sigma))

    def _ensure_frame_buffers(self, rep: int) -> Generator[Event, object, None]:
        """Decoder output buffers + compositor textures for this resolution (NV12 + RGBA)."""
        frames = self.host.queue_frames + 4  # plus reference frames
        pages = int(self._pixels(rep) * (1.5 + 4) * frames / 4096)
        if pages > self._frame_buffers_pages:
            yield from self.phone.memory.allocate(
                self.process, self.decoder, pages - self._frame_buffers_pages, "gpu"
            )
            self._frame_buffers_pages = pages

    def _render_loop(self) -> Generator[Event, object, None]:
        """Show each decoded frame in its slot; late frames are dropped (1× playback)."""
        env, cpu, memory = self.phone.env, self.phone.cpu, self.phone.memory
        spec, host = self.phone.profile.video, self.host
        while not self._decoded:
            self._wake_renderer = Event(env)
            yield self._wake_renderer
        self._start_ns = env.now
        end = self._end_ns()
        while True:
            if not self._decoded:
                self._wake_renderer = Event(env)
                yield self._wake_renderer
                continue
            offset, period, rep, weight = self._decoded.popleft()
            due = self._start_ns + offset + self.stalled_ns
            ready = self._chunk_ready_ns[int(offset // seconds(self.segment_s))]
            if ready > due:  # its chunk came after the playhead got there: a stall
                self.stalls += 1
                self.stalled_ns += env.now - due
                self.stall_by_chunk[int(offset // seconds(self.segment_s))] = env.now - due
                due = env.now
                end = self._end_ns()
            if due >= end:
                return
            if weight == SKIPPED:  # skipped to a keyframe: never decoded, never shown
                self._record(due, False, rep)
                continue
            self._decoded_frames -= 1
            self._nudge("_wake_decoder")
            deadline = due + period
            if env.now >= deadline:  # decoded too late: skipped before compositing
                self._record(due, False, rep)
                continue
            if env.now < due:
                yield env.timeout(due - env.now)
            tick, self._frame_tick = self._frame_tick, env.event()
            tick.succeed(weight)
            yield from memory.touch(self.process, self.compositor, host.touch_pages_per_frame)
            compose = spec.compose_cycles_per_mpixel * self._pixels(rep) / 1e6 * weight
            yield cpu.run(self.compositor, compose)
            yield cpu.run(self.main, spec.main_cycles_per_frame * host.main_weight)
            yield cpu.run(self.surfaceflinger, spec.surfaceflinger_cycles_per_frame)
            self._record(due, env.now <= deadline, rep)
            self._release_played(offset)

    def _helper_loop(self, thread: Thread) -> Generator[Event, object, None]:
        """A per-frame helper thread: on each frame tick, its share of the frame's work
        (a tick that comes while it is still busy is missed, not queued)."""
        cycles = self.host.helper_cycles_per_frame * self.host.main_weight
        while True:
            weight = yield self._frame_tick
            yield self.phone.cpu.run(thread, cycles * float(weight))  # type: ignore[arg-type]

    def _release_played(self, played_ns: int) -> None:
        """Drop played chunks from the source buffer beyond the back buffer."""
        keep_from = played_ns / 1e9 - self.host.back_buffer_s
        while (self._released_chunks + 1) * self.segment_s < keep_from:
            rep = self._chunks[self._released_chunks]
            size = int(self.ladder[rep].bitrate_kbps * 125 * self.segment_s)
            self.phone.memory.free(self.process, size // 4096 + 1)
            self._released_chunks += 1


def _surfaceflinger(phone: Phone) -> Thread:
    for thread in phone.cpu.threads:
        if thread.name == "surfaceflinger":
            return thread
    return phone.cpu.thread("surfaceflinger", Fair(-8), process="system")
