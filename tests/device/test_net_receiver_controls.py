"""Receiver controls (rcvbuf, window clamp, delayed ACK) and the shared Wi-Fi medium."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.device.net import BulkFlow, Network, TcpConfig, WifiMedium
from mqoe.device.net.link import Packet
from mqoe.device.net.wifi import ACCESS_OVERHEAD_NS, MAC_HEADER_BYTES
from mqoe.engine import Environment, ms, seconds
from mqoe.policies.netpis import Allocator, SocketObservation

MSS = 1460


def wired(env: Environment, rtt_ms: float = 40.0, rate_bps: float = 100e6) -> Network:
    net = Network(env)
    net.add_link("server", "client", rate_bps, ms(rtt_ms / 2), 1 << 24)
    return net


def wifi(env: Environment, rtt_ms: float = 20.0) -> tuple[Network, WifiMedium]:
    net = Network(env)
    medium = WifiMedium(env)
    net.add_wifi(medium, "ap", ["phone"], ap_queue_bytes=1 << 18, station_queue_bytes=1 << 18)
    net.add_link("server", "ap", 1e9, ms(rtt_ms / 2), 1 << 24)
    return net, medium


def test_window_clamp_caps_throughput_at_clamp_over_rtt() -> None:
    env = Environment()
    flow = BulkFlow(wired(env, rtt_ms=100.0), "server", "client", TcpConfig())
    flow.connection.receiver.set_window_clamp(20 * MSS)
    flow.start()
    env.run(seconds(3))
    before = flow.bytes_received
    env.run(seconds(13))
    rate = (flow.bytes_received - before) / 10  # bytes/s
    expected = 20 * MSS / 0.1  # one clamp per RTT: 292 kB/s
    assert 0.9 * expected <= rate <= 1.02 * expected
    assert flow.connection.sender.rwnd <= 20 * MSS


def _limited_share(clamp_segments: int | None) -> tuple[float, float]:
    """(rwnd-limited share of busy time, busy time in s) of an 8 s bulk download."""
    env = Environment()
    flow = BulkFlow(wired(env, rtt_ms=100.0, rate_bps=10e6), "server", "client", TcpConfig())
    if clamp_segments is not None:
        flow.connection.receiver.set_window_clamp(clamp_segments * MSS)
    flow.start()
    env.run(seconds(8))
    snd = flow.connection.sender
    return snd.rwnd_limited_ns / snd.busy_ns, snd.busy_ns / 1e9


def test_chrono_stats_tell_whether_the_receiver_window_held_the_sender_back() -> None:
    # BDP 10 Mbit/s × 100 ms = 125 kB: a 20-segment (29 kB) window limits the sender
    # nearly all the time; with the default 1 MB buffer cwnd (loss, queue) limits it.
    limited, busy = _limited_share(20)
    assert limited > 0.95 and 7.5 < busy <= 8.0  # busy from the first segment to the end
    free, busy = _limited_share(None)
    assert free < 0.05 and 7.5 < busy <= 8.0


def test_default_controls_are_the_kernel_defaults() -> None:
    env = Environment()
    cfg = TcpConfig()
    rcv = BulkFlow(wired(env), "server", "client", cfg).connection.receiver
    assert (rcv.window_clamp, rcv.delack_bytes, rcv.ato_ns) == (None, cfg.mss_bytes, cfg.ato_ns)
    rcv.set_delayed_ack(10 * MSS, ms(200))
    rcv.set_delayed_ack(None, None)
    assert (rcv.delack_bytes, rcv.ato_ns) == (cfg.mss_bytes, cfg.ato_ns)


def _acks_per_segment(bound_bytes: int | None) -> float:
    env = Environment()
    flow = BulkFlow(wired(env, rtt_ms=40.0, rate_bps=20e6), "server", "client", TcpConfig())
    flow.connection.receiver.set_delayed_ack(bound_bytes, ms(200) if bound_bytes else None)
    flow.start()
    env.run(seconds(2))
    rcv, snd = flow.connection.receiver, flow.connection.sender
    a0, s0 = rcv.acks_sent, snd.segments_sent
    env.run(seconds(6))
    return (rcv.acks_sent - a0) / (snd.segments_sent - s0)


def test_a_larger_bounded_frame_size_thins_acks_as_computed() -> None:
    # An ACK goes out once more than `bound` bytes are unacknowledged: every
    # floor(bound / MSS) + 1 full segments. Kernel default (one MSS): every 2nd.
    assert abs(_acks_per_segment(None) - 1 / 2) < 0.02
    assert abs(_acks_per_segment(10 * MSS) - 1 / 11) < 0.01


def test_wifi_frame_costs_overhead_plus_bytes_at_the_phy_rate() -> None:
    env = Environment()
    medium = WifiMedium(env, phy_rate_bps=65e6)
    iface = medium.interface("ap", 1 << 16)
    arrived: list[int] = []
    packet = Packet(None, 0, 1460, (iface,), lambda p: arrived.append(env.now), 0)
    iface.enqueue(packet)
    env.run(ms(10))
    expected = ACCESS_OVERHEAD_NS + round((1500 + MAC_HEADER_BYTES) * 8e9 / 65e6)
    assert arrived == [expected]


def test_backlogged_transmitters_alternate_frames() -> None:
    env = Environment()
    medium = WifiMedium(env)
    ap, sta = medium.interface("ap", 1 << 20), medium.interface("sta", 1 << 20)
    order: list[str] = []
    for _ in range(4):
        ap.enqueue(Packet(None, 0, 1460, (ap,), lambda p: order.append("ap"), 0))
        sta.enqueue(Packet(None, 0, 0, (sta,), lambda p: order.append("sta"), 0))
    env.run(ms(50))
    assert order == ["ap", "sta"] * 4  # per-frame fairness, whatever the frame sizes


def _wifi_goodput(bound_bytes: int | None) -> tuple[float, int]:
    env = Environment()
    net, _medium = wifi(env)
    flow = BulkFlow(net, "server", "phone", TcpConfig())
    flow.connection.receiver.set_delayed_ack(bound_bytes, ms(100) if bound_bytes else None)
    flow.start()
    env.run(seconds(3))
    before = flow.bytes_received
    env.run(seconds(13))
    return (flow.bytes_received - before) * 8 / 10, net.links[("phone", "ap")].frames  # type: ignore[attr-defined]


def test_fewer_acks_free_airtime_for_data() -> None:
    default, acks_default = _wifi_goodput(None)
    thinned, acks_thinned = _wifi_goodput(8 * MSS)
    assert acks_thinned < acks_default / 3
    # Each ACK frame costs an access overhead: data gets the airtime they no longer use.
    assert thinned > 1.1 * default
    assert default < 65e6  # sanity: under the PHY rate


@settings(max_examples=12, deadline=None)
@given(
    targets=st.lists(st.integers(4 * MSS, 1 << 20), min_size=3, max_size=6),
    foreground=st.booleans(),
)
def test_netpis_r_ordering_never_overruns_the_buffer(targets: list[int], foreground: bool) -> None:
    """Drive a live connection through NetPIS-R decisions towards changing needs: the
    buffer never drops below what was already promised, so nothing is refused in-window."""
    env = Environment()
    flow = BulkFlow(wired(env, rtt_ms=30.0, rate_bps=50e6), "server", "client", TcpConfig(),
                    auto_read=False)  # fmt: skip
    flow.start()
    rcv = flow.connection.receiver
    allocator = Allocator("netpis")
    step = {"need": targets[0]}

    def read(_: object) -> None:
        rcv.read(rcv.unread // 2)
        env.schedule(ms(7), read)

    def decide(_: object) -> None:
        s = allocator.decide(
            SocketObservation(step["need"], rcv.rcvbuf_bytes, rcv.window_clamp,
                              rcv.committed_bytes, foreground, True)
        )  # fmt: skip
        if s.rcvbuf_bytes > rcv.rcvbuf_bytes:
            rcv.set_rcvbuf(s.rcvbuf_bytes)
            rcv.set_window_clamp(s.window_clamp_bytes)
        else:
            rcv.set_window_clamp(s.window_clamp_bytes)
            rcv.set_rcvbuf(s.rcvbuf_bytes)
        env.schedule(ms(5), decide)

    env.schedule(ms(7), read)
    env.schedule(ms(5), decide)
    for i, need in enumerate(targets):
        step["need"] = need
        env.run(ms(150) * (i + 1))
    assert rcv.overruns == 0
    assert flow.bytes_received > 0


def test_shrinking_the_buffer_before_the_window_overruns_it() -> None:
    """The failure case 2 prevents: cut the buffer while a large window is promised."""
    env = Environment()
    flow = BulkFlow(wired(env, rtt_ms=40.0, rate_bps=50e6), "server", "client", TcpConfig(),
                    auto_read=False)  # fmt: skip
    flow.start()
    rcv = flow.connection.receiver

    def read(_: object) -> None:
        rcv.read()
        env.schedule(ms(5), read)

    env.schedule(ms(5), read)
    env.run(seconds(1))
    rcv.set_rcvbuf(8 * MSS)  # buffer first: the sender still has the old window
    env.run(seconds(2))
    assert rcv.overruns > 0


def _dcf_run(seed: int, stations: int, frames: int) -> tuple[WifiMedium, list[int], list[str]]:
    env = Environment()
    medium = WifiMedium(env, rng=random.Random(seed))
    ifaces = [medium.interface(f"s{i}", 1 << 24) for i in range(stations)]
    delivered = [0] * stations
    order: list[str] = []

    def arrived(i: int) -> Callable[[Packet], None]:
        def done(_: Packet) -> None:
            delivered[i] += 1
            order.append(ifaces[i].name)

        return done

    for i, iface in enumerate(ifaces):
        for _ in range(frames):
            iface.enqueue(Packet(None, 0, 1460, (iface,), arrived(i), 0))
    env.run(seconds(60))
    return medium, delivered, order


def test_dcf_shares_frames_equally_on_average_and_collides_as_bianchi() -> None:
    medium, delivered, order = _dcf_run(seed=3, stations=2, frames=4000)
    ifaces = medium.interfaces
    # Conservation: every frame was delivered or dropped after the retry limit.
    assert [d + i.drops for d, i in zip(delivered, ifaces, strict=True)] == [4000, 4000]
    # Not round-robin any more: somebody wins twice in a row now and then …
    assert any(a == b for a, b in itertools.pairwise(order))
    # … but over the first 4000 frames the shares are close to equal (per-frame fairness).
    first = order[:4000]
    assert abs(first.count("s0") - first.count("s1")) < 0.06 * 4000
    # Two saturated stations with CW 15: a transmission attempt collides with
    # probability ≈ 1/16 with the other's counter (Bianchi's fixed point gives ~0.06–0.1).
    attempts = sum(delivered) + medium.collisions
    assert 0.03 < medium.collisions / attempts < 0.15


def test_dcf_is_deterministic_per_seed_and_differs_between_seeds() -> None:
    a = _dcf_run(seed=1, stations=3, frames=300)[2]
    assert a == _dcf_run(seed=1, stations=3, frames=300)[2]
    assert a != _dcf_run(seed=2, stations=3, frames=300)[2]


def test_dcf_mean_access_cost_is_close_to_the_fair_models() -> None:
    # One station alone: no collisions, backoff uniform on [0, 15] → mean 7.5 slots, the
    # fair model's fixed ACCESS_OVERHEAD_NS.
    medium, delivered, _ = _dcf_run(seed=5, stations=1, frames=5000)
    assert delivered == [5000] and medium.collisions == 0
    per_frame = medium.busy_ns / 5000 - round((1500 + MAC_HEADER_BYTES) * 8e9 / 65e6)
    assert abs(per_frame - ACCESS_OVERHEAD_NS) < 0.03 * ACCESS_OVERHEAD_NS
