"""Real throughput traces and video manifests, parsed by content into one shape.

A :class:`ThroughputTrace` is a list of piecewise-constant segments (duration,
bandwidth, latency), played in order and **looped** when a session outlasts it, as the
Sabre and Pensieve simulators and Mahimahi's link shells all do.

Formats read (``load_trace(path)`` tells them apart by content):

* ``sabre`` — Sabre's JSON list of ``{"duration_ms", "bandwidth_kbps", "latency_ms"}``
  (the HSDPA 3G, LTE 4G and FCC logs shipped with Sabre).
* ``mahimahi`` — a Mahimahi packet-delivery trace: one integer millisecond timestamp per
  line, non-decreasing; each line is one delivery opportunity for an MTU-sized
  (1500-byte) packet. Mahimahi replays the file in a loop whose period is the last
  timestamp; we bin the opportunities into fixed bins (default 100 ms) over that period.
* ``text`` — Pensieve's "cooked" traces (and its successors': the FCC, Norway 3G, Oboe
  and Puffer conversions): ``time_s throughput_mbps`` per line, separated by spaces,
  tabs or a comma; numbers as Python's ``float()`` reads them (``1.5e-1`` too); blank
  lines and ``#`` comments are skipped. Line *i* ≥ 1 gives the throughput over
  (t[i−1], t[i]], as Pensieve's simulator replays it (``env.py`` carries
  ``cooked_bw[ptr]`` for ``cooked_time[ptr] − cooked_time[ptr − 1]``); so the first
  line only marks the start, and the trace lasts last time − first time. Times need
  not start at 0 (the trace starts at the first one; Pensieve assumes 0); a repeated
  time is an empty interval and is dropped (Pensieve carries nothing over it); zero
  throughput is a real outage and is kept. Errors (``file:line``): not two numbers, a
  number that is not finite, a negative throughput, a time going back. A file with
  fewer than two distinct times, or whose every throughput is 0, is an error too.
  Pensieve's loader would also read columns after the second; we refuse them, as a
  file with more columns (a raw, unconverted log) would be misread silently.

Every format is read through :mod:`mqoe.analysis.textio`: gzip, UTF-8 with or without
a BOM, UTF-16 (PowerShell's ``>``), and LF, CRLF, CR or CR CR LF line ends all give the
same trace; line numbers in errors are the ones an editor shows. Unreadable paths are
one-line errors naming them (:class:`~mqoe.errors.InputFileError`).

Also the Sabre-style video manifest (:func:`load_manifest`) and a constant-bitrate
:func:`synthetic_manifest`. Errors name the file and line (:class:`InputFileError`).
Pure numpy; analysis never imports the engine.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from mqoe.analysis.throughput_traces.model import (
    MAHIMAHI_PACKET_BITS,
    FloatArray,
    IntArray,
    ThroughputTrace,
)
from mqoe.errors import InputFileError

_SPLIT = re.compile(r"[\s,]+")
_DIGITS = re.compile(r"[0-9]+")
_MAX_STAMP_MS = 10**12  # ~32 years: anything larger is not a delivery trace
_STAMP_DIGITS = len(str(_MAX_STAMP_MS))
_MAX_BINS = 5_000_000  # ~6 days at 100 ms bins: bounds memory on a corrupt file


def _data_lines(text: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) for every line that is not blank or a ``#`` comment."""
    out = []
    # split("\n"), not splitlines(): textio made every line end LF, and splitlines()
    # would also break at U+2028, form feeds etc., numbering lines unlike an editor.
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.split("#", 1)[0].strip()
        if line:
            out.append((number, _SPLIT.split(line)))
    return out


def _detect(text: str, path: Path) -> str:
    head = text.lstrip()
    if not head:
        raise InputFileError(path, "empty trace file")
    if head[0] in "[{":
        return "sabre"
    for number, fields in _data_lines(text):
        if len(fields) == 1:
            return "mahimahi"
        if len(fields) == 2:
            return "text"
        raise InputFileError(
            path,
            "unknown trace format: expected a JSON list (Sabre), one integer millisecond"
            f" timestamp per line (Mahimahi) or 'time_s throughput_mbps', got {len(fields)}"
            " fields",
            line=number,
        )
    raise InputFileError(path, "empty trace file (only comments)")


# -- Sabre JSON -----------------------------------------------------------------------


def _json(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's digit limit
        raise InputFileError(path, f"invalid JSON: {exc}") from None
    except RecursionError:
        raise InputFileError(path, "invalid JSON: nested too deeply") from None


def _item_line(text: str, index: int, key: str | None = None) -> int | None:
    """Line of element ``index`` of the top-level list (or of the list under ``key``).

    Only called on the error path: it walks the list with ``raw_decode`` to find where
    each element starts, which ``json.loads`` does not report.
    """
    decoder = json.JSONDecoder()
    pos = 0
    if key is not None:
        found = re.search(r'"' + re.escape(key) + r'"\s*:\s*', text)
        if found is None:
            return None
        pos = found.end()
    pos = text.find("[", pos)
    if pos < 0:
        return None
    pos += 1
    for current in range(index + 1):
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if current == index:
            return text.count("\n", 0, pos) + 1
        try:
            _, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return None
    return None


def _number(value: object) -> float | None:
    """A JSON number as float (bools and non-finite values are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # a JSON integer beyond float range
        return None
    return number if math.isfinite(number) else None


def _parse_sabre(text: str, path: Path, name: str, latency_ms: float) -> ThroughputTrace:
    data = _json(text, path)
    if not isinstance(data, list):
        raise InputFileError(path, "expected a JSON list of trace segments", line=1)
    if not data:
        raise InputFileError(path, "empty trace (no segments)", line=1)
    columns = np.empty((len(data), 3))
    for i, item in enumerate(data):
        row = _sabre_row(item, latency_ms)
        if isinstance(row, str):
            raise InputFileError(path, f"segment {i}: {row}", line=_item_line(text, i))
        columns[i] = row
    return _trace(path, name, columns[:, 0], columns[:, 1], columns[:, 2])


def _sabre_row(item: object, latency_ms: float) -> tuple[float, float, float] | str:
    """The segment's three numbers, or what is wrong with it."""
    expected = 'expected {"duration_ms": >0, "bandwidth_kbps": >=0, "latency_ms": >=0}'
    if not isinstance(item, dict):
        return expected
    duration = _number(item.get("duration_ms"))
    bandwidth = _number(item.get("bandwidth_kbps"))
    latency = _number(item["latency_ms"]) if "latency_ms" in item else latency_ms
    if duration is None or bandwidth is None or latency is None:
        return expected
    if duration <= 0:
        return f"duration_ms must be > 0, got {duration:g}"
    if bandwidth < 0:
        return f"bandwidth_kbps must be >= 0, got {bandwidth:g}"
    if latency < 0:
        return f"latency_ms must be >= 0, got {latency:g}"
    return duration, bandwidth, latency


# -- Mahimahi -------------------------------------------------------------------------


def _parse_mahimahi(
    text: str, path: Path, name: str, latency_ms: float, bin_ms: float
) -> ThroughputTrace:
    stamps: list[int] = []
    previous = 0
    for number, fields in _data_lines(text):
        token = fields[0]
        if len(fields) != 1 or not _DIGITS.fullmatch(token):
            got = " ".join(fields)
            raise InputFileError(
                path, f"expected one integer millisecond timestamp, got {got[:40]!r}", number
            )
        # int() of a huge digit string is slow and refused past 4300 digits: length first.
        if len(token.lstrip("0")) > _STAMP_DIGITS or int(token) > _MAX_STAMP_MS:
            shown = token if len(token) <= 20 else token[:20] + "…"
            raise InputFileError(path, f"timestamp {shown} ms is implausibly large", number)
        stamp = int(token)
        if stamp < previous:
            raise InputFileError(
                path, f"timestamps must not decrease ({stamp} after {previous})", number
            )
        stamps.append(stamp)
        previous = stamp
    if not stamps:
        raise InputFileError(path, "empty trace (no timestamps)")
    period_ms = stamps[-1]
    if period_ms == 0:
        # Mahimahi refuses this too: the loop period is the last timestamp.
        raise InputFileError(path, "the trace must last a non-zero time (last timestamp is 0)")
    n_bins = math.ceil(period_ms / bin_ms)
    if n_bins > _MAX_BINS:
        raise InputFileError(path, f"{period_ms} ms is too long for {bin_ms:g} ms bins")
    durations = np.full(n_bins, bin_ms)
    durations[-1] = period_ms - (n_bins - 1) * bin_ms
    # A delivery at t counts in bin ⌊t / bin_ms⌋; the one at the period's end in the last.
    index = np.minimum(np.array(stamps, dtype=np.float64) // bin_ms, n_bins - 1)
    packets = np.bincount(index.astype(np.int64), minlength=n_bins)
    bandwidth = packets * MAHIMAHI_PACKET_BITS / durations  # bits per ms = kbit/s
    return _trace(path, name, durations, bandwidth, np.full(n_bins, latency_ms))


# -- time_s throughput_mbps text ------------------------------------------------------


def _parse_text(text: str, path: Path, name: str, latency_ms: float) -> ThroughputTrace:
    """Pensieve's cooked trace: line i ≥ 1 holds over (t[i-1], t[i]] (module docstring)."""
    times: list[float] = []
    kbps: list[float] = []
    durations_ms: list[float] = []
    for number, fields in _data_lines(text):
        time_s, mbps = _cooked_line(fields, path, number)
        if times:
            step_ms = (time_s - times[-1]) * 1000.0
            if step_ms < 0:
                raise InputFileError(
                    path, f"time must not go back ({time_s:g} after {times[-1]:g})", number
                )
            if not math.isfinite(step_ms):
                raise InputFileError(path, f"step to {time_s:g} s is too long", number)
            if step_ms > 0:  # a repeated time is an empty interval: nothing to carry
                durations_ms.append(step_ms)
                kbps.append(mbps * 1000.0)
        times.append(time_s)
    if len(times) < 2:
        raise InputFileError(path, "a cooked trace needs at least two lines (a start and an end)")
    if not durations_ms:
        raise InputFileError(path, f"the trace lasts no time (every time is {times[0]:g} s)")
    return _trace(
        path, name, np.array(durations_ms), np.array(kbps), np.full(len(kbps), latency_ms)
    )


def _cooked_line(fields: list[str], path: Path, number: int) -> tuple[float, float]:
    """``(time_s, throughput_mbps)`` of one cooked line, or the error naming it."""
    if len(fields) != 2:
        raise InputFileError(
            path, f"expected 2 columns 'time_s throughput_mbps', got {len(fields)}", number
        )
    try:
        time_s, mbps = float(fields[0]), float(fields[1])
    except ValueError:
        got = " ".join(fields)[:40]
        raise InputFileError(
            path, f"expected two numbers 'time_s throughput_mbps', got {got!r}", number
        ) from None
    if not (math.isfinite(time_s) and math.isfinite(mbps)):
        raise InputFileError(path, "expected finite numbers", number)
    if mbps < 0:
        raise InputFileError(path, f"throughput must be >= 0, got {mbps:g}", number)
    if not math.isfinite(mbps * 1000.0):
        raise InputFileError(path, f"throughput {mbps:g} Mbit/s is too large", number)
    return time_s, mbps


def _trace(
    path: Path, name: str, duration: FloatArray, bandwidth: FloatArray, latency: FloatArray
) -> ThroughputTrace:
    """Build the trace; values valid line by line can still overflow (1e308 s × 1000)."""
    with np.errstate(over="ignore"):
        try:
            return ThroughputTrace(name, duration, bandwidth, latency)
        except ValueError as exc:
            raise InputFileError(path, str(exc)) from None


def _manifest_sizes(rows: object, width: int, text: str, file: Path) -> IntArray:
    if not isinstance(rows, list) or not rows:
        raise InputFileError(file, "segment_sizes_bits must be a non-empty list of lists")
    out = np.empty((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ok = isinstance(row, list) and len(row) == width
        values = [_number(v) for v in row] if ok and isinstance(row, list) else []
        if not ok or any(v is None or v <= 0 or v >= 2**62 for v in values):
            raise InputFileError(
                file,
                f"segment_sizes_bits[{i}]: expected {width} positive sizes (one per bitrate)",
                line=_item_line(text, i, key="segment_sizes_bits"),
            )
        out[i] = [round(v) for v in values if v is not None]
    return out
