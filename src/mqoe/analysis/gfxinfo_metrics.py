"""SR/FF, buffer-aware SR/FF, process frames and gaps from what
:mod:`mqoe.analysis.gfxinfo_read` kept (the definitions are in :mod:`mqoe.analysis.gfxinfo`).

Everything runs on the compact store's columns with a few sorts; per row the report keeps
one byte of flags (:data:`NORMAL` …), and the per-frame table with every column is rebuilt
on demand (:meth:`GfxinfoReport.iter_frames`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.gfxinfo_format import (
    DEFAULT_FRAME_INTERVAL_NS,
    PERCENTILES,
    STAGES,
    SUMMARY_COLUMNS,
)
from mqoe.analysis.gfxinfo_read import GfxinfoData
from mqoe.analysis.gfxinfo_store import (
    DEQUEUE_HIDES,
    DEQUEUE_JUDGED,
    DUPLICATE,
    FLAGGED,
    VALID,
    FrameStore,
    release_memory,
)
from mqoe.metrics.jank import frozen_mask, slow_mask

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Bits = npt.NDArray[np.uint8]
Codes = npt.NDArray[np.int32]  # group codes (int32: half the memory of int64 per row)
Key = tuple[Any, ...]

# GfxinfoReport.bits, per store row
NORMAL = 1  # Flags == 0, valid times, not a duplicate
SR = 2  # normal and slow (16.67 ms < duration <= 700 ms)
FF = 4  # normal and frozen (duration > 700 ms)
HIDDEN = 8  # a ready buffer hid it (buffer-aware rule)
BY_PRESENT = 16  # judged by the present rule
BY_DEQUEUE = 32  # judged by the dequeue rule
PROCESS_FRAME = 64  # the frame that stands for its vsync in the process's count
_RULES = pd.Index(["none", "present", "dequeue"], dtype=object)
_CHUNK_ROWS = 1 << 16


# -- the report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class GfxinfoReport:
    """SR/FF and clustering of what :func:`read_gfxinfo` read (see the module docstring).

    * ``packages`` — one row per process (file, package, pid): its frames (one per vsync,
      however many windows drew it), SR/FF naive and buffer-aware, percentiles, the
      dump's own process summary (``reported_*``) and the gap summary. Per-frame figures
      are NA (unknown) for a process whose dump had no framestats rows.
    * ``windows`` — one row per window: the same figures over the window's own frames,
      beside the window's own summary (``reported_*``; Android 12+).
    * ``gaps`` — one row per gap between slow frames (``kind`` sr_to_sr | ff_to_sr).
    * ``gap_summary`` — per process and kind, and over all processes (``package`` = ``*``).
    * ``bits`` — per row of ``data.store``: :data:`NORMAL`, :data:`SR`, … flags.
    * :attr:`frames` / :meth:`iter_frames` — the per-frame table with ``duration_ns``,
      ``normal``, the stages, ``sr``, ``ff``, ``aware_rule``, ``hidden``, ``sr_aware``,
      ``ff_aware``, ``process_frame``.
    """

    data: GfxinfoData
    bits: Bits
    packages: pd.DataFrame
    windows: pd.DataFrame
    gaps: pd.DataFrame
    gap_summary: pd.DataFrame
    warnings: dict[str, Any]

    @property
    def summaries(self) -> pd.DataFrame:
        return self.data.summaries

    @property
    def histograms(self) -> pd.DataFrame:
        return self.data.histograms

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table but the per-frame one (write that from :meth:`iter_frames`)."""
        return {
            "packages": self.packages,
            "windows": self.windows,
            "gaps": self.gaps,
            "gap_summary": self.gap_summary,
            "summaries": self.summaries,
            "histograms": self.histograms,
        }

    @property
    def process_frames(self) -> int:
        """How many process frames there are (0: no per-frame data at all)."""
        return int(np.count_nonzero(self.bits & PROCESS_FRAME))

    def iter_frames(self, chunk_rows: int = _CHUNK_ROWS) -> Iterator[pd.DataFrame]:
        """The per-frame table with its metrics, in pieces (memory stays bounded)."""
        for index, table in self.data.frame_chunks(chunk_rows):
            yield _with_metrics(table, self.bits[index])

    @cached_property
    def frames(self) -> pd.DataFrame:
        """The whole per-frame table (its memory grows with the input)."""
        tables = list(self.iter_frames())
        if not tables:
            return _with_metrics(self.data.frames, np.zeros(0, dtype=np.uint8))
        return pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]

    def process_durations(self) -> dict[Key, IntArray]:
        """(file, package, pid) → the durations (ns) of the process's frames, in
        IntendedVsync order: what the frame duration CDF is drawn from."""
        store = self.data.store
        chosen = np.flatnonzero(self.bits & PROCESS_FRAME)
        codes, keys = _codes(self.data.runs, ["file", "package", "pid"])
        group = codes[store.run[chosen]]
        order = np.argsort(group, kind="stable")
        chosen, group = chosen[order], group[order]
        bounds = np.searchsorted(group, np.arange(len(keys) + 1))
        duration = store.completed[chosen] - store.intended[chosen]
        return {
            key: duration[bounds[g] : bounds[g + 1]]
            for g, key in enumerate(keys)
            if bounds[g + 1] > bounds[g]
        }

    def reported_summaries(self) -> set[int]:
        """Rows of ``summaries`` that ``packages`` and ``windows`` report (each scope's
        latest record)."""
        rows: set[int] = set()
        for table in (self.packages, self.windows):
            rows.update(int(x) for x in table["reported_summary"].dropna())
        return rows

    def to_json(self) -> dict[str, Any]:
        """``{"packages", "windows", "gaps", "histograms", "warnings"}``; NaN/NA → null.
        ``histograms`` lists the non-empty buckets (ms → frames) of the summaries that
        ``packages`` and ``windows`` report (each scope's last one)."""
        overall = self.gap_summary[self.gap_summary["package"] == "*"]
        return {
            "packages": _records(self.packages),
            "windows": _records(self.windows),
            "gaps": _records(overall.drop(columns=["file", "package", "pid"])),
            "histograms": _histogram_records(self.histograms, self.reported_summaries()),
            "warnings": self.warnings,
        }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    columns = {str(name): _column_values(frame[name]) for name in frame.columns}
    return [{name: values[i] for name, values in columns.items()} for i in range(len(frame))]


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value


def _column_values(column: pd.Series[Any]) -> list[Any]:
    """A column as plain JSON values: NA and NaN become None."""
    array = column.array
    if isinstance(array, pd.arrays.IntegerArray):
        values = array.to_numpy(dtype=np.int64, na_value=0).tolist()
        missing = np.asarray(array.isna()).tolist()
        return [None if m else v for v, m in zip(values, missing, strict=True)]
    if isinstance(column.dtype, pd.CategoricalDtype) or column.dtype == object:
        return [_plain(v) for v in _labels(column).tolist()]
    if column.dtype.kind == "f":
        return [v if math.isfinite(v) else None for v in column.to_numpy().tolist()]
    if column.dtype.kind in "biu":
        return list(column.to_numpy().tolist())
    return [_plain(v) for v in column.tolist()]


def _histogram_records(histograms: pd.DataFrame, summaries: set[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    chosen = histograms[histograms["summary"].isin(summaries) & (histograms["frames"] > 0)]
    if not len(chosen):
        return out
    keys = ["file", "package", "pid", "scope", "summary", "kind"]
    for key, part in chosen.astype({"file": object, "package": object, "scope": object,
                                   "kind": object}).groupby(keys, sort=False):  # fmt: skip
        record = {k: _plain(v) for k, v in zip(keys, key, strict=True)}
        record["buckets"] = {
            str(int(b)): int(f) for b, f in zip(part["bucket_ms"], part["frames"], strict=True)
        }
        out.append(record)
    return out


# -- per-frame metrics -------------------------------------------------------------------------


def _set(table: pd.DataFrame, name: str) -> tuple[IntArray, BoolArray]:
    """A timestamp column's values (NA as 0) and where it is known and set (> 0)."""
    if name not in table:
        return np.zeros(len(table), np.int64), np.zeros(len(table), np.bool_)
    column = table[name]
    array = column.array
    if isinstance(array, pd.arrays.IntegerArray):
        values = np.asarray(array.to_numpy(dtype=np.int64, na_value=0))
        known = ~np.asarray(array.isna(), dtype=np.bool_)
    else:
        values = column.to_numpy(dtype=np.int64)
        known = np.ones(len(column), np.bool_)
    return values, known & (values > 0)


def _nullable(values: IntArray, known: BoolArray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(np.where(known, values, 0).astype(np.int64), ~known)


def _with_metrics(table: pd.DataFrame, bits: Bits) -> pd.DataFrame:
    frames = table.copy()
    start, start_set = _set(frames, "intended_vsync_ns")
    end, end_set = _set(frames, "frame_completed_ns")
    both = start_set & end_set  # two positive int64s: their difference cannot overflow
    frames["duration_ns"] = _nullable(np.where(both, end - start, 0), both)
    frames["normal"] = (bits & NORMAL) != 0
    vsync, vsync_set = _set(frames, "vsync_ns")
    frames["missed_vsync_ns"] = _nullable(vsync - start, vsync_set & start_set)
    for stage, (a, b) in STAGES.items():
        t0, ok0 = _set(frames, a)
        t1, ok1 = _set(frames, b)
        frames[stage] = _nullable(t1 - t0, ok0 & ok1)
    frames["sr"] = (bits & SR) != 0
    frames["ff"] = (bits & FF) != 0
    rule = np.where(bits & BY_PRESENT, 1, np.where(bits & BY_DEQUEUE, 2, 0)).astype(np.int8)
    frames["aware_rule"] = pd.Categorical.from_codes(rule, categories=_RULES)
    hidden = (bits & HIDDEN) != 0
    frames["hidden"] = hidden
    frames["sr_aware"] = frames["sr"].to_numpy() & ~hidden
    frames["ff_aware"] = frames["ff"].to_numpy() & ~hidden
    frames["process_frame"] = (bits & PROCESS_FRAME) != 0
    return frames


# -- analysis ----------------------------------------------------------------------------------


def analyze(data: GfxinfoData) -> GfxinfoReport:
    """Per-frame flags, per-window and per-process SR/FF (naive and buffer-aware), the
    process frames (one per vsync) and the gaps between slow frames."""
    store = data.store
    window_run, window_keys = _codes(data.runs, ["file", "package", "pid", "window"])
    process_run, process_keys = _codes(data.runs, ["file", "package", "pid"])
    bits = _frame_bits(store, window_run)
    release_memory()  # each step's temporaries, before the next step's (see release_memory)
    chosen, shared = _process_frames(store, bits, window_run, process_run, len(process_keys))
    release_memory()
    gaps = _gaps(store, bits, chosen, process_run, process_keys)
    del chosen
    release_memory()
    gap_summary = _gap_summary(gaps)
    windows = _window_table(data, bits, window_run, window_keys)
    release_memory()
    packages = _package_table(
        data, bits, process_run, process_keys, window_run, shared, gap_summary
    )
    warnings = data.warnings.as_dict()
    b = store.bits
    invalid = ((b & (DUPLICATE | FLAGGED | VALID)) == 0).sum()
    warnings["invalid_timestamp_rows"] = int(invalid)
    release_memory()
    return GfxinfoReport(data, bits, packages, windows, gaps, gap_summary, warnings)


def _codes(runs: pd.DataFrame, keys: list[str]) -> tuple[Codes, list[Key]]:
    """Per run, the code of its ``keys`` values; and the distinct values in first-seen order."""
    columns = [
        runs[k].to_numpy(dtype=np.int64).tolist() if k == "pid" else _labels(runs[k]).tolist()
        for k in keys
    ]
    mapping: dict[Key, int] = {}
    codes = np.array(
        [mapping.setdefault(key, len(mapping)) for key in zip(*columns, strict=True)],
        dtype=np.int32,
    )
    return codes, list(mapping)


def _order(group: Codes, time: IntArray) -> IntArray | None:
    """Indices sorting rows by group then time, ties in reading order; None when they
    are in that order already (a capture usually is: nothing is allocated then)."""
    if len(group) < 2:
        return None
    in_groups = bool((group[1:] >= group[:-1]).all())
    if in_groups and not ((group[1:] == group[:-1]) & (time[1:] < time[:-1])).any():
        return None
    order = np.argsort(group, kind="stable")
    g, t = group[order], time[order]
    if ((g[1:] == g[:-1]) & (t[1:] < t[:-1])).any():
        return np.lexsort((time, group))
    return order


_STEP = 1 << 18  # rows per step of the per-row rules: their temporaries stay bounded


def _frame_bits(store: FrameStore, window_run: Codes) -> Bits:
    """Normal, SR, FF and the buffer-aware rules, per row (module docstring)."""
    b = store.bits
    n = len(store)
    out = np.zeros(n, np.uint8)
    for a in range(0, n, _STEP):
        z = slice(a, a + _STEP)
        normal = ((b[z] & (DUPLICATE | FLAGGED)) == 0) & ((b[z] & VALID) != 0)
        duration = np.where(normal, store.completed[z] - np.where(normal, store.intended[z], 0), 0)
        out[z] = normal.astype(np.uint8) * np.uint8(NORMAL)
        out[z] |= (normal & slow_mask(duration)).astype(np.uint8) * np.uint8(SR)
        out[z] |= (normal & frozen_mask(duration)).astype(np.uint8) * np.uint8(FF)
    _present_rule(store, window_run, out)
    normal = (out & NORMAL) != 0
    judged = normal & ((out & BY_PRESENT) == 0) & ((b & DEQUEUE_JUDGED) != 0)
    out |= judged.astype(np.uint8) * np.uint8(BY_DEQUEUE)
    hides = judged & ((b & DEQUEUE_HIDES) != 0)
    out |= hides.astype(np.uint8) * np.uint8(HIDDEN)
    return out


def _present_rule(store: FrameStore, window_run: Codes, out: Bits) -> None:
    """Mark the normal frames the present rule judges (BY_PRESENT) and hides (HIDDEN)."""
    shown_mask = ((store.bits & DUPLICATE) == 0) & (store.present > 0)
    count = int(np.count_nonzero(shown_mask))
    if count < 2:
        return
    # the presented rows in (window, IntendedVsync) order: `shown` holds their row
    # indices, or is None when that is every row in reading order (nothing allocated)
    every = count == len(store)
    rows = None if every else np.flatnonzero(shown_mask)
    del shown_mask
    group = window_run[store.run] if rows is None else window_run[store.run[rows]]
    order = _order(group, store.intended if rows is None else store.intended[rows])
    shown = rows if order is None else (order if rows is None else rows[order])
    if order is not None:
        group = group[order]
    del order, rows
    for a in range(1, count, _STEP):  # each presented row against the one before it
        z = slice(a, min(count, a + _STEP))
        before = slice(a - 1, z.stop - 1)
        here = np.arange(z.start, z.stop) if shown is None else shown[z]
        prior = np.arange(before.start, before.stop) if shown is None else shown[before]
        p, q = store.present[here], store.present[prior]
        after = (group[z] == group[before]) & (p > q) & ((out[here] & NORMAL) != 0)
        current = here[after]
        interval = store.interval[current].astype(np.int64)
        interval = np.where(interval > 0, interval, DEFAULT_FRAME_INTERVAL_NS)
        out[current] |= np.uint8(BY_PRESENT)
        hidden = (p - q)[after] <= interval + interval // 2
        out[current[hidden]] |= np.uint8(HIDDEN)


def _process_frames(
    store: FrameStore, bits: Bits, window_run: Codes, process_run: Codes, n_processes: int
) -> tuple[IntArray, IntArray]:
    """Mark each process's frames: one per (process, IntendedVsync), the normal frame that
    completed last (the first such in reading order on a tie). Returns the chosen rows in
    (process, IntendedVsync) order and, per process, the vsyncs two or more windows drew."""
    rows = np.flatnonzero(bits & NORMAL)
    shared = np.zeros(n_processes, np.int64)
    if not len(rows):
        return rows.astype(np.int64), shared
    process = process_run[store.run[rows]]
    order = _order(process, store.intended[rows])
    if order is not None:
        rows, process = rows[order], process[order]
    del order
    chosen: list[IntArray] = []
    n, a = len(rows), 0
    while a < n:  # in steps that end where a (process, vsync) ends
        b = min(n, a + _STEP)
        while b < n and process[b] == process[b - 1]:
            if store.intended[rows[b]] != store.intended[rows[b - 1]]:
                break
            b += 1
        part, group = rows[a:b], process[a:b]
        start, done = store.intended[part], store.completed[part]
        window = window_run[store.run[part]]
        new = np.ones(len(part), np.bool_)  # the first frame of a (process, vsync)
        new[1:] = (group[1:] != group[:-1]) | (start[1:] != start[:-1])
        firsts = np.flatnonzero(new)
        vsync = np.cumsum(new, dtype=np.int64) - 1
        latest = np.flatnonzero(done == np.maximum.reduceat(done, firsts)[vsync])
        first = np.ones(len(latest), np.bool_)
        first[1:] = vsync[latest[1:]] != vsync[latest[:-1]]
        chosen.append(part[latest[first]])
        several = np.minimum.reduceat(window, firsts) != np.maximum.reduceat(window, firsts)
        shared += np.bincount(group[firsts][several], minlength=n_processes)
        a = b
    picked = np.concatenate(chosen)
    bits[picked] |= np.uint8(PROCESS_FRAME)
    return picked, shared


_GAP_COLUMNS = [
    "file", "package", "pid", "kind", "from_line", "to_line", "gap_frames", "gap_ms",
    "gap_after_end_ms",
]  # fmt: skip
_GAP_DTYPES: dict[str, Any] = {
    "pid": np.int64, "from_line": np.int64, "to_line": np.int64, "gap_frames": np.int64,
    "gap_ms": np.float64, "gap_after_end_ms": np.float64,
}  # fmt: skip


def _gaps(
    store: FrameStore,
    bits: Bits,
    chosen: IntArray,
    process_run: Codes,
    process_keys: list[Key],
) -> pd.DataFrame:
    """SR→SR and FF→SR gaps over each process's frames (module docstring)."""
    if not len(chosen):
        empty = {c: pd.Series([], dtype=_GAP_DTYPES.get(c, object)) for c in _GAP_COLUMNS}
        return pd.DataFrame(empty)
    group = process_run[store.run[chosen]]  # chosen is in (process, IntendedVsync) order
    starts = np.searchsorted(group, np.arange(len(process_keys)))  # each process's first
    flags = bits[chosen]
    s = np.flatnonzero(flags & SR)
    f = np.flatnonzero(flags & FF)
    del flags
    same = group[s[1:]] == group[s[:-1]]
    pieces = [("sr_to_sr", s[:-1][same], s[1:][same])]
    j = np.searchsorted(s, f, side="right")
    ok = j < len(s)
    ok[ok] = group[s[j[ok]]] == group[f[ok]]
    pieces.append(("ff_to_sr", f[ok], s[j[ok]]))
    # file and package as categories: a long capture has many gaps, few processes
    file_codes, files = pd.factorize(pd.Index([k[0] for k in process_keys], dtype=object))
    package_codes, packages = pd.factorize(pd.Index([k[1] for k in process_keys], dtype=object))
    pids = np.array([k[2] for k in process_keys], dtype=np.int64)
    kinds = pd.Index(["sr_to_sr", "ff_to_sr"], dtype=object)
    parts = []
    for kind, a, b in pieces:
        who = group[a]
        rank_a, rank_b = a - starts[who], b - starts[who]  # 1 = adjacent frames
        ra, rb = chosen[a], chosen[b]
        start_a, start_b = store.intended[ra], store.intended[rb]
        parts.append(
            pd.DataFrame(
                {
                    "file": pd.Categorical.from_codes(file_codes[who], categories=files),
                    "package": pd.Categorical.from_codes(package_codes[who], categories=packages),
                    "pid": pids[who],
                    "kind": pd.Categorical.from_codes(
                        np.full(len(a), kinds.get_loc(kind)), categories=kinds
                    ),
                    "from_line": store.line[ra].astype(np.int64),
                    "to_line": store.line[rb].astype(np.int64),
                    "gap_frames": (rank_b - rank_a).astype(np.int64),
                    "gap_ms": (start_b - start_a) / 1e6,
                    "gap_after_end_ms": (start_b - store.completed[ra]) / 1e6,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)[_GAP_COLUMNS]


_GAP_PCTS = (25, 50, 75, 90)


def _gap_stats(gaps: pd.DataFrame) -> dict[str, float]:
    frames = gaps["gap_frames"].to_numpy(np.float64)
    ms = gaps["gap_ms"].to_numpy(np.float64)
    out: dict[str, float] = {"n": float(len(gaps))}
    for p in _GAP_PCTS:
        out[f"frames_p{p}"] = float(np.percentile(frames, p)) if len(frames) else math.nan
    for p in _GAP_PCTS:
        out[f"ms_p{p}"] = float(np.percentile(ms, p)) if len(ms) else math.nan
    out["share_adjacent"] = float(np.mean(frames == 1)) if len(frames) else math.nan
    return out


def _gap_summary(gaps: pd.DataFrame) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for kind in ("sr_to_sr", "ff_to_sr"):
        of_kind = gaps[gaps["kind"] == kind]
        by_process = of_kind.groupby(["file", "package", "pid"], sort=False, observed=True)
        for (file, package, pid), part in by_process:
            rows.append({"file": file, "package": package, "pid": pid, "kind": kind,
                         **_gap_stats(part)})  # fmt: skip
        rows.append({"file": "*", "package": "*", "pid": -1, "kind": kind, **_gap_stats(of_kind)})
    summary = pd.DataFrame(rows)
    summary["n"] = summary["n"].astype("int64")
    return summary


# -- per-window and per-process tables ---------------------------------------------------------


def _counts(group: Codes | None, n: int, size: int, mask: BoolArray | None = None) -> IntArray:
    """Rows per group (``mask``'s rows only); ``group`` None: one group of ``size`` rows."""
    if group is None:
        return np.array([size if mask is None else np.count_nonzero(mask)], dtype=np.int64)
    picked = group if mask is None else group[mask]
    return np.bincount(picked, minlength=n).astype(np.int64)[:n]


def _frame_figures(
    group: Codes | None, flags: Bits, duration: IntArray, n: int
) -> dict[str, npt.NDArray[Any]]:
    """Per group: frame counts, SR/FF naive and buffer-aware, rules, percentiles (ms)."""
    sr, ff = (flags & SR) != 0, (flags & FF) != 0
    hidden = (flags & HIDDEN) != 0
    present, dequeue = (flags & BY_PRESENT) != 0, (flags & BY_DEQUEUE) != 0
    judged = present | dequeue
    size = len(flags)
    out: dict[str, npt.NDArray[Any]] = {
        "frames": _counts(group, n, size),
        "sr": _counts(group, n, size, sr),
        "ff": _counts(group, n, size, ff),
        "sr_aware": _counts(group, n, size, sr & ~hidden),
        "ff_aware": _counts(group, n, size, ff & ~hidden),
        "aware_by_present": _counts(group, n, size, present),
        "aware_by_dequeue": _counts(group, n, size, dequeue),
        "aware_unjudged_slow": _counts(group, n, size, (sr | ff) & ~judged),
    }
    quantiles = np.full((n, len(PERCENTILES)), np.nan)
    if group is None:
        if size:
            quantiles[0] = np.percentile(duration, PERCENTILES) / 1e6
    elif len(group):
        ordered = bool((group[1:] >= group[:-1]).all())
        order = None if ordered else np.argsort(group, kind="stable")
        bounds = np.searchsorted(group if order is None else group[order], np.arange(n + 1))
        for g in range(n):  # np.percentile partitions each group's part: no full sort
            part = (
                duration[bounds[g] : bounds[g + 1]]
                if order is None
                else duration[order[bounds[g] : bounds[g + 1]]]
            )
            if len(part):
                quantiles[g] = np.percentile(part, PERCENTILES) / 1e6
    for j, p in enumerate(PERCENTILES):
        out[f"frame_p{p}_ms"] = quantiles[:, j]
    return out


_FIGURES = [
    "frames", "sr", "ff", "sr_pct", "ff_pct", "sr_aware", "ff_aware", "sr_aware_pct",
    "ff_aware_pct", "aware_rule", "aware_by_present", "aware_by_dequeue", "aware_unjudged_slow",
    *(f"frame_p{p}_ms" for p in PERCENTILES),
]  # fmt: skip
_ROW_COUNTS = ["rows", "flagged_rows", "invalid_rows"]


def _figure_rows(
    figures: dict[str, npt.NDArray[Any]], rows: dict[str, IntArray], known: BoolArray
) -> pd.DataFrame:
    """The figures as table columns: NA where the group had no framestats (``known``)."""
    frames = figures["frames"]
    table: dict[str, Any] = {}
    for name in _ROW_COUNTS:
        table[name] = _nullable(rows[name], known)
    judged = (figures["aware_by_present"] + figures["aware_by_dequeue"]) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        for name in ("sr", "ff", "sr_aware", "ff_aware"):
            counted = known if name in ("sr", "ff") else known & judged
            table[name] = _nullable(figures[name], counted)
            pct = np.where(counted & (frames > 0), 100.0 * figures[name] / frames, np.nan)
            table[f"{name}_pct"] = pct
    table["frames"] = _nullable(frames, known)
    rules = []
    for p, d, k in zip(
        figures["aware_by_present"], figures["aware_by_dequeue"], known, strict=True
    ):
        used = [name for name, count in (("dequeue", d), ("present", p)) if count]
        rules.append("+".join(used) if used and k else None)
    table["aware_rule"] = pd.array(rules, dtype=object)
    for name in ("aware_by_present", "aware_by_dequeue", "aware_unjudged_slow"):
        table[name] = _nullable(figures[name], known)
    for p in PERCENTILES:
        table[f"frame_p{p}_ms"] = figures[f"frame_p{p}_ms"]
    return pd.DataFrame(table)[[*_ROW_COUNTS, *_FIGURES]]


def _row_counts(store: FrameStore, group_run: Codes, n: int) -> dict[str, IntArray]:
    b = store.bits
    keep = (b & DUPLICATE) == 0
    flagged = keep & ((b & FLAGGED) != 0)
    invalid = keep & ((b & (FLAGGED | VALID)) == 0)
    if n == 1:  # one group: no per-row group codes needed
        counts = [np.count_nonzero(m) for m in (keep, flagged, invalid)]
        return {k: np.array([c], np.int64) for k, c in zip(_ROW_COUNTS, counts, strict=True)}
    group = group_run[store.run] if len(store) else np.zeros(0, np.int32)
    return {
        "rows": _counts(group, n, len(group), keep),
        "flagged_rows": _counts(group, n, len(group), flagged),
        "invalid_rows": _counts(group, n, len(group), invalid),
    }


def _labels(column: pd.Series[Any]) -> npt.NDArray[Any]:
    """A column's values as a plain object array (categories decoded without pandas' string
    machinery, which is slow for the thousands of records of a long capture)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = np.asarray(column.cat.categories, dtype=object)
        return categories[column.cat.codes.to_numpy()]
    return np.asarray(column.to_numpy(dtype=object), dtype=object)


def _reported(summaries: pd.DataFrame, keys: Sequence[Key], window: bool) -> pd.DataFrame:
    """Per key, the last summary record of its scope (the process's, or the window's):
    ``reported_*`` columns, how many records the scope had, and the last one's row in
    ``summaries`` (``reported_summary``)."""
    scope = _labels(summaries["scope"])
    chosen = np.flatnonzero((scope != "process") if window else (scope == "process"))
    columns: list[list[Any]] = [
        [str(x) for x in _labels(summaries["file"])],
        [str(x) for x in _labels(summaries["package"])],
        summaries["pid"].to_numpy(dtype=np.int64).tolist(),
    ]
    if window:
        columns.append([str(x) for x in scope])
    found: dict[Key, int] = {}  # key → row of its last record
    counts: dict[Key, int] = {}
    for row in chosen.tolist():
        key = tuple(c[row] for c in columns)
        found[key] = row
        counts[key] = counts.get(key, 0) + 1
    at = np.array([found.get(tuple(k), -1) for k in keys], dtype=np.int64)
    has = at >= 0
    out: dict[str, Any] = {}
    for column in SUMMARY_COLUMNS:
        name = f"reported_{column}"
        if column.endswith("_pct"):
            values = np.full(len(keys), np.nan)
            values[has] = summaries[column].to_numpy(dtype=np.float64)[at[has]]
            out[name] = values
        else:
            ints, known = _int_values(summaries[column])
            full = np.zeros(len(keys), dtype=np.int64)
            mask = np.zeros(len(keys), dtype=np.bool_)
            full[has], mask[has] = ints[at[has]], known[at[has]]
            out[name] = _nullable(full, mask)
    out["reported_records"] = np.array([counts.get(tuple(k), 0) for k in keys], dtype=np.int64)
    out["reported_summary"] = _nullable(np.where(has, at, 0), has)
    return pd.DataFrame(out, index=range(len(keys)))


def _int_values(column: pd.Series[Any]) -> tuple[IntArray, BoolArray]:
    """An Int64 column's values (NA as 0) and where they are known."""
    array = column.array
    if isinstance(array, pd.arrays.IntegerArray):
        return (
            np.asarray(array.to_numpy(dtype=np.int64, na_value=0)),
            ~np.asarray(array.isna(), dtype=np.bool_),
        )
    return column.to_numpy(dtype=np.int64), np.ones(len(column), np.bool_)


def _normal_groups(
    store: FrameStore, bits: Bits, group_run: Codes, mask: int, n: int
) -> tuple[Codes | None, Bits, IntArray]:
    """The group (None when ``n`` is 1), flags and duration (ns) of the rows with
    ``mask`` set (boolean selection: no index array)."""
    rows = (bits & mask) != 0
    duration = store.completed[rows]
    duration -= store.intended[rows]
    group = None if n == 1 else group_run[store.run[rows]]
    return group, bits[rows], duration


def _window_table(
    data: GfxinfoData, bits: Bits, window_run: Codes, window_keys: list[Key]
) -> pd.DataFrame:
    store = data.store
    summaries = data.summaries
    extra = summaries[summaries["scope"] != "process"]
    keys: dict[Key, None] = dict.fromkeys(
        (str(f), str(p), int(i), str(w)) for f, p, i, w in window_keys
    )
    for f, p, i, w in zip(
        extra["file"], extra["package"], extra["pid"], extra["scope"], strict=True
    ):
        keys.setdefault((str(f), str(p), int(i), str(w)))
    ordered = list(keys)
    n_known = len(window_keys)
    group, flags, duration = _normal_groups(store, bits, window_run, NORMAL, len(ordered))
    figures = _frame_figures(group, flags, duration, len(ordered))
    del group, flags, duration
    counts = _row_counts(store, window_run, len(ordered))
    known = np.arange(len(ordered)) < n_known  # windows with rows (the rest: summaries only)
    names = pd.DataFrame(ordered, columns=["file", "package", "pid", "window"]).astype(
        {"file": object, "package": object, "pid": np.int64, "window": object}
    )
    table = pd.concat(
        [names, _figure_rows(figures, counts, known), _reported(summaries, ordered, True)], axis=1
    )
    return table[["package", "pid", "window", "file", *table.columns[4:]]]


def _package_table(
    data: GfxinfoData,
    bits: Bits,
    process_run: Codes,
    process_keys: list[Key],
    window_run: Codes,
    shared: IntArray,
    gap_summary: pd.DataFrame,
) -> pd.DataFrame:
    store = data.store
    keys: dict[Key, None] = {}
    framestats: dict[Key, bool] = {}
    sections = data.sections
    for f, p, i, stats in zip(sections["file"], sections["package"], sections["pid"],
                              sections["framestats"], strict=True):  # fmt: skip
        key = (str(f), str(p), int(i))
        keys.setdefault(key)
        framestats[key] = framestats.get(key, False) or bool(stats)
    for key in process_keys:
        keys.setdefault((str(key[0]), str(key[1]), int(key[2])))
    ordered = list(keys)
    position = {key: j for j, key in enumerate(ordered)}
    remap = np.array([position[(str(k[0]), str(k[1]), int(k[2]))] for k in process_keys], np.int32)
    run_group: Codes = remap[process_run] if len(process_run) else process_run
    n = len(ordered)
    group, flags, duration = _normal_groups(store, bits, run_group, PROCESS_FRAME, n)
    figures = _frame_figures(group, flags, duration, n)
    del group, flags, duration
    counts = _row_counts(store, run_group, n)
    with_rows = {(str(k[0]), str(k[1]), int(k[2])) for k in process_keys}
    known = np.array([framestats.get(k, False) or k in with_rows for k in ordered], np.bool_)
    windows_of = np.zeros(n, np.int64)
    window_frames = np.zeros(n, np.int64)
    if len(window_run):
        pairs = pd.DataFrame({"p": run_group, "w": window_run}).drop_duplicates()
        windows_of = np.bincount(pairs["p"].to_numpy(), minlength=n).astype(np.int64)
        normal = (bits & NORMAL) != 0
        group_of = None if n == 1 else run_group[store.run[normal]]
        window_frames = _counts(group_of, n, int(np.count_nonzero(normal)))
    shared_all = np.zeros(n, np.int64)
    shared_all[remap] = shared
    head = pd.DataFrame(ordered, columns=["file", "package", "pid"]).astype(
        {"file": object, "package": object, "pid": np.int64}
    )
    head["framestats"] = known
    head["windows"] = _nullable(windows_of, known)
    head["window_frames"] = _nullable(window_frames, known)
    head["shared_vsyncs"] = _nullable(shared_all, known)
    table = pd.concat(
        [head, _figure_rows(figures, counts, known), _reported(data.summaries, ordered, False),
         _gap_columns(ordered, gap_summary)],
        axis=1,
    )  # fmt: skip
    return table[["package", "pid", "file", *table.columns[3:]]]


def _gap_columns(keys: list[Key], gap_summary: pd.DataFrame) -> pd.DataFrame:
    stats = {
        (str(r["file"]), str(r["package"]), int(r["pid"]), str(r["kind"])): r
        for r in gap_summary.to_dict(orient="records")
    }
    rows = []
    for file, package, pid in keys:
        row: dict[str, Any] = {}
        for kind, short in (("sr_to_sr", "sr_sr"), ("ff_to_sr", "ff_sr")):
            found = stats.get((file, package, pid, kind), {})
            row[f"gap_{short}_n"] = int(found.get("n", 0))
            for stat in ("frames_p50", "frames_p90", "ms_p50", "ms_p90"):
                row[f"gap_{short}_{stat}"] = found.get(stat, math.nan)
        rows.append(row)
    columns = [f"gap_{s}_{x}" for s in ("sr_sr", "ff_sr")
               for x in ("n", "frames_p50", "frames_p90", "ms_p50", "ms_p90")]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)
