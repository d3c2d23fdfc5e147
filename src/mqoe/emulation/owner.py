"""Who owns a testbed run's resources, and whether that owner is still alive.

A run's namespaces and its run folder carry its owner in their names: the orchestrator's
pid and that process's start time (``/proc/PID/stat`` field 22, clock ticks since boot),
as ``<pid>.<start>``. The pid alone is not enough, since pids are reused: after a crash, a
later process (even the next testbed run) may get the dead owner's pid. A process with
that pid *and* that start time is the owner; none means the run is dead and its
resources may go. Names from before this record carry the pid only and are judged by it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

FOLDER_PREFIX = "mqoe-testbed-"  # every run folder of ours, in the temporary directory
_TAG = re.compile(r"^(\d+)(?:\.(\d+))?$")
_FOLDER = re.compile(rf"^{FOLDER_PREFIX}(\d+\.\d+)-")


@dataclass(frozen=True)
class Owner:
    """The process that owns a run (the orchestrator, which creates and removes it)."""

    pid: int
    start_ticks: int | None  # None: a name from before start times were recorded

    @classmethod
    def current(cls) -> Owner:
        start = _start_ticks(os.getpid())
        assert start is not None  # our own /proc entry exists while we run
        return cls(os.getpid(), start)

    @classmethod
    def from_tag(cls, tag: str) -> Owner | None:
        """Parse ``<pid>.<start>`` (or a bare ``<pid>``); None if it is neither."""
        match = _TAG.match(tag)
        if not match:
            return None
        return cls(int(match.group(1)), int(match.group(2)) if match.group(2) else None)

    @property
    def tag(self) -> str:
        return f"{self.pid}.{self.start_ticks}" if self.start_ticks is not None else str(self.pid)

    def alive(self) -> bool:
        start = _start_ticks(self.pid)
        return start is not None and self.start_ticks in (None, start)


def _start_ticks(pid: int) -> int | None:
    """The process's start time, or None if there is no such process (or only its zombie,
    which no longer runs anything and may be about to disappear)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ")"
    fields = text.rpartition(")")[2].split()
    if fields[0] in ("Z", "X"):  # field 3, the state: zombie or dead
        return None
    return int(fields[19])  # field 22


def run_folder() -> tempfile.TemporaryDirectory[str]:
    """A run's private folder (agents' configs, logs and results), named after its owner."""
    return tempfile.TemporaryDirectory(prefix=f"{FOLDER_PREFIX}{Owner.current().tag}-")


def remove_dead_run_folders(*, include_live: bool = False) -> list[str]:
    """Remove the run folders whose owner is gone (``include_live``: all of them).

    Only real directories owned by us are considered: the temporary directory is shared,
    and a symlink or someone else's folder with our prefix is not ours to delete.
    Folders named before owners were recorded are dead when no process holds anything in
    them open (a live run keeps its agents' logs open for the whole run).
    """
    root = Path(os.path.realpath(tempfile.gettempdir()))
    removed = []
    for path in sorted(root.glob(FOLDER_PREFIX + "*")):
        if not _ours(path):
            continue
        match = _FOLDER.match(path.name)
        owner = Owner.from_tag(match.group(1)) if match else None
        alive = owner.alive() if owner else _held_open(path)
        if include_live or not alive:
            with contextlib.suppress(FileNotFoundError):  # another cleanup got there first
                shutil.rmtree(path)
            removed.append(str(path))
    return removed


def _ours(path: Path) -> bool:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def _held_open(folder: Path) -> bool:
    """Does any process have a file in ``folder`` open, or its working directory there?"""
    inside = f"{folder}/"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):  # processes come and go while we look
            for link in (proc / "cwd", *(proc / "fd").iterdir()):
                with contextlib.suppress(OSError):
                    target = os.readlink(link)
                    if target == str(folder) or target.startswith(inside):
                        return True
    return False
