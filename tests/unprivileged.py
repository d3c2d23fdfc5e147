"""Run ``mqoe`` as an unprivileged user, so unreadable paths are really unreadable.

Root reads a mode-000 file anyway, so permission errors can only be seen as another user:
``setpriv`` drops to ``nobody``. Tests that need it skip when this process is not root,
when ``setpriv`` is missing, or when ``nobody`` cannot reach the interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# This interpreter, started as user nobody.
_AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable]


def _can_drop() -> str | None:
    if os.name != "posix" or os.geteuid() != 0:
        return "needs root to drop to an unprivileged user"
    if shutil.which("setpriv") is None:
        return "needs setpriv (util-linux)"
    probe = subprocess.run(
        [*_AS_NOBODY, "-c", "import mqoe"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        return f"nobody cannot import mqoe here: {probe.stderr.strip()[-200:]}"
    return None


def skip_unless_nobody_starts_interpreters() -> None:
    """Skip unless ``nobody`` can start a second interpreter, as a sweep's workers do:
    where the interpreter lies behind a directory only root may enter (a pyenv build under
    ``/root``), a process started as nobody still runs but its children cannot exec."""
    reason = _can_drop()
    if reason is not None:
        pytest.skip(reason)
    probe = subprocess.run(
        [*_AS_NOBODY, "-c",
         "import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-c', '']).returncode)"],
        capture_output=True, text=True, check=False, cwd="/",
    )  # fmt: skip
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        pytest.skip(f"nobody cannot start a worker interpreter here: {last[-200:]}")


def run_as_nobody(args: list[str], timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m mqoe ARGS`` as user nobody (skips the test when that is impossible)."""
    return _python_as_nobody(["-m", "mqoe", *args], timeout_s)


def run_python_as_nobody(script: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -c SCRIPT`` as user nobody (skips the test when that is impossible)."""
    return _python_as_nobody(["-c", script], timeout_s)


def _python_as_nobody(args: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    reason = _can_drop()
    if reason is not None:
        pytest.skip(reason)
    return subprocess.run(
        [*_AS_NOBODY, *args],
        capture_output=True, text=True, check=False, timeout=timeout_s, cwd="/",
    )  # fmt: skip


@contextmanager
def world_dir() -> Iterator[Path]:
    """A fresh folder every user can enter (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="mqoe-perm-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in sorted(folder.rglob("*"), reverse=True):
            path.chmod(0o700)
        shutil.rmtree(folder, ignore_errors=True)


# One process for several runs (starting Python as nobody costs seconds): each argv goes
# through main() with stderr captured; anything escaping main() comes back as a traceback.
_BATCH = """
import contextlib, io, json, traceback
from mqoe.cli.main import main
results = []
for argv in json.loads(RUNS):
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        try:
            code = main(argv)
        except BaseException:
            code, buffer = -1, io.StringIO(traceback.format_exc())
    results.append([code, buffer.getvalue()])
print(json.dumps(results))
"""


def one_line_errors_as_nobody(runs: list[list[str]]) -> list[str]:
    """``mqoe ARGV`` for each argv, as user nobody in one process: each must exit 2 with
    a one-line error on stderr (no traceback), which is returned in order."""
    script = _BATCH.replace("RUNS", repr(json.dumps(runs)))
    result = run_python_as_nobody(script)
    assert result.returncode == 0, result.stderr
    messages = []
    for (code, stderr), argv in zip(json.loads(result.stdout), runs, strict=True):
        message = stderr.strip()
        assert code == 2, (argv, message)
        assert "Traceback" not in message and "\n" not in message, message
        messages.append(message)
    return messages
