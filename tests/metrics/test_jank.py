import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.metrics.jank import FROZEN_FRAME_NS, SLOW_FRAME_NS, jank_counts


def test_boundaries_follow_android_definitions() -> None:
    durations = [16_000_000, SLOW_FRAME_NS, SLOW_FRAME_NS + 1, FROZEN_FRAME_NS, FROZEN_FRAME_NS + 1]
    counts = jank_counts(durations)
    assert counts["frames"] == 5
    assert counts["sr"] == 2  # 16.67 ms + 1 ns and exactly 700 ms
    assert counts["ff"] == 1
    assert counts["sr_pct"] == pytest.approx(40.0)


def test_buffer_aware_count_drops_frames_hidden_by_a_ready_buffer() -> None:
    durations = [30_000_000, 30_000_000, 900_000_000]
    naive = jank_counts(durations)
    aware = jank_counts(durations, ready_buffer=[True, False, True])
    assert (naive["sr"], naive["ff"]) == (2, 1)
    assert (aware["sr"], aware["ff"]) == (1, 0)


def test_empty_input_has_no_rate() -> None:
    counts = jank_counts([])
    assert counts["frames"] == 0 and np.isnan(counts["sr_pct"])


def test_ready_buffer_must_match_frames() -> None:
    with pytest.raises(ValueError):
        jank_counts([1, 2], ready_buffer=[True])


@given(st.lists(st.integers(0, 10**10), max_size=200), st.data())
def test_sr_and_ff_are_disjoint_and_aware_never_exceeds_naive(durations, data) -> None:
    ready = data.draw(st.lists(st.booleans(), min_size=len(durations), max_size=len(durations)))
    naive = jank_counts(durations)
    aware = jank_counts(durations, ready_buffer=ready)
    slow = sum(SLOW_FRAME_NS < d <= FROZEN_FRAME_NS for d in durations)
    frozen = sum(d > FROZEN_FRAME_NS for d in durations)
    assert (naive["sr"], naive["ff"]) == (slow, frozen)
    assert aware["sr"] <= naive["sr"] and aware["ff"] <= naive["ff"]
