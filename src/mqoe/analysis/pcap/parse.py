"""Header decoding: link layer (Ethernet with VLAN tags, SLL, SLL2, raw IP, loopback),
IPv4/IPv6 with extension headers and TCP → one TCP segment per packet, or why not."""

from __future__ import annotations

import struct

from mqoe.analysis.pcap.model import _AF_INET6, _ETHER_IPV4, _ETHER_IPV6, _IPV6_EXT

_VLAN_TYPES = (0x8100, 0x88A8, 0x9100)


# -- header decoding ------------------------------------------------------------------

_Segment = tuple[bytes, bytes, int, int, int, int, int, int, bool]
_TCP = struct.Struct("!HHIIBB")


def _decode(link: int, buf: bytes, wirelen: int) -> _Segment | str:
    """Link, IP and TCP headers → (src, dst, sport, dport, seq, ack, flags, payload length,
    payload cut by snaplen), or the reason the packet is skipped."""
    size = len(buf)
    cut = wirelen > size  # the capture kept only the first `size` bytes
    short = "snaplen_truncated" if cut else "corrupt_header"
    if link == 1:
        if size < 14:
            return short
        ethertype, at = buf[12] << 8 | buf[13], 14
        for _ in range(3):
            if ethertype not in _VLAN_TYPES:
                break
            if size < at + 4:
                return short
            ethertype, at = buf[at + 2] << 8 | buf[at + 3], at + 4
        version = 4 if ethertype == _ETHER_IPV4 else 6 if ethertype == _ETHER_IPV6 else 0
    elif link in (113, 276):
        at = 16 if link == 113 else 20
        if size < at:
            return short
        ethertype = buf[14] << 8 | buf[15] if link == 113 else buf[0] << 8 | buf[1]
        version = 4 if ethertype == _ETHER_IPV4 else 6 if ethertype == _ETHER_IPV6 else 0
    elif link in (101, 12, 14, 228, 229):
        if size < 1:
            return short
        at, version = 0, buf[0] >> 4
    elif link in (0, 108):
        if size < 4:
            return short
        family = {int.from_bytes(buf[:4], "big")}
        if link == 0:
            family.add(int.from_bytes(buf[:4], "little"))
        at = 4
        version = 4 if 2 in family else 6 if family & set(_AF_INET6) else 0
    else:
        return "unsupported_link"
    if version == 4:
        return _ipv4(buf, at, wirelen, short)
    if version == 6:
        return _ipv6(buf, at, wirelen, short)
    return "non_ip"


def _ipv4(buf: bytes, at: int, wirelen: int, short: str) -> _Segment | str:
    size = len(buf)
    if size < at + 20:
        return short
    if buf[at] >> 4 != 4:
        return "corrupt_header"
    ihl = (buf[at] & 0x0F) * 4
    total = buf[at + 2] << 8 | buf[at + 3]
    if (buf[at + 6] & 0x3F) or buf[at + 7]:  # more fragments, or a fragment offset
        return "ip_fragment"
    if buf[at + 9] != 6:
        return "non_tcp"
    if total == 0:  # a TSO/BIG TCP super-packet: its length is the frame's, on the wire
        total = wirelen - at
    if ihl < 20 or total < ihl + 20 or at + total > wirelen:
        return "corrupt_header"
    return _tcp(buf, at + ihl, at + total, buf[at + 12 : at + 16], buf[at + 16 : at + 20], short)


def _ipv6(buf: bytes, at: int, wirelen: int, short: str) -> _Segment | str:
    size = len(buf)
    if size < at + 40:
        return short
    if buf[at] >> 4 != 6:
        return "corrupt_header"
    length = buf[at + 4] << 8 | buf[at + 5]
    header, p = buf[at + 6], at + 40
    if length == 0:  # a jumbogram, or a BIG TCP / offload super-packet
        jumbo = _jumbo_length(buf, p) if header == 0 else None
        if jumbo is None and header == 0 and size < p + 2:
            return short
        length = wirelen - p if jumbo is None else jumbo
    end = p + length
    if end > wirelen:
        return "corrupt_header"
    for _ in range(8):
        if header == 6:
            return _tcp(buf, p, end, buf[at + 8 : at + 24], buf[at + 24 : at + 40], short)
        if header == 44:
            return "ip_fragment"
        if header not in (*_IPV6_EXT, 51):
            return "non_tcp"
        if size < p + 2:
            return short
        step = (buf[p + 1] + 2) * 4 if header == 51 else (buf[p + 1] + 1) * 8
        header, p = buf[p], p + step
        if p > end:
            return "corrupt_header"
    return "corrupt_header"


def _jumbo_length(buf: bytes, at: int) -> int | None:
    """The Jumbo Payload Length (RFC 2675: option 0xC2, 4 bytes, in a Hop-by-Hop header
    at ``at``): the bytes after the IPv6 header, extension headers included; None if
    the captured header holds no such option."""
    if len(buf) < at + 2:
        return None
    end = min(len(buf), at + (buf[at + 1] + 1) * 8)
    p = at + 2
    while p < end:
        kind = buf[p]
        if kind == 0:  # Pad1: a lone byte
            p += 1
            continue
        if p + 2 > end:
            return None
        size = buf[p + 1]
        if kind == 0xC2 and size == 4 and p + 6 <= end:
            return int.from_bytes(buf[p + 2 : p + 6], "big")
        p += 2 + size
    return None


def _tcp(buf: bytes, at: int, end: int, src: bytes, dst: bytes, short: str) -> _Segment | str:
    if len(buf) < at + 20:
        return short
    sport, dport, seq, ack, offset, flags = _TCP.unpack_from(buf, at)
    header = (offset >> 4) * 4
    if header < 20 or at + header > end:
        return "corrupt_header"
    return src, dst, sport, dport, seq, ack, flags, end - at - header, end > len(buf)
