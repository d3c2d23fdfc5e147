"""Zipf's law fitted to counts by rank (mqoe.metrics.zipf): exact, sampled, degenerate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mqoe.metrics.zipf import fit_zipf


def test_zipf_fit_recovers_exact_parameters() -> None:
    ranks = np.arange(1, 51, dtype=float)
    a, b = 1.3, 7.0
    fit = fit_zipf(np.exp(b) * ranks**-a)
    assert fit.a == pytest.approx(a, abs=1e-9)
    assert fit.b == pytest.approx(b, abs=1e-9)
    assert fit.r2 == pytest.approx(1.0, abs=1e-12)
    assert fit.n == 50


def test_zipf_fit_on_sampled_counts_is_close() -> None:
    rng = np.random.default_rng(5)
    a = 1.1
    p = np.arange(1, 31, dtype=float) ** -a
    counts = np.bincount(rng.choice(30, size=200_000, p=p / p.sum()), minlength=30)
    fit = fit_zipf(counts)
    assert fit.a == pytest.approx(a, abs=0.03)
    assert fit.b == pytest.approx(math.log(200_000 / p.sum()), abs=0.1)
    assert fit.r2 > 0.99


def test_zipf_fit_degenerate_inputs() -> None:
    assert math.isnan(fit_zipf([5]).a)
    assert math.isnan(fit_zipf([4, 4, 4]).r2)
    assert fit_zipf([4, 4, 4]).a == pytest.approx(0.0, abs=1e-12)
