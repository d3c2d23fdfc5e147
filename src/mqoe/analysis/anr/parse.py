"""Streaming parser (and renderer) for ANR trace files (``/data/anr/…``, spec 06).

The file is read in 1 MiB binary chunks, decoded as UTF-8 with bad bytes replaced (and
counted), and split into lines; a line longer than :data:`MAX_LINE_CHARS` is skipped and
counted, so memory stays bounded whatever the input. What each line means is decided
by its first characters after stripping blanks (see the package docstring for the rules).
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from mqoe.analysis.anr.model import (
    LOCK_TEXT,
    AnrFile,
    Frame,
    LockOp,
    ParseStats,
    ProcessDump,
    ThreadDump,
    parse_dump_time,
)
from mqoe.errors import InputFileError

MAX_LINE_CHARS = 64 * 1024  # a stack line is < 1 KiB; anything this long is not one
MAX_FRAMES_PER_THREAD = 1024  # ART prints at most a few hundred; the top ones matter
MAX_FRAMES_PER_FILE = 500_000  # bounds memory on a hostile file (≈ 100 MB of frames)
MAX_THREADS_PER_FILE = 100_000
_CHUNK_BYTES = 1 << 20
_BINARY_PROBE_BYTES = 1 << 20  # give up early on binary input after this much data

_PID = re.compile(r"-----\s+pid\s+(\d{1,10})\s+at\s+(.*?)\s*-----")
_END = re.compile(r"-----\s+end\s+(\d{1,10})\s*-----")
_OTHER_SECTION = re.compile(r"-----.*\bpid:?\s+(\d{1,10})\b.*-----")
_DALVIK = re.compile(r"DALVIK THREADS \((\d{1,9})\):?")
_HEADER = re.compile(r'"(.*)"(\s.*)?')
_INT_PROPS = {"sysTid": "sys_tid", "nice": "nice", "utm": "utm", "stm": "stm", "core": "core",
              "HZ": "hz"}  # fmt: skip
_HEX_DIGITS = "0123456789abcdefABCDEF"
_LOCK = re.compile(
    r"- (waiting to lock|locked|waiting on|sleeping on) "
    r"(?:<(0x[0-9a-fA-F]+)> \(an? (.*?)\)|an unknown object)"
    r"(?: held by (?:thread |tid=)(\d{1,9})\b.*)?\s*"
)
_LOCK_KIND = {text: kind for kind, text in LOCK_TEXT.items()}
_WATCHDOG = "*** WATCHDOG KILLING SYSTEM PROCESS:"
_OVERLONG = " " * (MAX_LINE_CHARS + 1)  # stands for a line cut off while streaming


class _Reader:
    """Lines of a file, decoded leniently, with the byte counts the parser reports."""

    def __init__(self, path: Path, stats: ParseStats) -> None:
        self.path = path
        self.stats = stats
        self.bytes_read = 0

    def lines(self) -> Iterator[str]:
        try:
            with self.path.open("rb") as probe:
                gz = probe.read(2) == b"\x1f\x8b"  # pulled-off-phone files are often gzipped
            handle: io.BufferedIOBase = gzip.open(self.path, "rb") if gz else self.path.open("rb")  # noqa: SIM115
        except OSError as exc:
            raise InputFileError(self.path, f"cannot read: {exc.strerror or exc}") from None
        with handle:
            try:
                yield from self._split(handle)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputFileError(self.path, f"cannot read: {exc}") from None

    def _split(self, handle: io.BufferedIOBase) -> Iterator[str]:
        read = handle.read
        stats = self.stats
        leftover = b""
        skipping = False  # inside an overlong line: drop bytes up to its newline
        first = True
        while True:
            chunk: bytes = read(_CHUNK_BYTES)
            if not chunk:
                break
            self.bytes_read += len(chunk)
            stats.nul_bytes += chunk.count(b"\0")
            if skipping:
                newline = chunk.find(b"\n")
                if newline < 0:
                    continue
                chunk = chunk[newline + 1 :]
                skipping = False
            data = leftover + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                leftover = data
            else:
                text = data[:cut].decode("utf-8", "replace")
                leftover = data[cut + 1 :]
                stats.undecodable_bytes += text.count("\ufffd")
                if first and text.startswith("\ufeff"):
                    text = text[1:]
                first = False
                yield from text.split("\n")
            if len(leftover) > MAX_LINE_CHARS:
                leftover = b""
                skipping = True
                yield _OVERLONG  # counted by the parser; keeps line numbers right
        if leftover:
            text = leftover.decode("utf-8", "replace")
            stats.undecodable_bytes += text.count("\ufffd")
            yield text


def parse_anr_file(path: str | Path) -> AnrFile:
    """Parse one ANR trace file (plain or gzip); see the package docstring for the rules.

    Raises :class:`~mqoe.errors.InputFileError` when the file cannot be read or holds no
    ``----- pid N at DATE -----`` section (binary data included). Forgiven problems are
    counted in ``AnrFile.stats``.
    """
    path = Path(path)
    if path.is_dir():
        raise InputFileError(path, "is a directory, expected an ANR trace file")
    stats = ParseStats()
    reader = _Reader(path, stats)
    return _Parser(str(path), stats, reader).run(reader.lines())


def parse_anr_text(text: str, name: str = "<text>") -> AnrFile:
    """Parse ANR trace text held in memory (same rules as :func:`parse_anr_file`)."""
    stats = ParseStats()
    if text.startswith("\ufeff"):
        text = text[1:]
    stats.nul_bytes = text.count("\0")
    stats.undecodable_bytes = text.count("\ufffd")
    return _Parser(name, stats, None).run(text.split("\n"))


def _int(text: str, stats: ParseStats) -> int | None:
    if len(text) > 18:  # beyond int64: not a counter from a phone
        stats.bad_values += 1
        return None
    try:
        return int(text)
    except ValueError:
        stats.bad_values += 1
        return None


class _Parser:
    def __init__(self, name: str, stats: ParseStats, reader: _Reader | None) -> None:
        self.anr = AnrFile(name, stats=stats)
        self.stats = stats
        self.reader = reader
        self.proc: ProcessDump | None = None
        self.thread: ThreadDump | None = None
        self.skip_end: str | None = None  # inside a section we do not read
        self.frames_left = MAX_FRAMES_PER_FILE
        self.threads_left = MAX_THREADS_PER_FILE

    # -- the line loop ---------------------------------------------------------------

    def run(self, lines: Iterable[str]) -> AnrFile:
        stats = self.stats
        number = 0
        for raw in lines:
            number += 1
            if len(raw) > MAX_LINE_CHARS:
                stats.overlong_lines += 1
                continue
            s = raw.strip()
            if not s:
                self.thread = None  # ART separates threads with a blank line
                continue
            if self.skip_end is not None:
                self._skipping(s, number)
                continue
            thread = self.thread
            c = s[0]
            if thread is not None:
                if c == "a" and s.startswith("at "):  # the commonest line: inlined
                    if self.frames_left > 0 and len(thread.frames) < MAX_FRAMES_PER_THREAD:
                        self.frames_left -= 1
                        body = s[3:].lstrip()
                        i = body.find("(")
                        if i > 0 and body[-1] == ")":
                            thread.frames.append(Frame("java", body[:i], body[i + 1 : -1]))
                        else:
                            thread.frames.append(Frame("java", body.strip()))
                    else:
                        stats.dropped_frames += 1
                    continue
                if (c == "n" and s.startswith("native:")) or c == "#":
                    self._native(thread, s)
                    continue
                if c == "|":
                    self._properties(thread, s)
                    continue
                if c == "-" and s[1:2] == " ":
                    self._lock(thread, s)
                    continue
                if c == "k" and s.startswith("kernel:"):
                    self._kernel(thread, s)
                    continue
            if c == '"' and self.proc is not None:
                header = _HEADER.fullmatch(s)
                if header is not None:
                    self._thread_header(header, number)
                    continue
            if c == "-" and s.startswith("-----"):
                self._section(s, number)
                continue
            if c == "*" and s.startswith("***"):
                self._stars(s)
                continue
            self._other(s, number)
        stats.lines = number
        self._close(truncated=True)
        if not self.anr.processes:
            raise InputFileError(self.anr.path, self._not_anr(number))
        return self.anr

    def _not_anr(self, lines: int) -> str:
        stats = self.stats
        if stats.nul_bytes or stats.undecodable_bytes:
            return (
                f"binary data ({stats.nul_bytes} NUL, {stats.undecodable_bytes} undecodable "
                "bytes), not an ANR trace file: no '----- pid N at DATE -----' section"
            )
        return f"no '----- pid N at DATE -----' section in {lines} lines: not an ANR trace file"

    def _other(self, s: str, number: int) -> None:
        proc = self.proc
        if proc is None:
            if s.startswith("Subject:") and self.anr.subject is None:
                self.anr.subject = s[8:].strip()
            self._binary_probe(number)
            return
        if s.startswith(("Cmd line:", "Cmdline:")):
            if proc.cmd_line is None:
                proc.cmd_line = s.split(":", 1)[1].strip()
            return
        if s.startswith("DALVIK THREADS"):
            match = _DALVIK.fullmatch(s)
            if match is not None:
                proc.declared_threads = int(match.group(1))
                return
        if self.thread is not None or proc.threads:
            self.stats.unknown_lines += 1
        # Lines before the first thread are the process header (build, heap, JIT stats…).

    def _binary_probe(self, number: int) -> None:
        """Fail early on a large binary file instead of scanning all of it."""
        reader = self.reader
        if reader is None or self.anr.processes or reader.bytes_read < _BINARY_PROBE_BYTES:
            return
        bad = self.stats.nul_bytes + self.stats.undecodable_bytes
        if bad * 100 > reader.bytes_read:
            raise InputFileError(self.anr.path, self._not_anr(number), line=number)

    # -- sections --------------------------------------------------------------------

    def _section(self, s: str, number: int) -> None:
        match = _PID.fullmatch(s)
        if match is not None:
            self._close(truncated=True)
            time_text = match.group(2)
            if parse_dump_time(time_text) is None:
                self.stats.bad_dates += 1
            self.proc = ProcessDump(int(match.group(1)), time_text, line=number)
            self.anr.processes.append(self.proc)
            return
        match = _END.fullmatch(s)
        if match is not None:
            if self.proc is None or int(match.group(1)) != self.proc.pid:
                self.stats.mismatched_ends += 1
            self._close(truncated=False)
            return
        match = _OTHER_SECTION.fullmatch(s)
        if match is not None:  # e.g. ``----- Waiting Channels: pid N at … -----``
            self._close(truncated=True)
            self.stats.skipped_sections += 1
            self.skip_end = match.group(1)

    def _skipping(self, s: str, number: int) -> None:
        if not s.startswith("-----"):
            return
        match = _END.fullmatch(s)
        if match is not None and match.group(1) == self.skip_end:
            self.skip_end = None
        elif _PID.fullmatch(s) is not None:
            self.skip_end = None
            self._section(s, number)

    def _close(self, truncated: bool) -> None:
        proc = self.proc
        self.thread = None
        if proc is None:
            return
        self.proc = None
        if truncated:
            proc.truncated = True
            self.stats.truncated_sections += 1
        elif proc.declared_threads is not None and proc.declared_threads != len(proc.threads):
            self.stats.thread_count_mismatch += 1

    def _stars(self, s: str) -> None:
        if s.startswith(_WATCHDOG):
            if self.anr.watchdog is None:
                self.anr.watchdog = s[len(_WATCHDOG) :].strip()
        elif s.startswith("*** GOODBYE"):
            self.anr.goodbye = True
        elif self.thread is not None:
            self.stats.unknown_lines += 1

    # -- threads ---------------------------------------------------------------------

    def _thread_header(self, match: re.Match[str], number: int) -> None:
        assert self.proc is not None
        if self.threads_left <= 0:
            self.stats.dropped_threads += 1
            self.thread = None
            return
        self.threads_left -= 1
        thread = ThreadDump(match.group(1), line=number)
        stats = self.stats
        for token in (match.group(2) or "").split():
            key, eq, value = token.partition("=")
            if eq:
                if key == "prio":
                    thread.prio = _int(value, stats)
                elif key == "tid":
                    thread.tid = _int(value, stats)
                elif key == "sysTid":
                    thread.sys_tid = _int(value, stats)
            elif token == "daemon":
                thread.daemon = True
            elif token[0].isalpha() and token != "attached)":
                thread.state = token
        self.proc.threads.append(thread)
        self.thread = thread

    def _properties(self, thread: ThreadDump, s: str) -> None:
        """``| key=value …``: split on blanks (values hold none), except the
        parenthesised ``schedstat=( run wait slices )``."""
        if s.startswith("| group=") and "Tid=" not in s and "state=" not in s:
            return  # ART's first property line: group, counts, addresses — nothing we keep
        stats = self.stats
        start = s.find("schedstat=(")
        if start >= 0:
            end = s.find(")", start)
            parts = [_int(p, stats) for p in s[start + 11 : end if end >= 0 else None].split()]
            if len(parts) == 3 and None not in parts:
                thread.schedstat = (parts[0] or 0, parts[1] or 0, parts[2] or 0)
            else:
                stats.bad_values += 1
            s = s[:start] + (s[end + 1 :] if end >= 0 else "")
        for token in s[1:].split():
            key, eq, value = token.partition("=")
            if not eq:
                continue
            field = _INT_PROPS.get(key)
            if field is not None:
                setattr(thread, field, _int(value, stats))
            elif key == "cgrp":
                thread.cgrp = value
            elif key == "state":
                thread.sched_state = value

    def _room(self, thread: ThreadDump) -> bool:
        if self.frames_left <= 0 or len(thread.frames) >= MAX_FRAMES_PER_THREAD:
            self.stats.dropped_frames += 1
            return False
        self.frames_left -= 1
        return True

    def _native(self, thread: ThreadDump, s: str) -> None:
        if s[0] == "n":
            s = s[7:].lstrip()  # after "native:"
        parts = s.split(None, 4)
        if (
            len(parts) < 4
            or parts[1] != "pc"
            or parts[0][:1] != "#"
            or not parts[0][1:].isdigit()
            or parts[2].strip(_HEX_DIGITS)
        ):
            self.stats.unknown_lines += 1
            return
        if self.frames_left <= 0 or len(thread.frames) >= MAX_FRAMES_PER_THREAD:
            self.stats.dropped_frames += 1
            return
        self.frames_left -= 1
        rest = parts[4].strip() if len(parts) == 5 else ""
        if rest.endswith(")"):
            build_id = rest.rfind("(BuildId: ")
            if build_id >= 0:
                rest = rest[:build_id].rstrip()
        if rest.startswith("(offset "):
            rest = rest[rest.find(")") + 1 :].strip()
        symbol = rest[1:-1] if rest.startswith("(") and rest.endswith(")") else rest
        thread.frames.append(Frame("native", symbol, parts[3], parts[2]))

    def _kernel(self, thread: ThreadDump, s: str) -> None:
        text = s[7:].strip()
        if not text or text.startswith("("):  # "(couldn't read /proc/…/stack)"
            return
        if self._room(thread):
            thread.frames.append(Frame("kernel", text))

    def _lock(self, thread: ThreadDump, s: str) -> None:
        match = _LOCK.fullmatch(s)
        if match is None:
            self.stats.unknown_lines += 1
            return
        if not self._room(thread):
            return
        text, address, type_name, held_by = match.groups()
        thread.locks.append(
            LockOp(
                _LOCK_KIND[text],
                address or "",
                type_name or "",
                int(held_by) if held_by is not None else None,
                len(thread.frames),
            )
        )


# -- rendering -------------------------------------------------------------------------


def format_anr(anr: AnrFile, rng: np.random.Generator | None = None) -> str:
    """The text of ``anr`` in the ANR trace format; :func:`parse_anr_text` reads it back.

    With ``rng``, the lines the parser does not keep (``obj=``, ``self=``, ``handle=``
    addresses, build lines) are filled with random values, as on a phone.
    """
    out: list[str] = []
    if anr.subject is not None:
        out += [f"Subject: {anr.subject}", ""]
    for proc in anr.processes:
        out.append(f"----- pid {proc.pid} at {proc.time_text} -----")
        if proc.cmd_line is not None:
            out.append(f"Cmd line: {proc.cmd_line}")
        if rng is not None:
            out += [
                "Build fingerprint: 'mqoe/synth/phone:9/PKQ1.180904.001/V10.2.2.0:user/release'",
                "ABI: 'arm64'",
                "Build type: optimized",
                f"Zygote loaded classes={int(rng.integers(4000, 9000))} post zygote classes=512",
            ]
        out.append("")
        if proc.declared_threads is not None:
            out.append(f"DALVIK THREADS ({proc.declared_threads}):")
        for thread in proc.threads:
            out += _thread_lines(thread, rng)
            out.append("")
        if not proc.truncated:
            out += [f"----- end {proc.pid} -----", ""]
    if anr.watchdog is not None:
        out.append(f"{_WATCHDOG} {anr.watchdog}")
    if anr.goodbye:
        out.append("*** GOODBYE!")
    return "\n".join(out) + "\n"


def _hex(rng: np.random.Generator | None, digits: int) -> str:
    value = 0 if rng is None else int(rng.integers(0, 1 << (4 * digits - 1)))
    return f"0x{value:0{digits}x}"


def _thread_lines(t: ThreadDump, rng: np.random.Generator | None) -> list[str]:
    head = f'"{t.name}"' + (" daemon" if t.daemon else "")
    head += f" prio={t.prio}" if t.prio is not None else ""
    if t.tid is not None:
        head += f" tid={t.tid}"
    elif t.sys_tid is not None:
        head += f" sysTid={t.sys_tid}"
    head += f" {t.state}" if t.state else ""
    lines = [head]
    if t.tid is not None:
        lines.append(
            f'  | group="main" sCount=1 ucsCount=0 flags=1 obj={_hex(rng, 8)} self={_hex(rng, 16)}'
        )
    second = [f"sysTid={t.sys_tid}" if t.sys_tid is not None and t.tid is not None else ""]
    second += [f"nice={t.nice}" if t.nice is not None else ""]
    second += [f"cgrp={t.cgrp}" if t.cgrp is not None else ""]
    if any(second):
        lines.append(
            "  | " + " ".join(p for p in second if p) + f" sched=0/0 handle={_hex(rng, 10)}"
        )
    third = [f"state={t.sched_state}" if t.sched_state is not None else ""]
    if t.schedstat is not None:
        third.append("schedstat=( {} {} {} )".format(*t.schedstat))
    for key, value in (("utm", t.utm), ("stm", t.stm), ("core", t.core), ("HZ", t.hz)):
        third.append(f"{key}={value}" if value is not None else "")
    if any(third):
        lines.append("  | " + " ".join(p for p in third if p))
    locks = sorted(t.locks, key=lambda lock: lock.after_frame)
    k = 0
    native = 0
    for i in range(len(t.frames) + 1):
        while k < len(locks) and locks[k].after_frame <= i:
            lines.append("  " + _lock_line(locks[k]))
            k += 1
        if i == len(t.frames):
            break
        frame = t.frames[i]
        if frame.kind == "java":
            lines.append(f"  at {frame.function}({frame.location})")
        elif frame.kind == "native":
            symbol = f" ({frame.function})" if frame.function else ""
            prefix = "native: " if t.tid is not None else ""
            lines.append(f"  {prefix}#{native:02d} pc {frame.pc}  {frame.location}{symbol}")
            native += 1
        else:
            lines.append(f"  kernel: {frame.function}")
    return lines


def _lock_line(lock: LockOp) -> str:
    target = f"<{lock.address}> (a {lock.type_name})" if lock.address else "an unknown object"
    held = f" held by thread {lock.held_by}" if lock.held_by is not None else ""
    return f"- {LOCK_TEXT[lock.kind]} {target}{held}"
