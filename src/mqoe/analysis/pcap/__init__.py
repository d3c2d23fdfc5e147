"""Packet captures (pcap/pcapng) → TCP sequence-number growth (bytes received) per flow.

NetPIS (2015) is judged by how fast each download's sequence number grows: the foreground
video's against the background app-store download's. :func:`read_capture` streams a
capture once and returns, per TCP flow direction, a time series of bytes received and a
summary; :func:`mqoe.generators.pcap.synth_pcap` writes a capture with known answers
(via ``dpkt``) for tests.

Modules: :mod:`.model` (report, counts, limits), :mod:`.read` (pcap and pcapng
framing), :mod:`.parse` (link, IP and TCP headers), :mod:`.flows` (per-flow sequence
growth), :mod:`.capture` (the one-pass reader).

Files accepted
--------------
* classic pcap — micro- or nanosecond, either byte order (and the rare "modified" pcap
  with 24-byte record headers) — and pcapng (any number of sections and interfaces,
  each with its own link type, ``if_tsresol`` and ``if_tsoffset``; enhanced, simple and
  obsolete packet blocks; other blocks are skipped); either may be gzip-compressed.
* link types: Ethernet (1, with up to three 802.1Q/802.1ad tags), Linux cooked SLL (113)
  and SLL2 (276), raw IP (101, 12, 14, 228, 229), BSD/OpenBSD loopback (0, 108).
* IPv4 (options allowed) and IPv6 (hop-by-hop, routing, destination-options and AH
  extension headers), TCP. Checksums are not verified: a capture taken on the sending
  host holds offloaded, not-yet-computed checksums.
* lengths: a segment's payload is what the IP header says (IPv4 Total Length, IPv6
  Payload Length) less the IP and TCP headers — not what the capture kept — so Ethernet
  padding is not payload and a payload cut by the snap length still counts. Packets
  captured on the sender before segmentation carry 0 there: TSO/GSO super-packets, and
  Linux BIG TCP packets over 64 KiB, which cannot hold their length in 16 bits (IPv4
  Total Length 0; IPv6 Payload Length 0, with no Jumbo Payload option in recent kernels'
  packets). Their length is the frame's on the wire: the record's original length,
  not its captured length (tcpdump's "presumed TSO / BIG TCP"). An IPv6 jumbogram's
  length is its Hop-by-Hop Jumbo Payload option's (RFC 2675). A length beyond the frame
  on the wire is ``corrupt_header``. MPTCP subflows are TCP connections of their own,
  their options skipped with the rest by the TCP data offset.

The container is framed by hand, not with ``dpkt``'s readers: those read a length taken
straight from the file (a negative or huge one reads the rest of the file into memory),
pass a cut-off last record on as a short packet, and honour only a pcapng's first
interface. Every read here is bounded by :data:`MAX_RECORD_BYTES`.

What is an error, what is skipped
---------------------------------
Not a capture (unknown magic, an empty file, a cut-off file header, a classic pcap of an
unsupported link type) → :class:`~mqoe.errors.InputFileError`. Inside a capture nothing
is fatal; each packet not used is counted in :attr:`PcapStats.skipped` by reason:
``truncated_record`` (the file ends inside a record: a capture that was still being
written), ``corrupt_record`` (an implausible record or block length: the rest of the
file cannot be framed and is dropped; or an inconsistent packet block), ``snaplen_truncated``
(the headers themselves were cut by the snap length), ``corrupt_header``,
``unsupported_link``, ``unknown_interface``, ``non_ip``, ``non_tcp``, ``ip_fragment``,
``other_port`` (``port`` filter), ``out_of_window`` (a sequence number more than 2³⁰
ahead of the flow); ``out_of_order_overflow`` counts the times a flow held more than
:data:`MAX_OUT_OF_ORDER` separate out-of-order ranges and forgot the furthest one. A
packet whose *payload* was cut by the snap length is used — its length comes from the IP
header — and counted in :attr:`PcapStats.payload_truncated`.

Flows and bytes received
------------------------
A flow is one direction of a TCP connection, keyed by (source, source port, destination,
destination port); the destination is the receiver. A new SYN with another initial
sequence number on a 5-tuple that already carried data starts a new flow. Only flows
that carried payload are reported. Per flow, the receiver's in-order progress is
tracked as a receiver would: **bytes received** = highest in-order sequence number −
the first data byte's (ISN + 1 when the SYN was captured, else the first data byte
seen), with 32-bit wrap-around unrolled, out-of-order data held until the gap fills, and
re-sent bytes counted once. When the receiver's cumulative ACK covers bytes the capture
never saw (capture drops), progress follows the ACK — up to the highest byte seen, so
the FIN's phantom byte is never counted — and those bytes are ``missed_bytes``.
``retransmitted_bytes`` are payload bytes seen again after they were already received.
``payload_bytes`` counts every payload byte captured, retransmissions included.

The time series has one row per flow and ``bin_ms`` bin in which the flow changed: the
values at the end of the bin (``t_s`` is the bin's end, in seconds since the first
packet of the capture); a bin without a row changed nothing. ``first_s`` is the flow's
first packet (its SYN or SYN-ACK when captured); ``last_s`` is when its bytes received
last increased — by a data segment, or by a receiver's ACK covering bytes the capture
missed — not the time of later retransmissions or held out-of-order data (``first_s`` if
it never increased); ``mean_throughput_mbps`` = bytes received × 8 / (last_s − first_s).
"""

from mqoe.analysis.pcap.capture import read_capture
from mqoe.analysis.pcap.model import (
    LINK_TYPES,
    MAX_OUT_OF_ORDER,
    MAX_RECORD_BYTES,
    PcapReport,
    PcapStats,
)

__all__ = [
    "LINK_TYPES",
    "MAX_OUT_OF_ORDER",
    "MAX_RECORD_BYTES",
    "PcapReport",
    "PcapStats",
    "read_capture",
]
