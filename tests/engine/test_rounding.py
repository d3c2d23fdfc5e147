"""``round_half_even`` is ``round`` on floats: the packet path and the models use it
for every rounding, so a single differing integer would change results."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mqoe.engine.rounding import round_half_even

_TIES_AND_NEIGHBOURS = [
    k / 2 + d for k in range(-9, 10) for d in (0.0, 1e-16, -1e-16, 2**-53, -(2**-53))
] + [math.nextafter(0.5, 0.0), -math.nextafter(0.5, 0.0), math.nextafter(-0.5, -1.0)]


@pytest.mark.parametrize("x", [*_TIES_AND_NEIGHBOURS, 2.0**52 + 0.5, 2.0**53, -(2.0**60), 1e300])
def test_ties_and_their_neighbours(x: float) -> None:
    assert round_half_even(x) == round(x)


@given(st.floats(allow_nan=False, allow_infinity=False))
@example(-0.49999999999999994)
@example(-1.4999999999999998)
@example(-0.0)
def test_any_finite_float(x: float) -> None:
    assert round_half_even(x) == round(x)


@given(st.integers(-(2**40), 2**40), st.floats(0.0, 1.0, exclude_max=True))
def test_values_near_nanosecond_and_page_counts(whole: int, fraction: float) -> None:
    x = whole + fraction
    assert round_half_even(x) == round(x)


@pytest.mark.parametrize(("x", "error"), [(math.inf, OverflowError), (-math.inf, OverflowError),
                                          (math.nan, ValueError)])  # fmt: skip
def test_non_finite_values_raise_as_round_does(x: float, error: type[Exception]) -> None:
    with pytest.raises(error):
        round(x)
    with pytest.raises(error):
        round_half_even(x)
