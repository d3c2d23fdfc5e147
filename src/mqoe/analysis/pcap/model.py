"""What a capture is read into: per-flow tables and counts (:class:`PcapReport`,
:class:`PcapStats`), the link types understood and the reader's limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

MAX_RECORD_BYTES = 16 * 1024 * 1024  # far above any snap length (tcpdump's is 262,144)
MAX_OUT_OF_ORDER = 4096  # disjoint out-of-order ranges held per flow
_SYN, _ACK = 0x02, 0x10

#: Link types read, by their pcap LINKTYPE_ number.
LINK_TYPES: dict[int, str] = {
    0: "BSD loopback",
    1: "Ethernet",
    12: "raw IP",
    14: "raw IP",
    101: "raw IP",
    108: "OpenBSD loopback",
    113: "Linux cooked (SLL)",
    228: "raw IPv4",
    229: "raw IPv6",
    276: "Linux cooked v2 (SLL2)",
}
_ETHER_IPV4, _ETHER_IPV6 = 0x0800, 0x86DD
_AF_INET6 = (10, 24, 28, 30)  # Linux, NetBSD/OpenBSD, FreeBSD, macOS
_IPV6_EXT = (0, 43, 60)  # hop-by-hop, routing, destination options: (len + 1) × 8 bytes


@dataclass(frozen=True)
class PcapStats:
    """What reading a capture met."""

    format: str  # "pcap", "pcap-ns", "pcap-modified" or "pcapng" (+ "+gzip")
    link_types: tuple[int, ...]
    records: int  # packet records read
    tcp_segments: int  # TCP packets used
    skipped: dict[str, int]  # reason → packets not used (see the module docstring)
    payload_truncated: int  # used, with the payload length from the IP header
    time_reversed: int  # packets earlier than a preceding one of the same flow

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())


@dataclass(frozen=True)
class PcapReport:
    """Per-flow summaries and bytes-received time series of one capture."""

    name: str
    start_unix_s: float  # the first packet's timestamp (t_s = 0)
    bin_ms: float
    flows: pd.DataFrame
    series: pd.DataFrame
    stats: PcapStats

    def summary(self) -> dict[str, Any]:
        flows = self.flows
        return {
            "file": self.name,
            "format": self.stats.format,
            "link_types": list(self.stats.link_types),
            "start_unix_s": self.start_unix_s,
            "records": self.stats.records,
            "tcp_segments": self.stats.tcp_segments,
            "flows": len(flows),
            "bytes_received": int(flows["bytes_received"].sum()) if len(flows) else 0,
            "skipped": self.stats.n_skipped,
            **{"skipped_" + k: v for k, v in sorted(self.stats.skipped.items())},
            "payload_truncated": self.stats.payload_truncated,
            "time_reversed": self.stats.time_reversed,
        }

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return {"flows": self.flows, "series": self.series}
