"""The reproduction's records as tables and ``metrics.csv`` rows: the UI benchmark's
per-run numbers, the pooled slow frames and their causes, the flash-aging write speeds
and the S_d sweep, and the fleets' ANR and SNR."""

from __future__ import annotations

import math

import pandas as pd

from mqoe.device.profiles import load_profile
from mqoe.experiments.aging_glitching.plan import (
    FLASH_MODEL,
    LOW_END,
    RUIR_MODEL,
    WAM_POLICIES,
    Results,
)
from mqoe.metrics.jank import SLOW_FRAME_NS
from mqoe.results import MetricRow


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
