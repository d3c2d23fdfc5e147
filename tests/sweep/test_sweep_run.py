"""Running sweeps: every run stored once and tagged, failures kept, resume, determinism,
the same results on one process, a process pool and Dask."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from mqoe.cli.main import main
from mqoe.errors import UserError
from mqoe.results import ResultsStore
from mqoe.results.api import load_failures, load_runs
from mqoe.sweep import Backend, load_sweep, run_sweep, run_sweeps
from mqoe.sweep.spec import Sweep

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
# Columns that differ between two runs of the same inputs: the wall clock's.
CLOCK = ["started_utc", "wall_time_s"]


def sweep_of(tmp_path: Path, text: str = SPEC) -> Sweep:
    path = tmp_path / "sweep.toml"
    path.write_text(text, encoding="utf-8")
    return load_sweep(path)


def simulated(root: Path) -> pd.DataFrame:
    return load_runs(root).drop(columns=CLOCK)


def test_a_sweep_of_the_trace_mode_runs_without_a_phone(tmp_path: Path) -> None:
    text = '[sweep]\nname = "t"\nscenario = "trace-abr"\nseeds = [1, 2]\n'
    sweep = sweep_of(tmp_path, text + '[fixed]\nsession_s = 40\n[grid]\nrule = ["bba", "bola"]\n')
    summary = run_sweep(sweep, tmp_path / "out", Backend(workers=1))
    assert (summary.planned, summary.stored, summary.failed) == (4, 4, 0)
    runs = load_runs(tmp_path / "out", expand_params=True)
    assert sorted(runs["run_id"]) == sorted(job.run_id for job in sweep.jobs)
    assert set(runs["profile"]) == {"none"} and "energy_j" not in runs.columns
    assert set(runs["param_rule"]) == {"bba", "bola"} and runs["segments"].eq(10).all()


def test_every_run_is_stored_once_and_tagged(tmp_path: Path) -> None:
    sweep = sweep_of(tmp_path)
    summary = run_sweep(sweep, tmp_path / "out", Backend(workers=1))
    assert (summary.planned, summary.stored, summary.failed, summary.skipped) == (4, 4, 0, 0)
    runs = load_runs(tmp_path / "out", expand_params=True)
    assert sorted(runs["run_id"]) == sorted(job.run_id for job in sweep.jobs)
    assert set(runs["sweep"]) == {"fd"} and set(runs["sweep_id"]) == {sweep.sweep_id}
    assert sorted(zip(runs["param_hogs"], runs["seed"], strict=True)) == [
        (0, 0),
        (0, 1),
        (4, 0),
        (4, 1),
    ]
    # More hogs on the same cores: the frame thread misses more deadlines (a real effect).
    by_hogs = runs.groupby("param_hogs")["missed_deadline_rate"].mean()
    assert by_hogs[4] > by_hogs[0]
    described = ResultsStore(tmp_path / "out").query("select * from sweeps")
    assert described["planned_runs"].tolist() == [4]
    assert json.loads(described["spec"][0])["grid"] == {"hogs": [0, 4]}


def test_same_sweep_file_gives_same_run_ids_and_results(tmp_path: Path) -> None:
    run_sweep(sweep_of(tmp_path), tmp_path / "a", Backend(workers=1))
    run_sweep(sweep_of(tmp_path), tmp_path / "b", Backend(workers=1))
    pd.testing.assert_frame_equal(simulated(tmp_path / "a"), simulated(tmp_path / "b"))


@pytest.mark.slow  # the SIGKILL test also compares pool results with one process's
def test_process_pool_stores_the_same_results_as_one_process(tmp_path: Path) -> None:
    run_sweep(sweep_of(tmp_path), tmp_path / "one", Backend(workers=1))
    run_sweep(sweep_of(tmp_path), tmp_path / "pool", Backend(workers=2))
    pd.testing.assert_frame_equal(simulated(tmp_path / "one"), simulated(tmp_path / "pool"))


def test_dask_client_stores_the_same_results_as_one_process(tmp_path: Path) -> None:
    from distributed import LocalCluster

    run_sweep(sweep_of(tmp_path), tmp_path / "one", Backend(workers=1))
    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        summary = run_sweep(
            sweep_of(tmp_path), tmp_path / "dask", Backend(scheduler=cluster.scheduler_address)
        )
    assert summary.stored == 4
    pd.testing.assert_frame_equal(simulated(tmp_path / "one"), simulated(tmp_path / "dask"))


@pytest.mark.slow
def test_dask_local_cluster_of_processes_runs_the_sweep(tmp_path: Path) -> None:
    run_sweep(sweep_of(tmp_path), tmp_path / "one", Backend(workers=1))
    summary = run_sweep(sweep_of(tmp_path), tmp_path / "lc", Backend(local_cluster=2))
    assert summary.stored == 4
    pd.testing.assert_frame_equal(simulated(tmp_path / "one"), simulated(tmp_path / "lc"))


def test_unreachable_scheduler_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot reach the Dask scheduler"):
        run_sweep(
            sweep_of(tmp_path),
            tmp_path / "x",
            Backend(scheduler="tcp://127.0.0.1:9", connect_timeout_s=1.0),
        )


def test_failed_runs_are_recorded_with_their_error_and_retried_on_resume(tmp_path: Path) -> None:
    # A cpuset the phone does not have passes the file check but fails when built.
    sweep = sweep_of(tmp_path, SPEC.replace("hogs = [0, 4]", 'frame_cpus = ["", "0-99"]'))
    summary = run_sweep(sweep, tmp_path / "out", Backend(workers=1))
    assert (summary.stored, summary.failed) == (2, 2)
    failures = load_failures(tmp_path / "out")
    assert len(failures) == 2 and set(failures["sweep"]) == {"fd"}
    assert all("cpuset '0-99'" in error for error in failures["error"])
    assert set(failures["error_type"]) == {"UserError"}
    assert all("Traceback" in text for text in failures["traceback"])
    assert set(load_runs(tmp_path / "out")["run_id"]).isdisjoint(failures["run_id"])
    again = run_sweep(sweep, tmp_path / "out", Backend(workers=1), resume=True)
    assert (again.skipped, again.stored, again.failed) == (2, 0, 2)


def test_a_stored_run_clears_its_earlier_failure(tmp_path: Path) -> None:
    sweep = sweep_of(tmp_path)
    store = ResultsStore(tmp_path / "out")
    job = sweep.jobs[0]
    store.write_failure(job.run_id, {"sweep": "fd", "error": "boom"})
    assert len(load_failures(tmp_path / "out")) == 1
    run_sweep(sweep, tmp_path / "out", Backend(workers=1))
    assert load_failures(tmp_path / "out").empty
    assert len(load_runs(tmp_path / "out")) == 4


def test_resume_runs_only_what_is_missing(tmp_path: Path) -> None:
    sweep = sweep_of(tmp_path)
    out = tmp_path / "out"
    run_sweep(sweep, out, Backend(workers=1))
    kept = out / "runs" / f"{sweep.jobs[0].run_id}.parquet"
    kept_bytes = kept.read_bytes()
    for job in sweep.jobs[2:]:
        (out / "runs" / f"{job.run_id}.parquet").unlink()
    with pytest.raises(UserError, match="pass --resume"):
        run_sweep(sweep, out, Backend(workers=1))
    summary = run_sweep(sweep, out, Backend(workers=1), resume=True)
    assert (summary.skipped, summary.stored) == (2, 2)
    assert kept.read_bytes() == kept_bytes  # skipped, not re-run
    assert len(load_runs(out)) == 4


def test_sweep_runs_sit_beside_single_runs_in_one_view(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", "frame-deadlines", "--set", "duration_s=0.3", "--out", str(out)]) == 0
    run_sweep(sweep_of(tmp_path), out, Backend(workers=1))
    counts = ResultsStore(out).query(
        "select coalesce(sweep, '(single)') as sweep, count(*) as n from runs group by 1 order by 1"
    )
    assert counts.to_dict("list") == {"sweep": ["(single)", "fd"], "n": [1, 4]}


def test_cli_sweep_resume_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1"]) == 0
    assert "4 stored, 0 failed" in capsys.readouterr().out
    assert main(["sweep", str(spec), "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["sweep", str(spec), "--out", str(out), "--resume", "--workers", "1"]) == 0
    assert "0 stored, 0 failed, 4 already stored" in capsys.readouterr().out
    assert main(["results", "export", "runs", str(tmp_path / "r.csv"), "--results", str(out)]) == 0
    exported = pd.read_csv(tmp_path / "r.csv")
    assert len(exported) == 4 and set(exported["sweep"]) == {"fd"}
    sql = "select hogs, count(*) as n from (select params->>'hogs' as hogs from runs) group by 1"
    assert main(["results", "export", sql, str(tmp_path / "r.parquet"), "--results", str(out)]) == 0
    assert sorted(pd.read_parquet(tmp_path / "r.parquet")["n"]) == [2, 2]
    bad = main(["sweep", str(spec), "--scheduler", "tcp://x:1", "--workers", "2"])
    assert bad == 2 and "--workers is for local" in capsys.readouterr().err


def test_cli_dry_run_counts_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC, encoding="utf-8")
    assert main(["sweep", str(spec), "--dry-run", "--out", str(tmp_path / "o")]) == 0
    assert "4 runs of frame-deadlines" in capsys.readouterr().out
    assert not (tmp_path / "o").exists()


def test_replace_runs_every_job_again_and_cannot_be_combined_with_resume(tmp_path: Path) -> None:
    sweep = sweep_of(tmp_path)
    out = tmp_path / "out"
    run_sweep(sweep, out, Backend(workers=1))
    first = load_runs(out)
    with pytest.raises(UserError, match="--resume"):
        run_sweep(sweep, out, Backend(workers=1))  # a plain re-run refuses stored runs
    summary = run_sweep(sweep, out, Backend(workers=1), replace=True)
    assert (summary.stored, summary.skipped) == (4, 0)
    again = load_runs(out)
    assert sorted(again["run_id"]) == sorted(first["run_id"])
    assert (again.set_index("run_id")["started_utc"].sort_index() >= first.set_index("run_id")[
        "started_utc"
    ].sort_index()).all()  # fmt: skip
    pd.testing.assert_frame_equal(simulated(out), first.drop(columns=CLOCK))  # same results
    with pytest.raises(ValueError, match="not both"):
        run_sweep(sweep, out, Backend(workers=1), resume=True, replace=True)


def test_sweeps_run_together_store_each_into_its_own_folder(tmp_path: Path) -> None:
    first = sweep_of(tmp_path)
    second = sweep_of(tmp_path, SPEC.replace('name = "fd"', 'name = "fd2"').replace("0, 4", "2"))
    run_sweep(first, tmp_path / "alone", Backend(workers=1))
    run_sweep(first, tmp_path / "a", Backend(workers=1))  # stored already: resumed below
    finished: list[tuple[int, int, int]] = []
    progress: list[tuple[int, int]] = []
    summaries = run_sweeps(
        [(first, tmp_path / "a"), (second, tmp_path / "b")],
        Backend(workers=2),
        resume=True,
        on_progress=lambda p: progress.append((p.finished, p.total)),
        on_finished=lambda i, s: finished.append((i, s.stored, s.skipped)),
    )
    assert finished == [(0, 0, 4), (1, 2, 0)]  # the resumed sweep first: nothing to run
    assert [(s.sweep, s.planned, s.stored) for s in summaries] == [("fd", 4, 0), ("fd2", 2, 2)]
    assert progress == [(1, 2), (2, 2)]
    assert ResultsStore(tmp_path / "b").run_ids() == {job.run_id for job in second.jobs}
    pd.testing.assert_frame_equal(simulated(tmp_path / "a"), simulated(tmp_path / "alone"))


def test_sweeps_run_together_refuse_stored_runs_before_any_run(tmp_path: Path) -> None:
    first = sweep_of(tmp_path)
    run_sweep(first, tmp_path / "a", Backend(workers=1))
    second = sweep_of(tmp_path, SPEC.replace('name = "fd"', 'name = "fd2"'))
    with pytest.raises(UserError, match="already stored"):
        run_sweeps([(second, tmp_path / "b"), (first, tmp_path / "a")], Backend(workers=1))
    assert not (tmp_path / "b" / "runs").exists()  # the refusal came before any run
