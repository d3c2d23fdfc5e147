"""The plan of the Coal Not Diamonds (CoNEXT 2022) reproduction's video runs.

The study's phones, pressure states, resolutions, frame rates and session lengths; one
:class:`Config` per video session configuration, a :class:`Run` per configuration and
seed, and the :class:`Plan` of which configurations each figure uses (full or
``--quick``), deduplicated across figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqoe.apps.video import GENRES, HOSTS
from mqoe.results.store import RunRecord

PROFILES = ("nokia-1", "nexus-5", "nexus-6p")
STATES = ("normal", "moderate", "critical")
RESOLUTIONS = ("240p", "360p", "480p", "720p", "1080p")
QUICK_RESOLUTIONS = ("480p", "720p", "1080p")
GRID_FPS = (30, 60)
SWITCH_FPS = (24, 48, 60)  # the study's frame-rate experiments (30 is in the grid)
GENRE_NAMES = tuple(GENRES)
GENRE_STATES = ("normal", "moderate")
GENRE_RESOLUTIONS = ("720p", "1080p")
ORGANIC_APPS = (0, 8)  # the study: 8 background apps gave Moderate on the 1 GB phone
# The study made 5 repetitions on the Nokia 1 and 10 on the Nexus phones; the budget
# allows 5 there (see the time budget in the package docstring).
SEEDS = {"nokia-1": 5, "nexus-5": 5, "nexus-6p": 5}
GENRE_SEEDS = 2
DURATION_S = 120  # the study: ~120 s of playback per run
QUICK_DURATION_S = 30
QUICK_SETUP_S = 20  # the generator reaches its state in ~10 s of simulated time
PLAYER = "browser"  # the study's player: dash.js in mobile Firefox
VIDEO_PROCESS = HOSTS[PLAYER].name  # the video threads' process in thread_states
COMPOSITOR_THREAD = "surfaceflinger"
MMCQD = "mmcqd"
KSWAPD = "kswapd0"
THREAD_STUDY = ("nokia-1", "480p", 60)  # the configuration of the study's thread table
FIGURES = ("drop-grid", "pss", "thread-states", "preemptions", "organic", "fps-switch", "genres")


@dataclass(frozen=True)
class Config:
    """One video session configuration (the seed aside)."""

    profile: str
    state: str  # the pressure generator's target: normal | moderate | critical
    resolution: str
    fps: int
    genre: str = "travel"
    apps: int = 0

    @property
    def label(self) -> str:
        return f"{self.resolution}{self.fps}"


@dataclass(frozen=True)
class Run:
    config: Config
    seed: int

    def overrides(self, quick: bool) -> dict[str, str]:
        c = self.config
        out = {
            "pressure": c.state,
            "resolution": c.resolution,
            "fps": str(c.fps),
            "genre": c.genre,
            "apps": str(c.apps),
            "player": PLAYER,
            "duration_s": str(DURATION_S),
        }
        if quick:
            out |= {"duration_s": str(QUICK_DURATION_S), "setup_s": str(QUICK_SETUP_S)}
        return out


@dataclass(frozen=True)
class Plan:
    """Which configurations each figure uses, for the full or the quick reproduction."""

    profiles: tuple[str, ...]
    resolutions: tuple[str, ...]
    seeds_by_profile: tuple[tuple[str, int], ...]
    genre_seeds: int
    side_profile: str  # pss and genres (nexus-5 in the study)
    quick: bool = False  # 30 s sessions: absolute per-session times are not the study's

    @classmethod
    def for_mode(cls, quick: bool) -> Plan:
        if quick:
            return cls(("nokia-1",), QUICK_RESOLUTIONS, (("nokia-1", 1),), 1, "nokia-1", True)
        return cls(PROFILES, RESOLUTIONS, tuple(SEEDS.items()), GENRE_SEEDS, "nexus-5")

    def seeds(self, profile: str) -> int:
        return dict(self.seeds_by_profile)[profile]

    def grid(self) -> list[Config]:
        return [
            Config(p, s, r, f)
            for p in self.profiles
            for s in STATES
            for f in GRID_FPS
            for r in self.resolutions
        ]

    def pss(self) -> list[Config]:
        return [
            Config(self.side_profile, "normal", r, f) for f in GRID_FPS for r in self.resolutions
        ]

    def threads(self) -> list[Config]:
        profile, resolution, fps = THREAD_STUDY
        return [Config(profile, s, resolution, fps) for s in ("normal", "moderate")]

    def organic(self) -> list[Config]:
        profile, resolution, fps = THREAD_STUDY
        return [Config(profile, "normal", resolution, fps, apps=n) for n in ORGANIC_APPS]

    def fps_switch(self) -> list[Config]:
        return [Config("nokia-1", "normal", r, f) for f in SWITCH_FPS for r in self.resolutions]

    def genres(self) -> list[Config]:
        resolutions = [r for r in GENRE_RESOLUTIONS if r in self.resolutions]
        return [
            Config(self.side_profile, s, r, f, genre=g)
            for g in GENRE_NAMES
            for s in GENRE_STATES
            for f in GRID_FPS
            for r in resolutions
        ]

    def runs(self) -> list[Run]:
        """Every distinct run, the (likely) slowest first so the pool ends together."""
        seeds: dict[Config, int] = {}
        for config in self.grid() + self.pss() + self.threads() + self.organic():
            seeds[config] = self.seeds(config.profile)
        for config in self.fps_switch():
            seeds[config] = self.seeds(config.profile)
        for config in self.genres():
            seeds[config] = max(seeds.get(config, 0), self.genre_seeds)
        runs = [Run(c, seed) for c, n in seeds.items() for seed in range(1, n + 1)]
        return sorted(runs, key=_expected_cost, reverse=True)


def _expected_cost(run: Run) -> float:
    # Measured: pressure costs 10–50× a normal session, growing with bitrate and RAM.
    c = run.config
    pressure = {"normal": 0.05, "moderate": 1.0, "critical": 0.6}[c.state] + 0.3 * c.apps / 8
    ram = {"nokia-1": 1.0, "nexus-5": 2.0, "nexus-6p": 3.0}.get(c.profile, 1.0)
    return pressure * ram * int(c.resolution.removesuffix("p")) * c.fps


Results = list[tuple[Run, RunRecord]]
