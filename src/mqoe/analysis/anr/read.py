"""Reading ANR trace files and xCrash tombstones: through :mod:`mqoe.analysis.textio`
(gzip, UTF-8 with or without BOM, UTF-16, any line end), one chunk and one line at a
time, into the streaming parser (:mod:`mqoe.analysis.anr.parse`); a line longer than
:data:`~mqoe.analysis.anr.parse.MAX_LINE_CHARS` is skipped and counted, so memory stays
bounded whatever the input.

Many files: :func:`discover_files` finds them, :func:`load_events` parses and
summarises them, in parallel when asked."""

from __future__ import annotations

import itertools
import os
import stat
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from mqoe.analysis.anr.events import EventSummary, summarize
from mqoe.analysis.anr.features import Features
from mqoe.analysis.anr.model import AnrFile, ParseStats
from mqoe.analysis.anr.parse import MAX_LINE_CHARS, _Parser
from mqoe.analysis.textio import (
    decode_chunks,
    describe_os_error,
    list_files,
    normalise_line_ends,
    open_input,
    split_lines,
)
from mqoe.errors import InputFileError, UserError

_CHUNK_BYTES = 1 << 20


class _Reader:
    """Lines of an opened file, decoded by textio, with the counts the parser reports."""

    def __init__(self, path: Path, stream: IO[bytes], stats: ParseStats) -> None:
        self.path = path
        self.stream = stream
        self.stats = stats
        self.chars_read = 0

    def _chunks(self) -> Iterator[str]:
        stats = self.stats
        for chunk in decode_chunks(self.stream, _CHUNK_BYTES):
            self.chars_read += len(chunk)
            stats.nul_bytes += chunk.count("\0")
            stats.undecodable_bytes += chunk.count("\ufffd")
            yield chunk

    def lines(self) -> Iterator[str | None]:
        try:
            chunks = self._chunks()
            first = next(chunks, "")
            second = next(chunks, None)
            if second is None:
                # The whole file in one chunk, as nearly every ANR file is (< 1 MiB): split
                # at C speed; the parser skips over-long lines by their length.
                lines = normalise_line_ends(first).split("\n")
                if lines[-1] == "":
                    lines.pop()  # the last line end ends a line, it does not start one
                yield from lines
            else:
                yield from split_lines(itertools.chain((first, second), chunks), MAX_LINE_CHARS)
        except (OSError, EOFError, zlib.error) as exc:  # a corrupt or cut gzip stream
            raise InputFileError(self.path, f"cannot read it: {exc}") from None


def parse_anr_file(path: str | Path) -> AnrFile:
    """Parse one ANR trace file or xCrash ANR tombstone (plain or gzip, any encoding and
    line end :mod:`mqoe.analysis.textio` reads); see the package docstring for the rules.

    Raises :class:`~mqoe.errors.InputFileError` when the file cannot be read or holds no
    process dump (binary data and crash tombstones included). Forgiven problems are
    counted in ``AnrFile.stats``.
    """
    path = Path(path)
    stream, raw, _ = open_input(path)
    try:
        stats = ParseStats()
        reader = _Reader(path, stream, stats)
        return _Parser(str(path), stats, reader).run(reader.lines())
    finally:
        raw.close()


def parse_anr_text(text: str, name: str = "<text>") -> AnrFile:
    """Parse ANR trace text held in memory (same rules as :func:`parse_anr_file`)."""
    stats = ParseStats()
    if text.startswith("\ufeff"):
        text = text[1:]
    stats.nul_bytes = text.count("\0")
    stats.undecodable_bytes = text.count("\ufffd")
    return _Parser(name, stats, None).run(normalise_line_ends(text).split("\n"))


# -- many files ------------------------------------------------------------------------


def discover_files(paths: Sequence[str | Path]) -> list[Path]:
    """Files named, and every non-hidden file under folders named (sorted).

    A path that cannot be reached, a folder (or subfolder) that cannot be listed and a
    folder without files each raise an :class:`~mqoe.errors.InputFileError` naming the
    path — never a permission error, nor an unreadable folder taken for an empty one.
    """
    found: list[Path] = []
    for item in map(Path, paths):
        try:
            mode = item.stat().st_mode
        except OSError as exc:  # EACCES on a parent folder is not "no such file"
            raise InputFileError(item, describe_os_error(exc)) from None
        if not stat.S_ISDIR(mode):
            found.append(item)
            continue
        inside = [
            p
            for p in list_files(item)
            if not any(part.startswith(".") for part in p.relative_to(item).parts)
        ]
        if not inside:
            raise InputFileError(item, "no files in this folder")
        found.extend(inside)
    return found


@dataclass
class LoadResult:
    """Summaries of the files that parsed, and what was skipped or forgiven."""

    events: list[EventSummary]
    files: int
    bad_files: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    warnings: Counter[str] = field(default_factory=Counter)  # summed ParseStats warnings


_Outcome = EventSummary | tuple[str, str, int | None]  # a summary, or (path, what, line)


def _load_one(path: Path) -> _Outcome:
    try:
        return summarize(parse_anr_file(path))
    except InputFileError as exc:  # returned, not raised: this exception does not pickle
        return (exc.path, exc.what, exc.line)


def _intern(event: EventSummary) -> EventSummary:
    """Share the strings of events parsed in worker processes (memory on 50k files)."""
    f = event.features
    features = Features(
        frozenset(sys.intern(g) for g in f.generic),
        tuple((sys.intern(t), c) for t, c in f.specific),
    )
    return EventSummary(
        **{
            **event.__dict__,
            "stack": tuple(sys.intern(s) for s in event.stack),
            "features": features,
        }
    )


def _outcomes(paths: list[Path], workers: int) -> Iterator[_Outcome]:
    if workers <= 1 or len(paths) < 64:
        yield from map(_load_one, paths)
        return
    from concurrent.futures import ProcessPoolExecutor

    chunk = max(1, min(256, len(paths) // (workers * 8)))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for outcome in pool.map(_load_one, paths, chunksize=chunk):
            yield _intern(outcome) if isinstance(outcome, EventSummary) else outcome


def default_workers() -> int:
    """Worker processes for parsing: the CPUs this process may use, at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


def load_events(
    paths: Sequence[str | Path],
    *,
    skip_bad_files: bool = False,
    workers: int = 1,
    progress: Callable[[float], None] | None = None,
) -> LoadResult:
    """Parse and summarise every ANR file in ``paths`` (files or directories).

    One file is one event. A file that is not an ANR trace raises
    :class:`~mqoe.errors.InputFileError`, or, with ``skip_bad_files``, is listed in
    :attr:`LoadResult.bad_files`. ``workers > 1`` parses in that many processes.
    """
    files = discover_files(paths)
    result = LoadResult([], len(files))
    for i, outcome in enumerate(_outcomes(files, workers)):
        if isinstance(outcome, EventSummary):
            result.events.append(outcome)
            result.warnings.update(dict(outcome.warnings))
        else:
            error = InputFileError(*outcome)
            if not skip_bad_files:
                raise error
            result.bad_files.append((error.path, str(error)))
        if progress is not None and (i % 256 == 0 or i + 1 == len(files)):
            progress((i + 1) / len(files))
    if not result.events:
        raise UserError(f"no ANR trace could be parsed from {len(files)} file(s)")
    return result
