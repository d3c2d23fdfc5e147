"""``mqoe sweep SPEC.toml``: run a sweep file's runs on every core or a Dask cluster."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from mqoe.cli.console import err, out
from mqoe.errors import UserError

HELP = "run a sweep file (grid/random parameters × profiles × seeds), resumable"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, help="sweep file (TOML; see examples/sweep-video.toml)")
    parser.add_argument("--resume", action="store_true", help="skip runs already stored")
    parser.add_argument("--out", type=Path, default=None, help="results directory")
    parser.add_argument(
        "--workers", type=int, default=None, help="local processes (default: all cores)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler", default=None, metavar="tcp://HOST:PORT", help="a Dask scheduler"
    )
    where.add_argument(
        "--local-cluster",
        type=int,
        default=None,
        metavar="N",
        help="a Dask LocalCluster of N workers",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help=(
            "every run simulates its own set-up (default: runs that differ only after it share "
            "one: same results, less time)"
        ),
    )
    parser.add_argument("--dry-run", action="store_true", help="validate and count runs only")


def run(args: argparse.Namespace) -> int:
    if not args.dry_run and args.scheduler is None and args.local_cluster is None:
        from mqoe.sweep.pool import prestart_local

        prestart_local(args.workers)  # their start-up overlaps loading the sweep
    from mqoe.results import default_results_dir, ensure_output_dir
    from mqoe.sweep import Backend, load_sweep, run_sweep

    sweep = load_sweep(args.spec)
    if args.workers is not None and (args.scheduler or args.local_cluster):
        raise UserError("mqoe sweep: --workers is for local processes; Dask sizes its own")
    backend = Backend(
        workers=args.workers,
        scheduler=args.scheduler,
        local_cluster=args.local_cluster,
        warm=not args.cold,
    )
    root = args.out if args.out is not None else default_results_dir()
    merged = (
        f" ({sweep.merged_duplicates} duplicate points merged)" if sweep.merged_duplicates else ""
    )
    out.print(
        f"sweep {sweep.name} ({sweep.sweep_id}): {len(sweep.jobs)} runs of {sweep.scenario}{merged}"
    )
    if args.dry_run:
        return 0  # creates nothing, so the folder is not checked either
    ensure_output_dir(root, _out_option(args))
    bar = Bar(sweep.name)
    try:
        summary = run_sweep(sweep, root, backend, resume=args.resume, on_progress=bar)
    except KeyboardInterrupt:
        bar.close()
        err.print(
            f"mqoe: interrupted; finished runs are stored in {root}; continue with --resume",
            markup=False,
        )
        return 130
    finally:
        bar.close()
    out.print(
        f"{summary.stored} stored, {summary.failed} failed, {summary.skipped} already stored, "
        f"on {backend.describe()} in {summary.wall_time_s:.1f} s "
        f"({summary.runs_per_s:.2f} runs/s); results in {root}",
        markup=False,
    )
    if summary.failed:
        out.print(
            f"failures: mqoe results query --results {root} "
            f"\"select run_id, error_type, error from failures where sweep = '{sweep.name}'\"",
            markup=False,
        )
    return 0


def _out_option(args: argparse.Namespace) -> str:
    """What named the results folder, for the error if it cannot be written."""
    if args.out is not None:
        return "--out"
    return "$MQOE_RESULTS" if os.environ.get("MQOE_RESULTS") else "results folder"


class Bar:
    """A Rich progress bar with ETA on a terminal; nothing otherwise."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, progress: Any) -> None:
        if not err.is_terminal:
            return
        if self._progress is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]} failed"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=progress.total, failed=0)
        self._progress.update(self._task, completed=progress.finished, failed=progress.failed)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
