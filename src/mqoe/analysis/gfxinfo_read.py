"""Reading ``dumpsys gfxinfo`` files (the format is in :mod:`mqoe.analysis.gfxinfo`).

Lines come from :mod:`mqoe.analysis.textio` (any encoding and line end, gzip, one-line
errors). A state machine sorts them into sections, summary lines and PROFILEDATA blocks;
rows are batched across blocks (at most ``_BATCH_ROWS`` held) and converted by
:mod:`mqoe.analysis.gfxinfo_rows`. What the metrics need of each row is kept in a
:class:`~mqoe.analysis.gfxinfo_store.FrameStore` of compact columns (≈ 40 bytes a row),
summary lines in a columnar :class:`~mqoe.analysis.gfxinfo_summary.SummaryLog`; the full
per-frame table is rebuilt on demand by reading the files again
(:meth:`GfxinfoData.iter_frames`), so memory does not grow with the file beyond the
compact columns.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.gfxinfo_format import (
    COLUMNS,
    MARKER,
    MAX_INTERVAL_NS,
    MAX_LINE_CHARS,
    NO_INPUT,
    REQUIRED_COLUMNS,
)
from mqoe.analysis.gfxinfo_rows import (
    Header,
    Rows,
    parse_rows,
    parse_rows_slowly,
    row_values,
    swap_names,
)
from mqoe.analysis.gfxinfo_store import (
    DUPLICATE,
    FrameStore,
    StoreBuilder,
    mark_duplicates,
    release_memory,
)
from mqoe.analysis.gfxinfo_summary import SummaryLog, summary_tables
from mqoe.analysis.textio import decode_chunks, describe_os_error, open_input, split_lines
from mqoe.errors import InputFileError, UserError

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Progress = Callable[[float], None]

_BATCH_ROWS = 1 << 14  # rows converted at once: ~5 MB of text, bounded whatever the file
_CHUNK_ROWS = 1 << 16  # rows per table yielded by iter_frames
_MAX_COLUMNS = 512
_MAX_EXAMPLES = 20  # skipped lines remembered individually (all are counted)
_ROW_START = frozenset("0123456789")  # not "-": the marker starts with it
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_SECTION = re.compile(r"\*\* Graphics info for pid ([0-9]{1,10}) \[([^\]]{0,512})\] \*\*")
_VISIBILITY = re.compile(r"(\S.{0,1023}?) \(visibility=-?[0-9]{1,10}\)")
_OUT, _HEAD, _ROWS = 0, 1, 2
_REQUIRED_OURS = tuple(COLUMNS[name] for name in REQUIRED_COLUMNS)
#: The columns the compact store is made from (the full table re-reads all of them).
_STORE_COLUMNS = frozenset(
    {*_REQUIRED_OURS, "display_present_time_ns", "dequeue_buffer_duration_ns", "frame_interval_ns"}
)

# -- warnings ----------------------------------------------------------------------------------


@dataclass
class GfxinfoWarnings:
    """What was forgiven or skipped while reading; all counts (see the module docstring)."""

    skipped_lines: int = 0  # bad lines skipped with skip_bad_lines
    skipped_examples: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, what)
    files_without_content: list[str] = field(default_factory=list)  # skip_bad_lines only
    truncated_blocks: int = 0  # files that end inside a PROFILEDATA block
    truncated_rows: int = 0  # unterminated, incomplete last rows dropped
    truncated_gzip: int = 0  # gzip streams cut short
    unterminated_blocks: int = 0  # blocks closed by a new section instead of the marker
    overlong_lines: int = 0  # over-long lines outside blocks (ignored)
    undecodable_lines: int = 0  # lines with bytes that are not text in the file's encoding
    malformed_summary_lines: int = 0
    profiledata_outside_section: int = 0
    duplicate_rows: int = 0  # frames seen again in a later dump, kept once
    unknown_columns: Counter[str] = field(default_factory=Counter)  # header name → blocks

    def skip(self, path: str, line: int, what: str) -> None:
        self.skipped_lines += 1
        if len(self.skipped_examples) < _MAX_EXAMPLES:
            self.skipped_examples.append((path, line, what))

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able values."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name == "skipped_examples":
                value = [{"file": f, "line": n, "what": w} for f, n, w in value]
            elif isinstance(value, Counter):
                value = dict(sorted(value.items()))
            elif isinstance(value, list):
                value = list(value)
            out[name] = value
        return out


# -- sources -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One input: a file, or text held in memory (``name`` appears in errors and tables)."""

    name: str
    path: Path | None = None
    text: bytes | None = None

    def size(self) -> int:
        """Bytes on disk (or in memory); a missing, unreadable or folder path is an error."""
        if self.text is not None:
            return len(self.text)
        assert self.path is not None
        try:
            info = os.stat(self.path)
        except OSError as exc:
            raise InputFileError(self.path, describe_os_error(exc)) from None
        if stat.S_ISDIR(info.st_mode):
            raise InputFileError(self.path, "is a folder, expected a dumpsys gfxinfo text file")
        return info.st_size

    def lines(self, warnings: GfxinfoWarnings, progress: Progress | None) -> _Lines:
        """The decoded lines (None for an over-long one); close the result."""
        if self.text is not None:
            memory = io.BytesIO(self.text)
            return _Lines(self.name, memory, memory, len(self.text), warnings, progress)
        assert self.path is not None
        stream, raw, size = open_input(self.path)
        return _Lines(self.name, stream, raw, size, warnings, progress)


class _Lines:
    """Lines of one source through textio; read errors become one-line InputFileErrors, a
    gzip stream cut short ends the data (counted), and whether the last line had a line
    end is remembered (an unterminated row may have been cut mid-write)."""

    def __init__(
        self,
        name: str,
        stream: IO[bytes],
        raw: IO[bytes],
        size: int,
        warnings: GfxinfoWarnings,
        progress: Progress | None,
    ) -> None:
        self.name, self.stream, self.raw, self.size = name, stream, raw, size
        self.warnings, self.progress = warnings, progress
        self.ended = False  # the gzip stream was cut short
        self.last_char = ""
        # read1: one underlying read per call, so the bytes inflated before a gzip stream
        # turns out to be cut short are returned before the EOFError (read(n) loses them)
        self._read = getattr(stream, "read1", stream.read)

    def read(self, n: int = -1) -> bytes:
        if self.ended:
            return b""
        try:
            data: bytes = self._read(n)
        except EOFError:  # gzip: "Compressed file ended before the end-of-stream marker"
            self.warnings.truncated_gzip += 1
            self.ended = True
            return b""
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise InputFileError(self.name, f"corrupt gzip data: {exc}") from None
        except OSError as exc:
            raise InputFileError(self.name, describe_os_error(exc)) from None
        if self.progress is not None and self.size:
            self.progress(min(1.0, self.raw.tell() / self.size))
        return data

    def __iter__(self) -> Iterator[str | None]:
        return split_lines(self._chunks(), MAX_LINE_CHARS)

    def _chunks(self) -> Iterator[str]:
        for chunk in decode_chunks(cast(IO[bytes], self)):
            self.last_char = chunk[-1]
            yield chunk

    @property
    def unterminated(self) -> bool:
        """The last line had no line end."""
        return self.last_char not in ("", "\n", "\r")

    def close(self) -> None:
        self.raw.close()


# -- the line state machine --------------------------------------------------------------------


@dataclass(frozen=True)
class _Segment:
    """The rows of one block (or of one header within it) in the current batch."""

    start: int  # index of its first row in the batch
    section: int
    window: str
    block: int
    header: Header | None  # None: an unusable header (lenient mode skips its rows)


@dataclass
class _Section:
    package: str
    pid: int
    framestats: bool = False  # a PROFILEDATA block was seen in it


class _FileParser:
    """A state machine over one file's lines: sections, summary lines, PROFILEDATA blocks.
    :meth:`run` yields the rows of each block in batches of converted ``wanted`` columns."""

    def __init__(
        self,
        name: str,
        lenient: bool,
        warnings: GfxinfoWarnings,
        wanted: Collection[str] | None = None,
    ) -> None:
        self.name = name
        self.lenient = lenient
        self.w = warnings
        self.wanted = wanted
        self.line = 0
        self.state = _OUT
        self.seen = False  # any gfxinfo content at all
        self.sections: list[_Section] = []
        self.window = ""
        self.scope = "process"
        self.log = SummaryLog()
        self.header: Header | None = None
        self.swapped: dict[tuple[str, ...], bool] = {}  # FrameInterval/FrameStartTime labels
        self.columns: set[str] = set()  # known columns named by any usable header
        self.block = -1
        # rows wait in one batch across blocks (a long capture has thousands of small
        # blocks); each block's part of it is a segment
        self.batch: list[str] = []
        self.batch_lines: list[int] = []
        self.segments: list[_Segment] = []
        self.ready: list[Rows] = []

    def run(self, lines: _Lines) -> Iterator[Rows]:
        """Feed every line; yields converted rows as batches fill and blocks end."""
        batch, batch_lines, ready, row_start = self.batch, self.batch_lines, self.ready, _ROW_START
        line = 0
        for text in lines:
            line += 1
            if self.state == _ROWS and text and text[0] in row_start:  # the hot path: a row
                if len(batch) >= _BATCH_ROWS:  # flushed before, so the last row stays held
                    self.line = line - 1
                    self._flush()
                    yield from ready
                    ready.clear()
                batch.append(text)
                batch_lines.append(line)
                continue
            self.line = line
            self._other(text)
            if ready:
                yield from ready
                ready.clear()
        self.line = line
        self._finish(lines.unterminated)
        self.w.malformed_summary_lines += self.log.malformed
        yield from ready
        ready.clear()

    def _finish(self, unterminated: bool) -> None:
        """End of file: a last row without a line end may have been cut mid-write."""
        batch, lines = self.batch, self.batch_lines
        segments = self.segments
        held = self.state == _ROWS and bool(segments) and len(batch) > segments[-1].start
        if unterminated and held and lines[-1] == self.line and self.header is not None:
            tail = batch.pop()
            lines.pop()
            if tail.rstrip().endswith(",") and not isinstance(row_values(tail, self.header), str):
                batch.append(tail)
                lines.append(self.line)
            else:
                self.w.truncated_rows += 1
        if self.state != _OUT:
            self.w.truncated_blocks += 1
            self.state = _OUT
        self._flush()

    # -- lines ------------------------------------------------------------------------------

    def _bad(self, what: str, line: int | None = None) -> None:
        where = self.line if line is None else line
        if self.lenient:
            self.w.skip(self.name, where, what)
            return
        self._flush()  # an earlier bad row in the batch is the first error
        raise InputFileError(self.name, what, line=where)

    def _other(self, text: str | None) -> None:
        if text is None:
            if self.state == _OUT:
                self.w.overlong_lines += 1
            else:
                self._bad(
                    f"a line longer than {MAX_LINE_CHARS} characters inside a PROFILEDATA block"
                )
            return
        if "\ufffd" in text:  # textio's stand-in for bytes that do not decode
            self.w.undecodable_lines += 1
        stripped = text.strip()
        if not stripped:
            return
        if self.state == _OUT:
            self._outside(stripped)
        else:
            self._inside(stripped, text)

    def _inside(self, text: str, raw: str) -> None:
        if text == MARKER:
            self.state, self.header = _OUT, None
            return
        first = text[0]
        is_row = first.isascii() and (first.isdigit() or first == "-")
        if self.state == _HEAD:
            if is_row:
                self._bad("a PROFILEDATA row before the header line (Flags,IntendedVsync,…)")
            elif text.startswith("** "):
                self.w.unterminated_blocks += 1
                self.state = _OUT
                self._outside(text)
            else:
                self._set_header(text)
            return
        if is_row:  # a row with leading white space or a sign: the converters judge it
            if len(self.batch) >= _BATCH_ROWS:
                self._flush()
            self.batch.append(raw)
            self.batch_lines.append(self.line)
        elif text.startswith("Flags,"):
            self._set_header(text)
        elif text.startswith("** "):
            self.w.unterminated_blocks += 1
            self.state, self.header = _OUT, None
            self._outside(text)
        else:
            self._bad("expected a PROFILEDATA row of integers or the closing ---PROFILEDATA---")

    def _set_header(self, text: str) -> None:
        names = [name.strip() for name in text.split(",")]
        if len(names) > 1 and not names[-1]:
            names.pop()
        problem = None
        if len(names) > _MAX_COLUMNS:
            problem = f"a PROFILEDATA header with more than {_MAX_COLUMNS} columns"
        elif not all(_NAME.fullmatch(name) for name in names):
            problem = "expected the PROFILEDATA header line (column names: Flags,IntendedVsync,…)"
        elif len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            problem = f"PROFILEDATA header repeats column {', '.join(dup)}"
        else:
            missing = [name for name in REQUIRED_COLUMNS if name not in names]
            if missing:
                problem = f"PROFILEDATA header lacks column {', '.join(missing)}"
        self.state = _ROWS
        header = None
        if problem is None:
            for name in names:
                if name not in COLUMNS:
                    self.w.unknown_columns[name] += 1
            known = tuple((i, COLUMNS[n]) for i, n in enumerate(names) if n in COLUMNS)
            self.columns.update(name for _, name in known)
            header = Header(tuple(names), self.line, known)
        batched = next((x.header for x in reversed(self.segments) if x.header), None)
        if batched is not None and (header is None or batched.names != header.names):
            self._flush()  # a batch is converted under one layout
        self.header = header
        segment = _Segment(len(self.batch), self._section(), self.window, self.block, header)
        self.segments.append(segment)
        if problem is not None:
            self._bad(problem)

    def _flush(self) -> None:
        """Convert the batch; the open block's segment carries on in the next batch."""
        rows, lines, segments = self.batch, self.batch_lines, self.segments
        try:
            if rows:
                self._convert(rows, lines, segments)
        finally:
            rows.clear()
            lines.clear()
            last = segments[-1] if self.state == _ROWS and segments else None
            segments.clear()
            if last is not None:
                segments.append(_Segment(0, last.section, last.window, last.block, last.header))

    def _convert(self, rows: list[str], lines: list[int], segments: list[_Segment]) -> None:
        bounds = [x.start for x in segments[1:]] + [len(rows)]
        texts = np.fromiter(map(hash, rows), dtype=np.int64, count=len(rows))
        header = segments[0].header
        columns = None
        if all(x.header is not None for x in segments) and header is not None:
            columns = parse_rows(rows, self._labelled(header, rows), self.wanted)
        if columns is None:  # row by row, each segment under its own header
            self._convert_slowly(rows, lines, segments, bounds, texts)
            return
        numbers = np.array(lines, dtype=np.int64)
        for segment, stop in zip(segments, bounds, strict=True):
            a = segment.start
            if stop > a:
                part = {k: v[a:stop] for k, v in columns.items()}
                rows_ = Rows(segment.section, segment.window, segment.block, part,
                              numbers[a:stop], texts[a:stop])  # fmt: skip
                self.ready.append(rows_)

    def _convert_slowly(
        self,
        rows: list[str],
        lines: list[int],
        segments: list[_Segment],
        bounds: list[int],
        texts: IntArray,
    ) -> None:
        for segment, stop in zip(segments, bounds, strict=True):
            a = segment.start
            if stop <= a:
                continue
            if segment.header is None:  # rows under an unusable header (lenient mode only)
                for line in lines[a:stop]:
                    self.w.skip(self.name, line, "row under an unusable PROFILEDATA header")
                continue
            header = self._labelled(segment.header, rows[a:stop])
            columns, kept, bad = parse_rows_slowly(rows[a:stop], lines[a:stop], header, self.wanted)
            if bad and not self.lenient:
                raise InputFileError(self.name, bad[0][1], line=bad[0][0])
            for line, what in bad:
                self.w.skip(self.name, line, what)
            if len(kept):
                part = texts[a:stop][np.isin(np.array(lines[a:stop], dtype=np.int64), kept)]
                self.ready.append(
                    Rows(segment.section, segment.window, segment.block, columns, kept, part)
                )

    def _labelled(self, header: Header, rows: Sequence[str]) -> Header:
        """The header with FrameInterval and FrameStartTime under their values' names,
        decided once per layout on the first row that tells (see _swapped_labels)."""
        swapped = self.swapped.get(header.names)
        if swapped is None:
            decided = _swapped_labels(rows, header)
            if decided is None:
                return header
            swapped = self.swapped[header.names] = decided
        return swap_names(header, "frame_interval_ns", "frame_start_time_ns") if swapped else header

    def _section(self) -> int:
        if not self.sections:
            self.sections.append(_Section("(unknown)", -1))
            self.w.profiledata_outside_section += 1
        return len(self.sections) - 1

    def _outside(self, text: str) -> None:
        if text == MARKER:
            self.sections[self._section()].framestats = True
            self.seen = True
            self.block += 1
            self.state, self.header = _HEAD, None
            return
        if text.startswith("** "):
            match = _SECTION.fullmatch(text)
            if match is None:
                self.w.malformed_summary_lines += 1
                return
            self.seen = True
            self.sections.append(_Section(match.group(2), int(match.group(1))))
            self.window, self.scope = "", "process"
            self.log.close()
            return
        if text.startswith("Applications Graphics Acceleration Info"):
            self.seen = True
            return
        if self.log.feed(text, self._section, self.scope, self.line):
            return
        if text.startswith("Window: "):
            self.window = self.scope = text[8:].strip()[:1024]
            self.log.close()
        elif text.endswith(")"):
            visibility = _VISIBILITY.fullmatch(text)
            if visibility is not None:
                self.window = visibility.group(1)


def _swapped_labels(rows: Sequence[str], header: Header) -> bool | None:
    """Whether the block prints FrameInterval and FrameStartTime each over the other's
    value, judged on its first row that has both; None while no row tells.

    Android 12–14 do (``LAYOUT_ANDROID14``): AOSP's FrameInfoNames lists FrameInterval
    before FrameStartTime while FrameInfoIndex stores FrameStartTime first. A frame
    interval is at most 1 s and a start time is a CLOCK_MONOTONIC timestamp.
    """
    slots = {name: k for k, (_, name) in enumerate(header.known)}
    interval, start = slots.get("frame_interval_ns"), slots.get("frame_start_time_ns")
    if interval is None or start is None:
        return False
    for text in rows:
        values = row_values(text, header)
        if isinstance(values, list) and values[interval] > 0 and values[start] > 0:
            return values[interval] > MAX_INTERVAL_NS >= values[start]
    return None


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
    :class:`~mqoe.errors.InputFileError` (see the module docstring)."""
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
