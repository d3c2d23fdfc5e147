"""The summary lines of ``dumpsys gfxinfo`` (AOSP ``JankTracker::dumpData``; the format is
in :mod:`mqoe.analysis.gfxinfo`), kept as columns: a long capture appends a dump every
few seconds, so a file can hold tens of thousands of summary records."""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from mqoe.analysis.gfxinfo.format import COUNTERS, PERCENTILES, SUMMARY_COLUMNS

#: A summary line's key (the text before its colon) → (value kind, column or histogram).
_KEYS: dict[str, tuple[str, str]] = {
    "Stats since": ("ns", "stats_since_ns"),
    "Total frames rendered": ("count", "total_frames_rendered"),
    "Janky frames": ("janky", "janky"),
    "Janky frames (legacy)": ("janky", "janky_legacy"),
    **{f"{p}th percentile": ("ms", f"p{p}_ms") for p in PERCENTILES},
    **{f"{p}th gpu percentile": ("ms", f"gpu_p{p}_ms") for p in PERCENTILES},
    **{f"Number {label}": ("count", column) for label, column in COUNTERS.items()},
    "HISTOGRAM": ("histogram", "cpu"),
    "GPU HISTOGRAM": ("histogram", "gpu"),
}
_LIKE = re.compile(r"[0-9]{1,3}th(?: gpu)? percentile|Number [A-Za-z].{0,80}")  # unknown ones
_NS = re.compile(r"([0-9]{1,19})ns")
_JANKY = re.compile(r"([0-9]{1,19}) \(\s*(-?nan|-?inf|[-+]?[0-9]{1,20}(?:[.,][0-9]{0,20})?)%\)")
_NOT_BUCKET = str.maketrans("", "", "0123456789ms=")  # deletes all a bucket is made of
#: "Nms=0" for every bucket AOSP prints (and any other up to 5 s): the empty buckets
_EMPTY_BUCKETS = frozenset(f"{ms}ms=0" for ms in range(5001))
_MISSING = -(2**63)  # an int column's "line absent"
_KINDS = ("cpu", "gpu")
_FLOATS = frozenset(c for c in SUMMARY_COLUMNS if c.endswith("_pct"))


class SummaryLog:
    """One file's summary records and histogram buckets, column by column.

    A record collects the lines of one summary: ``Stats since`` starts a new one (once the
    current record has values), as does a line the current record already has; the
    caller closes the current record where a section or window starts.
    """

    def __init__(self) -> None:
        self.section = array("q")
        self.line = array("q")
        self.scope: list[str] = []
        self.values: dict[str, array[Any]] = {
            c: array("d") if c in _FLOATS else array("q") for c in SUMMARY_COLUMNS
        }
        self.buckets: dict[str, array[int]] = {
            k: array("q") for k in ("summary", "kind", "bucket_ms", "frames")
        }
        self.malformed = 0
        self._keys: set[str] | None = None  # what the current record holds; None: no record
        self._names: dict[str, str] = {}  # one copy of each scope name

    def __len__(self) -> int:
        return len(self.line)

    def close(self) -> None:
        """The next summary line starts a new record."""
        self._keys = None

    def feed(self, text: str, section: Callable[[], int], scope: str, line: int) -> bool:
        """Take ``text`` if it is a summary line (malformed ones are counted); ``section``
        gives the current section's index when a record starts."""
        head, colon, rest = text.partition(":")
        if not colon:
            return False
        key = head.rstrip()
        found = _KEYS.get(key)
        if found is None:
            like = key[:1].isdigit() or key.startswith("Number ")
            if like and _LIKE.fullmatch(key):  # a percentile or counter this version lacks
                self.malformed += 1
                return True
            return False
        kind, column = found
        value = rest.strip()
        if kind == "histogram":
            self._histogram(column, value, section, scope, line)
            return True
        parsed = _parse(kind, column, value)
        if parsed is None:
            self.malformed += 1
            return True
        index = self._record(parsed[0][0], section, scope, line)
        for name, number in parsed:
            self.values[name][index] = number
        return True

    def _histogram(
        self, kind: str, value: str, section: Callable[[], int], scope: str, line: int
    ) -> None:
        # AOSP prints every bucket, most of them empty: only the others are parsed. A
        # well-formed line is buckets "Nms=N" separated by blanks, one "ms=" in each.
        tokens = value.split()
        text = "".join(tokens)
        if not tokens or text.count("ms=") != len(tokens) or text.translate(_NOT_BUCKET):
            self.malformed += 1
            return
        filled: list[tuple[int, int]] = []
        for token in set(tokens).difference(_EMPTY_BUCKETS):  # set algebra runs in C
            bucket, _, frames = token.partition("ms=")
            if not (0 < len(bucket) <= 12 and 0 < len(frames) <= 19):
                self.malformed += 1
                return
            if not (bucket.isdigit() and frames.isdigit()):  # ASCII: checked above
                self.malformed += 1
                return
            count = int(frames)
            if 0 < count < 2**63:
                filled.append((int(bucket), count))
        index = self._record(f"{kind}_histogram", section, scope, line)
        filled.sort()  # set order varies from run to run; the table's does not
        buckets = self.buckets
        buckets["summary"].extend([index] * len(filled))
        buckets["kind"].extend([_KINDS.index(kind)] * len(filled))
        buckets["bucket_ms"].extend([b for b, _ in filled])
        buckets["frames"].extend([c for _, c in filled])

    def _record(self, key: str, section: Callable[[], int], scope: str, line: int) -> int:
        """The record a value goes to: a new one on ``Stats since`` or on a repeated line."""
        keys = self._keys
        if keys is None or key in keys or (key == "stats_since_ns" and keys):
            self.section.append(section())
            self.line.append(line)
            self.scope.append(self._names.setdefault(scope, scope))
            for name, column in self.values.items():
                column.append(np.nan if name in _FLOATS else _MISSING)
            keys = self._keys = set()
        keys.add(key)
        return len(self.line) - 1


def _parse(kind: str, column: str, value: str) -> list[tuple[str, int | float]] | None:
    """A summary line's values by column, or None when it is malformed."""
    if kind in ("count", "ms"):
        digits = value.removesuffix("ms") if kind == "ms" else value
        limit = 19 if kind == "count" else 12
        ok = len(digits) != len(value) or kind == "count"
        ok = ok and 0 < len(digits) <= limit and digits.isascii() and digits.isdigit()
        number = int(digits) if ok else 2**63
        return [(column, number)] if number < 2**63 else None
    if kind == "ns":
        ns = _NS.fullmatch(value)
        number = int(ns.group(1)) if ns is not None else 2**63
        return [(column, number)] if number < 2**63 else None
    janky = _JANKY.fullmatch(value)
    if janky is None or int(janky.group(1)) >= 2**63:
        return None
    pct = float(janky.group(2).replace(",", "."))
    return [(f"{column}_frames", int(janky.group(1))), (f"{column}_pct", pct)]


class _Names:
    """Codes for repeated strings (file, package, scope): categorical columns stay small
    however many dumps a capture holds."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def code(self, name: str) -> int:
        return self.codes.setdefault(name, len(self.codes))

    def column(self, parts: list[np.ndarray[Any, Any]]) -> pd.Categorical:
        codes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        return pd.Categorical.from_codes(codes, categories=pd.Index(list(self.codes), dtype=object))


def summary_tables(
    logs: Sequence[tuple[str, Sequence[tuple[str, int]], SummaryLog]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``summaries`` and ``histograms`` tables (see ``GfxinfoData``) of every file's
    log: ``(file name, its sections' (package, pid), log)``. Repeated strings become
    categories and the logs' buffers are read in place (a long capture has thousands of
    records and hundreds of thousands of buckets)."""
    files, packages, scopes = _Names(), _Names(), _Names()
    rec: dict[str, list[np.ndarray[Any, Any]]] = {
        k: [] for k in ("file", "package", "pid", "scope", "line", *SUMMARY_COLUMNS)
    }
    hist: dict[str, list[np.ndarray[Any, Any]]] = {
        k: [] for k in ("file", "package", "pid", "scope", "summary", "kind", "bucket_ms", "frames")
    }
    offset = 0
    for name, sections, log in logs:
        section = _ints(log.section)
        package = np.array([packages.code(p) for p, _ in sections], dtype=np.int32)[section]
        pid = np.array([i for _, i in sections], dtype=np.int64)[section]
        scope = np.array([scopes.code(x) for x in log.scope], dtype=np.int32)
        file = np.full(len(log), files.code(name), dtype=np.int32)
        records = _ints(log.buckets["summary"])
        for key, values in (("file", file), ("package", package), ("pid", pid), ("scope", scope)):
            rec[key].append(values)
            hist[key].append(values[records])
        rec["line"].append(_ints(log.line))
        for column in SUMMARY_COLUMNS:
            raw = log.values[column]
            rec[column].append(_floats(raw) if column in _FLOATS else _ints(raw))
        hist["summary"].append(records + offset)
        for key in ("kind", "bucket_ms", "frames"):
            hist[key].append(_ints(log.buckets[key]))
        offset += len(log)
    kinds = pd.Categorical.from_codes(
        _joined(hist.pop("kind")).astype(np.int8), categories=pd.Index(_KINDS, dtype=object)
    )
    histograms = pd.DataFrame(
        {
            "file": files.column(hist.pop("file")),
            "package": packages.column(hist.pop("package")),
            "pid": _joined(hist.pop("pid")),
            "scope": scopes.column(hist.pop("scope")),
            "summary": _joined(hist.pop("summary")),
            "kind": kinds,
            "bucket_ms": _joined(hist.pop("bucket_ms")),
            "frames": _joined(hist.pop("frames")),
        }
    )
    summaries = pd.DataFrame(
        {
            "file": files.column(rec["file"]),
            "package": packages.column(rec["package"]),
            "pid": _joined(rec["pid"]),
            "scope": scopes.column(rec["scope"]),
            "line": _joined(rec["line"]),
            **{c: _summary_column(c, rec[c]) for c in SUMMARY_COLUMNS},
        }
    )
    return summaries, histograms


def _summary_column(column: str, parts: list[np.ndarray[Any, Any]]) -> Any:
    if column in _FLOATS:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)
    ints = _joined(parts)
    return pd.arrays.IntegerArray(ints, ints == _MISSING)


def _joined(parts: list[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _ints(values: array[int]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The log's buffer as an array, in place (read-only; it keeps the buffer alive)."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(values, dtype=np.int64)


def _floats(values: array[float]) -> np.ndarray[Any, np.dtype[np.float64]]:
    if not len(values):
        return np.zeros(0, dtype=np.float64)
    return np.frombuffer(values, dtype=np.float64)
