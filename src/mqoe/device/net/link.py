"""Links with a drop-tail queue in bytes, and packets that travel a route of links.

A link serialises one packet at a time at its rate, then delivers it after its
propagation delay; packets arriving while it is busy wait in a FIFO whose capacity is
counted in bytes (like Linux's ``bfifo``); a packet that does not fit is dropped. The
packet being serialised is no longer in the queue (as with a qdisc and a NIC).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from mqoe.engine import DelayLine, Environment, Fifo
from mqoe.engine.process import Scheduled
from mqoe.engine.rounding import round_half_even

HEADER_BYTES: Final = 40  # IPv4 + TCP headers without options (RFC 791, RFC 793)


class Packet:
    """A TCP segment or ACK on the wire. ``size`` counts headers (wire bytes)."""

    __slots__ = (
        "ack",
        "flow",
        "hop",
        "length",
        "route",
        "rwnd",
        "sack",
        "seq",
        "sink",
        "size",
        "ts",
        "tsecr",
    )

    def __init__(
        self,
        flow: Any,
        seq: int,
        length: int,
        route: tuple[Link, ...],
        sink: Callable[[Packet], None],
        ts: int,
    ) -> None:
        self.flow = flow  # the connection it belongs to
        self.seq = seq  # first payload byte (data) — unused for pure ACKs
        self.length = length  # payload bytes (0 for a pure ACK)
        self.size = length + HEADER_BYTES
        self.route = route
        self.hop = 0
        self.sink = sink  # called on arrival at the end of the route
        self.ts = ts  # sender's timestamp (TCP timestamps option, RFC 7323)
        self.ack = 0
        self.rwnd = 0
        self.tsecr = -1  # echoed timestamp; −1 = none
        self.sack: tuple[tuple[int, int], ...] | None = None  # SACK blocks (RFC 2018)


def send(packet: Packet) -> None:
    """Put a packet on the first link of its route."""
    packet.route[0].enqueue(packet)


class Link(Scheduled):
    """One direction of a link: rate, propagation delay, drop-tail queue (bytes).

    The link is itself the heap's item for the end of the transmission in progress (one
    at a time): no Timer and no bound method per packet, and the same instant and
    insertion order as ``env.schedule(tx_ns, self._transmitted, packet)``.
    """

    __slots__ = (
        "_busy",
        "_entry",
        "_queue",
        "_sending",
        "_tx_ns_per_byte",
        "bytes_forwarded",
        "drops",
        "env",
        "name",
        "packets_forwarded",
        "propagation",
        "queue_bytes",
        "queue_limit_bytes",
        "rate_bps",
    )

    def __init__(
        self,
        env: Environment,
        rate_bps: float,
        delay_ns: int,
        queue_limit_bytes: int,
        name: str = "",
    ) -> None:
        if rate_bps <= 0 or delay_ns < 0 or queue_limit_bytes < 0:
            raise ValueError("link needs rate > 0, delay ≥ 0 and queue limit ≥ 0")
        self.env = env
        self.name = name
        self.rate_bps = rate_bps
        self.queue_limit_bytes = queue_limit_bytes
        self._tx_ns_per_byte = 8e9 / rate_bps
        # Packets propagating to the far end: one heap entry per link, not per packet.
        self.propagation: DelayLine[Packet] = DelayLine(env, delay_ns, arrive)
        self._queue: Fifo[Packet] = Fifo()
        self._busy = False
        self._sending: Packet | None = None  # the packet being serialised
        self._entry = env._entry_of(self)  # its heap entry, one transmission at a time
        self.queue_bytes = 0
        self.drops = 0
        self.packets_forwarded = 0
        self.bytes_forwarded = 0

    @property
    def delay_ns(self) -> int:
        """Propagation delay (ns)."""
        return self.propagation.delay_ns

    def enqueue(self, packet: Packet) -> None:
        if not self._busy:
            self._transmit(packet)
        elif self.queue_bytes + packet.size <= self.queue_limit_bytes:
            self._queue.push(packet)
            self.queue_bytes += packet.size
        else:
            self.drops += 1

    def _transmit(self, packet: Packet) -> None:
        self._busy = True
        self._sending = packet
        tx_ns = max(1, round_half_even(packet.size * self._tx_ns_per_byte))
        self.env._push_own(tx_ns, self._entry)

    def _trigger(self) -> None:
        packet = self._sending
        assert packet is not None
        self._sending = None
        self._transmitted(packet)

    def _transmitted(self, packet: Packet) -> None:
        self.packets_forwarded += 1
        self.bytes_forwarded += packet.size
        self.propagation.put(packet)
        if len(self._queue):
            nxt = self._queue.pop()
            self.queue_bytes -= nxt.size
            self._transmit(nxt)
        else:
            self._busy = False


def arrive(packet: Packet) -> None:
    """A packet reached the far end of its current link: on to the next, or its sink."""
    packet.hop += 1
    if packet.hop < len(packet.route):
        packet.route[packet.hop].enqueue(packet)
    else:
        packet.sink(packet)
