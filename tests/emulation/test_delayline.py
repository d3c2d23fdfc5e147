"""The delay line's mechanism on a socket pair (no root needed): hold, order, statistics."""

from __future__ import annotations

import os
import socket
import time

import pytest

from mqoe.emulation.delayline import DelayLine


def _run_line(delay_ms: float, packets: list[bytes], gap_s: float = 0.0):  # type: ignore[no-untyped-def]
    line_end, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    line_end.setblocking(False)
    line = DelayLine(line_end.fileno(), int(delay_ms * 1e6))
    sent = []
    for packet in packets:
        sent.append(time.monotonic_ns())
        peer.send(packet)
        time.sleep(gap_s)
    line.run(time.monotonic_ns() + int((delay_ms + 60) * 1e6))
    peer.setblocking(False)
    received = []
    while True:
        try:
            received.append(peer.recv(4096))
        except BlockingIOError:
            break
    line_end.close()
    peer.close()
    return line, sent, received


def test_delay_line_returns_every_packet_in_order() -> None:
    packets = [bytes([i]) * (i + 1) for i in range(50)]
    line, _, received = _run_line(5.0, packets)
    assert received == packets
    assert line.packets == 50
    assert sum(line.histogram) == 50


def test_delay_line_holds_each_packet_for_the_delay() -> None:
    delay_ms = 20.0
    line_end, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    line_end.setblocking(False)
    line = DelayLine(line_end.fileno(), int(delay_ms * 1e6))
    sent = time.monotonic_ns()
    peer.send(b"x")
    pid = os.fork()
    if pid == 0:  # the line runs in a child so the parent can time the echo
        line.run(sent + int(200e6))
        os._exit(0)
    peer.settimeout(1.0)
    assert peer.recv(10) == b"x"
    held_ms = (time.monotonic_ns() - sent) / 1e6
    os.waitpid(pid, 0)
    line_end.close()
    peer.close()
    # never early; late only by scheduling (generous: a shared, busy machine)
    assert delay_ms <= held_ms < delay_ms + 150


def test_statistics_quantiles_from_the_histogram() -> None:
    line = DelayLine(0, 0)
    line.histogram[0] = 90  # 90 packets within 10 µs
    line.histogram[99] = 10  # 10 packets 0.99–1.00 ms late
    line.packets, line.max_error_ns = 100, 995_000
    stats = line.stats(cpu_s=0.5, wall_s=10.0)
    assert stats.error_median_ms == pytest.approx(0.01)
    assert stats.error_p99_ms == pytest.approx(1.0)
    assert stats.error_max_ms == pytest.approx(0.995)
    assert stats.cpu_fraction == pytest.approx(0.05)


def test_negative_delay_is_rejected() -> None:
    with pytest.raises(ValueError, match="delay_ns"):
        DelayLine(0, -1)
