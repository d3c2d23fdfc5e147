"""The reader (:func:`read_capture`): one streaming pass over a capture, records
decoded and tracked into a :class:`~mqoe.analysis.pcap.model.PcapReport`."""

from __future__ import annotations

import contextlib
import gzip
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from mqoe.analysis.pcap.flows import _Tracker
from mqoe.analysis.pcap.model import PcapReport, PcapStats
from mqoe.analysis.pcap.parse import _decode
from mqoe.analysis.pcap.read import (
    _GZIP,
    _PCAP_MAGICS,
    _PCAPNG_SHB,
    _pcap_records,
    _pcapng_records,
    _Record,
    _Stop,
)
from mqoe.analysis.textio import describe_os_error, open_binary
from mqoe.errors import InputFileError, UserError

# -- the reader -----------------------------------------------------------------------


def read_capture(
    path: str | Path,
    *,
    bin_ms: float = 100.0,
    port: int | None = None,
    progress: Callable[[float], None] | None = None,
) -> PcapReport:
    """Stream a pcap/pcapng file (see the module docstring) into per-flow summaries and a
    bytes-received time series in ``bin_ms`` bins; ``port`` keeps only TCP packets with
    that source or destination port. Memory grows with flows and active bins, not with
    the file."""
    if not (bin_ms > 0 and bin_ms < 1e9):
        raise UserError(f"bin_ms must be a positive number of milliseconds, got {bin_ms}")
    if port is not None and not 0 <= port <= 65535:
        raise UserError(f"port must be 0..65535, got {port}")
    path = Path(path)
    tracker = _Tracker(bin_ms / 1000.0)
    info: dict[str, Any] = {"links": set(), "format": "?", "skipped": tracker.skipped}
    with contextlib.ExitStack() as stack:
        raw = stack.enter_context(open_binary(path))
        try:
            size = max(1, os.fstat(raw.fileno()).st_size)
            head = raw.read(4)
        except OSError as error:
            raise InputFileError(path, describe_os_error(error)) from None
        stream: IO[bytes] = raw
        compressed = head[:2] == _GZIP
        if compressed:
            raw.seek(0)
            stream = stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))  # type: ignore[arg-type]
            head = _read_head(stream, path)
        if head in _PCAP_MAGICS:
            records = _pcap_records(stream, str(path), head, info)
        elif head == _PCAPNG_SHB:
            records = _pcapng_records(stream, str(path), head, info)
        elif not head:
            raise InputFileError(path, "empty file: expected a pcap or pcapng capture")
        else:
            raise InputFileError(path, f"not a pcap or pcapng capture (starts with 0x{head.hex()})")
        counts = _consume(records, tracker, port, progress, lambda: raw.tell() / size)
    flows, series = tracker.finish()
    stats = PcapStats(
        format=info["format"] + ("+gzip" if compressed else ""),
        link_types=tuple(sorted(info["links"])),
        records=counts["records"],
        tcp_segments=counts["tcp"],
        skipped=dict(tracker.skipped),
        payload_truncated=counts["cut"],
        time_reversed=tracker.time_reversed,
    )
    return PcapReport(str(path), tracker.t0, bin_ms, flows, series, stats)


def _read_head(stream: IO[bytes], path: Path) -> bytes:
    try:
        return stream.read(4)
    except (EOFError, OSError, zlib.error):
        raise InputFileError(path, "a broken gzip file (expected a compressed capture)") from None


def _consume(
    records: Iterator[_Record],
    tracker: _Tracker,
    port: int | None,
    progress: Callable[[float], None] | None,
    position: Callable[[], float],
) -> dict[str, int]:
    skipped = tracker.skipped  # the framing counts into the same Counter
    n = tcp = cut = 0
    try:
        for t, link, buf, wirelen in records:
            if n == 0:
                tracker.t0 = t
            n += 1
            if progress is not None and n % 4096 == 0:
                progress(min(1.0, position()))
            try:
                seg = _decode(link, buf, wirelen)
            except (IndexError, struct.error):  # a safety net: the decoders check lengths
                seg = "corrupt_header"
            if isinstance(seg, str):
                skipped[seg] += 1
                continue
            if port is not None and port not in (seg[2], seg[3]):
                skipped["other_port"] += 1
                continue
            tcp += 1
            cut += seg[8]
            tracker.add(t, seg)
    except _Stop as stop:
        skipped[stop.reason] += 1
    if progress is not None:
        progress(1.0)
    return {"records": n, "tcp": tcp, "cut": cut}
