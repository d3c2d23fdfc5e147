"""Unit functions for pool workers, importable by module path (``tests.sweep.units``) so
that a :class:`~mqoe.sweep.pool.NamedRun` can name them."""

from __future__ import annotations

import os

from mqoe.sweep.execute import Outcome
from mqoe.sweep.pool import Emit
from mqoe.sweep.spec import Job


def report_pid(unit: tuple[Job, ...], emit: Emit) -> None:
    """Each job's outcome carries the worker's pid (as its error text)."""
    for job in unit:
        emit(Outcome(job, None, "Pid", str(os.getpid()), ""))
