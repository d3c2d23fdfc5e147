"""Users' files as they come off phones and PCs: opened with one-line errors, decoded
whatever the encoding a shell gave them, split on whatever line ends a tool wrote.

Every text analyser reads through here so that each accepts the same variants:

* **Encodings**: UTF-8 (undecodable bytes become U+FFFD, which callers may count), UTF-8
  with a byte-order mark, and UTF-16 with a BOM (little- or big-endian: Windows
  PowerShell's ``adb shell dumpsys … > file`` writes UTF-16LE with a BOM). A UTF-16 file
  without a BOM is recognised by its NUL bytes (every other byte of ASCII text).
* **Line ends**: LF, CRLF, CR alone (classic Mac tools) and CR CR LF (old ``adb shell``
  on Windows turned the device's LF into CRLF and the host's text mode added another
  CR). Each counts as one line end, so line numbers in errors are the ones an editor shows.
* **Compression**: gzip, detected by its magic bytes (``open_input``).
* **Errors**: a missing, unreadable or not-a-file path is an
  :class:`~mqoe.errors.InputFileError` naming it (no ``PermissionError`` traceback);
  :func:`list_files` does the same for folders.

Streaming: :func:`iter_lines` holds one chunk and one line at a time, so memory does not
grow with the file; a line over ``max_line_chars`` is reported as ``None`` (and its text
dropped as it is read) instead of being held.
"""

from __future__ import annotations

import codecs
import errno
import gzip
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from mqoe.errors import InputFileError

CHUNK_BYTES = 1 << 20  # read size: large enough that per-chunk overhead is negligible
DEFAULT_MAX_LINE_CHARS = 1 << 20  # no real line of these formats comes near 1 M chars
_SNIFF_BYTES = 512  # the head an encoding is decided on

BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def describe_os_error(exc: OSError) -> str:
    """What went wrong with a path, in words a user can act on."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied (cannot read it as this user)"
    if exc.errno == errno.ENOENT:
        return "no such file or folder"
    if exc.errno == errno.EISDIR:
        return "is a folder, expected a file"
    if exc.errno == errno.ENOTDIR:
        return "a part of the path is not a folder"
    return f"cannot read it: {exc.strerror or exc}"


def open_binary(path: str | Path) -> IO[bytes]:
    """The file opened for binary reading; errors name the path in one line."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InputFileError(p, "is a folder, expected a file")
        return p.open("rb")
    except OSError as exc:
        raise InputFileError(p, describe_os_error(exc)) from None


def open_input(path: str | Path) -> tuple[IO[bytes], IO[bytes], int]:
    """``(stream, raw, size)``: the bytes of the file, gunzipped when it is gzip; ``raw``
    is the file itself (``raw.tell()`` against ``size`` gives progress). Close ``raw``."""
    raw = open_binary(path)
    try:
        size = os.fstat(raw.fileno()).st_size
        head = raw.read(2)
        raw.seek(0)
    except OSError as exc:
        raw.close()
        raise InputFileError(path, describe_os_error(exc)) from None
    if head == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw, mode="rb"), raw, size  # type: ignore[return-value]
    return raw, raw, size


def sniff_encoding(head: bytes) -> tuple[str, int]:
    """``(codec, bom_length)`` from a file's first bytes (at least 4 when the file has
    them). A BOM decides; without one, NULs in alternate positions mean UTF-16."""
    for bom, codec in BOMS:
        if head.startswith(bom):
            return codec, len(bom)
    sample = head[:_SNIFF_BYTES]
    if len(sample) >= 4:
        even, odd = sample[0::2], sample[1::2]
        # ASCII-range text in UTF-16 has a NUL in every high byte; a stray NUL character,
        # a character such as U+0100, or a supplementary character's surrogate (U+10000
        # is D800 DC00) puts some in the low byte too. So: NULs in over half of one
        # side's bytes and more of them there than on the other side.
        n_even, n_odd = even.count(0), odd.count(0)
        if n_odd > len(odd) // 2 and n_even < n_odd:
            return "utf-16-le", 0
        if n_even > len(even) // 2 and n_odd < n_even:
            return "utf-16-be", 0
    return "utf-8", 0


def decode_chunks(stream: IO[bytes], chunk_bytes: int = CHUNK_BYTES) -> Iterator[str]:
    """The stream's text, chunk by chunk, decoded as :func:`sniff_encoding` says (the BOM
    dropped, undecodable bytes replaced by U+FFFD)."""
    head = b""
    while len(head) < max(chunk_bytes, _SNIFF_BYTES):  # enough bytes to see a BOM or NULs
        data = stream.read(max(chunk_bytes, _SNIFF_BYTES) - len(head))
        if not data:
            break
        head += data
    if not head:
        return
    codec, skip = sniff_encoding(head)
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    text = decoder.decode(head[skip:])
    if text:
        yield text
    while True:
        data = stream.read(chunk_bytes)
        if not data:
            break
        text = decoder.decode(data)
        if text:
            yield text
    text = decoder.decode(b"", final=True)
    if text:
        yield text


def normalise_line_ends(text: str) -> str:
    """CR CR LF, CR LF and a lone CR become LF (one line end each)."""
    if "\r" not in text:
        return text
    return text.replace("\r\r\n", "\n").replace("\r\n", "\n").replace("\r", "\n")


def split_lines(
    chunks: Iterable[str], max_line_chars: int = DEFAULT_MAX_LINE_CHARS
) -> Iterator[str | None]:
    """Lines (without their ends) from text chunks, any line end accepted; ``None`` in
    place of a line longer than ``max_line_chars`` (its text is never held whole). A
    final line without a line end is still a line."""
    carry = ""  # the unfinished line so far
    pending = ""  # trailing CRs: CR, the start of CR LF or of CR CR LF? The next chunk says.
    overflow = False  # the current line is over the limit: its text is dropped as it comes
    for chunk in chunks:
        if pending:
            chunk = pending + chunk
        body = chunk.rstrip("\r")
        pending = chunk[len(body) :]
        if not body:
            continue
        parts = normalise_line_ends(body).split("\n")
        last = parts.pop()
        if not carry and not overflow and parts and max(map(len, parts)) <= max_line_chars:
            yield from parts  # the common case: whole lines, none over the limit
            parts = []
        for part in parts:
            if overflow:  # the end of the over-long line (None was yielded for it)
                overflow = False
                continue
            line = carry + part if carry else part
            carry = ""
            yield line if len(line) <= max_line_chars else None
        if overflow:
            continue
        carry += last
        if len(carry) > max_line_chars:
            overflow, carry = True, ""
            yield None
    # At the end, held CRs are line ends: CR, not the start of CR LF after all.
    if pending:
        if not overflow:
            yield carry
        yield from [""] * (len(pending) - 1)
    elif carry and not overflow:
        yield carry


def iter_lines(
    stream: IO[bytes],
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator[str | None]:
    """Decoded, line-end-normalised lines of a binary stream (``None`` = over the limit).
    Number them with ``enumerate(…, 1)``: the numbers match what an editor shows."""
    return split_lines(decode_chunks(stream, chunk_bytes), max_line_chars)


def read_text(path: str | Path, max_bytes: int | None = None, what: str = "a small file") -> str:
    """A whole (small) file as text: gunzipped, decoded, line ends normalised to LF.
    ``max_bytes`` bounds the decompressed size (an error past it, never a huge buffer);
    ``what`` names what was expected in that error (``"a trace of at most 256 MiB"``)."""
    stream, raw, _ = open_input(path)
    try:
        limit = -1 if max_bytes is None else max_bytes + 1
        data = stream.read(limit)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise InputFileError(path, f"cannot read it: {exc}") from None
    finally:
        raw.close()
    if max_bytes is not None and len(data) > max_bytes:
        raise InputFileError(path, f"larger than {max_bytes} bytes, expected {what}")
    codec, skip = sniff_encoding(data[:_SNIFF_BYTES])
    return normalise_line_ends(data[skip:].decode(codec, errors="replace"))


def list_files(folder: str | Path, pattern: str = "*") -> list[Path]:
    """The files matching ``pattern`` under ``folder`` (recursively), sorted; an unreadable
    folder (or subfolder) is an error naming it, never an empty list."""
    root = Path(folder)
    found: list[Path] = []

    def visit(directory: Path) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            raise InputFileError(directory, describe_os_error(exc)) from None
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError as exc:
                raise InputFileError(entry.path, describe_os_error(exc)) from None
            if is_dir:
                visit(Path(entry.path))
            elif Path(entry.name).match(pattern):
                found.append(Path(entry.path))

    visit(root)
    return found
