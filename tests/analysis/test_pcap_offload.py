"""Offloaded and cooked packets, built byte by byte from the format definitions: BIG TCP
and TSO super-packets (IPv4 total length 0, IPv6 payload length 0, RFC 2675's Jumbo
Payload option), super-packets cut by the snap length, MPTCP options, and Linux cooked
captures (SLL, link type 113; SLL2, link type 276) in pcap and pcapng."""

from __future__ import annotations

import socket
import struct
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import pytest

from mqoe.analysis.pcap.capture import read_capture

SERVER4, PHONE4 = socket.inet_aton("192.0.2.1"), socket.inet_aton("192.0.2.99")
SERVER6 = socket.inet_pton(socket.AF_INET6, "2001:db8::1")
PHONE6 = socket.inet_pton(socket.AF_INET6, "2001:db8::99")
ETHER_IPV4, ETHER_IPV6 = 0x0800, 0x86DD


# -- packets, per RFC 791 / 8200 / 9293 -------------------------------------------------


def tcp_header(seq: int, flags: int = 0x18, options: bytes = b"", sport: int = 443,
               dport: int = 40000, ack: int = 0) -> bytes:  # fmt: skip
    """A TCP header (RFC 9293 §3.1); ``options`` must be a multiple of 4 bytes."""
    assert len(options) % 4 == 0
    offset = (20 + len(options)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, offset << 4, flags, 65535, 0, 0) + (
        options
    )


def ipv4(segment: bytes, payload: int, total: int | None = None, src: bytes = SERVER4,
         dst: bytes = PHONE4) -> bytes:  # fmt: skip
    """An IPv4 header (RFC 791) + ``segment`` + ``payload`` zero bytes; ``total`` overrides
    the Total Length field (0 for a BIG TCP / TSO super-packet)."""
    length = 20 + len(segment) + payload if total is None else total
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, length, 1, 0x4000, 64, 6, 0, src, dst)
    return header + segment + bytes(payload)


def ipv6(segment: bytes, payload: int, plen: int | None = None, hop_by_hop: bytes = b"") -> bytes:
    """An IPv6 header (RFC 8200) with an optional Hop-by-Hop header before TCP."""
    length = len(hop_by_hop) + len(segment) + payload if plen is None else plen
    nxt = 0 if hop_by_hop else 6
    header = struct.pack("!IHBB16s16s", 6 << 28, length, nxt, 64, SERVER6, PHONE6)
    return header + hop_by_hop + segment + bytes(payload)


def jumbo_hop_by_hop(jumbo_length: int) -> bytes:
    """RFC 2675 §2: a Hop-by-Hop header (next header TCP, 8 bytes) holding the Jumbo
    Payload option (type 0xC2, length 4): the packet's length after the IPv6 header."""
    return struct.pack("!BBBBI", 6, 0, 0xC2, 4, jumbo_length)


def ether(ip: bytes, kind: int) -> bytes:
    return b"\x02" * 6 + b"\x04" * 6 + struct.pack("!H", kind) + ip


def sll(ip: bytes, kind: int, arphrd: int = 1) -> bytes:
    """LINKTYPE_LINUX_SLL: packet type, ARPHRD_ type, address length, 8 address bytes,
    protocol (an EtherType)."""
    return struct.pack("!HHH8sH", 4, arphrd, 6, b"\x02" * 6 + b"\0\0", kind) + ip


def sll2(ip: bytes, kind: int, arphrd: int = 1) -> bytes:
    """LINKTYPE_LINUX_SLL2: protocol, reserved, interface index, ARPHRD_ type, packet
    type, address length, 8 address bytes."""
    return struct.pack("!HHIHBB8s", kind, 0, 3, arphrd, 0, 6, b"\x02" * 6 + b"\0\0") + ip


# -- containers -----------------------------------------------------------------------

Record = tuple[float, bytes, int]  # time (s), frame, length on the wire


def write_pcap(path: Path, records: list[Record], link: int, snaplen: int = 262144) -> Path:
    """Classic pcap, little-endian microseconds; each record keeps ``snaplen`` bytes."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, link)]
    for t, frame, wire in records:
        kept = frame[:snaplen]
        seconds, micros = divmod(round(t * 1_000_000), 1_000_000)
        out.append(struct.pack("<IIII", seconds, micros, len(kept), wire) + kept)
    path.write_bytes(b"".join(out))
    return path


def write_pcapng(path: Path, records: list[Record], link: int, snaplen: int = 262144) -> Path:
    """pcapng: a section header, one interface (microseconds), enhanced packet blocks."""

    def block(kind: int, body: bytes) -> bytes:
        body += bytes(-len(body) % 4)
        return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)

    out = [
        block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)),
        block(1, struct.pack("<HHI", link, 0, snaplen)),
    ]
    for t, frame, wire in records:
        kept = frame[:snaplen]
        ticks = round(t * 1_000_000)
        head = struct.pack("<IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, len(kept), wire)
        out.append(block(6, head + kept))
    path.write_bytes(b"".join(out))
    return path


def _one(path: Path) -> dict[Hashable, Any]:
    report = read_capture(path)
    assert report.stats.skipped == {}, report.stats.skipped
    (row,) = report.flows.to_dict(orient="records")
    return row


# -- BIG TCP and TSO ------------------------------------------------------------------


@pytest.mark.parametrize("snaplen", [262144, 128, 66])
def test_big_tcp_ipv4_total_length_zero_takes_the_length_on_the_wire(
    tmp_path: Path, snaplen: int
) -> None:
    # Linux BIG TCP: a GSO packet over 64 KiB has Total Length 0 (it cannot hold the
    # length); the length is the frame's own, on the wire (tcpdump: "presumed BIG TCP").
    frame = ether(ipv4(tcp_header(1000), 80_000, total=0), ETHER_IPV4)
    path = write_pcap(tmp_path / "big.pcap", [(1.0, frame, len(frame))], 1, snaplen)
    row = _one(path)
    assert row["payload_bytes"] == 80_000
    assert row["bytes_received"] == 80_000
    assert read_capture(path).stats.payload_truncated == (snaplen < len(frame))


@pytest.mark.parametrize("link", [1, 113, 276])
def test_tso_total_length_zero_below_64k(tmp_path: Path, link: int) -> None:
    # Captured on the sender before segmentation: Total Length 0 (as in tcpdump's
    # ipv4_tcp_http_xml_tso capture), whatever the size.
    ip = ipv4(tcp_header(7), 1976, total=0)
    frame = {1: ether, 113: sll, 276: sll2}[link](ip, ETHER_IPV4)
    path = write_pcap(tmp_path / "tso.pcap", [(1.0, frame, len(frame))], link)
    assert _one(path)["payload_bytes"] == 1976


def test_tso_super_packet_longer_than_the_snap_length(tmp_path: Path) -> None:
    # Total Length is right (30,040) but only 1,514 bytes were kept: the payload length
    # comes from the IP header, not from the captured bytes.
    frame = ether(ipv4(tcp_header(7), 30_000), ETHER_IPV4)
    path = write_pcap(tmp_path / "tso.pcap", [(1.0, frame, len(frame))], 1, snaplen=1514)
    assert _one(path)["payload_bytes"] == 30_000
    assert read_capture(path).stats.payload_truncated == 1


def test_total_length_beyond_the_wire_is_corrupt(tmp_path: Path) -> None:
    frame = ether(ipv4(tcp_header(7), 100, total=5000), ETHER_IPV4)
    path = write_pcap(tmp_path / "bad.pcap", [(1.0, frame, len(frame))], 1)
    report = read_capture(path)
    assert report.stats.skipped == {"corrupt_header": 1}
    assert report.flows.empty


@pytest.mark.parametrize("snaplen", [262144, 200])
def test_big_tcp_ipv6_without_a_jumbo_option(tmp_path: Path, snaplen: int) -> None:
    # Recent kernels send BIG TCP without the Hop-by-Hop jumbo header: Payload Length 0
    # and TCP straight after the IPv6 header (tcpdump's bigtcp-ipv6 capture).
    frame = ether(ipv6(tcp_header(1), 79_968, plen=0), ETHER_IPV6)
    path = write_pcap(tmp_path / "big6.pcap", [(1.0, frame, len(frame))], 1, snaplen)
    assert _one(path)["payload_bytes"] == 79_968


@pytest.mark.parametrize("snaplen", [262144, 200])
@pytest.mark.parametrize("trailer", [0, 6])
def test_ipv6_jumbo_payload_option_gives_the_length(
    tmp_path: Path, snaplen: int, trailer: int
) -> None:
    # RFC 2675: Payload Length 0, the Jumbo Payload Length counts everything after the
    # IPv6 header (Hop-by-Hop header + TCP header + data). Bytes after it (a trailer the
    # capture kept) are not payload.
    segment = tcp_header(1, options=bytes(12))
    jumbo = 8 + len(segment) + 80_000
    ip = ipv6(segment, 80_000, plen=0, hop_by_hop=jumbo_hop_by_hop(jumbo))
    frame = ether(ip + bytes(trailer), ETHER_IPV6)
    path = write_pcap(tmp_path / "jumbo.pcap", [(1.0, frame, len(frame))], 1, snaplen)
    assert _one(path)["payload_bytes"] == 80_000


def test_jumbo_option_longer_than_the_wire_is_corrupt(tmp_path: Path) -> None:
    segment = tcp_header(1)
    ip = ipv6(segment, 70_000, plen=0, hop_by_hop=jumbo_hop_by_hop(8 + 20 + 90_000))
    frame = ether(ip, ETHER_IPV6)
    report = read_capture(write_pcap(tmp_path / "j.pcap", [(1.0, frame, len(frame))], 1))
    assert report.stats.skipped == {"corrupt_header": 1}


# -- MPTCP ----------------------------------------------------------------------------


def _mptcp_capable(version: int, keys: int) -> bytes:
    """MP_CAPABLE (kind 30, subtype 0): RFC 6824 (v0) / RFC 8684 (v1), + 2 NOPs."""
    body = struct.pack("!BBBB", 30, 4 + 8 * keys, version, 0x81) + bytes(8 * keys)
    return body + b"\x01" * (-len(body) % 4)


def _dss(data_seq: int, subflow_seq: int, length: int) -> bytes:
    """DSS (subtype 2) with a data ACK, a 4-byte data sequence mapping and a checksum."""
    flags = 0x01 | 0x04  # A: data ACK present, M: mapping present
    body = struct.pack("!BBBBIIIHH", 30, 20, 2 << 4, flags, 0, data_seq, subflow_seq, length, 0)
    return body  # 20 bytes, already a multiple of 4


def test_mptcp_options_do_not_confuse_the_tcp_parse(tmp_path: Path) -> None:
    # Two subflows of one MPTCP connection: each is a TCP connection of its own, and the
    # long MPTCP options (up to 40 bytes of TCP header) are skipped by the data offset.
    records: list[Record] = []
    for sub, (sport, isn, sizes) in enumerate([(5001, 100, [700, 300]), (5002, 9000, [1200])]):
        syn = ipv4(tcp_header(isn, 0x12, _mptcp_capable(0, 1), sport=sport), 0)
        records.append((1.0 + sub, ether(syn, ETHER_IPV4), 0))
        offset = 0
        for size in sizes:
            options = _dss(offset, offset + 1, size) + b"\x01\x01\x08\x0a" + bytes(8)
            seg = tcp_header(isn + 1 + offset, 0x18, options, sport=sport)
            records.append((1.5 + sub, ether(ipv4(seg, size), ETHER_IPV4), 0))
            offset += size
    records = [(t, f, len(f)) for t, f, _ in records]
    report = read_capture(write_pcap(tmp_path / "mptcp.pcap", records, 1))
    flows = report.flows.set_index("sport")
    assert report.stats.skipped == {}
    assert flows.loc[5001, "bytes_received"] == 1000
    assert flows.loc[5002, "bytes_received"] == 1200
    assert flows["syn_seen"].all()


# -- Linux cooked captures ------------------------------------------------------------


@pytest.mark.parametrize("writer", [write_pcap, write_pcapng])
@pytest.mark.parametrize("link", [113, 276])
@pytest.mark.parametrize("version", [4, 6])
def test_linux_cooked_captures(tmp_path: Path, writer: object, link: int, version: int) -> None:
    wrap = sll if link == 113 else sll2
    records: list[Record] = []
    for i, size in enumerate([100, 250, 0, 37]):
        segment = tcp_header(1 + sum([100, 250, 0, 37][:i]))
        ip = ipv4(segment, size) if version == 4 else ipv6(segment, size)
        # ARPHRD_ETHER and ARPHRD_RAWIP (519, Android's rmnet mobile-data interfaces)
        frame = wrap(ip, ETHER_IPV4 if version == 4 else ETHER_IPV6, arphrd=(1, 519)[i % 2])
        records.append((10.0 + i, frame, len(frame)))
    other = wrap(b"\x00" * 28, 0x0806)  # ARP: not IP
    records.append((20.0, other, len(other)))
    path = writer(tmp_path / "cooked.cap", records, link)  # type: ignore[operator]
    report = read_capture(path)
    assert report.stats.link_types == (link,)
    assert report.stats.skipped == {"non_ip": 1}
    (row,) = report.flows.to_dict(orient="records")
    assert row["bytes_received"] == 387
    assert row["first_s"] == pytest.approx(0.0)
    assert row["last_s"] == pytest.approx(3.0)
