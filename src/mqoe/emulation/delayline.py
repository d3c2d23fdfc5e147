"""The base-RTT delay line: a user-space TUN program in the router namespace.

Policy routing sends every packet arriving on a router veth into the TUN device; this
program reads it, holds it for ``delay_ms`` and writes it back, and the router then
forwards it normally (to the bottleneck, or back towards a server). Each packet passes
the router once per direction, so the base RTT is 2 × ``delay_ms`` plus the stack's own
cost. The kernel here has no netem, and eBPF cannot hold packets without fq/etf, so a
user-space hold is the honest option; its cost and timing error are measured on every
run and reported: error = (write time − due time) per packet, as a histogram in 10 µs
bins, plus the process's CPU time.

Constant delay means FIFO order, so a deque suffices: no heap, no per-packet objects
beyond the packet bytes and one tuple.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import time
from collections import deque
from dataclasses import dataclass

_TUNSETIFF = 0x400454CA
_IFF_TUN, _IFF_NO_PI = 0x0001, 0x1000
_BIN_NS = 10_000  # histogram resolution of the timing error (10 µs)
_BINS = 5_000  # up to 50 ms; later writes land in the last bin
_MAX_PACKET = 65_536


@dataclass(frozen=True)
class DelayStats:
    packets: int
    cpu_s: float
    wall_s: float
    error_median_ms: float
    error_p99_ms: float
    error_max_ms: float

    @property
    def cpu_fraction(self) -> float:
        """CPU time over wall time (1.0 = one core busy)."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


def open_tun(name: str) -> int:
    """Attach to an existing TUN device (no packet-info header), non-blocking."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TUN | _IFF_NO_PI))
    return fd


class DelayLine:
    """Hold each packet read from ``fd`` for ``delay_ns``, then write it back to ``fd``."""

    def __init__(self, fd: int, delay_ns: int) -> None:
        if delay_ns < 0:
            raise ValueError("delay_ns must be ≥ 0")
        self.fd = fd
        self.delay_ns = delay_ns
        self.histogram = [0] * _BINS
        self.packets = 0
        self.max_error_ns = 0

    def run(self, until_ns: int, stop_fd: int | None = None) -> None:
        """Forward packets until the monotonic clock reaches ``until_ns`` (or ``stop_fd``
        becomes readable)."""
        fd, delay, read, write = self.fd, self.delay_ns, os.read, os.write
        clock, hist = time.monotonic_ns, self.histogram
        held: deque[tuple[int, bytes]] = deque()
        watch = [fd] if stop_fd is None else [fd, stop_fd]
        while True:
            now = clock()
            if now >= until_ns:
                break
            wait_ns = held[0][0] - now if held else until_ns - now
            ready, _, _ = select.select(watch, [], [], max(wait_ns, 0) / 1e9)
            if stop_fd is not None and stop_fd in ready:
                break
            now = clock()
            if fd in ready:
                due = now + delay
                try:
                    while True:
                        held.append((due, read(fd, _MAX_PACKET)))
                except BlockingIOError:
                    pass
                now = clock()
            while held and held[0][0] <= now:
                due, packet = held.popleft()
                try:  # noqa: SIM105 (a try is cheaper than suppress() per packet)
                    write(fd, packet)
                except OSError:
                    pass  # a packet the stack refuses is a drop, as on a wire
                late = now - due
                hist[min(late // _BIN_NS, _BINS - 1)] += 1
                self.packets += 1
                if late > self.max_error_ns:
                    self.max_error_ns = late

    def stats(self, cpu_s: float, wall_s: float) -> DelayStats:
        return DelayStats(
            packets=self.packets,
            cpu_s=cpu_s,
            wall_s=wall_s,
            error_median_ms=self._quantile(0.5),
            error_p99_ms=self._quantile(0.99),
            error_max_ms=self.max_error_ns / 1e6,
        )

    def _quantile(self, q: float) -> float:
        """Upper edge of the 10 µs bin holding quantile ``q`` of the timing error (ms)."""
        if self.packets == 0:
            return float("nan")
        target, seen = q * self.packets, 0
        for index, count in enumerate(self.histogram):
            seen += count
            if seen >= target:
                return (index + 1) * _BIN_NS / 1e6
        return _BINS * _BIN_NS / 1e6
