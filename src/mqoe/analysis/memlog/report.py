"""The fleet report (:func:`analyze`) of the memory-pressure study (Coal Not Diamonds,
CoNEXT 2022): per-phone rows, population shares, state transitions and dwell times,
beside the published facts."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from mqoe.analysis.memlog.model import STATES, FloatArray, PhoneLog
from mqoe.analysis.memlog.stats import (
    PHONE_COLUMNS,
    _phone_row,
    _state_seconds,
    _Timeline,
    _timeline,
)
from mqoe.errors import UserError

#: The population facts Coal Not Diamonds (CoNEXT 2022) published, keyed like
#: :meth:`MemlogReport.summary`.
#: Shares are fractions of phones; the dwell times are the 75th percentile of the time
#: spent in Critical before moving to Low / to Normal.
PUBLISHED_POPULATION_FACTS: dict[str, float] = {
    "share_util_ge_60pct": 0.80,
    "share_util_ge_75pct": 0.20,
    "share_pressure_ge_1_per_h": 0.63,
    "share_critical_gt_10_per_h": 0.19,
    "p_critical_to_low": 0.672,
    "p_critical_to_normal": 0.136,
    "dwell_critical_to_low_p75_s": 12.8,
    "dwell_critical_to_normal_p75_s": 10.8,
}


#: A human label for each key of :meth:`MemlogReport.summary` (for tables and plots).
SUMMARY_LABELS: dict[str, str] = {
    "n_phones": "phones read",
    "n_kept": "phones kept",
    "n_dropped": "phones dropped",
    "interactive_h_kept": "interactive hours (kept phones)",
    "median_of_median_utilisation": "median of the phones' median RAM utilisation",
    "share_util_ge_60pct": "phones with median RAM utilisation ≥ 60 %",
    "share_util_ge_75pct": "phones with median RAM utilisation ≥ 75 %",
    "share_pressure_ge_1_per_h": "phones with ≥ 1 Moderate/Low/Critical signal per hour",
    "share_critical_gt_10_per_h": "phones with > 10 Critical signals per hour",
    "p_critical_to_normal": "after Critical: to Normal",
    "p_critical_to_moderate": "after Critical: to Moderate",
    "p_critical_to_low": "after Critical: to Low",
    "dwell_critical_to_low_median_s": "time in Critical before Low, median (s)",
    "dwell_critical_to_low_p75_s": "time in Critical before Low, 75th percentile (s)",
    "dwell_critical_to_normal_median_s": "time in Critical before Normal, median (s)",
    "dwell_critical_to_normal_p75_s": "time in Critical before Normal, 75th percentile (s)",
}


# -- the report --------------------------------------------------------------------------


def _median(values: FloatArray) -> float:
    """Median of the non-NaN values (as pandas' ``Series.median``), NaN when none."""
    finite = values[~np.isnan(values)]
    return float(np.median(finite)) if len(finite) else math.nan


def _share(values: FloatArray, test: Any) -> float:
    return float(np.mean(test(values))) if len(values) else math.nan


def _by_pair(frame: pd.DataFrame, source: str, target: str, value: str) -> dict[Any, float]:
    """``{(source, target): value}`` over a small table's rows."""
    keys = zip(frame[source].tolist(), frame[target].tolist(), strict=True)
    return dict(zip(keys, frame[value].to_numpy(np.float64).tolist(), strict=True))


@dataclass(frozen=True)
class MemlogReport:
    """Tidy tables of a fleet analysis; :meth:`summary` has the headline numbers.

    ``tables``: ``phones`` (one row per phone, kept or dropped with the reason),
    ``utilisation_cdf`` (kept phones' median utilisation, ascending, with its CDF),
    ``state_time`` (phone × state: interactive seconds and share), ``transitions``
    (every from → to pair, count and probability), ``dwells`` (one row per uncensored
    run: phone, state, to_state, dwell_s) and ``dwell`` (per state and per from → to,
    with ``to_state="any"`` for the state as a whole: n, median_s, p75_s).
    """

    tables: dict[str, pd.DataFrame]
    min_interactive_hours: float  # the cleaning rule applied
    max_gap_s: float  # the longest time one sample stood for

    def summary(self) -> dict[str, float]:
        """Headline numbers; the keys of :data:`PUBLISHED_POPULATION_FACTS` among them."""
        phones = self.tables["phones"]
        kept = phones["kept"].to_numpy(np.bool_)

        def of_kept(column: str) -> FloatArray:
            values: FloatArray = phones[column].to_numpy(np.float64)[kept]
            return values

        util = of_kept("median_utilisation")
        n_kept = int(kept.sum())
        out = {
            "n_phones": float(len(phones)),
            "n_kept": float(n_kept),
            "n_dropped": float(len(phones) - n_kept),
            "interactive_h_kept": float(of_kept("interactive_h").sum()),
            "median_of_median_utilisation": _median(util),
            "share_util_ge_60pct": _share(util, lambda v: v >= 0.60),
            "share_util_ge_75pct": _share(util, lambda v: v >= 0.75),
            "share_pressure_ge_1_per_h": _share(of_kept("pressure_per_h"), lambda v: v >= 1.0),
            "share_critical_gt_10_per_h": _share(of_kept("critical_per_h"), lambda v: v > 10.0),
        }
        # Small fixed tables (one row per state pair): looked up, not filtered by masks.
        probability = _by_pair(self.tables["transitions"], "from_state", "to_state", "probability")
        for to in ("Normal", "Moderate", "Low"):
            out[f"p_critical_to_{to.lower()}"] = probability.get(("Critical", to), math.nan)
        dwell = self.tables["dwell"]
        by_measure = {m: _by_pair(dwell, "state", "to_state", m + "_s") for m in ("median", "p75")}
        for to in ("Low", "Normal"):
            for measure, values in by_measure.items():
                key = f"dwell_critical_to_{to.lower()}_{measure}_s"
                out[key] = values.get(("Critical", to), math.nan)
        return out

    def comparison(self) -> pd.DataFrame:
        """metric, label, computed, published (Coal Not Diamonds; NaN where it gives none)."""
        summary = self.summary()
        return pd.DataFrame(
            {
                "metric": list(summary),
                "label": [SUMMARY_LABELS[k] for k in summary],
                "computed": list(summary.values()),
                "published": [PUBLISHED_POPULATION_FACTS.get(k, math.nan) for k in summary],
            }
        )


def analyze(
    phones: Sequence[PhoneLog],
    min_interactive_hours: float = 10.0,
    *,
    max_gap_s: float = 30.0,
    utilisation_over: Literal["interactive", "all"] = "interactive",
) -> MemlogReport:
    """Per-phone and population statistics of the memory-pressure study's signal logs
    (definitions: package docstring).

    ``min_interactive_hours``: the cleaning rule (kept phones have strictly more).
    ``max_gap_s``: the longest time one sample stands for; longer silences censor runs.
    """
    if not (math.isfinite(min_interactive_hours) and min_interactive_hours >= 0):
        raise UserError(f"min_interactive_hours must be ≥ 0, got {min_interactive_hours}")
    if not (math.isfinite(max_gap_s) and max_gap_s > 0):
        raise UserError(f"max_gap_s must be > 0, got {max_gap_s}")
    if utilisation_over not in ("interactive", "all"):
        raise UserError(f"utilisation_over must be 'interactive' or 'all': {utilisation_over!r}")
    rows: list[dict[str, Any]] = []
    state_rows: list[dict[str, Any]] = []
    dwell_rows: list[dict[str, Any]] = []
    for phone in phones:
        timeline = _timeline(phone, max_gap_s)
        state_s = _state_seconds(timeline, phone.samples["screen_on"].to_numpy(np.bool_))
        row = _phone_row(phone, timeline, state_s, utilisation_over, min_interactive_hours)
        rows.append(row)
        total = float(state_s.sum())
        for state, value in zip(STATES, state_s.tolist(), strict=True):
            share = value / total if total > 0 else math.nan
            state_rows.append(
                {"phone": phone.name, "state": state, "interactive_s": value, "share": share}
            )
        if row["kept"]:
            dwell_rows.extend(_dwells(phone.name, timeline))
    phones_table = pd.DataFrame(rows, columns=list(PHONE_COLUMNS))
    phones_table["kept"] = phones_table["kept"].astype(bool)
    cdf = phones_table.loc[phones_table["kept"], ["phone", "median_utilisation"]]
    cdf = cdf.sort_values("median_utilisation", kind="stable").reset_index(drop=True)
    cdf["cdf"] = np.arange(1, len(cdf) + 1, dtype=np.float64) / max(len(cdf), 1)
    dwells = pd.DataFrame(dwell_rows, columns=["phone", "state", "to_state", "dwell_s"])
    tables = {
        "phones": phones_table,
        "utilisation_cdf": cdf,
        "state_time": pd.DataFrame(
            state_rows, columns=["phone", "state", "interactive_s", "share"]
        ),
        "transitions": _transition_table(dwells),
        "dwells": dwells,
        "dwell": _dwell_table(dwells),
    }
    return MemlogReport(tables, float(min_interactive_hours), float(max_gap_s))


def _dwells(name: str, timeline: _Timeline) -> list[dict[str, Any]]:
    out = []
    starts, states = timeline.run_start_s, timeline.run_state
    for k in np.flatnonzero(~timeline.censored).tolist():
        out.append(
            {
                "phone": name,
                "state": STATES[int(states[k])],
                "to_state": STATES[int(states[k + 1])],
                "dwell_s": float(starts[k + 1] - starts[k]),
            }
        )
    return out


def _transition_table(dwells: pd.DataFrame) -> pd.DataFrame:
    counts = Counter(zip(dwells["state"], dwells["to_state"], strict=True))
    rows = []
    for source in STATES:
        out_total = sum(counts[(source, to)] for to in STATES)
        for to in STATES:
            if to == source:
                continue
            n = counts[(source, to)]
            p = n / out_total if out_total else math.nan
            rows.append({"from_state": source, "to_state": to, "count": n, "probability": p})
    return pd.DataFrame(rows)


def _dwell_table(dwells: pd.DataFrame) -> pd.DataFrame:
    state = dwells["state"].to_numpy(dtype=object)
    target = dwells["to_state"].to_numpy(dtype=object)
    seconds = dwells["dwell_s"].to_numpy(np.float64)
    rows = []
    for source in STATES:
        mine = state == source
        for to in ("any", *STATES):
            if to == source:
                continue
            values = seconds[mine if to == "any" else mine & (target == to)]
            median = float(np.median(values)) if len(values) else math.nan
            p75 = float(np.percentile(values, 75)) if len(values) else math.nan
            rows.append(
                {
                    "state": source,
                    "to_state": to,
                    "n": len(values),
                    "median_s": median,
                    "p75_s": p75,
                }
            )
    return pd.DataFrame(rows)
