"""Reading trace and manifest files: any encoding and line end :mod:`mqoe.analysis.textio`
reads, a size cap, then the format's parser (:mod:`.parse`)."""

from __future__ import annotations

import itertools
import math
import zlib
from pathlib import Path

import numpy as np

from mqoe.analysis.textio import read_text
from mqoe.analysis.throughput_traces.model import FORMATS, ThroughputTrace, VideoManifest
from mqoe.analysis.throughput_traces.parse import (
    _detect,
    _json,
    _manifest_sizes,
    _number,
    _parse_mahimahi,
    _parse_sabre,
    _parse_text,
)
from mqoe.errors import InputFileError, UserError
from mqoe.policies.abr.base import Representation

_MAX_FILE_BYTES = 1 << 28  # 256 MiB decompressed: Mahimahi at 1 Gbit/s for ~8 min


# -- reading files ------------------------------------------------------------------


def _read_text(path: Path) -> str:
    """The whole file as text with LF line ends (any encoding and line end textio reads)."""
    try:
        return read_text(path, max_bytes=_MAX_FILE_BYTES)
    except zlib.error as exc:  # a damaged deflate stream inside a well-formed gzip header
        raise InputFileError(path, f"corrupt gzip file: {exc}") from None


def load_trace(
    path: str | Path,
    fmt: str = "auto",
    *,
    latency_ms: float = 0.0,
    bin_ms: float = 100.0,
    name: str | None = None,
) -> ThroughputTrace:
    """Parse a throughput trace file; ``fmt="auto"`` detects the format from the content.

    ``latency_ms`` applies to the formats without latency (Mahimahi, text) and to Sabre
    entries that omit it; ``bin_ms`` is the Mahimahi binning. The trace is named after
    the file (its stem) unless ``name`` is given.
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown trace format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if not (latency_ms >= 0 and math.isfinite(latency_ms)):
        raise UserError(f"latency_ms must be a finite number ≥ 0, got {latency_ms}")
    if not (bin_ms > 0 and math.isfinite(bin_ms)):
        raise UserError(f"bin_ms must be a positive number, got {bin_ms}")
    file = Path(path)
    text = _read_text(file)
    label = file.stem if name is None else name
    kind = _detect(text, file) if fmt == "auto" else fmt
    if kind == "sabre":
        trace = _parse_sabre(text, file, label, latency_ms)
    elif kind == "mahimahi":
        trace = _parse_mahimahi(text, file, label, latency_ms, bin_ms)
    else:
        trace = _parse_text(text, file, label, latency_ms)
    return _carries_data(trace, file)


def _carries_data(trace: ThroughputTrace, path: Path) -> ThroughputTrace:
    """A replayed trace must last a finite time and carry a finite, non-zero number of
    bits per period (segments valid one by one can still sum past float range)."""
    with np.errstate(over="ignore"):
        period_ms = trace.period_ms
        bits = trace.bits_per_period
    if not math.isfinite(period_ms):
        raise InputFileError(path, "the trace is too long: its period overflows")
    if not math.isfinite(bits):
        raise InputFileError(path, "throughputs too large: the bits per period overflow")
    if bits <= 0:
        raise InputFileError(path, "the trace carries no data (every throughput is 0)")
    return trace


# -- manifest -------------------------------------------------------------------------


def load_manifest(path: str | Path) -> VideoManifest:
    """Parse a Sabre-style manifest: ``segment_duration_ms``, ``bitrates_kbps`` (ascending)
    and ``segment_sizes_bits[segment][quality]``."""
    file = Path(path)
    text = _read_text(file)
    data = _json(text, file)
    if not isinstance(data, dict):
        raise InputFileError(file, "expected a JSON object (a manifest)", line=1)
    missing = [
        k for k in ("segment_duration_ms", "bitrates_kbps", "segment_sizes_bits") if k not in data
    ]
    if missing:
        raise InputFileError(file, f"manifest lacks {', '.join(missing)}")
    segment_ms = _number(data["segment_duration_ms"])
    if segment_ms is None or segment_ms <= 0:
        raise InputFileError(file, "segment_duration_ms must be a positive number")
    rates = data["bitrates_kbps"]
    numbers = [_number(r) for r in rates] if isinstance(rates, list) else []
    if not numbers or any(r is None or r <= 0 for r in numbers):
        raise InputFileError(file, "bitrates_kbps must be a non-empty list of positive numbers")
    ladder_kbps = [float(r) for r in numbers if r is not None]
    if any(b <= a for a, b in itertools.pairwise(ladder_kbps)):
        raise InputFileError(file, "bitrates_kbps must be strictly ascending")
    sizes = _manifest_sizes(data["segment_sizes_bits"], len(ladder_kbps), text, file)
    ladder = tuple(Representation(rate) for rate in ladder_kbps)
    try:
        return VideoManifest(segment_ms / 1000.0, ladder, sizes)
    except ValueError as exc:
        raise InputFileError(file, str(exc)) from None
