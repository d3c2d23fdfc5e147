"""``mqoe analyze memlog``: memory-signal logs of many phones (spec 01 §7)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mqoe.cli.console import jsonable, out, print_frame

HELP = "memory-signal logs of many phones (spec 01 §7)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, help="log files or folders (one per phone)")
    parser.add_argument("--out", type=Path, default=None, help="write the tables as CSV here")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--min-interactive-hours", type=float, default=10.0)
    parser.add_argument("--skip-bad-lines", action="store_true", help="skip and count bad lines")


def run(args: argparse.Namespace) -> int:
    from mqoe.analysis.memlog import SPEC01_POPULATION_FACTS, analyze, load_fleet
    from mqoe.results import atomic_write_text

    phones = load_fleet(args.files, skip_bad_lines=args.skip_bad_lines)
    report = analyze(phones, min_interactive_hours=args.min_interactive_hours)
    if args.out is not None:
        for name, frame in report.tables.items():
            atomic_write_text(args.out / f"{name}.csv", frame.to_csv(index=False))
        atomic_write_text(args.out / "comparison.csv", report.comparison().to_csv(index=False))
    if args.json:
        payload = {
            "summary": {k: jsonable(v) for k, v in report.summary().items()},
            "published": SPEC01_POPULATION_FACTS,
        }
        print(json.dumps(payload, indent=2, default=str))
        return 0
    print_frame(report.tables["phones"], "table")
    out.print("[bold]spec 01 population facts (kept phones)[/bold]")
    print_frame(report.comparison(), "table")
    if args.out is not None:
        out.print(f"tables written to {args.out}")
    return 0
