"""The study's published facts beside the simulated numbers (``comparison.md`` and
``comparison.csv``): rendering, WAM and the fleet, and the knee of the S_d trade-off."""

from __future__ import annotations

import itertools
import math

import numpy as np

from mqoe.experiments import published
from mqoe.experiments.citations import CITATIONS
from mqoe.results import MetricRow
from mqoe.results.comparison import ComparisonRow

# The study's published facts (published/aging-glitching.toml), printed beside the
# simulated numbers (never used to make them).
STUDY = CITATIONS["aging-glitching"].short
PUBLISHED = published.load("aging-glitching")
# A knee must lie this far off the chord of the scaled trade-off curve (else: a line).
KNEE_MIN_DISTANCE = 0.05


class _Rows:
    """metrics.csv rows, looked up by figure, metric and condition."""

    def __init__(self, rows: list[MetricRow]) -> None:
        self.rows = rows

    def values(self, figure: str, metric: str, **cond: str) -> np.ndarray:
        return np.array(
            [r.value for r in self.rows
             if r.figure == figure and r.metric == metric
             and all(r.condition.get(k) == v for k, v in cond.items())],
            dtype=float,
        )  # fmt: skip

    def one(self, figure: str, metric: str, **cond: str) -> float:
        found = self.values(figure, metric, **cond)
        return float(found.mean()) if len(found) else math.nan

    def by(self, figure: str, metric: str, key: str, **cond: str) -> dict[str, float]:
        return {r.condition[key]: r.value for r in self.rows
                if r.figure == figure and r.metric == metric and key in r.condition
                and all(r.condition.get(k) == v for k, v in cond.items())}  # fmt: skip


def comparison_rows(rows: list[MetricRow]) -> list[ComparisonRow]:
    """The study's facts beside the simulated numbers: rendering, WAM, fleet."""
    t = _Rows(rows)
    out: list[ComparisonRow] = []
    before = t.values("ruir", "srff_pct", trim="before")
    after = t.values("ruir", "srff_pct", trim="after")
    if len(before) and len(before) == len(after):
        with np.errstate(divide="ignore", invalid="ignore"):
            cuts = 100.0 * (1.0 - after / before)
        cut = float(np.nanmean(cuts)) if np.isfinite(cuts).any() else math.nan
        mean, lo, hi = (PUBLISHED[f"srff_cut_pct/ruir/{k}"] for k in ("mean", "min", "max"))
        out.append(ComparisonRow.numeric(
            "ruir", "SR/FF cut by trimming redundant layers (mean over apps, %)", mean.value,
            cut, tolerance=f"{lo.value:g}–{hi.value:g}", met=lo.value <= cut <= hi.value,
            source=mean.source))  # fmt: skip
    causes = {k: v for k, v in t.by("root-causes", "share_pct", "cause").items()
              if k in ("ui_complex", "io_binder", "sched_delay")}  # fmt: skip
    for cause in ("ui_complex", "io_binder", "sched_delay"):
        if cause in causes:
            fact = PUBLISHED[f"srff_cause_share_pct/{cause}"]
            out.append(ComparisonRow.numeric(
                "root-causes", f"SR/FF cause share: {cause} (%)", fact.value, causes[cause],
                tolerance="", met=None, source=fact.source))  # fmt: skip
    little = t.one("sf-cpuset", "srff_pct", sf_cpuset="little")
    big = t.one("sf-cpuset", "srff_pct", sf_cpuset="big_when_little_saturated")
    # The slow frames the fix targets (every LITTLE core busy, a big core idle); "almost
    # removes that cause": SR/FF must fall by at least half of them.
    share = t.one("sf-cpuset", "slow_big_idle_little_saturated_pct", sf_cpuset="little")
    if math.isfinite(little) and math.isfinite(big) and math.isfinite(share):
        out.append(ComparisonRow.shape(
            "sf-cpuset", "big cores for SurfaceFlinger remove most slow frames with "
            "LITTLE saturated and big idle (low-end phones)",
            big < little and little - big >= 0.5 * little * share / 100,
            simulated=f"SR/FF {little:.2f}% → {big:.2f}%; such slow frames: {share:.2f}%",
            source=STUDY))  # fmt: skip
    out += _wam_rows(t)
    wam = "realtime"  # the fleet as the study measured it, before practical WAM
    for metric in ("anr_per_phone", "snr_per_phone", "phones_without_anr_pct",
                   "phones_without_snr_pct"):  # fmt: skip
        value, fact = t.one("anr-snr", metric, policy=wam), PUBLISHED[f"fleet/{wam}/{metric}"]
        if math.isfinite(value):
            out.append(ComparisonRow.numeric(
                "anr-snr", f"Fleet, {wam} WAM: {metric}", fact.value, value,
                tolerance="", met=None, source=fact.source))  # fmt: skip
    real = t.one("anr-snr", "wam_anr_share_pct", policy="realtime")
    fixed = t.one("anr-snr", "wam_anr_share_pct", policy="practical")
    if math.isfinite(real) and math.isfinite(fixed):
        out.append(ComparisonRow.shape(
            "anr-snr", "Fleet, practical WAM removes almost all WAM-caused ANRs (< 5% left)",
            fixed < 5.0, simulated=f"WAM share {real:.0f}% → {fixed:.0f}%",
            source=STUDY))  # fmt: skip
    return out


def _wam_rows(t: _Rows) -> list[ComparisonRow]:
    out: list[ComparisonRow] = []
    storages = dict.fromkeys(r.condition["storage"] for r in t.rows
                             if r.figure == "write-speed" and "storage" in r.condition)  # fmt: skip
    # The long run: real-time WAM best of the three (sign −1: lower is better).
    long_run = (
        ("write_amplification", -1, ".3f", "",
         "real-time WAM's GC copies least (lowest long-run write amplification)"),
        ("own_write_mbps", 1, ".1f", " MB/s",
         "the phone's own writes (GC time included) are fastest under real-time WAM"),
    )  # fmt: skip
    for storage, (metric, sign, fmt, unit, what) in itertools.product(storages, long_run):
        v = t.by("write-speed", metric, "policy", storage=storage)
        if {"realtime", "lazy", "practical"} <= set(v):
            out.append(ComparisonRow.shape(
                "write-speed", f"{storage}: {what}",
                sign * v["realtime"] > max(sign * v["lazy"], sign * v["practical"]),
                simulated=" / ".join(f"{v[p]:{fmt}}" for p in ("realtime", "lazy", "practical"))
                + unit,
                source=STUDY))  # fmt: skip
    for storage, metric in itertools.product(storages, ("random_mbps", "sequential_mbps")):
        speeds = t.by("write-speed", metric, "policy", storage=storage)
        if not {"realtime", "lazy", "practical"} <= set(speeds):
            continue
        real, lazy, practical = speeds["realtime"], speeds["lazy"], speeds["practical"]
        digits = 2 if metric == "random_mbps" else 1
        out.append(ComparisonRow.shape(
            "write-speed", f"{storage}: real-time WAM writes faster than lazy WAM ({metric})",
            real > lazy, simulated=f"{real:.{digits}f} vs {lazy:.{digits}f} MB/s",
            source=STUDY))  # fmt: skip
        out.append(ComparisonRow.shape(
            "write-speed",
            f"{storage}: practical WAM costs only a few % vs real-time ({metric}, 90–100%)",
            0.9 * real <= practical <= real,
            simulated=f"{practical:.{digits}f} vs {real:.{digits}f} MB/s",
            source=STUDY))  # fmt: skip
    trim = t.by("sd-threshold", "trim_duration_s", "threshold_gb")
    trimmed = t.by("sd-threshold", "trimmed_gb", "threshold_gb")
    wa = t.by("sd-threshold", "write_amplification", "threshold_gb")
    if len(trim) >= 2:
        lo, hi = min(trim, key=float), max(trim, key=float)
        out.append(ComparisonRow.shape(
            "sd-threshold", "a larger S_d threshold shortens the total batched-trim time",
            trim[hi] < trim[lo],
            simulated=f"{lo} GB: {trim[lo]:.0f} s for {trimmed.get(lo, math.nan):.1f} GB, "
            f"{hi} GB: {trim[hi]:.0f} s for {trimmed.get(hi, math.nan):.1f} GB",
            source=STUDY))  # fmt: skip
        out.append(ComparisonRow.shape(
            "sd-threshold", "… and costs write speed (more write amplification)",
            wa[hi] > wa[lo], simulated=f"WA {wa[lo]:.2f} → {wa[hi]:.2f}",
            source=STUDY))  # fmt: skip
    knee, chosen = sd_knee(trim, wa), PUBLISHED["sd_knee_gb"]
    if knee is not None:
        out.append(ComparisonRow.numeric(
            "sd-threshold", f"the trade-off's knee, S_d (GB; the study chose {chosen.value:g})",
            chosen.value, knee, tolerance="", met=None, source=chosen.source))  # fmt: skip
    return out


def sd_knee(trim_s: dict[str, float], wa: dict[str, float]) -> float | None:
    """The S_d threshold at the knee of the sweep's trade-off: on the curve of total
    trim time against write amplification (each scaled to [0, 1] over the sweep), the
    point farthest from the chord between the smallest and the largest threshold — past
    it a larger threshold saves little trim time for the write amplification it costs
    (Satopää et al., "Finding a 'Kneedle' in a Haystack", ICDCS workshops 2011). None
    with fewer than three points, a flat axis, or no point off the chord by more than
    :data:`KNEE_MIN_DISTANCE`."""
    keys = sorted(set(trim_s) & set(wa), key=float)
    if len(keys) < 3:
        return None
    x = np.array([wa[k] for k in keys], dtype=float)
    y = np.array([trim_s[k] for k in keys], dtype=float)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    x, y = (x - x.min()) / np.ptp(x), (y - y.min()) / np.ptp(y)
    (x0, y0), (x1, y1) = (x[0], y[0]), (x[-1], y[-1])
    distance = np.abs((x1 - x0) * (y0 - y) - (x0 - x) * (y1 - y0)) / np.hypot(x1 - x0, y1 - y0)
    best = int(np.argmax(distance))
    return float(keys[best]) if distance[best] > KNEE_MIN_DISTANCE else None


def comparison_markdown(rows: list[MetricRow], quick: bool) -> str:
    table = comparison_rows(rows)
    checked = [r for r in table if r.verdict != "reference"]
    met = sum(r.verdict == "met" for r in checked)
    lines = [
        f"# aging-glitching: published vs simulated{' (quick)' if quick else ''}",
        "",
        "The study's facts beside the simulated numbers (they are printed, never used to make "
        "them). Rows marked *reference* have no tolerance; shapes are checked as stated.",
        "",
        f"**{met} of {len(checked)} checked rows met.**",
        "",
        "| section | what | published | simulated | difference | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in table:
        diff = "" if r.difference is None else f"{r.difference:+.3g}"
        verdict = "**not met**" if r.verdict == "not met" else r.verdict
        lines.append(f"| {r.section} | {r.what} | {r.published} | {r.simulated} | {diff} "
                     f"| {verdict} |")  # fmt: skip
    return "\n".join(lines) + "\n"
