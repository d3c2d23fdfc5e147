"""Scenario ``video-stream``: the memory-pressure study's player streaming over Wi-Fi and TCP.

The phone, its boot, the pressure generator and the player are those of the ``video``
scenario (the memory-pressure study, CoNEXT 2022); the segments no longer come from a LAN
that is never the bottleneck but from a server over the phone's own network:

    server ──(wired access link: bottleneck_mbps, rtt_ms, queue_kb)── ap ──Wi-Fi── phone
                                                                          └──Wi-Fi── sta0

The phone's receive path is on (:meth:`Phone.attach_network`): every segment's packets
cost CPU in softirq, data waiting to be read is charged to the player's kernel memory,
and the player's network thread reads its socket — so memory pressure that starves the
CPU (kswapd, refaults, lmkd) slows the reads, shrinks the advertised window and lowers
the throughput the ABR rule sees, while the rule's choice of bitrate sets how much the
decoder and the source buffer cost. An ABR rule (``rule``, any
:data:`~mqoe.policies.abr.ABR_RULES` spec, or a rule object through
``components={"abr": …}``) picks each segment among the ladder's rungs at ``fps`` up to
``resolution``; ``adapt`` adds the memory-aware cap. A competitor shares the bottleneck:
a bulk download to another station (``station``) or by a background app on the phone
itself (``phone``: its socket and reads cost this phone too), from the start of playback
(building a pressure state takes its own time; a competitor started at boot would meet
each pressure state's video at a different age).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import pandas as pd

from mqoe.apps.segments import HttpSegments
from mqoe.apps.video import VideoPlayer
from mqoe.device.cpu import Fair
from mqoe.device.net import BulkFlow, TcpConfig
from mqoe.device.phone import Phone
from mqoe.device.process import SERVICE_ADJ
from mqoe.engine import ms, seconds
from mqoe.metrics.video_qoe import qoe_summary
from mqoe.policies.abr import AbrRule, MostConservative, Representation, as_rule, make_rule
from mqoe.policies.memory_adapt import MemoryAware
from mqoe.workloads.base import ScenarioOutput, Session, WarmStart
from mqoe.workloads.video import (
    BITRATES_30,
    BITRATES_60,
    VideoParams,
    collect_session,
    session_ns,
)
from mqoe.workloads.video import start_session as start_video_session

COMPETITORS = ("none", "station", "phone")
SEGMENT_TABLE_COLUMNS = (
    "segment", "representation", "bitrate_kbps", "size_bytes",
    "download_start_s", "download_end_s", "rebuffer_s", "buffer_after_s",
)  # fmt: skip
# The session's QoE, computed by the function real logs and the trace-driven mode use.
QOE_METRICS = ("mean_bitrate_kbps", "switch_count", "rebuffer_s", "rebuffer_count",
               "rebuffer_ratio", "startup_delay_s", "qoe_lin", "qoe_log", "segments")  # fmt: skip
SERVER = "server"


@dataclass(frozen=True)
class VideoStreamParams(VideoParams):
    # The ABR rule (an ABR_RULES spec; "a+b" takes the most conservative of both).
    rule: str = "bba"
    # The highest rung offered (the ladder holds every resolution up to it at ``fps``).
    resolution: str = "1080p"
    bottleneck_mbps: float = 10.0  # the wired access link behind the AP
    rtt_ms: float = 40.0  # wired round trip between the server and the AP
    queue_kb: float = 256.0  # drop-tail buffer of the access link
    phy_mbps: float = 65.0  # 802.11n MCS 7, one stream
    competitor: str = "station"  # none | station | phone (a background app's download)
    # The competitor starts this long after playback starts (0: with it) and runs to the end.
    competitor_start_s: float = field(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.rule:
            raise ValueError("video-stream needs an ABR rule (e.g. rule=bba)")
        if min(self.bottleneck_mbps, self.phy_mbps, self.queue_kb) <= 0 or self.rtt_ms < 0:
            raise ValueError("bottleneck_mbps, phy_mbps and queue_kb must be > 0, rtt_ms ≥ 0")
        if self.competitor not in COMPETITORS:
            raise ValueError(f"competitor must be one of {', '.join(COMPETITORS)}")
        if self.competitor_start_s < 0:
            raise ValueError("competitor_start_s must not be negative")


def stream_ladder(params: VideoParams) -> tuple[Representation, ...]:
    """The rungs at ``params.fps`` up to ``params.resolution``, by bitrate."""
    rates = BITRATES_60 if params.fps > 30 else BITRATES_30
    return tuple(
        Representation(float(rates[h]), h, float(params.fps))
        for h in sorted(rates)
        if h <= params.height
    )


def stream_rule(params: VideoStreamParams, component: object | None) -> AbrRule:
    rule = as_rule(component) if component is not None else make_rule(params.rule)
    if params.adapt == "none":
        return rule
    cap = MemoryAware(step=params.adapt, quiet_s=params.quiet_s)  # type: ignore[arg-type]
    return MostConservative([rule, cap])


class VideoStream:
    name = "video-stream"
    summary = "a DASH player under memory pressure streaming over Wi-Fi/TCP with a competitor"
    params_type = VideoStreamParams
    quick: Mapping[str, str] = MappingProxyType(
        {"duration_s": "20", "pressure": "moderate", "setup_s": "20"}
    )
    # Read from playback on (warm starts share the set-up across them); the ladder
    # (resolution, fps) is built with the player, so it is not among them.
    late_params = frozenset(
        {"duration_s", "genre", "rule", "adapt", "quiet_s", "competitor_start_s"}
    )

    def build(self, phone: Phone, params: VideoStreamParams) -> Session:
        env, net = phone.env, phone.net
        stations = ["phone", *(["sta0"] if params.competitor == "station" else [])]
        phone.attach_wifi("ap", stations, phy_mbps=params.phy_mbps,
                          queue_bytes=int(params.queue_kb * 1024))  # fmt: skip
        net.add_link(SERVER, "ap", params.bottleneck_mbps * 1e6, ms(params.rtt_ms / 2),
                     int(params.queue_kb * 1024), reverse_rate_bps=1e9)  # fmt: skip
        phone.attach_network("phone")
        tcp = TcpConfig()
        reps = stream_ladder(params)
        component = phone.take_component("abr")
        rule = stream_rule(params, component)
        source = HttpSegments(SERVER, tcp)
        competitor: list[tuple[BulkFlow, int]] = []  # the flow and when it started

        def start_competitor(_: object) -> None:
            if params.competitor == "station":
                flow = BulkFlow(net, SERVER, "sta0", tcp)
            else:  # a background app on this phone downloads (an app-store update)
                proc = phone.processes.spawn("com.android.vending", SERVICE_ADJ, env.now)
                thread = phone.cpu.thread("downloader", Fair(10), process=proc.name)
                phone.processes.add_threads(proc, [thread])
                flow = BulkFlow(net, SERVER, "phone", tcp, owner=(proc, thread))
            flow.start()
            competitor.append((flow, env.now))

        def on_play() -> None:
            # Relative to playback, so every pressure state (whose set-up takes its own
            # time) streams against a competitor of the same age.
            if params.competitor != "none":
                env.schedule(seconds(playing().competitor_start_s), start_competitor)

        state = start_video_session(
            phone, params, reps, rule, source, on_play, before_play=lambda: warm.reached()
        )

        def playing() -> VideoStreamParams:
            late = state["params"]
            assert isinstance(late, VideoStreamParams)
            return late

        def rebind(late: VideoStreamParams) -> int:
            """Another run's late parameters, before playback starts."""
            player = state["player"]
            assert isinstance(player, VideoPlayer)
            player.retarget(stream_rule(late, component), late.duration_s, late.genre)
            state["params"] = late
            return session_ns(late)

        def collect() -> ScenarioOutput:
            late = playing()
            out = collect_session(phone, late, state)
            player = state["player"]
            assert isinstance(player, VideoPlayer)
            metrics = dict(out.metrics) | _network_metrics(phone, player, source, competitor)
            segments = segment_table(player)
            qoe = qoe_summary(segments, late.duration_s, min_bitrate_kbps=reps[0].bitrate_kbps)
            metrics |= {k: qoe[k] for k in QOE_METRICS}
            return ScenarioOutput(metrics=metrics, tables={**out.tables, "segments": segments})

        warm = WarmStart(self.late_params, rebind)
        return Session(session_ns(params), collect, warm)


def _network_metrics(
    phone: Phone,
    player: VideoPlayer,
    source: HttpSegments,
    competitor: list[tuple[BulkFlow, int]],
) -> dict[str, float | int | bool | str]:
    stack = phone.stack
    assert stack is not None and source.http is not None
    tput = [d.throughput_kbps for d in player.downloads]
    conns = source.http.connections
    threads = {t["thread"]: t for t in phone.cpu.thread_table() if t["process"] == "kernel"}
    mine = [s for s in stack.sockets if s.process is player.process]
    busy = sum(c.sender.busy_ns for c in conns)
    limited = sum(c.sender.rwnd_limited_ns for c in conns)
    nan = float("nan")
    return {
        "segment_throughput_kbps": sum(tput) / len(tput) if tput else nan,
        "retransmits": sum(c.sender.retransmits for c in conns),
        "rwnd_limited_share": limited / busy if busy else nan,
        "sock_peak_kb": max((s.peak_pages for s in mine), default=0) * 4,
        "softirq_cpu_s": _cpu_s(threads, stack.softirq.name),
        "ksoftirqd_cpu_s": _cpu_s(threads, stack.ksoftirqd.name),
        "softirq_deferrals": stack.deferrals,
        "rx_alloc_drops": stack.alloc_drops,
        "rx_backlog_drops": stack.backlog_drops,
        "competitor_kbps": _kbps(competitor, phone.env.now),
    }


def segment_table(player: VideoPlayer) -> pd.DataFrame:
    """One row per segment the player fetched, in the columns of
    :func:`mqoe.metrics.video_qoe.qoe_summary` (times from the run's start, s), plus the
    representation and size: the stall waiting for a segment is its ``rebuffer_s``."""
    rows = [
        (d.segment, d.representation, d.rate_kbps, d.size_bytes, d.start_s, d.end_s,
         player.stall_by_chunk.get(d.segment, 0) / 1e9, player.buffer_after_s[d.segment])
        for d in player.downloads[: len(player.buffer_after_s)]
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=SEGMENT_TABLE_COLUMNS)


def _kbps(competitor: list[tuple[BulkFlow, int]], now_ns: int) -> float:
    """The competitor's mean rate since it started (0 without one)."""
    if not competitor or now_ns <= competitor[0][1]:
        return 0.0
    flow, since = competitor[0]
    return flow.bytes_received * 8e6 / (now_ns - since)


def _cpu_s(threads: dict[str, dict[str, object]], name: str) -> float:
    row = threads.get(name)
    return float(row["running_ns"]) / 1e9 if row else 0.0  # type: ignore[arg-type]
