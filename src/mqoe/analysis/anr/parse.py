"""Streaming parser for ANR trace files (``/data/anr/…``, as ART writes them) and xCrash
ANR tombstones. What each line means is decided by its first characters after stripping
blanks (see the package docstring for the rules); files are read by
:mod:`mqoe.analysis.anr.read`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from mqoe.analysis.anr.read import _Reader


MAX_LINE_CHARS = 64 * 1024  # a stack line is < 1 KiB; anything this long is not one
MAX_FRAMES_PER_THREAD = 1024  # ART prints at most a few hundred; the top ones matter
MAX_FRAMES_PER_FILE = 500_000  # bounds memory on a hostile file (≈ 100 MB of frames)
MAX_THREADS_PER_FILE = 100_000
_BINARY_PROBE_CHARS = 1 << 20  # give up early on binary input after this much text

_PID = re.compile(r"-----\s+pid\s+(\d{1,10})\s+at\s+(.*?)\s*-----")
_END = re.compile(r"-----\s+end\s+(\d{1,10})\s*-----")
# debuggerd_client's fallback when a stack dump fails or times out (and, since Android 11,
# a companion of every Java dump): /proc/PID/task/TID/wchan of each thread.
_WCHAN = re.compile(r"-----\s+Waiting Channels:\s+pid\s+(\d{1,10})\s+at\s+(.*?)\s*-----")
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
# Remarks ART and debuggerd write inside a thread instead of (or besides) frames:
# "(no managed stack frames)", "(couldn't read …)", libunwindstack's "NOTE: Function
# names … missing", debuggerd's "Unwind failed: tid = N", ART's "Not able to dump stack
# of thread that isn't suspended". Not frames, and not unknown lines either.
_REMARKS = ("NOTE:", "Unwind failed", "Not able to dump stack")

# xCrash (iqiyi/xCrash, xc_trace.c and TombstoneManager): a "*** *** ***" head line,
# "Key: 'value'" lines, "pid: N[, tid: T, name: X]  >>> PROCESS <<<", then ART's
# DumpForSigQuit output between XCC_UTIL_THREAD_SEP ("--- --- ---…") and
# XCC_UTIL_THREAD_END ("+++ +++ +++…"); logcat, open files, memory info and the app's own
# sections follow and are not read.
_XCRASH_PID = re.compile(r"pid:\s*(\d{1,10})\b[^>]*(?:>>>\s*(.*?)\s*<<<)?")
_XCRASH_SEP = "--- --- ---"
_XCRASH_END = "+++ +++ +++"


def _quoted(text: str) -> str:
    """The value of an xCrash ``Key: 'value'`` line."""
    value = text.split(":", 1)[1].strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == "'" else value


def _int(text: str, stats: ParseStats) -> int | None:
    if len(text) > 18:  # beyond int64: not a counter from a phone
        stats.bad_values += 1
        return None
    try:
        return int(text)
    except ValueError:
        stats.bad_values += 1
        return None


class _EndOfDump(Exception):
    """xCrash's ``+++ +++ +++`` line: the rest of the tombstone is not a thread dump."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


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
        self.crash_head = False  # a "*** *** ***" tombstone head line before any section
        self.xcrash: dict[str, str] | None = None  # header values of an xCrash tombstone
        self.xcrash_proc: ProcessDump | None = None  # its thread dump, once opened

    # -- the line loop ---------------------------------------------------------------

    def run(self, lines: Iterable[str | None]) -> AnrFile:
        stats = self.stats
        number = 0
        try:
            number = self._loop(lines)
        except _EndOfDump as end:
            number = end.line
        stats.lines = number
        self._close(truncated=True)
        self._drop_twins()
        if not self.anr.processes:
            raise InputFileError(self.anr.path, self._not_anr(number))
        return self.anr

    def _loop(self, lines: Iterable[str | None]) -> int:
        stats = self.stats
        number = 0
        for raw in lines:
            number += 1
            if raw is None or len(raw) > MAX_LINE_CHARS:
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
        return number

    def _not_anr(self, lines: int) -> str:
        stats = self.stats
        if stats.nul_bytes or stats.undecodable_bytes:
            return (
                f"binary data ({stats.nul_bytes} NUL, {stats.undecodable_bytes} undecodable "
                "bytes), not an ANR trace file: no '----- pid N at DATE -----' section"
            )
        if self.xcrash is not None:
            return (
                f"xCrash tombstone without its thread dump (no '{_XCRASH_SEP} …' line in "
                f"{lines} lines): not an ANR trace"
            )
        if self.crash_head:
            return (
                "a crash tombstone, not an ANR trace file (no '----- pid N at DATE -----' section)"
            )
        return f"no '----- pid N at DATE -----' section in {lines} lines: not an ANR trace file"

    def _other(self, s: str, number: int) -> None:
        proc = self.proc
        if proc is None:
            self._outside(s, number)
            return
        if proc.waiting_channels and s.startswith(("sysTid=", "(sysTid=")):
            self._wchan(proc, s, number)
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
        if proc is self.xcrash_proc and s.startswith(_XCRASH_END):
            self._close(truncated=False)
            raise _EndOfDump(number)
        if self.thread is not None and (s[0] == "(" or s.startswith(_REMARKS)):
            return
        if self.thread is not None or proc.threads:
            self.stats.unknown_lines += 1
        # Lines before the first thread are the process header (build, heap, JIT stats…).

    def _outside(self, s: str, number: int) -> None:
        """A line outside any process section: a subject, an xCrash header, noise."""
        if self.xcrash is not None:
            if not self.anr.processes:
                self._xcrash_header(s, number)
            elif s.startswith(_XCRASH_END):  # after a copied "----- end N -----" line
                raise _EndOfDump(number)
        elif s.startswith("Tombstone maker:") and not self.anr.processes:
            self.xcrash = {}
            self.anr.source = "xcrash_tombstone"
        if s.startswith("Subject:") and self.anr.subject is None:
            self.anr.subject = s[8:].strip()
        self._binary_probe(number)

    def _xcrash_header(self, s: str, number: int) -> None:
        header = self.xcrash
        assert header is not None
        if s.startswith("Crash type:"):
            kind = _quoted(s)
            if kind != "anr":
                raise InputFileError(
                    self.anr.path,
                    f"xCrash tombstone of a {kind[:40]!r} crash, not an ANR "
                    "(only Crash type 'anr' holds a thread dump to analyse)",
                    line=number,
                )
        elif s.startswith("Crash time:"):
            header["time"] = _quoted(s).replace("T", " ", 1)
        elif s.startswith("pid:"):
            match = _XCRASH_PID.match(s)
            if match is not None:
                header["pid"] = match.group(1)
                header["process"] = match.group(2) or ""
        elif s.startswith(_XCRASH_SEP):
            pid = int(header.get("pid", "0"))
            time_text = header.get("time", "")
            if parse_dump_time(time_text) is None:
                self.stats.bad_dates += 1
            self.proc = self.xcrash_proc = ProcessDump(pid, time_text, line=number)
            self.anr.processes.append(self.proc)

    def _binary_probe(self, number: int) -> None:
        """Fail early on a large binary file instead of scanning all of it."""
        reader = self.reader
        if reader is None or self.anr.processes or reader.chars_read < _BINARY_PROBE_CHARS:
            return
        bad = self.stats.nul_bytes + self.stats.undecodable_bytes
        if bad * 100 > reader.chars_read:
            raise InputFileError(self.anr.path, self._not_anr(number), line=number)

    # -- sections --------------------------------------------------------------------

    def _section(self, s: str, number: int) -> None:
        match = _PID.fullmatch(s)
        if match is not None:
            self._open(match, number, waiting_channels=False)
            return
        match = _END.fullmatch(s)
        if match is not None:
            if self.proc is None or int(match.group(1)) != self.proc.pid:
                self.stats.mismatched_ends += 1
            self._close(truncated=False)
            return
        match = _WCHAN.fullmatch(s)
        if match is not None:
            self._open(match, number, waiting_channels=True)
            return
        match = _OTHER_SECTION.fullmatch(s)
        if match is not None:  # e.g. a vendor's ``----- … pid N … -----`` section
            self._close(truncated=True)
            self.stats.skipped_sections += 1
            self.skip_end = match.group(1)

    def _open(self, match: re.Match[str], number: int, waiting_channels: bool) -> None:
        proc = self.proc
        # xCrash's Java handler copies the app's section of /data/anr/traces.txt, pid line
        # included: that line, not the tombstone header, then opens the dump.
        replace = False
        if proc is not None and proc is self.xcrash_proc and not proc.threads:
            self.anr.processes.remove(proc)
            self.proc = None
            replace = True
        self._close(truncated=True)
        time_text = match.group(2)
        if parse_dump_time(time_text) is None:
            self.stats.bad_dates += 1
        self.proc = ProcessDump(
            int(match.group(1)), time_text, line=number, waiting_channels=waiting_channels
        )
        self.anr.processes.append(self.proc)
        if replace:
            self.xcrash_proc = self.proc

    def _skipping(self, s: str, number: int) -> None:
        if not s.startswith("-----"):
            return
        match = _END.fullmatch(s)
        if match is not None and match.group(1) == self.skip_end:
            self.skip_end = None
        elif _PID.fullmatch(s) is not None or _WCHAN.fullmatch(s) is not None:
            self.skip_end = None
            self._section(s, number)

    def _close(self, truncated: bool) -> None:
        proc = self.proc
        self.thread = None
        if proc is None:
            return
        self.proc = None
        if proc is self.xcrash_proc and proc.cmd_line is None and self.xcrash:
            proc.cmd_line = self.xcrash.get("process") or None  # ">>> PROCESS <<<"
        if truncated:
            proc.truncated = True
            self.stats.truncated_sections += 1
        elif proc.declared_threads is not None:
            # ART's "DALVIK THREADS (N)" is its thread list's size: attached threads only;
            # the "(not attached)" native threads are dumped after them.
            attached = sum(t.tid is not None for t in proc.threads)
            if proc.declared_threads != attached:
                self.stats.thread_count_mismatch += 1

    def _drop_twins(self) -> None:
        """Drop Waiting Channels sections of processes the file also holds stacks of
        (recent releases write one next to each dump, before or after it), and repeats
        of one such section."""
        kept: list[ProcessDump] = []
        stacked = {p.pid for p in self.anr.processes if not p.waiting_channels}
        seen: set[tuple[int, str | None]] = set()
        for proc in self.anr.processes:
            if proc.waiting_channels:
                key = (proc.pid, proc.cmd_line)
                if proc.pid in stacked or key in seen:
                    self.stats.skipped_sections += 1
                    continue
                seen.add(key)
            kept.append(proc)
        self.anr.processes = kept

    def _stars(self, s: str) -> None:
        if s.startswith(_WATCHDOG):
            if self.anr.watchdog is None:
                self.anr.watchdog = s[len(_WATCHDOG) :].strip()
        elif s.startswith("*** GOODBYE"):
            self.anr.goodbye = True
        elif s.startswith("*** ***") and not self.anr.processes:
            self.crash_head = True
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
            if token[0] == "(":
                break  # ART's notes: "(not attached)", "(still starting up)"
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
            elif not thread.state and token[0].isalpha():
                thread.state = token  # the first word after the ids; later words are notes
        self.proc.threads.append(thread)
        self.thread = thread

    def _wchan(self, proc: ProcessDump, s: str, number: int) -> None:
        """``sysTid=N [state=S] WCHAN``: one thread of a Waiting Channels section."""
        if self.threads_left <= 0:
            self.stats.dropped_threads += 1
            return
        head, _, tail = s.lstrip("(").partition(" ")
        sys_tid = _int(head[7:].rstrip(")"), self.stats)  # after "sysTid="
        if sys_tid is None:
            return
        self.threads_left -= 1
        state: str | None = None
        words: list[str] = []
        for token in tail.split():
            key, eq, value = token.partition("=")
            if eq and key == "state":
                state = value
            elif eq and key == "wchan":
                words.append(value)
            else:
                words.append(token)
        thread = ThreadDump(
            f"sysTid={sys_tid}",
            sys_tid=sys_tid,
            sched_state=state,
            wchan=" ".join(words) or None,
            line=number,
        )
        proc.threads.append(thread)

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
            if s[:1] == "(":  # "(backtrace::Unwind failed …)", "(backtrace unavailable)"
                return
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
