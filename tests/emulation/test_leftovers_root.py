"""Dead testbed runs leave nothing behind for long, and live runs are never touched.

Real runs of ``mqoe testbed`` in subprocesses, SIGKILLed mid-run: their agents must die
with them (PR_SET_PDEATHSIG), and the next testbed command, of another kind, must remove
their namespaces and their run folder; a live run's must survive. Root only, ~20 s
(and ~20 s more in the slow run).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqoe.cli.main import main
from mqoe.emulation import topology
from mqoe.emulation.owner import Owner
from mqoe.emulation.topology import BottleneckSpec, Topology, ip

_WHY = topology.unavailable_reason()
pytestmark = pytest.mark.skipif(bool(_WHY), reason=f"testbed unavailable: {_WHY}")


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("mqoe-testbed-*"))


def _namespaces_of(pid: int) -> list[str]:
    # the owner's pid comes first in the tag, with or without its start time after it
    return [n for n in topology.list_namespaces() if re.match(rf"mqoe-tb-{pid}[.-]", n)]


def _pids_in(namespaces: list[str]) -> set[int]:
    return {int(p) for ns in namespaces for p in ip("netns", "pids", ns, check=False).split()}


def _gone(pid: int) -> bool:
    """No such process, or only its zombie (dead, waiting for whoever reaps orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def _bottleneck_sent_bytes(namespaces: list[str]) -> int:
    rtr = [n for n in namespaces if n.endswith("-rtr")]
    if not rtr:
        return 0
    text = subprocess.run(["tc", "-s", "-n", rtr[0], "qdisc", "show"], capture_output=True,
                          text=True, check=False).stdout  # fmt: skip
    match = re.search(r"qdisc tbf .*?Sent (\d+) bytes", text, re.S)
    return int(match.group(1)) if match else 0


def _start_run(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "mqoe", "testbed", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip


def _await_traffic(proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> list[str]:
    """Wait until the run's agents have started and video or bulk bytes cross the tbf."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        names = _namespaces_of(proc.pid)
        if _bottleneck_sent_bytes(names) > 20_000:
            return names
        time.sleep(0.1)
    raise AssertionError("the testbed run never got going")


@pytest.fixture
def runs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Started runs; any still going at the end is stopped (by pid: our own child)."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)


def _kill_mid_run(runs: list[subprocess.Popen[bytes]], *args: str) -> tuple[list[str], set[Path]]:
    """Start a run, SIGKILL it once traffic flows, and check that its agents die with it
    (PR_SET_PDEATHSIG, not their own deadlines). Returns its namespaces and folder."""
    before = _folders()
    killed = _start_run(*args)
    runs.append(killed)
    namespaces = _await_traffic(killed)
    agents = _pids_in(namespaces)
    folders = _folders() - before
    assert len(namespaces) == 4 and len(agents) >= 3 and len(folders) == 1
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=5)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and not all(_gone(p) for p in agents):
        time.sleep(0.05)
    assert [p for p in agents if not _gone(p)] == []
    assert set(namespaces) <= set(topology.list_namespaces())  # nobody cleaned up yet
    assert all(folder.is_dir() for folder in folders)
    return namespaces, folders


def _assert_removed(namespaces: list[str], folders: set[Path]) -> None:
    assert not set(namespaces) & set(topology.list_namespaces())
    assert not any(folder.exists() for folder in folders)
    pid = int(re.match(r"mqoe-tb-(\d+)", namespaces[0]).group(1))  # type: ignore[union-attr]
    assert f"mtb{pid:x}x" not in ip("-o", "link", "show")


def test_a_killed_runs_agents_die_with_it_and_check_removes_its_leftovers(
    runs: list[subprocess.Popen[bytes]],
) -> None:
    namespaces, folders = _kill_mid_run(runs, "bulk", "--duration-s", "30")
    assert main(["testbed", "check"]) == 0
    _assert_removed(namespaces, folders)


@pytest.mark.slow  # ~20 s: a spiral takes ~10 s to get going here, a bulk run as long
def test_the_next_bulk_run_removes_what_a_killed_spiral_left(
    runs: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    namespaces, folders = _kill_mid_run(runs, "spiral", "--quick", "--out", str(tmp_path))
    assert main(["testbed", "bulk", "--duration-s", "4"]) == 0
    _assert_removed(namespaces, folders)


def test_a_live_runs_namespaces_folder_and_agents_survive_another_commands_cleanup(
    runs: list[subprocess.Popen[bytes]],
) -> None:
    dead = Owner(_dead_pid(), 1)
    crashed = Topology(BottleneckSpec(5.0, 15000), owner=dead)
    crashed.up()  # never taken down, as if its owner had been killed
    dead_folder = Path(tempfile.mkdtemp(prefix=f"mqoe-testbed-{dead.tag}-"))
    before = _folders()
    live = _start_run("bulk", "--duration-s", "4")
    runs.append(live)
    live_namespaces = _await_traffic(live)
    live_agents = _pids_in(live_namespaces)
    live_folders = _folders() - before
    assert len(live_namespaces) == 4 and len(live_agents) == 3 and len(live_folders) == 1

    assert main(["testbed", "check"]) == 0
    _assert_removed(list(crashed.ns.values()), {dead_folder})  # the dead run's went …
    assert set(live_namespaces) <= set(topology.list_namespaces())  # … the live run's stayed
    assert all(folder.is_dir() for folder in live_folders)
    assert not any(_gone(p) for p in live_agents)
    _, stderr = live.communicate(timeout=30)
    assert live.returncode == 0, stderr.decode()  # and it finished its run undisturbed
    assert not set(live_namespaces) & set(topology.list_namespaces())
    assert not any(folder.exists() for folder in live_folders)


def test_leftovers_of_a_dead_owner_whose_pid_was_reused_are_removed() -> None:
    """The owner's pid alone is not enough: a later process may have its pid (here: us)."""
    stat = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
    started = int(stat[19])  # field 22 of /proc/PID/stat: start time in clock ticks
    stale = f"mqoe-tb-{os.getpid()}.{started - 1}-7-cli"
    ip("netns", "add", stale)
    try:
        assert main(["testbed", "check"]) == 0
        assert stale not in topology.list_namespaces()
    finally:
        ip("netns", "del", stale, check=False)


def test_a_terminated_bulk_run_removes_its_own_namespaces_and_folder(
    runs: list[subprocess.Popen[bytes]],
) -> None:
    before = _folders()
    run = _start_run("bulk", "--duration-s", "30")
    runs.append(run)
    namespaces = _await_traffic(run)
    folders = _folders() - before
    run.terminate()  # `kill PID`: torn down like Ctrl-C, as spiral runs are
    run.wait(timeout=15)
    assert not set(namespaces) & set(topology.list_namespaces())
    assert folders and not any(folder.exists() for folder in folders)
