"""Run a sweep's jobs on local processes or a Dask cluster, storing each run as it ends.

The caller's process is the only writer: workers return a :class:`Outcome` (the run's
record, or the error it raised) and the loop stores it at once, atomically, so a sweep
interrupted at any point (Ctrl-C, SIGKILL) keeps every finished run and ``resume``
skips them by run id. Workers never touch the results directory, so a remote Dask
cluster needs no shared filesystem, and an interrupted sweep kills its local workers
(:mod:`mqoe.sweep.pool`, or a LocalCluster's) instead of waiting for their runs.

One run going wrong (it raises, its worker dies, the store refuses its record) is one
row in ``failures/``; the sweep goes on. Only a store that cannot be written stops it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from mqoe.errors import UserError
from mqoe.results import ResultsStore, RunRecord, ensure_output_dir
from mqoe.sweep.pool import SWEEP_RUN, ProcessPool, RunUnit, cores
from mqoe.sweep.spec import Job, Sweep, describe


@dataclass(frozen=True)
class Outcome:
    """What a worker hands back: a record to store, or the error of a failed run."""

    job: Job
    record: RunRecord | None = None
    error_type: str = ""
    error: str = ""
    traceback: str = ""


@dataclass(frozen=True)
class Progress:
    """Counts after each stored outcome (for a progress bar)."""

    finished: int  # stored or failed in this invocation
    total: int  # to run in this invocation (planned minus skipped)
    failed: int


@dataclass(frozen=True)
class SweepSummary:
    sweep: str
    sweep_id: str
    planned: int
    skipped: int  # already stored (resume)
    stored: int
    failed: int
    wall_time_s: float

    @property
    def runs_per_s(self) -> float:
        ran = self.stored + self.failed
        return ran / self.wall_time_s if self.wall_time_s > 0 else 0.0


@dataclass(frozen=True)
class Backend:
    """Where jobs run: ``workers`` local processes (1: in this process), a Dask scheduler
    at ``scheduler`` (``tcp://host:port``), or a Dask ``LocalCluster`` of
    ``local_cluster`` worker processes.

    With ``warm`` (local processes only), runs that differ only in their scenario's late
    parameters share one simulation of their set-up (:mod:`mqoe.workloads.warm`): same
    records, less work."""

    workers: int | None = None  # default: every core
    scheduler: str | None = None
    local_cluster: int | None = None
    connect_timeout_s: float = 20.0  # how long to wait for a Dask scheduler
    warm: bool = True

    def __post_init__(self) -> None:
        if self.scheduler is not None and self.local_cluster is not None:
            raise UserError("give a Dask scheduler address or a local cluster size, not both")
        for name in ("workers", "local_cluster"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserError(f"{name} must be at least 1, got {value}")

    def outcomes(self, jobs: Sequence[Job]) -> Iterator[Outcome]:
        """Run ``jobs`` and yield their outcomes as they finish (any order)."""
        if not jobs:
            return iter(())
        if self.scheduler is not None or self.local_cluster is not None:
            return _dask_outcomes(jobs, self.scheduler, self.local_cluster, self.connect_timeout_s)
        workers = self.workers or cores()
        units = warm_units(jobs, workers) if self.warm else [(job,) for job in jobs]
        if not self.in_workers():
            return _in_process(units)
        workers = min(workers, len(units))
        return ProcessPool(workers, _unit_runner()).outcomes(units)

    def in_workers(self) -> bool:
        """Whether runs go to other processes (local workers or Dask), leaving this one
        free; with one local worker they run in this process."""
        local = self.scheduler is None and self.local_cluster is None
        return not local or (self.workers or cores()) > 1

    def describe(self) -> str:
        if self.scheduler is not None:
            return f"Dask scheduler {self.scheduler}"
        if self.local_cluster is not None:
            return f"Dask LocalCluster of {self.local_cluster} workers"
        return f"{self.workers or cores()} local process(es)"


def run_job(job: Job) -> Outcome:
    """Simulate one job (in a worker). An exception becomes a failed outcome; only
    ``KeyboardInterrupt``/``SystemExit`` propagate."""
    from mqoe.workloads.population import POPULATIONS
    from mqoe.workloads.runner import run_population, run_scenario

    try:
        if job.scenario in POPULATIONS:
            record = run_population(job.scenario, job.seed, job.overrides)
        else:
            record = run_scenario(job.scenario, job.profile, job.seed, job.overrides)
    except Exception as exc:
        return Outcome(job, None, type(exc).__name__, first_line(exc), traceback.format_exc())
    return Outcome(job, dataclasses.replace(record, run_id=job.run_id, tags=job.tags))


_RUN_JOB = run_job


def _unit_runner() -> RunUnit:
    """What the workers run: :data:`~mqoe.sweep.pool.SWEEP_RUN`, for which a command may
    have prestarted them; or, where ``run_job`` was swapped for a stand-in (tests), the
    stand-in itself with the units."""
    return SWEEP_RUN if run_job is _RUN_JOB else partial(run_unit, run=run_job)


def run_unit(
    unit: tuple[Job, ...],
    emit: Callable[[Outcome], None],
    run: Callable[[Job], Outcome] | None = None,
) -> None:
    """Simulate a unit of jobs (in a worker): one job (with ``run``, by default
    :func:`run_job`), or a warm-start group (:func:`warm_units`), handing each outcome
    to ``emit`` as it ends."""
    if len(unit) == 1:
        emit((run or run_job)(unit[0]))
        return
    from mqoe.workloads.warm import RunFailure, run_group

    first = unit[0]
    assert first.profile is not None  # population runs are never grouped

    def emit_result(index: int, result: RunRecord | RunFailure) -> None:
        job = unit[index]
        if isinstance(result, RunFailure):
            emit(Outcome(job, None, result.error_type, result.error, result.traceback))
        else:
            emit(Outcome(job, dataclasses.replace(result, run_id=job.run_id, tags=job.tags)))

    cells = [job.overrides for job in unit]
    run_group(first.scenario, first.profile, first.seed, cells, on_result=emit_result)


def warm_units(jobs: Sequence[Job], workers: int) -> list[tuple[Job, ...]]:
    """``jobs`` in units: each warm-start group (same scenario, phone, seed and
    parameters but the scenario's late ones) is one unit, and the largest units are
    halved until every worker has one (a unit runs on one core). Jobs of a scenario
    without late parameters, or of a population, stay alone."""
    from mqoe.workloads.warm import can_fork, late_params_of, warm_key

    if not can_fork():
        return [(job,) for job in jobs]
    groups: dict[object, list[Job]] = {}
    late: dict[str, frozenset[str]] = {}
    for job in jobs:
        if job.scenario not in late:
            late[job.scenario] = late_params_of(job.scenario) if job.profile else frozenset()
        if job.profile is None or not late[job.scenario]:
            groups[("alone", job.run_id)] = [job]
            continue
        key = warm_key(job.scenario, job.profile, job.seed, job.overrides, late[job.scenario])
        groups.setdefault(key, []).append(job)
    units = [tuple(group) for group in groups.values()]
    while len(units) < workers:
        largest = max(range(len(units)), key=lambda i: len(units[i]), default=None)
        if largest is None or len(units[largest]) < 2:
            break
        unit = units[largest]
        half = len(unit) // 2
        units[largest : largest + 1] = [unit[:half], unit[half:]]
    return units


def _in_process(units: Sequence[tuple[Job, ...]]) -> Iterator[Outcome]:
    for unit in units:
        outcomes: list[Outcome] = []
        run_unit(unit, outcomes.append, run_job)
        yield from outcomes


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message ("" if it has none, or cannot say)."""
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not turn one failed run into a crash
        return ""
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    backend: Backend | None = None,
    *,
    resume: bool = False,
    replace: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
) -> SweepSummary:
    """Run every job of ``sweep`` not yet stored under ``out``; store each as it ends.

    Without ``resume``, finding some of the sweep's runs already stored is a
    ``UserError`` (so a sweep is not silently half re-used); with it they are skipped.
    A run that raises, whose worker dies, or whose record the store refuses is a failed
    run: stored in ``failures/`` with the error's type and message, counted in the
    summary, and tried again by the next resume; the other runs go on. ``out`` must be
    a writable folder (checked before any run starts: ``UserError``). With ``replace``
    every run is simulated again and replaces its stored version (each atomically: until
    its new record is committed the old one stays whole).
    """
    (summary,) = run_sweeps(
        [(sweep, out)], backend, resume=resume, replace=replace, on_progress=on_progress
    )
    return summary


def run_sweeps(
    sweeps: Sequence[tuple[Sweep, str | Path]],
    backend: Backend | None = None,
    *,
    resume: bool = False,
    replace: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    on_finished: Callable[[int, SweepSummary], None] | None = None,
) -> list[SweepSummary]:
    """:func:`run_sweep` for several sweeps at once, each into its own folder, on one
    set of workers: their jobs share one queue (no pool started per sweep, no core idle
    while one sweep's last runs end and the next waits). ``on_progress`` counts the runs
    of all of them; ``on_finished(i, summary)`` is called the moment the ``i``-th sweep's
    last run is stored (in this thread, before later outcomes are stored). Every folder
    is checked, and every refusal raised, before any run starts."""
    if resume and replace:
        raise ValueError("resume skips stored runs and replace runs them again: not both")
    backend = backend or Backend()
    stores: list[ResultsStore] = []
    pending: list[list[Job]] = []
    skipped: list[int] = []
    for sweep, out in sweeps:
        store = ResultsStore(ensure_output_dir(out, "results folder"))
        done = set() if replace else store.run_ids() & {job.run_id for job in sweep.jobs}
        if done and not resume:
            raise UserError(
                f"{len(done)} of the {len(sweep.jobs)} runs of sweep {sweep.name!r} are "
                f"already stored in {store.root}; pass --resume to skip them, or choose "
                "another --out"
            )
        stores.append(store)
        pending.append([job for job in sweep.jobs if job.run_id not in done])
        skipped.append(len(done))
    # Which sweep an outcome belongs to. Its job may be a copy (from a worker): known by
    # sweep and run id; should one sweep be given twice, its outcomes come twice.
    owners: dict[tuple[str, str], deque[int]] = {}
    for i, jobs in enumerate(pending):
        for job in jobs:
            owners.setdefault((job.sweep_id, job.run_id), deque()).append(i)
    counts = [[0, 0] for _ in sweeps]  # per sweep: stored, failed
    start = time.perf_counter()
    total = sum(len(jobs) for jobs in pending)
    finished = failed = 0

    def summary(i: int) -> SweepSummary:
        sweep = sweeps[i][0]
        stored_i, failed_i = counts[i]
        return SweepSummary(
            sweep=sweep.name,
            sweep_id=sweep.sweep_id,
            planned=len(sweep.jobs),
            skipped=skipped[i],
            stored=stored_i,
            failed=failed_i,
            wall_time_s=time.perf_counter() - start,
        )

    summaries: list[SweepSummary | None] = [None] * len(sweeps)

    def finish(i: int) -> None:
        summaries[i] = done = summary(i)
        if on_finished is not None:
            on_finished(i, done)

    for i, (sweep, _) in enumerate(sweeps):
        stores[i].write_sweep(sweep.sweep_id, describe(sweep) | {"started_utc": _now()})
    for i, jobs in enumerate(pending):
        if not jobs:
            finish(i)  # nothing to run: done before anything starts
    outcomes = backend.outcomes([job for jobs in pending for job in jobs])
    try:
        for outcome in outcomes:
            i = owners[(outcome.job.sweep_id, outcome.job.run_id)].popleft()
            ok = _store(stores[i], outcome)
            counts[i][0 if ok else 1] += 1
            finished += 1
            failed += not ok
            if on_progress is not None:
                on_progress(Progress(finished, total, failed))
            if sum(counts[i]) == len(pending[i]):
                finish(i)
    finally:
        close = getattr(outcomes, "close", None)
        if close is not None:
            close()  # stops the pool or cluster, also on Ctrl-C
    return [s if s is not None else summary(i) for i, s in enumerate(summaries)]


def _store(store: ResultsStore, outcome: Outcome) -> bool:
    """Store a run, or its failure; True if the run itself was stored."""
    try:
        if outcome.record is not None:
            try:
                store.write(outcome.record)
                return True
            except OSError:
                raise
            except (ValueError, TypeError, pa.ArrowException) as exc:  # the record's content
                message = f"the run's record cannot be stored: {first_line(exc)}"
                outcome = dataclasses.replace(
                    outcome,
                    record=None,
                    error_type=type(exc).__name__,
                    error=message,
                    traceback=traceback.format_exc(),
                )
        store.write_failure(outcome.job.run_id, _failure_row(outcome))
        return False
    except OSError as exc:  # the disk, not the run: every later run would fail too
        what = exc.strerror or first_line(exc)
        raise UserError(f"cannot store runs under {store.root}: {what}") from None


def _failure_row(outcome: Outcome) -> dict[str, object]:
    job = outcome.job
    return {
        "sweep": job.sweep,
        "sweep_id": job.sweep_id,
        "scenario": job.scenario,
        "profile": job.profile_name,
        "seed": job.seed,
        "overrides": json.dumps(dict(job.overrides), sort_keys=True),
        "error_type": outcome.error_type,
        "error": outcome.error,
        "traceback": outcome.traceback,
        "failed_utc": _now(),
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _lost(job: Job, exc: BaseException | None) -> Outcome:
    """A Dask task that raised outside :func:`run_job`'s guard, or whose workers kept
    dying (Dask's ``KilledWorker``)."""
    message = f"{type(exc).__name__}: {first_line(exc)}" if exc is not None else "no result"
    return Outcome(job, None, "WorkerLost", message, "")


def _ignore_sigint() -> None:
    """On a Dask worker (its event loop runs in the main thread, as signal handlers must)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _dask_outcomes(
    jobs: Sequence[Job], scheduler: str | None, local_cluster: int | None, timeout_s: float
) -> Iterator[Outcome]:
    import distributed

    dask: Any = distributed  # untyped library: calls go through Any for mypy --strict
    cluster: Any = None
    if local_cluster is not None:
        # Loopback only, no dashboard: nothing listens beyond this machine.
        cluster = dask.LocalCluster(
            n_workers=local_cluster,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    try:
        client: Any = dask.Client(
            cluster if cluster is not None else scheduler, timeout=f"{timeout_s}s"
        )
    except OSError as exc:
        if cluster is not None:
            cluster.close()
        raise UserError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    futures: list[Any] = []
    finished = False
    try:
        if cluster is not None:
            # Our cluster's workers are in this process group, so a terminal's Ctrl-C
            # reaches them too; only this process should act on it (closing the cluster
            # below), not each worker printing its own KeyboardInterrupt.
            client.run(_ignore_sigint)
        futures = client.map(run_job, list(jobs), key=[f"mqoe-{job.run_id}" for job in jobs])
        job_of = dict(zip((f.key for f in futures), jobs, strict=True))
        for future in dask.as_completed(futures):
            job = job_of[future.key]
            if future.status == "finished":
                yield future.result()
            else:  # the task raised outside run_job's guard, or its worker died
                try:
                    problem = future.exception()
                except Exception as exc:  # e.g. cancelled by the scheduler
                    problem = exc
                yield _lost(job, problem)
            future.release()
        finished = True
    finally:
        if futures:
            client.cancel(futures)
        client.close()
        if cluster is not None:
            if not finished:  # interrupted: do not wait for the runs in flight
                _kill_workers(cluster)
            cluster.close()


def _kill_workers(cluster: Any) -> None:
    """SIGKILL a LocalCluster's worker processes (they hold no results), so that closing
    it takes a moment instead of the seconds a graceful close waits for running tasks.
    Reaches into Dask's Nanny objects; if their shape changes, the close is just slower."""
    for nanny in list(getattr(cluster, "workers", {}).values()):
        try:
            os.kill(nanny.process.process.pid, signal.SIGKILL)
        except (AttributeError, TypeError, OSError):
            continue
