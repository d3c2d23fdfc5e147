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
* ``write-speed``, ``sd-threshold`` — write speed under real-time / lazy / practical WAM
  and the S_d sweep (from :mod:`mqoe.experiments.aging_storage`);
* ``anr-snr`` — the fleet (``mqoe run fleet``) under real-time and practical WAM;
* ``root-causes`` — the cause shares of simulated slow frames and of fleet ANRs.

``comparison.md`` sets the simulated numbers beside spec 04's published facts; those
facts are only printed, never used to produce a simulated number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mqoe.device.profiles import load_profile
from mqoe.experiments.outputs import save_figure, write_outputs
from mqoe.experiments.parallel import map_jobs
from mqoe.metrics.jank import SLOW_FRAME_NS
from mqoe.results import MetricRow
from mqoe.results.store import RunRecord
from mqoe.workloads.runner import run_population, run_scenario

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
FLEET = {"full": {"phones": "30000", "days": "21", "workers": "2"},
         "quick": {"phones": "2000", "days": "21"}}  # fmt: skip
WAM_FLEET = ("realtime", "practical")


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


def _run_ui(args: tuple[UiCell, bool]) -> RunRecord:
    cell, quick = args
    overrides = {"app": cell.app, **dict(cell.overrides)}
    if quick:
        overrides["duration_s"] = "10"
    return run_scenario("ui-bench", load_profile(cell.model), SEED, overrides)


def _run_fleet(args: tuple[str, bool]) -> RunRecord:
    wam, quick = args
    size = FLEET["quick" if quick else "full"]
    return run_population("fleet", SEED, {**size, "wam": wam})


@dataclass
class Results:
    ui: list[tuple[UiCell, RunRecord]]
    fleet: dict[str, RunRecord]


def run_all(quick: bool, workers: int | None = None) -> Results:
    cells = ui_cells()
    records = map_jobs(_run_ui, [(c, quick) for c in cells], workers)
    fleet = [_run_fleet((wam, quick)) for wam in WAM_FLEET]  # each uses the cores itself
    return Results(list(zip(cells, records, strict=True)), dict(zip(WAM_FLEET, fleet, strict=True)))


# -- tables ---------------------------------------------------------------------------
def ui_table(results: Results) -> pd.DataFrame:
    rows = [
        {"figure": c.figure, "model": c.model, "app": c.app, **dict(c.overrides),
         **{k: _number(r.metrics.get(k)) for k in ("srff_pct", "sr_pct", "ff_pct",
                                                   "severe_sr", "frames")}}
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


def frame_cause_shares(slow: pd.DataFrame) -> dict[str, float]:
    if slow.empty:
        return {}
    shares = slow["cause"].value_counts(normalize=True) * 100.0
    return {str(k): float(v) for k, v in shares.items()}


# -- comparison -----------------------------------------------------------------------
# Spec 04's published facts, printed beside the simulated numbers (never used to make them).
PUBLISHED = {
    "ruir_reduction_pct": "11–32% (27% on average) fewer SR/FF after trimming",
    "srff_causes": "complex UI 61%, slow I/O and Binder 28%, scheduling delay 11%",
    "fleet": "1.5 ANR and 0.04 SNR per phone in 3 weeks; ~50% of phones without ANR, "
    "97% without SNR",
    "practical_wam": "removes almost all WAM-caused ANR/SNR at a few % of write speed",
    "sf_cpuset": "big cores for SurfaceFlinger when LITTLE ones are saturated almost "
    "removes that cause on low-end phones",
}


def comparison_markdown(rows: list[MetricRow], quick: bool) -> str:
    frame = pd.DataFrame(
        [
            {
                "figure": r.figure,
                "profile": r.profile,
                "condition": dict(r.condition),
                "metric": r.metric,
                "value": r.value,
            }
            for r in rows
        ]
    )

    def pick(figure: str, metric: str, **cond: str) -> pd.Series:
        mask = (frame["figure"] == figure) & (frame["metric"] == metric)
        for key, value in cond.items():
            mask &= frame["condition"].map(lambda c, k=key, v=value: c.get(k) == v)
        return frame.loc[mask, "value"]

    lines = [f"# aging-glitching{' (quick)' if quick else ''}", ""]
    per_model = pick("srff-model", "srff_pct")
    lines.append(f"- SR/FF per model: {per_model.min():.2f}–{per_model.max():.2f}% of frames "
                 f"(buffer-aware, 15 models × 10 apps).")  # fmt: skip
    before = pick("ruir", "srff_pct", trim="before").to_numpy()
    after = pick("ruir", "srff_pct", trim="after").to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        cut = 100.0 * (1 - after / before)
    lines.append(f"- RUIR trimming: SR/FF change per app {_fmt_list(-cut)}% "
                 f"(published: {PUBLISHED['ruir_reduction_pct']}).")  # fmt: skip
    little = pick("sf-cpuset", "srff_pct", sf_cpuset="little").mean()
    big = pick("sf-cpuset", "srff_pct", sf_cpuset="big_when_little_saturated").mean()
    lines.append(f"- SurfaceFlinger cpuset on low-end models: {little:.2f}% → {big:.2f}% "
                 f"(published: {PUBLISHED['sf_cpuset']}).")  # fmt: skip
    causes = {str(c["cause"]): v for c, v in zip(
        frame.loc[(frame["figure"] == "root-causes") & (frame["profile"] == "15-models"),
                  "condition"],
        frame.loc[(frame["figure"] == "root-causes") & (frame["profile"] == "15-models"),
                  "value"], strict=True)}  # fmt: skip
    lines.append(f"- SR/FF causes: {_fmt_shares(causes)} (published: {PUBLISHED['srff_causes']}).")
    for wam in WAM_FLEET:
        anr = pick("anr-snr", "anr_per_phone", policy=wam).mean()
        snr = pick("anr-snr", "snr_per_phone", policy=wam).mean()
        none = pick("anr-snr", "phones_without_anr_pct", policy=wam).mean()
        share = pick("anr-snr", "wam_anr_share_pct", policy=wam).mean()
        lines.append(
            f"- Fleet, {wam} WAM: {anr:.2f} ANR and {snr:.3f} SNR per phone, "
            f"{none:.0f}% of phones without ANR, {share:.0f}% of ANRs WAM-caused."
        )
    lines.append(f"  (published, real-time WAM: {PUBLISHED['fleet']}; the fix "
                 f"{PUBLISHED['practical_wam']}.)")  # fmt: skip
    return "\n".join(lines) + "\n"


def _fmt_list(values: np.ndarray) -> str:
    return ", ".join("n/a" if not np.isfinite(v) else f"{v:+.0f}" for v in values)


def _fmt_shares(shares: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f}%" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]))


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


class AgingGlitching:
    name = "aging-glitching"
    title = "Slow/frozen frames, ANR and SNR: rendering, flash aging and WAM (spec 04)"

    def __init__(self, runner: Callable[[bool], Results] | None = None) -> None:
        self._runner = runner or run_all

    def reproduce(self, out_dir: Path, quick: bool) -> Path:
        results = self._runner(quick)
        rows = metric_rows(results)
        records = [r for _, r in results.ui] + list(results.fleet.values())
        path = write_outputs(
            out_dir, records, rows, ("comparison.md", comparison_markdown(rows, quick))
        )
        plot(results, out_dir)
        return path
