"""The inputs of the gfxinfo reader: a file or text in memory (:class:`Source`), its
decoded lines through :mod:`mqoe.analysis.textio` (any encoding and line end, gzip,
one-line errors) and the counts of what was skipped on the way (:class:`GfxinfoWarnings`)."""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from mqoe.analysis.gfxinfo.format import MAX_LINE_CHARS
from mqoe.analysis.textio import decode_chunks, describe_os_error, open_input, split_lines
from mqoe.errors import InputFileError

Progress = Callable[[float], None]
_MAX_EXAMPLES = 20  # skipped lines remembered individually (all are counted)

# -- warnings ----------------------------------------------------------------------------------


@dataclass
class GfxinfoWarnings:
    """What was forgiven or skipped while reading; all counts (see the package docstring)."""

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
