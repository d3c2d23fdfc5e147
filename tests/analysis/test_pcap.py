"""Packet captures: bytes received per TCP flow from synthetic and hand-built
captures, every container and link type, damaged files, and the CLI."""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import socket
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

import dpkt  # type: ignore[import-untyped]
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mqoe.analysis.pcap.capture import read_capture
from mqoe.cli import analyze_pcap as cli
from mqoe.errors import InputFileError, UserError
from mqoe.generators.pcap import SynthFlow, synth_pcap

_LE = "<" if sys.byteorder == "little" else ">"


def _flow(report_flows: pd.DataFrame, flow: SynthFlow) -> pd.Series:
    match = report_flows[
        (report_flows["sport"] == flow.sport) & (report_flows["dport"] == flow.dport)
    ]
    assert len(match) == 1
    return match.iloc[0]


def _wraps(flow: SynthFlow) -> int:
    return ((flow.isn + 1) % 2**32 + flow.bytes - 1) // 2**32


def _check_against_truth(path: Path, truth: dict[str, SynthFlow], **kw: object) -> pd.DataFrame:
    report = read_capture(path, **kw)  # type: ignore[arg-type]
    flows = report.flows
    assert len(flows) == len(truth)
    for flow in truth.values():
        row = _flow(flows, flow)
        assert row["src"] == flow.src and row["dst"] == flow.dst
        assert row["bytes_received"] == flow.bytes
        assert row["retransmitted_bytes"] == flow.retransmitted_bytes
        assert row["missed_bytes"] == flow.missed_bytes
        assert row["payload_bytes"] == flow.bytes + flow.retransmitted_bytes - flow.missed_bytes
        assert row["payload_bytes"] == sum(size for _, _, size in flow.sends)
        assert row["seq_wraps"] == _wraps(flow)
        assert bool(row["syn_seen"])
        assert row["last_s"] == pytest.approx(_last_change(flow) - report.start_unix_s, abs=2e-6)
    return flows


# -- the synthetic capture, every container and link -----------------------------------


@pytest.mark.parametrize("fmt", ["pcap", "pcap-ns", "pcapng"])
@pytest.mark.parametrize("link", ["ethernet", "sll", "sll2", "raw"])
@pytest.mark.parametrize("ipv6", [False, True])
def test_synthetic_capture_gives_known_byte_counts(
    tmp_path: Path, fmt: str, link: str, ipv6: bool
) -> None:
    path = tmp_path / "c.pcap"
    truth = synth_pcap(path, fmt=fmt, link=link, ipv6=ipv6, fg_bytes=30_000, bg_bytes=50_000)  # type: ignore[arg-type]
    assert truth["fg"].isn > 2**32 - 5000  # the foreground wraps past 2^32
    assert _wraps(truth["fg"]) == 1
    assert truth["bg"].retransmitted_bytes > 0
    flows = _check_against_truth(path, truth)
    fg = _flow(flows, truth["fg"])
    assert fg["mean_throughput_mbps"] == pytest.approx(
        fg["bytes_received"] * 8 / fg["duration_s"] / 1e6
    )


def _expected_progress(flow: SynthFlow, until: float) -> int:
    """Bytes received by ``until``, from a per-byte map: data seen in the capture plus
    everything below an ACK the phone had sent (capped at the highest byte seen)."""
    have = bytearray(flow.bytes)
    highest = 0
    for t, offset, size in flow.sends:
        if t < until:
            have[offset : offset + size] = b"\x01" * size
            highest = max(highest, offset + size)
    acked = max((a for t, a in flow.acks if t < until), default=0)
    have[: min(acked, highest)] = b"\x01" * min(acked, highest)
    prefix = have.find(0)
    return len(have) if prefix < 0 else prefix


def _last_change(flow: SynthFlow) -> float:
    """When the per-byte progress last increased: the latest captured data segment or
    ACK with more bytes received just after it than just before. (Unix times near 1.7e9
    are 2.4e-7 s apart, so "just after" is the next float, not ``t + 1e-9``.)"""
    events = sorted({t for t, _, _ in flow.sends} | {t for t, _ in flow.acks}, reverse=True)
    for t in events:
        if _expected_progress(flow, math.nextafter(t, math.inf)) > _expected_progress(flow, t):
            return t
    raise AssertionError("the progress never increased")


@pytest.mark.parametrize("capture_loss", [False, True])
def test_time_series_matches_a_per_byte_replay(tmp_path: Path, capture_loss: bool) -> None:
    path = tmp_path / "c.pcap"
    truth = synth_pcap(path, seed=4, fg_bytes=60_000, bg_bytes=90_000, capture_loss=capture_loss)
    report = read_capture(path, bin_ms=250)
    t0 = report.start_unix_s
    for flow in truth.values():
        row = _flow(report.flows, flow)
        series = report.series[report.series["flow"] == row["flow"]]
        assert series["t_s"].is_monotonic_increasing
        assert series["bytes_received"].is_monotonic_increasing
        assert series["bytes_received"].iloc[-1] == flow.bytes
        events = [t for t, _, _ in flow.sends] + [t for t, _ in flow.acks]
        checked = 0
        for t_s, received in zip(series["t_s"], series["bytes_received"], strict=True):
            assert (round(t_s / 0.25, 9)).is_integer()
            end = t0 + t_s
            if min(abs(end - e) for e in events) < 1e-3:
                continue  # too close to a bin edge for microsecond timestamps
            assert received == _expected_progress(flow, end)
            checked += 1
        assert checked > 5
    if capture_loss:
        assert _flow(report.flows, truth["fg"])["missed_bytes"] > 0


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    fmt=st.sampled_from(["pcap", "pcap-ns", "pcapng"]),
    link=st.sampled_from(["ethernet", "sll", "sll2", "raw"]),
    ipv6=st.booleans(),
    fg=st.integers(1, 40_000),
    bg=st.integers(1, 40_000),
    mss=st.integers(100, 1460),
    loss=st.booleans(),
    snaplen=st.sampled_from([None, 96, 200]),
)
# capture loss: the last segment is held behind the lost one until the final ACK covers it
@example(seed=0, fmt="pcap", link="ethernet", ipv6=False, fg=301, bg=1, mss=100, loss=True,
         snaplen=None)  # fmt: skip
# the background's last send is a retransmission: no new bytes, so not its last change
@example(seed=0, fmt="pcap", link="ethernet", ipv6=False, fg=1000, bg=600, mss=100, loss=False,
         snaplen=None)  # fmt: skip
def test_round_trip_from_the_generator(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    fmt: str,
    link: str,
    ipv6: bool,
    fg: int,
    bg: int,
    mss: int,
    loss: bool,
    snaplen: int | None,
) -> None:
    path = tmp_path_factory.mktemp("rt") / "c.pcap"
    truth = synth_pcap(
        path, seed=seed, fmt=fmt, link=link, ipv6=ipv6, fg_bytes=fg, bg_bytes=bg,  # type: ignore[arg-type]
        mss=mss, capture_loss=loss, snaplen=snaplen,
    )  # fmt: skip
    _check_against_truth(path, truth)


def test_snaplen_cut_payloads_are_used_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "c.pcap"
    truth = synth_pcap(path, snaplen=80, fg_bytes=20_000, bg_bytes=20_000)
    _check_against_truth(path, truth)
    stats = read_capture(path).stats
    cut = sum(len(f.sends) for f in truth.values())
    assert stats.payload_truncated == cut


def test_snaplen_cut_headers_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "c.pcap"
    synth_pcap(path, snaplen=40, fg_bytes=3000, bg_bytes=3000, noise=False)  # 14 + 20 + 6 bytes
    report = read_capture(path)
    assert report.flows.empty
    assert report.stats.tcp_segments == 0
    assert report.stats.skipped == {"snaplen_truncated": report.stats.records}


def test_port_filter_keeps_one_flow(tmp_path: Path) -> None:
    path = tmp_path / "c.pcap"
    truth = synth_pcap(path, fg_bytes=10_000, bg_bytes=20_000)
    report = read_capture(path, port=443)
    assert report.flows["sport"].tolist() == [443]
    assert report.flows["bytes_received"].tolist() == [truth["fg"].bytes]
    assert report.stats.skipped["other_port"] > 0


def test_gzip_compressed_capture(tmp_path: Path) -> None:
    plain = tmp_path / "c.pcapng"
    truth = synth_pcap(plain, fmt="pcapng", fg_bytes=10_000, bg_bytes=10_000)
    packed = tmp_path / "c.pcapng.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    _check_against_truth(packed, truth)
    assert read_capture(packed).stats.format == "pcapng+gzip"
    cut = tmp_path / "cut.pcapng.gz"
    cut.write_bytes(packed.read_bytes()[: len(packed.read_bytes()) // 2])
    report = read_capture(cut)
    assert report.stats.skipped.get("truncated_record") == 1
    assert report.flows["bytes_received"].sum() < 20_000


# -- hand-built packets ---------------------------------------------------------------

PHONE, SERVER = "10.0.0.2", "10.0.0.1"


def _tcp(
    seq: int, data: bytes = b"", flags: int = 0x18, ack: int = 0, sport: int = 80,
    dport: int = 5000, src: str = SERVER, dst: str = PHONE,
) -> dpkt.ip.IP:  # fmt: skip
    segment = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq % 2**32, ack=ack % 2**32,
                           flags=flags, data=data)  # fmt: skip
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=6, data=segment)
    ip.len = len(ip)
    return ip


def _ether(ip: bytes | dpkt.Packet, kind: int = 0x0800) -> bytes:
    frame = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=kind, data=ip)
    return bytes(frame)


def _pcap(tmp_path: Path, frames: Sequence[bytes], linktype: int = 1, name: str = "h.pcap") -> Path:
    path = tmp_path / name
    with path.open("wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535, linktype=linktype)
        for i, frame in enumerate(frames):
            writer.writepkt(frame, ts=1000.0 + i * 0.01)
    return path


def test_out_of_order_and_partly_overlapping_retransmissions(tmp_path: Path) -> None:
    isn = 2**32 - 150  # and the sequence number wraps at byte 149
    frames = [
        _ether(_tcp(isn, flags=0x12)),  # SYN-ACK from the server: data starts at isn + 1
        _ether(_tcp(isn + 1 + 100, b"b" * 100)),  # [100, 200) early
        _ether(_tcp(isn + 1, b"a" * 100)),  # [0, 100): fills the gap → 200
        _ether(_tcp(isn + 1 + 150, b"c" * 100)),  # [150, 250): 50 bytes again
        _ether(_tcp(isn + 1, b"a" * 50)),  # all again
        _ether(_tcp(isn + 1 + 400, b"e" * 10)),  # [400, 410): held, gap at 250
    ]
    report = read_capture(_pcap(tmp_path, frames))
    (row,) = report.flows.to_dict(orient="records")
    assert row["bytes_received"] == 250
    assert row["retransmitted_bytes"] == 100
    assert row["payload_bytes"] == 360
    assert row["seq_wraps"] == 1
    assert report.series["bytes_received"].tolist() == [250]  # one 100 ms bin


def test_without_a_handshake_progress_counts_from_the_first_byte_seen(tmp_path: Path) -> None:
    frames = [_ether(_tcp(5000, b"x" * 10)), _ether(_tcp(5010, b"y" * 10))]
    (row,) = read_capture(_pcap(tmp_path, frames)).flows.to_dict(orient="records")
    assert row["bytes_received"] == 20
    assert not row["syn_seen"]


def test_the_receivers_ack_covers_what_the_capture_missed(tmp_path: Path) -> None:
    frames = [
        _ether(_tcp(0, flags=0x12)),
        _ether(_tcp(1, b"a" * 10)),
        _ether(_tcp(21, b"c" * 10)),  # [10, 20) never captured
        _ether(_tcp(7, flags=0x10, ack=31, sport=5000, dport=80, src=PHONE, dst=SERVER)),
        _ether(_tcp(31, flags=0x11)),  # FIN: its phantom byte must not count
        _ether(_tcp(7, flags=0x10, ack=32, sport=5000, dport=80, src=PHONE, dst=SERVER)),
        _ether(_tcp(7, flags=0x10, ack=10**6, sport=5000, dport=80, src=PHONE, dst=SERVER)),
    ]
    (row,) = read_capture(_pcap(tmp_path, frames)).flows.to_dict(orient="records")
    assert row["bytes_received"] == 30
    assert row["missed_bytes"] == 10
    assert row["payload_bytes"] == 20


def test_a_new_syn_on_the_same_ports_starts_a_new_flow(tmp_path: Path) -> None:
    frames = [
        _ether(_tcp(100, flags=0x12)),
        _ether(_tcp(101, b"a" * 30)),
        _ether(_tcp(9000, flags=0x12)),
        _ether(_tcp(9001, b"b" * 7)),
    ]
    flows = read_capture(_pcap(tmp_path, frames)).flows
    assert flows["bytes_received"].tolist() == [30, 7]
    assert flows["flow"].tolist() == [0, 1]


def test_header_lengths_not_captured_lengths_decide_the_payload(tmp_path: Path) -> None:
    segment = bytes(_tcp(1, b"hi").data)
    options = b"\x01\x01\x01\x00"  # a 4-byte IPv4 option: IHL 6
    header = struct.pack("!BBHHHBBH4s4s", 0x46, 0, 24 + len(segment), 0, 0, 64, 6, 0,
                         socket.inet_aton(SERVER), socket.inet_aton(PHONE))  # fmt: skip
    padded = _ether(header + options + segment) + b"\x00" * 30  # Ethernet padding
    vlan = b"\x04" * 6 + b"\x02" * 6 + b"\x81\x00\x00\x05\x08\x00" + bytes(_tcp(3, b"abc"))
    (row,) = read_capture(_pcap(tmp_path, [padded, vlan])).flows.to_dict(orient="records")
    assert row["payload_bytes"] == 5
    assert row["bytes_received"] == 5


def test_ipv6_extension_headers_are_walked(tmp_path: Path) -> None:
    segment = dpkt.tcp.TCP(sport=443, dport=6000, seq=10, flags=0x18, data=b"z" * 42)
    hop_by_hop = bytes([6, 0]) + bytes(6)  # next header TCP, 8 bytes
    payload = hop_by_hop + bytes(segment)
    header = struct.pack("!IHBB", 6 << 28, len(payload), 0, 64)
    src, dst = (
        socket.inet_pton(socket.AF_INET6, "2001:db8::1"),
        socket.inet_pton(socket.AF_INET6, "2001:db8::2"),
    )
    packet = header + src + dst + payload
    (row,) = read_capture(_pcap(tmp_path, [packet], linktype=229)).flows.to_dict(orient="records")
    assert row["payload_bytes"] == 42
    assert row["label"] == "[2001:db8::1]:443 → [2001:db8::2]:6000"


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (_ether(b"\x00" * 28, kind=0x0806), "non_ip"),
        (_ether(dpkt.ip.IP(p=17, data=dpkt.udp.UDP(data=b"x"))), "non_tcp"),
        (_ether(bytes(_tcp(1, b"q"))[:6] + b"\x20\x00" + bytes(_tcp(1, b"q"))[8:]), "ip_fragment"),
        (_ether(b"\x43" + bytes(_tcp(1, b"q"))[1:]), "corrupt_header"),  # IHL 3
        (
            _ether(bytes(_tcp(1, b"q"))[:2] + b"\xff\xff" + bytes(_tcp(1, b"q"))[4:]),
            "corrupt_header",
        ),
        (_ether(bytes(_tcp(1))[:32] + b"\x20" + bytes(_tcp(1))[33:]), "corrupt_header"),  # offset 2
        (_ether(b""), "corrupt_header"),
        (b"\x00" * 5, "corrupt_header"),
    ],
)
def test_unusable_packets_are_skipped_by_reason(tmp_path: Path, frame: bytes, reason: str) -> None:
    report = read_capture(_pcap(tmp_path, [frame, _ether(_tcp(1, b"ok"))]))
    assert report.stats.skipped == {reason: 1}
    assert report.flows["payload_bytes"].tolist() == [2]


def test_loopback_and_cooked_links(tmp_path: Path) -> None:
    ip = bytes(_tcp(1, b"12345"))
    null = struct.pack("<I", 2) + ip  # host-order AF_INET
    loop = struct.pack(">I", 2) + ip
    sll = struct.pack("!HHH8sH", 0, 1, 6, b"\x02" * 6 + b"\0\0", 0x0800) + ip
    for linktype, frame in ((0, null), (108, loop), (113, sll)):
        report = read_capture(_pcap(tmp_path, [frame], linktype, name=f"{linktype}.pcap"))
        assert report.flows["payload_bytes"].tolist() == [5], linktype


def _block(kind: int, body: bytes, order: str = "<") -> bytes:
    body += bytes(-len(body) % 4)
    return (
        struct.pack(order + "II", kind, len(body) + 12)
        + body
        + struct.pack(order + "I", len(body) + 12)
    )


def _shb(order: str = "<") -> bytes:
    return _block(0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1), order)


def _idb(link: int, order: str = "<", tsresol: int | None = None) -> bytes:
    options = b""
    if tsresol is not None:
        options = struct.pack(order + "HHB3x", 9, 1, tsresol) + struct.pack(order + "HH", 0, 0)
    return _block(1, struct.pack(order + "HHI", link, 0, 0) + options, order)


def _epb(
    iface: int, ticks: int, data: bytes, order: str = "<", wirelen: int | None = None
) -> bytes:
    head = struct.pack(order + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(data),
                       wirelen or len(data))  # fmt: skip
    return _block(6, head + data, order)


@pytest.mark.parametrize("order", ["<", ">"])
def test_pcapng_with_two_interfaces_and_sections(tmp_path: Path, order: str) -> None:
    raw_ip = bytes(_tcp(1, b"A" * 10, sport=81))
    dup = _ether(raw_ip)  # the same segment again, on the Ethernet interface
    blocks = [
        _shb(order),
        _idb(1, order),  # Ethernet, microseconds
        _idb(101, order, tsresol=9),  # raw IP, nanoseconds
        _block(4, b"\x00" * 8, order),  # a name-resolution block: skipped
        _epb(0, 2_000_000, _ether(_tcp(1, b"e" * 7)), order),  # t = 2 s
        _epb(1, 3_000_000_000, raw_ip, order),  # t = 3 s
        _epb(7, 0, raw_ip, order),  # no such interface
        _block(3, struct.pack(order + "I", len(dup)) + dup, order),  # simple: interface 0
        _shb(">" if order == "<" else "<"),  # a new section in the other byte order
        _idb(101, ">" if order == "<" else "<"),
        _epb(0, 5_000_000, bytes(_tcp(11, b"A" * 5, sport=81)), ">" if order == "<" else "<"),
    ]
    path = tmp_path / "h.pcapng"
    path.write_bytes(b"".join(blocks))
    report = read_capture(path)
    assert report.stats.link_types == (1, 101)
    assert report.stats.skipped == {"unknown_interface": 1}
    assert report.start_unix_s == pytest.approx(2.0)
    flows = report.flows.set_index("sport")
    assert flows.loc[80, "bytes_received"] == 7
    assert flows.loc[81, "bytes_received"] == 15  # 10, the same 10 again, then 5 more
    assert flows.loc[81, "retransmitted_bytes"] == 10
    assert flows.loc[81, "first_s"] == pytest.approx(1.0)
    assert flows.loc[81, "last_s"] == pytest.approx(3.0)


def test_big_endian_classic_pcap_with_nanoseconds(tmp_path: Path) -> None:
    frame = _ether(_tcp(1, b"x" * 9))
    data = struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
    data += struct.pack(">IIII", 7, 500_000_000, len(frame), len(frame)) + frame
    path = tmp_path / "be.pcap"
    path.write_bytes(data)
    report = read_capture(path)
    assert report.stats.format == "pcap-ns"
    assert report.start_unix_s == pytest.approx(7.5)
    assert report.flows["bytes_received"].tolist() == [9]


# -- damaged files --------------------------------------------------------------------


def test_a_partial_last_record_is_counted_not_fatal(tmp_path: Path) -> None:
    path = _pcap(tmp_path, [_ether(_tcp(1, b"a" * 100)), _ether(_tcp(101, b"b" * 100))])
    data = path.read_bytes()
    for cut in (len(data) - 50, len(data) - 150 + 5):
        path.write_bytes(data[:cut])
        report = read_capture(path)
        assert report.stats.skipped == {"truncated_record": 1}
        assert report.flows["bytes_received"].tolist() == [100]


def test_an_implausible_record_length_stops_framing(tmp_path: Path) -> None:
    path = _pcap(tmp_path, [_ether(_tcp(1, b"a" * 10)), _ether(_tcp(11, b"b" * 10))])
    data = bytearray(path.read_bytes())
    second = 24 + 16 + len(_ether(_tcp(1, b"a" * 10)))
    data[second + 8 : second + 12] = struct.pack(_LE + "I", 2**31)
    path.write_bytes(bytes(data))
    report = read_capture(path)
    assert report.stats.skipped == {"corrupt_record": 1}
    assert report.flows["bytes_received"].tolist() == [10]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b"hello, this is text\n", "not a pcap"),
        (b"\xd4\xc3\xb2\xa1\x02\x00", "truncated pcap file header"),
        (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 105), "link type 105"),
        (struct.pack("<IHHiIII", 0xA1B2C3D4, 3, 0, 0, 0, 65535, 1), "version 3"),
        (_shb()[:8] + b"\x00\x00\x00\x00", "byte-order"),
        (b"\x0a\x0d\x0d\x0a\xff\xff\xff\x7f\x4d\x3c\x2b\x1a", "implausible length"),
        (b"\x1f\x8b\x08\x00garbage", "gzip"),
    ],
)
def test_files_that_are_not_captures(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "x.pcap"
    path.write_bytes(data)
    with pytest.raises(InputFileError, match=message) as info:
        read_capture(path)
    assert info.value.path == str(path)


def test_bad_parameters_are_user_errors(tmp_path: Path) -> None:
    path = _pcap(tmp_path, [])
    with pytest.raises(UserError, match="bin_ms"):
        read_capture(path, bin_ms=0)
    with pytest.raises(UserError, match="port"):
        read_capture(path, port=70000)
    with pytest.raises(InputFileError, match="no such file"):
        read_capture(tmp_path / "absent.pcap")
    assert read_capture(path).flows.empty  # a header and no packets is a valid capture


# -- fuzzing: parse or raise UserError, nothing else ----------------------------------


def _fuzz_seeds(folder: Path) -> list[bytes]:
    seeds = []
    for i, (fmt, link) in enumerate([("pcap", "ethernet"), ("pcapng", "sll2"), ("pcap-ns", "raw")]):
        path = folder / f"seed{i}.pcap"
        synth_pcap(path, seed=i, fmt=fmt, link=link, fg_bytes=3000, bg_bytes=9000,  # type: ignore[arg-type]
                   mss=700, ipv6=i == 1)  # fmt: skip
        seeds.append(path.read_bytes())
    return seeds


def _mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(len(buf) + 1)
        kind = rng.randrange(6)
        if kind == 0 and buf:
            buf[min(at, len(buf) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1 and buf:
            buf[min(at, len(buf) - 1)] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        elif kind == 2:
            del buf[at : at + rng.randint(1, 64)]
        elif kind == 3:
            buf[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif kind == 4 and rng.random() < 0.3:
            buf = buf[:at]
        else:
            start = rng.randrange(len(buf) + 1)
            buf[at:at] = buf[start : start + rng.randint(1, 200)]
    return bytes(buf)


def _reads_or_user_error(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        report = read_capture(path, bin_ms=50)
    except UserError as error:
        assert str(path) in str(error)
        return
    flows = report.flows
    assert (flows["bytes_received"] >= 0).all()
    assert (flows["retransmitted_bytes"] <= flows["payload_bytes"]).all()
    report.summary()


@pytest.fixture(scope="module")
def fuzz_seeds(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    return _fuzz_seeds(tmp_path_factory.mktemp("seeds"))


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), which=st.integers(0, 2))
def test_mutated_captures_read_or_raise_user_error(
    tmp_path: Path, fuzz_seeds: list[bytes], seed: int, which: int
) -> None:
    _reads_or_user_error(tmp_path / "m.pcap", _mutate(fuzz_seeds[which], random.Random(seed)))


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    head=st.sampled_from([b"", b"\xd4\xc3\xb2\xa1", b"\x0a\x0d\x0d\x0a", b"\x1f\x8b"]),
    tail=st.binary(max_size=200),
)
def test_garbage_reads_or_raises_user_error(tmp_path: Path, head: bytes, tail: bytes) -> None:
    _reads_or_user_error(tmp_path / "g.pcap", head + tail)


@pytest.mark.slow
def test_deep_fuzz_ten_thousand_mutated_captures(tmp_path: Path, fuzz_seeds: list[bytes]) -> None:
    rng = random.Random(7)
    for i in range(10_000):
        _reads_or_user_error(tmp_path / "d.pcap", _mutate(fuzz_seeds[i % 3], rng))


# -- the CLI --------------------------------------------------------------------------


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_cli_json_csv_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.pcapng"
    truth = synth_pcap(path, fmt="pcapng", fg_bytes=20_000, bg_bytes=40_000)
    argv = [str(path), "--json", "--csv", str(tmp_path / "t"), "--plot", str(tmp_path / "p"),
            "--bin-ms", "500"]  # fmt: skip
    assert _run(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["summary"]["bytes_received"] == 60_000
    assert sorted(f["bytes_received"] for f in payload["flows"]) == [20_000, 40_000]
    series = pd.read_csv(tmp_path / "t" / "series.csv")
    assert (series["t_s"] * 2).round(9).map(float.is_integer).all()  # 500 ms bins
    flows = pd.read_csv(tmp_path / "t" / "flows.csv")
    assert flows["retransmitted_bytes"].sum() == truth["bg"].retransmitted_bytes
    assert (tmp_path / "p" / "seq_growth.png").read_bytes().startswith(b"\x89PNG")


def test_cli_table_and_port(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.pcap"
    synth_pcap(path, fg_bytes=5000, bg_bytes=5000)
    assert _run([str(path), "--port", "80"]) == 0
    out = capsys.readouterr().out
    assert "1 flows with data" in out
    assert "other_port" in out


def test_cli_errors(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a capture")
    with pytest.raises(UserError, match=r"notes\.txt"):
        _run([str(path)])
    with pytest.raises(SystemExit):
        _run([str(path), "--port", "99999"])
    with pytest.raises(SystemExit):
        _run([str(path), "--bin-ms", "0"])
