"""Sweep throughput (issue 10 §Performance): `.venv/bin/python bench/sweep.py [--runs N]`.

One sweep of N short ``video`` runs (30 s of 1080p playback under normal memory
pressure on nokia-1, seeds 0..N-1: the player, decoder, kswapd and the rest of the
memory model all run) is timed three times, each into a fresh results directory:

* one core: ``--workers 1`` (runs in the sweep process itself),
* the process pool on ``--cores`` local processes (default 2),
* Dask over a ``LocalCluster`` of the same number of worker processes.

Wall times include starting the pool or cluster and storing every run (Parquet,
fsynced). Prints runs/s, the pool's speed-up over one core (target ≥ 1.8× on 2 cores)
and Dask's throughput relative to the pool (target ≥ 0.85), checks the three stored the
same results, and prints the load average so a reader can judge a shared machine.
It ends with the machine's own ceiling at that moment: how much more ``--cores``
independent processes simulate than one (no pool, no storing); a pool cannot beat it.
CPU ms/run (this process and its reaped workers; Dask's workers are not counted as
they are not our children) shows the overhead of each mode independently of what
else the machine runs. Exit status 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from mqoe.results.api import load_runs
from mqoe.sweep import Backend, load_sweep, run_sweep

SPEC = """\
[sweep]
name = "bench-video"
scenario = "video"
profile = "nokia-1"
seeds = {{ start = 0, count = {runs} }}

[fixed]
duration_s = 30.0
"""
SPEEDUP_TARGET = 1.8
DASK_TARGET = 0.85  # Dask within 15% of the process pool
CLOCK = ["started_utc", "wall_time_s"]


def _timed(spec: Path, out: Path, backend: Backend) -> tuple[float, float]:
    """Wall seconds, and CPU seconds of this process and its (reaped) workers."""
    sweep = load_sweep(spec)
    cpu_before = _cpu_s()
    start = time.perf_counter()
    summary = run_sweep(sweep, out, backend)
    wall = time.perf_counter() - start
    if summary.failed or summary.stored != len(sweep.jobs):
        sys.exit(f"{backend.describe()}: {summary.failed} runs failed")
    return wall, _cpu_s() - cpu_before


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _simulate(seeds: range) -> None:
    """Runs without storing: the work of a sweep with no pool, IPC or writes."""
    from mqoe.device.profiles import load_profile
    from mqoe.workloads.runner import run_scenario

    profile = load_profile("nokia-1")
    for seed in seeds:
        run_scenario("video", profile, seed, {"duration_s": "30"})


def _ceiling(runs: int, cores: int) -> float:
    """How much faster ``cores`` independent processes do ``runs`` runs each than one
    process does ``runs``: the most any pool could gain on this machine right now
    (below ``cores`` when other programs hold CPUs, or vCPUs share a physical core)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with context.Pool(cores) as pool:  # started (and imported) before timing
        pool.map(_simulate, [range(1)] * cores)
        start = time.perf_counter()
        pool.map(_simulate, [range(runs)])
        one = time.perf_counter() - start
        start = time.perf_counter()
        pool.map(_simulate, [range(runs)] * cores, chunksize=1)
        many = time.perf_counter() - start
    return cores * one / many


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000, help="runs in the sweep")
    parser.add_argument("--cores", type=int, default=2, help="pool / cluster workers")
    parser.add_argument("--skip-serial", action="store_true", help="no one-core baseline")
    parser.add_argument(
        "--ceiling", type=int, default=40, metavar="N", help="runs per process in the ceiling check"
    )
    args = parser.parse_args()
    print(f"machine: {platform.machine()} python {platform.python_version()}, ", end="")
    print(f"{os.cpu_count()} cores, load average before: {_load()}")
    print(f"sweep: {args.runs} video runs (30 s playback each), {args.cores} workers")
    with tempfile.TemporaryDirectory(prefix="mqoe-bench-sweep-") as tmp:
        root = Path(tmp)
        spec = root / "sweep.toml"
        spec.write_text(SPEC.format(runs=args.runs), encoding="utf-8")
        modes = [("pool", Backend(workers=args.cores)), ("dask", Backend(local_cluster=args.cores))]
        if not args.skip_serial:
            modes.insert(0, ("one core", Backend(workers=1)))
        walls: dict[str, float] = {}
        for label, backend in modes:
            walls[label], cpu = _timed(spec, root / label.replace(" ", "-"), backend)
            rate = args.runs / walls[label]
            print(
                f"{label:>9}: {walls[label]:7.1f} s  {rate:6.2f} runs/s  "
                f"CPU {1000 * cpu / args.runs:5.0f} ms/run  (load after: {_load()})"
            )
        results = [
            load_runs(root / label.replace(" ", "-")).drop(columns=CLOCK) for label, _ in modes
        ]
        for other in results[1:]:
            pd.testing.assert_frame_equal(results[0], other)
        print("all modes stored identical results")
    if args.ceiling:
        ceiling = _ceiling(args.ceiling, args.cores)
        print(f"machine ceiling now: {args.cores} independent processes do {ceiling:.2f}x the runs")
    ok = True
    if "one core" in walls:
        speedup = walls["one core"] / walls["pool"]
        ok &= speedup >= SPEEDUP_TARGET
        print(f"pool speed-up over one core: {speedup:.2f}x (target >= {SPEEDUP_TARGET}x)")
    relative = walls["pool"] / walls["dask"]
    ok &= relative >= DASK_TARGET
    print(f"Dask throughput / pool throughput: {relative:.2f} (target >= {DASK_TARGET})")
    sys.exit(0 if ok else 1)


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


if __name__ == "__main__":
    main()
