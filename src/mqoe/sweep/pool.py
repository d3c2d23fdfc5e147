"""A small process pool for sweeps: one unit of runs at a time per worker (one run, or a
warm-start group: :mod:`mqoe.workloads.warm`), so the pool always knows which runs a
worker was busy with. A worker sends each run's outcome as it ends, then says the unit
is done.

``concurrent.futures.ProcessPoolExecutor`` does not fit a sweep on two counts. When one
worker dies (the OOM killer, a crash in native code) the whole executor is *broken* and
every queued run fails with it, without saying which run killed the worker. And it
cannot stop a running job: on Ctrl-C, interpreter exit waits for every in-flight run
to end (seconds to minutes). Here each worker has its own pipe; a worker that dies
fails only the runs it held and had not reported, and is replaced, and
:meth:`ProcessPool.terminate` ends the workers at once. Workers never write results, so
killing them loses nothing stored.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqoe.sweep.execute import Outcome
    from mqoe.sweep.spec import Job

Emit = Callable[["Outcome"], None]
# Runs a unit of jobs, handing each one's outcome to `emit` as it ends (in any order).
RunUnit = Callable[[tuple["Job", ...], Emit], None]
_UNIT_DONE = "unit done"  # a worker's message after the last outcome of its unit
_STOP_GRACE_S = 1.0  # how long a stopped worker may take to exit before it is killed


@dataclass(frozen=True)
class NamedRun:
    """A :data:`RunUnit` named by module and function: it pickles without importing them
    here, and a worker imports them (and ``preload``) as it starts, before its first
    unit arrives."""

    module: str
    function: str
    preload: tuple[str, ...] = ()

    def prepare(self) -> None:
        for name in (self.module, *self.preload):
            importlib.import_module(name)

    def __call__(self, unit: tuple[Job, ...], emit: Emit) -> None:
        run: RunUnit = getattr(importlib.import_module(self.module), self.function)
        run(unit, emit)


# A sweep's runs (mqoe.sweep.execute.run_unit with the real run_job): what Backend gives
# its pools, and what a command prestarts workers for.
SWEEP_RUN = NamedRun("mqoe.sweep.execute", "run_unit", preload=("mqoe.workloads.runner",))


def cores() -> int:
    """The cores this process may run on (the default number of workers)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Workers started ahead of their pool (prestart): (their run, the worker).
_SPARES: list[tuple[RunUnit, _Worker]] = []


def prestart(workers: int, run: RunUnit = SWEEP_RUN) -> None:
    """Start ``workers`` workers for ``run`` now, so that their start-up (a new
    interpreter importing the simulator: ~1.6 s) overlaps the caller's own imports and
    planning. The next :class:`ProcessPool` with an equal ``run`` takes them instead of
    starting its own; workers never taken are stopped at exit."""
    context = multiprocessing.get_context("spawn")
    have = sum(1 for spare_run, _ in _SPARES if spare_run == run)
    for _ in range(workers - have):
        _SPARES.append((run, _spawn(context, run)))


def prestart_local(workers: int | None) -> None:
    """:func:`prestart` the workers of a local sweep with ``workers`` (None: one per
    core), as a command does first thing; none when they would be one, which runs in
    the command's own process (:meth:`mqoe.sweep.Backend.in_workers`)."""
    count = workers or cores()
    if count > 1:
        prestart(count)


def _take_spare(run: RunUnit) -> _Worker | None:
    """A living worker prestarted for ``run`` (dead ones are dropped), or None."""
    for spare in [spare for spare in _SPARES if spare[0] == run]:
        _SPARES.remove(spare)
        worker = spare[1]
        if worker.process.is_alive():
            return worker
        worker.conn.close()
    return None


@atexit.register
def _stop_spares() -> None:
    spares = [worker for _, worker in _SPARES]
    _SPARES.clear()
    for worker in spares:
        with contextlib.suppress(OSError):
            worker.conn.send(None)  # idle: it exits at once
    for worker in spares:
        worker.process.join(_STOP_GRACE_S)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()


class ProcessPool:
    """``workers`` spawned processes running ``run`` on units of jobs; see :meth:`outcomes`."""

    def __init__(self, workers: int, run: RunUnit) -> None:
        # Spawned, not forked: the parent may run a progress-bar thread, and a fork taken
        # while another thread holds a lock can deadlock the child.
        self._context = multiprocessing.get_context("spawn")
        self._run = run
        self._size = workers
        self._workers: list[_Worker] = []

    def outcomes(self, units: Sequence[tuple[Job, ...]]) -> Iterator[Outcome]:
        """Run ``units`` and yield each run's outcome as it arrives (any order). A worker
        that dies yields a failed outcome (``WorkerLost``) for each run of its unit it
        had not reported, and is replaced."""
        pending = deque(units)
        try:
            while len(self._workers) < min(self._size, len(pending)):
                self._workers.append(self._start())
            for worker in self._workers:
                worker.give(pending.popleft())
            while busy := [w for w in self._workers if w.unit is not None]:
                ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
                for worker in busy:
                    if worker.conn in ready or worker.process.sentinel in ready:
                        outcomes = self._collect(worker)
                        if worker.unit is None and pending:  # the next unit, before storing
                            self._alive(worker).give(pending.popleft())
                        yield from outcomes
        finally:
            self.terminate()

    def terminate(self) -> None:
        """End every worker now (SIGTERM, then SIGKILL after a grace period); reaped."""
        workers, self._workers = self._workers, []
        for worker in workers:
            if worker.unit is None and worker.process.is_alive():
                with contextlib.suppress(OSError):
                    worker.conn.send(None)  # idle: asked to exit, so it is reaped cleanly
            else:
                worker.process.terminate()
        deadline = time.monotonic() + _STOP_GRACE_S
        for worker in workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()

    def _start(self) -> _Worker:
        return _take_spare(self._run) or _spawn(self._context, self._run)

    def _collect(self, worker: _Worker) -> list[Outcome]:
        """What ``worker`` sent (an outcome, or the end of its unit), or, if it died,
        a failed outcome for each run of its unit it had not reported."""
        unit = worker.unit
        assert unit is not None
        try:
            if worker.conn.poll():
                message: Outcome | str = worker.conn.recv()
                if message == _UNIT_DONE:
                    worker.unit = None
                    return []
                assert not isinstance(message, str)
                worker.unit = tuple(j for j in unit if j.run_id != message.job.run_id)
                return [message]
        except (EOFError, OSError):
            pass
        worker.unit = None
        worker.process.join(_STOP_GRACE_S)
        return [_died(job, worker.process.exitcode) for job in unit]

    def _alive(self, worker: _Worker) -> _Worker:
        """``worker``, or a new one in its place if it has died."""
        if worker.process.is_alive():
            return worker
        worker.conn.close()
        replacement = self._start()
        self._workers[self._workers.index(worker)] = replacement
        return replacement


class _Worker:
    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self.unit: tuple[Job, ...] | None = None  # the runs it holds, not yet reported

    def give(self, unit: tuple[Job, ...]) -> None:
        self.unit = unit
        with contextlib.suppress(OSError):  # a dead worker shows up as its sentinel
            self.conn.send(unit)


def _spawn(context: multiprocessing.context.SpawnContext, run: RunUnit) -> _Worker:
    parent, child = context.Pipe()
    process = context.Process(target=_worker_main, args=(child, run, os.getpid()), daemon=True)
    # A terminal's Ctrl-C reaches the whole process group. Workers must not see it (a
    # KeyboardInterrupt would print a traceback from each): they start with SIGINT
    # blocked, inherited through fork and exec, and ignore it before unblocking. In the
    # parent the signal only waits until the unblock, it is not lost.
    with sigint_blocked():
        process.start()
    child.close()
    return _Worker(process, parent)


def _died(job: Job, exitcode: int | None) -> Outcome:
    from mqoe.sweep.execute import Outcome

    if exitcode is not None and exitcode < 0:
        how = f"was killed by {signal.Signals(-exitcode).name}"
    else:
        how = f"exited with exit code {exitcode}"
    message = f"the worker process running this run {how} (out of memory?)"
    return Outcome(job, None, "WorkerLost", message, "")


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread for the block: processes and threads started in it
    inherit the mask; a SIGINT meanwhile stays pending (delivered at the end), not lost."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: no process groups either
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _exit_now() -> None:
    """End this worker at once, asked to: a spawned interpreter's normal exit frees every
    module and object first (~0.4 s with a simulation's imports), which the sweep would
    wait for. A worker holds nothing unsent: its outcomes went through the pipe."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(0)


def _worker_main(conn: Connection, run: RunUnit, parent_pid: int) -> None:
    """A worker's loop: receive a unit, send back each run's outcome and then that the
    unit is done, until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _exit_with_parent(parent_pid)
    if isinstance(run, NamedRun):
        # Before the first unit. A failure here recurs in the run, which reports it.
        with contextlib.suppress(Exception):
            run.prepare()
    while True:
        try:
            unit = conn.recv()
        except (EOFError, OSError):
            return  # the sweep process is gone
        if unit is None:
            _exit_now()

        def emit(outcome: Outcome) -> None:
            try:
                conn.send(outcome)
            except OSError:
                os._exit(1)  # the sweep process is gone
            except Exception as exc:  # the outcome does not pickle; nothing was sent yet
                conn.send(_unsendable(outcome.job, exc))

        run(unit, emit)
        try:
            conn.send(_UNIT_DONE)
        except OSError:
            return


def _unsendable(job: Job, exc: Exception) -> Outcome:
    from mqoe.sweep.execute import Outcome, first_line

    message = f"the run's result cannot be sent back from its worker: {first_line(exc)}"
    return Outcome(job, None, type(exc).__name__, message, traceback.format_exc())


def _exit_with_parent(parent_pid: int) -> None:
    """Exit once the sweep process is gone (e.g. SIGKILLed) even in the middle of a run:
    an idle worker sees its pipe close, a busy one would finish the run first."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="mqoe-parent-watch", daemon=True).start()


__all__ = [
    "SWEEP_RUN",
    "Emit",
    "NamedRun",
    "ProcessPool",
    "RunUnit",
    "cores",
    "prestart",
    "prestart_local",
    "sigint_blocked",
]
