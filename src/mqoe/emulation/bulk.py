"""Bulk flows through the testbed: the calibration checks behind the tests (rate, queue
delay, receiver controls). Each flow goes from the competitor host to its own sink port
on the client; a sink may apply a receiver rule to its socket."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqoe.emulation.agent import SINK_PORT
from mqoe.emulation.launch import AgentSpec, delay_line, launch
from mqoe.emulation.topology import CLIENT_ADDR, BottleneckSpec, Topology, require_testbed


@dataclass(frozen=True)
class BulkResult:
    goodput_kbps: list[float]  # per flow: payload rate over the measured window
    srtt_ms: list[list[float]]  # per flow: the sender's srtt, once per second
    delay_line: dict[str, Any]
    qdisc: dict[str, int]


def run_bulk(
    bottleneck: BottleneckSpec,
    receivers: Sequence[str],
    *,
    duration_s: float = 8.0,
    skip_s: float = 2.0,
    rtt_ms: float = 4.0,
    cc: str = "cubic",
) -> BulkResult:
    """One cubic flow per entry of ``receivers`` (a receiver-rule spec, "" = none), all
    for ``duration_s``; goodput is averaged after ``skip_s`` (slow start excluded)."""
    require_testbed()
    agents = [delay_line(rtt_ms, duration_s)]
    for k, receiver in enumerate(receivers):
        port = SINK_PORT + k
        agents.append(AgentSpec(f"sink{k}", "cli", "sink", {
            "addr": CLIENT_ADDR, "port": port, "sample_s": 1.0, "receiver": receiver}))  # fmt: skip
        agents.append(AgentSpec(f"sender{k}", "cmp", "sender", {
            "sink": CLIENT_ADDR, "port": port, "cc": cc, "start_s": 0.0,
            "stop_s": duration_s}))  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="mqoe-testbed-") as tmp, Topology(bottleneck) as topo:
        out = launch(topo, agents, duration_s, Path(tmp))
        qdisc = topo.qdisc_stats()
    first, last = int(skip_s), int(duration_s) - 1  # whole 1 s bins inside the run
    goodput = [
        sum(out[f"sink{k}"]["bins"][first:last]) * 8 / 1e3 / (last - first)
        for k in range(len(receivers))
    ]
    srtt = [[s[1] for s in out[f"sender{k}"]["samples"]] for k in range(len(receivers))]
    return BulkResult(goodput, srtt, out["delayline"], qdisc)
