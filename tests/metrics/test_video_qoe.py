"""Video QoE: every number of a 3-segment session computed by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mqoe.metrics.video_qoe import qoe_summary

LN2 = math.log(2.0)


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "segment": [0, 1, 2],
            "bitrate_kbps": [1000.0, 2000.0, 1000.0],
            "download_start_s": [0.0, 1.0, 3.0],
            "download_end_s": [1.0, 3.0, 4.0],
            "rebuffer_s": [0.0, 0.5, 0.25],
            "buffer_after_s": [4.0, 4.0, 7.0],
        }
    )


def test_rates_stalls_and_switches_by_hand() -> None:
    out = qoe_summary(_table(), 10.0)
    assert out["segments"] == 3
    assert out["mean_bitrate_kbps"] == pytest.approx(4000 / 3)
    assert out["rebuffer_s"] == 0.75
    assert out["rebuffer_count"] == 2
    assert out["rebuffer_ratio"] == pytest.approx(0.075)
    assert out["switch_count"] == 2
    assert out["mean_abs_bitrate_change_kbps"] == 1000.0  # (1000 + 1000) / 2 pairs
    assert out["startup_delay_s"] == 1.0


def test_linear_qoe_is_mbit_minus_4_3_per_stall_second_minus_switches() -> None:
    out = qoe_summary(_table(), 10.0)
    lin = (1 + 2 + 1) - 4.3 * 0.75 - (1 + 1)  # = -1.225
    assert out["qoe_lin"] == pytest.approx(lin)
    assert out["qoe_lin_per_segment"] == pytest.approx(lin / 3)


def test_log_qoe_uses_the_lowest_rate_of_the_table_by_default() -> None:
    out = qoe_summary(_table(), 10.0)
    log = (0 + LN2 + 0) - 2.66 * 0.75 - (LN2 + LN2)
    assert out["qoe_log"] == pytest.approx(log)
    assert out["qoe_log_per_segment"] == pytest.approx(log / 3)


def test_log_qoe_with_the_ladder_minimum() -> None:
    out = qoe_summary(_table(), 10.0, min_bitrate_kbps=500.0)
    assert out["qoe_log"] == pytest.approx((LN2 + 2 * LN2 + LN2) - 2.66 * 0.75 - 2 * LN2)


def test_startup_delay_ends_with_the_segment_that_starts_playback() -> None:
    assert qoe_summary(_table(), 10.0, startup_segments=2)["startup_delay_s"] == 3.0


def test_a_steady_session_has_no_penalties() -> None:
    table = _table().assign(bitrate_kbps=1500.0, rebuffer_s=0.0)
    out = qoe_summary(table, 10.0)
    assert out["switch_count"] == 0 and out["rebuffer_count"] == 0
    assert out["qoe_lin"] == pytest.approx(4.5)
    assert out["qoe_log"] == 0.0


def test_an_empty_session_gives_nan_not_an_exception() -> None:
    out = qoe_summary(_table().iloc[0:0], 10.0)
    assert out["segments"] == 0
    assert math.isnan(out["mean_bitrate_kbps"]) and math.isnan(out["qoe_lin_per_segment"])


def test_missing_columns_are_reported() -> None:
    with pytest.raises(ValueError, match="rebuffer_s"):
        qoe_summary(_table().drop(columns="rebuffer_s"), 10.0)
