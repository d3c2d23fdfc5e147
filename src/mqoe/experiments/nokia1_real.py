"""The Nokia 1's real runs: the 30-cell drop and crash grid and the phone's own ``top``.

"Coal Not Diamonds" (CoNEXT 2022) published its per-run logs; the files in ``data/``
hold them recomputed per cell (``nokia1_runs.csv``) and the phone's ``top -d 1`` split
during separate runs (``nokia1_top.csv``). This module loads them and scores simulated
cells against them with one rule, shared by ``mqoe reproduce coal-not-diamonds`` (its
``nokia1-real`` comparison) and ``bench/calibrate.py --grid``:

* a cell **matches** when its crash rate is within ``CRASH_POINTS`` of the real one and,
  unless every real run crashed, its drop rate within max(``DROP_POINTS``,
  ``DROP_SHARE`` × the real value);
* the grid is met when at least ``MATCH_TARGET`` of the 30 cells match;
* where real runs crashed, the simulated mean time to crash should be within a factor
  ``CRASH_TIME_FACTOR`` of the real one (reported per cell).

The real values are compared with, never fed into, a simulation.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources

DROP_POINTS = 5.0
DROP_SHARE = 0.25
CRASH_POINTS = 20.0
CRASH_TIME_FACTOR = 2.0
MATCH_TARGET = 24
SOURCE = "Coal Not Diamonds (CoNEXT 2022), the Nokia 1's per-run logs"
# kswapd0's Sleeping share of the trace at Moderate, 480p60 (the study's Perfetto traces,
# mean of 3); the drop/crash grid and `top` rows are in data/.
KSWAPD_SLEEPING_MODERATE_PCT = 30.7


@dataclass(frozen=True)
class RealCell:
    """One cell of the Nokia 1's grid as the study's runs measured it."""

    state: str  # normal | moderate | critical: the state when the video started
    fps: int
    resolution: str
    crashed_pct: float
    drop_pct: float
    drop_sd: float  # NaN where every run crashed before playing
    rendered_fps: float
    time_to_crash_s: float  # mean over crashed runs; NaN when none crashed

    @property
    def label(self) -> str:
        return f"{self.resolution}{self.fps} {self.state}"

    @property
    def all_crashed(self) -> bool:
        return self.crashed_pct >= 100.0

    @property
    def drop_tolerance(self) -> float:
        return max(DROP_POINTS, DROP_SHARE * self.drop_pct)


@dataclass(frozen=True)
class CellScore:
    """A simulated cell beside its real one, with the verdicts of the matching rule."""

    real: RealCell
    drop_pct: float
    crashed_pct: float
    time_to_crash_s: float  # NaN when no simulated run crashed
    runs: int

    @property
    def drop_ok(self) -> bool | None:
        """None where every real run crashed (the drop is then not compared)."""
        if self.real.all_crashed:
            return None
        return math.isfinite(self.drop_pct) and (
            abs(self.drop_pct - self.real.drop_pct) <= self.real.drop_tolerance
        )

    @property
    def crash_ok(self) -> bool:
        return abs(self.crashed_pct - self.real.crashed_pct) <= CRASH_POINTS

    @property
    def matched(self) -> bool:
        return self.crash_ok and self.drop_ok is not False

    @property
    def crash_time_ok(self) -> bool | None:
        """None where no real run crashed; else within ``CRASH_TIME_FACTOR``."""
        real = self.real.time_to_crash_s
        if not math.isfinite(real):
            return None
        sim = self.time_to_crash_s
        return (
            math.isfinite(sim)
            and sim > 0
            and (1 / CRASH_TIME_FACTOR <= sim / real <= CRASH_TIME_FACTOR)
        )


def _float(text: str) -> float:
    return float(text) if text.strip() else math.nan


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("mqoe.experiments.data").joinpath(name).read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines))


@cache
def real_cells() -> tuple[RealCell, ...]:
    """The 30 cells, normal/moderate/critical × 30/60 fps × 240p…1080p."""
    return tuple(
        RealCell(
            state=row["state"],
            fps=int(row["fps"]),
            resolution=row["resolution"],
            crashed_pct=float(row["crashed_pct"]),
            drop_pct=float(row["drop_pct"]),
            drop_sd=_float(row["drop_sd"]),
            rendered_fps=float(row["rendered_fps"]),
            time_to_crash_s=_float(row["time_to_crash_s"]),
        )
        for row in _rows("nokia1_runs.csv")
    )


@dataclass(frozen=True)
class TopRow:
    """The phone's ``top -d 1`` during one configuration: threads in % of one core,
    the system split (sys, user, idle, iowait) in % of all four cores (of 400)."""

    state: str
    fps: int
    resolution: str
    values: tuple[tuple[str, float], ...]

    def __getitem__(self, key: str) -> float:
        return dict(self.values)[key]


@cache
def top_rows() -> tuple[TopRow, ...]:
    rows = []
    for row in _rows("nokia1_top.csv"):
        keys = [k for k in row if k not in ("state", "fps", "resolution")]
        values = tuple((k, float(row[k])) for k in keys)
        rows.append(TopRow(row["state"], int(row["fps"]), row["resolution"], values))
    return tuple(rows)


def score(
    real: RealCell, drops: list[float], crashes: list[bool], crash_times: list[float]
) -> CellScore:
    """Score one cell from its simulated runs: drop % and whether each crashed, and the
    crash times (s after the video started) of those that did."""  # fmt: skip
    n = len(drops)
    if n == 0 or len(crashes) != n:
        raise ValueError(f"{real.label}: need one crash flag per run, got {len(crashes)}/{n}")
    times = [t for t, crashed in zip(crash_times, crashes, strict=True) if crashed]
    return CellScore(
        real=real,
        drop_pct=sum(drops) / n,
        crashed_pct=100.0 * sum(crashes) / n,
        time_to_crash_s=sum(times) / len(times) if times else math.nan,
        runs=n,
    )


def matched(scores: list[CellScore]) -> int:
    return sum(s.matched for s in scores)
