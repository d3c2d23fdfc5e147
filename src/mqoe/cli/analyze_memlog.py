"""``mqoe analyze memlog``: memory-signal logs of many phones (the logger format of the
memory-pressure study, Coal Not Diamonds, CoNEXT 2022)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from mqoe.cli.console import jsonable, out, print_frame
from mqoe.errors import UserError

HELP = "memory-signal logs of many phones (the CoNEXT 2022 user study's signals)"

# The per-phone columns shown on the console; --out's phones.csv has them all.
_SHOWN_PHONE_COLUMNS = (
    "phone", "kept", "drop_reason", "manufacturer", "api", "interactive_h",
    "median_utilisation", "pressure_per_h", "critical_per_h", "share_critical",
)  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, help="log files or folders (one per phone)")
    parser.add_argument("--out", type=Path, default=None, help="write the tables as CSV here")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--min-interactive-hours", type=float, default=10.0)
    parser.add_argument("--skip-bad-lines", action="store_true", help="skip and count bad lines")


def run(args: argparse.Namespace) -> int:
    from mqoe.analysis.memlog import PUBLISHED_POPULATION_FACTS, analyze, load_fleet
    from mqoe.results import atomic_write_text, ensure_output_dir

    # Options first: a fleet can take minutes to parse, and a bad option is known now.
    hours = args.min_interactive_hours
    if not (math.isfinite(hours) and hours >= 0):
        raise UserError(f"--min-interactive-hours {hours}: expected a number of hours ≥ 0")
    if args.out is not None:
        ensure_output_dir(args.out, "--out")
    phones = load_fleet(args.files, skip_bad_lines=args.skip_bad_lines)
    report = analyze(phones, min_interactive_hours=hours)
    if args.out is not None:
        for name, frame in report.tables.items():
            atomic_write_text(args.out / f"{name}.csv", frame.to_csv(index=False))
        atomic_write_text(args.out / "comparison.csv", report.comparison().to_csv(index=False))
    if args.json:
        payload = {
            "summary": {k: jsonable(v) for k, v in report.summary().items()},
            "published": PUBLISHED_POPULATION_FACTS,
        }
        text = json.dumps(payload, indent=2, default=str)
        out.print(text, markup=False, soft_wrap=True)
        return 0
    # print_frame shows cells as plain text: phone names come from folder names and
    # manufacturers from the phones, so neither may be read as Rich markup.
    print_frame(report.tables["phones"].loc[:, list(_SHOWN_PHONE_COLUMNS)], "table")
    out.print("[bold]the memory-pressure study's population facts (kept phones)[/bold]")
    print_frame(report.comparison(), "table")
    if args.out is not None:
        out.print(f"tables written to {args.out}", markup=False)
    return 0
