"""``mqoe testbed spiral``: the spiral scenario over the Linux TCP stack, and its sim twin.

One set of ``--set key=value`` parameters (:class:`mqoe.workloads.spiral.SpiralParams`)
drives both sides: :func:`run_real` builds the namespaces and runs real endpoints on a
wall-clock schedule; :func:`run_simulated` runs the ``spiral`` scenario. Both return a
:class:`~mqoe.results.store.RunRecord` whose metrics come from the same function
(:func:`mqoe.workloads.spiral.spiral_metrics`) over tables with the same columns, and
:func:`metric_rows` turns either into ``metrics.csv`` rows (figure ``spiral-real`` or
``spiral-sim``, same conditions), so ``mqoe compare sim.csv real.csv`` compares like
with like.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from mqoe import __version__
from mqoe.emulation.agent import SINK_PORT
from mqoe.emulation.bulk import LINUX_COUNTERS
from mqoe.emulation.launch import AgentSpec, delay_line, launch
from mqoe.emulation.owner import run_folder
from mqoe.emulation.receiver import make_receiver_rule
from mqoe.emulation.topology import (
    CLIENT_ADDR,
    SERVER_ADDR,
    BottleneckSpec,
    Topology,
    cleanup,
    require_testbed,
)
from mqoe.errors import UserError
from mqoe.metrics.units import unit_of
from mqoe.results import MetricRow
from mqoe.results.store import RunRecord
from mqoe.workloads.base import params_dict, parse_params
from mqoe.workloads.spiral import SPIRAL_METRICS, SpiralParams, spiral_metrics

PROFILE = "nexus-5"  # the simulator's client phone (spiral is network-bound)
SEED = 1
# Time-scaled schedule for --quick: a 16 s buffer is full after ~10 s, so the client
# idles between segments before the competitor starts at 20 s; 16 s are averaged after
# a 4 s settling time. About 45 s of wall time with setup.
QUICK: Mapping[str, str] = {
    "duration_s": "40",
    "competitor_start_s": "20",
    "settle_s": "4",
    "buffer_max_s": "16",
}
METRICS = SPIRAL_METRICS  # a run's metrics in metrics.csv, in order
CONDITION_KEYS = ("buffer_kbit", "mode", "c", "connection", "restart_after_idle")


@dataclass
class RealRun:
    """What a testbed run measured, besides the spiral's own tables and metrics."""

    record: RunRecord
    delay_line: dict[str, float] = field(default_factory=dict)
    qdisc: dict[str, int] = field(default_factory=dict)
    idle_rtt_ms: float = math.nan
    receiver_applied: list[Any] = field(default_factory=list)
    tcp_counters: dict[str, dict[str, int]] = field(default_factory=dict)  # per sender host
    bottleneck: BottleneckSpec | None = None


def spiral_params(overrides: Mapping[str, str], quick: bool = False) -> SpiralParams:
    """The scenario's parameters from ``--set`` pairs (``--quick`` defaults first)."""
    merged = {**(QUICK if quick else {}), **overrides}
    params: SpiralParams = parse_params(SpiralParams, merged, "spiral")
    return params


def run_simulated(overrides: Mapping[str, str], quick: bool = False) -> RunRecord:
    """The simulator's side: the ``spiral`` scenario with exactly the same parameters."""
    from mqoe.device.profiles import load_profile
    from mqoe.workloads.runner import run_scenario

    merged = {**(QUICK if quick else {}), **overrides}
    return run_scenario("spiral", load_profile(PROFILE), SEED, merged)


def run_real(
    overrides: Mapping[str, str],
    quick: bool = False,
    *,
    receiver: str = "",
    burst_bytes: int = 0,
    log: Callable[[str], None] | None = None,
) -> RealRun:
    """Build the testbed, run the client and the competitor in real time, tear it down."""
    require_testbed()
    merged = {**(QUICK if quick else {}), **overrides}
    params = spiral_params(merged)
    if params.mode in ("bba", "bola") or params.rule:
        pass  # any rule works: the client builds it with the simulator's build_rule
    stale = cleanup()
    if stale and log:
        log(f"removed leftovers of earlier runs: {', '.join(stale)}")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    wall0 = time.perf_counter()
    bottleneck = BottleneckSpec(params.link_mbps, max(1, round(params.buffer_kbit * 125)))
    if burst_bytes:
        bottleneck = BottleneckSpec(bottleneck.rate_mbps, bottleneck.limit_bytes, burst_bytes)
    with run_folder() as tmp, Topology(bottleneck) as topo:
        _configure_tcp(topo, params)
        outputs = launch(topo, _agents(params, merged, receiver), params.duration_s, Path(tmp), log)
        qdisc = topo.qdisc_stats()
        counters = {role: topo.tcp_counters(role) for role in ("srv", "cmp")}
    run = _assemble(params, outputs, qdisc, started, time.perf_counter() - wall0)
    run.tcp_counters = {
        role: {k: v for k, v in c.items() if k in LINUX_COUNTERS} for role, c in counters.items()
    }
    run.bottleneck = bottleneck
    return run


def _configure_tcp(topo: Topology, params: SpiralParams) -> None:
    """Per-namespace TCP settings: what the simulator's TcpConfig says, in Linux terms."""
    cc = "cubic" if params.cc == "cubic" else "reno"
    persistent = params.connection == "persistent"
    iw = params.iw_segments or (10 if persistent else 4)
    for role in ("srv", "cmp", "cli"):
        # The default is only a fallback (a namespace may refuse cubic as its default,
        # as this kernel does): the agents set TCP_CONGESTION on every socket and check it.
        topo.sysctl(role, "net.ipv4.tcp_congestion_control", cc, check=False)
        topo.sysctl(role, "net.ipv4.tcp_slow_start_after_idle",
                    "1" if params.restart_after_idle else "0")  # fmt: skip
    topo.set_route_options("srv", initcwnd=iw)
    if not params.delayed_ack:
        topo.set_route_options("cli", quickack=1)


def _agents(params: SpiralParams, overrides: Mapping[str, str], receiver: str) -> list[AgentSpec]:
    cc = "cubic" if params.cc == "cubic" else "reno"
    until = params.duration_s
    comp_stop = min(params.competitor_end_s, params.duration_s)
    server = {"addr": SERVER_ADDR, "cc": cc, "until_s": until + 1}
    sink = {"addr": CLIENT_ADDR, "sample_s": params.sample_s, "port": SINK_PORT}
    if receiver and getattr(make_receiver_rule(receiver), "all_sockets", False):
        sink["receiver"] = receiver  # a phone-wide rule (NetPIS) controls the competitor too
    sender = {"sink": CLIENT_ADDR, "cc": cc, "port": SINK_PORT,
              "start_s": params.competitor_start_s, "stop_s": comp_stop}  # fmt: skip
    client = {"server": SERVER_ADDR, "params": dict(overrides), "receiver": receiver}
    return [
        delay_line(params.rtt_ms, until),
        AgentSpec("server", "srv", "server", server),
        AgentSpec("sink", "cli", "sink", sink),
        AgentSpec("sender", "cmp", "sender", sender),
        AgentSpec("client", "cli", "client", client),
    ]


def _assemble(
    params: SpiralParams,
    outputs: dict[str, Any],
    qdisc: dict[str, int],
    started: str,
    wall_s: float,
) -> RealRun:
    client = outputs["client"]
    segments = segments_frame(client["segments"])
    series = series_frame(params, client["bins"], outputs["sink"]["bins"])
    metrics: dict[str, float | int | bool | str] = dict(spiral_metrics(params, segments, series))
    metrics["video_retransmits"] = outputs["server"]["retransmits"]
    metrics["competitor_retransmits"] = outputs["sender"]["retransmits"]
    metrics["bottleneck_drops"] = qdisc.get("dropped", -1)
    metrics["rebuffer_s"] = client["rebuffer_s"]
    metrics["segments"] = len(segments)
    delay = outputs["delayline"]
    metrics["delay_line_cpu_fraction"] = delay["cpu_fraction"]
    metrics["delay_line_error_median_ms"] = delay["error_median_ms"]
    metrics["delay_line_error_p99_ms"] = delay["error_p99_ms"]
    metrics["delay_line_error_max_ms"] = delay["error_max_ms"]
    metrics["idle_rtt_ms"] = client.get("idle_rtt_ms", math.nan)
    samples = pd.DataFrame(outputs["sender"]["samples"], columns=["t_s", "srtt_ms", "cwnd"])
    server_log = pd.DataFrame(outputs["server"].get("requests", []),
                              columns=["t_s", "size_bytes", "cwnd", "ssthresh"])  # fmt: skip
    record = RunRecord(
        run_id=f"spiral-real-{int(time.time())}-{os.getpid()}",
        scenario="spiral-real",
        profile="testbed",
        seed=0,
        params=params_dict(params),
        mqoe_version=__version__,
        started_utc=started,
        wall_time_s=wall_s,
        sim_duration_s=params.duration_s,
        metrics=metrics,
        tables={
            "segments": segments,
            "timeseries": series,
            "competitor_tcp": samples,
            "video_cwnd_at_request": server_log,
        },
    )
    return RealRun(record, delay, qdisc, metrics["idle_rtt_ms"],  # type: ignore[arg-type]
                   client.get("receiver_applied", [])
                   + outputs["sink"].get("receiver_applied", []))  # fmt: skip


def segments_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The client's segments with the simulator's columns (throughput as it measured it)."""
    columns = ["segment", "representation", "rate_kbps", "size_bytes", "request_s", "done_s",
               "throughput_kbps", "buffer_s", "new_connection"]  # fmt: skip
    frame = pd.DataFrame(rows, columns=[c for c in columns if c != "throughput_kbps"])
    duration = (frame["done_s"] - frame["request_s"]).clip(lower=1e-9)
    frame["throughput_kbps"] = frame["size_bytes"] * 8 / 1000 / duration
    return frame[columns]


def series_frame(params: SpiralParams, video_bins: list[int], comp_bins: list[int]) -> pd.DataFrame:
    """Per-bin throughput with the simulator's columns: cumulative bytes at each bin end."""
    n = int(params.duration_s / params.sample_s)
    video = pd.Series(video_bins[:n], dtype=float).reindex(range(n), fill_value=0.0).cumsum()
    comp = pd.Series(comp_bins[:n], dtype=float).reindex(range(n), fill_value=0.0).cumsum()
    series = pd.DataFrame({
        "t_s": [(k + 1) * params.sample_s for k in range(n)],
        "video_bytes": video.to_numpy(), "competitor_bytes": comp.to_numpy(),
        "buffer_s": math.nan,
    })  # fmt: skip
    dt = params.sample_s
    series["video_kbps"] = series["video_bytes"].diff().fillna(series["video_bytes"]) * 8 / 1e3 / dt
    series["competitor_kbps"] = (
        series["competitor_bytes"].diff().fillna(series["competitor_bytes"]) * 8 / 1e3 / dt
    )
    return series


def condition(params: Mapping[str, object]) -> dict[str, str]:
    """The keys that tell cases apart in ``metrics.csv`` (same for both sides)."""
    out = {key: str(params[key]).lower() for key in CONDITION_KEYS}
    if params["mode"] != "continuous":
        out.pop("c")
    return out


def metric_rows(record: RunRecord, figure: str) -> list[MetricRow]:
    """``metrics.csv`` rows of one run (real or simulated), one per metric in METRICS."""
    cond = condition(record.params)
    rows = []
    for metric in METRICS:
        unit = unit_of(metric)
        value = record.metrics.get(metric, math.nan)
        if not isinstance(value, int | float):
            raise UserError(f"metric {metric} is not a number: {value!r}")
        rows.append(MetricRow(figure, record.profile, cond, metric, float(value), unit))
    return rows
