"""Run mqoe's benchmarks: `make bench` (`python bench/run.py [--quick] [--record]`).

Prints engine events per second, simulated seconds per wall second of the
frame-deadlines scenario (4-core phone, 8 threads), SimPy on the same process workload,
and each figure's ratio to bench/baseline.json. `--record` rewrites the baseline.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform

from speed import BASELINE_FILE, load_baseline, measure, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter measurements")
    parser.add_argument("--record", action="store_true", help="store these figures as baseline")
    args = parser.parse_args()
    figures = measure(args.quick)
    for line in report(figures, load_baseline()):
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
