"""The video player: drops come from missed deadlines, memory from what it buffers."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from mqoe.apps.video import APP, VideoPlayer
from mqoe.device.cpu import ThreadState
from mqoe.device.phone import Phone
from mqoe.device.profiles import load_profile
from mqoe.engine import seconds
from mqoe.errors import UserError
from mqoe.policies.abr import Fixed, Representation
from mqoe.workloads.base import parse_params
from mqoe.workloads.video import VideoParams
from tests.conftest import make_profile


def _phone(compose_ms: float, sigma: float = 0.0) -> Phone:
    """One 1 GHz core (1 cycle = 1 ns) where compositing a 480p frame takes ``compose_ms``
    on average (every frame alike when ``sigma`` = 0)."""
    pixels = 854 * 480
    profile = make_profile([(1, 1000.0, 1.0)], memory={"ram_mb": 2048})
    video = {"decode_cycles_per_mpixel": 0.0, "main_cycles_per_frame": 0.0,
             "surfaceflinger_cycles_per_frame": 0.0, "frame_cost_sigma": sigma,
             "compose_cycles_per_mpixel": compose_ms * 1e6 / (pixels / 1e6)}  # fmt: skip
    return Phone(profile.model_copy(update={"video": profile.video.model_copy(update=video)}), 1)


def _play(phone: Phone, fps: float = 30.0, height: int = 480, seconds_: float = 8.0) -> VideoPlayer:
    player = VideoPlayer(phone, [Representation(2500.0, height, fps)], Fixed(representation=0),
                         host=APP, duration_s=seconds_)  # fmt: skip
    phone.run(seconds(seconds_ + 5))
    return player


@pytest.mark.parametrize(("compose_ms", "dropped_share"), [(30.0, 0.0), (50.0, 1.0)])
def test_a_frame_is_dropped_iff_its_work_misses_the_next_frame_time(
    compose_ms: float, dropped_share: float
) -> None:
    # 30 fps: a frame has 33.3 ms. 30 ms of compositing always fits; 50 ms never does
    # (and the backlog makes every later frame late too).
    player = _play(_phone(compose_ms))
    shown = [f.shown for f in player.frames]
    assert len(shown) == 240
    assert 1 - sum(shown) / len(shown) == pytest.approx(dropped_share, abs=0.01)


def test_varying_frame_costs_turn_the_cliff_into_a_graded_drop_rate() -> None:
    def drop(compose_ms: float) -> float:
        frames = _play(_phone(compose_ms, sigma=0.3), seconds_=20).frames
        return 1 - sum(f.shown for f in frames) / len(frames)

    rates = [drop(ms) for ms in (20.0, 26.0, 30.0)]
    assert rates[0] < rates[1] < rates[2]  # rises with the mean cost …
    assert 0.0 < rates[1] < 0.9  # … and partially, before the mean reaches the budget


def test_memory_grows_with_resolution_and_frame_rate() -> None:
    pss = {}
    for height, fps, kbps in [(240, 30, 500), (1080, 30, 8000), (1080, 60, 12000)]:
        phone = Phone(load_profile("nexus-5"), 1)
        player = VideoPlayer(phone, [Representation(kbps, height, fps)], Fixed(representation=0),
                             duration_s=40)  # fmt: skip
        phone.run(seconds(30))
        pss[(height, fps)] = player.pss_pages() / 256
        phone.memory.check()
    assert pss[(1080, 30)] - pss[(240, 30)] > 60  # MB: frame buffers and source buffer
    assert pss[(1080, 60)] > pss[(1080, 30)]


def test_a_kill_is_a_crash_and_stops_playback() -> None:
    phone = Phone(load_profile("nokia-1"), 1)
    player = VideoPlayer(phone, [Representation(2500.0, 480, 30)], Fixed(representation=0),
                         duration_s=60)  # fmt: skip
    phone.run(seconds(10))
    phone.lmkd.kill(player.process, "test")
    shown_at_kill = len(player.frames)
    phone.run(seconds(10))
    assert player.crashed
    assert len(player.frames) == shown_at_kill
    assert all(t.state.name == "DEAD" for t in player.process.threads)
    phone.memory.check()


def test_same_seed_same_frames() -> None:
    def frames() -> list[bool]:
        return [f.shown for f in _play(_phone(33.0), seconds_=5).frames]

    assert frames() == frames()


def test_shown_frames_never_exceed_frames_due() -> None:
    # 30 fps has a 33,333,333 ns period: the renderer's integer grid fits 121 slots in
    # 4 s + 1 chunk, and frames_due must count on that same grid.
    phone = _phone(5.0)
    player = _play(phone, seconds_=8.0)
    shown = sum(f.shown for f in player.frames)
    assert shown == len(player.frames) == player.frames_due(phone.env.now)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("generator_touch_s", "-1", "generator_touch_s must not be negative"),
        ("generator_ratio", "0.5", "generator_ratio must be 0"),
    ],
)
def test_bad_generator_parameters_are_user_errors_naming_them(
    key: str, value: str, message: str
) -> None:
    with pytest.raises(UserError, match=message):
        parse_params(VideoParams, {key: value}, "video")


def _decoder_bound(skip_behind_s: float | None) -> tuple[VideoPlayer, Phone]:
    """One 1 GHz core where decoding a 480p frame takes 50 ms (30 fps leaves 33 ms):
    decoding falls further behind the clock with every frame."""
    pixels = 854 * 480
    profile = make_profile([(1, 1000.0, 1.0)], memory={"ram_mb": 2048})
    video = {"decode_cycles_per_mpixel": 50e6 / (pixels / 1e6), "compose_cycles_per_mpixel": 0.0,
             "main_cycles_per_frame": 0.0, "surfaceflinger_cycles_per_frame": 0.0,
             "frame_cost_sigma": 0.0}  # fmt: skip
    phone = Phone(profile.model_copy(update={"video": profile.video.model_copy(update=video)}), 1)
    host = dataclasses.replace(APP, skip_behind_s=skip_behind_s)
    player = VideoPlayer(phone, [Representation(2500.0, 480, 30.0)], Fixed(representation=0),
                         host=host, duration_s=12.0)  # fmt: skip
    phone.run(seconds(20))
    return player, phone


def test_a_decoder_that_falls_behind_skips_to_the_next_keyframe() -> None:
    lagging, _ = _decoder_bound(None)
    skipping, phone = _decoder_bound(0.06)
    assert lagging.keyframe_skips == lagging.skipped_frames == 0
    assert skipping.keyframe_skips > 0 and skipping.skipped_frames > 0
    # Every run of skipped frames ends at a keyframe (2 s GOP): the next frame is one.
    frames = skipping.frames
    start = frames[0].due_ns
    period = seconds(1 / 30)
    resumed = [b for a, b in itertools.pairwise(frames) if not a.shown and b.shown]
    assert resumed
    gop = seconds(2.0)
    for frame in resumed:
        into_gop = (frame.due_ns - start) % gop
        assert min(into_gop, gop - into_gop) < period // 2  # the first frame of a GOP

    # Skipped frames are never decoded: less decoder work, and more frames make it.
    def decoder_ns(player: VideoPlayer) -> int:
        return player.decoder.state_ns[ThreadState.RUNNING]

    assert decoder_ns(skipping) < decoder_ns(lagging)
    assert sum(f.shown for f in skipping.frames) > sum(f.shown for f in lagging.frames)
    assert len(frames) == skipping.frames_due(phone.env.now)  # every due frame is recorded


def test_a_player_keeping_up_never_skips() -> None:
    player = _play(_phone(5.0), seconds_=8.0)
    assert player.keyframe_skips == 0
