"""Scheduler metrics: thread state times and preemption statistics.

Inputs are plain tables, so simulated runs and parsed real traces (systrace/Perfetto)
give the same columns: thread states as in Perfetto (Running, Runnable, Runnable
(Preempted), Sleeping, Blocked on I/O) and one row per involuntary switch.
"""

from __future__ import annotations

import pandas as pd

STATE_COLUMNS = (
    "running_ns",
    "runnable_ns",
    "runnable_preempted_ns",
    "sleeping_ns",
    "blocked_io_ns",
)


def thread_states(threads: pd.DataFrame) -> pd.DataFrame:
    """Per-thread state times in seconds (adds ``*_s`` columns and ``cpu_share``)."""
    out = threads.copy()
    total = out[list(STATE_COLUMNS)].sum(axis=1)
    for column in STATE_COLUMNS:
        out[column.removesuffix("_ns") + "_s"] = out[column] / 1e9
    out["cpu_share"] = out["running_ns"] / total.where(total > 0)
    return out


def preemption_summary(preemptions: pd.DataFrame, threads: pd.DataFrame) -> pd.DataFrame:
    """One row per preempting thread: how often it preempted, how long victims waited.

    ``preemptions`` has columns victim_tid, preemptor_tid, victim_wait_ns,
    preemptor_run_ns (−1 = unresolved at the end of the window, excluded from means).
    """
    names = threads.set_index("tid")["thread"]
    columns = [
        "preemptor",
        "preemptions",
        "victims",
        "mean_victim_wait_ms",
        "total_victim_wait_s",
        "mean_preemptor_run_ms",
        "total_preemptor_run_s",
    ]
    if preemptions.empty:
        return pd.DataFrame(columns=columns)
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
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(
        ["preemptions", "preemptor"], ascending=[False, True], ignore_index=True
    )
