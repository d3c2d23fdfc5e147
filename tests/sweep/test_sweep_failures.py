"""A run that goes wrong is one recorded failure; the sweep goes on with the others, on
one process, a process pool and Dask."""

from __future__ import annotations

from pathlib import Path

import pytest

import mqoe.sweep.execute as execute
from mqoe.cli.main import main
from mqoe.results.api import load_failures, load_runs
from mqoe.sweep import Backend, SweepSummary, load_sweep, run_sweep
from mqoe.sweep.spec import Sweep
from tests.sweep import faulty

SPEC = """\
[sweep]
name = "fd"
scenario = "frame-deadlines"
profiles = ["nokia-1"]
seeds = [0, 1]

[fixed]
duration_s = 0.3

[grid]
hogs = [0, 4]
"""


def sweep_of(tmp_path: Path) -> Sweep:
    path = tmp_path / "sweep.toml"
    path.write_text(SPEC, encoding="utf-8")
    return load_sweep(path)


def assert_two_failed_two_stored(sweep: Sweep, out: Path, summary: SweepSummary) -> None:
    assert (summary.stored, summary.failed) == (2, 2)
    runs = load_runs(out, expand_params=True)
    assert sorted(runs["param_hogs"]) == [0, 0]
    failures = load_failures(out).set_index("seed")
    assert sorted(failures.index) == [0, 1]
    assert failures.loc[0, "error_type"] == "ZeroDivisionError"
    assert failures.loc[0, "error"] == "frame budget of 0 ms"
    assert "ZeroDivisionError" in failures.loc[0, "traceback"]
    # The record came back but the store refused it: a failure of that run, not the sweep.
    assert failures.loc[1, "error_type"] == "ValueError"
    assert "cannot be stored" in failures.loc[1, "error"]
    assert "histogram" in failures.loc[1, "error"]
    assert set(failures["run_id"]).isdisjoint(runs["run_id"])
    assert set(failures["run_id"]) | set(runs["run_id"]) == {job.run_id for job in sweep.jobs}


def test_failing_runs_are_recorded_and_the_sweep_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execute, "run_job", faulty.raise_in_scenario_or_unstorable)
    sweep = sweep_of(tmp_path)
    summary = run_sweep(sweep, tmp_path / "out", Backend(workers=1))
    assert_two_failed_two_stored(sweep, tmp_path / "out", summary)


def test_failing_runs_on_dask_are_recorded_and_the_sweep_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distributed import LocalCluster

    monkeypatch.setattr(execute, "run_job", faulty.raise_in_scenario_or_unstorable)
    sweep = sweep_of(tmp_path)
    # One thread: the stand-in swaps runner.run_scenario for the duration of one run,
    # which a second run in a parallel thread of the same process would see.
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        backend = Backend(scheduler=cluster.scheduler_address)
        summary = run_sweep(sweep, tmp_path / "out", backend)
    assert_two_failed_two_stored(sweep, tmp_path / "out", summary)


@pytest.mark.slow  # spawns a pool twice
def test_failing_runs_in_a_process_pool_are_recorded_and_the_sweep_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execute, "run_job", faulty.raise_in_scenario_or_unstorable)
    sweep = sweep_of(tmp_path)
    summary = run_sweep(sweep, tmp_path / "out", Backend(workers=2))
    assert_two_failed_two_stored(sweep, tmp_path / "out", summary)


@pytest.mark.slow  # spawns a pool and replaces its dead worker
def test_a_worker_that_dies_loses_only_its_own_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execute, "run_job", faulty.die_on_seed_1)
    sweep = sweep_of(tmp_path)
    summary = run_sweep(sweep, tmp_path / "out", Backend(workers=2))
    assert (summary.stored, summary.failed) == (2, 2)
    assert set(load_runs(tmp_path / "out")["seed"]) == {0}
    failures = load_failures(tmp_path / "out")
    assert set(failures["seed"]) == {1}
    assert set(failures["error_type"]) == {"WorkerLost"}
    assert all("exit code 9" in error for error in failures["error"])


def test_cli_summary_counts_failed_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(execute, "run_job", faulty.raise_in_scenario_or_unstorable)
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC, encoding="utf-8")
    code = main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--workers", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "2 stored, 2 failed" in captured.out
    assert "Traceback" not in captured.err


def test_out_that_is_a_file_is_refused_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_runs(job: object) -> None:
        raise AssertionError("a run started")

    monkeypatch.setattr(execute, "run_job", no_runs)
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC, encoding="utf-8")
    taken = tmp_path / "results.txt"
    taken.write_text("not a folder\n", encoding="utf-8")
    for out in (taken, taken / "sub"):
        code = main(["sweep", str(spec), "--out", str(out), "--workers", "1"])
        err = capsys.readouterr().err
        assert code == 2, err
        assert err.startswith(f"mqoe: error: --out {out}: ") and err.count("\n") == 1, err
    assert taken.read_text(encoding="utf-8") == "not a folder\n"
    monkeypatch.setenv("MQOE_RESULTS", str(taken))
    assert main(["sweep", str(spec), "--workers", "1"]) == 2
    assert f"$MQOE_RESULTS {taken}: is a file" in capsys.readouterr().err


@pytest.mark.slow  # two interpreters started as another user
def test_unwritable_out_is_refused_before_any_run() -> None:
    from tests.unprivileged import run_as_nobody, skip_unless_nobody_starts_interpreters, world_dir

    skip_unless_nobody_starts_interpreters()  # `mqoe sweep` starts its workers first
    with world_dir() as folder:
        spec = folder / "sweep.toml"
        spec.write_text(SPEC, encoding="utf-8")
        spec.chmod(0o644)
        locked = folder / "locked"
        locked.mkdir(mode=0o555)
        locked.chmod(0o555)
        result = run_as_nobody(["sweep", str(spec), "--out", str(locked / "out")])
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"mqoe: error: --out {locked / 'out'}: cannot write")
        assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
        assert list(locked.iterdir()) == []


@pytest.mark.parametrize("dry_run", [True, False])
def test_nan_in_a_sweep_file_is_refused_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC.replace("duration_s = 0.3", "duration_s = nan"), encoding="utf-8")
    out = tmp_path / "out"
    extra = ["--dry-run"] if dry_run else ["--workers", "1"]
    assert main(["sweep", str(spec), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    what = "key fixed.duration_s: expected a finite number, got nan"
    assert err == f"mqoe: error: {spec}:8: {what}\n"
    assert not out.exists()
