"""``mqoe analyze systrace``: ftrace/atrace/systrace text from real phones (spec 04, 06)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

from mqoe.cli.console import LazyProgress, err, out, print_frame

HELP = "ftrace/atrace/systrace text: thread states, preemptions, frames and slow-frame causes"

_THREAD_COLUMNS = ["tid", "thread", "process", "running_s", "runnable_s",
                   "runnable_preempted_s", "sleeping_s", "blocked_io_s", "cpu_share"]  # fmt: skip
_SLOW_COLUMNS = ["pid", "frame", "dur_ms", "doframe_ms", "drawframe_ms", "composite_ms",
                 "sched_delay_ms", "io_ms", "binder_ms", "critical_path"]  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, help="trace files (text, .gz or HTML)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--csv", type=Path, metavar="DIR", help="write every table as CSV here")
    parser.add_argument("--plot", type=Path, metavar="DIR", help="write PNG figures here")
    cores = parser.add_mutually_exclusive_group()
    cores.add_argument("--clusters", metavar="SPEC", help="CPU clusters, e.g. 0-3:little,4-7:big")
    cores.add_argument("--profile", metavar="NAME", help="take the clusters of an mqoe profile")
    parser.add_argument("--threads", metavar="REGEX", help="show threads (or processes) matching")
    parser.add_argument("--top", type=int, default=15, help="threads shown (default 15)")
    parser.add_argument("--skip-bad-lines", action="store_true", help="skip and count bad lines")


def run(args: argparse.Namespace) -> int:
    from mqoe.analysis.systrace import (
        analyze,
        clusters_from_profile,
        load_systrace,
        parse_clusters,
        select_threads,
    )
    from mqoe.errors import UserError
    from mqoe.results import atomic_write_text

    if args.top < 1:
        raise UserError("--top must be at least 1")
    clusters = None
    if args.clusters is not None:
        clusters = parse_clusters(args.clusters)
    elif args.profile is not None:
        from mqoe.device.profiles import load_profile

        clusters = clusters_from_profile(load_profile(args.profile))
    traces = []
    for path in args.files:
        progress = LazyProgress(f"reading {path.name}")
        try:
            traces.append(
                load_systrace(
                    path, clusters=clusters, skip_bad_lines=args.skip_bad_lines, progress=progress
                )
            )
        finally:
            progress.close()
    for trace in traces:
        for warning in trace.stats.warnings():
            err.print(f"{trace.source}: {warning}")
    report = analyze(traces)
    tables = report.tables
    states = select_threads(tables["thread_states"], args.threads, args.top)
    frames = tables["frames"]
    slow = _slow_frames(frames)
    if args.csv is not None:
        for name, table in tables.items():
            atomic_write_text(args.csv / f"{name}.csv", table.to_csv(index=False))
    if args.plot is not None:
        _plots(report, args.plot)
    if args.json:
        payload = {
            "traces": [
                {
                    "file": t.source,
                    "start_s": t.start_ns / 1e9,
                    "duration_s": t.duration_ns / 1e9,
                    "events": t.stats.events,
                    "skipped_events": t.stats.skipped_events,
                    "warnings": t.stats.warnings(),
                }
                for t in traces
            ],
            "thread_states": _records(states),
            "preemption_summary": _records(tables["preemption_summary"]),
            "frame_summary": _records(tables["frame_summary"]),
            "correlation": _records(tables["correlation"]),
            "saturation": _records(tables["saturation"]),
            "slow_frames": _records(slow),
        }
        print(json.dumps(payload, indent=2))
        return 0
    multi = len(traces) > 1
    _section("thread states", states, _THREAD_COLUMNS, multi)
    _section("preemptions by preempting thread", tables["preemption_summary"], None, multi)
    _section("frames", tables["frame_summary"], None, multi)
    _section("slowest frames", slow.head(10), _SLOW_COLUMNS, multi)
    _section("slow frames vs normal frames", tables["correlation"], None, multi)
    if clusters is None:
        out.print("LITTLE saturation: pass --clusters or --profile to measure it")
    elif not all(t.big_cpus and t.little_cpus for t in traces):
        out.print("LITTLE saturation: not measured, the cluster map has no big cores")
    else:
        _section("LITTLE cores saturated while a big core idles", tables["saturation"], None, multi)
    for name, path in (("CSV tables", args.csv), ("figures", args.plot)):
        if path is not None:
            out.print(f"{name} written to {path}")
    return 0


def _slow_frames(frames: Any) -> Any:
    if frames.empty:
        return frames
    slow = frames[frames["slow"] | frames["frozen"]].sort_values("dur_ns", ascending=False)
    slow = slow.copy()
    for cause in ("sched_delay", "io", "binder"):
        slow[cause + "_ms"] = slow[cause + "_ns"] / 1e6
    return slow


def _records(table: Any) -> list[dict[str, Any]]:
    import numpy as np

    if table.empty:
        return []
    clean = table.replace([np.inf, -np.inf], np.nan)
    records: list[dict[str, Any]] = json.loads(clean.to_json(orient="records"))
    return records


def _section(title: str, table: Any, columns: list[str] | None, multi: bool) -> None:
    out.print(f"[bold]{title}[/bold]")
    if table.empty:
        out.print("(none)")
        return
    keep = [c for c in (columns or list(table.columns)) if c in table.columns]
    if multi and "trace" not in keep:
        keep = ["trace", *keep]
    if not multi and "trace" in keep:
        keep.remove("trace")
    print_frame(table[keep], "table")


def _plots(report: Any, folder: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mqoe.metrics.jank import FROZEN_FRAME_NS, SLOW_FRAME_NS
    from mqoe.results import atomic_write_bytes

    def save(fig: Any, name: str) -> None:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        plt.close(fig)
        atomic_write_bytes(folder / name, buffer.getvalue())

    for i, trace in enumerate(report.traces):
        stem = f"{i}-{Path(trace.source).name}"
        frames = trace.frames
        fig, ax = plt.subplots(figsize=(9, 4))
        for (_, process), group in frames.groupby(["pid", "process"]):
            t = (group["start_ns"] - trace.start_ns) / 1e9
            ax.scatter(t, group["dur_ms"], s=6, label=str(process))
        ax.axhline(SLOW_FRAME_NS / 1e6, color="orange", lw=0.8, label="SR (16.67 ms)")
        ax.axhline(FROZEN_FRAME_NS / 1e6, color="red", lw=0.8, label="FF (700 ms)")
        ax.set_yscale("log")
        ax.set(xlabel="time in trace (s)", ylabel="frame time (ms)", title=trace.source)
        ax.legend(fontsize=7)
        save(fig, f"{stem}-frames.png")

        states = report.tables["thread_states"]
        mine = states[states["trace"] == trace.source].nlargest(15, "running_ns")
        fig, ax = plt.subplots(figsize=(9, 5))
        names = [f"{r.thread} ({r.tid})" for r in mine.itertuples()]
        left = None
        for column in ("running_s", "runnable_s", "runnable_preempted_s", "blocked_io_s"):
            values = mine[column].to_numpy()
            ax.barh(names, values, left=left, label=column.removesuffix("_s"))
            left = values if left is None else left + values
        ax.invert_yaxis()
        ax.set(xlabel="time (s)", title="thread states (top threads by running time)")
        ax.legend(fontsize=7)
        save(fig, f"{stem}-thread-states.png")

        corr = report.tables["correlation"]
        corr = corr[corr["trace"] == trace.source] if not corr.empty else corr
        if not corr.empty:
            fig, ax = plt.subplots(figsize=(7, 4))
            labels = [f"{r.process}:{r.cause}" for r in corr.itertuples()]
            x = range(len(labels))
            ax.bar([v - 0.2 for v in x], corr["slow_mean_ms"], width=0.4, label="slow frames")
            ax.bar([v + 0.2 for v in x], corr["normal_mean_ms"], width=0.4, label="normal")
            ax.set_xticks(list(x), labels, rotation=30, ha="right", fontsize=7)
            ax.set(ylabel="mean per frame (ms)", title="time per frame by cause")
            ax.legend(fontsize=7)
            save(fig, f"{stem}-causes.png")
