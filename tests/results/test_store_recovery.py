"""The store survives what happens to real folders: a writer killed at any point of a
re-run, temporaries left by killed writers, and truncated or corrupt Parquet files."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from mqoe.errors import UserError
from mqoe.results import ResultsStore, RunRecord
from mqoe.results.api import load_failures
from tests.results.test_store import frames, record, two_runs

ROOT = Path(__file__).resolve().parents[2]
# What a filesystem sees of a write: each rename, removal and new directory is a point
# where a writer can be killed with every earlier step on disk and no later one.
STEPS = ("replace", "rename", "unlink", "rmdir", "mkdir")


class Killed(BaseException):
    """Stands for SIGKILL: raised at a step, and at every step after it (a dead process
    does nothing more, not even the cleanup of its except blocks)."""


@contextmanager
def killed_at(step: int) -> Iterator[list[str]]:
    """Fail the ``step``-th filesystem step (0-based) and all later ones; yields the
    steps seen, so a caller can tell whether the write got that far."""
    seen: list[str] = []
    real = {name: getattr(os, name) for name in STEPS}

    def wrap(name: str) -> Callable[..., object]:
        def step_(*args: object, **kwargs: object) -> object:
            seen.append(f"{name} {args[0]}")
            if len(seen) > step:
                raise Killed(name)
            return real[name](*args, **kwargs)

        return step_

    for name in STEPS:
        setattr(os, name, wrap(name))
    try:
        yield seen
    finally:
        for name, function in real.items():
            setattr(os, name, function)


def state(root: Path) -> dict[str, object]:
    """What a reader sees: every run's row and every table, as plain data, read in one
    query (as one reader would)."""
    store = ResultsStore(root)
    views = ["runs", *store.table_names()]
    parts = ", ".join(f'(select to_json(list(v)) from "{view}" v) as "{view}"' for view in views)
    row = store.query(f"select {parts}").iloc[0]
    return {view: sorted(json.loads(row[view]), key=json.dumps) for view in views}


NEW_B = record("b", {"missed_rate": 0.125}, {"frames": frames(5.0, 6.0, 7.0)})
NEW_B_NO_TABLES = record("b", {"missed_rate": 0.0})
NEW_B_MORE = record(
    "b", {"startup_ms": 1.0}, {"launches": pd.DataFrame({"app": ["x", "y"]}), "t": frames(1.0)}
)


@pytest.mark.parametrize(
    "new",
    [
        pytest.param(NEW_B, id="fewer"),
        pytest.param(NEW_B_NO_TABLES, id="none"),
        pytest.param(NEW_B_MORE, id="more", marks=pytest.mark.slow),
    ],
)
def test_rerun_killed_at_any_step_leaves_the_old_run_or_the_new_one(
    tmp_path: Path, new: RunRecord
) -> None:
    two_runs(tmp_path / "expected-old")
    old = state(tmp_path / "expected-old")
    two_runs(tmp_path / "expected-new").write(new)
    expected_new = state(tmp_path / "expected-new")
    assert old != expected_new
    seen_new = False
    for step in range(100):
        root = tmp_path / f"at-{step}"
        shutil.copytree(tmp_path / "expected-old", root)
        with killed_at(step) as seen:
            try:
                ResultsStore(root).write(new)
                finished = True
            except Killed:
                finished = False
        got = state(root)
        assert got in (old, expected_new), f"killed before {seen[-1]}: a mix of old and new"
        if got == expected_new:
            seen_new = True
        else:
            # Once the new run is committed, no later step may bring the old one back.
            assert not seen_new, f"killed before {seen[-1]}: the old run came back"
        if finished:
            break
    else:
        raise AssertionError("the re-run never finished")
    assert step > 1 and seen_new
    # The next write of the id (e.g. a retry after the crash) leaves nothing stale behind.
    ResultsStore(root).write(new)
    assert state(root) == expected_new
    assert files_of(root) == files_of(tmp_path / "expected-new")


def files_of(root: Path) -> list[str]:
    """Every file under ``root``, a version suffix (``b~<version>.parquet``) blanked."""
    names = (p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    return sorted(re.sub(r"~[^/.]+", "~*", name) for name in names)


# A child process that re-runs "b" and SIGKILLs itself at filesystem step N.
CHILD = """\
import os, signal, sys
sys.path[:0] = [{root!r}, {src!r}]
from tests.results.test_store import frames, record
from tests.results.test_store_recovery import STEPS
from mqoe.results import ResultsStore

count = [0]
def wrap(real):
    def step(*args, **kwargs):
        count[0] += 1
        if count[0] > int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return step
store = ResultsStore(sys.argv[1])
for name in STEPS:
    setattr(os, name, wrap(getattr(os, name)))
store.write(record("b", {{"missed_rate": 0.125}}, {{"frames": frames(5.0, 6.0, 7.0)}}))
"""


@pytest.mark.slow  # a Python process per kill point
def test_real_sigkill_during_a_rerun_keeps_the_old_run(tmp_path: Path) -> None:
    script = CHILD.format(root=str(ROOT), src=str(ROOT / "src"))
    two_runs(tmp_path / "old")
    old = state(tmp_path / "old")
    two_runs(tmp_path / "new").write(NEW_B)
    new = state(tmp_path / "new")
    outcomes = []
    for step in range(40):
        root = tmp_path / f"at-{step}"
        shutil.copytree(tmp_path / "old", root)
        child = subprocess.run(
            [sys.executable, "-c", script, str(root), str(step)], capture_output=True, timeout=120
        )
        assert child.returncode in (0, -signal.SIGKILL), child.stderr.decode()
        got = state(root)
        assert got in (old, new), f"SIGKILL at step {step}: a mix of old and new"
        outcomes.append("old" if got == old else "new")
        if child.returncode == 0:
            break
    assert outcomes[0] == "old" and outcomes[-1] == "new"
    assert outcomes == sorted(outcomes, key=lambda o: o == "new")  # old ones, then new


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_opening_a_store_removes_stale_temporaries_and_keeps_live_ones(tmp_path: Path) -> None:
    two_runs(tmp_path)
    dead = dead_pid()
    stale = [
        tmp_path / "runs" / f".c.parquet.tmp-{dead}-0123456789ab",
        tmp_path / "tables" / "frames" / f".c.parquet.tmp-{dead}-ba9876543210",
        tmp_path / "failures" / f".d.parquet.tmp-{dead}-00ff00ff00ff",
        tmp_path / f".mqoe-write-probe-{dead}-abcd1234",
    ]
    live = [
        tmp_path / "runs" / f".e.parquet.tmp-{os.getpid()}-0123456789ab",
        tmp_path / "tables" / "frames" / f".e.parquet.tmp-{os.getppid()}-0123456789ab",
        tmp_path / "runs" / ".notes.txt",  # not a temporary of ours
    ]
    for path in stale + live:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half a parquet file")
    store = ResultsStore(tmp_path)
    assert [p for p in stale if p.exists()] == []
    assert [p for p in live if not p.exists()] == []
    assert store.runs()["run_id"].tolist() == ["a", "b"]


def test_opening_a_store_that_cannot_be_cleaned_still_reads(tmp_path: Path) -> None:
    two_runs(tmp_path)
    ResultsStore(tmp_path / "missing")  # nothing to clean, nothing created
    assert not (tmp_path / "missing").exists()


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


@pytest.fixture
def quarantine_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, logger="mqoe.results.store")
    return caplog


def test_truncated_run_is_quarantined_and_queries_answer(
    tmp_path: Path, quarantine_log: pytest.LogCaptureFixture
) -> None:
    store = two_runs(tmp_path)
    truncate(tmp_path / "runs" / "a.parquet")
    assert store.query("select run_id from runs")["run_id"].tolist() == ["b"]
    moved = tmp_path / ".quarantine" / "runs" / "a.parquet"
    assert moved.is_file() and not (tmp_path / "runs" / "a.parquet").exists()
    warnings = [r.getMessage() for r in quarantine_log.records]
    assert len(warnings) == 1 and str(tmp_path / "runs" / "a.parquet") in warnings[0]
    assert "\n" not in warnings[0] and str(moved) in warnings[0]
    # a's tables stay stored but are no longer those of a committed run.
    assert set(store.table("frames")["run_id"]) == {"b"}
    assert store.run_ids() == {"b"}  # so a resumed sweep runs it again
    assert [w.path for w in store.quarantined] == [tmp_path / "runs" / "a.parquet"]
    quarantine_log.clear()
    assert ResultsStore(tmp_path).query("select count(*) as n from runs")["n"].tolist() == [1]
    assert quarantine_log.records == []  # warned once


@pytest.mark.parametrize("damage", ["truncated", "empty", "not parquet"])
def test_corrupt_table_file_is_quarantined_and_the_rest_is_queried(
    tmp_path: Path, quarantine_log: pytest.LogCaptureFixture, damage: str
) -> None:
    store = two_runs(tmp_path)
    bad = tmp_path / "tables" / "frames" / "b.parquet"
    if damage == "truncated":
        truncate(bad, 0.9)
    elif damage == "empty":
        bad.write_bytes(b"")
    else:
        bad.write_text("run_id,frame\nb,1\n")
    assert store.table("frames")["run_id"].tolist() == ["a", "a"]
    assert store.runs()["run_id"].tolist() == ["a", "b"]
    assert (tmp_path / ".quarantine" / "tables" / "frames" / "b.parquet").is_file()
    assert len(quarantine_log.records) == 1


def test_corrupt_failure_and_sweep_files_are_quarantined(
    tmp_path: Path, quarantine_log: pytest.LogCaptureFixture
) -> None:
    store = two_runs(tmp_path)
    store.write_failure("c", {"error": "boom"})
    store.write_sweep("s-1", {"sweep": "s"})
    truncate(tmp_path / "failures" / "c.parquet")
    truncate(tmp_path / "sweeps" / "s-1.parquet")
    assert load_failures(tmp_path).empty
    assert store.query("select count(*) as n from runs")["n"].tolist() == [2]
    assert len(quarantine_log.records) == 2


def test_a_second_corrupt_copy_does_not_overwrite_the_first_in_quarantine(
    tmp_path: Path, quarantine_log: pytest.LogCaptureFixture
) -> None:
    store = two_runs(tmp_path)
    for _ in range(2):
        store.write(record("a", {"missed_rate": 0.25}))
        truncate(tmp_path / "runs" / "a.parquet")
        assert store.query("select run_id from runs")["run_id"].tolist() == ["b"]
    assert len(list((tmp_path / ".quarantine" / "runs").iterdir())) == 2


def test_a_store_that_cannot_move_a_corrupt_file_still_skips_it(
    tmp_path: Path, quarantine_log: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = two_runs(tmp_path)
    truncate(tmp_path / "runs" / "a.parquet")
    real = os.replace

    def read_only(src: object, dst: object) -> None:
        if ".quarantine" in str(dst):
            raise PermissionError(13, "Permission denied")
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", read_only)
    assert store.query("select run_id from runs")["run_id"].tolist() == ["b"]
    assert (tmp_path / "runs" / "a.parquet").exists()
    assert "cannot move it" in quarantine_log.records[0].getMessage()


def test_sql_mistakes_quarantine_nothing(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    for sql in ("select nope from runs", "select * from read_parquet('/nonexistent.parquet')"):
        with pytest.raises(UserError, match="query failed"):
            store.query(sql)
    assert not (tmp_path / ".quarantine").exists()


def test_cli_query_reports_quarantine_in_one_line(tmp_path: Path) -> None:
    two_runs(tmp_path / "res")
    truncate(tmp_path / "res" / "runs" / "a.parquet")
    result = subprocess.run(
        [sys.executable, "-m", "mqoe", "results", "query", "select run_id from runs",
         "--results", str(tmp_path / "res"), "--format", "csv"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "run_id\nb\n"
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "a.parquet" in lines[0] and ".quarantine" in lines[0], lines
