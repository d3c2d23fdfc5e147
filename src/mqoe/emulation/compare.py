"""``mqoe compare sim.csv real.csv``: two ``metrics.csv`` files, metric by metric.

Rows are matched on (condition, metric): the figure and profile name which side a row
came from (``spiral-sim`` on the simulator's ``nexus-5`` against ``spiral-real`` on the
``testbed``) and are ignored for matching. For every metric present in both files the
table shows both values, sim − real and the relative difference (sim / real − 1); rate
metrics (``*_kbps``) are checked against a tolerance (issue 9: 25%).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from mqoe.errors import UserError
from mqoe.results import MetricRow
from mqoe.results.comparison import ComparisonRow
from mqoe.results.metrics_csv import format_condition

TOLERANCE = 0.25  # issue 9: simulated mean rates within 25% of the real ones
COLUMNS = ("condition", "metric", "unit", "sim", "real", "difference", "relative", "within")


@dataclass(frozen=True)
class Compared:
    condition: str
    metric: str
    unit: str
    sim: float
    real: float

    @property
    def difference(self) -> float:
        return self.sim - self.real

    @property
    def relative(self) -> float:
        """sim / real − 1 (nan when real is 0 or either is nan)."""
        if self.real == 0 or math.isnan(self.real) or math.isnan(self.sim):
            return math.nan
        return self.sim / self.real - 1

    def within(self, tolerance: float) -> bool | None:
        """For rate metrics: |relative| ≤ tolerance; None for metrics not checked."""
        if not self.metric.endswith("_kbps") or math.isnan(self.relative):
            return None
        return abs(self.relative) <= tolerance


def compare_rows(sim: Iterable[MetricRow], real: Iterable[MetricRow]) -> list[Compared]:
    """Pair rows on (condition, metric); raises UserError when nothing matches."""
    real_by_key = {(format_condition(r.condition), r.metric): r for r in real}
    pairs = []
    for s in sim:
        key = (format_condition(s.condition), s.metric)
        r = real_by_key.get(key)
        if r is not None:
            pairs.append(Compared(key[0], s.metric, s.unit, s.value, r.value))
    if not pairs:
        raise UserError("the two files share no (condition, metric) pair: same parameters?")
    return pairs


def comparison_frame(pairs: list[Compared], tolerance: float = TOLERANCE) -> pd.DataFrame:
    return pd.DataFrame(
        [(p.condition, p.metric, p.unit, p.sim, p.real, p.difference, p.relative,
          {None: "", True: "yes", False: "NO"}[p.within(tolerance)]) for p in pairs],
        columns=list(COLUMNS),
    )  # fmt: skip


def comparison_rows(pairs: list[Compared], tolerance: float = TOLERANCE) -> list[ComparisonRow]:
    """The same as ``comparison.csv`` rows: real in the "published" column."""
    return [
        ComparisonRow.numeric(
            p.condition or "all", p.metric, p.real, p.sim,
            tolerance=f"±{tolerance:.0%}" if p.within(tolerance) is not None else "",
            met=p.within(tolerance), source="testbed (Linux TCP) vs simulator",
        )
        for p in pairs
    ]  # fmt: skip
