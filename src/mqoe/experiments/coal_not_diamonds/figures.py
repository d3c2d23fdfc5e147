"""The reproduction's figures: one per ``metrics.csv`` figure (drop grid, PSS, thread
states, preemptions, organic pressure, frame-rate switching, genres), each as PNG and
SVG, the study's published values beside the simulated ones where it gives numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mqoe.experiments.coal_not_diamonds.aggregate import Aggregate
from mqoe.experiments.coal_not_diamonds.checks import PUBLISHED
from mqoe.experiments.coal_not_diamonds.plan import (
    GENRE_NAMES,
    GRID_FPS,
    KSWAPD,
    MMCQD,
    STATES,
    SWITCH_FPS,
    Config,
    Plan,
    Results,
)
from mqoe.experiments.outputs import save_figure


def plot(results: Results, quick: bool, out_dir: Path) -> list[Path]:
    """One figure per metrics.csv figure, each as PNG and SVG; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    plan, agg = Plan.for_mode(quick), Aggregate(results)
    drawers: dict[str, Callable[[Aggregate, Plan], Any]] = {
        "drop-grid": _plot_drop_grid,
        "pss": _plot_pss,
        "thread-states": _plot_threads,
        "preemptions": _plot_preemptions,
        "organic": _plot_organic,
        "fps-switch": _plot_fps_switch,
        "genres": _plot_genres,
    }
    paths = []
    for name, draw in drawers.items():
        paths += _save(draw(agg, plan), out_dir / name)
    return paths


def _save(fig: Any, stem: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    if fig.get_layout_engine() is None:
        fig.tight_layout()
    paths = save_figure(fig, stem)
    plt.close(fig)
    return paths


def _plot_drop_grid(agg: Aggregate, plan: Plan) -> Any:
    import matplotlib.pyplot as plt

    n_p, n_s = len(plan.profiles), len(STATES)
    fig, axes = plt.subplots(
        n_p, n_s, figsize=(4.2 * n_s, 2.2 * n_p + 0.8), squeeze=False, layout="constrained"
    )
    image = None
    for i, profile in enumerate(plan.profiles):
        for j, state in enumerate(STATES):
            ax = axes[i][j]
            cells = [[Config(profile, state, r, f) for r in plan.resolutions] for f in GRID_FPS]
            drop = np.array([[agg.mean(c, "frame_drop_pct") for c in row] for row in cells])
            image = ax.imshow(drop, vmin=0, vmax=100, cmap="Reds", aspect="auto")
            for y, row in enumerate(cells):
                for x, c in enumerate(row):
                    ax.text(
                        x,
                        y,
                        f"{drop[y, x]:.0f}%\n✕{agg.crash_pct(c):.0f}%",
                        ha="center",
                        va="center",
                        fontsize=7,
                    )
            ax.set_xticks(range(len(plan.resolutions)), plan.resolutions, fontsize=8)
            ax.set_yticks(range(len(GRID_FPS)), [f"{f} fps" for f in GRID_FPS], fontsize=8)
            ax.set_title(f"{profile}, {state}", fontsize=9)
    if image is not None:
        fig.colorbar(image, ax=axes, label="frame drop (%)", shrink=0.8)
    fig.suptitle("Frame drop rate (mean over seeds); ✕ = % of runs crashed")
    return fig


def _plot_pss(agg: Aggregate, plan: Plan) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for fps in GRID_FPS:
        values = [
            agg.mean(Config(plan.side_profile, "normal", r, fps), "pss_mb")
            for r in plan.resolutions
        ]
        ax.plot(plan.resolutions, values, marker="o", label=f"{fps} fps")
    ax.set_ylabel("video client PSS (MB)")
    ax.set_title(f"PSS by resolution and frame rate ({plan.side_profile}, normal)")
    ax.legend()
    return fig


def _paired_bars(
    ax: Any, labels: Sequence[str], published: Sequence[float], simulated: Sequence[float]
) -> None:
    x = np.arange(len(labels))
    ax.bar(x - 0.2, published, 0.4, label="published (Coal Not Diamonds)", color="0.7", hatch="//")
    ax.bar(x + 0.2, simulated, 0.4, label="simulated", color="C0")
    ax.set_xticks(x, labels, fontsize=8)


def _plot_threads(agg: Aggregate, plan: Plan) -> Any:
    import matplotlib.pyplot as plt

    columns = ("running_s", "runnable_s", "runnable_preempted_s")
    fig, axes = plt.subplots(1, len(columns), figsize=(11, 3.5))
    for ax, column in zip(axes, columns, strict=True):
        configs = plan.threads()
        _paired_bars(
            ax,
            [c.state for c in configs],
            [PUBLISHED[f"{column}/video/{c.state}"].value for c in configs],
            [agg.video_threads(c, column) for c in configs],
        )
        ax.set_title(column, fontsize=9)
        ax.set_ylabel("s (video threads)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Video thread states, Nokia 1 480p60")
    return fig


def _plot_preemptions(agg: Aggregate, plan: Plan) -> Any:
    import matplotlib.pyplot as plt

    panels: list[tuple[str, str, Callable[[Config], float]]] = [
        (
            "mmcqd preemptions",
            "preemptions/mmcqd",
            lambda c: agg.preemptor(c, MMCQD, "preemptions"),
        ),
        (
            "mmcqd run after preempt (s)",
            "run_after_preempt_s/mmcqd",
            lambda c: agg.preemptor(c, MMCQD, "total_preemptor_run_s"),
        ),
        (
            "victim wait for CPU (s)",
            "wait_for_cpu_s/mmcqd",
            lambda c: agg.preemptor(c, MMCQD, "total_victim_wait_s"),
        ),
        ("kswapd running (s)", f"running_s/{KSWAPD}", lambda c: agg.thread(c, KSWAPD, "running_s")),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(14, 3.5))
    configs = plan.threads()
    for ax, (title, key, value) in zip(axes, panels, strict=True):
        _paired_bars(
            ax,
            [c.state for c in configs],
            [PUBLISHED[f"{key}/{c.state}"].value for c in configs],
            [value(c) for c in configs],
        )
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.suptitle("mmcqd preemptions and kswapd, Nokia 1 480p60")
    return fig


def _plot_organic(agg: Aggregate, plan: Plan) -> Any:
    import matplotlib.pyplot as plt

    configs = plan.organic()
    labels = [f"{c.apps} apps" for c in configs]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.3))
    axes[0].bar(labels, [agg.mean(c, "frame_drop_pct") for c in configs], color="C0")
    axes[0].set_ylabel("frame drop (%)")
    axes[1].bar(labels, [agg.mean(c, "kills") for c in configs], color="C3", label="session")
    axes[1].bar(
        labels,
        [agg.mean(c, "kills_during_video") for c in configs],
        color="C1",
        label="during the video",
    )
    axes[1].set_ylabel("processes killed")
    axes[1].legend(fontsize=7)
    fig.suptitle("Organic pressure, Nokia 1 480p60")
    return fig


def _plot_fps_switch(agg: Aggregate, plan: Plan) -> Any:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for fps in SWITCH_FPS:
        configs = [Config("nokia-1", "normal", r, fps) for r in plan.resolutions]
        axes[0].plot(
            plan.resolutions,
            [agg.mean(c, "rendered_fps") for c in configs],
            marker="o",
            label=f"encoded {fps} fps",
        )
        axes[1].plot(
            plan.resolutions,
            [agg.mean(c, "frame_drop_pct") for c in configs],
            marker="o",
            label=f"encoded {fps} fps",
        )
    axes[0].set_ylabel("rendered FPS")
    axes[1].set_ylabel("frame drop (%)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Frame rate switching, Nokia 1, normal")
    return fig


def _plot_genres(agg: Aggregate, plan: Plan) -> Any:
    import matplotlib.pyplot as plt

    configs = plan.genres()
    series = sorted({(c.state, c.fps, c.resolution) for c in configs})
    fig, ax = plt.subplots(figsize=(10, 3.5))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(GENRE_NAMES))
    for k, (state, fps, resolution) in enumerate(series):
        values = [
            agg.mean(Config(plan.side_profile, state, resolution, fps, genre=g), "frame_drop_pct")
            for g in GENRE_NAMES
        ]
        ax.bar(
            x + (k - (len(series) - 1) / 2) * width,
            values,
            width,
            label=f"{resolution}{fps} {state}",
        )
    ax.set_xticks(x, GENRE_NAMES)
    ax.set_ylabel("frame drop (%)")
    ax.legend(fontsize=6, ncol=2)
    ax.set_title(f"Genres ({plan.side_profile})")
    return fig
