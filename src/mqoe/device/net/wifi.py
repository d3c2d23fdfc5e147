"""A shared Wi-Fi medium: the access point and its stations contend for one channel.

Every transmitter (the AP, each station) has its own drop-tail queue in bytes, but only
one frame is on the air at a time. Each frame costs a fixed per-access overhead (DCF
contention plus PHY preamble and the link-layer ACK) plus its bytes (with the 802.11 MAC
header) at the PHY rate. Contention is modelled as DCF's long-run outcome: every
backlogged transmitter gets an equal share of *transmission opportunities* (per-frame
fairness, the cause of the 802.11 "performance anomaly"), served round-robin so runs are
deterministic. The AP's downlink frames to every station share the AP's single queue.

This is the mechanism through which receiver-side ACK thinning frees air time: the
phone's pure ACKs are frames too, each paying the same access overhead as a data frame.
Not modelled: collisions and retries, A-MPDU aggregation, rate adaptation, power save.
"""

from __future__ import annotations

from mqoe.device.net.link import Link, Packet, arrive
from mqoe.engine import Environment

# 802.11n, 5 GHz, 20 MHz, one spatial stream (IEEE 802.11-2012 §20; the overhead terms as
# in Bianchi, JSAC 2000, and Jun et al., "Theoretical maximum throughput of IEEE 802.11",
# NCA 2003): DIFS 34 µs + mean backoff CWmin/2 × slot = 7.5 × 9 µs + HT-mixed PHY
# preamble/header 40 µs, then SIFS 16 µs + the MAC ACK at a 24 Mbit/s basic rate (28 µs).
ACCESS_OVERHEAD_NS = 34_000 + 67_500 + 40_000 + 16_000 + 28_000
MAC_HEADER_BYTES = 36  # 802.11 MAC header 24 + LLC/SNAP 8 + FCS 4
PHY_RATE_BPS = 65e6  # MCS 7, one stream, 800 ns guard interval (a Galaxy Nexus-era phone)


class WifiInterface(Link):
    """One transmitter's queue on a :class:`WifiMedium` (drop-tail, bytes)."""

    __slots__ = ("airtime_ns", "frames", "medium")

    def __init__(self, medium: WifiMedium, queue_limit_bytes: int, delay_ns: int, name: str):
        super().__init__(medium.env, medium.phy_rate_bps, delay_ns, queue_limit_bytes, name)
        self.medium = medium
        self.airtime_ns = 0  # channel time this transmitter has used
        self.frames = 0

    def enqueue(self, packet: Packet) -> None:
        if self.queue_bytes + packet.size <= self.queue_limit_bytes:
            self._queue.append(packet)
            self.queue_bytes += packet.size
            self.medium.kick()
        else:
            self.drops += 1

    def _pop(self) -> Packet:
        packet = self._queue.popleft()
        self.queue_bytes -= packet.size
        return packet

    @property
    def backlogged(self) -> bool:
        return bool(self._queue)


class WifiMedium:
    """One channel shared by an AP and its stations; see the module docstring."""

    def __init__(
        self,
        env: Environment,
        phy_rate_bps: float = PHY_RATE_BPS,
        access_overhead_ns: int = ACCESS_OVERHEAD_NS,
        mac_header_bytes: int = MAC_HEADER_BYTES,
    ) -> None:
        if phy_rate_bps <= 0 or access_overhead_ns < 0 or mac_header_bytes < 0:
            raise ValueError("Wi-Fi needs a PHY rate > 0 and non-negative overheads")
        self.env = env
        self.phy_rate_bps = phy_rate_bps
        self.access_overhead_ns = access_overhead_ns
        self.mac_header_bytes = mac_header_bytes
        self._ns_per_byte = 8e9 / phy_rate_bps
        self.interfaces: list[WifiInterface] = []
        self._busy = False
        self._turn = 0  # round-robin position: who gets the next opportunity
        self.busy_ns = 0

    def interface(self, name: str, queue_limit_bytes: int, delay_ns: int = 0) -> WifiInterface:
        """A new transmitter on this channel."""
        iface = WifiInterface(self, queue_limit_bytes, delay_ns, name)
        self.interfaces.append(iface)
        return iface

    def frame_airtime_ns(self, size_bytes: int) -> int:
        """Channel time of one frame carrying ``size_bytes`` of IP packet."""
        return self.access_overhead_ns + round(
            (size_bytes + self.mac_header_bytes) * self._ns_per_byte
        )

    def kick(self) -> None:
        """Start the next frame if the channel is idle and someone has one queued."""
        if self._busy:
            return
        interfaces = self.interfaces
        n = len(interfaces)
        for k in range(n):
            iface = interfaces[(self._turn + k) % n]
            if iface._queue:
                self._turn = (self._turn + k + 1) % n
                packet = iface._pop()
                airtime = self.frame_airtime_ns(packet.size)
                iface.airtime_ns += airtime
                iface.frames += 1
                self.busy_ns += airtime
                self._busy = True
                self.env.schedule(airtime, self._sent, (iface, packet))
                return

    def _sent(self, item: tuple[WifiInterface, Packet]) -> None:
        iface, packet = item
        iface.packets_forwarded += 1
        iface.bytes_forwarded += packet.size
        self.env.schedule(iface.delay_ns, arrive, packet)
        self._busy = False
        self.kick()


__all__ = ["ACCESS_OVERHEAD_NS", "MAC_HEADER_BYTES", "PHY_RATE_BPS", "WifiInterface", "WifiMedium"]
