"""``mqoe analyze anr``: ANR trace files (and xCrash ANR tombstones) → wait-for graphs,
critical threads, root-cause clusters and the Zipf fit of events per app.

Output folders (``--csv``, ``--plot``) are checked before any file is parsed. Text read
from the files (paths, process and thread names, frames) is printed verbatim, never as
Rich markup.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

from mqoe.cli.console import LazyProgress, err, out, print_frame
from mqoe.errors import UserError

HELP = "ANR trace files: wait-for graphs, critical threads, root-cause clusters"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="+",
        type=Path,
        help="ANR trace files, xCrash ANR tombstones, or folders of them (one file = one event)",
    )
    parser.add_argument("--json", action="store_true", help="print events, clusters, Zipf as JSON")
    parser.add_argument("--csv", type=Path, default=None, metavar="DIR", help="write tables here")
    parser.add_argument(
        "--plot", type=Path, default=None, metavar="DIR", help="write PNG figures here"
    )
    parser.add_argument(
        "--threshold", type=float, default=0.95, help="similarity for one cluster (default 0.95)"
    )
    parser.add_argument(
        "--exact", action="store_true", help="compare all pairs of events (slow; same clusters)"
    )
    parser.add_argument(
        "--skip-bad-files", action="store_true", help="skip and count files that are not ANR traces"
    )
    parser.add_argument(
        "--samples", type=int, default=5, metavar="K", help="nearest/furthest per cluster"
    )
    parser.add_argument("--top", type=int, default=15, help="clusters to print (default 15)")
    parser.add_argument(
        "--workers", type=int, default=None, help="parsing processes (default: CPUs)"
    )


def run(args: argparse.Namespace) -> int:
    from mqoe.analysis.anr.read import default_workers, load_events
    from mqoe.analysis.anr.report import analyze

    if not 0.0 < args.threshold <= 1.0:
        raise UserError(f"--threshold must be in (0, 1], got {args.threshold}")
    if args.samples < 0 or args.top < 0:
        raise UserError("--samples and --top must be ≥ 0")
    from mqoe.results import ensure_output_dir

    for option, folder in (("--csv", args.csv), ("--plot", args.plot)):
        if folder is not None:
            ensure_output_dir(folder, option)  # before hours of parsing, not after
    workers = default_workers() if args.workers is None else max(1, args.workers)
    progress = LazyProgress("parsing ANR files")
    try:
        loaded = load_events(
            args.files, skip_bad_files=args.skip_bad_files, workers=workers, progress=progress
        )
    finally:
        progress.close()
    method = "exact" if args.exact else "fast"
    report = analyze(loaded.events, threshold=args.threshold, method=method, k=args.samples)
    if args.csv is not None:
        _write_csv(args.csv, report)
    skipped_plots = _write_plots(args.plot, report) if args.plot is not None else []
    if args.json:
        payload = report.to_json()
        payload["files"] = loaded.files
        payload["bad_files"] = [{"file": f, "error": e} for f, e in loaded.bad_files]
        payload["parse_warnings"] = dict(loaded.warnings)
        print(json.dumps(payload, indent=2, default=str))
        _print_skipped_plots(skipped_plots)
        return 0
    _print_text(report, loaded, args.top)
    if args.csv is not None:
        out.print(f"tables written to {args.csv}", markup=False)
    if args.plot is not None:
        out.print(f"figures written to {args.plot}", markup=False)
    _print_skipped_plots(skipped_plots)
    return 0


def _print_skipped_plots(notes: list[str]) -> None:
    for note in notes:
        err.print(note, markup=False)


def _write_csv(directory: Path, report: Any) -> None:
    import pandas as pd

    from mqoe.results import atomic_write_text

    for name, frame in report.tables.items():
        atomic_write_text(directory / f"{name}.csv", frame.to_csv(index=False))
    zipf = report.zipf
    fit = pd.DataFrame([{"a": zipf.a, "b": zipf.b, "r2": zipf.r2, "apps": zipf.n}])
    atomic_write_text(directory / "zipf.csv", fit.to_csv(index=False))


def _write_plots(directory: Path, report: Any) -> list[str]:
    """Write the figures there is data for; one note per figure left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from mqoe.results import atomic_write_bytes

    def save(fig: Any, name: str) -> None:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=120)
        plt.close(fig)
        atomic_write_bytes(directory / name, buffer.getvalue())

    clusters = report.tables["clusters"].head(30)
    fig, ax = plt.subplots(figsize=(8, 4))
    colours = {
        "wam": "C0",
        "lock_contention": "C1",
        "low_memory": "C2",
        "app_defect": "C3",
        "unknown": "C7",
    }
    ax.bar(
        clusters["cluster"].astype(str),
        clusters["size_events"],
        color=[colours.get(f, "C7") for f in clusters["family"]],
    )
    ax.set_xlabel("cluster (largest 30)")
    ax.set_ylabel("events")
    ax.set_title("ANR clusters by size (colour: root-cause family)")
    ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    save(fig, "cluster_sizes.png")

    apps = report.tables["apps"]
    if apps.empty:  # watchdog kills (SNRs) only: they are no app's ANR
        return ["zipf.png not written: no app ANR events to rank (only watchdog kills)"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(apps["rank"], apps["events"], "o", ms=4, label="apps")
    zipf = report.zipf
    if np.isfinite(zipf.a):
        ranks = np.arange(1, len(apps) + 1)
        fit = np.exp(zipf.b) * ranks ** (-zipf.a)
        ax.loglog(ranks, fit, "-", label=f"a={zipf.a:.2f}, b={zipf.b:.2f}, R²={zipf.r2:.3f}")
    ax.set_xlabel("app rank")
    ax.set_ylabel("ANR events")
    ax.set_title("Events per app (Zipf fit)")
    ax.legend()
    fig.tight_layout()
    save(fig, "zipf.png")
    return []


def _print_text(report: Any, loaded: Any, top: int) -> None:
    clustering = report.clustering
    out.print(
        f"[bold]{len(loaded.events)} ANR events[/bold] from {loaded.files} files: "
        f"{clustering.n_clusters} clusters at similarity ≥ {clustering.threshold} "
        f"({clustering.n_unique} distinct feature vectors, {clustering.method} method)"
    )
    families = report.tables["events"]["family"].value_counts()
    out.print("families: " + ", ".join(f"{name} {n}" for name, n in families.items()))
    columns = [
        "cluster",
        "size_events",
        "share",
        "family",
        "apps",
        "top_app",
        "representative_file",
    ]
    print_frame(report.tables["clusters"][columns].head(top), "table")  # cells: plain text
    for c in report.tables["clusters"]["cluster"].head(min(top, 3)):
        stack = report.representatives[int(c)]
        out.print(f"[bold]cluster {c}[/bold] representative critical stack:")
        for line in stack[:12]:
            out.print(f"    {line}", markup=False)
        if not stack:
            out.print("    (none: the dump holds no stack of the critical thread)")
    zipf = report.zipf
    out.print(f"Zipf fit over {zipf.n} apps: a={zipf.a:.3f} b={zipf.b:.3f} R²={zipf.r2:.3f}")
    _print_missing_stacks(loaded.events)
    if loaded.bad_files:
        err.print(
            f"skipped {len(loaded.bad_files)} bad files, e.g. {loaded.bad_files[0][1]}",
            markup=False,
        )
    if loaded.warnings:
        text = ", ".join(f"{k} {v}" for k, v in sorted(loaded.warnings.items()))
        err.print(f"parse warnings (forgiven, counted): {text}", markup=False)


def _print_missing_stacks(events: Any) -> None:
    """Say which events the dump gave no stacks for: their family is a guess at best."""
    missing = [e.file for e in events if e.stacks_missing]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        err.print(
            f"stacks missing in {len(missing)} of {len(events)} events (waiting channels or "
            f"thread headers only; family 'unknown' unless the kernel says): "
            f"{missing[0]}{more}",
            markup=False,
        )
    partial = [e for e in events if e.threads_without_stack and not e.stacks_missing]
    if partial:
        threads = sum(e.threads_without_stack for e in partial)
        err.print(
            f"threads without stack lines: {threads} in {len(partial)} other event(s), "
            f"e.g. {partial[0].file}",
            markup=False,
        )
