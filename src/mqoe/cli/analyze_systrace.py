"""``mqoe analyze systrace``: ftrace/atrace/systrace text from real phones."""

from __future__ import annotations

import argparse
import io
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

from mqoe.cli.console import LazyProgress, err, out, print_frame

HELP = "ftrace/atrace/systrace text: thread states, preemptions, frames and slow-frame causes"

_THREAD_COLUMNS = ["tid", "thread", "process", "running_s", "runnable_s",
                   "runnable_preempted_s", "sleeping_s", "blocked_io_s", "cpu_share"]  # fmt: skip
_SLOW_COLUMNS = ["pid", "frame", "dur_ms", "doframe_ms", "drawframe_ms", "composite_ms",
                 "sched_delay_ms", "io_ms", "binder_ms", "critical_path"]  # fmt: skip
_COUNTER_COLUMNS = ["pid", "process", "name", "samples", "min", "max", "last"]
_SLOW_SHOWN = 10  # slowest frames in the text output
_SLOW_PLACEHOLDER = "\x00slow frames\x00"  # where the streamed list goes in the JSON
_JSON_CHUNK_ROWS = 2_000  # slow frames turned into JSON at a time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", type=Path, help="captures (text, .gz, atrace -z or systrace HTML)"
    )
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
    from mqoe.results import atomic_write, ensure_output_dir

    if args.top < 1:
        raise UserError("--top must be at least 1")
    clusters = None
    if args.clusters is not None:
        clusters = parse_clusters(args.clusters)
    elif args.profile is not None:
        from mqoe.device.profiles import load_profile

        clusters = clusters_from_profile(load_profile(args.profile))
    # Output folders are checked before minutes of parsing, not after.
    if args.csv is not None:
        ensure_output_dir(args.csv, "--csv")
    if args.plot is not None:
        ensure_output_dir(args.plot, "--plot")
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
            err.print(f"{trace.source}: {warning}", markup=False)
    report = analyze(traces)
    tables = report.tables
    states = select_threads(tables["thread_states"], args.threads, args.top)
    frames = tables["frames"]
    slow = _slow_frames(frames)
    if args.csv is not None:
        for name, table in tables.items():
            # Written straight to the file: a long capture's critical path is ~1M rows.
            atomic_write(args.csv / f"{name}.csv", partial(_write_csv, table))
    if args.plot is not None:
        for note in _plots(report, args.plot):
            err.print(note, markup=False)
    shown = _shown_note(states, tables["thread_states"], args)
    if args.json:
        _print_json(traces, tables, states, slow, shown)
        return 0
    multi = len(traces) > 1
    for trace in traces:
        out.print(_contents_line(trace), markup=False, soft_wrap=True)
    unknown = [t.source for t in traces if not t.stats.thread_states_known]
    title = "thread states" + (f" ({shown})" if shown else "")
    if len(unknown) == len(traces):
        out.print(title, style="bold", markup=False)
    else:
        _section(title, states, _THREAD_COLUMNS, multi)
    for source in unknown:
        out.print(f"{source}: unknown (no sched_switch events)", markup=False, soft_wrap=True)
    none = "(unknown: no sched_switch events)" if len(unknown) == len(traces) else "(none)"
    _section("preemptions by preempting thread", tables["preemption_summary"], None, multi, none)
    _section("frames", tables["frame_summary"], None, multi)
    _section("slowest frames", slow.head(_SLOW_SHOWN), _SLOW_COLUMNS, multi)
    _section("slow frames vs normal frames", tables["correlation"], None, multi)
    if not tables["counters"].empty:
        _section("counter tracks (C markers)", tables["counters"], _COUNTER_COLUMNS, multi)
    if clusters is None:
        out.print("LITTLE saturation: pass --clusters or --profile to measure it")
    elif not all(t.big_cpus and t.little_cpus for t in traces):
        out.print("LITTLE saturation: not measured, the cluster map has no big cores")
    else:
        _section("LITTLE cores saturated while a big core idles", tables["saturation"], None, multi)
    for name, path in (("CSV tables", args.csv), ("figures", args.plot)):
        if path is not None:
            out.print(f"{name} written to {path}", markup=False)
    return 0


def _contents_line(trace: Any) -> str:
    """What one capture holds, in a line."""
    s = trace.stats
    held = [f"{s.switches} sched_switch", f"{s.wakeups} wakeups", f"{s.markers} trace markers"]
    if s.markers:
        tracks = len(trace.counters)
        held[-1] += (
            f" ({s.slices} slices, {s.counter_samples} counter samples in {tracks} tracks, "
            f"{s.async_markers} async markers)"
        )
    held.append(f"{len(trace.frames)} frames")
    return (
        f"{trace.source} ({s.container}): {s.events} events over "
        f"{trace.duration_ns / 1e9:.3f} s: " + ", ".join(held)
    )


def _shown_note(states: Any, every: Any, args: argparse.Namespace) -> str:
    """Why fewer threads than measured are shown ("" when all are)."""
    if len(states) >= len(every):
        return ""
    if args.threads is not None:
        return f"{len(states)} of {len(every)} threads: those matching --threads"
    return f"top {args.top} per trace by running time: {len(states)} of {len(every)} threads"


def _print_json(traces: list[Any], tables: Any, states: Any, slow: Any, shown: str) -> None:
    payload = {
        "traces": [
            {
                "file": t.source,
                "format": t.stats.container,
                "start_s": t.start_ns / 1e9,
                "duration_s": t.duration_ns / 1e9,
                "events": t.stats.events,
                "contents": t.stats.contents(),
                "thread_states_known": t.stats.thread_states_known,
                "skipped_events": t.stats.skipped_events,
                "warnings": t.stats.warnings(),
            }
            for t in traces
        ],
        "thread_states": _records(states),
        "thread_states_shown": len(states),
        "thread_states_total": len(tables["thread_states"]),
        "preemption_summary": _records(tables["preemption_summary"]),
        "frame_summary": _records(tables["frame_summary"]),
        "correlation": _records(tables["correlation"]),
        "saturation": _records(tables["saturation"]),
        "counters": _records(tables["counters"]),
        "slow_frames": _SLOW_PLACEHOLDER,
        "notes": [f"thread_states: {shown} (--top, --threads)"] if shown else [],
    }
    # Every slow frame is listed: tens of thousands in a long capture, so they are
    # written a chunk at a time, never all held as Python objects at once.
    head, tail = json.dumps(payload, indent=2).split(json.dumps(_SLOW_PLACEHOLDER), 1)
    write = sys.stdout.write
    write(head + "[")
    for start in range(0, len(slow), _JSON_CHUNK_ROWS):
        chunk = _records(slow.iloc[start : start + _JSON_CHUNK_ROWS])
        text = ",".join("\n    " + json.dumps(record) for record in chunk)
        write(("," if start else "") + text)
    write(("\n  " if len(slow) else "") + "]" + tail + "\n")


def _write_csv(table: Any, path: Path) -> None:
    table.to_csv(path, index=False)


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


def _section(
    title: str, table: Any, columns: list[str] | None, multi: bool, empty: str = "(none)"
) -> None:
    out.print(title, style="bold", markup=False)
    if table.empty:
        out.print(empty, markup=False)
        return
    keep = [c for c in (columns or list(table.columns)) if c in table.columns]
    if multi and "trace" not in keep:
        keep = ["trace", *keep]
    if not multi and "trace" in keep:
        keep.remove("trace")
    print_frame(table[keep], "table")  # plain-text cells: names from a capture are not markup


def _mathtext_safe(text: str) -> str:
    # Matplotlib reads text between two `$` as TeX math (and fails on bad TeX).
    return text.replace("$", r"\$")


def _plots(report: Any, folder: Path) -> list[str]:
    """Write the figures; returns one note per trace about figures it had nothing for."""
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

    notes = []
    states = report.tables["thread_states"]
    corr = report.tables["correlation"]
    for i, trace in enumerate(report.traces):
        stem = f"{i}-{Path(trace.source).name}"
        title = _mathtext_safe(trace.source)
        missing = []
        frames = trace.frames
        if frames.empty:
            missing.append("frames (no frames in the trace)")
        else:
            fig, ax = plt.subplots(figsize=(9, 4))
            for (_, process), group in frames.groupby(["pid", "process"]):
                t = (group["start_ns"] - trace.start_ns) / 1e9
                ax.scatter(t, group["dur_ms"], s=6, label=_mathtext_safe(str(process)))
            ax.axhline(SLOW_FRAME_NS / 1e6, color="orange", lw=0.8, label="SR (16.67 ms)")
            ax.axhline(FROZEN_FRAME_NS / 1e6, color="red", lw=0.8, label="FF (700 ms)")
            ax.set_yscale("log")
            ax.set(xlabel="time in trace (s)", ylabel="frame time (ms)", title=title)
            ax.legend(fontsize=7)
            save(fig, f"{stem}-frames.png")

        mine = states[states["trace"] == trace.source] if not states.empty else states
        if mine.empty:
            why = "no sched_switch events" if not trace.stats.thread_states_known else "none"
            missing.append(f"thread states ({why})")
        else:
            mine = mine.nlargest(15, "running_ns")
            fig, ax = plt.subplots(figsize=(9, 5))
            names = [_mathtext_safe(f"{r.thread} ({r.tid})") for r in mine.itertuples()]
            left = None
            for column in ("running_s", "runnable_s", "runnable_preempted_s", "blocked_io_s"):
                values = mine[column].to_numpy()
                ax.barh(names, values, left=left, label=column.removesuffix("_s"))
                left = values if left is None else left + values
            ax.invert_yaxis()
            ax.set(xlabel="time (s)", title="thread states (top threads by running time)")
            ax.legend(fontsize=7)
            save(fig, f"{stem}-thread-states.png")

        mine = corr[corr["trace"] == trace.source] if not corr.empty else corr
        if not mine.empty:
            fig, ax = plt.subplots(figsize=(7, 4))
            labels = [_mathtext_safe(f"{r.process}:{r.cause}") for r in mine.itertuples()]
            x = range(len(labels))
            ax.bar([v - 0.2 for v in x], mine["slow_mean_ms"], width=0.4, label="slow frames")
            ax.bar([v + 0.2 for v in x], mine["normal_mean_ms"], width=0.4, label="normal")
            ax.set_xticks(list(x), labels, rotation=30, ha="right", fontsize=7)
            ax.set(ylabel="mean per frame (ms)", title="time per frame by cause")
            ax.legend(fontsize=7)
            save(fig, f"{stem}-causes.png")
        if missing:
            notes.append(f"{trace.source}: no figure for " + "; ".join(missing))
    return notes
