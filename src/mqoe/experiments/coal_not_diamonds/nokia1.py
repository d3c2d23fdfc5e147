"""The simulated Nokia 1 against the phone's real runs (the study's per-run logs).

Each grid cell scored by :mod:`mqoe.experiments.nokia1_real`'s rule, as comparison rows
(the cells and their score; kswapd, iowait, zRAM fill and Critical's time to crash
against the phone's ``top``) and as ``nokia1-real.csv``.
"""

from __future__ import annotations

import math

from mqoe.experiments import nokia1_real
from mqoe.experiments.coal_not_diamonds.aggregate import Aggregate, _number
from mqoe.experiments.coal_not_diamonds.checks import Check
from mqoe.experiments.coal_not_diamonds.plan import KSWAPD, Config, Results

# zRAM "full" in the phone's own top under pressure (the per-run logs, nokia1_real), shown
# as 100% beside the simulated fill: a reading of the logs, not a number the study states.
ZRAM_FULL_PCT = 100.0


def nokia1_scores(agg: Aggregate) -> list[nokia1_real.CellScore]:
    """The simulated Nokia 1 grid scored cell by cell against the phone's real runs
    (the cells this plan ran)."""
    scores = []
    for real in nokia1_real.real_cells():
        records = agg.records(Config("nokia-1", real.state, real.resolution, real.fps))
        if not records:
            continue
        crashed = [bool(r.metrics["crashed"]) for r in records]
        scores.append(
            nokia1_real.score(
                real,
                [_number(r.metrics["frame_drop_pct"]) for r in records],
                crashed,
                [_number(r.metrics.get("crash_time_s")) for r in records],
            )
        )
    return scores


def nokia1_real_checks(agg: Aggregate) -> list[Check]:
    """One row per cell (drop %, with the crash rate in the tolerance column), then the
    number of cells matched against the target."""
    scores = nokia1_scores(agg)
    checks = []
    for s in scores:
        real = s.real
        drop_rule = (
            "drop not compared (every real run crashed)"
            if s.drop_ok is None
            else f"drop ± {real.drop_tolerance:.1f}"
        )
        checks.append(
            Check(
                f"{real.label}: drop % (crash % real {real.crashed_pct:.0f}, "
                f"simulated {s.crashed_pct:.0f})",
                real.drop_pct,
                s.drop_pct,
                f"{drop_rule}; crash ± {nokia1_real.CRASH_POINTS:.0f} points",
                s.matched,
                nokia1_real.SOURCE,
            )
        )
    if scores:
        n = nokia1_real.matched(scores)
        # the full grid's 24 of 30, pro rata when a plan runs fewer cells (--quick)
        target = math.ceil(
            nokia1_real.MATCH_TARGET * len(scores) / len(nokia1_real.real_cells()) - 1e-9
        )
        checks.append(
            Check(
                f"cells matched (of {len(scores)})",
                target,
                float(n),
                f"≥ {target} (24 of 30 on the full grid)",
                n >= target,
                nokia1_real.SOURCE,
            )
        )
    return checks


def nokia1_top_checks(agg: Aggregate) -> list[Check]:
    """The phone's own ``top`` and Perfetto numbers under pressure: kswapd's CPU and
    sleeping share, iowait, zRAM fill, and Critical's time to crash."""
    checks = []
    source = f"{nokia1_real.SOURCE}: top -d 1"
    for row in nokia1_real.top_rows():
        if row.state == "critical":
            continue
        c = Config("nokia-1", row.state, row.resolution, row.fps)
        if not agg.has(c):
            continue
        label = f"{row.resolution}{row.fps} {row.state}"
        kswapd = agg.thread(c, KSWAPD, "running_share_pct")
        if row.state == "normal":
            met, tolerance = kswapd < 6.0, "< 6% of a core"
        else:
            met, tolerance = 25.0 <= kswapd <= 75.0, "25–75% of a core"
        checks.append(Check(f"kswapd CPU, {label}", row["kswapd"], kswapd, tolerance, met,
                            source))  # fmt: skip
        if row.state == "moderate":
            iowait = agg.mean(c, "iowait_pct")
            real = row["iowait"] / 4  # % of 400 → % of all CPU time
            checks.append(Check(f"iowait % of all CPU time, {label}", real, iowait,
                                "1.5–10%", 1.5 <= iowait <= 10.0, source))  # fmt: skip
    c = Config("nokia-1", "moderate", "480p", 60)
    if agg.has(c):
        sleeping = agg.thread(c, KSWAPD, "sleeping_share_pct")
        checks.append(Check("kswapd Sleeping share, 480p60 moderate",
                            nokia1_real.KSWAPD_SLEEPING_MODERATE_PCT, sleeping,
                            "20–45%", 20.0 <= sleeping <= 45.0,
                            f"{nokia1_real.SOURCE}: Perfetto thread states"))  # fmt: skip
    for state in ("moderate", "critical"):
        ran = [Config("nokia-1", state, cell.resolution, cell.fps)
               for cell in nokia1_real.real_cells() if cell.state == state]  # fmt: skip
        fill = [agg.mean(c, "zram_used_pct") for c in ran if agg.has(c)]
        if fill:
            low = min(fill)
            checks.append(Check(f"zRAM used %, {state} (lowest cell mean)", ZRAM_FULL_PCT, low,
                                "full: ≥ 95%", low >= 95.0, source))  # fmt: skip
    for s in nokia1_scores(agg):
        if s.real.state == "critical":
            checks.append(
                Check(
                    f"time to crash (s), {s.real.label}",
                    s.real.time_to_crash_s,
                    s.time_to_crash_s,
                    f"within ×{nokia1_real.CRASH_TIME_FACTOR:.0f}",
                    s.crash_time_ok,
                    nokia1_real.SOURCE,
                )
            )
    return checks


def nokia1_real_csv(results: Results) -> str:
    """The Nokia 1 grid cell by cell, real beside simulated (``nokia1-real.csv``)."""
    lines = ["state,fps,resolution,real_crashed_pct,sim_crashed_pct,real_drop_pct,"
             "sim_drop_pct,drop_tolerance,real_time_to_crash_s,sim_time_to_crash_s,"
             "runs,matched"]  # fmt: skip
    for s in nokia1_scores(Aggregate(results)):
        r = s.real
        tolerance = "" if s.drop_ok is None else f"{r.drop_tolerance:.2f}"
        lines.append(
            f"{r.state},{r.fps},{r.resolution},{r.crashed_pct:g},{s.crashed_pct:g},"
            f"{r.drop_pct:g},{s.drop_pct:.2f},{tolerance},{_csv_num(r.time_to_crash_s)},"
            f"{_csv_num(s.time_to_crash_s)},{s.runs},{str(s.matched).lower()}"
        )
    return "\n".join(lines) + "\n"


def _csv_num(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.1f}"
