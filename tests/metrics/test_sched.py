from __future__ import annotations

import pandas as pd
import pytest

from mqoe.metrics.sched import preemption_summary, thread_states

THREADS = pd.DataFrame(
    {
        "tid": [1, 2, 3],
        "thread": ["decoder", "mmcqd", "kswapd"],
        "running_ns": [6, 2, 0],
        "runnable_ns": [1, 0, 0],
        "runnable_preempted_ns": [1, 0, 0],
        "sleeping_ns": [2, 8, 10],
        "blocked_io_ns": [0, 0, 0],
    }
)


def test_preemption_summary_groups_by_preemptor() -> None:
    log = pd.DataFrame(
        {
            "victim_tid": [1, 1, 3],
            "preemptor_tid": [2, 2, 1],
            "victim_wait_ns": [1_000_000, 3_000_000, -1],  # −1: never ran again
            "preemptor_run_ns": [500_000, 1_500_000, 2_000_000],
        }
    )
    table = preemption_summary(log, THREADS)
    assert list(table["preemptor"]) == ["mmcqd", "decoder"]
    mmcqd = table.iloc[0]
    assert mmcqd["preemptions"] == 2
    assert mmcqd["victims"] == 1
    assert mmcqd["mean_victim_wait_ms"] == pytest.approx(2.0)
    assert mmcqd["total_preemptor_run_s"] == pytest.approx(0.002)
    assert pd.isna(table.iloc[1]["mean_victim_wait_ms"])


def test_thread_states_adds_seconds_and_cpu_share() -> None:
    table = thread_states(THREADS)
    assert list(table["cpu_share"]) == [0.6, 0.2, 0.0]
    assert table.loc[0, "running_s"] == pytest.approx(6e-9)


def test_an_empty_preemption_log_gives_an_empty_table_with_columns() -> None:
    empty = pd.DataFrame(columns=["victim_tid", "preemptor_tid", "victim_wait_ns"])
    table = preemption_summary(empty, THREADS)
    assert table.empty
    assert "mean_victim_wait_ms" in table.columns
