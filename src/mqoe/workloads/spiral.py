"""Scenario ``spiral``: the reference set-up for the downward spiral (IMC 2012 study and its
CS244 reproduction).

Video server C and competitor host B reach client A through a router and one
bottleneck link (default 5 Mbit/s, RTT 4 ms, drop-tail buffer 120 kbit). The client
streams 4 s segments into a buffer of up to 240 s over HTTP (one persistent connection
with IW 10, or a new connection per segment with IW 4); a long-lived bulk TCP flow from
B starts at ``competitor_start_s``. Nothing here decides the outcome: the chosen rate
follows from what the client measures, and that follows from cwnd after idle periods,
slow start and the competitor's standing queue.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from mqoe.apps.stream_client import StreamingClient
from mqoe.device.cpu import Fair, Thread
from mqoe.device.net import BulkFlow, HttpClient, Network, TcpConfig, TcpSender
from mqoe.device.phone import Phone
from mqoe.device.process import FOREGROUND_APP_ADJ, Process
from mqoe.engine import ms, seconds
from mqoe.params import NEGATIVE_OK, bounds
from mqoe.policies.abr import (
    BBA,
    AbrRule,
    Bola,
    ConservativeThroughput,
    Representation,
    as_rule,
    make_rule,
)
from mqoe.workloads.base import ScenarioOutput, Session

MODES = ("discrete", "continuous", "bba", "bola")


# What a spiral run reports in metrics.csv, in this order, simulated or on the real-TCP
# testbed (units: mqoe.metrics.units). The testbed adds TESTBED_ONLY; the simulator's
# reproduction (mqoe.experiments.downward_spiral) reports the rest.
SPIRAL_METRICS = (
    "rate_alone_kbps",
    "rate_competing_kbps",
    "rate_competing_min_kbps",
    "video_tput_alone_kbps",
    "video_tput_competing_kbps",
    "competitor_tput_kbps",
    "fair_share_kbps",
    "jain_index",
    "rebuffer_s",
    "video_retransmits",
    "competitor_retransmits",
    "bottleneck_drops",
)
TESTBED_ONLY = ("fair_share_kbps", "competitor_retransmits")


@dataclass(frozen=True)
class SpiralParams:
    duration_s: float = 800.0  # the study: competitor runs 400 s from t = 400 s
    competitor_start_s: float = 400.0
    competitor_stop_s: float = field(default=-1.0, metadata=NEGATIVE_OK)  # −1 = until the end
    link_mbps: float = 5.0  # bottleneck rate (the study's set-up)
    rtt_ms: float = 4.0  # base round-trip time (the study's set-up)
    buffer_kbit: float = 120.0  # bottleneck drop-tail buffer (the study: 120 / 75 / 20)
    mode: str = "discrete"  # discrete | continuous | bba | bola
    c: float = 0.7  # continuous mode: request c × estimate (the study: 0.7 or 1.0)
    discrete_safety: float = 0.6  # discrete mode: highest rung ≤ this × estimate (calibration)
    rule: str = ""  # any ABR rule spec (e.g. "throughput:safety=0.8"); overrides mode
    connection: str = "persistent"  # persistent | per-request (the study: both modes)
    # Initial window; 0 = 10 when persistent, 4 per request (the study). At most 1000
    # segments (~1.4 MB), beyond any deployed server's (Linux's default is 10).
    iw_segments: int = field(default=0, metadata=bounds(1, 1000, zero=True, what="a window"))
    cc: str = "cubic"  # congestion control of both servers: cubic | newreno
    restart_after_idle: bool = True  # tcp_slow_start_after_idle
    cwnd_validation: bool = False  # the model's servers (TcpConfig); Linux always validates
    delayed_ack: bool = True
    ladder_kbps: str = "235,375,560,750,1050,1400,1750"  # the study's ladder
    # continuous-mode ceiling; −1 = the top of the ladder
    max_rate_kbps: float = field(default=-1.0, metadata=NEGATIVE_OK)
    segment_s: float = 4.0
    buffer_max_s: float = 240.0
    settle_s: float = 60.0  # skipped after each phase change before averaging
    sample_s: float = 1.0  # throughput time-series bin
    # The client as this phone: packets cost its CPU in softirq, queued data its memory,
    # and the player and the competitor's app read their sockets on their own threads
    # (mqoe.device.net.stack). False: a client host that costs nothing (the testbed's).
    stack: bool = False

    def __post_init__(self) -> None:
        if self.duration_s <= 0 or self.link_mbps <= 0 or self.rtt_ms < 0:
            raise ValueError("duration_s and link_mbps must be positive, rtt_ms ≥ 0")
        if self.buffer_kbit <= 0 or self.segment_s <= 0 or self.sample_s <= 0:
            raise ValueError("buffer_kbit, segment_s and sample_s must be positive")
        if self.segment_s > self.buffer_max_s:
            raise ValueError("segment_s must not exceed buffer_max_s (it holds whole segments)")
        if self.mode not in MODES and not self.rule:
            raise ValueError(f"mode must be one of {', '.join(MODES)} (or give rule=…)")
        if self.connection not in ("persistent", "per-request"):
            raise ValueError("connection must be persistent or per-request")
        if self.cc not in ("cubic", "newreno"):
            raise ValueError("cc must be cubic or newreno")
        if not 0 < self.c <= 2 or not 0 < self.discrete_safety <= 1:
            raise ValueError("c must be in (0, 2] and discrete_safety in (0, 1]")
        _parse_ladder(self.ladder_kbps)

    @property
    def ladder(self) -> tuple[Representation, ...]:
        return tuple(Representation(rate) for rate in _parse_ladder(self.ladder_kbps))

    @property
    def competitor_end_s(self) -> float:
        return self.duration_s if self.competitor_stop_s < 0 else self.competitor_stop_s


def _app(phone: Phone, name: str) -> tuple[Process, Thread]:
    """A foreground app with the thread that reads its socket."""
    process = phone.processes.spawn(name, FOREGROUND_APP_ADJ, phone.env.now)
    thread = phone.cpu.thread("network", Fair(0), process=name)
    phone.processes.add_threads(process, [thread])
    return process, thread


def _parse_ladder(text: str) -> list[float]:
    try:
        rates = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"ladder_kbps {text!r}: expected comma-separated kbit/s") from None
    if not rates or rates != sorted(rates) or rates[0] <= 0:
        raise ValueError(f"ladder_kbps {text!r}: expected ascending positive rates")
    return rates


def build_rule(params: SpiralParams, component: object | None = None) -> AbrRule:
    """The client's ABR rule for a mode (or the user's rule spec, or rule object)."""
    if component is not None:
        return as_rule(component)
    if params.rule:
        return make_rule(params.rule)
    ceiling = None if params.max_rate_kbps < 0 else params.max_rate_kbps
    if params.mode == "discrete":
        return ConservativeThroughput(mode="discrete", discrete_safety=params.discrete_safety)
    if params.mode == "continuous":
        return ConservativeThroughput(mode="continuous", c=params.c, max_kbps=ceiling)
    if params.mode == "bba":
        return BBA()
    return Bola()


class Spiral:
    name = "spiral"
    summary = "a DASH client vs a bulk TCP flow on a 5 Mbit/s bottleneck (IMC 2012)"
    params_type = SpiralParams
    quick: Mapping[str, str] = MappingProxyType(
        {"duration_s": "120", "competitor_start_s": "60", "settle_s": "10"}
    )

    def build(self, phone: Phone, params: SpiralParams) -> Session:
        env = phone.env
        rule = build_rule(params, phone.take_component("abr"))
        net = phone.net
        one_way = ms(params.rtt_ms / 4)  # two hops each way
        buffer_bytes = int(params.buffer_kbit * 1000 / 8)
        # Server access links: 100 Mbit/s, or ten times a faster bottleneck, so that they
        # never are the bottleneck themselves.
        fast = max(100e6, 10 * params.link_mbps * 1e6)
        net.add_link("video-server", "router", fast, one_way, 1 << 22)
        net.add_link("competitor", "router", fast, one_way, 1 << 22)
        net.add_link("router", "client", params.link_mbps * 1e6, one_way, buffer_bytes,
                     reverse_queue_bytes=1 << 22)  # fmt: skip
        persistent = params.connection == "persistent"
        iw = params.iw_segments or (10 if persistent else 4)
        tcp = TcpConfig(
            initial_window_segments=iw,
            congestion_control="cubic" if params.cc == "cubic" else "newreno",
            restart_after_idle=params.restart_after_idle,
            cwnd_validation=params.cwnd_validation,
            delayed_ack=params.delayed_ack,
        )
        video_owner = competitor_owner = None
        if params.stack:
            phone.attach_network("client")
            video_owner = _app(phone, "com.example.player")
            competitor_owner = _app(phone, "com.example.downloader")
        http = HttpClient(
            net, "video-server", "client", tcp, persistent=persistent, owner=video_owner
        )
        client = StreamingClient(
            env, http, rule, params.ladder,
            segment_s=params.segment_s, buffer_max_s=params.buffer_max_s,
        )  # fmt: skip
        competitor = BulkFlow(net, "competitor", "client", TcpConfig(
            congestion_control=tcp.congestion_control, delayed_ack=params.delayed_ack),
            owner=competitor_owner)  # fmt: skip
        start_ns, end_ns = seconds(params.competitor_start_s), seconds(params.competitor_end_s)
        duration_ns = seconds(params.duration_s)
        if start_ns < duration_ns:
            env.schedule(start_ns, lambda _: competitor.start())
            if end_ns < duration_ns:
                env.schedule(end_ns, lambda _: competitor.stop())
        samples: list[tuple[float, int, int, float]] = []

        def sampler() -> Any:
            step = seconds(params.sample_s)
            while True:
                yield env.timeout(step)
                samples.append(
                    (env.now / 1e9, http.bytes_received, competitor.bytes_received,
                     client.buffer_s())
                )  # fmt: skip

        env.process(sampler(), "sampler")

        def collect() -> ScenarioOutput:
            return _collect(params, client, http, competitor, net, samples)

        return Session(duration_ns, collect)


def _collect(
    params: SpiralParams,
    client: StreamingClient,
    http: HttpClient,
    competitor: BulkFlow,
    net: Network,
    samples: list[tuple[float, int, int, float]],
) -> ScenarioOutput:
    segments = pd.DataFrame(
        [
            (s.segment, s.representation, s.rate_kbps, s.size_bytes, s.request_s, s.done_s,
             s.throughput_kbps, s.buffer_at_request_s, s.new_connection)
            for s in client.segments
        ],
        columns=["segment", "representation", "rate_kbps", "size_bytes", "request_s", "done_s",
                 "throughput_kbps", "buffer_s", "new_connection"],
    )  # fmt: skip
    series = pd.DataFrame(samples, columns=["t_s", "video_bytes", "competitor_bytes", "buffer_s"])
    dt = params.sample_s
    series["video_kbps"] = series["video_bytes"].diff().fillna(series["video_bytes"]) * 8 / 1e3 / dt
    series["competitor_kbps"] = (
        series["competitor_bytes"].diff().fillna(series["competitor_bytes"]) * 8 / 1e3 / dt
    )
    metrics = spiral_metrics(params, segments, series)
    video_senders = [c.sender for c in http.connections]
    metrics["video_retransmits"] = sum(s.retransmits for s in video_senders)
    metrics["competitor_retransmits"] = competitor.connection.sender.retransmits
    metrics["bottleneck_drops"] = net.links[("router", "client")].drops
    metrics["video_idle_restarts"] = sum(s.idle_restarts for s in video_senders)
    metrics["rebuffer_s"] = client.rebuffer_s
    metrics["segments"] = len(segments)
    cwnd = pd.concat(
        [_cwnd_frame("video", s) for s in video_senders]
        + [_cwnd_frame("competitor", competitor.connection.sender)],
        ignore_index=True,
    )
    return ScenarioOutput(
        metrics=metrics,
        tables={"segments": segments, "timeseries": series, "cwnd": cwnd},
    )


def _cwnd_frame(flow: str, sender: TcpSender) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "flow": flow,
            "t_s": np.asarray(sender.series_t_ns, dtype=float) / 1e9,
            "cwnd_segments": np.asarray(sender.series_cwnd, dtype=float) / sender.mss,
            "srtt_ms": np.asarray(sender.series_srtt_ns, dtype=float) / 1e6,
        }
    )


def jain_index(values: list[float]) -> float:
    """Jain's fairness index (Σx)² / (n Σx²): 1 = equal shares, 1/n = one takes all."""
    xs = [v for v in values if not math.isnan(v)]
    if len(xs) < 2 or not any(xs):
        return float("nan")
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def spiral_metrics(
    params: SpiralParams, segments: pd.DataFrame, series: pd.DataFrame
) -> dict[str, float | int | bool | str]:
    """The downward-spiral study's table: rates and throughputs alone and while competing
    (after settling).

    Rates are of segments *requested* in a window; video throughput is the mean of the
    client's own per-segment measurements; the competitor's is its bytes over the window.
    """
    settle = params.settle_s
    start, end = params.competitor_start_s, params.competitor_end_s
    alone = segments[(segments["request_s"] >= settle) & (segments["request_s"] < start)]
    competing = segments[(segments["request_s"] >= start + settle) & (segments["request_s"] < end)]
    window = series[(series["t_s"] > start + settle) & (series["t_s"] <= end)]
    nan = float("nan")
    video_tput = float(competing["throughput_kbps"].mean()) if len(competing) else nan
    competitor_tput = float(window["competitor_kbps"].mean()) if len(window) else nan
    return {
        "rate_alone_kbps": float(alone["rate_kbps"].mean()) if len(alone) else nan,
        "rate_competing_kbps": float(competing["rate_kbps"].mean()) if len(competing) else nan,
        "rate_competing_min_kbps": float(competing["rate_kbps"].min()) if len(competing) else nan,
        "video_tput_alone_kbps": float(alone["throughput_kbps"].mean()) if len(alone) else nan,
        "video_tput_competing_kbps": video_tput,
        "competitor_tput_kbps": competitor_tput,
        "jain_index": jain_index([video_tput, competitor_tput]),
        "fair_share_kbps": params.link_mbps * 1000 / 2,
    }
