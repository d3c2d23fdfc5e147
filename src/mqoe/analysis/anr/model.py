"""What an ANR trace file holds once parsed: processes, threads, frames and lock lines.

These are plain values (no behaviour beyond derived properties) shared by the parser,
the renderer, the wait-for graph and the generator, so that ``parse(render(x)) == x``
can be tested field by field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

FrameKind = str  # "java" | "native" | "kernel"
LockKind = str  # "waiting_to_lock" | "locked" | "waiting_on" | "sleeping_on"

LOCK_KINDS: tuple[LockKind, ...] = ("waiting_to_lock", "locked", "waiting_on", "sleeping_on")
LOCK_TEXT: dict[LockKind, str] = {
    "waiting_to_lock": "waiting to lock",
    "locked": "locked",
    "waiting_on": "waiting on",
    "sleeping_on": "sleeping on",
}

# Both date styles of ``----- pid N at DATE -----``: Android 11+ writes nanoseconds and a
# UTC offset (``2024-03-18 14:02:11.123456789+0800``), older releases ``YYYY-MM-DD HH:MM:SS``.
_DATE = re.compile(
    r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:\s*([+-])(\d\d):?(\d\d))?"
)


def parse_dump_time(text: str) -> datetime | None:
    """The time of a process dump header, or None when ``text`` is not a valid date.

    Fractions finer than a microsecond are truncated; an offset gives an aware datetime,
    no offset a naive one (old files hold the phone's local time).
    """
    match = _DATE.fullmatch(text.strip())
    if match is None:
        return None
    y, mo, d, h, mi, s, frac, sign, oh, om = match.groups()
    micro = int((frac or "0").ljust(6, "0")[:6])
    tz = None
    if sign is not None:
        minutes = int(oh) * 60 + int(om)
        if minutes >= 24 * 60:
            return None
        tz = timezone(timedelta(minutes=minutes if sign == "+" else -minutes))
    try:
        return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micro, tzinfo=tz)
    except ValueError:
        return None


class Frame(NamedTuple):
    """One stack frame, as written in the file.

    ``java``: ``function`` is ``pkg.Class.method``, ``location`` the text in parentheses
    (``Repo.java:88``, ``Native method``). ``native``: ``function`` is the symbol with its
    offset (``fsync+8``, may be empty), ``location`` the library path, ``pc`` the hex pc.
    ``kernel``: ``function`` is the text after ``kernel:`` (``ext4_sync_file+0x2a4/0x334``).
    """

    kind: FrameKind
    function: str
    location: str = ""
    pc: str = ""


class LockOp(NamedTuple):
    """A ``- waiting to lock / locked / waiting on / sleeping on`` line of a thread.

    ``address`` is ``0x…`` (empty for "an unknown object"), ``held_by`` the ART thread id
    named by ``held by thread N`` (None if absent), ``after_frame`` the number of frames
    of the thread written before this line (the line annotates frame ``after_frame - 1``).
    """

    kind: LockKind
    address: str
    type_name: str
    held_by: int | None
    after_frame: int


@dataclass(slots=True)
class ThreadDump:
    """One thread of a process dump (header, ``|`` property lines, frames, lock lines).

    ``tid`` is ART's thread id (``tid=N``, None for threads not attached to the runtime,
    written as ``"name" sysTid=N``); ``sys_tid`` the kernel thread id. ``state`` is the
    runtime state of the header (``Blocked``, ``Native``…; empty when absent),
    ``sched_state`` the kernel letter of ``state=`` (``R``, ``S``, ``D``…). ``utm``/``stm``
    are user/system CPU time in clock ticks of ``hz`` per second; ``schedstat`` is
    (run ns, wait ns, timeslices). ``wchan`` is the kernel function the thread sleeps in,
    from a ``----- Waiting Channels`` section (``0`` when it was running; None elsewhere);
    such threads have no name in the file and are named ``sysTid=N``.
    """

    name: str
    tid: int | None = None
    state: str = ""
    daemon: bool = False
    prio: int | None = None
    sys_tid: int | None = None
    nice: int | None = None
    cgrp: str | None = None
    sched_state: str | None = None
    schedstat: tuple[int, int, int] | None = None
    utm: int | None = None
    stm: int | None = None
    core: int | None = None
    hz: int | None = None
    frames: list[Frame] = field(default_factory=list)
    locks: list[LockOp] = field(default_factory=list)
    wchan: str | None = None
    line: int = field(default=0, compare=False)  # header line number in the file

    @property
    def has_stack(self) -> bool:
        """Whether the dump holds the thread's user-space stack (a Java or native frame).

        Kernel frames alone do not count: they are what a dump shows of a thread whose
        stack could not be unwound (a frozen process, a failed or timed-out dump).
        """
        return any(f.kind != "kernel" for f in self.frames)

    @property
    def cpu_s(self) -> float | None:
        """CPU time used (user + system) in seconds: from utm/stm, else schedstat's run ns."""
        if self.utm is not None and self.stm is not None:
            return (self.utm + self.stm) / float(self.hz or 100)
        if self.schedstat is not None:
            return self.schedstat[0] / 1e9
        return None


@dataclass(slots=True)
class ProcessDump:
    """One ``----- pid N at DATE -----`` … ``----- end N -----`` section, or the ART thread
    dump of an xCrash ANR tombstone, or (``waiting_channels``) a ``----- Waiting Channels:
    pid N at DATE -----`` section: debuggerd's fallback when the stack dump failed, one
    thread per ``sysTid=N [state=S] WCHAN`` line and no stacks."""

    pid: int
    time_text: str
    cmd_line: str | None = None
    declared_threads: int | None = None  # the N of ``DALVIK THREADS (N):``
    threads: list[ThreadDump] = field(default_factory=list)
    truncated: bool = False  # no ``----- end N -----`` before the next section or EOF
    waiting_channels: bool = False
    line: int = field(default=0, compare=False)

    @property
    def time(self) -> datetime | None:
        """The dump time (see :func:`parse_dump_time`)."""
        return parse_dump_time(self.time_text)

    @property
    def name(self) -> str:
        """The process name: the first word of ``Cmd line:`` (``pid N`` when absent)."""
        words = (self.cmd_line or "").split()
        return words[0] if words else f"pid {self.pid}"

    @property
    def threads_without_stack(self) -> int:
        """Threads whose user-space stack is not in the dump (see ThreadDump.has_stack)."""
        return sum(not t.has_stack for t in self.threads)


@dataclass(slots=True)
class ParseStats:
    """What the parser forgave in one file (or many, after :meth:`add`), by kind."""

    lines: int = 0
    unknown_lines: int = 0  # lines inside a process section that match nothing known
    overlong_lines: int = 0  # longer than the line cap: skipped
    truncated_sections: int = 0  # a process without ``----- end N -----``
    mismatched_ends: int = 0  # ``----- end M -----`` closing pid N ≠ M
    bad_dates: int = 0
    bad_values: int = 0  # a ``|`` property or header number that is not an integer
    dropped_frames: int = 0  # beyond the per-thread / per-file caps
    dropped_threads: int = 0  # beyond the per-file cap
    skipped_sections: int = 0  # redundant Waiting Channels twins, other ``----- pid N -----``s
    thread_count_mismatch: int = 0  # ``DALVIK THREADS (N)`` ≠ threads found
    undecodable_bytes: int = 0  # bytes that were not UTF-8 (replaced)
    nul_bytes: int = 0

    def add(self, other: ParseStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def warnings(self) -> dict[str, int]:
        """The nonzero counters except ``lines``."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "lines" and getattr(self, f.name)
        }


@dataclass(slots=True)
class AnrFile:
    """One ANR trace file: one event. The app is the first process; services follow.

    ``source`` is the container: ``anr_trace`` (``/data/anr/…``, as ActivityManager and
    debuggerd write it) or ``xcrash_tombstone`` (an xCrash ANR tombstone, whose one
    process is the ART thread dump between its ``--- --- ---`` and ``+++ +++ +++`` lines).
    """

    path: str
    processes: list[ProcessDump] = field(default_factory=list)
    source: str = "anr_trace"
    subject: str | None = None  # ``Subject: Input dispatching timed out …`` (Android 11+)
    watchdog: str | None = None  # text after ``*** WATCHDOG KILLING SYSTEM PROCESS:``
    goodbye: bool = False  # ``*** GOODBYE!`` seen
    stats: ParseStats = field(default_factory=ParseStats, compare=False)

    @property
    def app(self) -> ProcessDump | None:
        return self.processes[0] if self.processes else None

    @property
    def stacks_missing(self) -> bool:
        """No thread of the app (the first process) has a user-space stack in the dump:
        waiting channels, thread headers or kernel frames only, or no threads at all."""
        app = self.app
        return app is not None and not any(t.has_stack for t in app.threads)
