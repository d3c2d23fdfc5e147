"""Scenario ``video``: a DASH session under memory pressure (the memory-pressure study,
CoNEXT 2022).

Boot: the phone holds ``boot_cached`` cached processes (system and recent apps); with
``apps`` > 0 the user first opens that many ordinary apps (organic pressure). Then the
player opens (the host's own memory is allocated), the pressure generator (a service
at nice −17) allocates memory in 5 MiB chunks until the trim level of ``pressure``
arrives and holds it, and playback starts (at ``setup_s`` at the latest). The video
plays ``duration_s`` at a fixed representation — or adapts its frame rate / resolution
on trim signals (``adapt``).
Frame drops, crashes and the kernel threads' CPU come out of the mechanisms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import pandas as pd

from mqoe.apps.background import PressureGenerator, boot_background, open_apps
from mqoe.apps.segments import SegmentSource
from mqoe.apps.system import boot_system
from mqoe.apps.video import GENRES, HOSTS, VideoPlayer
from mqoe.device.cpu import Fair
from mqoe.device.memory import Memory
from mqoe.device.phone import Phone
from mqoe.engine import seconds
from mqoe.metrics.frames import playback_summary
from mqoe.metrics.sched import STATE_COLUMNS, preemption_frame, preemption_summary, thread_states
from mqoe.params import NEGATIVE_OK, bounds
from mqoe.policies.abr import (
    AbrRule,
    Fixed,
    MostConservative,
    Representation,
    as_rule,
    make_rule,
)
from mqoe.policies.memory_adapt import MemoryAware
from mqoe.workloads.base import ScenarioOutput, Session, WarmStart

# The memory-pressure study's set-up: kbit/s at 30 fps and at 60 fps (24 and 48 fps use the
# 30/60 rates, as the study's 480p frame-rate ladder 2.5/2.5/4/4 Mbit/s does).
BITRATES_30 = {240: 500, 360: 1000, 480: 2500, 720: 5000, 1080: 8000, 1440: 16000}
BITRATES_60 = {240: 1000, 360: 1500, 480: 4000, 720: 7500, 1080: 12000, 1440: 24000}
FPS_CHOICES = (24, 30, 48, 60)
PRESSURES = ("normal", "moderate", "low", "critical")
# Read only from playback on (the player picks its representation, fetches and decodes
# when it plays; the rules are consulted per segment): runs that differ only in these
# share the whole set-up (warm starts).
LATE_PARAMS = frozenset({"resolution", "fps", "duration_s", "genre", "rule", "adapt", "quiet_s"})


def ladder() -> tuple[Representation, ...]:
    """Every resolution × frame rate of the memory-pressure study, sorted by bitrate (then
    height, fps)."""
    reps = [
        Representation(float((BITRATES_60 if fps > 30 else BITRATES_30)[h]), h, float(fps))
        for h in BITRATES_30
        for fps in FPS_CHOICES
    ]
    return tuple(sorted(reps, key=lambda r: (r.bitrate_kbps, r.height_px or 0, r.fps or 0)))


@dataclass(frozen=True)
class VideoParams:
    duration_s: float = 120.0  # playback (the study's ~120 s per run)
    resolution: str = "1080p"  # 240p … 1440p
    fps: int = 30  # encoded frame rate: 24, 30, 48 or 60
    genre: str = "travel"  # decode complexity (the study: genres differ only in it)
    player: str = "browser"  # browser (dash.js in a mobile browser) | app (ExoPlayer-like)
    pressure: str = "normal"  # start state: normal | moderate | low | critical
    apps: int = 0  # ordinary apps opened before the video (organic pressure)
    # Cached processes after boot (calibration: Android keeps memory full of cached
    # apps by design — a lightly used phone holds a dozen or more).
    boot_cached: int = 16
    system: bool = True  # the phone's own processes (system_server, SystemUI, GMS, …)
    # Free memory left after boot: the rest holds the clean page cache of files read
    # while booting (calibration: a booted phone shows MemFree of tens of MB, Cached of
    # hundreds). Negative: no boot cache.
    boot_free_mb: float = field(default=20.0, metadata=NEGATIVE_OK)
    adapt: str = "none"  # memory-aware adaptation: none | fps | resolution | both
    quiet_s: float = 30.0  # adaptation: recover after this long without trims
    rule: str = ""  # a network ABR rule spec to combine with the fixed choice
    setup_s: float = 60.0  # the video starts by then even if the target state is not reached
    # The generator "allocates until the target trim arrives, then holds it" at nice −17
    # (the memory-pressure study's set-up): a privileged tool that holds its memory, i.e.
    # one lmkd does not pick before the foreground (persistent service, ProcessList −700).
    # 200 = an ordinary foreground service, which lmkd kills first and so releases the
    # pressure.
    # Bounds: oom_score_adj's range (include/uapi/linux/oom.h).
    generator_adj: int = field(default=-700, metadata=bounds(-1000, 1000, what="an oom_score_adj"))
    # How often the generator touches the memory it holds (0: never, it just holds it).
    generator_touch_s: float = 0.0
    # zRAM compression ratio of the generator's data (0: the profile's ratio; 1: random
    # bytes, which zRAM stores whole).
    generator_ratio: float = 0.0

    def __post_init__(self) -> None:
        if self.duration_s <= 0 or self.setup_s < 0:
            raise ValueError("duration_s must be positive and setup_s not negative")
        if self.resolution.lower().removesuffix("p") not in {str(h) for h in BITRATES_30}:
            raise ValueError(f"resolution must be one of {', '.join(f'{h}p' for h in BITRATES_30)}")
        if self.fps not in FPS_CHOICES:
            raise ValueError(f"fps must be one of {', '.join(map(str, FPS_CHOICES))}")
        if self.genre not in GENRES:
            raise ValueError(f"genre must be one of {', '.join(GENRES)}")
        if self.player not in HOSTS:
            raise ValueError(f"player must be one of {', '.join(HOSTS)}")
        if self.pressure not in PRESSURES:
            raise ValueError(f"pressure must be one of {', '.join(PRESSURES)}")
        if self.adapt not in ("none", "fps", "resolution", "both"):
            raise ValueError("adapt must be none, fps, resolution or both")
        if self.apps < 0 or self.boot_cached < 0:
            raise ValueError("apps and boot_cached must not be negative")
        if self.generator_touch_s < 0:
            raise ValueError("generator_touch_s must not be negative (0: never)")
        if self.generator_ratio != 0 and self.generator_ratio < 1:
            raise ValueError("generator_ratio must be 0 (the profile's) or at least 1")

    @property
    def height(self) -> int:
        return int(self.resolution.lower().removesuffix("p"))


def build_rule(
    params: VideoParams, reps: tuple[Representation, ...], component: object | None = None
) -> AbrRule:
    chosen = next(
        i for i, r in enumerate(reps) if r.height_px == params.height and r.fps == params.fps
    )
    rules: list[AbrRule] = [Fixed(representation=chosen)]
    if params.adapt != "none":
        rules.append(MemoryAware(step=params.adapt, quiet_s=params.quiet_s))  # type: ignore[arg-type]
    if component is not None:  # the user's rule object (components={"abr": …})
        rules.append(as_rule(component))
    elif params.rule:
        rules.append(make_rule(params.rule))
    return rules[0] if len(rules) == 1 else MostConservative(rules)


class Video:
    name = "video"
    summary = "a DASH session on a phone under memory pressure (Coal Not Diamonds, CoNEXT 2022)"
    params_type = VideoParams
    quick: Mapping[str, str] = MappingProxyType(
        {"duration_s": "10", "resolution": "480p", "pressure": "moderate", "setup_s": "20"}
    )
    late_params = LATE_PARAMS  # warm starts share the set-up across these

    def build(self, phone: Phone, params: VideoParams) -> Session:
        reps = ladder()
        component = phone.take_component("abr")
        rule = build_rule(params, reps, component)
        state = start_session(phone, params, reps, rule, before_play=lambda: warm.reached())

        def rebind(late: VideoParams) -> int:
            """Another run's late parameters, before playback starts."""
            player = state["player"]
            assert isinstance(player, VideoPlayer)
            player.retarget(build_rule(late, reps, component), late.duration_s, late.genre)
            state["params"] = late
            return session_ns(late)

        def collect() -> ScenarioOutput:
            late = state["params"]
            assert isinstance(late, VideoParams)
            return collect_session(phone, late, state)

        warm = WarmStart(LATE_PARAMS, rebind)
        return Session(session_ns(params), collect, warm)


def session_ns(params: VideoParams) -> int:
    """How long a run lasts: the set-up budget, the playback and 2 s to spare."""
    return seconds(params.setup_s + params.duration_s + 2)


def start_session(
    phone: Phone,
    params: VideoParams,
    reps: tuple[Representation, ...],
    rule: AbrRule,
    source: SegmentSource | None = None,
    on_play: Callable[[], None] | None = None,
    before_play: Callable[[], None] | None = None,
) -> dict[str, object]:
    """Boot the phone, open the player (``source``: where its segments come from, by
    default the study's LAN), build the pressure state and start playback, as the
    study's runs do (module docstring); ``before_play`` is called just before playback
    starts (a warm start's fork point: it may replace ``state["params"]``, whose
    ``duration_s`` playback then reads), ``on_play`` as it starts.
    Returns the state :func:`collect_session` reads."""
    env = phone.env
    rng = env.rng("background")
    if params.system:
        boot_system(phone)
    boot_background(phone, params.boot_cached, rng)
    if params.apps:
        open_apps(phone, params.apps, rng)
    state: dict[str, object] = {"params": params}

    def start_video(_: object = None) -> None:
        player = state.get("player")
        if isinstance(player, VideoPlayer) and "start_ns" not in state:
            if before_play is not None:
                before_play()
            playing = state["params"]
            assert isinstance(playing, VideoParams)
            player.play()
            state["start_ns"] = env.now
            # The study traced the playback: thread states are measured over it.
            state["threads_at_start"] = phone.cpu.snapshot()
            state["iowait_at_start"] = phone.cpu.iowait_ns()
            env.schedule(seconds(playing.duration_s), end_window)
            if on_play is not None:
                on_play()

    def end_window(_: object) -> None:
        player = state["player"]
        assert isinstance(player, VideoPlayer)
        end = player.playback_end_ns
        if end is not None and end > env.now:  # the first frame came after play()
            env.schedule(end - env.now, end_window)
            return
        state["threads_at_end"] = phone.cpu.snapshot()
        state["iowait_at_end"] = phone.cpu.iowait_ns()
        state["window_end_ns"] = env.now
        state["zram_at_end"] = phone.memory.zram_stored

    def start_pressure(_: object) -> None:
        if params.pressure == "normal":
            start_video()
            return
        generator = PressureGenerator(
            phone, params.pressure, adj=params.generator_adj,
            hold_touch_s=params.generator_touch_s or None,
            zram_ratio=params.generator_ratio,
        )  # fmt: skip
        state["generator"] = generator
        generator.done.callbacks.append(start_video)  # type: ignore[union-attr]

    def boot_cache(_: object) -> None:
        pages = phone.memory.free_pages - round(params.boot_free_mb * 256)
        if params.boot_free_mb >= 0 and pages > 0:
            reader = phone.cpu.thread("init", Fair(0), process="init")
            env.process(phone.memory.add_page_cache(reader, pages), "boot-cache")

    def after_boot(_: object) -> None:
        # The study's order: the player page is open, then the generator builds the
        # start state around it, then playback starts.
        phone.trims.arm()
        player = VideoPlayer(
            phone, reps, rule, host=HOSTS[params.player], genre=params.genre,
            duration_s=params.duration_s, autoplay=False, source=source,
        )  # fmt: skip
        state["player"] = player
        player.loaded.callbacks.append(start_pressure)  # type: ignore[union-attr]

    env.schedule(seconds(1), boot_cache)
    env.schedule(seconds(2), after_boot)
    env.schedule(seconds(params.setup_s), start_video)
    return state


def collect_session(phone: Phone, params: VideoParams, state: dict[str, object]) -> ScenarioOutput:
    """The session's metrics and tables (frames, thread states, kills, counters)."""
    player = state.get("player")
    assert isinstance(player, VideoPlayer)
    # Playback may never start: the player can be killed while the state is built.
    start_ns = int(state.get("start_ns", phone.env.now))  # type: ignore[call-overload]
    now = phone.env.now
    frames = pd.DataFrame(
        [(f.index, f.due_ns, f.shown, f.representation) for f in player.frames],
        columns=["index", "due_ns", "shown", "representation"],
    )
    crashed = player.crashed_during_playback()
    due = player.frames_due(player.crashed_ns if crashed else now)
    threads = pd.DataFrame(phone.cpu.thread_table())
    window = _playback_window(threads, state)
    preemptions = preemption_frame(phone.cpu.preemptions.rows())
    if len(preemptions):
        end_ns = start_ns + seconds(params.duration_s)
        in_window = (preemptions["time_ns"] >= start_ns) & (preemptions["time_ns"] < end_ns)
        preemptions = preemptions.loc[in_window]
    cpu = threads.set_index("thread")["running_ns"]
    played_s = max(1e-9, min(params.duration_s, (now - start_ns) / 1e9))
    playback, per_second = playback_summary(frames, due, start_ns, played_s)
    kills = pd.DataFrame(
        [
            (k.time_ns, k.pid, k.name, k.oom_score_adj, k.rss_pages, k.reason)
            for k in phone.lmkd.kills
        ],
        columns=["time_ns", "pid", "name", "oom_score_adj", "rss_pages", "reason"],
    )
    memory = phone.memory
    generator = state.get("generator")
    metrics: dict[str, float | int | bool | str] = {
        "frame_drop_pct": playback["frame_drop_pct"],
        "crashed": crashed,
        "crash_time_s": (player.crashed_ns - start_ns) / 1e9 if crashed else -1.0,
        "rendered_fps": playback["rendered_fps"],
        "frames_due": due,
        "pss_mb": player.pss_pages() / 256,
        "kills": len(kills),
        "kills_during_video": int((kills["time_ns"] >= start_ns).sum()) if len(kills) else 0,
        "trim_level_at_start": phone.trims.history[-1].level if phone.trims.history else 0,
        "pressure_reached": bool(getattr(generator, "reached_ns", 0) >= 0) if generator else True,
        "kswapd_cpu_s": float(cpu.get("kswapd0", 0)) / 1e9,
        "mmcqd_cpu_s": float(cpu.get("mmcqd", 0)) / 1e9,
        "lmkd_cpu_s": float(cpu.get("lmkd", 0)) / 1e9,
        # /proc/vmstat counters over the whole run
        "workingset_refault": memory.workingset_refault,
        "workingset_activate": memory.workingset_activate,
        "pgscan": memory.pgscan,
        "pgsteal": memory.pgsteal,
        "pswpin": memory.pswpin,
        "pswpout": memory.pswpout,
        "allocstall": memory.allocstall,
        "psi_some_s": memory.psi_some_ns / 1e9,
        "psi_full_s": memory.psi_full_ns / 1e9,
        # top's iowait over the playback window, % of all cores' time (the study's
        # `top -d 1` gives it in % of 400 on the four-core Nokia 1)
        "iowait_pct": _iowait_pct(phone, state),
        # zRAM's fill at the end of the playback window (the phone's swap used / total)
        "zram_used_pct": _zram_used_pct(memory, state),
    }
    return ScenarioOutput(
        metrics=metrics,
        tables={
            "frames": frames,
            "rendered_fps": per_second,
            "thread_states": thread_states(window),
            "thread_states_run": thread_states(threads),
            "preemption_summary": preemption_summary(preemptions, threads),
            "video_preemptions": preemption_summary(
                _of_victims(preemptions, _video_tids(threads, player)), threads
            ),
            "kills": kills,
        },
    )


def _zram_used_pct(memory: Memory, state: dict[str, object]) -> float:
    """zRAM's fill (swap used / total) at the end of the playback window, or now."""
    stored = state.get("zram_at_end", memory.zram_stored)
    assert isinstance(stored, int)
    return 100.0 * stored / memory.zram_limit if memory.zram_limit else 0.0


def _iowait_pct(phone: Phone, state: dict[str, object]) -> float:
    """Idle-while-waiting-on-I/O time of all cores over the playback window (up to now if
    it has not ended; the whole run if playback never started), % of all cores' time."""
    start_ns, start = state.get("start_ns", 0), state.get("iowait_at_start", 0)
    end_ns, end = state.get("window_end_ns"), state.get("iowait_at_end")
    if not isinstance(end_ns, int) or not isinstance(end, int):
        end_ns, end = phone.env.now, phone.cpu.iowait_ns()
    assert isinstance(start_ns, int) and isinstance(start, int)
    span = (end_ns - start_ns) * len(phone.cpu.cores)
    return 100.0 * (end - start) / span if span > 0 else 0.0


def _playback_window(threads: pd.DataFrame, state: dict[str, object]) -> pd.DataFrame:
    """State times over the playback window (start of playback to its scheduled end, or
    the end of the run if that came first); the whole run if playback never started."""
    start = state.get("threads_at_start")
    if not isinstance(start, list):
        return threads
    end = state.get("threads_at_end")
    end_table = pd.DataFrame(end) if isinstance(end, list) else threads
    before = pd.DataFrame(start).set_index("tid")[list(STATE_COLUMNS)]
    window = end_table.set_index("tid")
    # Threads born during playback had spent nothing before it.
    window[list(STATE_COLUMNS)] = window[list(STATE_COLUMNS)].sub(before, fill_value=0)
    return window.reset_index()


def _video_tids(threads: pd.DataFrame, player: VideoPlayer) -> set[int]:
    """The video threads (as the memory-pressure study counts them): the player's own threads
    and SurfaceFlinger."""
    video = (threads["process"] == player.process.name) | (
        threads["thread"] == player.surfaceflinger.name
    )
    return {int(t) for t in threads.loc[video, "tid"]}


def _of_victims(preemptions: pd.DataFrame, tids: set[int]) -> pd.DataFrame:
    if preemptions.empty:
        return preemptions
    return preemptions.loc[preemptions["victim_tid"].isin(tids)]
