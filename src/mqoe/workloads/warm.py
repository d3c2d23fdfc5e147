"""Warm starts: simulate a scenario's set-up once for runs that differ only after it.

A video session spends a large part of its run building its start state (a phone filling
up with apps, a pressure generator allocating until lmkd's trim level arrives) which is
the same for every resolution, frame rate and length: those are read only once playback
starts. A scenario that knows this returns a :class:`~mqoe.workloads.base.WarmStart` with
its session: the parameters its set-up never reads (``late_params``), and a ``rebind``
that applies another run's values at the point where the set-up ends.

:func:`run_group` simulates a group of runs that differ only in those parameters: it
builds the phone for the first run and, when the scenario reaches its warm-start point,
``os.fork()``\\ s one child per run. Each child is a copy-on-write copy of the whole
simulation at that instant — heap, generators, random streams — applies its run's late
parameters and simulates on to the end; its record comes back through a pipe. The
children run one after the other, so a group uses one core like the cold runs would.
Every event up to the fork point is the one the cold run would process (the scenario
promises its set-up does not read the late parameters; ``tests/workloads/test_warm.py``
checks record by record that warm and cold runs are identical), so the records equal
the cold runs' except for their wall time (a run's share of the shared set-up plus its
own part).

POSIX only (``os.fork``): elsewhere, and for scenarios without a warm-start point, the
runs of a group run cold. A run that fails after the fork fails alone; one that fails
before it fails every run of its group, as each would have failed the same way cold.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from mqoe.device.no_device import NoDevice
from mqoe.device.phone import Phone
from mqoe.device.profiles import DeviceProfile
from mqoe.results import RunRecord
from mqoe.workloads.base import Session, WarmStart, params_dict
from mqoe.workloads.runner import PreparedRun, Started, prepare_run, run_scenario

_STEPS = 1000  # engine runs per simulated run (see _simulate)


@dataclass(frozen=True)
class RunFailure:
    """A run of a group that raised: its exception's type, first line and traceback."""

    error_type: str
    error: str
    traceback: str

    @classmethod
    def of(cls, exc: BaseException) -> RunFailure:
        lines = str(exc).strip().splitlines()
        return cls(type(exc).__name__, lines[0] if lines else "", traceback.format_exc())


Result = RunRecord | RunFailure
OnResult = Callable[[int, Result], None]


def can_fork() -> bool:
    return hasattr(os, "fork")


def warm_key(
    name: str,
    profile: DeviceProfile,
    seed: int,
    overrides: Mapping[str, str],
    late_params: frozenset[str],
) -> Hashable:
    """Runs with equal keys share their set-up: the same scenario, phone and seed, and
    the same ``overrides`` apart from ``late_params`` (compared as given: two spellings
    of one value only cost a set-up)."""
    early = tuple(sorted((k, v) for k, v in overrides.items() if k not in late_params))
    return (name, profile.model_dump_json(), seed, early)


def late_params_of(name: str) -> frozenset[str]:
    """The parameters scenario ``name`` reads only after its warm-start point (none if it
    has none: its runs are never grouped)."""
    from mqoe.workloads import get_scenario

    late: frozenset[str] = getattr(get_scenario(name), "late_params", frozenset())
    return late


def run_group(
    name: str,
    profile: DeviceProfile,
    seed: int,
    cells: Sequence[Mapping[str, str]],
    *,
    on_result: OnResult | None = None,
) -> list[Result]:
    """The runs of scenario ``name`` on ``profile`` with ``seed``, one per ``cells``
    entry (``key=value`` overrides that differ only in the scenario's late parameters),
    with their set-up simulated once. Returns each run's record, or its failure, in
    ``cells`` order; ``on_result(index, result)`` is called as each one ends."""
    results: dict[int, Result] = {}

    def done(index: int, result: Result) -> None:
        results[index] = result
        if on_result is not None:
            on_result(index, result)

    group = _Group(name, profile, seed, cells, done)
    for index, overrides in enumerate(cells):
        try:
            group.prepared[index] = prepare_run(name, profile, seed, overrides)
        except Exception as exc:
            done(index, RunFailure.of(exc))
    late = late_params_of(name)
    if late and len({_early(run, late) for run in group.prepared.values()}) > 1:
        raise ValueError(
            f"the runs of a warm-start group may differ only in {', '.join(sorted(late))}"
        )
    if late and len(group.prepared) > 1 and can_fork():
        group.run_warm()
    else:
        group.run_cold(group.prepared)
    return [results[index] for index in range(len(cells))]


def _early(run: PreparedRun, late: frozenset[str]) -> tuple[str, str]:
    """What a run's set-up depends on: its phone (CPU knobs applied) and the parameters
    that are not late, after defaults."""
    params = {k: v for k, v in params_dict(run.params).items() if k not in late}
    phone = run.profile.model_dump_json() if run.profile is not None else ""
    return phone, repr(sorted(params.items()))


class _GroupDone(BaseException):
    """Raised in the parent at the fork point once every child has ended: it unwinds
    the parent's copy of the simulation, which no run needs any more."""


@dataclass
class _Group:
    name: str
    profile: DeviceProfile
    seed: int
    cells: Sequence[Mapping[str, str]]
    done: OnResult
    prepared: dict[int, PreparedRun] = field(default_factory=dict)

    def run_cold(self, runs: Mapping[int, PreparedRun]) -> None:
        for index in runs:
            try:
                record = run_scenario(self.name, self.profile, self.seed, self.cells[index])
            except Exception as exc:
                self.done(index, RunFailure.of(exc))
            else:
                self.done(index, record)

    def run_warm(self) -> None:
        first_index = min(self.prepared)
        first = self.prepared[first_index]
        started = Started.now()
        try:
            phone, session = first.build()
        except Exception as exc:  # the same build for every run of the group
            for index in self.prepared:
                self.done(index, RunFailure.of(exc))
            return
        if session.warm is None or isinstance(phone, NoDevice):  # no warm-start point
            self.run_cold(self.prepared)
            return
        fork = _Fork(self, session.warm, started)
        session.warm.handler = fork
        try:
            _simulate(phone, session.duration_ns, fork)
        except _GroupDone:
            return
        except BaseException as exc:
            if fork.child is not None:
                fork.send(RunFailure.of(exc))
            if not isinstance(exc, Exception):
                raise
            # Before the fork point: the shared set-up failed, as each run's would have.
            for index in self.prepared:
                self.done(index, RunFailure.of(exc))
            return
        if fork.child is not None:
            fork.finish(phone, session)
        # The set-up never reached its fork point (the player was killed while the
        # state was built, say): this was the first run, cold; the others run cold too.
        try:
            self.done(first_index, first.package(phone, session, started))
        except Exception as exc:
            self.done(first_index, RunFailure.of(exc))
        self.run_cold({i: run for i, run in self.prepared.items() if i != first_index})


class _Fork:
    """The fork point's handler: one child per run, in turn; see :func:`run_group`."""

    def __init__(self, group: _Group, warm: WarmStart, started: Started) -> None:
        self.group = group
        self.warm = warm
        self.started = started
        self.child: int | None = None  # in a child: the index of its run
        self.pipe = -1  # in a child: where its result goes
        self.end_ns = 0  # in a child: its run's end
        self.shared_s = 0.0  # each run's share of the set-up's wall time

    def __call__(self) -> None:
        runs = self.group.prepared
        self.shared_s = (time.perf_counter() - self.started.wall_s) / len(runs)
        for index, run in runs.items():
            read, write = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the child: simulate on as run `index`
                os.close(read)
                self.child, self.pipe = index, write
                self.warm.handler = None  # a second reached() is the scenario's own business
                self.started = Started(self.started.utc, time.perf_counter())
                try:
                    self.end_ns = self.warm.rebind(run.params)
                except BaseException as exc:
                    self.send(RunFailure.of(exc))
                return
            os.close(write)
            self.group.done(index, _receive(read, pid))
        raise _GroupDone

    def finish(self, phone: Phone, session: Session) -> NoReturn:
        """In a child at its run's end: its record to the parent."""
        assert self.child is not None
        run = self.group.prepared[self.child]
        result: Result
        if phone.env.now != self.end_ns:  # the parent's step ran past this run's end
            try:
                result = run_scenario(run.name, run.profile, run.seed, self.group.cells[self.child])
            except BaseException as exc:
                result = RunFailure.of(exc)
        else:
            try:
                result = run.package(phone, session, self.started, self.shared_s)
            except BaseException as exc:
                result = RunFailure.of(exc)
        self.send(result)

    def send(self, result: Result) -> NoReturn:
        """In a child: hand ``result`` to the parent and end this process."""
        try:
            payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # a record that does not pickle
            payload = pickle.dumps(RunFailure.of(exc))
        with os.fdopen(self.pipe, "wb") as pipe:
            pipe.write(payload)
        os._exit(0)


def _receive(read: int, pid: int) -> Result:
    """A child's result (all of it, then the child is reaped)."""
    with os.fdopen(read, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if payload:
        result: Result = pickle.loads(payload)
        return result
    how = f"signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status) else "no result"
    return RunFailure("WorkerLost", f"the run's process ended without a result ({how})", "")


def _simulate(phone: Phone, end_ns: int, fork: _Fork) -> None:
    """Run the engine to the run's end in small steps (a step moves no event: the engine
    stops before ``until`` and resumes there). A fork happens inside a step, which goes
    on to the parent's step end before a child sees its own end: small steps keep that
    short of any run's end (checked in :meth:`_Fork.finish`)."""
    env = phone.env
    step = max(1, end_ns // _STEPS)
    while True:
        end = fork.end_ns if fork.child is not None else end_ns
        if env.now >= end:
            return
        env.run(min(end, env.now + step))
