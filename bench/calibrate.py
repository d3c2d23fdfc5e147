"""Spec 01 calibration grid: the Nokia 1 cells the memory issue's "Done when" checks.

    .venv/bin/python bench/calibrate.py [--grid] [--seeds 5] [--jobs 2]
        [--profile memory.scan_cycles_per_page=8000 ...] [--set generator_touch_s=30 ...]

Runs each key cell (480p60 normal/moderate, 480p30 moderate, 1080p30 normal/moderate,
720p30 moderate) over ``--seeds`` seeds in parallel and prints, per cell, the means of
frame drop, crash rate, kswapd CPU, kswapd's sleeping share and the video threads'
Running / Runnable / Runnable-preempted (surviving runs only) beside spec 01's published
values. ``--profile SECTION.FIELD=VALUE`` overrides a profile constant for the whole
grid and ``--set KEY=VALUE`` a scenario parameter, so a calibration idea costs one
command (~20 s for 5 seeds on 2 cores) instead of a full ``mqoe reproduce
coal-not-diamonds`` (~5 min). A developer tool: the reproduction stays the reference.

``--grid`` runs all 30 cells of the Nokia 1's real grid instead (normal, moderate,
critical × 30/60 fps × 240p…1080p) and scores them against the phone's real runs with
the reproduction's rule (:mod:`mqoe.experiments.nokia1_real`): per cell real and
simulated drop and crash rates, time to crash, whether it matches, and the number of
cells matched (the target is 24 of 30). About 8 minutes for 5 seeds on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pandas as pd
from pydantic import BaseModel, ValidationError

from mqoe.device.profiles import DeviceProfile, load_profile
from mqoe.errors import UserError
from mqoe.experiments import nokia1_real
from mqoe.workloads.base import parse_assignments
from mqoe.workloads.runner import run_scenario

CELLS = (
    ("480p", 60, "normal"),
    ("480p", 60, "moderate"),
    ("480p", 30, "moderate"),
    ("1080p", 30, "normal"),
    ("1080p", 30, "moderate"),
    ("720p", 30, "moderate"),
)
# Spec 01 §Calibration targets and §What happens on a real phone (published values).
PUBLISHED = {
    ("480p", 60, "normal"): {"crash_pct": 0, "video_running_s": 69.0, "video_runnable_s": 58.2,
                             "kswapd_sleep_pct": 75.0},
    ("480p", 60, "moderate"): {"crash_pct": 40, "video_running_s": 63.2,
                               "video_runnable_s": 72.4, "kswapd_sleep_pct": 31.0},
    ("480p", 30, "moderate"): {"crash_pct": 40},
    ("1080p", 30, "normal"): {"drop_pct": 19.0, "crash_pct": 0},
    ("1080p", 30, "moderate"): {"drop_pct": 53.0},
    ("720p", 30, "moderate"): {"crash_pct": 100},
}  # fmt: skip
VIDEO_PROCESSES = ("browser", "app")


def _overridden(name: str, overrides: dict[str, dict[str, Any]]) -> DeviceProfile:
    """The profile with validated overrides (pydantic checks names, types and ranges)."""
    profile = load_profile(name)
    for section, fields in overrides.items():
        part = getattr(profile, section, None)
        if not isinstance(part, BaseModel):
            raise SystemExit(f"--profile: no section {section!r} in a device profile")
        try:
            updated = type(part).model_validate({**part.model_dump(), **fields})
        except ValidationError as exc:
            raise SystemExit(f"--profile {section}: {exc}") from None
        profile = profile.model_copy(update={section: updated})
    return profile


def _one(job: tuple[str, int, str, int, str, str]) -> dict[str, Any]:
    resolution, fps, pressure, seed, profile_json, sets_json = job
    profile = _overridden("nokia-1", json.loads(profile_json))
    sets = {"resolution": resolution, "fps": str(fps), "pressure": pressure}
    sets.update(json.loads(sets_json))
    record = run_scenario("video", profile, seed, sets)
    m, threads = record.metrics, record.tables["thread_states"]
    video = threads[
        threads["process"].isin(VIDEO_PROCESSES) | (threads["thread"] == "surfaceflinger")
    ]
    kswapd = threads[threads["thread"] == "kswapd0"].iloc[0]
    states = ["running_ns", "runnable_ns", "runnable_preempted_ns", "sleeping_ns", "blocked_io_ns"]
    total = float(kswapd[states].sum())
    crashed = bool(m["crashed"])
    return {
        "cell": f"{resolution}{fps} {pressure}",
        "drop_pct": m["frame_drop_pct"],
        "crash_pct": 100.0 * crashed,
        "kswapd_cpu_s": m["kswapd_cpu_s"],
        "kswapd_sleep_pct": 100.0 * float(kswapd["sleeping_ns"]) / total if total else 100.0,
        "video_running_s": None if crashed else float(video["running_s"].sum()),
        "video_runnable_s": None if crashed else float(video["runnable_s"].sum()),
        "video_preempted_s": None if crashed else float(video["runnable_preempted_s"].sum()),
        "kills": m["kills_during_video"],
        "crash_time_s": m["crash_time_s"],
        "iowait_pct": m["iowait_pct"],
        "zram_used_pct": m["zram_used_pct"],
    }


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    try:
        return parse_assignments(items)
    except UserError as exc:
        raise SystemExit(f"{flag}: {exc}") from None


def _is_text_field(section: str, field: str) -> bool:
    part = DeviceProfile.model_fields.get(section)
    model = part.annotation if part is not None else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return False
    info = model.model_fields.get(field)
    return info is not None and info.annotation is str


def _profile_overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, value in _pairs(items, "--profile").items():
        section, dot, field = key.partition(".")
        if not dot:
            raise SystemExit(f"--profile expects SECTION.FIELD=VALUE, got {key!r}")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        if _is_text_field(section, field):  # e.g. memory.kernel_version=3.10 stays "3.10"
            parsed = value
        out.setdefault(section, {})[field] = parsed
    _overridden("nokia-1", out)  # fail here, not in a worker, on an unknown section
    return out


def _print_grid(rows: list[dict[str, Any]]) -> None:
    """Each real cell beside the simulated one, and the score."""
    by_cell: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_cell.setdefault(row["cell"], []).append(row)
    scores, lines = [], []
    for real in nokia1_real.real_cells():
        runs = by_cell[f"{real.resolution}{real.fps} {real.state}"]
        s = nokia1_real.score(
            real,
            [r["drop_pct"] for r in runs],
            [bool(r["crash_pct"]) for r in runs],
            [r["crash_time_s"] for r in runs],
        )
        scores.append(s)
        mean = pd.DataFrame(runs).mean(numeric_only=True)
        lines.append({
            "cell": real.label,
            "real_drop": real.drop_pct,
            "sim_drop": round(s.drop_pct, 1),
            "real_crash": real.crashed_pct,
            "sim_crash": s.crashed_pct,
            "real_ttc": real.time_to_crash_s,
            "sim_ttc": round(s.time_to_crash_s, 1),
            "kswapd_s": round(mean["kswapd_cpu_s"], 1),
            "iowait%": round(mean["iowait_pct"], 2),
            "zram%": round(mean["zram_used_pct"], 0),
            "match": "yes" if s.matched else "NO",
        })  # fmt: skip
    pd.set_option("display.width", 250)
    print(pd.DataFrame(lines).to_string(index=False))
    n = nokia1_real.matched(scores)
    print(f"{n} of {len(scores)} cells matched (target {nokia1_real.MATCH_TARGET})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--grid", action="store_true", help="all 30 cells, scored")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--profile", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    profile_json = json.dumps(_profile_overrides(args.profile))
    sets_json = json.dumps(_pairs(args.set, "--set"))
    cells = (
        [(c.resolution, c.fps, c.state) for c in nokia1_real.real_cells()] if args.grid else CELLS
    )
    jobs = [(*cell, seed, profile_json, sets_json) for cell in cells for seed in range(args.seeds)]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(_one, jobs))
    if args.grid:
        _print_grid(rows)
        print(f"{len(jobs)} sessions in {time.perf_counter() - start:.0f} s wall")
        return
    table = pd.DataFrame(rows).groupby("cell", sort=False).mean(numeric_only=True)
    published = pd.DataFrame(
        {f"{r}{f} {p}": values for (r, f, p), values in PUBLISHED.items()}
    ).T.add_prefix("pub_")
    table = table.join(published)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print(table.round(2).to_string())
    print(f"{len(jobs)} sessions in {time.perf_counter() - start:.0f} s wall")


if __name__ == "__main__":
    main()
