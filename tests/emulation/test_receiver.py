"""Receiver controls: the rule interface, its parser, and setsockopt on real sockets."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.emulation.receiver import (
    FixedReceiverRule,
    ReceiverController,
    ReceiverSettings,
    SocketObservation,
    make_receiver_rule,
    observe,
)
from mqoe.errors import UserError

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
