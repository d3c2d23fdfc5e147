"""Run ownership (pid + start time), dead runs' folders, and agents dying with their parent.

No root needed: these are the pieces the root tests in test_leftovers_root.py rely on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mqoe.emulation import owner as owner_module
from mqoe.emulation.agent import ORPHANED_EXIT
from mqoe.emulation.owner import Owner, remove_dead_run_folders, run_folder


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_the_owner_is_alive_only_with_its_pid_and_its_start_time() -> None:
    me = Owner.current()
    assert me.alive() and me.start_ticks is not None
    assert not Owner(me.pid, me.start_ticks + 1).alive()  # pid reused by a later process
    assert not Owner(_dead_pid(), me.start_ticks).alive()
    assert Owner(me.pid, None).alive()  # names from before start times: the pid decides


def test_a_zombie_owner_is_dead() -> None:
    proc = subprocess.Popen(["true"])
    owner = Owner(proc.pid, owner_module._start_ticks(proc.pid))
    deadline = time.monotonic() + 5
    while owner.alive() and time.monotonic() < deadline:  # exited, not yet reaped
        time.sleep(0.01)
    assert not owner.alive()
    assert Path(f"/proc/{proc.pid}").exists()  # still a zombie: we have not waited
    proc.wait()


@pytest.mark.parametrize("tag", ["123.456", "123", "", "12.", "1.2.3", "x"])
def test_tags_round_trip_or_are_refused(tag: str) -> None:
    parsed = Owner.from_tag(tag)
    assert (parsed.tag if parsed else None) == (tag if tag in ("123.456", "123") else None)


@pytest.fixture
def tmp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory the run folders live in, private to this test."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_dead_runs_folders_go_and_live_runs_folders_stay(tmp_root: Path) -> None:
    me = Owner.current()
    assert me.start_ticks is not None
    dead = tmp_root / f"mqoe-testbed-{_dead_pid()}.{me.start_ticks}-abc"
    reused = tmp_root / f"mqoe-testbed-{me.pid}.{me.start_ticks + 1}-abc"
    for folder in (dead, reused):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "agent.log").write_text("x")
    with run_folder() as live:
        assert Path(live).name.startswith(f"mqoe-testbed-{me.tag}-")
        removed = remove_dead_run_folders()
        assert sorted(removed) == sorted(str(f) for f in (dead, reused))
        assert Path(live).is_dir() and not dead.exists() and not reused.exists()
        assert remove_dead_run_folders(include_live=True) == [live]


def test_an_old_style_folder_goes_only_when_nobody_holds_it_open(tmp_root: Path) -> None:
    held, free = tmp_root / "mqoe-testbed-k2j4h1_x", tmp_root / "mqoe-testbed-9a8b7c6d"
    held.mkdir()
    free.mkdir()
    with open(held / "agent.log", "w"):  # a live run of an older version keeps its logs open
        assert remove_dead_run_folders() == [str(free)]
    assert held.is_dir()
    assert remove_dead_run_folders() == [str(held)]


def test_cleanup_never_follows_a_symlink_or_deletes_a_stranger_s_folder(tmp_root: Path) -> None:
    target = tmp_root / "precious"
    target.mkdir()
    (target / "file").write_text("keep")
    (tmp_root / f"mqoe-testbed-{_dead_pid()}.1-abc").symlink_to(target)
    assert remove_dead_run_folders(include_live=True) == []
    assert (target / "file").read_text() == "keep"
    if os.geteuid() == 0:
        stranger = tmp_root / f"mqoe-testbed-{_dead_pid()}.1-def"
        stranger.mkdir()
        os.chown(stranger, 65534, 65534)  # nobody's: not ours to delete, even as root
        assert remove_dead_run_folders() == []
        assert stranger.is_dir()


# A parent (the "orchestrator") that starts a child which calls die_with_parent, reports
# the child's pid, then waits to be killed; the child would otherwise sleep a minute.
_CHILD = (
    "from mqoe.emulation.agent import die_with_parent as d; d({ppid}); import time; time.sleep(60)"
)
_PARENT = f"""
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", {_CHILD!r}.format(ppid=os.getpid())])
print(child.pid, flush=True)
child.wait()
"""


def test_a_child_dies_within_a_second_of_its_killed_parent() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(1.0)  # well past the child's prctl
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 1.0
    while owner_module._start_ticks(child) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert owner_module._start_ticks(child) is None  # gone, or a zombie awaiting its reaper


def test_a_child_whose_parent_is_already_gone_exits_at_once() -> None:
    # The race: the parent died before the prctl, so we were re-parented and no signal
    # will come. Simulated by naming a parent that is not ours.
    code = _CHILD.format(ppid=_dead_pid())
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30, check=False)  # fmt: skip
    assert proc.returncode == ORPHANED_EXIT
    assert "is gone" in proc.stderr  # the reason, in the agent's log
