"""Where the trace text of a systrace capture is, as numbered lines (atrace / catapult formats).

:mod:`mqoe.analysis.systrace` parses ftrace lines; this module finds them, whatever
container a tool or a shell wrote them in. Each container is sniffed from the bytes,
never from the file name:

* **Plain text** as :mod:`mqoe.analysis.textio` reads it: UTF-8 with or without a BOM,
  UTF-16 (PowerShell's ``>``), LF / CRLF / CR / CR CR LF line ends, gzip-compressed or not.
* **``atrace -z``**: a ``TRACE:`` line (after any ``capturing trace... done`` preamble),
  then one zlib stream. When the ``TRACE:`` line ends in CR LF (or CR CR LF), ``adb
  shell``'s terminal turned every LF byte of the stream into CR LF (and Windows added
  another CR), so that conversion is undone before inflating, as catapult's
  ``atrace_agent`` does. Bytes after the end of the stream are counted, not read.
* **systrace HTML reports**, two generations of ``systrace.py``:

  - ``<script class="trace-data" type="application/text">`` blocks (one per tracing
    agent): text blocks are read in file order; JSON blocks (``{``/``[``) are skipped and
    counted; a block in base64 of gzip (``H4sI…``, as catapult's ``trace2html`` may
    write) is inflated.
  - the older page whose trace is a JavaScript string literal, ``var linuxPerfData =
    "…";``, one trace line per source line ending in ``\\n\\`` (an escaped line end, then
    a line continuation). The literal is unescaped as JavaScript does (``\\n \\r \\t \\b
    \\f \\v \\0``, octal, ``\\xHH``, ``\\uHHHH``, ``\\u{H…}``, any other ``\\c`` → ``c``).
    Old ``systrace.py`` did not escape quotes inside the trace, so a quote ends the
    literal only when ``;``, ``,``, ``)``, ``</script`` or the end of the line follows it.
    A source line that ends inside the literal without a continuation is a line break.

* **A JS-escaped text file**: the body of such a literal saved on its own (its first
  line ends in ``\\n\\``), read with the same unescaping.

Line numbers are the file's (the HTML page's for embedded traces; the inflated text's
for ``atrace -z``), so an error points where an editor shows the line.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import gzip
import io
import itertools
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mqoe.analysis.textio import (
    describe_os_error,
    iter_lines,
    normalise_line_ends,
    open_input,
    split_lines,
)
from mqoe.errors import InputFileError

MAX_LINE_CHARS = 65_536  # longer lines are bad lines (atrace caps a marker at 1 KiB)
_HEAD_BYTES = 4_096  # where a `TRACE:` line before a zlib stream is looked for
_INFLATE_CHUNK = 1 << 20  # bytes inflated at a time: a small file never inflates at once

_SCRIPT_OPEN = re.compile(r"<script[^>]*class=[\"']?trace-data[^>]*>", re.IGNORECASE)
_SCRIPT_CLOSE = re.compile(r"</script\s*>", re.IGNORECASE)
_PERF_DATA = re.compile(r"\blinuxPerfData\s*=\s*([\"'])")
_HTML_STARTS = ("<!doctype html", "<html", "<!--", "<?xml", "<head", "<meta", "<script")
_ATRACE_Z = re.compile(rb"(?:^|\n)TRACE:(\r\r\n|\r\n|\n)\x78")
_JS_ESCAPED_LINE = re.compile(r".*\\n\\\s*$")
_JS_RUN = {
    '"': re.compile(r'(?:[^"\\]|\\.)*', re.DOTALL),
    "'": re.compile(r"(?:[^'\\]|\\.)*", re.DOTALL),
}
_JS_CLOSE = re.compile(r"\s*(?:[;,)]|</script|$)", re.IGNORECASE)
_JS_ESCAPE = re.compile(
    r"\\(?:u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4})|x([0-9A-Fa-f]{2})"
    r"|([0-3][0-7]{0,2}|[4-7][0-7]?)|(.))",
    re.DOTALL,
)
_JS_SINGLE = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v"}
_SURROGATES = re.compile("[\ud800-\udfff]")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")

Lines = Iterator[tuple[int, str | None]]


@dataclass
class ContainerStats:
    """What held the trace text (the parser's :class:`ParseStats` extends this)."""

    # The layers found, outermost first: text, gzip, atrace -z, HTML, linuxPerfData HTML,
    # JS-escaped text ("gzip, HTML": a gzip-compressed report).
    container: str = "text"
    html_text_blocks: int = 0
    html_json_blocks: int = 0
    html_gzip_blocks: int = 0  # base64 gzip trace-data blocks
    html_js_blocks: int = 0  # `var linuxPerfData = "…"` literals
    json_input: bool = False  # the file starts like a JSON trace
    trailing_bytes: int = 0  # after the end of an `atrace -z` zlib stream


# -- opening a file -----------------------------------------------------------------------


class TraceFile:
    """A capture opened for streaming: :attr:`lines` (numbered, ``None`` for a line over
    ``MAX_LINE_CHARS``), :meth:`fraction_read` for progress, :meth:`close`."""

    def __init__(self, path: Path, stats: ContainerStats) -> None:
        stream, self._raw, self._size = open_input(path)
        if stream is not self._raw:
            _found(stats, "gzip")
        try:
            stream = _inflate_atrace_z(stream, stats)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            self._raw.close()
            raise InputFileError(path, f"corrupt or truncated compressed data ({exc})") from None
        except OSError as exc:
            self._raw.close()
            raise InputFileError(path, describe_os_error(exc)) from None
        self.lines = trace_lines(iter_lines(stream, MAX_LINE_CHARS), stats, str(path))

    def fraction_read(self) -> float:
        """Share of the file's bytes read so far (0–1)."""
        if self._size <= 0:
            return 1.0
        try:
            return min(1.0, self._raw.tell() / self._size)
        except (OSError, ValueError):
            return 1.0

    def close(self) -> None:
        self._raw.close()


def _inflate_atrace_z(stream: IO[bytes], stats: ContainerStats) -> IO[bytes]:
    """``stream``, or the text inflated from it when it holds ``atrace -z`` output."""
    head = stream.read(_HEAD_BYTES)
    found = _ATRACE_Z.search(head)
    if found is None or not _zlib_header(head[found.end() - 1 : found.end() + 1]):
        return io.BufferedReader(_Prefixed(head, stream))
    _found(stats, "atrace -z")
    line_end = found.group(1)
    rest = _Prefixed(head[found.end() - 1 :], stream)
    return io.BufferedReader(_Inflate(rest, line_end, stats), buffer_size=1 << 16)


def _zlib_header(two: bytes) -> bool:
    # RFC 1950: CM = 8 (deflate), and CMF·256 + FLG is a multiple of 31.
    return len(two) == 2 and two[0] & 0x0F == 8 and (two[0] * 256 + two[1]) % 31 == 0


class _Prefixed(io.RawIOBase):
    """``head`` (bytes already read for sniffing), then the rest of ``stream``."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        self._head = head
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._stream.read(len(b))
        b[: len(data)] = data
        return len(data)


class _Inflate(io.RawIOBase):
    """A zlib stream read in bounded chunks (a small file cannot inflate into a huge
    buffer); ``line_end`` other than LF undoes adb's LF → CR LF (CR CR LF) conversion of
    the compressed bytes. Anything after the end of the stream is counted, not read."""

    def __init__(self, raw: _Prefixed, line_end: bytes, stats: ContainerStats) -> None:
        self._raw = raw
        self._z = zlib.decompressobj()
        self._buf = b""
        self._pos = 0  # into _buf: what was handed out already
        self._line_end = line_end if line_end != b"\n" else b""
        self._held = b""  # trailing CRs that may be the start of a converted line end
        self._stats = stats
        self._counted = False

    def readable(self) -> bool:
        return True

    def _compressed(self) -> bytes:
        """The next compressed bytes (empty at the end of the file)."""
        while True:
            data = self._raw.read(1 << 16)
            if not self._line_end:
                return data
            if not data:
                data, self._held = self._held, b""
                return data
            data = self._held + data
            keep = min(len(data) - len(data.rstrip(b"\r")), len(self._line_end) - 1)
            self._held = data[len(data) - keep :]
            data = data[: len(data) - keep].replace(self._line_end, b"\n")
            if data:
                return data

    def readinto(self, b: Any) -> int:
        while self._pos >= len(self._buf) and not self._z.eof:
            data = self._z.unconsumed_tail or self._compressed()
            if not data:
                raise EOFError("the compressed stream ends early")
            self._buf, self._pos = self._z.decompress(data, _INFLATE_CHUNK), 0
        if self._pos >= len(self._buf):
            self._count_trailing()
            return 0
        n = min(len(b), len(self._buf) - self._pos)
        b[:n] = memoryview(self._buf)[self._pos : self._pos + n]
        self._pos += n
        return n

    def _count_trailing(self) -> None:
        if self._counted:
            return
        self._counted = True
        trailing = len(self._z.unused_data) + len(self._held)
        while data := self._raw.read(1 << 16):
            trailing += len(data)
        self._stats.trailing_bytes = trailing


# -- sniffing the container ---------------------------------------------------------------


def _found(stats: ContainerStats, kind: str) -> None:
    """Record a container found inside the ones before it (``gzip, HTML``); the older
    HTML report replaces the plain HTML page it was first taken for."""
    layers = [k for k in stats.container.split(", ") if k not in ("text", kind)]
    if kind == "linuxPerfData HTML":
        layers = [k for k in layers if k != "HTML"]
    stats.container = ", ".join([*layers, kind])


def text_lines(text: str, stats: ContainerStats, source: str) -> Lines:
    """Numbered trace lines of text held in memory (any line ends)."""
    return trace_lines(split_lines([text], MAX_LINE_CHARS), stats, source)


def trace_lines(lines: Iterable[str | None], stats: ContainerStats, source: str) -> Lines:
    """The lines that hold trace text, numbered as in the file: all of them, or those
    inside an HTML report's trace blocks, or a JS-escaped text's unescaped lines."""
    numbered = enumerate(lines, 1)
    blank: list[tuple[int, str | None]] = []
    for item in numbered:
        line = item[1]
        if line is not None and not line.strip("\ufeff \t\r\n"):
            blank.append(item)
            continue
        head = (line or "").lstrip("\ufeff \t")
        everything = itertools.chain(blank, [item], numbered)
        # Not just "<": atrace's own lines may start with `<idle>-0` or `<...>-1234`.
        if head[:16].lower().startswith(_HTML_STARTS):
            _found(stats, "HTML")
            return _html_lines(everything, stats, source, in_js=False)
        if _JS_ESCAPED_LINE.match(head):
            _found(stats, "JS-escaped text")
            stats.html_js_blocks += 1
            return _html_lines(everything, stats, source, in_js=True)
        stats.json_input = head[:1] in ("{", "[")
        return everything
    return iter(blank)


# -- HTML and JavaScript strings ----------------------------------------------------------


class _Assembler:
    """Trace lines out of decoded text pieces (a JS string, an inflated block): a piece
    may hold several line ends or none. Each line carries the number of the source line
    where it ended; a line growing past ``MAX_LINE_CHARS`` is ``None`` (its text dropped)."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._overflow = False

    def feed(self, text: str, lineno: int) -> list[tuple[int, str | None]]:
        out: list[tuple[int, str | None]] = []
        pieces = normalise_line_ends(text).split("\n")
        for piece in pieces[:-1]:
            self._add(piece, lineno, out)
            if self._overflow:
                self._overflow = False
            else:
                out.append((lineno, "".join(self._parts)))
            self._parts, self._size = [], 0
        self._add(pieces[-1], lineno, out)
        return out

    def _add(self, piece: str, lineno: int, out: list[tuple[int, str | None]]) -> None:
        if self._overflow or not piece:
            return
        self._size += len(piece)
        if self._size > MAX_LINE_CHARS:
            self._overflow = True
            self._parts = []
            out.append((lineno, None))
        else:
            self._parts.append(piece)

    def flush(self, lineno: int) -> list[tuple[int, str | None]]:
        """The last line, if the text did not end with a line end."""
        last = "".join(self._parts)
        overflow = self._overflow
        self._parts, self._size, self._overflow = [], 0, False
        return [(lineno, last)] if last and not overflow else []


def _js_char(m: re.Match[str]) -> str:
    brace, four, two, octal, single = m.groups()
    if single is not None:
        return _JS_SINGLE.get(single, single)
    if octal is not None:
        return chr(int(octal, 8))
    code = int(brace or four or two, 16)
    return chr(code) if code <= 0x10FFFF else "\ufffd"


def js_unescape(text: str) -> str:
    """The value of a JavaScript string literal's body (escapes decoded; UTF-16
    surrogate pairs written as two ``\\u`` escapes joined; lone ones → U+FFFD)."""
    if "\\" not in text:
        return text
    value = _JS_ESCAPE.sub(_js_char, text)
    if _SURROGATES.search(value):
        value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return value


def _scan_js(line: str, quote: str) -> tuple[str, str | None, bool]:
    """A source line inside a JS string: (its raw string text, the rest of the line after
    the closing quote or None, whether it ends in a line continuation)."""
    run = _JS_RUN[quote]
    pos = 0
    while True:
        end = run.match(line, pos).end()  # type: ignore[union-attr]  # `*` always matches
        if end >= len(line):
            return line, None, False
        if line[end] == "\\":  # a lone backslash before the line end: a continuation
            return line[:end], None, True
        if _JS_CLOSE.match(line, end + 1):
            return line[:end], line[end + 1 :], False
        pos = end + 1  # an unescaped quote inside the trace (old systrace.py): literal


class _Gzip64:
    """A base64 gzip trace-data block, decoded as its lines arrive."""

    def __init__(self) -> None:
        self._pending = ""
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, body: str) -> Iterator[str]:
        chars = self._pending + "".join(body.split())
        cut = len(chars) - len(chars) % 4
        self._pending = chars[cut:]
        data = base64.b64decode(chars[:cut], validate=True) if cut else b""
        while data:
            out = self._z.decompress(data, _INFLATE_CHUNK)
            if out:
                yield self._text.decode(out)
            data = self._z.unconsumed_tail
            if self._z.eof:
                break

    def finish(self) -> str:
        if self._pending.strip("="):
            raise ValueError("base64 data ends in the middle of a group")
        if not self._z.eof:
            raise EOFError("the compressed block ends early")
        return self._text.decode(b"", final=True)


_OUT, _PROBE, _TEXT, _JSON, _JS, _GZIP = range(6)


def _html_lines(lines: Lines, stats: ContainerStats, source: str, in_js: bool) -> Lines:
    """The trace lines inside a page's trace blocks (``in_js``: the input is already the
    body of a JS string literal)."""
    state, quote = (_JS, '"') if in_js else (_OUT, "")
    asm = _Assembler()
    gz = _Gzip64()
    n = 0
    for n, line in lines:
        if line is None:  # a huge line: minified HTML/JS outside, or a JSON block
            if state in (_TEXT, _JS):
                yield n, None
            continue
        rest: str | None = line
        while rest is not None:
            if state == _OUT:
                rest, state, quote = _open_block(rest, stats)
            elif state == _JS:
                text, rest, continued = _scan_js(rest, quote)
                end = "" if continued or rest is not None else "\n"
                yield from asm.feed(js_unescape(text) + end, n)
                if rest is not None:
                    yield from asm.flush(n)
                    state = _OUT
            else:
                close = _SCRIPT_CLOSE.search(rest)
                body = rest if close is None else rest[: close.start()]
                if state == _PROBE and body.strip():
                    state = _probe_block(body, stats)
                if state == _TEXT and body.strip():
                    yield n, body
                elif state == _GZIP:
                    yield from _gzip_lines(gz, asm, body, n, source)
                rest = None if close is None else rest[close.end() :]
                if close is not None:
                    if state == _GZIP:
                        yield from _gzip_finish(gz, asm, n, source)
                        gz = _Gzip64()
                    state = _OUT
    if state == _JS:
        yield from asm.flush(n)
    elif state == _GZIP:
        yield from _gzip_finish(gz, asm, n, source)


def _open_block(rest: str, stats: ContainerStats) -> tuple[str | None, int, str]:
    """Outside any block: (the rest after the next block's opening, new state, quote)."""
    script = _SCRIPT_OPEN.search(rest)
    perf = _PERF_DATA.search(rest)
    if perf is not None and (script is None or perf.start() < script.start()):
        stats.html_js_blocks += 1
        _found(stats, "linuxPerfData HTML")
        return rest[perf.end() :], _JS, perf.group(1)
    if script is not None:
        return rest[script.end() :], _PROBE, ""
    return None, _OUT, ""


def _probe_block(body: str, stats: ContainerStats) -> int:
    head = body.lstrip()
    if head[0] in "{[":
        stats.html_json_blocks += 1
        return _JSON
    if head.startswith("H4sI") and _BASE64.fullmatch(body):
        stats.html_gzip_blocks += 1
        return _GZIP
    stats.html_text_blocks += 1
    return _TEXT


def _gzip_lines(gz: _Gzip64, asm: _Assembler, body: str, n: int, source: str) -> Lines:
    try:
        for text in gz.feed(body):
            yield from asm.feed(text, n)
    except (binascii.Error, ValueError, zlib.error) as exc:
        raise InputFileError(source, f"a base64 gzip trace-data block: {exc}", line=n) from None


def _gzip_finish(gz: _Gzip64, asm: _Assembler, n: int, source: str) -> Lines:
    try:
        tail = gz.finish()
    except (ValueError, EOFError) as exc:
        raise InputFileError(source, f"a base64 gzip trace-data block: {exc}", line=n) from None
    yield from asm.feed(tail, n)
    yield from asm.flush(n)
