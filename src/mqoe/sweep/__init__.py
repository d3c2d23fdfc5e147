"""Sweeps: many runs of one scenario from a TOML file, on every local core or a Dask cluster.

``load_sweep(path)`` validates a sweep file (errors name the file and line) and expands
it into jobs with stable run ids; ``run_sweep(sweep, out, Backend(...), resume=...)``
runs them and stores each run the moment it ends (see :mod:`mqoe.sweep.execute`;
``run_sweeps`` runs several sweeps, each into its own folder, on one set of workers). Runs
land in an ordinary results store, tagged with ``sweep`` and ``sweep_id``, so
``mqoe results query`` and :mod:`mqoe.results.api` see them beside single runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mqoe.sweep.execute import (
        Backend,
        Outcome,
        Progress,
        SweepSummary,
        run_job,
        run_sweep,
        run_sweeps,
    )
    from mqoe.sweep.spec import Job, Sweep, load_sweep

# Imported on first use (PEP 562): `mqoe.sweep.pool` must import without them, so that a
# command can start its workers before its own imports (pool.prestart).
_LAZY = {
    **dict.fromkeys(
        ("Backend", "Outcome", "Progress", "SweepSummary", "run_job", "run_sweep", "run_sweeps"),
        "mqoe.sweep.execute",
    ),
    **dict.fromkeys(("Job", "Sweep", "load_sweep"), "mqoe.sweep.spec"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mqoe.sweep' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "Backend",
    "Job",
    "Outcome",
    "Progress",
    "Sweep",
    "SweepSummary",
    "load_sweep",
    "run_job",
    "run_sweep",
    "run_sweeps",
]
