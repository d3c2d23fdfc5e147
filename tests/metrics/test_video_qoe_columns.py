"""qoe_summary_columns: qoe_summary's metrics from plain columns, bit for bit."""

from __future__ import annotations

import math
import struct
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.metrics.video_qoe import qoe_summary, qoe_summary_columns

_TIMES = st.floats(0.0, 1e5, allow_nan=False)
_RATES = st.one_of(
    st.floats(1.0, 1e5, allow_nan=False),
    st.integers(1, 100_000),  # a manifest's rates may be ints
)


@st.composite
def sessions(draw: st.DrawFn) -> dict[str, list[float]]:
    n = draw(st.integers(0, 40))
    column = st.lists(_TIMES, min_size=n, max_size=n)
    stall = st.one_of(st.just(0.0), st.floats(0.0, 100.0), st.just(math.nan))
    rates = st.sampled_from(draw(st.lists(_RATES, min_size=1, max_size=6)))
    return {
        "segment": list(range(n)),
        "bitrate_kbps": draw(st.lists(rates, min_size=n, max_size=n)),
        "download_start_s": draw(column),
        "download_end_s": draw(column),
        "rebuffer_s": draw(st.lists(stall, min_size=n, max_size=n)),
        "buffer_after_s": draw(column),
    }


def _bits(metrics: dict[str, float]) -> dict[str, bytes]:
    """Each metric's IEEE-754 bytes: equal bits, NaN included (and -0.0 ≠ 0.0)."""
    return {name: struct.pack("<d", value) for name, value in metrics.items()}


@settings(max_examples=300, deadline=None)
@given(
    sessions(),
    st.floats(0.0, 1e6, allow_nan=False),
    st.one_of(st.none(), st.floats(0.5, 1e4)),
    st.integers(0, 50),
)
def test_columns_give_qoe_summary_bit_for_bit(
    session: dict[str, list[float]], session_s: float, r_min: float | None, startup: int
) -> None:
    frame = pd.DataFrame(session)
    if len(frame) == 0:  # an empty table's columns are object; the simulated ones are not
        frame = frame.astype(np.float64)
    expected = qoe_summary(frame, session_s, min_bitrate_kbps=r_min, startup_segments=startup)
    for form in (list, np.array):  # the trace mode gives lists; tables give arrays
        got = qoe_summary_columns(
            form(session["bitrate_kbps"]),
            form(session["rebuffer_s"]),
            form(session["download_start_s"]),
            form(session["download_end_s"]),
            session_s,
            min_bitrate_kbps=r_min,
            startup_segments=startup,
        )
        assert list(got) == list(expected)
        assert _bits(got) == _bits(expected)


def test_columns_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        qoe_summary_columns([1.0, 2.0], [0.0], [0.0], [1.0], 10.0)


def test_the_module_imports_no_pandas() -> None:
    code = "import sys, mqoe.metrics.video_qoe; print('pandas' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "False"
