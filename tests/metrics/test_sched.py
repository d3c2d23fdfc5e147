from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _summary_by_groups(preemptions: pd.DataFrame, threads: pd.DataFrame) -> pd.DataFrame:
    """The summary as pandas' groupby gives it, group by group (the reference)."""
    names = threads.set_index("tid")["thread"]
    rows = []
    for tid, group in preemptions.groupby("preemptor_tid", sort=True):
        wait = group["victim_wait_ns"][group["victim_wait_ns"] >= 0]
        run = group["preemptor_run_ns"][group["preemptor_run_ns"] >= 0]
        rows.append(
            {
                "preemptor": str(names.get(tid, tid)),
                "preemptions": len(group),
                "victims": int(group["victim_tid"].nunique()),
                "mean_victim_wait_ms": wait.mean() / 1e6 if len(wait) else float("nan"),
                "total_victim_wait_s": wait.sum() / 1e9,
                "mean_preemptor_run_ms": run.mean() / 1e6 if len(run) else float("nan"),
                "total_preemptor_run_s": run.sum() / 1e9,
            }
        )
    table = pd.DataFrame(rows)
    return table.sort_values(
        ["preemptions", "preemptor"], ascending=[False, True], ignore_index=True
    )


_NS = st.one_of(st.just(-1), st.integers(0, 10**12))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6), _NS, _NS), min_size=1, max_size=60))
def test_preemption_summary_equals_the_per_group_reference(
    log: list[tuple[int, int, int, int]],
) -> None:
    """Whole-array sums give every figure of pandas' group-by-group summary, bit for bit
    (tid 4–6 have no name: shown as the number), in the same order."""
    preemptions = pd.DataFrame(
        log, columns=["victim_tid", "preemptor_tid", "victim_wait_ns", "preemptor_run_ns"]
    )
    pd.testing.assert_frame_equal(
        preemption_summary(preemptions, THREADS),
        _summary_by_groups(preemptions, THREADS),
        check_exact=True,
    )
