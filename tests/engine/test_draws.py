"""Draws: scalar binomial and exponential draws identical to numpy's Generator methods
(the same values and types, the same stream state after them, the same errors)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.engine.draws import Draws, PyDraws, native
from mqoe.native import compiled

# Both kinds, so the reference is tested too where the C type is built.
KINDS = [Draws, PyDraws] if Draws is not PyDraws else [PyDraws]

_p = st.one_of(
    st.sampled_from((0.0, 1.0, 0.5, 1e-12, 1 - 1e-12)),
    st.floats(0.0, 1.0, allow_nan=False),
    st.floats(0.0, 1e-3),  # n·p ≤ 30: the inversion branch
    st.floats(1 - 1e-3, 1.0),  # p > 0.5: drawn as n − Binomial(n, 1 − p)
)
_n = st.one_of(st.integers(0, 40), st.integers(0, 10**7), st.sampled_from((0, 1, 2**40)))
_op = st.one_of(
    st.tuples(st.just("binomial"), _n, _p),
    st.tuples(st.just("exponential"), st.floats(0.0, 1e12, allow_nan=False), st.just(0.0)),
    st.tuples(st.just("random"), st.just(0), st.just(0.0)),  # the Generator's own, between
)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), ops=st.lists(_op, max_size=60))
def test_draws_equal_the_generators_own_on_the_same_stream(
    kind: type[PyDraws], seed: int, ops: list[tuple[str, int, float]]
) -> None:
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    draws = kind(ours)
    for name, n, x in ops:
        if name == "binomial":
            got, want = draws.binomial(n, x), theirs.binomial(n, x)
        elif name == "exponential":
            got, want = draws.exponential(x), theirs.exponential(x)
        else:
            got, want = ours.random(), theirs.random()
        assert type(got) is type(want)
        assert got == want or (math.isnan(got) and math.isnan(want))
    # …and the stream is where numpy's would be: the next draws agree too.
    assert ours.bit_generator.state == theirs.bit_generator.state
    assert ours.integers(0, 2**62, 8).tolist() == theirs.integers(0, 2**62, 8).tolist()


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("binomial", (10, 1.5)),
        ("binomial", (10, -0.1)),
        ("binomial", (10, float("nan"))),
        ("binomial", (-1, 0.5)),
        ("exponential", (-1.0,)),
        ("exponential", (-0.0,)),
    ],
)
def test_invalid_arguments_raise_numpys_error(
    kind: type[PyDraws], method: str, args: tuple[float, ...]
) -> None:
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError) as theirs:
        getattr(rng, method)(*args)
    with pytest.raises(ValueError) as ours:
        getattr(kind(np.random.default_rng(1)), method)(*args)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_nan_scale_draws_nan_as_numpy_does(kind: type[PyDraws]) -> None:
    assert math.isnan(kind(np.random.default_rng(1)).exponential(float("nan")))


def test_the_c_type_is_built_wherever_the_kernel_is_compiled() -> None:
    """A compiled install without the draws extension would lose its speed silently."""
    if not compiled() or os.environ.get("MQOE_PURE_PYTHON") == "1":
        pytest.skip("the kernel runs interpreted here")
    assert native(), "mqoe.engine._draws did not build (setup.py draws_extension)"
