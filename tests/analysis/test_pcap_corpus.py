"""Real captures from tcpdump's test suite (``/work/shared/data/real/pcap``): BIG TCP IPv4,
HTTP with TSO, MPTCP v0 and a Linux cooked (SLL) capture.

Expectations come from two sources independent of mqoe's parser: a minimal reader in
this file (classic pcap, Ethernet/SLL, IPv4, TCP, straight from the format definitions
with ``struct``), and the figures tcpdump itself prints for these files (its expected
outputs ``tests/*.out`` at the commit the corpus README names).
"""

from __future__ import annotations

import socket
import struct
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mqoe.analysis.pcap.capture import read_capture

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "pcap"


def _corpus_file(name: str) -> Path:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"real-data corpus not found: {path}")
    return path


# -- an independent reader ------------------------------------------------------------


@dataclass
class _Flow:
    packets: int = 0
    payload: int = 0
    first_t: float | None = None  # first SYN or data segment of this direction
    last_new_t: float = 0.0  # last segment that carried sequence space never seen before
    highest: int = 0  # highest relative sequence number seen + 1
    base: int | None = None
    syn: bool = False
    starts: list[int] = field(default_factory=list)


@dataclass
class _Capture:
    link: int
    records: int = 0
    tcp: int = 0
    flows: dict[tuple[str, int, str, int], _Flow] = field(default_factory=dict)
    start: float = 0.0


def _read_by_hand(path: Path) -> _Capture:
    """Classic pcap (LE/BE, µs) → per-direction TCP figures. IPv4 Total Length 0 on a
    TCP packet means an offloaded super-packet: its length is the frame's on the wire."""
    data = path.read_bytes()
    order = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">"}[data[:4]]
    link = struct.unpack(order + "I", data[20:24])[0]
    capture = _Capture(link)
    flows: dict[tuple[str, int, str, int], _Flow] = defaultdict(_Flow)
    at = 24
    while at < len(data):
        seconds, micros, caplen, wirelen = struct.unpack(order + "IIII", data[at : at + 16])
        frame = data[at + 16 : at + 16 + caplen]
        at += 16 + caplen
        t = seconds + micros / 1e6
        if capture.records == 0:
            capture.start = t
        capture.records += 1
        link_header = {1: 14, 113: 16}[link]
        ethertype = struct.unpack("!H", frame[link_header - 2 : link_header])[0]
        if ethertype != 0x0800:
            continue
        ip = frame[link_header:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack("!H", ip[2:4])[0] or wirelen - link_header
        if ip[9] != 6:
            continue
        capture.tcp += 1
        src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        sport, dport, seq = struct.unpack("!HHI", ip[ihl : ihl + 8])
        flags = ip[ihl + 13]
        payload = total - ihl - (ip[ihl + 12] >> 4) * 4
        flow = flows[(src, sport, dst, dport)]
        flow.packets += 1
        if flags & 0x02:
            flow.syn, flow.base = True, (seq + 1) % 2**32
            flow.first_t = t if flow.first_t is None else flow.first_t
        if payload > 0:
            flow.first_t = t if flow.first_t is None else flow.first_t
            flow.base = seq if flow.base is None else flow.base
            end = (seq - flow.base) % 2**32 + payload
            if end > flow.highest:
                flow.highest, flow.last_new_t = end, t
            flow.payload += payload
    capture.flows = dict(flows)
    return capture


def _compare(path: Path) -> tuple[_Capture, dict[Any, dict[Hashable, Any]]]:
    hand = _read_by_hand(path)
    report = read_capture(path)
    assert report.stats.records == hand.records
    assert report.stats.tcp_segments == hand.tcp
    assert report.stats.skipped == {}
    assert report.stats.link_types == (hand.link,)
    assert report.start_unix_s == pytest.approx(hand.start, abs=1e-6)
    rows = {
        (r["src"], r["sport"], r["dst"], r["dport"]): r
        for r in report.flows.to_dict(orient="records")
    }
    with_data = {k: f for k, f in hand.flows.items() if f.payload > 0}
    assert set(rows) == set(with_data)
    for key, flow in with_data.items():
        row = rows[key]
        assert row["payload_bytes"] == flow.payload, key
        # these captures hold no loss or retransmission: every byte arrives once, in order
        assert row["bytes_received"] == flow.highest == flow.payload, key
        assert row["retransmitted_bytes"] == 0 and row["missed_bytes"] == 0, key
        assert row["syn_seen"] == flow.syn, key
        assert flow.first_t is not None
        assert row["first_s"] == pytest.approx(flow.first_t - hand.start, abs=1e-6), key
        assert row["last_s"] == pytest.approx(flow.last_new_t - hand.start, abs=1e-6), key
    return hand, rows


# -- the files ------------------------------------------------------------------------


def test_big_tcp_ipv4_jumbo_packet() -> None:
    path = _corpus_file("tcpdump__bigtcp-ipv4.pcap")
    hand, rows = _compare(path)
    # tcpdump -v: "length 80052 [was 0, presumed BIG TCP]" … "length 80000"
    (row,) = rows.values()
    assert row["label"] == "10.25.132.13:35871 → 10.25.132.11:36425"
    assert row["payload_bytes"] == 80_000
    assert hand.records == 1


def test_big_tcp_cut_by_a_snap_length_still_counts_the_whole_payload(tmp_path: Path) -> None:
    # The same packet as `tcpdump -s 200` would have kept it: 200 bytes captured, the
    # original length recorded. The IP header's Total Length is 0, so only the length on
    # the wire can give the payload.
    data = _corpus_file("tcpdump__bigtcp-ipv4.pcap").read_bytes()
    order = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    seconds, micros, _caplen, wirelen = struct.unpack(order + "IIII", data[24:40])
    cut = tmp_path / "bigtcp-s200.pcap"
    header = bytearray(data[:24])
    header[16:20] = struct.pack(order + "I", 200)  # the file header's snap length
    record = struct.pack(order + "IIII", seconds, micros, 200, wirelen)
    cut.write_bytes(bytes(header) + record + data[40 : 40 + 200])
    report = read_capture(cut)
    assert report.stats.payload_truncated == 1
    assert report.flows["payload_bytes"].tolist() == [80_000]
    assert report.flows["bytes_received"].tolist() == [80_000]


def test_http_with_tso_total_length_zero() -> None:
    path = _corpus_file("tcpdump__ipv4_tcp_http_xml_tso.pcap")
    _, rows = _compare(path)
    # tcpdump -v: "length 2016 [was 0, presumed TSO]" … "length 1976: HTTP"
    (row,) = rows.values()
    assert row["label"] == "30.7.181.121:39556 → 199.43.68.163:8080"
    assert row["payload_bytes"] == 1976


def test_mptcp_v0_subflows_are_plain_tcp_flows() -> None:
    path = _corpus_file("tcpdump__mptcp-v0.pcap")
    hand, rows = _compare(path)
    assert hand.records == 264
    # per direction, the sum of tcpdump's "length N" over its 264 lines
    assert {(k[1], k[3]): r["payload_bytes"] for k, r in rows.items()} == {
        (22, 35961): 5257,
        (35961, 22): 3785,
        (22, 41221): 3304,
        (41221, 22): 1336,
    }


def test_linux_cooked_sll_capture() -> None:
    path = _corpus_file("tcpdump__resp_1_benchmark.pcap")
    hand, rows = _compare(path)
    assert hand.link == 113
    assert hand.records == 150
    assert len(rows) == 30  # 15 Redis connections, data both ways
    # tcpdump's resp_1 output: the largest reply is 5406 bytes, to port 35914
    assert rows[("127.0.0.1", 6379, "127.0.0.1", 35914)]["payload_bytes"] == 5406
    # and the sum of its "length N" over all 150 lines
    assert sum(int(str(r["payload_bytes"])) for r in rows.values()) == 13_994
