"""``mqoe compare SIM.csv REAL.csv``: per-metric differences between two metrics.csv files."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "compare two metrics.csv files (e.g. simulator vs testbed) metric by metric"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sim", type=Path, help="metrics.csv of the simulator (or any side A)")
    parser.add_argument("real", type=Path, help="metrics.csv of the testbed (or side B)")
    parser.add_argument("--tolerance", type=float, default=0.25,
                        help="relative tolerance for *_kbps metrics (default 0.25)")  # fmt: skip
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument("--out", type=Path, help="also write the rows as a comparison.csv")


def run(args: argparse.Namespace) -> int:
    from mqoe.cli.console import check_output_file, err, print_frame
    from mqoe.emulation.compare import compare_rows, comparison_frame, comparison_rows
    from mqoe.errors import UserError
    from mqoe.results import read_metrics_csv
    from mqoe.results.comparison import write_comparison_csv

    if not 0 < args.tolerance < 10:
        raise UserError("--tolerance must be a fraction, e.g. 0.25")
    if args.out:
        check_output_file(args.out, "--out")  # before the table is printed, not after
    pairs = compare_rows(read_metrics_csv(args.sim), read_metrics_csv(args.real))
    frame = comparison_frame(pairs, args.tolerance)
    print_frame(frame, args.format)
    if args.out:
        write_comparison_csv(args.out, comparison_rows(pairs, args.tolerance))
    failed = int((frame["within"] == "NO").sum())
    checked = int((frame["within"] != "").sum())
    if args.format == "table":
        err.print(
            f"{checked - failed} of {checked} rate metrics within ±{args.tolerance:.0%}",
            markup=False,
        )
    return 0
