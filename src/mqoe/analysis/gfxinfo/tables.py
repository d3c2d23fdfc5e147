"""Per-window and per-process tables of the gfxinfo report: frame counts, SR/FF naive
and buffer-aware, percentiles, beside the dump's own summaries (``reported_*``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.gfxinfo.data import GfxinfoData
from mqoe.analysis.gfxinfo.format import PERCENTILES, SUMMARY_COLUMNS
from mqoe.analysis.gfxinfo.metrics import (
    BY_DEQUEUE,
    BY_PRESENT,
    FF,
    HIDDEN,
    NORMAL,
    PROCESS_FRAME,
    SR,
    Bits,
    BoolArray,
    Codes,
    IntArray,
    Key,
    _nullable,
)
from mqoe.analysis.gfxinfo.store import DUPLICATE, FLAGGED, VALID, FrameStore

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
