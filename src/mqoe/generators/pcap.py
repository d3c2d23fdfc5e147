"""A **synthetic** capture of the NetPIS setting (2015) written with ``dpkt``
(:func:`synth_pcap`): foreground and background downloads with known answers, for tests
and demos."""

from __future__ import annotations

import ipaddress
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mqoe.analysis.pcap.flows import _MASK
from mqoe.analysis.pcap.model import _ACK, _ETHER_IPV4, _ETHER_IPV6, _SYN

# -- a synthetic capture (tests, demos) -----------------------------------------------


@dataclass(frozen=True)
class SynthFlow:
    """What :func:`synth_pcap` put in a capture for one download (server → phone)."""

    name: str
    src: str
    sport: int
    dst: str
    dport: int
    isn: int  # the server's initial sequence number
    bytes: int  # distinct payload bytes sent
    retransmitted_bytes: int
    missed_bytes: int  # payload left out of the capture (the phone still ACKed it)
    sends: tuple[tuple[float, int, int], ...]  # captured data: (unix s, offset, bytes)
    acks: tuple[tuple[float, int], ...] = field(default=())  # phone's ACKs: (unix s, offset)


SynthLink = Literal["ethernet", "sll", "sll2", "raw"]
_SYNTH_LINKS = {"ethernet": 1, "sll": 113, "sll2": 276, "raw": 101}


def synth_pcap(
    path: str | Path,
    *,
    seed: int = 0,
    fmt: Literal["pcap", "pcap-ns", "pcapng"] = "pcap",
    link: SynthLink = "ethernet",
    ipv6: bool = False,
    fg_bytes: int = 200_000,
    bg_bytes: int = 500_000,
    mss: int = 1448,
    duration_s: float = 10.0,
    start_unix_s: float = 1_700_000_000.0,
    snaplen: int | None = None,
    capture_loss: bool = False,
    noise: bool = True,
) -> dict[str, SynthFlow]:
    """Write a **synthetic** capture of the NetPIS setting with ``dpkt``: a foreground
    download (``fg``, port 443, from 20 % to 70 % of ``duration_s``) and a background one
    (``bg``, port 80, the whole time) to one phone, with handshakes, the phone's ACKs
    (one per two segments) and FINs. The foreground's ISN makes its sequence number wrap
    past 2³² after three segments; the background re-sends its segment n/3 (a
    retransmission) and swaps segments n/2 and n/2 + 1 (reordering). ``capture_loss``
    leaves the foreground's middle segment out of the capture. ``snaplen`` cuts every
    packet; ``noise`` adds DNS over UDP, an ICMP echo and (on Ethernet) an ARP request.
    Returns the ground truth per flow.
    """
    import dpkt  # type: ignore[import-untyped]

    rng = np.random.default_rng(seed)
    phone = "fd00::23" if ipv6 else "192.168.1.23"
    plans = [
        (
            "fg",
            "2001:db8::10" if ipv6 else "203.0.113.10",
            443,
            40001,
            fg_bytes,
            (0.2, 0.7),
            (1 << 32) - 3 * mss - 1,
        ),
        (
            "bg",
            "2001:db8::7" if ipv6 else "198.51.100.7",
            80,
            40002,
            bg_bytes,
            (0.0, 1.0),
            int(rng.integers(0, 1 << 32)),
        ),
    ]
    packets: list[tuple[float, bytes]] = []
    truth: dict[str, SynthFlow] = {}
    build = _PacketBuilder(dpkt, link, ipv6, phone)
    for name, server, sport, dport, total, (a, b), isn in plans:
        t_start = start_unix_s + 0.05 + a * duration_s
        t_end = start_unix_s + b * duration_s
        flow = _synth_flow(
            rng,
            build,
            packets,
            name,
            (server, sport, dport),
            isn,
            total,
            mss,
            (t_start, t_end),
            reorder=name == "bg",
            lose=capture_loss and name == "fg",
        )
        truth[name] = flow
    if noise:
        packets.extend(build.noise(start_unix_s))
    packets.sort(key=lambda p: p[0])
    _write_capture(dpkt, Path(path), fmt, _SYNTH_LINKS[link], packets, snaplen)
    return truth


class _PacketBuilder:
    def __init__(self, dpkt: Any, link: str, ipv6: bool, phone: str) -> None:
        self.dpkt, self.link, self.ipv6, self.phone = dpkt, link, ipv6, phone

    def tcp(
        self,
        src: str,
        dst: str,
        sport: int,
        dport: int,
        seq: int,
        ack: int,
        flags: int,
        payload: bytes = b"",
    ) -> bytes:
        d = self.dpkt
        segment = d.tcp.TCP(
            sport=sport,
            dport=dport,
            seq=seq & _MASK,
            ack=ack & _MASK,
            flags=flags,
            win=65535,
            data=payload,
        )
        return self._wrap(self._ip(src, dst, 6, segment))

    def _ip(self, src: str, dst: str, proto: int, data: Any) -> Any:
        d = self.dpkt
        s, t = ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed
        if self.ipv6:
            return d.ip6.IP6(src=s, dst=t, nxt=proto, hlim=64, plen=len(bytes(data)), data=data)
        packet = d.ip.IP(src=s, dst=t, p=proto, ttl=64, data=data)
        packet.len = len(packet)
        return packet

    def _wrap(self, ip: Any, ethertype: int | None = None) -> bytes:
        d = self.dpkt
        kind = ethertype or (_ETHER_IPV6 if self.ipv6 else _ETHER_IPV4)
        mac = b"\x02\x00\x00\x00\x00\x01"
        if self.link == "ethernet":
            return bytes(d.ethernet.Ethernet(src=mac, dst=b"\x02" + bytes(5), type=kind, data=ip))
        if self.link == "sll":
            return bytes(d.sll.SLL(type=0, hrd=1, hlen=6, hdr=mac + b"\0\0", ethtype=kind, data=ip))
        if self.link == "sll2":
            header = d.sll2.SLL2(ethtype=kind, intindex=2, hrd=1, type=0, hlen=6, hdr=mac + b"\0\0")
            return bytes(header) + bytes(ip)
        return bytes(ip)

    def noise(self, t: float) -> list[tuple[float, bytes]]:
        d = self.dpkt
        server = "2001:db8::53" if self.ipv6 else "192.0.2.53"
        dns = d.udp.UDP(sport=5353, dport=53, data=b"\x12\x34" + bytes(10))
        dns.ulen = len(dns)
        out = [(t, self._wrap(self._ip(self.phone, server, 17, dns)))]
        echo = d.icmp.ICMP(type=8, data=d.icmp.ICMP.Echo(id=1, seq=1, data=b"ping"))
        out.append(
            (t + 0.5, self._wrap(self._ip(self.phone, server, 58 if self.ipv6 else 1, echo)))
        )
        if self.link == "ethernet":
            out.append((t + 1.0, self._wrap(bytes(d.arp.ARP()), ethertype=0x0806)))
        return out


def _synth_flow(
    rng: np.random.Generator,
    build: _PacketBuilder,
    packets: list[tuple[float, bytes]],
    name: str,
    ends: tuple[str, int, int],
    isn: int,
    total: int,
    mss: int,
    window: tuple[float, float],
    *,
    reorder: bool,
    lose: bool,
) -> SynthFlow:
    server, sport, dport = ends
    phone = build.phone
    client_isn = int(rng.integers(0, 1 << 32))
    t_start, t_end = window
    syn, syn_ack = t_start - 0.03, t_start - 0.02
    packets.append((syn, build.tcp(phone, server, dport, sport, client_isn, 0, _SYN)))
    packets.append(
        (syn_ack, build.tcp(server, phone, sport, dport, isn, client_isn + 1, _SYN | _ACK))
    )
    packets.append(
        (t_start - 0.01, build.tcp(phone, server, dport, sport, client_isn + 1, isn + 1, _ACK))
    )
    offsets = list(range(0, total, mss))
    times = np.sort(rng.uniform(t_start, t_end, len(offsets)))
    order = list(range(len(offsets)))
    n = len(order)
    if reorder and n >= 4:
        k = n // 2
        order[k], order[k + 1] = order[k + 1], order[k]
    sends = [(float(times[i]), offsets[order[i]]) for i in range(n)]
    retransmitted = 0
    if reorder and n >= 6:  # re-send segment n/3 just after segment n/3 + 3
        again = offsets[n // 3]
        t_again = (sends[n // 3 + 3][0] + sends[n // 3 + 4][0]) / 2 if n > n // 3 + 4 else t_end
        sends.append((t_again, again))
        retransmitted = min(mss, total - again)
        sends.sort()
    lost = sends[n // 2][0] if lose and n >= 3 else None
    captured, acks, got = [], [], {}
    progress = 0
    for i, (t, off) in enumerate(sends):
        size = min(mss, total - off)
        payload = bytes(size)
        flags = _ACK | 0x08
        if t != lost:
            packets.append(
                (
                    t,
                    build.tcp(
                        server, phone, sport, dport, isn + 1 + off, client_isn + 1, flags, payload
                    ),
                )
            )
            captured.append((t, off, size))
        got[off] = off + size
        while progress in got:
            progress = got.pop(progress)
        if i % 2 == 1 or i == len(sends) - 1:
            t_ack = t + 0.0005
            acks.append((t_ack, progress))
            packets.append(
                (
                    t_ack,
                    build.tcp(
                        phone, server, dport, sport, client_isn + 1, isn + 1 + progress, _ACK
                    ),
                )
            )
    t_fin = max(t for t, _ in sends) + 0.01
    packets.append(
        (
            t_fin,
            build.tcp(server, phone, sport, dport, isn + 1 + total, client_isn + 1, _ACK | 0x01),
        )
    )
    packets.append(
        (
            t_fin + 0.001,
            build.tcp(phone, server, dport, sport, client_isn + 1, isn + 2 + total, _ACK),
        )
    )
    missed = min(mss, total - sends[n // 2][1]) if lost is not None else 0
    return SynthFlow(
        name,
        server,
        sport,
        phone,
        dport,
        isn,
        total,
        retransmitted,
        missed,
        tuple(captured),
        tuple(acks),
    )


def _write_capture(
    dpkt: Any,
    path: Path,
    fmt: str,
    linktype: int,
    packets: list[tuple[float, bytes]],
    snaplen: int | None,
) -> None:
    """pcap via ``dpkt.pcap.Writer``, pcapng via ``dpkt.pcapng.Writer``; records cut by
    ``snaplen`` are framed by hand, as dpkt's writers always store the whole packet."""
    order = "<" if sys.byteorder == "little" else ">"
    with path.open("wb") as f:
        if fmt == "pcapng":
            writer = dpkt.pcapng.Writer(f, snaplen=snaplen or 65535, linktype=linktype)
        else:
            writer = dpkt.pcap.Writer(
                f, snaplen=snaplen or 65535, linktype=linktype, nano=fmt == "pcap-ns"
            )
        for t, data in packets:
            if snaplen is None or len(data) <= snaplen:
                writer.writepkt(data, ts=t)
                continue
            kept = data[:snaplen]
            if fmt == "pcapng":
                ticks = round(t * 1e6)
                pad = bytes(-len(kept) % 4)
                length = 32 + len(kept) + len(pad)
                f.write(
                    struct.pack(
                        order + "IIIIIII",
                        6,
                        length,
                        0,
                        ticks >> 32,
                        ticks & _MASK,
                        len(kept),
                        len(data),
                    )
                )
                f.write(kept + pad + struct.pack(order + "I", length))
            else:
                units = 1_000_000_000 if fmt == "pcap-ns" else 1_000_000
                ticks = round(t * units)
                seconds, fraction = divmod(ticks, units)
                f.write(struct.pack(order + "IIII", seconds, fraction, len(kept), len(data)))
                f.write(kept)
