"""The testbed's tables and metrics.csv have the simulator's shape (no root needed)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mqoe.cli.main import main
from mqoe.emulation.spiral import condition, segments_frame, series_frame, spiral_params
from mqoe.errors import UserError
from mqoe.results import read_metrics_csv
from mqoe.workloads.base import params_dict


def test_series_turns_bins_into_cumulative_bytes_and_rates() -> None:
    params = spiral_params({"duration_s": "4", "competitor_start_s": "2", "sample_s": "1"})
    series = series_frame(params, [1000, 0, 2000, 500, 99], [0, 0, 125, 250])
    assert list(series["t_s"]) == [1.0, 2.0, 3.0, 4.0]
    assert list(series["video_bytes"]) == [1000, 1000, 3000, 3500]  # the 5th bin is past 4 s
    assert list(series["video_kbps"]) == [8.0, 0.0, 16.0, 4.0]
    assert list(series["competitor_kbps"]) == [0.0, 0.0, 1.0, 2.0]


def test_segments_have_the_simulators_columns_and_throughput() -> None:
    row = {
        "segment": 0,
        "representation": 6,
        "rate_kbps": 1750.0,
        "size_bytes": 875000,
        "request_s": 1.0,
        "done_s": 3.0,
        "buffer_s": 8.0,
        "new_connection": False,
    }
    frame = segments_frame([row])
    assert list(frame.columns) == [
        "segment",
        "representation",
        "rate_kbps",
        "size_bytes",
        "request_s",
        "done_s",
        "throughput_kbps",
        "buffer_s",
        "new_connection",
    ]
    assert frame["throughput_kbps"].iloc[0] == pytest.approx(3500.0)


def test_condition_names_the_case_the_same_way_on_both_sides() -> None:
    discrete = params_dict(spiral_params({"buffer_kbit": "75"}))
    assert condition(discrete) == {
        "buffer_kbit": "75.0",
        "mode": "discrete",
        "connection": "persistent",
        "restart_after_idle": "true",
    }
    continuous = params_dict(spiral_params({"mode": "continuous", "c": "1.0"}))
    assert condition(continuous)["c"] == "1.0"


def test_bad_parameters_are_user_errors() -> None:
    with pytest.raises(UserError, match="no parameter"):
        spiral_params({"buffer": "3"})


def test_simulate_writes_the_same_schema_and_compares_with_itself(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    args = [
        "testbed",
        "spiral",
        "--simulate",
        "--set",
        "duration_s=30",
        "competitor_start_s=15",
        "settle_s=2",
        "buffer_max_s=12",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    rows = read_metrics_csv(out / "metrics.csv")
    assert {r.figure for r in rows} == {"spiral-sim"}
    assert {r.metric for r in rows} >= {
        "rate_competing_kbps",
        "competitor_tput_kbps",
        "fair_share_kbps",
        "video_tput_competing_kbps",
    }
    series = pd.read_csv(out / "timeseries.csv")
    assert {"t_s", "video_kbps", "competitor_kbps"} <= set(series.columns)
    assert (out / "spiral-sim.png").exists() and (out / "summary.md").exists()
    assert main(["compare", str(out / "metrics.csv"), str(out / "metrics.csv")]) == 0


def test_simulated_bulk_flows_fill_a_large_buffer_link(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["testbed", "bulk", "--simulate", "--flows", "2", "--buffer-kbit", "120",
            "--duration-s", "8"]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    total = float(printed.split("total ")[1].split(")")[0])
    assert total == pytest.approx(5000 * 1460 / 1500, rel=0.05)  # payload share of 1500 B
