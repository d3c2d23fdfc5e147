"""Reproduction ``aging-glitching`` (spec 04): slow/frozen frames, ANR and SNR.

Figures (``metrics.csv``, figure = the name):

* ``srff-model`` — the ``ui-bench`` scenario for the ten benchmark apps on each of the
  15 phone models (with the phone's background load): buffer-aware ``srff_pct``,
  ``sr_pct``, ``ff_pct`` per model (mean over apps);
* ``srff-app`` — the same runs per app (condition ``app``, mean over models);
* ``frame-time`` — the pooled slow frames: share of SR under 32 ms, share of FF;
* ``ruir`` — the five open-source apps on a mid-range phone before and after trimming
  their redundant layers (condition ``app``, ``trim`` = ``before``/``after``);
* ``sf-cpuset`` — the five low-end models with SurfaceFlinger on LITTLE only and with
  big cores allowed when LITTLE ones are saturated (condition ``sf_cpuset``);
* ``write-speed`` — the ``flash-aging`` scenario (three weeks of file churn on a
  mid-range eMMC phone and a high-end UFS one, condition ``storage``) under real-time /
  lazy / practical WAM: the storage benchmark, run
  each day before the night's trim, after it and at midday (``BENCH_HOURS``) —
  ``random_mbps`` / ``sequential_mbps`` (the day's average) and ``*_spread`` (its
  fastest time of day less its slowest) — ``write_amplification``, and the time the WAM
  spent discarding (``discard_busy_s``);
* ``sd-threshold`` — practical WAM with S_d thresholds of 1…12 GB: write speed,
  ``write_amplification`` and the total batched-trim duration (``trim_duration_s``);
* ``anr-snr`` — the fleet (``mqoe run fleet``) under real-time and practical WAM;
* ``root-causes`` — the cause shares of simulated slow frames and of fleet ANRs.

``comparison.md`` sets the simulated numbers beside spec 04's published facts (read from
``published/aging-glitching.toml``); those facts are only printed, never used to produce
a simulated number.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mqoe.device.profiles import load_profile
from mqoe.experiments import published
from mqoe.experiments.citations import CITATIONS
from mqoe.experiments.outputs import save_figure, write_outputs
from mqoe.experiments.reproduction import PlannedRun, Reproduction
from mqoe.metrics.jank import SLOW_FRAME_NS
from mqoe.results import MetricRow
from mqoe.results.comparison import ComparisonRow
from mqoe.results.store import RunRecord

MODELS = (
    "redmi-5", "mi-a1", "mi-max-2", "mi-max-3", "redmi-note-5-pro",  # low end (spec 04)
    "mi-a2", "mi-8-lite", "redmi-note-7", "redmi-pro-2", "mi-note-3",  # middle
    "mi-6", "mi-mix-2s", "mi-8-pro", "mi-mix-3", "black-shark",  # high end
)  # fmt: skip
LOW_END = MODELS[:5]
BENCH_APPS = (
    "chrome", "clash-of-clans", "facebook", "gmail", "instagram",
    "messenger", "spotify", "subway-surf", "whatsapp", "youtube",
)  # fmt: skip
RUIR_APPS = ("k9-mail", "feeder", "markor", "amaze", "conversations")
RUIR_MODEL = "mi-a2"  # a middle-tier phone for the before/after
SF_CPUSETS = ("little", "big_when_little_saturated")
SEED = 1
FLEET = {"full": {"phones": "30000", "days": "21"},
         "quick": {"phones": "2000", "days": "21"}}  # fmt: skip
WAM_FLEET = ("realtime", "practical")
FLASH_MODEL = "mi-a2"  # a middle-tier phone with 64 GB of eMMC (spec 04 table, model 6)
# The write-speed figure on each storage type the fleet has: eMMC (the sweep's phone)
# and UFS 2.1 (a high-end phone with 128 GB).
FLASH_MODELS = (FLASH_MODEL, "mi-8-pro")
WAM_POLICIES = ("realtime", "lazy", "practical")
SD_THRESHOLDS_GB = {"full": (1, 2, 3, 4, 6, 8, 10, 12), "quick": (1, 6, 12)}
FLASH_DAYS = {"full": "21", "quick": "7"}  # spec 04's three weeks; a week in quick mode
# The daily storage benchmark before the night's trim (03:00), after it, and at midday:
# its figures are the day's average (and spread) over the three.
BENCH_HOURS = "2.5,5,12"
# A knee must lie this far off the chord of the scaled trade-off curve (else: a line).
KNEE_MIN_DISTANCE = 0.05


@dataclass(frozen=True)
class UiCell:
    figure: str  # which figure the run feeds (srff, ruir, sf-cpuset)
    model: str
    app: str
    overrides: tuple[tuple[str, str], ...] = ()


def ui_cells() -> list[UiCell]:
    cells = [UiCell("srff", m, a) for m in MODELS for a in BENCH_APPS]
    cells += [
        UiCell("ruir", RUIR_MODEL, a, (("trim_ruir", trim),))
        for a in RUIR_APPS
        for trim in ("false", "true")
    ]
    cells += [
        UiCell("sf-cpuset", m, a, (("sf_cpuset", cpuset),))
        for m in LOW_END
        for a in BENCH_APPS
        for cpuset in SF_CPUSETS
        if cpuset != "little"  # the "little" runs are the srff runs themselves
    ]
    return cells


def _ui_overrides(cell: UiCell, quick: bool) -> dict[str, str]:
    overrides = {"app": cell.app, **dict(cell.overrides)}
    if quick:
        overrides["duration_s"] = "10"
    return overrides


def flash_specs(quick: bool) -> list[tuple[str, str]]:
    """(model, WAM policy spec) of the flash-aging runs: the three policies on each of
    :data:`FLASH_MODELS`, then the S_d sweep on :data:`FLASH_MODEL` (practical at its
    default 6 GB is the sweep's 6 GB point too)."""
    sweep = SD_THRESHOLDS_GB["quick" if quick else "full"]
    runs = [(model, wam) for model in FLASH_MODELS for wam in WAM_POLICIES]
    return runs + [(FLASH_MODEL, f"practical:threshold_gb={gb}") for gb in sweep if gb != 6]


# A planned run's key: ("ui", UiCell), ("fleet", WAM spec) or ("flash", (model, WAM spec)).
Key = tuple[str, object]


@dataclass
class Results:
    ui: list[tuple[UiCell, RunRecord]]
    fleet: dict[str, RunRecord]
    flash: dict[tuple[str, str], RunRecord] = field(default_factory=dict)  # (model, spec)

    @classmethod
    def from_pairs(cls, pairs: list[tuple[Key, RunRecord]]) -> Results:
        out = cls([], {}, {})
        for (kind, what), record in pairs:
            if kind == "ui":
                out.ui.append((what, record))  # type: ignore[arg-type]
            elif kind == "fleet":
                out.fleet[what] = record  # type: ignore[index]
            else:
                out.flash[what] = record  # type: ignore[index]
        return out

    def pairs(self) -> list[tuple[Key, RunRecord]]:
        return [
            *((("flash", spec), r) for spec, r in self.flash.items()),
            *((("fleet", wam), r) for wam, r in self.fleet.items()),
            *((("ui", cell), r) for cell, r in self.ui),
        ]


# -- tables ---------------------------------------------------------------------------
def ui_table(results: Results) -> pd.DataFrame:
    rows = [
        {"figure": c.figure, "model": c.model, "app": c.app, **dict(c.overrides),
         **{k: _number(r.metrics.get(k)) for k in ("srff_pct", "sr_pct", "ff_pct",
                                                   "severe_sr", "frames",
                                                   "big_idle_little_saturated_share")}}
        for c, r in results.ui
    ]  # fmt: skip
    return pd.DataFrame(rows)


def slow_frames(results: Results) -> pd.DataFrame:
    parts = [r.tables["slow_frames"] for c, r in results.ui if c.figure == "srff"]
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def metric_rows(results: Results) -> list[MetricRow]:
    table = ui_table(results)
    srff = table[table["figure"] == "srff"]
    rows: list[MetricRow] = []
    for model, group in srff.groupby("model", sort=False):
        for metric in ("srff_pct", "sr_pct", "ff_pct"):
            rows.append(MetricRow("srff-model", str(model), {}, metric,
                                  float(group[metric].mean()), "%"))  # fmt: skip
    for app, group in srff.groupby("app", sort=False):
        for metric in ("srff_pct", "sr_pct", "ff_pct"):
            rows.append(MetricRow("srff-app", "15-models", {"app": str(app)}, metric,
                                  float(group[metric].mean()), "%"))  # fmt: skip
    slow = slow_frames(results)
    if not slow.empty:
        sr = slow[slow["kind"] == "sr"]
        rows.append(MetricRow("frame-time", "15-models", {}, "sr_under_32ms_pct",
                              100.0 * float((sr["duration_ns"] < 2 * SLOW_FRAME_NS).mean())
                              if len(sr) else math.nan, "%"))  # fmt: skip
        rows.append(MetricRow("frame-time", "15-models", {}, "ff_pct",
                              100.0 * float((slow["kind"] == "ff").mean()), "%"))  # fmt: skip
    ruir = table[table["figure"] == "ruir"]
    for app, setting, value in zip(ruir["app"], ruir["trim_ruir"], ruir["srff_pct"],
                                   strict=True):  # fmt: skip
        trim = "after" if setting == "true" else "before"
        rows.append(MetricRow("ruir", RUIR_MODEL, {"app": str(app), "trim": trim},
                              "srff_pct", float(value), "%"))  # fmt: skip
    low = srff[srff["model"].isin(LOW_END)].assign(sf_cpuset="little")
    cpuset = pd.concat([low, table[table["figure"] == "sf-cpuset"]])
    means = cpuset.groupby(["model", "sf_cpuset"], sort=False)["srff_pct"].mean()
    for key, value in means.items():
        model, setting = key  # type: ignore[misc]
        rows.append(MetricRow("sf-cpuset", str(model), {"sf_cpuset": str(setting)},
                              "srff_pct", float(value), "%"))  # fmt: skip
    # Per model, with SurfaceFlinger on LITTLE only: the share of slow frames during
    # which every LITTLE core was busy while a big core idled (the case the fix targets).
    shares = low.groupby("model", sort=False)["big_idle_little_saturated_share"].mean()
    for name, value in shares.items():
        rows.append(MetricRow("sf-cpuset", str(name), {"sf_cpuset": "little"},
                              "slow_big_idle_little_saturated_pct", 100.0 * float(value),
                              "%"))  # fmt: skip
    for wam, record in results.fleet.items():
        m = record.metrics
        for metric, unit in (
            ("anr_per_phone", "events"),
            ("snr_per_phone", "events"),
            ("phones_without_anr_pct", "%"),
            ("wam_anr_share_pct", "%"),
        ):
            rows.append(MetricRow("anr-snr", "fleet", {"policy": wam}, metric,
                                  _number(m.get(metric)), unit))  # fmt: skip
    rows += flash_rows(results)
    for cause, share in frame_cause_shares(slow).items():
        rows.append(MetricRow("root-causes", "15-models", {"kind": "srff", "cause": cause},
                              "share_pct", share, "%"))  # fmt: skip
    realtime = results.fleet.get("realtime")
    if realtime is not None:
        for cause in ("wam", "lock", "low_memory", "app_defect"):
            value = realtime.metrics.get(f"{cause}_anr_share_pct")
            rows.append(MetricRow("root-causes", "fleet", {"kind": "anr", "cause": cause},
                                  "share_pct", _number(value), "%"))  # fmt: skip
    return rows


def _threshold_gb(spec: str) -> float | None:
    """S_d threshold of a practical WAM spec (6 GB by default); None for other policies."""
    if spec == "practical":
        return 6.0
    prefix = "practical:threshold_gb="
    return float(spec[len(prefix) :]) if spec.startswith(prefix) else None


def flash_rows(results: Results) -> list[MetricRow]:
    rows: list[MetricRow] = []
    speed = (("random_mbps", "MB/s"), ("sequential_mbps", "MB/s"), ("own_write_mbps", "MB/s"),
             ("write_amplification", "x"))  # fmt: skip
    spread = (("random_mbps_spread", "MB/s"), ("sequential_mbps_spread", "MB/s"))
    for (model, spec), record in results.flash.items():
        m = record.metrics
        if spec in WAM_POLICIES:
            cond = {"storage": load_profile(model).storage.type, "policy": spec}
            for metric, unit in (*speed, *spread, ("discard_busy_s", "s")):
                rows.append(MetricRow("write-speed", model, cond, metric,
                                      _number(m.get(metric)), unit))  # fmt: skip
        threshold = _threshold_gb(spec)
        if threshold is not None and model == FLASH_MODEL:
            cond = {"threshold_gb": f"{threshold:g}"}
            trim = (("trim_busy_s", "s"), ("trimmed_gb", "GB"), ("trim_rounds", "rounds"))
            for metric, unit in (*speed, *trim):
                name = "trim_duration_s" if metric == "trim_busy_s" else metric
                rows.append(MetricRow("sd-threshold", FLASH_MODEL, cond, name,
                                      _number(m.get(metric)), unit))  # fmt: skip
    return rows


def frame_cause_shares(slow: pd.DataFrame) -> dict[str, float]:
    if slow.empty:
        return {}
    shares = slow["cause"].value_counts(normalize=True) * 100.0
    return {str(k): float(v) for k, v in shares.items()}


# -- comparison -----------------------------------------------------------------------
# The study's published facts (published/aging-glitching.toml), printed beside the
# simulated numbers (never used to make them).
SPEC = CITATIONS["aging-glitching"].short
PUBLISHED = published.load("aging-glitching")


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
    """Spec 04's facts beside the simulated numbers: rendering, WAM, fleet."""
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
            source=SPEC))  # fmt: skip
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
            source=SPEC))  # fmt: skip
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
                source=SPEC))  # fmt: skip
    for storage, metric in itertools.product(storages, ("random_mbps", "sequential_mbps")):
        speeds = t.by("write-speed", metric, "policy", storage=storage)
        if not {"realtime", "lazy", "practical"} <= set(speeds):
            continue
        real, lazy, practical = speeds["realtime"], speeds["lazy"], speeds["practical"]
        digits = 2 if metric == "random_mbps" else 1
        out.append(ComparisonRow.shape(
            "write-speed", f"{storage}: real-time WAM writes faster than lazy WAM ({metric})",
            real > lazy, simulated=f"{real:.{digits}f} vs {lazy:.{digits}f} MB/s",
            source=SPEC))  # fmt: skip
        out.append(ComparisonRow.shape(
            "write-speed",
            f"{storage}: practical WAM costs only a few % vs real-time ({metric}, 90–100%)",
            0.9 * real <= practical <= real,
            simulated=f"{practical:.{digits}f} vs {real:.{digits}f} MB/s",
            source=SPEC))  # fmt: skip
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
            source=SPEC))  # fmt: skip
        out.append(ComparisonRow.shape(
            "sd-threshold", "… and costs write speed (more write amplification)",
            wa[hi] > wa[lo], simulated=f"WA {wa[lo]:.2f} → {wa[hi]:.2f}", source=SPEC))  # fmt: skip
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


# -- figures --------------------------------------------------------------------------
def plot(results: Results, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = ui_table(results)
    srff = table[table["figure"] == "srff"]
    fig, axes = plt.subplots(1, 2, figsize=(14, 3.8))
    per_model = srff.groupby("model", sort=False)[["sr_pct", "ff_pct"]].mean()
    axes[0].bar(per_model.index, per_model["sr_pct"], label="SR")
    axes[0].bar(per_model.index, per_model["ff_pct"], bottom=per_model["sr_pct"], label="FF")
    axes[0].set_ylabel("% of frames (buffer-aware)")
    axes[0].tick_params(axis="x", rotation=60, labelsize=7)
    axes[0].legend(fontsize=8)
    per_app = srff.groupby("app", sort=False)[["sr_pct", "ff_pct"]].mean()
    axes[1].bar(per_app.index, per_app["sr_pct"], label="SR")
    axes[1].bar(per_app.index, per_app["ff_pct"], bottom=per_app["sr_pct"], label="FF")
    axes[1].tick_params(axis="x", rotation=60, labelsize=7)
    fig.tight_layout()
    save_figure(fig, out_dir / "srff-model-app")
    plt.close(fig)
    slow = slow_frames(results)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if not slow.empty:
        ms = np.sort(slow["duration_ns"].to_numpy() / 1e6)
        ax.plot(ms, np.linspace(0, 1, len(ms)))
        ax.set_xscale("log")
    ax.set_xlabel("slow frame time (ms)")
    ax.set_ylabel("CDF")
    fig.tight_layout()
    save_figure(fig, out_dir / "frame-time-cdf")
    plt.close(fig)
    ruir = table[table["figure"] == "ruir"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k, (trim, label) in enumerate((("false", "before"), ("true", "after"))):
        sub = ruir[ruir["trim_ruir"] == trim]
        ax.bar(np.arange(len(sub)) + (k - 0.5) * 0.4, sub["srff_pct"], width=0.4, label=label)
    ax.set_xticks(range(len(RUIR_APPS)), list(RUIR_APPS), fontsize=8)
    ax.set_ylabel("SR/FF (% of frames)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, out_dir / "ruir")
    plt.close(fig)
    if results.flash:
        plot_flash(results, out_dir)


def plot_flash(results: Results, out_dir: Path) -> None:
    """Write speed under each WAM policy (daily benchmarks) and the S_d sweep."""
    import matplotlib.pyplot as plt

    models = [m for m in FLASH_MODELS if any((m, p) in results.flash for p in WAM_POLICIES)]
    fig, grid = plt.subplots(max(1, len(models)), 2, figsize=(12, 3.4 * max(1, len(models))),
                             squeeze=False)  # fmt: skip
    for model, axes in zip(models, grid, strict=False):
        storage = load_profile(model).storage.type
        for policy in WAM_POLICIES:
            record = results.flash.get((model, policy))
            if record is None:
                continue
            bench = record.tables["bench"]
            when = bench["day"] + bench["hour"] / 24.0
            line = axes[0].plot(when, bench["sequential_mbps"], marker="o", ms=3, label=policy)
            own = _number(record.metrics.get("own_write_mbps"))
            if math.isfinite(own):  # the phone's own writes over the run, GC included
                axes[0].axhline(own, color=line[0].get_color(), ls="--", lw=1,
                                label=f"{policy}: own writes")  # fmt: skip
            axes[1].plot(when, bench["random_mbps"], marker="o", ms=3, label=policy)
        for ax, what in zip(axes, ("sequential", "random 4 KB"), strict=True):
            ax.set_xlabel("day (benchmarks at 02:30, 05:00 and 12:00)")
            ax.set_ylabel(f"{what} write (MB/s)")
            ax.set_title(f"{model} ({storage})", fontsize=9)
            ax.legend(fontsize=8)
    fig.suptitle("daily storage benchmark under each WAM policy", fontsize=10)
    fig.tight_layout()
    save_figure(fig, out_dir / "write-speed")
    plt.close(fig)
    sweep = sorted(
        ((gb, r.metrics) for (model, spec), r in results.flash.items()
         if model == FLASH_MODEL and (gb := _threshold_gb(spec)) is not None),
        key=lambda item: item[0],
    )  # fmt: skip
    if not sweep:
        return
    gbs = [gb for gb, _ in sweep]
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    axes[0].plot(gbs, [_number(m["write_amplification"]) for _, m in sweep], marker="o",
                 color="C1")  # fmt: skip
    axes[0].set_ylabel("write amplification", color="C1")
    speed = axes[0].twinx()
    speed.plot(gbs, [_number(m["sequential_mbps"]) for _, m in sweep], marker="s", ls="--",
               color="grey")  # fmt: skip
    speed.set_ylabel("sequential write (MB/s)", color="grey")
    axes[1].plot(gbs, [_number(m["trim_busy_s"]) for _, m in sweep], marker="o", color="C3")
    axes[1].set_ylabel("total batched-trim time (s)", color="C3")
    volume = axes[1].twinx()
    volume.plot(gbs, [_number(m.get("trimmed_gb")) for _, m in sweep], marker="s", ls="--",
                color="grey")  # fmt: skip
    volume.set_ylabel("GB trimmed in the run", color="grey")
    knee = sd_knee({f"{gb:g}": _number(m["trim_busy_s"]) for gb, m in sweep},
                   {f"{gb:g}": _number(m["write_amplification"]) for gb, m in sweep})  # fmt: skip
    for ax in axes:
        ax.set_xlabel("S_d threshold (GB)")
        if knee is not None:
            ax.axvline(knee, color="k", ls=":", lw=1)
    if knee is not None:
        axes[1].annotate(f"knee {knee:g} GB", (knee, 0.95), xycoords=("data", "axes fraction"),
                         fontsize=8, ha="left")  # fmt: skip
    fig.tight_layout()
    save_figure(fig, out_dir / "sd-threshold")
    plt.close(fig)


class AgingGlitching(Reproduction[Key]):
    name = "aging-glitching"
    title = "Aging or Glitching? Slow/frozen frames, ANR, SNR and WAM (MobiCom 2020)"

    def plan(self, quick: bool) -> list[PlannedRun[Key]]:
        """The flash-aging runs (longest) first, then the two fleets, then the UI
        benchmarks, so the short runs fill the cores behind the long ones."""
        days = FLASH_DAYS["quick" if quick else "full"]
        size = FLEET["quick" if quick else "full"]
        runs: list[PlannedRun[Key]] = []
        for model, wam in flash_specs(quick):
            params = {"wam": wam, "days": days, "bench_hours": BENCH_HOURS}
            runs.append(PlannedRun(("flash", (model, wam)), "flash-aging", model, SEED, params))
        for wam in WAM_FLEET:
            runs.append(PlannedRun(("fleet", wam), "fleet", None, SEED, {**size, "wam": wam}))
        for cell in ui_cells():
            overrides = _ui_overrides(cell, quick)
            runs.append(PlannedRun(("ui", cell), "ui-bench", cell.model, SEED, overrides))
        return runs

    def write(self, results: list[tuple[Key, RunRecord]], out_dir: Path, quick: bool) -> Path:
        return self.write_results(Results.from_pairs(results), out_dir, quick)

    def write_results(self, results: Results, out_dir: Path, quick: bool) -> Path:
        rows = metric_rows(results)
        path = write_outputs(
            out_dir,
            rows,
            ("comparison.md", comparison_markdown(rows, quick)),
            comparison_rows(rows),
        )
        plot(results, out_dir)
        return path
