"""A reproduction as data: the runs its figures need, run by the sweep engine.

A work declares its **plan** (:meth:`Reproduction.plan`): every run as a scenario, a
profile, a seed and ``--set`` parameters, under the key its analysis knows the run by
(a grid cell, a case). :meth:`Reproduction.reproduce` hands the plan to
:mod:`mqoe.sweep` — local processes or a Dask cluster — which stores each run in
``OUT/results`` the moment it ends and records a run that raised in
``OUT/results/failures`` while the others go on; ``resume`` skips the runs an
interrupted invocation already stored. Then every planned record is read back from that
store and :meth:`Reproduction.write` makes the work's outputs (``metrics.csv``, the
summary, ``comparison.csv``, figures) from them: what a user's own queries of
``OUT/results`` see is exactly what the figures were drawn from.

If any run failed, nothing but the store is written and :class:`IncompleteReproduction`
says how many and how to see why; rerunning with ``resume`` retries only those.

:func:`reproduce_works` (``mqoe reproduce all``) runs several works' plans on one set of
workers and writes each work's outputs as soon as its own runs are stored, while the
others' runs go on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from mqoe import __version__
from mqoe.device.profiles import DeviceProfile, load_profile
from mqoe.errors import UserError
from mqoe.results import ResultsStore, RunRecord, ensure_output_dir
from mqoe.sweep import Backend, Job, Progress, Sweep, SweepSummary, run_sweep, run_sweeps

K = TypeVar("K")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")  # what a run id may not hold
Results = list[tuple[K, RunRecord]]


@dataclass(frozen=True)
class PlannedRun(Generic[K]):
    """One run of a plan: what to simulate, and the key the analysis reads it under."""

    key: K
    scenario: str
    # A profile's name, or a profile itself (e.g. one built for a memory size); None for a
    # population scenario (it draws its own phones).
    profile: str | DeviceProfile | None
    seed: int
    overrides: Mapping[str, str] = field(default_factory=dict)  # as `mqoe run --set`


class IncompleteReproduction(UserError):
    """Some planned runs failed; the others are stored and a resume retries the rest."""


class Reproduction(ABC, Generic[K]):
    """A reproduced work: a plan of runs and the outputs written from their records.

    ``runner`` replaces the sweep (tests give canned records): called with ``quick``, it
    returns ``(key, record)`` pairs, which are stored as the sweep would store them."""

    name: str
    title: str

    def __init__(self, runner: Callable[[bool], Results[K]] | None = None) -> None:
        self._runner = runner

    @abstractmethod
    def plan(self, quick: bool) -> Sequence[PlannedRun[K]]:
        """Every run the outputs need, in the order the analysis lists them."""

    @abstractmethod
    def write(self, results: Results[K], out_dir: Path, quick: bool) -> Path:
        """Write the outputs from the records (in plan order); return metrics.csv's path."""

    def reproduce(
        self,
        out_dir: Path,
        quick: bool,
        *,
        backend: Backend | None = None,
        resume: bool = False,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Path:
        """Run the plan into ``out_dir/results`` and write the outputs beside it.

        ``backend`` is a :class:`mqoe.sweep.Backend` (default: every local core);
        ``on_progress`` receives the sweep's :class:`mqoe.sweep.Progress` after each run.
        Raises :class:`IncompleteReproduction` if a run failed."""
        ensure_output_dir(out_dir, "--out")
        if self._runner is not None:
            results = self._runner(quick)
            store = ResultsStore(out_dir / "results")
            for _, record in results:
                store.write(record)
        else:
            results = run_plan(self, out_dir / "results", quick, backend, resume, on_progress)
        return self.write(results, out_dir, quick)


def run_plan(
    reproduction: Reproduction[K],
    results_dir: Path,
    quick: bool,
    backend: Backend | None = None,
    resume: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
) -> Results[K]:
    """Run ``reproduction``'s plan through the sweep engine into ``results_dir`` and read
    every planned record back from there, in plan order."""
    planned = reproduction.plan(quick)
    sweep, run_ids = _sweep_of(reproduction, planned, quick)
    summary = run_sweep(
        sweep, results_dir, backend, resume=resume, replace=not resume, on_progress=on_progress
    )
    if summary.failed:
        raise _incomplete(reproduction, summary, results_dir)
    return _read_back(results_dir, planned, run_ids)


def reproduce_works(
    works: Sequence[tuple[Reproduction[Any], Path]],
    quick: bool,
    *,
    backend: Backend | None = None,
    resume: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    on_written: Callable[[str, Path], None] | None = None,
) -> list[Path]:
    """:meth:`Reproduction.reproduce` for several works, each into its own folder, with
    their runs on one set of workers (:func:`mqoe.sweep.run_sweeps`: one queue, so no
    core waits while one work's last runs end). A work's outputs are written the moment
    its last run is stored — with worker processes, on a writer thread while the other
    works' runs go on — and ``on_written(name, metrics.csv)`` is called then.

    Returns each work's metrics.csv, in the order given. If runs failed, the other works
    are still finished; then :class:`IncompleteReproduction` names each incomplete work."""
    for _, out_dir in works:
        ensure_output_dir(out_dir, "--out")
    written: dict[int, Path] = {}
    for i, (work, out_dir) in enumerate(works):
        if work._runner is not None:  # canned records (tests): no sweep
            written[i] = work.reproduce(out_dir, quick)
            if on_written is not None:
                on_written(work.name, written[i])
    swept = [i for i, (work, _) in enumerate(works) if work._runner is None]
    plans = {i: works[i][0].plan(quick) for i in swept}
    sweeps = {i: _sweep_of(works[i][0], plans[i], quick) for i in swept}
    incomplete: list[IncompleteReproduction] = []
    # A thread, not a process: the records are read back from the store and drawn
    # there. Not beside an in-process sweep, whose warm starts fork (decision 0005).
    in_workers = backend is None or backend.in_workers()
    writer = ThreadPoolExecutor(1, thread_name_prefix="mqoe-writer") if in_workers else None
    futures: dict[int, Future[Path]] = {}
    if writer is not None:  # while the workers start and run: the first write needs it
        writer.submit(_import_plotting)

    def write(i: int) -> Path:
        work, out_dir = works[i]
        path = work.write(_read_back(out_dir / "results", plans[i], sweeps[i][1]), out_dir, quick)
        if on_written is not None:
            on_written(work.name, path)
        return path

    def finished(k: int, summary: SweepSummary) -> None:
        i = swept[k]
        if summary.failed:
            incomplete.append(_incomplete(works[i][0], summary, works[i][1] / "results"))
        elif writer is None:
            written[i] = write(i)
        else:
            futures[i] = writer.submit(write, i)

    try:
        run_sweeps(
            [(sweeps[i][0], works[i][1] / "results") for i in swept],
            backend,
            resume=resume,
            replace=not resume,
            on_progress=on_progress,
            on_finished=finished,
        )
        for i, future in futures.items():
            written[i] = future.result()  # a writer's exception is raised here
    finally:
        if writer is not None:
            writer.shutdown(wait=True, cancel_futures=True)
    if incomplete:
        if len(incomplete) == 1:
            raise incomplete[0]
        names = ", ".join(str(problem).split(":", 1)[0] for problem in incomplete)
        raise IncompleteReproduction(
            f"{len(incomplete)} works had failed runs ({names}); the others were written. "
            f"{incomplete[0]}"
        )
    return [written[i] for i in range(len(works))]


def _import_plotting() -> None:
    """Import matplotlib's pyplot for the Agg backend, as every work's figures do: about a
    second, otherwise spent after the last run of the first work to finish."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot


def _incomplete(
    reproduction: Reproduction[Any], summary: SweepSummary, results_dir: Path
) -> IncompleteReproduction:
    return IncompleteReproduction(
        f"{reproduction.name}: {summary.failed} of {summary.planned} runs failed and "
        f"nothing but the runs was written; see why with mqoe results query --results "
        f'{results_dir} "select run_id, error_type, error from failures", then rerun '
        "with --resume to retry only those"
    )


def _read_back(
    results_dir: Path, planned: Sequence[PlannedRun[K]], run_ids: Sequence[str]
) -> Results[K]:
    """Every planned record, read from the store, in plan order."""
    store = ResultsStore(results_dir)
    records = {run_id: store.read(run_id) for run_id in dict.fromkeys(run_ids)}
    return [(run.key, records[run_id]) for run, run_id in zip(planned, run_ids, strict=True)]


def plan_sweep(reproduction: Reproduction[K], quick: bool) -> tuple[Sweep, list[str]]:
    """The plan as a :class:`mqoe.sweep.Sweep` (runs planned twice are one job) and each
    planned run's id, in plan order. An id digests the reproduction, scenario, profile
    (its whole content), seed, parameters and mqoe's version."""
    return _sweep_of(reproduction, reproduction.plan(quick), quick)


def _sweep_of(
    reproduction: Reproduction[K], planned: Sequence[PlannedRun[K]], quick: bool
) -> tuple[Sweep, list[str]]:
    if not planned:
        raise ValueError(f"{reproduction.name}: the plan is empty")
    named = {r.profile for r in planned if isinstance(r.profile, str)}
    loaded = {name: load_profile(name) for name in sorted(named)}
    dumps: dict[int, object] = {}  # id(profile) → its content, encoded once
    sweep_name = f"reproduce-{reproduction.name}"
    run_ids: list[str] = []
    jobs: dict[str, Job] = {}
    for run in planned:
        profile = loaded[run.profile] if isinstance(run.profile, str) else run.profile
        if profile is not None and id(profile) not in dumps:
            dumps[id(profile)] = profile.model_dump(mode="json")
        overrides = {str(k): str(v) for k, v in run.overrides.items()}
        digest = _digest(
            {
                "reproduction": reproduction.name,
                "scenario": run.scenario,
                "profile": dumps[id(profile)] if profile is not None else None,
                "seed": run.seed,
                "params": overrides,
                "version": __version__,
            }
        )
        who = _SAFE.sub("_", profile.name) if profile is not None else run.scenario
        run_id = f"{reproduction.name}-{who}-s{run.seed}-{digest[:12]}"
        run_ids.append(run_id)
        if run_id not in jobs:
            jobs[run_id] = Job(run_id, sweep_name, "", run.scenario, profile, run.seed, overrides)
    sweep_id = f"{sweep_name}-{_digest(sorted(jobs))[:10]}"
    sweep = Sweep(
        name=sweep_name,
        sweep_id=sweep_id,
        scenario=",".join(sorted({job.scenario for job in jobs.values()})),
        path=Path(f"mqoe reproduce {reproduction.name}"),
        spec={"reproduction": reproduction.name, "quick": quick},
        jobs=tuple(dataclasses.replace(job, sweep_id=sweep_id) for job in jobs.values()),
    )
    return sweep, run_ids


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


__all__ = [
    "IncompleteReproduction",
    "PlannedRun",
    "Reproduction",
    "Results",
    "plan_sweep",
    "reproduce_works",
    "run_plan",
]
