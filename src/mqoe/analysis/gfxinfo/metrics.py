"""SR/FF, buffer-aware SR/FF, process frames and gaps from what
:mod:`mqoe.analysis.gfxinfo.data` kept (the definitions are in :mod:`mqoe.analysis.gfxinfo`).

Everything runs on the compact store's columns with a few sorts; per row the report keeps
one byte of flags (:data:`NORMAL` …), and the per-frame table with every column is rebuilt
on demand (:meth:`GfxinfoReport.iter_frames`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.gfxinfo.format import DEFAULT_FRAME_INTERVAL_NS, STAGES
from mqoe.analysis.gfxinfo.store import (
    DEQUEUE_HIDES,
    DEQUEUE_JUDGED,
    DUPLICATE,
    FLAGGED,
    VALID,
    FrameStore,
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
    """Normal, SR, FF and the buffer-aware rules, per row (package docstring)."""
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
    """SR→SR and FF→SR gaps over each process's frames (package docstring)."""
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
