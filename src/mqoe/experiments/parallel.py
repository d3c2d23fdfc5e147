"""Run a reproduction's independent simulations on all local cores.

A stop-gap shared by the experiments until ``mqoe.sweep`` (issue 10) runs them through
the sweep engine with resumable storage and Dask.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

J = TypeVar("J")
R = TypeVar("R")


def map_jobs(fn: Callable[[J], R], jobs: Sequence[J], workers: int | None = None) -> list[R]:
    """``[fn(job) for job in jobs]``, on ``workers`` processes (default: every core).

    ``fn`` must be a module-level function (it is pickled); results keep the job order.
    """
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    if workers <= 1:
        return [fn(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, jobs))
