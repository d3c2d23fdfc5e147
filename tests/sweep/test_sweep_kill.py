"""SIGKILL or Ctrl-C a running sweep, resume it, and find every run stored exactly once,
none torn."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from mqoe.results.api import load_runs
from mqoe.sweep import Backend, load_sweep, run_sweep

SPEC = """\
[sweep]
name = "kill"
scenario = "frame-deadlines"
profiles = ["nokia-1"]
seeds = { count = 16 }

[fixed]
duration_s = 2.0
hogs = 4
"""
ROOT = Path(__file__).resolve().parents[2]


def sweep_command(spec: Path, out: Path, *extra: str) -> list[str]:
    code = "import sys; from mqoe.cli.main import main; sys.exit(main(sys.argv[1:]))"
    return [sys.executable, "-c", code, "sweep", str(spec), "--out", str(out), *extra]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def stored(out: Path) -> dict[str, bytes]:
    runs = out / "runs"
    if not runs.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in runs.glob("*.parquet")}


def wait_for_group_to_exit(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if not running_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def running_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies. An exited orphan stays a zombie
    until PID 1 reaps it, which a container's init may do only every few seconds."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            members.append(int(stat.parent.name))
    return members


@pytest.mark.slow  # two sweeps in subprocesses, each starting a pool
def test_sigkilled_sweep_resumes_with_every_run_stored_exactly_once(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC, encoding="utf-8")
    out = tmp_path / "out"
    sweep = load_sweep(spec)
    planned = {job.run_id for job in sweep.jobs}
    proc = subprocess.Popen(
        sweep_command(spec, out, "--workers", "2"),
        env=env(),
        start_new_session=True,  # its own process group: the pool's workers are in it
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while len(stored(out)) < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # the sweep process only, mid-way
        proc.wait()
        # Its orphaned pool workers notice the dead parent and exit by themselves.
        assert wait_for_group_to_exit(proc.pid, timeout_s=30), "pool workers outlived the sweep"
    finally:
        with contextlib.suppress(ProcessLookupError):  # leave nothing running on failure
            os.killpg(proc.pid, signal.SIGKILL)
    before = stored(out)
    assert 4 <= len(before) < len(planned), "the kill should land mid-way"
    for path in (out).rglob("*.parquet"):
        pq.read_table(path)  # a torn file would not parse
    resumed = subprocess.run(
        sweep_command(spec, out, "--resume", "--workers", "1"),
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(before)} already stored" in resumed.stdout
    after = stored(out)
    assert set(after) == {f"{run_id}.parquet" for run_id in planned}
    assert all(after[name] == data for name, data in before.items())  # kept, not re-run
    runs = load_runs(out)
    assert len(runs) == len(planned) and set(runs["run_id"]) == planned
    assert runs["run_id"].is_unique
    frames_tables = list((out / "tables").rglob("*.parquet"))
    assert {p.stem for p in frames_tables} <= planned
    # The resumed sweep's results are those of an uninterrupted one (first three runs).
    fresh = tmp_path / "fresh"
    subset = type(sweep)(**{**sweep.__dict__, "jobs": sweep.jobs[:3]})
    run_sweep(subset, fresh, Backend(workers=1))
    columns = [c for c in load_runs(fresh).columns if c not in ("started_utc", "wall_time_s")]
    expected = load_runs(fresh)[columns]
    got = runs[runs["run_id"].isin(expected["run_id"])].reset_index(drop=True)[columns]
    pd.testing.assert_frame_equal(got, expected)


# Two short runs, then two long ones (seconds each): SIGINT lands while the long ones run.
SLOW_SPEC = """\
[sweep]
name = "ctrl-c"
scenario = "frame-deadlines"
profiles = ["nokia-1"]
seeds = [0, 1]

[fixed]
hogs = 4

[grid]
duration_s = [1.0, 400.0]
"""


@pytest.mark.slow  # two sweeps in subprocesses, with runs of seconds
@pytest.mark.parametrize("to", ["group", "process"])
def test_sigint_stops_a_sweep_at_once_and_resume_completes_it(tmp_path: Path, to: str) -> None:
    """``group`` is a terminal's Ctrl-C (workers get it too); ``process`` is ``kill -INT``
    (only the sweep process does, and must stop its workers itself)."""
    spec = tmp_path / "sweep.toml"
    spec.write_text(SLOW_SPEC, encoding="utf-8")
    out = tmp_path / "out"
    planned = {job.run_id for job in load_sweep(spec).jobs}
    proc = subprocess.Popen(
        sweep_command(spec, out, "--workers", "2"),
        env=env(),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(stored(out)) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert len(stored(out)) == 2, "the short runs should be stored by now"
        if to == "group":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=30)
        exited_s = time.monotonic() - sent
        # The pool's workers were terminated, not waited for.
        assert wait_for_group_to_exit(proc.pid, timeout_s=max(0.0, 2.0 - exited_s))
        gone_s = time.monotonic() - sent
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert exited_s < 2.0 and gone_s < 2.0, f"exit after {exited_s:.1f} s, group {gone_s:.1f} s"
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert stderr.strip().count("\n") == 0 and "--resume" in stderr, stderr
    before = stored(out)
    assert len(before) == 2
    assert not [p for p in out.rglob("*") if ".tmp-" in p.name], "a half-written file is left"
    for path in out.rglob("*.parquet"):
        pq.read_table(path)
    resumed = subprocess.run(
        sweep_command(spec, out, "--resume", "--workers", "2"),
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "2 stored, 0 failed, 2 already stored" in resumed.stdout
    after = stored(out)
    assert set(after) == {f"{run_id}.parquet" for run_id in planned}
    assert all(after[name] == data for name, data in before.items())  # kept, not re-run
