from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.engine import Environment, RandomStreams
from mqoe.errors import UserError


def test_same_seed_and_name_give_the_same_draws() -> None:
    a = RandomStreams(11)("kswapd").random(5)
    b = RandomStreams(11)("kswapd").random(5)
    assert np.array_equal(a, b)


def test_different_seeds_or_names_give_different_draws() -> None:
    base = RandomStreams(11)("kswapd").random(5)
    assert not np.array_equal(base, RandomStreams(12)("kswapd").random(5))
    assert not np.array_equal(base, RandomStreams(11)("lmkd").random(5))


@given(st.integers(0, 2**63 - 1), st.lists(st.text(min_size=1, max_size=8), max_size=5))
def test_adding_a_stream_does_not_change_the_others(seed: int, others: list[str]) -> None:
    alone = RandomStreams(seed)
    expected = alone("video").random(4)
    crowded = RandomStreams(seed)
    for name in others:
        if name != "video":
            crowded(name).random(3)  # consumers added before and interleaved
    assert np.array_equal(crowded("video").random(4), expected)


@pytest.mark.parametrize("bad", [-1, 2**63, 1.5, "7", True, None])
def test_bad_seeds_are_rejected_with_a_user_error(bad: object) -> None:
    with pytest.raises(UserError, match="seed"):
        Environment(bad)  # type: ignore[arg-type]


def test_the_environment_hands_out_one_generator_per_name() -> None:
    env = Environment(3)
    assert env.rng("x") is env.rng("x")
    assert env.streams.names == ["x"]
