"""Fleet simulation speed (spec 04 §4): `.venv/bin/python bench/fleet.py`.

Times 1k, 3k and 10k phones × 21 days under each WAM policy (best of ``--repeats``),
prints simulated phone-days per wall second, and checks that the cost is linear in
phones: the marginal time per phone from 3k to 10k within ``--tolerance`` of that from
1k to 3k (exit status 1 if not). ``--full`` adds the study's 30,000 phones × 21 days
(target: under 10 minutes on 2 cores, aim < 2 minutes on one) and ``--workers N``
spreads blocks over N processes.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from typing import cast

from mqoe.workloads.fleet import FleetParams, WamPolicy, run_fleet

SIZES = (1_000, 3_000, 10_000)
WAM_POLICIES = ("realtime", "lazy", "practical")
DAYS = 21


def _seconds(phones: int, wam: str, workers: int, repeats: int) -> float:
    """Best wall time of ``repeats`` runs (the least disturbed measurement)."""
    best = float("inf")
    for _ in range(repeats):
        policy = cast(WamPolicy, wam)
        params = FleetParams(phones=phones, days=DAYS, seed=1, wam=policy, workers=workers)
        start = time.perf_counter()
        run_fleet(params)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=2, help="runs per size (best kept)")
    parser.add_argument("--workers", type=int, default=1, help="processes per run")
    parser.add_argument("--full", action="store_true", help="also 30,000 phones × 21 days")
    parser.add_argument("--tolerance", type=float, default=0.35, help="linearity tolerance")
    parser.add_argument(
        "--wam", nargs="+", default=["realtime", "lazy", "practical"], choices=WAM_POLICIES
    )
    args = parser.parse_args()
    print(f"machine: {platform.machine()} python {platform.python_version()}")
    print(f"workers: {args.workers}, days: {DAYS}, best of {args.repeats}")
    sizes = (*SIZES, 30_000) if args.full else SIZES
    linear = True
    for wam in args.wam:
        wall: dict[int, float] = {}
        for phones in sizes:
            repeats = 1 if phones >= 30_000 else args.repeats
            wall[phones] = _seconds(phones, wam, args.workers, repeats)
            rate = phones * DAYS / wall[phones]
            size = f"{phones:>7,} phones x {DAYS} d"
            print(f"{wam:10s} {size} {wall[phones]:8.2f} s {rate:12,.0f} phone-days/s")
        # Marginal time per phone: fixed costs (starting workers, loading profiles) cancel.
        (n1, n2, n3), (t1, t2, t3) = SIZES, (wall[n] for n in SIZES)
        ratio = ((t3 - t2) / (n3 - n2)) / ((t2 - t1) / (n2 - n1))
        ok = abs(ratio - 1.0) <= args.tolerance
        linear &= ok
        verdict = "linear" if ok else "NOT linear"
        spans = f"{n2:,}-{n3:,} vs {n1:,}-{n2:,}"
        print(f"{wam:10s} marginal time per phone, {spans}: x{ratio:.2f} ({verdict})")
    sys.exit(0 if linear else 1)


if __name__ == "__main__":
    main()
