"""The environment testbed agents start in (no root needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mqoe
from mqoe.emulation.launch import agent_env


def test_agents_get_only_mqoes_import_root_on_their_path() -> None:
    # pytest's sys.path holds the tests' folders; a module there named like a standard
    # library one (tests/encodings.py, once) stops a fresh interpreter at start-up
    env = agent_env()
    assert env["PYTHONPATH"].split(os.pathsep) == [str(Path(mqoe.__file__).resolve().parent.parent)]
    assert not any(Path(p).name == "tests" for p in env["PYTHONPATH"].split(os.pathsep))


def test_a_fresh_interpreter_with_the_agents_environment_imports_the_agent(tmp_path: Path) -> None:
    (tmp_path / "encodings.py").write_text("raise SystemExit('shadowed the stdlib')\n")
    done = subprocess.run(
        [sys.executable, "-c", "import encodings, mqoe.emulation.agent; print(encodings.__file__)"],
        env=agent_env(), cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).parent.name == "encodings"  # the stdlib package
