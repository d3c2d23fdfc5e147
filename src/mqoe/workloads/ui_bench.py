"""Scenario ``ui-bench``: one app driven by its scripted interactions (responsiveness
study, MobiCom 2020).

The app of ``ui_apps.toml`` runs its one-minute script (fling lists, open items, play
media, play a game round) on the full rendering pipeline: main thread and RenderThread,
a BufferQueue of ``buffers`` buffers and SurfaceFlinger with cpuset ``sf_cpuset``.
``trim_ruir`` removes the hierarchy's redundant layers first (the RUIR fix).
``background`` boots the phone's own services (the profile's system-background cpuset)
and a few background apps syncing (its background cpuset), whose CPU, Binder calls and
storage reads the app competes with.

Slow and frozen frames, hidden ones (ready buffers) and their causes all come out of
the modelled CPU work, queues and waits.

Metrics: ``frames``; buffer-aware ``sr``, ``ff``, ``sr_pct``, ``ff_pct``, ``srff_pct``
(slow frames a ready buffer hid are not counted) and the naive ``naive_*`` ones (every
long frame); ``severe_sr`` / ``naive_severe_sr`` (SR over 400 ms); ``cause_*_share``
(:func:`mqoe.metrics.frame_causes.cause_shares` over the buffer-aware slow frames);
clustering, the hierarchy's overdraw, SurfaceFlinger's compositions; ``interaction_boost_s``
(time under the power HAL's interaction boost). Tables: ``frames``
(one row per frame), ``slow_frames`` (causes), ``compositions``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from mqoe.apps.system import boot_system
from mqoe.apps.ui import BinderService, UiApp
from mqoe.apps.ui_catalog import ui_app
from mqoe.device.cpu import Fair, Thread
from mqoe.device.display import SF_CPUSETS, DisplayConfig, SfCpuset, group_cores
from mqoe.device.phone import Phone
from mqoe.engine import Event, seconds
from mqoe.engine.draws import Draws
from mqoe.metrics.frame_causes import attribute_causes, cause_shares, clustering, severe_slow
from mqoe.metrics.jank import jank_counts, slow_mask
from mqoe.workloads.base import ScenarioOutput, Session


@dataclass(frozen=True, slots=True)
class BackgroundApp:
    """A background app syncing now and then (push, mail, feeds): at exponential gaps it
    makes a Binder call, reads from storage and computes (parse, database)."""

    name: str
    gap_s: float  # mean time between syncs
    mcycles: float  # mean CPU per sync (exponential)
    read_pages: int  # storage read per sync
    binder_mcycles: float  # system_server work per sync


# Assumed: a phone in daily use keeps a few apps syncing in the background (a messenger's
# push, a mail account, a news feed, the store's update checks); Android puts them in the
# background cpuset (cores 0-1 on the Snapdragon phones) at nice 10. Means are rough usage
# estimates, not fitted to any published result.
BACKGROUND_APPS: tuple[BackgroundApp, ...] = (
    BackgroundApp("bg.messaging", gap_s=2.0, mcycles=15.0, read_pages=8, binder_mcycles=0.5),
    BackgroundApp("bg.mail", gap_s=6.0, mcycles=40.0, read_pages=32, binder_mcycles=1.0),
    BackgroundApp("bg.feed", gap_s=8.0, mcycles=60.0, read_pages=64, binder_mcycles=1.0),
    BackgroundApp("bg.store", gap_s=15.0, mcycles=120.0, read_pages=128, binder_mcycles=2.0),
)


@dataclass(frozen=True)
class UiBenchParams:
    app: str = "gmail"  # key in apps/catalog/ui_apps.toml
    duration_s: float = 60.0  # the study drove each app for one minute
    buffers: int = 3  # triple buffering (as in the study); 1 or 2 to compare
    sf_cpuset: SfCpuset = "little"  # little | all | big_when_little_saturated (the study's fix)
    trim_ruir: bool = False  # remove redundant layers first (the study's RUIR fix)
    background: bool = True  # system services and background apps syncing

    def __post_init__(self) -> None:
        if self.duration_s <= 0:
            raise ValueError("duration_s must be positive")
        if not 1 <= self.buffers <= 8:
            raise ValueError(f"buffers must be in 1..8, got {self.buffers}")
        if self.sf_cpuset not in SF_CPUSETS:
            raise ValueError(f"sf_cpuset must be one of {', '.join(SF_CPUSETS)}")


def _share(flag: npt.NDArray[np.bool_], among: npt.NDArray[np.bool_]) -> float:
    """The share of ``among`` frames with ``flag`` (NaN when there are none)."""
    n = int(among.sum())
    return float((flag & among).sum() / n) if n else float("nan")


def _sync(
    phone: Phone, binder: BinderService, app: BackgroundApp, thread: Thread
) -> Generator[Event, object, None]:
    env, cpu = phone.env, phone.cpu
    rng = Draws(env.rng("ui-bench:" + app.name))
    while True:
        yield env.timeout(max(1, round(rng.exponential(app.gap_s) * 1e9)))
        yield from binder.call(thread, app.binder_mcycles * 1e6)
        yield from phone.storage.read(thread, app.read_pages)
        yield cpu.run(thread, rng.exponential(app.mcycles * 1e6))


def start_background(phone: Phone, binder: BinderService) -> None:
    """Boot the system services (the ``system-background`` cpuset) and the background
    apps (``background``), each group on the profile's cores for it — the LITTLE
    cluster where the profile lists none."""
    cpu = phone.cpu
    system = group_cores(cpu, "system-background")
    background = group_cores(cpu, "background")
    for service in boot_system(phone):
        for thread in service.threads:
            cpu.set_affinity(thread, system)
    for app in BACKGROUND_APPS:
        thread = cpu.thread(app.name, Fair(10), process=app.name, cpus=background)
        phone.env.process(_sync(phone, binder, app, thread), app.name)


class UiBench:
    name = "ui-bench"
    summary = "one app's scripted UI benchmark on the rendering pipeline: SR/FF and causes"
    params_type = UiBenchParams
    quick: Mapping[str, str] = MappingProxyType({"duration_s": "3"})

    def build(self, phone: Phone, params: UiBenchParams) -> Session:
        spec = ui_app(params.app)
        config = DisplayConfig(buffers=params.buffers, sf_cpuset=params.sf_cpuset)
        display = phone.attach_display(config)
        binder = BinderService(phone)
        if params.background:
            start_background(phone, binder)
        duration_ns = seconds(params.duration_s)
        app = UiApp(phone, display, spec, binder=binder, end_ns=duration_ns, trim=params.trim_ruir)

        def collect() -> ScenarioOutput:
            frames = app.frames()
            durations = frames["duration_ns"].to_numpy()
            naive = jank_counts(durations)
            aware = jank_counts(durations, ready_buffer=frames["ready_buffer"].to_numpy())
            causes = attribute_causes(frames)
            shares = cause_shares(causes)
            clusters = clustering(causes)
            compositions = display.compositions()
            metrics: dict[str, float | int | bool | str] = {
                "frames": naive["frames"],
                "naive_sr": naive["sr"],
                "naive_ff": naive["ff"],
                "naive_sr_pct": naive["sr_pct"],
                "naive_ff_pct": naive["ff_pct"],
                "naive_srff_pct": naive["sr_pct"] + naive["ff_pct"],
                "sr": aware["sr"],
                "ff": aware["ff"],
                "sr_pct": aware["sr_pct"],
                "ff_pct": aware["ff_pct"],
                "srff_pct": aware["sr_pct"] + aware["ff_pct"],
                # slow frames (buffer-aware) while every LITTLE core was busy and a big
                # core idle: what letting SurfaceFlinger onto big cores can fix
                "big_idle_little_saturated_share": _share(
                    frames["big_idle_little_saturated"].to_numpy(bool),
                    slow_mask(durations) & ~frames["ready_buffer"].to_numpy(bool),
                ),
                "severe_sr": severe_slow(frames),
                "naive_severe_sr": severe_slow(frames, buffer_aware=False),
                "hidden_slow_frames": (naive["sr"] + naive["ff"]) - (aware["sr"] + aware["ff"]),
                **{"cause_" + k + "_share": v for k, v in shares.items()},
                "median_gap_frames": clusters["median_gap_frames"],
                "ff_followed_by_sr": clusters["ff_followed_by_sr"],
                "nodes": app.hierarchy.node_count,
                "drawing_layers": app.hierarchy.drawing_layers,
                "mean_overdraw": app.hierarchy.mean_overdraw,
                "trimmed_layers": app.trimmed_layers,
                "sf_compositions": len(compositions),
                "sf_missed_vsyncs": int(compositions["missed_vsync"].sum()),
                "sf_widened": int(compositions["widened"].sum()),
                "binder_calls": binder.calls,
                # time under the power HAL's interaction boost (0 on phones without it)
                "interaction_boost_s": (
                    boost.boosted_total_ns() / 1e9
                    if (boost := phone.cpu.interaction_boost)
                    else 0.0
                ),
            }
            return ScenarioOutput(
                metrics=metrics,
                tables={"frames": frames, "slow_frames": causes, "compositions": compositions},
            )

        return Session(duration_ns, collect)
