"""The line loop (:class:`_Parser`) and the entry points: :func:`load_systrace` (a
file, any container :mod:`mqoe.analysis.systrace.read` finds),
:func:`parse_systrace_text` and :func:`parse_systrace_lines`."""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from mqoe.analysis.systrace.clusters import cluster_roles
from mqoe.analysis.systrace.model import MAX_TASKS, UNKNOWN_COMM, ParseStats, SystraceTrace
from mqoe.analysis.systrace.read import MAX_LINE_CHARS, Lines, TraceFile, text_lines, trace_lines
from mqoe.analysis.systrace.sched import _Sched
from mqoe.analysis.systrace.tables import _Tables
from mqoe.analysis.textio import describe_os_error
from mqoe.errors import InputFileError

_HOUSEKEEPING_LINES = 1 << 16  # frames are finished and histories pruned this often
_TASK_LOOKS = 64  # lines of a tid whose task columns may still name it (then sched events do)

_HEADER = re.compile(
    r"\s*(.+?)-(\d{1,10})\s+(?:\(\s*(\d{1,10}|-+)\)\s+)?\[(\d{1,5})\]\s+(?:\S{4,5}\s+)?"
    r"(\d{1,9})\.(\d{1,9}):\s+(\w{1,64}):\s?(.*)"
)
# The same line without an ``event:`` part: the function tracer's ``func <-caller``.
_FUNCTION_LINE = re.compile(
    r"\s*(.+?)-(\d{1,10})\s+(?:\(\s*(\d{1,10}|-+)\)\s+)?\[(\d{1,5})\]\s+(?:\S{4,5}\s+)?"
    r"(\d{1,9})\.(\d{1,9}):\s+[\w.]+\s+<-\S"
)
_LOST = re.compile(r"\[LOST (\d{1,12}) EVENTS\]")
_LOOKS_LIKE_EVENT = re.compile(r"\S.*-\d+\s+(?:\([^)]{0,16}\)\s+)?\[\d+\]")
_FRAC_SCALE = (0, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1_000, 100, 10, 1)


class _Parser(_Tables, _Sched):
    """Feeds on trace lines in file order; :meth:`finish` builds the tables."""

    def run(self, lines: Lines, tick: Callable[[], None]) -> None:
        # The hot loop: one regex per line, counters in locals, CPUs keyed by their text.
        match = _HEADER.match
        stats = self.stats
        cpu_last = self.cpu_last
        skipped = stats.skipped_events
        settled = self.settled
        scale = _FRAC_SCALE
        mask = _HOUSEKEEPING_LINES - 1
        n = events = backwards = 0
        for lineno, line in lines:
            n += 1
            if not n & mask:
                tick()
                self._housekeeping(final=False)
            if line is None:
                stats.overlong_lines += 1
                self._bad(lineno, f"a line over {MAX_LINE_CHARS} characters")
                continue
            m = match(line)
            if m is None:
                self._other_line(line, lineno)
                continue
            comm, tid_s, tgid_s, cpu_s, sec, frac, event, body = m.groups()
            if tid_s not in settled:
                self._task(tid_s, comm, tgid_s)
            t = int(sec) * 1_000_000_000 + int(frac) * scale[len(frac)]
            events += 1
            if t > self.t_last:
                if self.t_first < 0:
                    self.t_first = t
                self.t_last = t
            last = cpu_last.get(cpu_s)
            if last is not None and t < last:
                backwards += 1
            cpu_last[cpu_s] = t
            if event == "sched_switch":
                self._switch(int(cpu_s), t, body, lineno)
            elif event == "tracing_mark_write" or event == "0":
                # Kernels before 3.x (Android 4.x) print a trace_marker write as "0: …".
                self._mark(int(tid_s), comm, t, body, lineno)
            elif event == "sched_wakeup" or event == "sched_waking" or event == "sched_wakeup_new":
                if event == "sched_waking":
                    self.waking_seen = True
                    self._wakeup(int(tid_s), t, body, lineno, True)
                else:
                    self._wakeup(int(tid_s), t, body, lineno, not self.waking_seen)
            elif event in skipped:
                skipped[event] += 1
            else:
                self._skip_event(event)
        stats.lines = n
        stats.events += events
        stats.backwards_ts += backwards

    def _task(self, tid_s: str, comm: str, tgid_s: str | None) -> None:
        """Remember the name and tgid a line's task columns give for its tid (the first
        known ones), until they are known or the tid has been seen ``_TASK_LOOKS`` times."""
        tgid = tgid_s if tgid_s is not None and tgid_s[0] != "-" else None
        old = self.tasks.get(tid_s)
        looks = 1
        if old is not None:
            comm = old[0] if old[0] != UNKNOWN_COMM else comm
            tgid = old[1] if old[1] is not None else tgid
            looks = old[2] + 1
        elif len(self.tasks) >= MAX_TASKS:
            return  # more tids than a phone's pid_max: a corrupt file; names stay unknown
        self.tasks[tid_s] = (comm, tgid, looks)
        if (comm != UNKNOWN_COMM and (tgid is not None or tgid_s is None)) or looks >= _TASK_LOOKS:
            self.settled.add(tid_s)

    def _other_line(self, line: str, lineno: int) -> None:
        stripped = line.strip()
        stats = self.stats
        if not stripped:
            return
        if stripped[0] == "#":
            stats.comment_lines += 1
        elif _FUNCTION_LINE.match(line):
            self._skip_event("(function)")
        elif _LOOKS_LIKE_EVENT.match(stripped):
            self._bad(lineno, "an ftrace event line (<task>-<tid> [<cpu>] <seconds>: <event>: …)")
        else:
            lost = _LOST.search(stripped)
            if lost is not None:
                stats.lost_events += int(lost.group(1))
            elif "\x00" in stripped or "\ufffd" in stripped:
                stats.binary_lines += 1
            else:
                stats.other_lines += 1


def _parse(
    lines: Lines,
    source: str,
    stats: ParseStats,
    clusters: Mapping[int, str] | None,
    skip_bad_lines: bool,
    tick: Callable[[], None],
) -> SystraceTrace:
    parser = _Parser(source, stats, skip_bad_lines, cluster_roles(clusters))
    parser.run(lines, tick)
    if stats.events == 0:
        hint = ""
        if stats.html_json_blocks and not (stats.html_text_blocks or stats.html_js_blocks):
            hint = " (this HTML holds only JSON trace data; only text ftrace is read)"
        elif stats.json_input:
            hint = " (this looks like a JSON trace; only text ftrace is read)"
        elif stats.binary_lines:
            hint = " (the file looks binary: a Perfetto protobuf trace needs `traceconv systrace`)"
        elif stats.bad_lines:
            hint = f" ({stats.bad_lines} bad lines were skipped)"
        raise InputFileError(
            source,
            "no ftrace events found: expected text lines like "
            "'<task>-<tid> [<cpu>] <seconds>: sched_switch: …' (atrace/systrace text or "
            "HTML; convert binary Perfetto traces with `traceconv systrace`)" + hint,
        )
    return parser.finish()


def parse_systrace_text(
    text: str,
    *,
    source: str = "<text>",
    clusters: Mapping[int, str] | None = None,
    skip_bad_lines: bool = False,
) -> SystraceTrace:
    """Parse trace text held in memory (see :func:`load_systrace`)."""
    stats = ParseStats()
    lines = text_lines(text, stats, source)
    return _parse(lines, source, stats, clusters, skip_bad_lines, lambda: None)


def parse_systrace_lines(
    lines: Iterable[str],
    *,
    source: str = "<lines>",
    clusters: Mapping[int, str] | None = None,
    skip_bad_lines: bool = False,
) -> SystraceTrace:
    """Parse trace lines from any iterable of text (a pipe from ``adb shell atrace``, an
    open text file), streaming: containers are sniffed as in :func:`load_systrace`;
    line ends are dropped; a line over ``MAX_LINE_CHARS`` is a bad line."""
    stats = ParseStats()

    def bare() -> Iterator[str | None]:
        for line in lines:
            line = line.rstrip("\r\n")
            yield line if len(line) <= MAX_LINE_CHARS else None

    return _parse(trace_lines(bare(), stats, source), source, stats, clusters,
                  skip_bad_lines, lambda: None)  # fmt: skip


def load_systrace(
    path: str | Path,
    *,
    clusters: Mapping[int, str] | None = None,
    skip_bad_lines: bool = False,
    progress: Callable[[float], None] | None = None,
) -> SystraceTrace:
    """Parse one capture, streaming it: ftrace/atrace text (any encoding and line end),
    gzip, ``atrace -z`` or a systrace HTML report (see :mod:`mqoe.analysis.systrace.read`).

    ``clusters`` maps CPU → cluster name for the LITTLE-saturation measure;
    ``progress`` is called with the fraction of the file read. Raises
    :class:`InputFileError` (file:line) on bad input and for unreadable paths.
    """
    path = Path(path)
    stats = ParseStats()
    try:
        trace_file = TraceFile(path, stats)
    except (EOFError, zlib.error) as exc:
        raise InputFileError(path, f"corrupt or truncated compressed data ({exc})") from None

    def tick() -> None:
        if progress is not None:
            progress(trace_file.fraction_read())

    try:
        return _parse(trace_file.lines, str(path), stats, clusters, skip_bad_lines, tick)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputFileError(path, f"corrupt or truncated compressed data ({exc})") from None
    except OSError as exc:
        raise InputFileError(path, describe_os_error(exc)) from None
    finally:
        trace_file.close()
