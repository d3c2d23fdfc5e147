"""Bulk flows alone on the bottleneck, real and simulated: the calibration checks behind
the tests (rate, queue delay, receiver controls) and the cross-check of loss recovery.

Real: each flow goes from the competitor host to its own sink port on the client; a
sink may apply a receiver rule to its socket; Linux's own TCP counters (timeouts, tail
loss probes, fast retransmits, …) are read from the sender's namespace afterwards.
Simulated: the same link (rate, buffer, RTT) and cubic flows on the packet-level model,
with the model's counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqoe.emulation.agent import SINK_PORT
from mqoe.emulation.launch import AgentSpec, delay_line, launch
from mqoe.emulation.owner import run_folder
from mqoe.emulation.topology import (
    CLIENT_ADDR,
    BottleneckSpec,
    Topology,
    cleanup,
    require_testbed,
)
from mqoe.errors import UserError

# Linux counters worth comparing with the model's (TcpExt / Tcp names, as nstat shows).
LINUX_COUNTERS = (
    "TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "TcpExtTCPLossProbeRecovery",
    "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans", "TcpExtTCPSpuriousRTOs",
    "TcpExtTCPSackRecovery", "TcpExtTCPLostRetransmit", "TcpExtTCPHystartTrainDetect",
    "TcpExtTCPHystartDelayDetect",
)  # fmt: skip


@dataclass(frozen=True)
class BulkResult:
    goodput_kbps: list[float]  # per flow: payload rate over the measured window
    srtt_ms: list[list[float]]  # per flow: the sender's srtt, once per second
    delay_line: dict[str, Any] = field(default_factory=dict)
    qdisc: dict[str, int] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)  # sender-side TCP counters


def run_bulk(
    bottleneck: BottleneckSpec,
    receivers: Sequence[str],
    *,
    duration_s: float = 8.0,
    skip_s: float = 2.0,
    rtt_ms: float = 4.0,
    cc: str = "cubic",
) -> BulkResult:
    """One flow per entry of ``receivers`` (a receiver-rule spec, "" = none), all for
    ``duration_s``; goodput is averaged after ``skip_s`` (slow start excluded)."""
    _check_window(duration_s, skip_s)
    require_testbed()
    cleanup()  # a killed run removes nothing itself: its leftovers go before we add ours
    agents = [delay_line(rtt_ms, duration_s)]
    for k, receiver in enumerate(receivers):
        port = SINK_PORT + k
        agents.append(AgentSpec(f"sink{k}", "cli", "sink", {
            "addr": CLIENT_ADDR, "port": port, "sample_s": 1.0, "receiver": receiver}))  # fmt: skip
        agents.append(AgentSpec(f"sender{k}", "cmp", "sender", {
            "sink": CLIENT_ADDR, "port": port, "cc": cc, "start_s": 0.0,
            "stop_s": duration_s}))  # fmt: skip
    with run_folder() as tmp, Topology(bottleneck) as topo:
        out = launch(topo, agents, duration_s, Path(tmp))
        qdisc = topo.qdisc_stats()
        counters = topo.tcp_counters("cmp")
    first, last = int(skip_s), int(duration_s) - 1  # whole 1 s bins inside the run
    goodput = [
        sum(out[f"sink{k}"]["bins"][first:last]) * 8 / 1e3 / (last - first)
        for k in range(len(receivers))
    ]
    srtt = [[s[1] for s in out[f"sender{k}"]["samples"]] for k in range(len(receivers))]
    picked = {k: counters.get(k, 0) for k in LINUX_COUNTERS}
    return BulkResult(goodput, srtt, out["delayline"], qdisc, picked)


def _check_window(duration_s: float, skip_s: float) -> None:
    # goodput is averaged over whole seconds from skip_s to the last whole second
    if int(duration_s) - 1 <= int(skip_s):
        raise UserError(f"a {duration_s:g} s bulk run has no whole second to measure after "
                        f"{skip_s:g} s of slow start and before its last second")  # fmt: skip


def simulate_bulk(
    bottleneck: BottleneckSpec,
    flows: int,
    *,
    duration_s: float = 8.0,
    skip_s: float = 2.0,
    rtt_ms: float = 4.0,
) -> BulkResult:
    """The same experiment on the packet-level model (the spiral scenario's topology)."""
    _check_window(duration_s, skip_s)
    from mqoe.device.net import BulkFlow, Network, TcpConfig
    from mqoe.engine import Environment, ms, seconds

    env = Environment(1)
    net = Network(env)
    one_way = ms(rtt_ms / 4)  # two hops each way, as in the spiral scenario
    for k in range(flows):
        net.add_link(f"s{k}", "router", 100e6, one_way, 1 << 22)
    net.add_link("router", "client", bottleneck.rate_mbps * 1e6, one_way, bottleneck.limit_bytes,
                 reverse_queue_bytes=1 << 22)  # fmt: skip
    bulks = [BulkFlow(net, f"s{k}", "client", TcpConfig()) for k in range(flows)]
    for bulk in bulks:
        bulk.start()
    env.run(seconds(skip_s))
    before = [b.bytes_received for b in bulks]
    env.run(seconds(duration_s - 1))
    span = duration_s - 1 - skip_s
    goodput = [(b.bytes_received - x) * 8 / 1e3 / span for b, x in zip(bulks, before, strict=True)]
    senders = [b.connection.sender for b in bulks]
    counters = {
        "TcpRetransSegs": sum(s.retransmits for s in senders),
        "TcpExtTCPTimeouts": sum(s.timeouts for s in senders),
        "TcpExtTCPFastRetrans": sum(s.fast_retransmits for s in senders),
        "TcpExtTCPLostRetransmit": sum(s.lost_retransmits for s in senders),
    }
    drops = net.links[("router", "client")].drops
    return BulkResult(goodput, [[] for _ in bulks], {}, {"dropped": drops}, counters)
