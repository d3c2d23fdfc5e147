"""Container framing: classic pcap (either resolution and byte order, "modified" pcap)
and pcapng (sections, interfaces, packet blocks) as a stream of records
``(time s, link type, captured bytes, wire length)``."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from mqoe.analysis.pcap.model import LINK_TYPES, MAX_RECORD_BYTES
from mqoe.errors import InputFileError

# magic → (byte order, timestamp units per second, record header length)
_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000, 16),
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000, 16),
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000, 16),
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000, 16),
    b"\x34\xcd\xb2\xa1": ("<", 1_000_000, 24),  # "modified" pcap (Kuznetzov)
    b"\xa1\xb2\xcd\x34": (">", 1_000_000, 24),
}
_PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
_GZIP = b"\x1f\x8b"


# -- container framing ----------------------------------------------------------------

_Record = tuple[float, int, bytes, int]  # time (s), link type, captured bytes, wire length


class _Stop(Exception):
    """The rest of the file cannot be read; ``reason`` is counted once."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _read(stream: IO[bytes], n: int) -> bytes:
    """Exactly ``n`` bytes, or fewer at the end of the file; broken gzip → ``_Stop``."""
    try:
        data = stream.read(n)
    except (EOFError, OSError, zlib.error):
        raise _Stop("truncated_record") from None
    return data


def _need(stream: IO[bytes], n: int) -> bytes:
    data = _read(stream, n)
    if len(data) < n:
        raise _Stop("truncated_record")
    return data


def _skip(stream: IO[bytes], n: int) -> None:
    while n > 0:
        chunk = _need(stream, min(n, 1 << 20))
        n -= len(chunk)


def _pcap_records(
    stream: IO[bytes], name: str, head: bytes, info: dict[str, Any]
) -> Iterator[_Record]:
    order, units, rec_len = _PCAP_MAGICS[head[:4]]
    header = head + _read(stream, 24 - len(head))
    if len(header) < 24:
        raise InputFileError(name, "truncated pcap file header (24 bytes expected)")
    major, _minor, _zone, _sigfigs, _snaplen, linktype = struct.unpack(order + "HHiIII", header[4:])
    link = linktype & 0xFFFF  # the upper bits hold FCS information
    if major != 2:
        raise InputFileError(name, f"pcap version {major} is not supported (2 expected)")
    if link not in LINK_TYPES:
        raise InputFileError(name, f"link type {link} is not supported ({_supported()})")
    info["format"] = {16: "pcap-ns" if units > 1_000_000 else "pcap", 24: "pcap-modified"}[rec_len]
    info["links"].add(link)
    record = struct.Struct(order + "IIII")
    while True:
        raw = _read(stream, rec_len)
        if not raw:
            return
        if len(raw) < rec_len:
            raise _Stop("truncated_record")
        seconds, fraction, caplen, wirelen = record.unpack_from(raw)
        if caplen > MAX_RECORD_BYTES:
            raise _Stop("corrupt_record")
        data = _need(stream, caplen)
        yield seconds + fraction / units, link, data, max(wirelen, caplen)


@dataclass
class _Interface:
    link: int
    snaplen: int
    units: float = 1e6  # timestamp ticks per second (if_tsresol)
    offset_s: int = 0  # if_tsoffset


def _pcapng_records(
    stream: IO[bytes], name: str, head: bytes, info: dict[str, Any]
) -> Iterator[_Record]:
    info["format"] = "pcapng"
    order = ""
    interfaces: list[_Interface] = []
    last_t = 0.0
    first = True
    pending = head
    while True:
        block = pending + _read(stream, 8 - len(pending))
        pending = b""
        if not block:
            return
        if len(block) < 8:
            raise _Stop("truncated_record")
        if block[:4] == _PCAPNG_SHB:
            order = _section_order(stream, name, block, first)
            interfaces = []
            first = False
            continue
        kind, length = struct.unpack(order + "II", block)
        if length < 12 or length % 4 or length > MAX_RECORD_BYTES:
            raise _Stop("corrupt_record")
        if kind not in (1, 2, 3, 6):  # not IDB, PB, SPB, EPB: skip it
            _skip(stream, length - 8)
            continue
        body = _need(stream, length - 8)
        if body[-4:] != block[4:]:
            raise _Stop("corrupt_record")
        body = body[:-4]
        if kind == 1:
            interfaces.append(_idb(body, order))
            info["links"].add(interfaces[-1].link)
            continue
        packet = _packet_block(kind, body, order, interfaces, last_t)
        if isinstance(packet, str):
            info["skipped"][packet] += 1
            continue
        last_t = packet[0]
        yield packet


def _section_order(stream: IO[bytes], name: str, block: bytes, first: bool) -> str:
    bom = _read(stream, 4)
    orders = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}
    if bom not in orders:
        if first:
            raise InputFileError(name, "not a pcapng file (bad byte-order magic)")
        raise _Stop("corrupt_record")
    order = orders[bom]
    (length,) = struct.unpack(order + "I", block[4:])
    if length < 28 or length % 4 or length > MAX_RECORD_BYTES:
        if first:
            raise InputFileError(name, f"pcapng section header of implausible length {length}")
        raise _Stop("corrupt_record")
    body = _read(stream, length - 12)
    if len(body) < length - 12:
        if first:
            raise InputFileError(name, "truncated pcapng section header")
        raise _Stop("truncated_record")
    (major,) = struct.unpack(order + "H", body[:2])
    if major != 1:
        if first:
            raise InputFileError(name, f"pcapng version {major} is not supported (1 expected)")
        raise _Stop("corrupt_record")
    return order


def _idb(body: bytes, order: str) -> _Interface:
    if len(body) < 8:
        return _Interface(link=0xFFFF, snaplen=0)  # unknown: its packets are skipped
    link, _reserved, snaplen = struct.unpack_from(order + "HHI", body)
    interface = _Interface(link, snaplen)
    at = 8
    while at + 4 <= len(body):  # options: code, length, value padded to 4 bytes
        code, size = struct.unpack_from(order + "HH", body, at)
        value = body[at + 4 : at + 4 + size]
        if code == 0 or len(value) < size:
            break
        if code == 9 and size == 1:  # if_tsresol: 10^-v, or 2^-v with the top bit set
            v = value[0]
            interface.units = float(2 ** (v & 0x7F) if v & 0x80 else 10 ** min(v, 30))
        elif code == 14 and size == 8:  # if_tsoffset, seconds
            (interface.offset_s,) = struct.unpack(order + "q", value)
        at += 4 + (size + 3) // 4 * 4
    return interface


def _packet_block(
    kind: int, body: bytes, order: str, interfaces: list[_Interface], last_t: float
) -> _Record | str:
    if kind == 3:  # simple packet block: interface 0, no timestamp (take the last one)
        if len(body) < 4 or not interfaces:
            return "corrupt_record" if len(body) < 4 else "unknown_interface"
        (wirelen,) = struct.unpack_from(order + "I", body)
        iface = interfaces[0]
        caplen = min(wirelen, len(body) - 4, iface.snaplen or wirelen)
        return last_t, iface.link, body[4 : 4 + caplen], wirelen
    if kind == 6:  # enhanced packet block
        if len(body) < 20:
            return "corrupt_record"
        index, high, low, caplen, wirelen = struct.unpack_from(order + "IIIII", body)
        start = 20
    else:  # obsolete packet block
        if len(body) < 20:
            return "corrupt_record"
        index, _drops, high, low, caplen, wirelen = struct.unpack_from(order + "HHIIII", body)
        start = 20
    if index >= len(interfaces):
        return "unknown_interface"
    if start + caplen > len(body):
        return "corrupt_record"
    iface = interfaces[index]
    t = ((high << 32) | low) / iface.units + iface.offset_s
    return t, iface.link, body[start : start + caplen], max(wirelen, caplen)


def _supported() -> str:
    return "supported: " + ", ".join(f"{k} {v}" for k, v in LINK_TYPES.items())
