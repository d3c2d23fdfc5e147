"""Receiver controls: the rule interface, its parser, and setsockopt on real sockets."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.emulation.receiver import (
    FixedReceiverRule,
    NetpisReceiverRule,
    ReceiverController,
    ReceiverSettings,
    SocketObservation,
    make_receiver_rule,
    observe,
)
from mqoe.errors import UserError
from mqoe.policies.netpis import NetPisParams

OBS = SocketObservation(1.0, "video", 4.0, 0.0, 65536, 1000)


@pytest.fixture
def connected() -> Iterator[tuple[socket.socket, socket.socket]]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.socket()
    client.connect(listener.getsockname())
    server, _ = listener.accept()
    yield client, server
    for s in (client, server, listener):
        s.close()


def test_fixed_rule_leaves_unset_fields_alone() -> None:
    assert FixedReceiverRule().decide(OBS) == ReceiverSettings()
    rule = FixedReceiverRule(window_clamp_bytes=4096, quickack=True)
    assert rule.decide(OBS) == ReceiverSettings(None, 4096, True)


def test_rule_specs_parse_and_bad_ones_are_user_errors() -> None:
    rule = make_receiver_rule("fixed:rcvbuf_bytes=32768,quickack=true")
    assert rule.decide(OBS) == ReceiverSettings(32768, None, True)
    for bad in ("nope", "fixed:window=1", "fixed:rcvbuf_bytes=-5", "fixed:rcvbuf_bytes"):
        with pytest.raises(UserError):
            make_receiver_rule(bad)


@given(st.integers(0, 1 << 24), st.integers(0, 1 << 24), st.booleans())
def test_fixed_rule_maps_zero_to_none(rcvbuf: int, clamp: int, quick: bool) -> None:
    settings = FixedReceiverRule(rcvbuf_bytes=rcvbuf, window_clamp_bytes=clamp,
                                 quickack=quick).decide(OBS)  # fmt: skip
    assert settings.rcvbuf_bytes == (rcvbuf or None)
    assert settings.window_clamp_bytes == (clamp or None)
    assert settings.quickack == (True if quick else None)


def test_controller_sets_the_options_on_the_socket(
    connected: tuple[socket.socket, socket.socket],
) -> None:
    client, _ = connected
    controller = ReceiverController(FixedReceiverRule(rcvbuf_bytes=20000, window_clamp_bytes=5000))
    controller.update(client, 0.5, "video")
    assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP) == 5000
    assert client.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == 40000  # kernel doubles
    assert controller.applied == [(0.5, "video", ReceiverSettings(20000, 5000, None))]
    controller.update(client, 0.7, "video")  # same decision again: logged once
    assert len(controller.applied) == 1


def test_without_a_rule_nothing_is_touched(connected: tuple[socket.socket, socket.socket]) -> None:
    client, _ = connected
    before = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP)
    controller = ReceiverController(None)
    controller.before_connect(client, 0.0, "video")
    controller.update(client, 0.0, "video")
    assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP) == before
    assert controller.applied == []


def test_observation_reads_tcp_info(connected: tuple[socket.socket, socket.socket]) -> None:
    client, server = connected
    server.sendall(b"a" * 5000)
    got = 0
    while got < 5000:
        got += len(client.recv(65536))
    obs = observe(client, 2.0, "video")
    assert obs.bytes_received == 5000
    assert obs.rtt_ms > 0 and obs.rcv_space_bytes > 0


def test_the_clamp_is_reapplied_after_each_receive(
    connected: tuple[socket.socket, socket.socket],
) -> None:
    client, _ = connected
    controller = ReceiverController(FixedReceiverRule(window_clamp_bytes=4096))
    controller.update(client, 0.0, "video")
    # receive-buffer autotuning raises window_clamp as it grows the buffer
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, 1 << 20)
    controller.after_receive(client)
    assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP) == 4096


def _obs(t: float, flow: str, unread: int) -> SocketObservation:
    return SocketObservation(t, flow, 4.0, 0.0, 65536, 0, unread_bytes=unread)


def test_netpis_rule_shrinks_a_background_window_before_its_buffer() -> None:
    rule = make_receiver_rule("netpis:variant=both")
    assert isinstance(rule, NetpisReceiverRule)
    kernel = NetPisParams().kernel_rcvbuf_bytes
    steps = [rule.decide(_obs(0.01 * k, "competitor", 0)) for k in range(4)]
    # Case 2: first the window clamp comes down, the buffer stays (None = unchanged) …
    assert steps[0].rcvbuf_bytes is None
    small = steps[0].window_clamp_bytes
    assert small is not None and small < kernel
    # … then, nothing more being promised than the new size, the buffer follows.
    assert steps[1].rcvbuf_bytes == small and steps[1].window_clamp_bytes == small
    assert all(s.rcvbuf_bytes is None for s in steps[2:])  # settled
    # The foreground keeps at least the kernel's buffer and grows with its need.
    video = rule.decide(_obs(0.05, "video", 0))
    assert video.window_clamp_bytes == kernel and video.rcvbuf_bytes is None
    grown = rule.decide(_obs(0.06, "video", kernel))  # need 2 MB → × 1.6, capped at max
    assert grown.rcvbuf_bytes == NetPisParams().max_rcvbuf_bytes
    assert grown.window_clamp_bytes == kernel  # case 1: the buffer first, the window next
    assert rule.decide(_obs(0.07, "video", kernel)).window_clamp_bytes == grown.rcvbuf_bytes


def test_original_variant_leaves_every_socket_at_the_kernel_default() -> None:
    rule = make_receiver_rule("netpis:variant=original")
    kernel = NetPisParams().kernel_rcvbuf_bytes
    for flow in ("video", "competitor"):
        got = rule.decide(_obs(0.0, flow, 50_000))
        assert got.rcvbuf_bytes is None and got.window_clamp_bytes == kernel
    with pytest.raises(UserError, match="variant"):
        make_receiver_rule("netpis:variant=sometimes")


def test_a_periodic_rule_is_re_decided_while_data_arrives(
    connected: tuple[socket.socket, socket.socket],
) -> None:
    client, server = connected
    controller = ReceiverController(make_receiver_rule("netpis:variant=both,period_s=0.001"))
    controller.update(client, 0.0, "competitor")
    first = len(controller.applied)
    for _ in range(20):
        server.sendall(b"x" * 2000)
        client.recv(65536)
        time.sleep(0.002)
        controller.after_receive(client)
    assert len(controller.applied) > first  # case 2 went on: the buffer followed the clamp
    clamp = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP)
    assert clamp <= NetPisParams().kernel_rcvbuf_bytes // 8


def test_the_background_floor_is_a_rule_parameter() -> None:
    """The floor decides whether a clamped competitor can still fill a small-BDP queue."""
    for floor in (4096, 20_000):
        rule = make_receiver_rule(f"netpis:variant=both,min_rcvbuf_bytes={floor}")
        steps = [rule.decide(_obs(0.01 * k, "competitor", 0)) for k in range(3)]
        assert steps[-1].window_clamp_bytes == floor
