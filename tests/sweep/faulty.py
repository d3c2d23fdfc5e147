"""Stand-ins for a sweep's worker function that go wrong in the ways real runs do.

Importable by module path (``tests.sweep.faulty``), so spawned pool workers can load
them too: a test swaps ``mqoe.sweep.execute.run_job`` for one of these, and the pool
pickles the function by reference.
"""

from __future__ import annotations

import dataclasses
import os

from mqoe.sweep.execute import Outcome, run_job
from mqoe.sweep.spec import Job

RAISING_HOGS = "4"  # runs with this many hogs raise inside the scenario


def raise_in_scenario_or_unstorable(job: Job) -> Outcome:
    """Seed 0 of the hogs=4 point raises inside the scenario; seed 1 of it returns a
    record the store refuses (a metric that is not a scalar); other runs are real."""
    from mqoe.workloads import runner

    if job.overrides.get("hogs") == RAISING_HOGS and job.seed == 0:
        real = runner.run_scenario

        def boom(*args: object, **kwargs: object) -> object:
            raise ZeroDivisionError("frame budget of 0 ms")

        runner.run_scenario = boom  # type: ignore[assignment]
        try:
            return run_job(job)
        finally:
            runner.run_scenario = real
    outcome = run_job(job)
    if job.overrides.get("hogs") == RAISING_HOGS and job.seed == 1:
        assert outcome.record is not None
        metrics = {**outcome.record.metrics, "histogram": [1, 2, 3]}
        record = dataclasses.replace(outcome.record, metrics=metrics)  # type: ignore[arg-type]
        return dataclasses.replace(outcome, record=record)
    return outcome


def die_on_seed_1(job: Job) -> Outcome:
    """The worker process dies (as under the OOM killer) while running seed 1."""
    if job.seed == 1:
        os._exit(9)
    return run_job(job)
