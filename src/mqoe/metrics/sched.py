"""Scheduler metrics: thread state times and preemption statistics.

Inputs are plain tables, so simulated runs and parsed real traces (systrace/Perfetto)
give the same columns: thread states as in Perfetto (Running, Runnable, Runnable
(Preempted), Sleeping, Blocked on I/O) and one row per involuntary switch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

STATE_COLUMNS = (
    "running_ns",
    "runnable_ns",
    "runnable_preempted_ns",
    "sleeping_ns",
    "blocked_io_ns",
)


def preemption_frame(columns: Mapping[str, Sequence[int]]) -> pd.DataFrame:
    """The preemption log's columns (``PreemptionLog.rows()``: integers) as a table of
    int64 columns, converted with their type known (pandas infers it element by element,
    several times slower on a session's tens of thousands of switches)."""
    return pd.DataFrame(
        {name: np.array(values, dtype=np.int64) for name, values in columns.items()}
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
    # Per preemptor (sorted by tid, as groupby gives them), in whole arrays: a table has
    # one row per involuntary switch, tens of thousands in a session. Times are integer
    # ns, so the float64 sums below are exact, and so equal pandas' per-group ones.
    tids, group, preempted = np.unique(
        preemptions["preemptor_tid"].to_numpy(), return_inverse=True, return_counts=True
    )
    n = len(tids)
    victim = preemptions["victim_tid"].to_numpy()
    order = np.lexsort((victim, group))  # by preemptor, then victim
    by, seen = group[order], victim[order]
    first = np.ones(len(order), dtype=bool)  # a (preemptor, victim) pair's first row
    first[1:] = (by[1:] != by[:-1]) | (seen[1:] != seen[:-1])
    victims = np.bincount(by[first], minlength=n)

    def resolved(column: str) -> tuple[npt.NDArray[Any], npt.NDArray[np.intp]]:
        """Per preemptor: the sum and count of ``column``'s resolved values (≥ 0)."""
        values = preemptions[column].to_numpy(np.float64)
        ok = values >= 0
        sums = np.bincount(group[ok], weights=values[ok], minlength=n)
        return sums, np.bincount(group[ok], minlength=n)

    wait_sum, wait_n = resolved("victim_wait_ns")
    run_sum, run_n = resolved("preemptor_run_ns")
    with np.errstate(invalid="ignore", divide="ignore"):
        wait_mean = np.where(wait_n > 0, wait_sum / wait_n, np.nan)
        run_mean = np.where(run_n > 0, run_sum / run_n, np.nan)
    rows = [
        {
            "preemptor": str(names.get(tid, tid)),
            "preemptions": int(preempted[i]),
            "victims": int(victims[i]),
            "mean_victim_wait_ms": float(wait_mean[i]) / 1e6,
            "total_victim_wait_s": float(wait_sum[i]) / 1e9,
            "mean_preemptor_run_ms": float(run_mean[i]) / 1e6,
            "total_preemptor_run_s": float(run_sum[i]) / 1e9,
        }
        for i, tid in enumerate(tids)
    ]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(
        ["preemptions", "preemptor"], ascending=[False, True], ignore_index=True
    )
