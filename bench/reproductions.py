"""Reproduction speed: `.venv/bin/python bench/reproductions.py [WORK …] [--full]`.

Times ``mqoe reproduce WORK --quick`` (or the full version with ``--full``) for each
registered work (default: all), in a temporary folder, and prints the wall time beside
the budget the issues set (quick: under 1 minute each; full: 10 minutes for
coal-not-diamonds, 5 for the others). Also times one three-week ``flash-aging`` run (the
aging-glitching write-speed figure's unit of work) in simulated days per wall second.
Exit status 1 when a work is over its budget. Measure on a quiet machine: the numbers
scale with the cores the process pool gets. ``cli_reproduce_figures`` times the speed
issue's two whole ``mqoe reproduce`` commands for ``bench/run.py --reproductions``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

from mqoe.experiments import EXPERIMENTS
from speed import cli_seconds, flash_aging_speed

QUICK_BUDGET_S = 60.0  # every issue: "--quick in under 1 minute"
FULL_BUDGET_S = {"coal-not-diamonds": 600.0}  # issue 4; the others: 5 minutes
FULL_DEFAULT_S = 300.0


def cli_reproduce_figures() -> dict[str, float]:
    """Whole-process wall time of the speed issue's two reproduce commands, each once
    (minutes; the bytecode cache is assumed warm from ``make bench``'s CLI figures):
    ``mqoe reproduce all --quick`` (goal < 60 s) and ``mqoe reproduce downward-spiral``
    (goal < 11 s), both on every core, in a scratch folder."""
    return {
        "reproduce_all_quick_s": cli_seconds(["reproduce", "all", "--quick"], 1, warm=False),
        "reproduce_downward_spiral_s": cli_seconds(["reproduce", "downward-spiral"], 1, warm=False),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("works", nargs="*", help="works to time (default: all)")
    parser.add_argument("--full", action="store_true", help="the full reproductions")
    args = parser.parse_args()
    works = args.works or sorted(EXPERIMENTS)
    unknown = [w for w in works if w not in EXPERIMENTS]
    if unknown:
        parser.error(f"unknown work(s): {', '.join(unknown)}")
    print(f"machine: {platform.machine()} python {platform.python_version()}")
    over = False
    for work in works:
        budget = FULL_BUDGET_S.get(work, FULL_DEFAULT_S) if args.full else QUICK_BUDGET_S
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            EXPERIMENTS[work].reproduce(Path(tmp), quick=not args.full)
            wall = time.perf_counter() - start
        verdict = "ok" if wall <= budget else "OVER BUDGET"
        over |= wall > budget
        mode = "full" if args.full else "quick"
        print(f"{work:20s} {mode:5s} {wall:7.1f} s  (budget {budget:.0f} s)  {verdict}")
    days_per_s = flash_aging_speed() / 86_400  # the same run as `make bench`'s
    print(f"flash-aging 21 d      {21 / days_per_s:7.1f} s  {days_per_s:6.2f} simulated days/s")
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
