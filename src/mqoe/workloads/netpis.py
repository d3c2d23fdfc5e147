"""Scenario ``netpis`` (the NetPIS study): foreground video vs a background download on one
Wi-Fi AP.

The phone and optional other stations share one 802.11n channel
(:mod:`mqoe.device.net.wifi`); servers sit behind the AP at different wired delays. Apps
are processes (zygote children) owning their sockets (:mod:`mqoe.apps.net_apps`). Every
``control_period_ms`` a controller does what the NetPIS kernel patch does per packet:
NetPIS-D samples each socket's unread bytes, NetPIS-S classifies sockets from the process
table, NetPIS-R (:mod:`mqoe.policies.netpis`) decides buffer, window clamp and delayed
ACK, and the controller applies them to the TCP receivers. Variant ``original`` only
observes. ``fg_rcvbuf_kb`` makes the video app set its own SO_RCVBUF (locking the buffer
Linux would otherwise size); ``fg_rwnd_limited_share`` / ``bg_rwnd_limited_share``
report how much of each sender's busy time the receiver's window held it back — the
only time receiver-side control can change anything.

Modes:

* ``seq`` — a background app-store download from t = 0, a ``video_s`` video from
  ``fg_start_s``: bytes received by each over time;
* ``service`` — one video (``service`` a or b, ``video_s`` long), with or without the
  background download (``background``); the run ends once the video has ended;
* ``memory`` — one foreground ``app`` alone (``video`` or ``browsing``): the receive
  buffers allocated to its sockets over the session.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from mqoe.apps.net_apps import AppStoreDownload, BrowsingApp, SocketReader, VideoApp
from mqoe.device.cpu import Fair
from mqoe.device.net import BulkFlow, Connection, HttpClient, Network, TcpConfig, WifiMedium
from mqoe.device.net.stack import PollingReader
from mqoe.device.phone import Phone
from mqoe.device.process import FOREGROUND_APP_ADJ, PREVIOUS_APP_ADJ, SERVICE_ADJ, Process
from mqoe.engine import Environment, ms, seconds
from mqoe.policies.abr import ConservativeThroughput, Representation
from mqoe.policies.netpis import (
    VARIANTS,
    Allocator,
    NeedTracer,
    NetPisParams,
    ProcInfo,
    SocketRole,
    classify,
    foreground_pid,
)
from mqoe.workloads.base import ScenarioOutput, Session, WarmStart

# Two video services (the NetPIS study: "ten videos, two services"): ladders in kbit/s.
SERVICES = {
    # a: a YouTube-like DASH ladder (240p … 2160p), 5 s segments, 40 s ahead
    "a": ((300, 700, 1500, 2500, 4500, 8000, 12000), 5.0, 40.0),
    # b: an HLS-like service, 10 s segments, 60 s ahead
    "b": ((400, 800, 1200, 2000, 3000), 10.0, 60.0),
}
MODES = ("seq", "service", "memory")


@dataclass(frozen=True)
class NetPisScenarioParams:
    mode: str = "seq"  # seq | service | memory
    variant: str = "original"  # original | fg-only | bg-only | both | netpis
    alpha: float = 0.6  # the NetPIS evaluation's values
    beta: float = 0.3
    gamma: float = 0.5
    duration_s: float = 170.0  # seq / memory: run length
    fg_start_s: float = 15.0  # the video starts (the download runs from 0)
    video_s: float = 120.0  # the NetPIS evaluation: a 2-minute video
    service: str = "a"  # service mode: a | b
    background: bool = True  # service / memory modes: the app-store download runs too
    app: str = "video"  # memory mode: video | browsing
    pages: int = 12  # browsing: page loads
    phy_mbps: float = 65.0  # 802.11n MCS 7, one stream
    wifi: str = "dcf"  # channel access: dcf (random backoff, collisions; per seed) | fair
    ap_queue_kb: float = 256.0  # AP transmit queue (calibration: ~170 full frames)
    video_rtt_ms: float = 60.0  # wired RTT behind the AP to each server (calibration)
    store_rtt_ms: float = 20.0
    web_rtt_ms: float = 40.0
    # How the servers' TCP grows its window per ACK: bytes = by the data acknowledged
    # (Linux ≥ 4.0); per-ack = one segment per ACK however much it acknowledges (Linux
    # before 3.14/4.0, the servers of the NetPIS study's era), under which delayed ACKs slow a
    # sender down.
    ack_counting: str = "bytes"
    # Servers grow cwnd only while they use it (Linux's tcp_is_cwnd_limited; TcpConfig):
    # a background sender held back by NetPIS's window keeps a small cwnd.
    cwnd_validation: bool = False
    # The video app's own SO_RCVBUF in KB (0 = none: the kernel's default buffer). An app
    # that sets it locks the buffer; its window can then hold the flow back.
    fg_rcvbuf_kb: float = 0.0
    other_stations: int = 2  # other phones on the AP, each with a bulk download (NetPIS)
    read_period_ms: float = 20.0  # apps' read loop (calibration)
    # The phone's receive path (mqoe.device.net.stack): packets processed in softirq on
    # the phone's CPU, queued data charged to the apps' kernel memory, and each app's
    # polling reads run on its loader thread. False: the network costs the phone nothing.
    stack: bool = False
    control_period_ms: float = 10.0  # NetPIS decisions (the paper: per packet)
    idle_s: float = 1.0  # a foreground process idle this long has no foreground flow
    exceptions: str = ""  # comma-separated process names NetPIS never throttles
    trace_path: str = ""  # NetPIS-D persists its trace here ("" = not persisted)
    sample_s: float = 0.5  # time-series bin

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}")
        if self.service not in SERVICES:
            raise ValueError("service must be a or b")
        if self.ack_counting not in ("per-ack", "bytes"):
            raise ValueError("ack_counting must be per-ack or bytes")
        if self.wifi not in ("dcf", "fair"):
            raise ValueError("wifi must be dcf or fair")
        if self.app not in ("video", "browsing"):
            raise ValueError("app must be video or browsing")
        positive = ("duration_s", "video_s", "phy_mbps", "ap_queue_kb", "read_period_ms",
                    "control_period_ms", "sample_s")  # fmt: skip
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.fg_rcvbuf_kb < 0:
            raise ValueError("fg_rcvbuf_kb must be ≥ 0 (0 = the kernel's default)")
        if self.other_stations < 0 or self.pages <= 0:
            raise ValueError("other_stations must be ≥ 0 and pages > 0")
        NetPisParams(alpha=self.alpha, beta=self.beta, gamma=self.gamma)

    @property
    def policy(self) -> NetPisParams:
        return NetPisParams(alpha=self.alpha, beta=self.beta, gamma=self.gamma)


class Controller:
    """The simulator side of NetPIS: samples, classifies, decides, applies."""

    def __init__(
        self,
        env: Environment,
        phone: Phone,
        net: Network,
        params: NetPisScenarioParams,
        tracer: NeedTracer,
    ) -> None:
        self.env = env
        self.phone = phone
        self.net = net
        self.allocator = Allocator(params.variant, params.policy)
        self.apply = params.variant != "original"
        self.tracer = tracer
        self.period_ns = ms(params.control_period_ms)
        self.idle_ns = seconds(params.idle_s)
        self.exceptions = tuple(x.strip() for x in params.exceptions.split(",") if x.strip())
        self._last_bytes: dict[int, int] = {}
        self._active_ns: dict[int, int] = {}
        # NetPIS-S's view of the process table, rebuilt only when the table changes
        # (_processes), and the socket roles classified from it with the owners they were
        # classified for.
        self._alive: list[Process] | None = None
        self._adj_seq = -1
        self._procs: list[ProcInfo] = []
        self._fg: int | None = None
        self._owners: dict[int, int] | None = None
        self._roles: dict[int, SocketRole] = {}
        self.decisions = 0
        self.stopped = False
        env.schedule(0, self._tick)

    def sockets(self) -> list[Connection]:
        return [c for c in self.net.connections if c.owner_pid >= 0]

    def _processes(self) -> list[ProcInfo]:
        """The living processes as NetPIS-S sees them. The table hands out a new list of
        the living whenever a process is spawned or killed, and counts every change of an
        oom_score_adj (pids, parents and names never change): while neither moved, the
        last list still holds."""
        table = self.phone.processes
        alive = table.alive
        if alive is not self._alive or table._adj_seq != self._adj_seq:
            self._alive = alive  # held, so a new list cannot reuse its identity
            self._adj_seq = table._adj_seq
            self._procs = [ProcInfo(p.pid, p.ppid, p.name, p.oom_score_adj) for p in alive]
            self._fg = foreground_pid(self._procs)
            self._owners = None  # classify again
        return self._procs

    def _tick(self, _: object) -> None:
        now = self.env.now
        procs = self._processes()
        socks = self.sockets()
        fg = self._fg
        idle_ns = self.idle_ns
        last_bytes, active_ns, tracer = self._last_bytes, self._active_ns, self.tracer
        fg_exists = False
        for conn in socks:
            key = id(conn)
            got = conn.receiver.bytes_received
            if got != last_bytes.get(key, 0):
                last_bytes[key] = got
                active_ns[key] = now
            if conn.owner_pid == fg and now - active_ns.get(key, -idle_ns) < idle_ns:
                fg_exists = True
            tracer.observe(now, conn.owner_pid, key, conn.receiver.unread)
        tracer.maybe_persist(now)
        if self.apply:
            owners = {id(c): c.owner_pid for c in socks}
            if owners != self._owners:  # classify is a function of these and the table
                self._roles = classify(procs, owners, self.exceptions)
                self._owners = owners
            roles = self._roles
            for conn in socks:
                role = roles[id(conn)]
                self._decide(conn, role.foreground, role.exempt, fg_exists)
        if not self.stopped:
            self.env.schedule(self.period_ns, self._tick)

    def _decide(self, conn: Connection, foreground: bool, exempt: bool, fg_exists: bool) -> None:
        rcv = conn.receiver
        tracer = self.tracer
        # Allocator.decide on a SocketObservation of these values, without building it.
        rcvbuf, clamp, delack, ato, _, _ = self.allocator.decide_values(
            need_bytes=tracer.socket_need(id(conn)),
            rcvbuf_bytes=rcv.rcvbuf_bytes,
            window_clamp_bytes=rcv.window_clamp,
            committed_bytes=rcv.committed_bytes,
            foreground=foreground,
            foreground_exists=fg_exists,
            exempt=exempt,
            process_max_need_bytes=tracer.process_max(conn.owner_pid),
            own_rcvbuf_bytes=rcv.cfg.rcvbuf_bytes,
        )
        self.decisions += 1
        if rcvbuf > rcv.rcvbuf_bytes:  # case 1: buffer first, then the clamp
            rcv.set_rcvbuf(rcvbuf)
            rcv.set_window_clamp(clamp)
        else:  # case 2 (or no change): the clamp first, then the buffer
            rcv.set_window_clamp(clamp)
            if rcvbuf != rcv.rcvbuf_bytes:
                rcv.set_rcvbuf(rcvbuf)
        if delack != rcv.delack_bytes or ato != rcv.ato_ns:
            rcv.set_delayed_ack(delack, ato)


def _network(phone: Phone, params: NetPisScenarioParams) -> tuple[Network, WifiMedium]:
    stations = ["phone", *(f"sta{i}" for i in range(params.other_stations))]
    medium = phone.attach_wifi(
        "ap", stations, phy_mbps=params.phy_mbps, queue_bytes=int(params.ap_queue_kb * 1024),
        contention=params.wifi,
    )  # fmt: skip
    wired = 1e9  # servers' paths: 1 Gbit/s, never the bottleneck
    for server, rtt in (("video-server", params.video_rtt_ms), ("store-server",
                        params.store_rtt_ms), ("web-server", params.web_rtt_ms)):  # fmt: skip
        phone.net.add_link(server, "ap", wired, ms(rtt / 2), 1 << 24)
    return phone.net, medium


def _video(env: Environment, net: Network, tcp: TcpConfig, owner: AppOwner, service: str,
           video_s: float) -> VideoApp:  # fmt: skip
    ladder_kbps, segment_s, ahead_s = SERVICES[service]
    http = HttpClient(net, "video-server", "phone", tcp, auto_read=False, **owner.kwargs)
    rule = ConservativeThroughput(mode="discrete", discrete_safety=0.8)
    ladder = tuple(Representation(float(r)) for r in ladder_kbps)
    return VideoApp(env, http, rule, ladder, video_s=video_s, segment_s=segment_s,
                    buffer_max_s=ahead_s)  # fmt: skip


class AppOwner:
    """An app's process and, on the phone's receive path, the loader thread that reads
    its sockets by polling; without the path, its sockets are read by a plain timer."""

    def __init__(self, phone: Phone, proc: Process, params: NetPisScenarioParams) -> None:
        self.proc = proc
        self.thread = None
        if params.stack:
            self.thread = phone.cpu.thread("loader", Fair(0), process=proc.name)
            phone.processes.add_threads(proc, [self.thread])

    @property
    def kwargs(self) -> dict[str, Any]:
        """The owner as the network's flows take it."""
        if self.thread is None:
            return {"owner_pid": self.proc.pid}
        return {"owner": (self.proc, self.thread)}

    def reader(
        self, phone: Phone, period_ns: int, sockets: Callable[[], Sequence[Connection]]
    ) -> SocketReader | PollingReader:
        if self.thread is None:
            return SocketReader(phone.env, period_ns, sockets)
        assert phone.stack is not None
        return phone.stack.read_periodically(self.proc, self.thread, period_ns)


class NetPisScenario:
    name = "netpis"
    summary = "foreground video vs a 1.1 GB background download on shared Wi-Fi (NetPIS, 2015)"
    params_type = NetPisScenarioParams
    quick: Mapping[str, str] = MappingProxyType(
        {"duration_s": "70", "fg_start_s": "15", "video_s": "40"}
    )
    # Read when the foreground app starts, not before: runs that differ only in these
    # share everything up to then (warm starts, decision 0005).
    late_params = frozenset({"fg_rcvbuf_kb"})

    def build(self, phone: Phone, params: NetPisScenarioParams) -> Session:
        env = phone.env
        net, medium = _network(phone, params)
        if params.stack:
            phone.attach_network("phone")
        # Linux defaults; rcvbuf 1 MB = Android 4.x wifi tcp_rmem default.
        tcp = TcpConfig(ack_counting=params.ack_counting,  # type: ignore[arg-type]
                        cwnd_validation=params.cwnd_validation)  # fmt: skip
        tracer = NeedTracer(Path(params.trace_path) if params.trace_path else None)
        controller = Controller(env, phone, net, params, tracer)
        procs = phone.processes
        read_ns = ms(params.read_period_ms)
        state = _State()
        for i in range(params.other_stations):
            other = BulkFlow(net, "video-server", f"sta{i}", tcp)
            other.start()
            state.others.append(other)
        with_bg = params.mode == "seq" or params.background
        if with_bg:
            store = AppOwner(
                phone, procs.spawn("com.android.vending", SERVICE_ADJ, env.now), params
            )
            state.bg = AppStoreDownload(net, "store-server", "phone", tcp, **store.kwargs)
            state.bg.start()
            bg_conn = state.bg.connection
            state.readers.append(store.reader(phone, read_ns, lambda: (bg_conn,)))
        fg_start = seconds(params.fg_start_s if params.mode == "seq" else 0.0)
        end_ns = seconds(params.duration_s)

        late = [params]  # the run's late parameters (another run's, after a warm start)

        def start_fg(_: object) -> None:
            warm.reached()  # the set-up ends here: nothing before read a late parameter
            fg_rcvbuf_kb = late[0].fg_rcvbuf_kb
            name = "com.google.android.youtube" if params.app == "video" else "com.android.browser"
            proc = procs.spawn(name, FOREGROUND_APP_ADJ, env.now)
            owner = AppOwner(phone, proc, params)
            state.fg_pid = proc.pid
            if params.mode == "memory" and params.app == "browsing":
                browser = BrowsingApp(env, net, "web-server", "phone", tcp, env.rng("browsing"),
                                      pages=params.pages, **owner.kwargs)  # fmt: skip
                state.browser = browser
                state.readers.append(owner.reader(phone, read_ns, lambda: browser.connections))
                done = browser.done
            else:
                fg_tcp = tcp
                if fg_rcvbuf_kb:
                    fg_tcp = replace(tcp, rcvbuf_bytes=max(1, round(fg_rcvbuf_kb * 1024)))
                video = _video(env, net, fg_tcp, owner, params.service, params.video_s)
                state.video = video
                http = video.http
                state.readers.append(owner.reader(phone, read_ns, lambda: http.connections))
                done = video.done
            done.callbacks.append(lambda _: finish_fg(proc))  # type: ignore[union-attr]

        def finish_fg(proc: Process) -> None:
            state.fg_end_ns = env.now
            procs.set_adj(proc, PREVIOUS_APP_ADJ)  # the user leaves the app
            if params.mode != "seq":  # nothing left to watch: let the run drain
                if state.bg is not None:
                    state.bg.flow.stop()
                for other in state.others:
                    other.stop()
                for reader in state.readers:
                    reader.stopped = True
                controller.stopped = True
                sampler_stop[0] = True

        env.schedule(fg_start, start_fg)
        samples: list[tuple[float, int, int, int, int]] = []
        sampler_stop = [False]

        def sample(_: object) -> None:
            fg_bytes = fg_buf = bg_buf = 0
            for c in controller.sockets():
                if c.owner_pid == state.fg_pid:
                    fg_bytes += c.receiver.bytes_received
                    fg_buf += c.receiver.rcvbuf_bytes
                else:
                    bg_buf += c.receiver.rcvbuf_bytes
            bg = state.bg
            samples.append((env.now / 1e9, fg_bytes, bg.bytes_received if bg else 0, fg_buf,
                            bg_buf))  # fmt: skip
            if not sampler_stop[0]:
                env.schedule(seconds(params.sample_s), sample)

        env.schedule(0, sample)
        duration = end_ns
        if params.mode == "service":  # generous: ends early once the video has ended
            duration = seconds(params.video_s * 3 + 120)

        def rebind(other: NetPisScenarioParams) -> int:
            late[0] = other
            return duration  # read from early parameters only

        def collect() -> ScenarioOutput:
            return _collect(late[0], state, controller, net, medium, samples)

        warm = WarmStart(self.late_params, rebind)
        return Session(duration, collect, warm)


class _State:
    def __init__(self) -> None:
        self.bg: AppStoreDownload | None = None
        self.video: VideoApp | None = None
        self.browser: BrowsingApp | None = None
        self.readers: list[SocketReader | PollingReader] = []
        self.others: list[BulkFlow] = []
        self.fg_pid = -2
        self.fg_end_ns = -1


def _collect(
    params: NetPisScenarioParams,
    state: _State,
    controller: Controller,
    net: Network,
    medium: WifiMedium,
    samples: list[tuple[float, int, int, int, int]],
) -> ScenarioOutput:
    series = pd.DataFrame(samples, columns=["t_s", "fg_bytes", "bg_bytes", "fg_rcvbuf_bytes",
                                            "bg_rcvbuf_bytes"])  # fmt: skip
    metrics: dict[str, float | int | bool | str] = {}
    nan = float("nan")
    fg_start_s = params.fg_start_s if params.mode == "seq" else 0.0
    metrics["fg_bytes_total"] = int(series["fg_bytes"].iloc[-1]) if len(series) else 0
    metrics["bg_bytes_total"] = int(series["bg_bytes"].iloc[-1]) if len(series) else 0
    at = series[series["t_s"] <= fg_start_s + 60 + 1e-9]
    metrics["fg_bytes_at_60s"] = int(at["fg_bytes"].iloc[-1]) if len(at) else 0
    video = state.video
    if video is not None:
        metrics["service_s"] = video.service_s
        metrics["startup_s"] = (
            (video.first_frame_ns - video.started_ns) / 1e9 if video.first_frame_ns >= 0 else nan
        )
        metrics["rebuffer_s"] = video.rebuffer_s
        rates = [s.rate_kbps for s in video.segments]
        metrics["mean_rate_kbps"] = sum(rates) / len(rates) if rates else nan
        metrics["fg_done_s"] = video.downloaded_ns / 1e9 if video.downloaded_ns >= 0 else nan
    if state.browser is not None:
        loads = state.browser.page_load_s
        metrics["page_load_s"] = sum(loads) / len(loads) if loads else nan
    metrics["bg_recovery_s"] = _recovery_s(series, params, metrics.get("fg_done_s", nan))
    end_s = state.fg_end_ns / 1e9 if state.fg_end_ns >= 0 else params.duration_s
    session = series[(series["t_s"] >= fg_start_s) & (series["t_s"] <= end_s)]
    total = session["fg_rcvbuf_bytes"] + session["bg_rcvbuf_bytes"]
    # Receive-buffer memory of all the phone's sockets while the foreground app runs.
    metrics["rcvbuf_mb"] = float(total.mean()) / 2**20 if len(session) else nan
    metrics["fg_rcvbuf_mb"] = (
        float(session["fg_rcvbuf_bytes"].mean()) / 2**20 if len(session) else nan
    )
    metrics["overruns"] = sum(c.receiver.overruns for c in net.connections)
    fg_conns = [c for c in controller.sockets() if c.owner_pid == state.fg_pid]
    metrics["fg_acks"] = sum(c.receiver.acks_sent for c in fg_conns)
    bg = state.bg
    metrics["bg_acks"] = bg.connection.receiver.acks_sent if bg else 0
    for side, conns in (("fg", fg_conns), ("bg", [bg.connection] if bg else [])):
        busy = sum(c.sender.busy_ns for c in conns)
        limited = sum(c.sender.rwnd_limited_ns for c in conns)
        # Share of the senders' busy time the receiver's window held them back (tcp_info's
        # busy_time / rwnd_limited): receiver-side control can only act where this is > 0.
        metrics[f"{side}_rwnd_limited_share"] = limited / busy if busy else nan
    metrics["decisions"] = controller.decisions
    metrics["airtime_busy_s"] = medium.busy_ns / 1e9
    metrics["wifi_collisions"] = medium.collisions
    metrics["phone_uplink_airtime_s"] = net.links[("phone", "ap")].airtime_ns / 1e9  # type: ignore[attr-defined]
    return ScenarioOutput(metrics=metrics, tables={"timeseries": series})


def _recovery_s(series: pd.DataFrame, params: NetPisScenarioParams, fg_done_s: Any) -> float:
    """Seconds from the foreground's last download until the background's throughput is
    back to 80% of what it had alone in the 5 s before the foreground started (nan if it
    never is). The rate before the video is only a proxy for what the download would
    have had without it: the reproduction measures against a run without the video."""
    if params.mode != "seq" or not isinstance(fg_done_s, float) or fg_done_s != fg_done_s:
        return float("nan")
    before = bg_rate(series, params.fg_start_s - 5, params.fg_start_s)
    return recovery_s(series, fg_done_s, before)


def bg_rate(series: pd.DataFrame, start_s: float, end_s: float = math.inf) -> float:
    """The background download's mean rate (bytes/s) over ``[start_s, end_s]`` of a
    ``timeseries`` table (nan if the window holds fewer than two samples)."""
    window = series[(series["t_s"] >= start_s) & (series["t_s"] <= end_s)]
    if len(window) < 2:
        return float("nan")
    span = float(window["t_s"].iloc[-1] - window["t_s"].iloc[0])
    return float(window["bg_bytes"].iloc[-1] - window["bg_bytes"].iloc[0]) / span


def recovery_s(series: pd.DataFrame, fg_done_s: float, baseline_bytes_per_s: float) -> float:
    """Seconds from ``fg_done_s`` until the background's rate, averaged over 1 s, first
    reaches 80% of ``baseline_bytes_per_s`` (nan if it never does within the series)."""
    if fg_done_s != fg_done_s or not baseline_bytes_per_s > 0:
        return float("nan")
    t = series["t_s"]
    dt = float(t.iloc[1] - t.iloc[0]) if len(t) > 1 else 1.0
    rate = series["bg_bytes"].diff().fillna(0.0) / dt
    smooth = rate.rolling(max(1, round(1.0 / dt)), min_periods=1).mean()
    after = t >= fg_done_s
    for when, r in zip(t[after], smooth[after], strict=True):
        if r >= 0.8 * baseline_bytes_per_s:
            return max(0.0, float(when) - fg_done_s)
    return float("nan")
