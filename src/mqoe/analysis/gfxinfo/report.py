"""The gfxinfo report: :func:`analyze` runs the per-frame rules
(:mod:`mqoe.analysis.gfxinfo.metrics`) and the per-window and per-process tables
(:mod:`mqoe.analysis.gfxinfo.tables`) into a :class:`GfxinfoReport`, what the CLI prints
and saves."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from mqoe.analysis.gfxinfo.data import GfxinfoData
from mqoe.analysis.gfxinfo.metrics import (
    _CHUNK_ROWS,
    PROCESS_FRAME,
    Bits,
    Codes,
    IntArray,
    Key,
    _frame_bits,
    _gap_summary,
    _gaps,
    _process_frames,
    _with_metrics,
)
from mqoe.analysis.gfxinfo.store import DUPLICATE, FLAGGED, VALID, release_memory
from mqoe.analysis.gfxinfo.tables import _labels, _package_table, _window_table

# -- the report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class GfxinfoReport:
    """SR/FF and clustering of what :func:`read_gfxinfo` read (see the package docstring).

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
