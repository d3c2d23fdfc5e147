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
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from mqoe import __version__
from mqoe.device.profiles import DeviceProfile, load_profile
from mqoe.errors import UserError
from mqoe.results import ResultsStore, RunRecord, ensure_output_dir
from mqoe.sweep import Backend, Job, Progress, Sweep, run_sweep

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
        raise IncompleteReproduction(
            f"{reproduction.name}: {summary.failed} of {summary.planned} runs failed and "
            f"nothing but the runs was written; see why with mqoe results query --results "
            f'{results_dir} "select run_id, error_type, error from failures", then rerun '
            "with --resume to retry only those"
        )
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
    "run_plan",
]
