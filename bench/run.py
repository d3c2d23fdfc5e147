"""Run mqoe's benchmarks: `make bench` (`python bench/run.py [--quick] [--record]`).

Prints engine events per second, simulated seconds per wall second of the scenarios,
mqoe against its peers measured in the same run (SimPy in interleaved rounds, ns-3 on a
two-flow dumbbell when `make bench-env` installed it, Pensieve's trace loop), whole-process
CLI times, and each figure's ratio to bench/baseline.json; then a "Goals" section, one
line per goal of the speed issue, met or not. `--reproductions` adds the reproduce
commands' wall times (minutes). `--record` rewrites the baseline.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform

from speed import BASELINE_FILE, goal_lines, load_baseline, measure, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter measurements")
    parser.add_argument("--record", action="store_true", help="store these figures as baseline")
    parser.add_argument(
        "--reproductions",
        action="store_true",
        help="also time `mqoe reproduce all --quick` and `mqoe reproduce downward-spiral`",
    )
    args = parser.parse_args()
    figures = measure(args.quick)
    if args.reproductions:
        from reproductions import cli_reproduce_figures

        figures.update(cli_reproduce_figures())
    for line in [*report(figures, load_baseline()), *goal_lines(figures)]:
        print(line)
    if args.record:
        baseline = {
            "recorded": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()} {platform.processor() or ''} "
            f"python {platform.python_version()}".strip(),
            "figures": figures,
        }
        BASELINE_FILE.write_text(json.dumps(baseline, indent=2) + "\n")
        print(f"baseline written to {BASELINE_FILE}")


if __name__ == "__main__":
    main()
