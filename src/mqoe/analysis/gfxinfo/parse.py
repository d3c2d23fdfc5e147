"""The line state machine of a ``dumpsys gfxinfo`` file (the format is in
:mod:`mqoe.analysis.gfxinfo`): sections, summary lines and PROFILEDATA blocks; rows are
batched across blocks (at most ``_BATCH_ROWS`` held) and converted by
:mod:`mqoe.analysis.gfxinfo.rows`."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mqoe.analysis.gfxinfo.format import (
    COLUMNS,
    MARKER,
    MAX_INTERVAL_NS,
    MAX_LINE_CHARS,
    REQUIRED_COLUMNS,
)
from mqoe.analysis.gfxinfo.read import GfxinfoWarnings, _Lines
from mqoe.analysis.gfxinfo.rows import (
    Header,
    Rows,
    parse_rows,
    parse_rows_slowly,
    row_values,
    swap_names,
)
from mqoe.analysis.gfxinfo.summary import SummaryLog
from mqoe.errors import InputFileError

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_BATCH_ROWS = 1 << 14  # rows converted at once: ~5 MB of text, bounded whatever the file
_MAX_COLUMNS = 512
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
