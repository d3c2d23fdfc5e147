"""Writing a :class:`~mqoe.analysis.throughput_traces.model.ThroughputTrace` back out in
the Sabre, Mahimahi or text format (round trips, conversions)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mqoe.analysis.throughput_traces.model import MAHIMAHI_PACKET_BITS, ThroughputTrace
from mqoe.errors import UserError

# -- writing (conversion between tools) -----------------------------------------------


def write_trace(trace: ThroughputTrace, path: str | Path, fmt: str) -> None:
    """Write ``trace`` as ``sabre``, ``text`` or ``mahimahi`` (for use with those tools).

    Mahimahi quantises to whole 1500-byte packets at whole milliseconds: packet ``k`` is
    placed in the millisecond during which the trace completes ``k`` packets, and
    the last one is moved to the period's end (Mahimahi's loop period is the last
    timestamp). Each bin of the re-read trace is thus within one or two packets of the
    original. Needs an integer-millisecond period and at least one packet. ``text``
    reads back exactly (to float rounding of the summed times). The file is replaced
    atomically: an interrupted write leaves any previous file whole.
    """
    from mqoe.results.atomic import atomic_write_text  # lazily: pyarrow is slow to import

    file = Path(path)
    if fmt == "sabre":
        rows = [
            {"duration_ms": _plain(d), "bandwidth_kbps": _plain(b), "latency_ms": _plain(lat)}
            for d, b, lat in zip(
                trace.duration_ms, trace.bandwidth_kbps, trace.latency_ms, strict=True
            )
        ]
        atomic_write_text(file, json.dumps(rows, indent=1) + "\n")
    elif fmt == "text":
        # Cooked: each line's throughput holds since the previous line's time, so a
        # first line at 0 marks the start; its rate is never used (the first one's given).
        ends = np.cumsum(trace.duration_ms) / 1000.0
        mbps = (trace.bandwidth_kbps / 1000.0).tolist()
        lines = [f"0.0 {mbps[0]!r}"]
        lines += [f"{t!r} {b!r}" for t, b in zip(ends.tolist(), mbps, strict=True)]
        atomic_write_text(file, "\n".join(lines) + "\n")
    elif fmt == "mahimahi":
        atomic_write_text(file, "\n".join(map(str, _mahimahi_stamps(trace))) + "\n")
    else:
        raise UserError(f"cannot write trace format {fmt!r}; expected sabre, text or mahimahi")


def _plain(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)


def _mahimahi_stamps(trace: ThroughputTrace) -> list[int]:
    period = trace.period_ms
    if not period.is_integer():
        raise UserError(f"Mahimahi needs a whole-millisecond period, got {period} ms")
    bounds = np.concatenate(([0.0], np.cumsum(trace.duration_ms)))
    cum_bits = np.concatenate(([0.0], np.cumsum(trace.duration_ms * trace.bandwidth_kbps)))
    n_packets = round(cum_bits[-1] / MAHIMAHI_PACKET_BITS)
    if n_packets < 1:
        raise UserError("the trace carries less than one packet; Mahimahi cannot express it")
    targets = np.minimum(np.arange(1, n_packets + 1) * MAHIMAHI_PACKET_BITS, cum_bits[-1])
    # The earliest time each packet's bits have been carried (skipping zero-rate stretches).
    j = np.maximum(np.searchsorted(cum_bits, targets, side="left"), 1)
    i = j - 1
    rate = trace.bandwidth_kbps[np.minimum(i, len(trace.bandwidth_kbps) - 1)]
    times = bounds[i] + (targets - cum_bits[i]) / np.where(rate > 0, rate, 1.0)
    stamps = np.minimum(np.floor(times), period).astype(np.int64)
    stamps[-1] = int(period)
    return [int(s) for s in stamps]
