"""Reading ``dumpsys gfxinfo`` files into a :class:`GfxinfoData` (the format is in
:mod:`mqoe.analysis.gfxinfo`).

Lines come from :mod:`mqoe.analysis.gfxinfo.read` (any encoding and line end, gzip,
one-line errors). A state machine (:mod:`mqoe.analysis.gfxinfo.parse`) sorts them into
sections, summary lines and PROFILEDATA blocks; rows are batched across blocks and
converted by :mod:`mqoe.analysis.gfxinfo.rows`. What the metrics need of each row is kept
in a :class:`~mqoe.analysis.gfxinfo.store.FrameStore` of compact columns (≈ 40 bytes a
row), summary lines in a columnar :class:`~mqoe.analysis.gfxinfo.summary.SummaryLog`; the full
per-frame table is rebuilt on demand by reading the files again
(:meth:`GfxinfoData.iter_frames`), so memory does not grow with the file beyond the
compact columns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.gfxinfo.format import COLUMNS, NO_INPUT
from mqoe.analysis.gfxinfo.parse import (
    _REQUIRED_OURS,
    _STORE_COLUMNS,
    BoolArray,
    IntArray,
    _FileParser,
    _Section,
)
from mqoe.analysis.gfxinfo.read import GfxinfoWarnings, Progress, Source
from mqoe.analysis.gfxinfo.rows import Rows
from mqoe.analysis.gfxinfo.store import (
    DUPLICATE,
    FrameStore,
    StoreBuilder,
    mark_duplicates,
    release_memory,
)
from mqoe.analysis.gfxinfo.summary import summary_tables
from mqoe.errors import InputFileError, UserError

_CHUNK_ROWS = 1 << 16  # rows per table yielded by iter_frames


# -- the parsed data ---------------------------------------------------------------------------

_META = ("file", "package", "pid", "window", "block")


@dataclass(frozen=True)
class GfxinfoData:
    """What files held, as read (no metrics yet). All tables tidy, one row per observation.

    * ``store`` — the compact per-row columns the metrics use (:class:`FrameStore`).
    * ``runs`` — one row per run of rows the store holds: ``file, package, pid, window,
      block, rows``.
    * ``sections`` — one row per (file, package, pid) seen: ``sections`` (how many) and
      ``framestats`` (whether any held a PROFILEDATA block, i.e. per-frame data).
    * ``summaries`` — one row per summary record: ``file, package, pid, scope, line`` and
      :data:`SUMMARY_COLUMNS` (NA where the line was absent).
    * ``histograms`` — ``file, package, pid, scope, summary, kind (cpu|gpu), bucket_ms,
      frames``: the HISTOGRAM lines' buckets that hold frames (AOSP prints every bucket;
      the others are 0), ``summary`` indexing ``summaries`` rows.
    * ``columns`` — the known per-frame columns any header named (:data:`COLUMNS` names).
    * :attr:`frames` / :meth:`iter_frames` — the full per-frame table, read again from
      the sources.
    """

    store: FrameStore
    runs: pd.DataFrame
    sections: pd.DataFrame
    summaries: pd.DataFrame
    histograms: pd.DataFrame
    warnings: GfxinfoWarnings
    columns: tuple[str, ...]
    sources: tuple[Source, ...] = ()
    skip_bad_lines: bool = False

    def frame_chunks(
        self, chunk_rows: int = _CHUNK_ROWS
    ) -> Iterator[tuple[IntArray, pd.DataFrame]]:
        """``(store rows, table)`` pairs: the per-frame table in pieces of about
        ``chunk_rows`` rows, read again from the sources (duplicates dropped)."""
        names = [c for c in COLUMNS.values() if c in self.columns or c in _REQUIRED_OURS]
        runs = self.runs[list(_META)].to_numpy(dtype=object)
        pending: list[tuple[IntArray, pd.DataFrame]] = []
        held = 0
        for index, table in self._raw_chunks(names, runs):
            pending.append((index, table))
            held += len(index)
            if held >= chunk_rows:
                yield _join(pending)
                pending, held = [], 0
        if pending:
            yield _join(pending)

    def _raw_chunks(
        self, names: list[str], runs: npt.NDArray[Any]
    ) -> Iterator[tuple[IntArray, pd.DataFrame]]:
        store, position, run = self.store, 0, 0
        for source in self.sources:
            parser = _FileParser(source.name, self.skip_bad_lines, GfxinfoWarnings())
            lines = source.lines(parser.w, None)
            try:
                for rows in parser.run(lines):
                    n = len(rows.lines)
                    stop = position + n
                    if (
                        run >= len(runs)
                        or stop > len(store)
                        or not np.array_equal(store.line[position:stop], rows.lines)
                    ):
                        raise InputFileError(
                            source.name, "changed while it was being read; run the command again"
                        )
                    index = np.arange(position, stop, dtype=np.int64)
                    keep = (store.bits[position:stop] & DUPLICATE) == 0
                    yield index[keep], _table(runs[run], rows, names, keep)
                    position, run = stop, run + 1
            finally:
                lines.close()

    def iter_frames(self, chunk_rows: int = _CHUNK_ROWS) -> Iterator[pd.DataFrame]:
        """The per-frame table in pieces (see :attr:`frames`); memory stays bounded."""
        for _, table in self.frame_chunks(chunk_rows):
            yield table

    @cached_property
    def frames(self) -> pd.DataFrame:
        """One row per PROFILEDATA row kept: ``file, package, pid, window, block, line``
        and the known columns present in any block (:data:`COLUMNS` names; Flags,
        IntendedVsync and FrameCompleted are int64, the others nullable Int64). Built by
        reading the sources again; its memory grows with the input (use
        :meth:`iter_frames` for large dumps)."""
        tables = list(self.iter_frames())
        if not tables:
            return _empty_table(
                [c for c in COLUMNS.values() if c in self.columns or c in _REQUIRED_OURS]
            )
        return pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]


def _table(meta: npt.NDArray[Any], rows: Rows, names: list[str], keep: BoolArray) -> pd.DataFrame:
    n = int(keep.sum())
    file, package, pid, window, block = meta
    data: dict[str, Any] = {
        "file": np.full(n, file, dtype=object),
        "package": np.full(n, package, dtype=object),
        "pid": np.full(n, pid, dtype=np.int64),
        "window": np.full(n, window, dtype=object),
        "block": np.full(n, block, dtype=np.int64),
        "line": rows.lines[keep],
    }
    unused = None
    oldest = rows.columns.get("oldest_input_event_ns")
    if oldest is not None:
        unused = oldest[keep] == NO_INPUT
    for name in names:
        values = rows.columns.get(name)
        if name in _REQUIRED_OURS:
            assert values is not None
            data[name] = values[keep]
        elif values is None:
            data[name] = pd.arrays.IntegerArray(np.zeros(n, np.int64), np.ones(n, np.bool_))
        else:
            missing = np.zeros(n, dtype=np.bool_)
            if unused is not None and name in ("oldest_input_event_ns", "newest_input_event_ns"):
                missing = unused
            data[name] = pd.arrays.IntegerArray(values[keep], missing.copy())
    return pd.DataFrame(data)


def _empty_table(names: list[str]) -> pd.DataFrame:
    data: dict[str, Any] = {
        "file": pd.Series([], dtype=object), "package": pd.Series([], dtype=object),
        "pid": pd.Series([], dtype=np.int64), "window": pd.Series([], dtype=object),
        "block": pd.Series([], dtype=np.int64), "line": pd.Series([], dtype=np.int64),
    }  # fmt: skip
    for name in names:
        data[name] = pd.Series([], dtype=np.int64 if name in _REQUIRED_OURS else "Int64")
    return pd.DataFrame(data)


def _join(pieces: list[tuple[IntArray, pd.DataFrame]]) -> tuple[IntArray, pd.DataFrame]:
    if len(pieces) == 1:
        return pieces[0]
    index = np.concatenate([i for i, _ in pieces])
    return index, pd.concat([t for _, t in pieces], ignore_index=True)


# -- reading -----------------------------------------------------------------------------------


def read_gfxinfo(
    paths: str | Path | Sequence[str | Path],
    *,
    skip_bad_lines: bool = False,
    progress: Progress | None = None,
) -> GfxinfoData:
    """Read ``dumpsys gfxinfo`` files (any encoding and line end, plain or gzip).
    ``progress(fraction)`` is called as bytes are read. Raises
    :class:`~mqoe.errors.InputFileError` (see the package docstring)."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    if not items:
        raise UserError("no gfxinfo file given")
    sources = [Source(str(p), path=Path(p)) for p in items]
    return _read(sources, skip_bad_lines, progress)


def parse_gfxinfo_text(
    text: str, *, name: str = "<text>", skip_bad_lines: bool = False
) -> GfxinfoData:
    """:func:`read_gfxinfo` for text in memory (``name`` appears in errors and tables)."""
    data = text.encode("utf-8", "surrogatepass")
    return _read([Source(name, text=data)], skip_bad_lines, None, empty_ok=True)


def _no_content(name: str | Path) -> InputFileError:
    return InputFileError(
        name,
        "no dumpsys gfxinfo output found (expected '** Graphics info for pid N [package] **'"
        " sections or ---PROFILEDATA--- blocks)",
    )


def _runs_table(
    parsers: list[_FileParser],
    sections: list[tuple[str, _Section]],
    runs: list[tuple[int, int, str, int, int]],
) -> pd.DataFrame:
    """One row per run of rows: file, package, pid, window, block, rows (names as
    categories: a long capture has thousands of runs of a few names)."""

    def category(values: list[str]) -> pd.Categorical:
        codes, names = pd.factorize(pd.Index(values, dtype=object))
        return pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype=object))

    return pd.DataFrame(
        {
            "file": category([parsers[f].name for f, _, _, _, _ in runs]),
            "package": category([sections[s][1].package for _, s, _, _, _ in runs]),
            "pid": np.array([sections[s][1].pid for _, s, _, _, _ in runs], dtype=np.int64),
            "window": category([w for _, _, w, _, _ in runs]),
            "block": np.array([b for _, _, _, b, _ in runs], dtype=np.int64),
            "rows": np.array([n for _, _, _, _, n in runs], dtype=np.int64),
        }
    )


def _read(
    sources: list[Source], lenient: bool, progress: Progress | None, empty_ok: bool = False
) -> GfxinfoData:
    """Read every source into one :class:`GfxinfoData`; ``empty_ok``: in lenient mode, no
    content at all gives empty tables instead of an error."""
    sizes = [source.size() for source in sources]
    total = sum(sizes) or 1
    warnings = GfxinfoWarnings()
    builder = StoreBuilder()
    parsers: list[_FileParser] = []
    kept: list[Source] = []
    done = 0
    for source, size in zip(sources, sizes, strict=True):

        def report(fraction: float, base: int = done, size: int = size) -> None:
            if progress is not None:
                progress(min(1.0, (base + fraction * size) / total))

        parser = _FileParser(source.name, lenient, warnings, _STORE_COLUMNS)
        base = sum(len(p.sections) for p in parsers)
        lines = source.lines(warnings, report)
        try:
            for rows in parser.run(lines):
                section = parser.sections[rows.section]
                process = (source.name, section.package, section.pid)
                builder.add(len(parsers), base + rows.section, rows, process)
        finally:
            lines.close()
        done += size
        if parser.seen:
            parsers.append(parser)
            kept.append(source)
        elif lenient:  # no marker was seen, so it added no rows
            warnings.files_without_content.append(source.name)
        else:
            raise _no_content(source.name)
    if not parsers and not (empty_ok and lenient):
        raise (
            _no_content(sources[0].name)
            if len(sources) == 1
            else UserError("none of the files holds dumpsys gfxinfo output")
        )
    return _assemble(parsers, kept, builder, warnings, lenient)


def _assemble(
    parsers: list[_FileParser],
    sources: list[Source],
    builder: StoreBuilder,
    warnings: GfxinfoWarnings,
    lenient: bool,
) -> GfxinfoData:
    sections = [(p.name, s) for p in parsers for s in p.sections]
    runs = _runs_table(parsers, sections, builder.runs)
    columns, key = builder.finish()
    process = np.array(
        [builder.processes[(parsers[f].name, sections[s][1].package, sections[s][1].pid)]
         for f, s, _, _, _ in builder.runs],
        dtype=np.int32,
    )  # fmt: skip
    per_row = process[columns["run"]] if len(key) else key
    warnings.duplicate_rows += mark_duplicates(columns, key, per_row)
    del key, per_row
    release_memory()
    store = FrameStore(**columns)
    table = pd.DataFrame(
        [(name, s.package, s.pid, s.framestats) for name, s in sections],
        columns=["file", "package", "pid", "framestats"],
    )
    grouped = table.groupby(["file", "package", "pid"], sort=False)
    section_table = pd.DataFrame(
        {"sections": grouped.size(), "framestats": grouped["framestats"].any()}
    ).reset_index()
    summaries, histograms = summary_tables(
        [(p.name, [(x.package, x.pid) for x in p.sections], p.log) for p in parsers]
    )
    names = set().union(*(p.columns for p in parsers))
    order = tuple(c for c in COLUMNS.values() if c in names)
    return GfxinfoData(
        store, runs, section_table, summaries, histograms, warnings, order, tuple(sources), lenient
    )
