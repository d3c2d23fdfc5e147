"""Workers started ahead of their pool (``mqoe.sweep.pool.prestart``), as ``mqoe
reproduce`` does before its own imports: the pool takes them instead of starting its
own, only for the run they were started for, and those never taken are stopped."""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mqoe.sweep.pool as pool
from mqoe.sweep import load_sweep
from mqoe.sweep.execute import Outcome, _unit_runner
from mqoe.sweep.pool import SWEEP_RUN, NamedRun, ProcessPool, prestart
from mqoe.sweep.spec import Job

PIDS = NamedRun("tests.sweep.units", "report_pid")
SPEC = """\
[sweep]
name = "p"
scenario = "frame-deadlines"
profiles = ["nokia-1"]
seeds = [0, 1, 2, 3]
"""


@pytest.fixture(autouse=True)
def no_spares_left() -> Iterator[None]:
    pool._stop_spares()
    yield
    pool._stop_spares()


def jobs(tmp_path: Path) -> list[Job]:
    path = tmp_path / "sweep.toml"
    path.write_text(SPEC, encoding="utf-8")
    return list(load_sweep(path).jobs)


def pids(outcomes: list[Outcome]) -> set[int]:
    assert {o.error_type for o in outcomes} == {"Pid"}
    return {int(o.error or 0) for o in outcomes}


def test_a_pool_takes_the_workers_prestarted_for_its_run(tmp_path: Path) -> None:
    prestart(2, PIDS)
    prestart(2, PIDS)  # tops up to two, does not add two more
    spares = {worker.process.pid for _, worker in pool._SPARES}
    assert len(spares) == 2
    outcomes = list(ProcessPool(2, PIDS).outcomes([(job,) for job in jobs(tmp_path)]))
    assert len(outcomes) == 4
    assert pids(outcomes) <= spares
    assert pool._SPARES == []


def test_workers_prestarted_for_another_run_are_left_and_stopped_at_exit(
    tmp_path: Path,
) -> None:
    prestart(1, NamedRun("tests.sweep.units", "report_pid", preload=("json",)))
    (_, spare), *rest = pool._SPARES
    assert rest == []
    outcomes = list(ProcessPool(1, PIDS).outcomes([(job,) for job in jobs(tmp_path)[:1]]))
    assert spare.process.pid not in pids(outcomes)
    assert spare.process.is_alive()
    pool._stop_spares()  # what interpreter exit runs
    assert not spare.process.is_alive()
    assert spare.process.exitcode == 0  # told to stop, not killed
    assert pool._SPARES == []


def test_a_dead_spare_is_replaced(tmp_path: Path) -> None:
    prestart(1, PIDS)
    (_, spare), *_ = pool._SPARES
    spare.process.kill()
    spare.process.join()
    outcomes = list(ProcessPool(1, PIDS).outcomes([(job,) for job in jobs(tmp_path)[:2]]))
    assert len(outcomes) == 2
    assert spare.process.pid not in pids(outcomes)


def test_sweeps_run_the_named_run_and_stand_ins_go_by_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _unit_runner() == SWEEP_RUN
    assert pickle.loads(pickle.dumps(SWEEP_RUN)) == SWEEP_RUN
    import mqoe.sweep.execute as execute
    from tests.sweep import faulty

    monkeypatch.setattr(execute, "run_job", faulty.die_on_seed_1)
    assert _unit_runner() != SWEEP_RUN  # a swapped run_job reaches the workers itself


def test_the_pool_module_imports_without_the_sweep_machinery() -> None:
    """What lets `mqoe reproduce` start its workers before its own imports."""
    code = "import sys, mqoe.sweep.pool; print('mqoe.sweep.execute' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
