"""The reproduction's figures: SR/FF per model and app, the slow-frame time CDF, the
redundant layers before and after, write speed under each WAM policy and the S_d sweep."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mqoe.device.profiles import load_profile
from mqoe.experiments.aging_glitching.comparison import sd_knee
from mqoe.experiments.aging_glitching.plan import (
    FLASH_MODEL,
    FLASH_MODELS,
    RUIR_APPS,
    WAM_POLICIES,
    Results,
)
from mqoe.experiments.aging_glitching.tables import (
    _number,
    _threshold_gb,
    slow_frames,
    ui_table,
)
from mqoe.experiments.outputs import save_figure


def plot(results: Results, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = ui_table(results)
    srff = table[table["figure"] == "srff"]
    fig, axes = plt.subplots(1, 2, figsize=(14, 3.8))
    per_model = srff.groupby("model", sort=False)[["sr_pct", "ff_pct"]].mean()
    axes[0].bar(per_model.index, per_model["sr_pct"], label="SR")
    axes[0].bar(per_model.index, per_model["ff_pct"], bottom=per_model["sr_pct"], label="FF")
    axes[0].set_ylabel("% of frames (buffer-aware)")
    axes[0].tick_params(axis="x", rotation=60, labelsize=7)
    axes[0].legend(fontsize=8)
    per_app = srff.groupby("app", sort=False)[["sr_pct", "ff_pct"]].mean()
    axes[1].bar(per_app.index, per_app["sr_pct"], label="SR")
    axes[1].bar(per_app.index, per_app["ff_pct"], bottom=per_app["sr_pct"], label="FF")
    axes[1].tick_params(axis="x", rotation=60, labelsize=7)
    fig.tight_layout()
    save_figure(fig, out_dir / "srff-model-app")
    plt.close(fig)
    slow = slow_frames(results)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if not slow.empty:
        ms = np.sort(slow["duration_ns"].to_numpy() / 1e6)
        ax.plot(ms, np.linspace(0, 1, len(ms)))
        ax.set_xscale("log")
    ax.set_xlabel("slow frame time (ms)")
    ax.set_ylabel("CDF")
    fig.tight_layout()
    save_figure(fig, out_dir / "frame-time-cdf")
    plt.close(fig)
    ruir = table[table["figure"] == "ruir"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k, (trim, label) in enumerate((("false", "before"), ("true", "after"))):
        sub = ruir[ruir["trim_ruir"] == trim]
        ax.bar(np.arange(len(sub)) + (k - 0.5) * 0.4, sub["srff_pct"], width=0.4, label=label)
    ax.set_xticks(range(len(RUIR_APPS)), list(RUIR_APPS), fontsize=8)
    ax.set_ylabel("SR/FF (% of frames)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, out_dir / "ruir")
    plt.close(fig)
    if results.flash:
        plot_flash(results, out_dir)


def plot_flash(results: Results, out_dir: Path) -> None:
    """Write speed under each WAM policy (daily benchmarks) and the S_d sweep."""
    import matplotlib.pyplot as plt

    models = [m for m in FLASH_MODELS if any((m, p) in results.flash for p in WAM_POLICIES)]
    fig, grid = plt.subplots(max(1, len(models)), 2, figsize=(12, 3.4 * max(1, len(models))),
                             squeeze=False)  # fmt: skip
    for model, axes in zip(models, grid, strict=False):
        storage = load_profile(model).storage.type
        for policy in WAM_POLICIES:
            record = results.flash.get((model, policy))
            if record is None:
                continue
            bench = record.tables["bench"]
            when = bench["day"] + bench["hour"] / 24.0
            line = axes[0].plot(when, bench["sequential_mbps"], marker="o", ms=3, label=policy)
            own = _number(record.metrics.get("own_write_mbps"))
            if math.isfinite(own):  # the phone's own writes over the run, GC included
                axes[0].axhline(own, color=line[0].get_color(), ls="--", lw=1,
                                label=f"{policy}: own writes")  # fmt: skip
            axes[1].plot(when, bench["random_mbps"], marker="o", ms=3, label=policy)
        for ax, what in zip(axes, ("sequential", "random 4 KB"), strict=True):
            ax.set_xlabel("day (benchmarks at 02:30, 05:00 and 12:00)")
            ax.set_ylabel(f"{what} write (MB/s)")
            ax.set_title(f"{model} ({storage})", fontsize=9)
            ax.legend(fontsize=8)
    fig.suptitle("daily storage benchmark under each WAM policy", fontsize=10)
    fig.tight_layout()
    save_figure(fig, out_dir / "write-speed")
    plt.close(fig)
    sweep = sorted(
        ((gb, r.metrics) for (model, spec), r in results.flash.items()
         if model == FLASH_MODEL and (gb := _threshold_gb(spec)) is not None),
        key=lambda item: item[0],
    )  # fmt: skip
    if not sweep:
        return
    gbs = [gb for gb, _ in sweep]
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    axes[0].plot(gbs, [_number(m["write_amplification"]) for _, m in sweep], marker="o",
                 color="C1")  # fmt: skip
    axes[0].set_ylabel("write amplification", color="C1")
    speed = axes[0].twinx()
    speed.plot(gbs, [_number(m["sequential_mbps"]) for _, m in sweep], marker="s", ls="--",
               color="grey")  # fmt: skip
    speed.set_ylabel("sequential write (MB/s)", color="grey")
    axes[1].plot(gbs, [_number(m["trim_busy_s"]) for _, m in sweep], marker="o", color="C3")
    axes[1].set_ylabel("total batched-trim time (s)", color="C3")
    volume = axes[1].twinx()
    volume.plot(gbs, [_number(m.get("trimmed_gb")) for _, m in sweep], marker="s", ls="--",
                color="grey")  # fmt: skip
    volume.set_ylabel("GB trimmed in the run", color="grey")
    knee = sd_knee({f"{gb:g}": _number(m["trim_busy_s"]) for gb, m in sweep},
                   {f"{gb:g}": _number(m["write_amplification"]) for gb, m in sweep})  # fmt: skip
    for ax in axes:
        ax.set_xlabel("S_d threshold (GB)")
        if knee is not None:
            ax.axvline(knee, color="k", ls=":", lw=1)
    if knee is not None:
        axes[1].annotate(f"knee {knee:g} GB", (knee, 0.95), xycoords=("data", "axes fraction"),
                         fontsize=8, ha="left")  # fmt: skip
    fig.tight_layout()
    save_figure(fig, out_dir / "sd-threshold")
    plt.close(fig)
