"""The packet-level TCP model: link sharing, recovery, windows, delayed ACK, idle restart."""

from __future__ import annotations

from collections.abc import Generator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.device.net import BulkFlow, HttpClient, Network, Response, TcpConfig
from mqoe.engine import Environment, Event, ms, seconds

MSS = 1460
WIRE = MSS + 40


def dumbbell(
    env: Environment, queue_bytes: int, rate_bps: float = 5e6, rtt_ms: float = 4.0
) -> Network:
    """Two servers → router → bottleneck → client; RTT split over the two hops each way."""
    net = Network(env)
    hop = ms(rtt_ms / 4)
    net.add_link("b", "router", 1e9, hop, 1 << 24)
    net.add_link("c", "router", 1e9, hop, 1 << 24)
    net.add_link("router", "client", rate_bps, hop, queue_bytes, reverse_queue_bytes=1 << 24)
    return net


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


@pytest.mark.parametrize("cc", ["newreno", "cubic"])
@pytest.mark.parametrize(("rate_bps", "rtt_ms"), [(10e6, 20.0), (50e6, 40.0)])
def test_a_single_flow_fills_the_link_with_a_bdp_of_buffer(
    cc: str, rate_bps: float, rtt_ms: float
) -> None:
    env = Environment()
    bdp = int(rate_bps / 8 * rtt_ms / 1000)
    net = dumbbell(env, queue_bytes=bdp, rate_bps=rate_bps, rtt_ms=rtt_ms)
    flow = BulkFlow(net, "b", "client", TcpConfig(congestion_control=cc))  # type: ignore[arg-type]
    flow.start()
    env.run(seconds(10))  # past slow start
    before = flow.bytes_received
    env.run(seconds(40))
    goodput = (flow.bytes_received - before) * 8 / 30
    assert goodput >= 0.95 * rate_bps * MSS / WIRE  # ≥ 95% of the link's payload capacity
    assert goodput <= rate_bps
    assert flow.connection.sender.timeouts == 0


@pytest.mark.parametrize("cc", ["newreno", "cubic"])
def test_two_long_flows_with_equal_rtt_share_fairly(cc: str) -> None:
    env = Environment()
    net = dumbbell(env, queue_bytes=15_000)
    cfg = TcpConfig(congestion_control=cc)  # type: ignore[arg-type]
    flows = [BulkFlow(net, server, "client", cfg) for server in ("b", "c")]
    for flow in flows:
        flow.start()
    env.run(seconds(120))
    rates = [f.bytes_received * 8 / 120 for f in flows]
    assert jain(rates) >= 0.95
    assert sum(rates) >= 0.9 * 5e6 * MSS / WIRE


def _transfer(
    env: Environment, http: HttpClient, sizes: list[int], gap_ns: int = 0
) -> list[Response]:
    got: list[Response] = []

    def client() -> Generator[Event, object, None]:
        for size in sizes:
            response = yield http.get(size)
            assert isinstance(response, Response)
            got.append(response)
            if gap_ns:
                yield env.timeout(gap_ns)

    env.process(client())
    return got


@pytest.mark.parametrize(("restart", "idle_s", "expect_restart"), [
    (True, 2.0, True),  # idle ≫ RTO (≥ 200 ms): back to the initial window
    (False, 2.0, False),  # tcp_slow_start_after_idle = 0: the window survives
    (True, 0.05, False),  # idle shorter than the RTO: no restart
])  # fmt: skip
def test_cwnd_restarts_after_an_idle_period_longer_than_the_rto(
    restart: bool, idle_s: float, expect_restart: bool
) -> None:
    env = Environment()
    net = dumbbell(env, queue_bytes=1 << 20, rate_bps=100e6, rtt_ms=20)
    cfg = TcpConfig(restart_after_idle=restart, congestion_control="newreno")
    http = HttpClient(net, "b", "client", cfg)
    _transfer(env, http, [2_000_000, 50_000], gap_ns=seconds(idle_s))
    env.run(seconds(5))
    sender = http.connections[0].sender
    grown = max(sender.series_cwnd)
    assert grown > 20 * MSS  # the first transfer opened the window well past IW
    assert (sender.idle_restarts == 1) is expect_restart
    after_gap = [c for t, c in zip(sender.series_t_ns, sender.series_cwnd, strict=True)
                 if t >= seconds(idle_s)]  # fmt: skip
    if expect_restart:
        assert after_gap[0] == 10 * MSS
    else:
        assert min(after_gap) > 10 * MSS


@pytest.mark.parametrize("size", [146_000, 1_460_000])
def test_delayed_ack_roughly_halves_the_acks(size: int) -> None:
    counts = []
    for delayed in (True, False):
        env = Environment()
        net = dumbbell(env, queue_bytes=1 << 20, rate_bps=50e6)
        http = HttpClient(net, "b", "client", TcpConfig(delayed_ack=delayed))
        _transfer(env, http, [size])
        env.run(seconds(5))
        counts.append(http.connections[0].receiver.acks_sent)
    assert counts[1] == size // MSS  # one ACK per segment without delayed ACK
    assert 0.45 <= counts[0] / counts[1] <= 0.6


def test_the_receive_window_caps_the_rate_at_rwnd_over_rtt() -> None:
    env = Environment()
    net = dumbbell(env, queue_bytes=1 << 20, rate_bps=100e6, rtt_ms=20)
    rcvbuf = 32 * 1024
    flow = BulkFlow(net, "b", "client", TcpConfig(rcvbuf_bytes=rcvbuf))
    flow.start()
    env.run(seconds(20))
    rate = flow.bytes_received * 8 / 20
    cap = rcvbuf * 8 / 0.020
    assert rate <= cap * 1.02
    assert rate >= cap * 0.8  # and it is the window, not the 100 Mbit/s link, that binds
    assert rate < 0.2 * 100e6


def test_losses_are_recovered_and_every_byte_arrives_once_in_order() -> None:
    env = Environment()
    net = dumbbell(env, queue_bytes=WIRE)  # one packet of buffer: heavy loss
    competitor = BulkFlow(net, "c", "client", TcpConfig())
    competitor.start()
    http = HttpClient(net, "b", "client", TcpConfig(congestion_control="newreno"))
    sizes = [3_000_000, 700_001, 1]
    got = _transfer(env, http, sizes)
    env.run(seconds(120))
    assert [r.size_bytes for r in got] == sizes
    conn = http.connections[0]
    assert conn.receiver.rcv_nxt == sum(sizes) == conn.receiver.bytes_received
    assert conn.sender.retransmits > 0
    assert conn.sender.bytes_sent > sum(sizes)  # retransmitted bytes come on top
    assert net.links[("router", "client")].drops > 0


@settings(max_examples=30, deadline=None)
@given(
    queue_packets=st.integers(1, 20),
    size=st.integers(1, 400_000),
    iw=st.integers(1, 10),
    cc=st.sampled_from(["newreno", "cubic"]),
    delayed=st.booleans(),
    persistent=st.booleans(),
    competitors=st.integers(0, 2),
)
def test_bytes_are_conserved_under_any_loss_pattern(
    queue_packets: int,
    size: int,
    iw: int,
    cc: str,
    delayed: bool,
    persistent: bool,
    competitors: int,
) -> None:
    env = Environment()
    net = dumbbell(env, queue_bytes=queue_packets * WIRE)
    for _ in range(competitors):
        BulkFlow(net, "c", "client", TcpConfig()).start()
    cfg = TcpConfig(
        initial_window_segments=iw,
        congestion_control=cc,
        delayed_ack=delayed,  # type: ignore[arg-type]
    )
    http = HttpClient(net, "b", "client", cfg, persistent=persistent)
    got = _transfer(env, http, [size, size])
    env.run(seconds(200))
    assert [r.size_bytes for r in got] == [size, size]
    assert all(r.requested_ns < r.first_byte_ns <= r.done_ns for r in got)
    delivered = sum(c.receiver.bytes_received for c in http.connections)
    assert delivered == 2 * size
    for conn in http.connections:
        assert conn.receiver.window >= 0
        assert conn.sender.snd_una <= conn.sender.snd_nxt <= conn.sender.snd_max
        assert conn.receiver.ooo_bytes == 0


def test_a_small_request_takes_two_round_trips_on_a_new_connection() -> None:
    env = Environment()
    net = dumbbell(env, queue_bytes=1 << 20, rate_bps=10e9, rtt_ms=10)
    http = HttpClient(net, "b", "client", TcpConfig(), persistent=False)
    got = _transfer(env, http, [1000, 1000])
    env.run(seconds(1))
    # Handshake (1 RTT) + request/response (1 RTT); serialisation is negligible at 10 Gbit/s.
    for response in got:
        assert response.new_connection
        assert ms(20) <= response.done_ns - response.requested_ns <= ms(20.1)
    assert len(http.connections) == 2


def test_a_new_connection_sends_at_most_its_initial_window_in_the_first_rtt() -> None:
    env = Environment()
    net = dumbbell(env, queue_bytes=1 << 20, rate_bps=10e9, rtt_ms=100)
    http = HttpClient(net, "b", "client", TcpConfig(initial_window_segments=4))
    _transfer(env, http, [1_000_000])
    request_arrives = ms(150)  # SYN 50 ms up, SYN-ACK 50 ms down, request 50 ms up
    env.run(request_arrives + ms(99))  # before the first ACK can return
    assert http.connections[0].sender.segments_sent == 4


def _slow_start_cwnd(counting: str, delayed: bool) -> tuple[float, int]:
    """Final cwnd and ACK count of a loss-free 100-segment transfer in slow start."""
    env = Environment()
    net = dumbbell(env, queue_bytes=1 << 22, rate_bps=100e6, rtt_ms=20)
    cfg = TcpConfig(congestion_control="newreno", hystart=False, delayed_ack=delayed,
                    ack_counting=counting)  # type: ignore[arg-type]  # fmt: skip
    http = HttpClient(net, "b", "client", cfg)
    _transfer(env, http, [100 * MSS])
    env.run(seconds(5))
    conn = http.connections[0]
    assert conn.sender.timeouts == 0 and conn.sender.snd_una == 100 * MSS  # all acked, no loss
    return conn.sender.cwnd, conn.receiver.acks_sent


def test_an_ack_per_segment_grows_the_window_the_same_under_either_counting() -> None:
    assert _slow_start_cwnd("per-ack", delayed=False) == _slow_start_cwnd("bytes", delayed=False)


def test_old_linux_grows_the_window_by_one_segment_per_ack_however_much_it_acks() -> None:
    """Linux < 3.14 slow start: +1 MSS per ACK, so delayed (stretch) ACKs halve growth."""
    iw = 10 * MSS
    per_ack, acks = _slow_start_cwnd("per-ack", delayed=True)
    by_bytes, _ = _slow_start_cwnd("bytes", delayed=True)
    assert by_bytes == iw + 100 * MSS  # RFC 3465: one MSS per MSS acknowledged
    assert per_ack == iw + acks * MSS  # one MSS per ACK
    assert 45 <= acks <= 60  # every second segment (and the ACK timeout for a lone one)


def test_ack_counting_is_checked() -> None:
    with pytest.raises(ValueError, match="ack_counting"):
        TcpConfig(ack_counting="segments")  # type: ignore[arg-type]


def _clamped_cwnd(validation: bool) -> tuple[float, int]:
    """cwnd and window after 8 s of a bulk download whose receiver clamps its window."""
    env = Environment()
    net = dumbbell(env, queue_bytes=1 << 22, rate_bps=100e6, rtt_ms=20)
    flow = BulkFlow(net, "b", "client", TcpConfig(cwnd_validation=validation))
    flow.connection.receiver.set_window_clamp(20 * MSS)
    flow.start()
    env.run(seconds(8))
    return flow.connection.sender.cwnd, flow.connection.sender.rwnd


def test_a_window_limited_sender_does_not_grow_a_cwnd_it_cannot_use() -> None:
    # Linux tcp_is_cwnd_limited: an ACK grows cwnd only if the window was full in the
    # round, or in slow start up to twice the most in flight (20 segments here).
    cwnd, rwnd = _clamped_cwnd(validation=True)
    assert rwnd == 20 * MSS and cwnd <= 2 * rwnd + 2 * MSS  # + one delayed ACK's growth
    unvalidated, _ = _clamped_cwnd(validation=False)
    assert unvalidated > 100 * MSS  # every ACK grew it, though never more than 20 were out


def test_a_congestion_control_plugs_in_through_the_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mqoe.device.net.tcp import CONGESTION_CONTROLS, NewReno, TcpSender

    class Timid(NewReno):
        """NewReno that never grows past four segments (a stand-in for a new algorithm)."""

        name = "timid"

        def cong_avoid(self, sender: TcpSender, acked: int, now_ns: int) -> None:
            sender.cwnd = min(sender.cwnd + sender.mss * acked / sender.cwnd, 4.0 * sender.mss)

        def ssthresh(self, sender: TcpSender) -> float:
            return 2.0 * sender.mss

    with pytest.raises(ValueError, match="congestion_control must be one of cubic, newreno"):
        TcpConfig(congestion_control="timid")
    monkeypatch.setitem(CONGESTION_CONTROLS, "timid", Timid)
    goodput = {}
    for cc in ("newreno", "timid"):
        env = Environment()
        net = dumbbell(env, queue_bytes=60_000, rate_bps=10e6, rtt_ms=40.0)
        flow = BulkFlow(net, "b", "client", TcpConfig(congestion_control=cc, hystart=False))
        flow.start()
        env.run(seconds(10))
        assert isinstance(flow.connection.sender.cc, CONGESTION_CONTROLS[cc])
        goodput[cc] = flow.bytes_received
    # Four segments per 40 ms RTT is ~1.2 Mbit/s: far below the link once slow start ends.
    assert goodput["timid"] < 0.5 * goodput["newreno"]
