"""Start testbed agents in their namespaces, start them together, collect their results.

Each agent is our own child process (``ip netns exec NS python -m
mqoe.emulation.agent``); it is stopped by its pid if it overruns, never by name, and it
dies with us if we are killed (it is told our pid: ``agent.die_with_parent``).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import mqoe
from mqoe.emulation.topology import TUN_NAME, Topology

_READY_TIMEOUT_S = 60.0  # agents import Python and bind sockets (slow on a busy machine)
_GRACE_S = 15.0
_START_MARGIN_NS = 200_000_000


@dataclass(frozen=True)
class AgentSpec:
    name: str  # unique in one launch; names the result
    host: str  # topology role: cli | rtr | srv | cmp
    role: str  # agent role (mqoe.emulation.agent.ROLES)
    config: dict[str, Any]


def delay_line(rtt_ms: float, until_s: float) -> AgentSpec:
    """The router's delay line: half the RTT per pass (a packet crosses it once each way)."""
    config = {"tun": TUN_NAME, "delay_ms": rtt_ms / 2, "until_s": until_s + 5}
    return AgentSpec("delayline", "rtr", "delayline", config)


def launch(
    topo: Topology,
    agents: Sequence[AgentSpec],
    until_s: float,
    tmp: Path,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the agents for ``until_s`` of wall time; the delay line (if any) is stopped
    last. Returns each agent's JSON result by name."""
    procs: dict[str, subprocess.Popen[str]] = {}
    logs: dict[str, IO[str]] = {}
    env = agent_env()
    try:
        for agent in agents:
            config = {**agent.config, "out": str(tmp / f"{agent.name}.json"),
                      "parent_pid": os.getpid()}  # fmt: skip
            config.setdefault("until_s", until_s)
            logs[agent.name] = open(tmp / f"{agent.name}.log", "w+")  # noqa: SIM115
            procs[agent.name] = subprocess.Popen(
                ["ip", "netns", "exec", topo.ns[agent.host], sys.executable, "-m",
                 "mqoe.emulation.agent", agent.role, json.dumps(config)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=logs[agent.name],
                text=True, env=env,
            )  # fmt: skip
        for name, proc in procs.items():
            _await_ready(name, proc, logs[name])
        t0 = time.monotonic_ns() + _START_MARGIN_NS
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.write(f"{t0}\n")
            proc.stdin.flush()
        if log:
            log(f"running {until_s:.0f} s of wall time in namespaces {topo.tag}")
        deadline = time.monotonic() + until_s + _GRACE_S
        for name, proc in procs.items():
            if name != "delayline":
                proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        if "delayline" in procs:
            stdin = procs["delayline"].stdin
            assert stdin is not None
            stdin.close()  # stops the delay line, which then writes its statistics
            procs["delayline"].wait(timeout=10)
        return {name: _result(name, procs[name], tmp, logs[name]) for name in procs}
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"testbed agent did not finish in time: {exc}") from None
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()  # by pid: our own child
                proc.wait(timeout=5)
        for handle in logs.values():
            handle.close()


def agent_env() -> dict[str, str]:
    """The agents' environment: ours, with mqoe's own import root as the only
    PYTHONPATH entry. Never our whole ``sys.path``: under pytest it holds the tests'
    folders, whose modules would shadow the standard library in a fresh interpreter
    (a ``tests/encodings.py`` once stopped every agent at start-up)."""
    root = str(Path(mqoe.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": root}


def _await_ready(name: str, proc: subprocess.Popen[str], log: IO[str]) -> None:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if sel.select(_READY_TIMEOUT_S) and proc.stdout.readline().strip() == "ready":
            return
    proc.kill()
    proc.wait(timeout=5)
    raise RuntimeError(f"testbed agent {name} did not start: {_tail(log)}")


def _result(name: str, proc: subprocess.Popen[str], tmp: Path, log: IO[str]) -> Any:
    path = tmp / f"{name}.json"
    if not path.exists():
        raise RuntimeError(f"testbed agent {name} exited {proc.returncode}: {_tail(log)}")
    return json.loads(path.read_text())


def _tail(log: IO[str]) -> str:
    log.flush()
    log.seek(0)
    lines = log.read().strip().splitlines()
    return " | ".join(lines[-3:]) or "no output"
