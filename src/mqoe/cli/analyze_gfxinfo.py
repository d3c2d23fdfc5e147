"""``mqoe analyze gfxinfo``: ``dumpsys gfxinfo <pkg> [framestats]`` dumps → slow and frozen
frames per window and per process, naive and buffer-aware, stages and clustering, beside
the dump's own summary."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqoe.cli.console import LazyProgress, err, out
from mqoe.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from mqoe.analysis.gfxinfo import GfxinfoReport

HELP = "dumpsys gfxinfo [framestats]: slow/frozen frames per window and process"

_PROCESS_SHOWN = {
    "package": "package", "pid": "pid", "windows": "windows", "frames": "frames", "sr": "sr",
    "ff": "ff", "sr_pct": "sr %", "ff_pct": "ff %", "sr_aware": "sr aware",
    "ff_aware": "ff aware", "frame_p50_ms": "p50 ms", "frame_p99_ms": "p99 ms",
    "reported_total_frames_rendered": "reported frames", "reported_janky_pct": "reported janky %",
}  # fmt: skip
_WINDOW_SHOWN = {
    "package": "package", "pid": "pid", "window": "window", "frames": "frames", "sr": "sr",
    "ff": "ff", "sr_pct": "sr %", "sr_aware": "sr aware", "frame_p50_ms": "p50 ms",
    "frame_p99_ms": "p99 ms", "reported_total_frames_rendered": "reported frames",
    "reported_janky_frames": "reported janky",
}  # fmt: skip
_SUMMARY_SHOWN = {
    "pid": "pid", "scope": "scope", "total_frames_rendered": "frames rendered",
    "janky_frames": "janky", "janky_pct": "janky %", "p50_ms": "p50 ms", "p90_ms": "p90 ms",
    "p95_ms": "p95 ms", "p99_ms": "p99 ms", "missed_vsync": "missed vsync",
    "slow_ui_thread": "slow UI thread", "frame_deadline_missed": "deadline missed",
}  # fmt: skip
_MAX_PLOTTED = 12  # processes per figure, the ones with most frames


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
    from mqoe.analysis import gfxinfo

    for option, folder in (("--csv", args.csv), ("--plot", args.plot)):
        if folder is not None:
            _check_output(folder, option)
    progress = LazyProgress("reading gfxinfo")
    try:
        data = gfxinfo.read_gfxinfo(
            args.files, skip_bad_lines=args.skip_bad_lines, progress=progress
        )
    finally:
        progress.close()
    report = gfxinfo.analyze(data)
    if args.plot is not None and not report.process_frames:
        raise UserError(
            f"--plot {args.plot}: nothing to plot: no per-frame rows in the input "
            "(capture with `adb shell dumpsys gfxinfo <package> framestats`)"
        )
    if args.csv is not None:
        _write_tables(report, args.csv)
    if args.plot is not None:
        _plots(report, args.plot)
    if args.json:
        text = json.dumps(report.to_json(), indent=2, default=str)
        out.print(text, markup=False, highlight=False, soft_wrap=True, emoji=False)
        return 0
    _print_text(report)
    for flag, what in ((args.csv, "tables"), (args.plot, "figures")):
        if flag is not None:
            out.print(f"{what} written to {flag}", markup=False)
    return 0


def _check_output(folder: Path, option: str) -> None:
    """Output folders are checked first: a long read must not end in "cannot write there"."""
    from mqoe.analysis.textio import describe_os_error
    from mqoe.results import ensure_output_dir

    try:
        ensure_output_dir(folder, option)
    except OSError as exc:  # ensure_output_dir stats the path before its own error handling
        raise UserError(
            f"{option} {folder}: cannot write there ({describe_os_error(exc)})"
        ) from None


# -- text --------------------------------------------------------------------------------------


def _cells(frame: pd.DataFrame, shown: dict[str, str], missing: str = "unknown") -> pd.DataFrame:
    """The ``shown`` columns as text cells: NA and NaN say ``missing`` (never 0), floats
    have 4 significant digits, and text from the files is never read as markup."""
    import pandas as pd
    from rich.markup import escape

    def cell(value: Any) -> str:
        if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
            return missing
        if isinstance(value, float):
            return f"{value:.4g}"
        return escape(str(value))

    columns = [c for c in shown if c in frame]
    table = frame[columns].astype(object)
    return (table.map(cell) if len(table) else table).rename(columns=shown)


def _print_table(cells: pd.DataFrame) -> None:
    """Text cells as a Rich table whose long names fold onto more lines, never cut."""
    from rich.markup import escape
    from rich.table import Table

    table = Table()
    for column in cells.columns:
        table.add_column(escape(str(column)), overflow="fold")
    for row in cells.itertuples(index=False):
        table.add_row(*row)
    out.print(table)


def _print_text(report: GfxinfoReport) -> None:
    packages = report.packages
    out.print("[bold]processes[/bold] (one frame per vsync, however many windows drew it)")
    _print_table(_cells(packages, _PROCESS_SHOWN))
    for row in packages[~packages["framestats"]].itertuples(index=False):
        out.print(
            f"{row.package} {row.pid}: no framestats rows in the dump, per-frame figures "
            "unknown; its own summary is shown (run `dumpsys gfxinfo <package> framestats` "
            "for per-frame data)",
            markup=False,
        )
    several = (packages["windows"].fillna(0) > 1).any() if len(packages) else False
    if several:
        out.print("[bold]windows[/bold]")
        _print_table(_cells(report.windows, _WINDOW_SHOWN))
    if len(report.summaries):
        latest = sorted(report.reported_summaries())
        out.print("[bold]the dump's own summary lines[/bold] (each scope's latest)")
        _print_table(_cells(report.summaries.iloc[latest], _SUMMARY_SHOWN))
        if len(report.summaries) > len(latest):
            more = len(report.summaries) - len(latest)
            out.print(f"({more} earlier summary records: --csv writes them all)", markup=False)
    gaps = report.gap_summary[report.gap_summary["package"] == "*"]
    out.print("[bold]gaps between slow frames (all processes)[/bold]")
    shown = {str(c): str(c).replace("_", " ") for c in gaps if c not in ("file", "package", "pid")}
    _print_table(_cells(gaps, shown, missing="-"))  # no gaps: nothing to summarise
    _print_warnings(report.warnings)


def _print_warnings(warnings: dict[str, Any]) -> None:
    for key, value in warnings.items():
        if key == "skipped_examples":
            for example in value[:5]:
                err.print(
                    f"skipped {example['file']}:{example['line']}: {example['what']}",
                    markup=False,
                )
        elif value:
            err.print(f"warning: {key.replace('_', ' ')}: {value}", markup=False)


# -- files -------------------------------------------------------------------------------------


def _write_tables(report: GfxinfoReport, folder: Path) -> None:
    from mqoe.results import atomic_write

    for name, table in report.tables.items():

        def write(tmp: Path, table: pd.DataFrame = table) -> None:
            table.to_csv(tmp, index=False)

        atomic_write(folder / f"{name}.csv", write)

    def frames(tmp: Path) -> None:  # streamed: the per-frame table can be larger than memory
        with tmp.open("w", newline="") as handle:
            first = True
            for chunk in report.iter_frames():
                chunk.to_csv(handle, header=first, index=False)
                first = False
            if first:
                report.frames.head(0).to_csv(handle, index=False)

    atomic_write(folder / "frames.csv", frames)


def _plots(report: GfxinfoReport, folder: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from mqoe.analysis.gfxinfo import STAGES
    from mqoe.metrics.jank import FROZEN_FRAME_NS, SLOW_FRAME_NS
    from mqoe.results import atomic_write

    durations = report.process_durations()
    top = sorted(durations, key=lambda k: -len(durations[k]))[:_MAX_PLOTTED]

    def label(key: tuple[Any, ...]) -> str:
        return f"{key[1]} {key[2]}"

    def save(fig: Any, name: str) -> None:
        atomic_write(folder / name, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 5))
    for key in top:
        ms = np.sort(durations[key].astype(np.float64) / 1e6)
        ax.step(ms, np.arange(1, len(ms) + 1) / len(ms), where="post", label=label(key))
    for limit, name in ((SLOW_FRAME_NS, "slow"), (FROZEN_FRAME_NS, "frozen")):
        ax.axvline(limit / 1e6, color="grey", linestyle="--", linewidth=1)
        ax.text(limit / 1e6, 0.02, f" {name} > {limit / 1e6:g} ms", color="grey")
    ax.set(xscale="log", xlabel="frame duration (ms)", ylabel="share of frames ≤ x")
    ax.set_title("Frame duration CDF (process frames)")
    ax.legend(fontsize="small")
    save(fig, "frame_duration_cdf.png")

    sums = {key: np.zeros(len(STAGES)) for key in top}
    counts = {key: np.zeros(len(STAGES)) for key in top}
    for chunk in report.iter_frames():
        slow = chunk[chunk["process_frame"] & (chunk["sr"] | chunk["ff"])]
        for key, part in slow.groupby(["file", "package", "pid"], sort=False):
            if key in sums:
                values = part[list(STAGES)].to_numpy(dtype=np.float64, na_value=np.nan) / 1e6
                sums[key] += np.nansum(values, axis=0)
                counts[key] += np.isfinite(values).sum(axis=0)
    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.5 * len(top)))
    left = np.zeros(len(top))
    for j, stage in enumerate(STAGES):
        means = np.array(
            [sums[k][j] / counts[k][j] if counts[k][j] else 0.0 for k in top], dtype=np.float64
        )
        ax.barh(np.arange(len(top)), means, left=left, label=stage.removesuffix("_ns"),
                color=plt.get_cmap("tab10")(j % 10))  # fmt: skip
        left += means
    ax.set_yticks(np.arange(len(top)), [label(k) for k in top])
    ax.set(xlabel="mean time per slow/frozen frame (ms)")
    ax.set_title("Where slow frames spend their time")
    ax.legend(fontsize="small", ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    fig.tight_layout()
    save(fig, "slow_frame_stages.png")

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, kind in zip(axes, ("sr_to_sr", "ff_to_sr"), strict=True):
        gaps = report.gaps[report.gaps["kind"] == kind]["gap_frames"].to_numpy()
        ax.hist(np.minimum(gaps, 50), bins=np.arange(0.5, 51.5, 1.0))
        ax.set(xlabel="gap (frames; 50 = 50 or more)", ylabel="gaps")
        if len(gaps):  # a log scale needs something to scale
            ax.set_yscale("log")
        ax.set_title(f"{kind.replace('_to_', ' → ').upper()} ({len(gaps)} gaps)")
    fig.tight_layout()
    save(fig, "slow_frame_gaps.png")
