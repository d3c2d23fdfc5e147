"""Zipf's law fitted to counts by rank (events per app in the ANR study, sessions per
app in a simulated fleet): one definition for real and simulated numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

# -- Zipf ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZipfFit:
    """``log(count) = −a·log(rank) + b`` by least squares over ranks 1…n (natural logs)."""

    a: float
    b: float
    r2: float
    n: int


def fit_zipf(counts: Sequence[int] | npt.NDArray[Any]) -> ZipfFit:
    """Fit Zipf's law to positive counts (sorted here, largest = rank 1).

    Fewer than two counts give NaN; R² is NaN when all counts are equal (nothing to
    explain).
    """
    values = np.sort(np.asarray(counts, dtype=np.float64))[::-1]
    values = values[values > 0]
    n = len(values)
    if n < 2:
        return ZipfFit(math.nan, math.nan, math.nan, n)
    x = np.log(np.arange(1, n + 1, dtype=np.float64))
    y = np.log(values)
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / total if total > 0 else math.nan
    return ZipfFit(float(-slope), float(intercept), r2, n)
