"""``mqoe analyze gfxinfo``: ``dumpsys gfxinfo <pkg> framestats`` dumps → slow and frozen
frames, naive and buffer-aware, stages and clustering (spec 04 §Rendering, spec 06)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqoe.cli.console import LazyProgress, err, out, print_frame

if TYPE_CHECKING:
    import pandas as pd

    from mqoe.analysis.gfxinfo import GfxinfoReport

HELP = "dumpsys gfxinfo framestats: slow/frozen frames, naive and buffer-aware (spec 04)"

_SHOWN = [
    "package", "pid", "frames", "sr", "ff", "sr_pct", "ff_pct", "sr_aware", "ff_aware",
    "aware_rule", "frame_p50_ms", "frame_p99_ms", "reported_janky_pct",
]  # fmt: skip
_MAX_PLOTTED = 12  # packages per figure, the ones with most frames


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", type=Path, help="dumpsys gfxinfo output files (plain or gzip)"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument(
        "--csv", type=Path, default=None, metavar="DIR", help="write the tables as CSV files here"
    )
    parser.add_argument(
        "--plot", type=Path, default=None, metavar="DIR", help="write PNG figures here"
    )
    parser.add_argument(
        "--skip-bad-lines", action="store_true", help="skip and count malformed lines"
    )


def run(args: argparse.Namespace) -> int:
    from mqoe.analysis.gfxinfo import analyze, read_gfxinfo

    progress = LazyProgress("reading gfxinfo")
    try:
        data = read_gfxinfo(args.files, skip_bad_lines=args.skip_bad_lines, progress=progress)
    finally:
        progress.close()
    report = analyze(data)
    if args.csv is not None:
        for name, table in report.tables.items():
            _write_csv(args.csv / f"{name}.csv", table)
    if args.plot is not None:
        _plots(report, args.plot)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, default=str))
        return 0
    packages = report.packages
    print_frame(packages[[c for c in _SHOWN if c in packages]], "table")
    gaps = report.gap_summary[report.gap_summary["package"] == "*"]
    out.print("[bold]gaps between slow frames (all packages)[/bold]")
    print_frame(gaps.drop(columns=["file", "package", "pid"]), "table")
    _print_warnings(report.warnings)
    for flag, what in ((args.csv, "tables"), (args.plot, "figures")):
        if flag is not None:
            out.print(f"{what} written to {flag}")
    return 0


def _write_csv(path: Path, table: pd.DataFrame) -> None:
    from mqoe.results import atomic_write

    def write(tmp: Path) -> None:
        table.to_csv(tmp, index=False)  # streamed: the frames table can be large

    atomic_write(path, write)


def _print_warnings(warnings: dict[str, Any]) -> None:
    for key, value in warnings.items():
        if key == "skipped_examples":
            for example in value[:5]:
                err.print(f"skipped {example['file']}:{example['line']}: {example['what']}")
        elif value:
            err.print(f"warning: {key.replace('_', ' ')}: {value}")


def _plots(report: GfxinfoReport, folder: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from mqoe.analysis.gfxinfo import STAGES
    from mqoe.metrics.jank import FROZEN_FRAME_NS, SLOW_FRAME_NS
    from mqoe.results import atomic_write

    frames = report.frames[report.frames["normal"]] if len(report.frames) else report.frames
    top = report.packages.sort_values("frames", ascending=False).head(_MAX_PLOTTED)
    top = top[top["frames"] > 0]

    def rows(p: Any) -> Any:
        mask = (frames["file"] == p.file) & (frames["package"] == p.package)
        return frames[mask & (frames["pid"] == p.pid)]

    def save(fig: Any, name: str) -> None:
        atomic_write(folder / name, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 5))
    for p in top.itertuples(index=False):
        ms = np.sort(rows(p)["duration_ns"].to_numpy(dtype=np.float64) / 1e6)
        ax.step(ms, np.arange(1, len(ms) + 1) / len(ms), where="post", label=f"{p.package} {p.pid}")
    for limit, label in ((SLOW_FRAME_NS, "slow"), (FROZEN_FRAME_NS, "frozen")):
        ax.axvline(limit / 1e6, color="grey", linestyle="--", linewidth=1)
        ax.text(limit / 1e6, 0.02, f" {label} > {limit / 1e6:g} ms", color="grey")
    ax.set(xscale="log", xlabel="frame duration (ms)", ylabel="share of frames ≤ x")
    ax.set_title("Frame duration CDF (normal frames)")
    if len(top):
        ax.legend(fontsize="small")
    save(fig, "frame_duration_cdf.png")

    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.5 * max(1, len(top))))
    labels, left = [], np.zeros(len(top))
    for j, stage in enumerate(STAGES):
        means = []
        for p in top.itertuples(index=False):
            slow = rows(p)
            slow = slow[slow["sr"] | slow["ff"]]
            values = slow[stage].to_numpy(dtype=np.float64, na_value=np.nan) / 1e6
            means.append(float(np.nanmean(values)) if np.isfinite(values).any() else 0.0)
        ax.barh(np.arange(len(top)), means, left=left, label=stage.removesuffix("_ns"),
                color=plt.get_cmap("tab10")(j % 10))  # fmt: skip
        left += np.array(means)
    labels = [f"{p.package} {p.pid}" for p in top.itertuples(index=False)]
    ax.set_yticks(np.arange(len(top)), labels)
    ax.set(xlabel="mean time per slow/frozen frame (ms)")
    ax.set_title("Where slow frames spend their time")
    ax.legend(fontsize="small", ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    fig.tight_layout()
    save(fig, "slow_frame_stages.png")

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, kind in zip(axes, ("sr_to_sr", "ff_to_sr"), strict=True):
        gaps = report.gaps[report.gaps["kind"] == kind]["gap_frames"].to_numpy()
        ax.hist(np.minimum(gaps, 50), bins=np.arange(0.5, 51.5, 1.0))
        ax.set(xlabel="gap (frames; 50 = 50 or more)", ylabel="gaps", yscale="log")
        ax.set_title(f"{kind.replace('_to_', ' → ').upper()} ({len(gaps)} gaps)")
    fig.tight_layout()
    save(fig, "slow_frame_gaps.png")
