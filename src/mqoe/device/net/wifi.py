"""A shared Wi-Fi medium: the access point and its stations contend for one channel.

Every transmitter (the AP, each station) has its own drop-tail queue in bytes, but only
one frame is on the air at a time. Each frame costs its channel access (DIFS, backoff,
PHY preamble, SIFS and the link-layer ACK) plus its bytes (with the 802.11 MAC header)
at the PHY rate. The AP's downlink frames to every station share the AP's single queue.
Two contention models:

* ``fair`` (default, no randomness): DCF's long-run outcome — every backlogged
  transmitter gets an equal share of *transmission opportunities* (per-frame fairness,
  the cause of the 802.11 "performance anomaly"), served round-robin, each access
  paying the *mean* backoff;
* ``dcf`` (needs a ``random.Random``): the distributed coordination function itself
  (Bianchi, JSAC 2000) — each backlogged transmitter counts down a backoff drawn
  uniformly from [0, CW] slots, counters of the losers freeze while the channel is busy,
  the smallest counter transmits, equal counters collide (the channel is busy for the
  longest frame plus the ACK timeout, nothing is delivered, each collider doubles its
  CW up to CWmax and redraws; a frame is dropped after the retry limit). Per-frame
  fairness then holds on average only, and runs differ from seed to seed as real ones do.

This is the mechanism through which receiver-side ACK thinning frees air time: the
phone's pure ACKs are frames too, each paying the same access cost as a data frame.
Not modelled: A-MPDU aggregation, rate adaptation, power save, hidden terminals.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Final

from mqoe.device.net.link import Link, Packet
from mqoe.engine import Environment
from mqoe.engine.process import Scheduled
from mqoe.engine.rounding import round_half_even

# 802.11n, 5 GHz, 20 MHz, one spatial stream (IEEE 802.11-2012 §20; the overhead terms as
# in Bianchi, JSAC 2000, and Jun et al., "Theoretical maximum throughput of IEEE 802.11",
# NCA 2003): DIFS 34 µs + mean backoff CWmin/2 × slot = 7.5 × 9 µs + HT-mixed PHY
# preamble/header 40 µs, then SIFS 16 µs + the MAC ACK at a 24 Mbit/s basic rate (28 µs).
# (Final: compiled, constants rather than a module-dict lookup on every frame.)
DIFS_NS: Final = 34_000
SLOT_NS: Final = 9_000
PREAMBLE_NS: Final = 40_000
SIFS_NS: Final = 16_000
MAC_ACK_NS: Final = 28_000
# 802.11 OFDM PHY; dot11ShortRetryLimit
CW_MIN: Final = 15
CW_MAX: Final = 1023
RETRY_LIMIT: Final = 7
ACCESS_OVERHEAD_NS: Final = DIFS_NS + CW_MIN * SLOT_NS // 2 + PREAMBLE_NS + SIFS_NS + MAC_ACK_NS
# Without an ACK a sender waits SIFS + slot + PHY-RX-start delay (25 µs) before retrying.
ACK_TIMEOUT_NS: Final = SIFS_NS + SLOT_NS + 25_000
MAC_HEADER_BYTES: Final = 36  # 802.11 MAC header 24 + LLC/SNAP 8 + FCS 4
PHY_RATE_BPS: Final = 65e6  # MCS 7, one stream, 800 ns guard interval (a Galaxy Nexus-era phone)


class WifiInterface(Link):
    """One transmitter's queue on a :class:`WifiMedium` (drop-tail, bytes)."""

    __slots__ = ("airtime_ns", "backoff", "collisions", "cw", "frames", "medium", "retries")

    def __init__(self, medium: WifiMedium, queue_limit_bytes: int, delay_ns: int, name: str):
        super().__init__(medium.env, medium.phy_rate_bps, delay_ns, queue_limit_bytes, name)
        self.medium = medium
        self.airtime_ns = 0  # channel time this transmitter has used
        self.frames = 0
        self.backoff = -1  # dcf: slots left before it may transmit (-1 = none drawn)
        self.cw = CW_MIN
        self.retries = 0  # dcf: attempts of the head-of-line frame that collided
        self.collisions = 0

    def enqueue(self, packet: Packet) -> None:
        if self.queue_bytes + packet.size <= self.queue_limit_bytes:
            self._queue.push(packet)
            self.queue_bytes += packet.size
            self.medium.kick()
        else:
            self.drops += 1

    def _pop(self) -> Packet:
        packet = self._queue.pop()
        self.queue_bytes -= packet.size
        return packet

    @property
    def backlogged(self) -> bool:
        return len(self._queue) > 0


class WifiMedium(Scheduled):
    """One channel shared by an AP and its stations; see the module docstring.

    The medium is itself the heap's item for the end of what is on the air (one thing at
    a time: a frame, or a collision): no Timer, bound method or tuple per frame, and the
    same instant and insertion order as ``env.schedule(airtime, self._sent, (iface,
    packet))`` (``self._idle`` after a collision).
    """

    def __init__(
        self,
        env: Environment,
        phy_rate_bps: float = PHY_RATE_BPS,
        access_overhead_ns: int = ACCESS_OVERHEAD_NS,
        mac_header_bytes: int = MAC_HEADER_BYTES,
        rng: random.Random | None = None,
    ) -> None:
        """``rng`` switches contention from ``fair`` to ``dcf`` (module docstring)."""
        if phy_rate_bps <= 0 or access_overhead_ns < 0 or mac_header_bytes < 0:
            raise ValueError("Wi-Fi needs a PHY rate > 0 and non-negative overheads")
        self.rng = rng
        # rng.random, looked up once rather than on every backoff drawn.
        self._random: Callable[[], float] | None = rng.random if rng is not None else None
        self.collisions = 0
        self.retry_drops = 0
        self.env = env
        self.phy_rate_bps = phy_rate_bps
        self.access_overhead_ns = access_overhead_ns
        self.mac_header_bytes = mac_header_bytes
        self._ns_per_byte = 8e9 / phy_rate_bps
        self.interfaces: list[WifiInterface] = []
        self._busy = False
        # What is on the air: a frame of this interface, or (None) a collision.
        self._on_air: WifiInterface | None = None
        self._frame: Packet | None = None
        self._turn = 0  # round-robin position: who gets the next opportunity
        self.busy_ns = 0
        self._entry = env._entry_of(self)  # its heap entry: one thing on the air at a time

    def interface(self, name: str, queue_limit_bytes: int, delay_ns: int = 0) -> WifiInterface:
        """A new transmitter on this channel."""
        iface = WifiInterface(self, queue_limit_bytes, delay_ns, name)
        self.interfaces.append(iface)
        return iface

    def frame_airtime_ns(self, size_bytes: int) -> int:
        """Channel time of one frame carrying ``size_bytes`` of IP packet."""
        return self.access_overhead_ns + round_half_even(
            (size_bytes + self.mac_header_bytes) * self._ns_per_byte
        )

    def kick(self) -> None:
        """Start the next frame if the channel is idle and someone has one queued."""
        if self._busy:
            return
        if self._random is not None:
            self._contend(self._random)
            return
        interfaces = self.interfaces
        n = len(interfaces)
        for k in range(n):
            iface = interfaces[(self._turn + k) % n]
            if len(iface._queue):
                self._turn = (self._turn + k + 1) % n
                packet = iface._pop()
                self._transmit(iface, packet, self.frame_airtime_ns(packet.size))
                return

    def _transmit(self, iface: WifiInterface, packet: Packet, airtime: int) -> None:
        iface.airtime_ns += airtime
        iface.frames += 1
        self.busy_ns += airtime
        self._busy = True
        self._on_air = iface
        self._frame = packet
        self.env._push_own(airtime, self._entry)  # → _sent(iface, packet)

    def _contend(self, random: Callable[[], float]) -> None:
        """One DCF contention round among the backlogged transmitters (no allocation
        unless two counters tie)."""
        best = CW_MAX + 1
        winner: WifiInterface | None = None
        tie = False
        for iface in self.interfaces:
            if not len(iface._queue):
                continue
            if iface.backoff < 0:
                iface.backoff = int(random() * (iface.cw + 1))
            if iface.backoff < best:
                best, winner, tie = iface.backoff, iface, False
            elif iface.backoff == best:
                tie = True
        if winner is None:
            return
        for iface in self.interfaces:
            if len(iface._queue):
                iface.backoff -= best  # the others' counters freeze at what is left
        idle = DIFS_NS + best * SLOT_NS
        if not tie:
            packet = winner._pop()
            winner.backoff, winner.cw, winner.retries = -1, CW_MIN, 0
            self._transmit(
                winner, packet, idle + self._frame_ns(packet.size) + SIFS_NS + MAC_ACK_NS
            )
            return
        winners = [i for i in self.interfaces if len(i._queue) and i.backoff == 0]
        longest = max(self._frame_ns(iface._queue.first().size) for iface in winners)
        airtime = idle + longest + ACK_TIMEOUT_NS
        self.collisions += 1
        for iface in winners:
            iface.collisions += 1
            iface.airtime_ns += airtime
            iface.retries += 1
            if iface.retries > RETRY_LIMIT:  # give up on this frame
                iface._pop()
                iface.drops += 1
                self.retry_drops += 1
                iface.retries, iface.cw = 0, CW_MIN
            else:
                iface.cw = min(2 * iface.cw + 1, CW_MAX)
            iface.backoff = -1
        self.busy_ns += airtime
        self._busy = True
        self._on_air = None
        self.env._push_own(airtime, self._entry)  # → _idle()

    def _frame_ns(self, size_bytes: int) -> int:
        return PREAMBLE_NS + round_half_even(
            (size_bytes + self.mac_header_bytes) * self._ns_per_byte
        )

    def _trigger(self) -> None:
        """The frame or collision on the air has ended."""
        iface = self._on_air
        if iface is None:
            self._idle()
            return
        packet = self._frame
        assert packet is not None
        self._on_air = None
        self._frame = None
        self._sent(iface, packet)

    def _idle(self) -> None:
        self._busy = False
        self.kick()

    def _sent(self, iface: WifiInterface, packet: Packet) -> None:
        iface.packets_forwarded += 1
        iface.bytes_forwarded += packet.size
        iface.propagation.put(packet)
        self._busy = False
        self.kick()


__all__ = [
    "ACCESS_OVERHEAD_NS",
    "CW_MAX",
    "CW_MIN",
    "MAC_HEADER_BYTES",
    "PHY_RATE_BPS",
    "RETRY_LIMIT",
    "WifiInterface",
    "WifiMedium",
]
