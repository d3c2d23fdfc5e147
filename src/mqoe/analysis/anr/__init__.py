"""ANR trace files (``/data/anr/…``) and xCrash ANR tombstones: parse, build wait-for
graphs, find critical threads, cluster events by root cause and fit Zipf's law to events
per app (the root-cause pipeline of the flash-aging ANR study; format as ART writes it).

Modules: :mod:`.model` (parsed values), :mod:`.read` (files, many files),
:mod:`.parse` (streaming parser), :mod:`.render` (renderers), :mod:`.graph` (wait-for
graph, critical threads), :mod:`.features` (normalisation, feature vectors, similarity),
:mod:`.cluster` (exact and fast clustering), :mod:`.events` (one event's summary and
family), :mod:`.report` (cluster report). The Zipf fit is :mod:`mqoe.metrics.zipf`;
synthetic files come from :mod:`mqoe.generators.anr`.

File format accepted
--------------------
Text read through :mod:`mqoe.analysis.textio`: UTF-8 (undecodable bytes are replaced and
counted), UTF-8 with a BOM, UTF-16 with or without a BOM, gzip; LF, CRLF, CR or CR CR LF
line ends. Lines are stripped of surrounding blanks, then:

* ``----- pid N at DATE -----`` opens a process section, ``----- end N -----`` closes it.
  DATE is ``YYYY-MM-DD HH:MM:SS`` with an optional ``.fraction`` (up to ns) and UTC
  offset (``+0800``); an unreadable date is kept as text and counted (``bad_dates``).
  A section without its end line (next section or end of file) is kept and counted
  (``truncated_sections``); an end line with another pid is counted
  (``mismatched_ends``).
* ``----- Waiting Channels: pid N at DATE -----`` (debuggerd_client's fallback when a
  stack dump fails or times out, and a companion of every Java dump since Android 11)
  holds one ``sysTid=N [state=S] WCHAN`` line per thread: a process with
  ``waiting_channels`` set, whose threads are named ``sysTid=N`` and have no frames. A
  section of a pid the file also holds stacks of (before or after it), or a repeat of
  the same pid and command line, is skipped and counted (``skipped_sections``), as are
  other ``----- … pid N … -----`` sections (up to their ``----- end N -----``). Lines
  such as ActivityManager's ``----- dumping pid: N at UPTIME`` are ignored.
* Inside a section, before the threads: ``Cmd line: NAME`` (also ``Cmdline:``),
  ``DALVIK THREADS (N):`` (ART's count of *attached* threads, checked against the
  threads with a ``tid=``; a mismatch is counted); other header lines (build, heap, JIT
  statistics) are ignored.
* A thread header ``"NAME" [daemon] [prio=P] [tid=T] [sysTid=S] STATE`` (any order; the
  state is the first bare word, notes in parentheses such as ``(not attached)`` or
  ``(still starting up)`` end the header; native threads are ``"NAME" sysTid=S``) starts
  a thread; a blank line ends it. Within a thread:
  ``| key=value …`` property lines (``sysTid nice cgrp state schedstat=( run wait n )
  utm stm core HZ`` kept, others ignored; a non-integer value is counted in
  ``bad_values``); ``at FUNCTION(LOCATION)`` Java frames; ``native: #NN pc HEX PATH
  (SYMBOL+OFF)`` or ``#NN pc …`` native frames (``(BuildId: …)``/``(offset …)`` dropped);
  ``kernel: FN+0xA/0xB`` kernel frames; ``- waiting to lock|locked|waiting on|sleeping
  on <0xADDR> (a TYPE) [held by thread N | held by tid=N …]`` or ``… an unknown object``.
  ART's and debuggerd's remarks (``(no managed stack frames)``, ``native: (backtrace …
  failed)``, ``NOTE: …``, ``Unwind failed: …``) are ignored; any other line inside a
  thread is skipped and counted (``unknown_lines``).
* Anywhere: ``*** WATCHDOG KILLING SYSTEM PROCESS: MESSAGE`` and ``*** GOODBYE!``; before
  the first section, ``Subject: …``.
* An xCrash tombstone (``Tombstone maker: '…'`` after its ``*** *** ***`` head line,
  ``source == "xcrash_tombstone"``) is one process: its pid and name from the header's
  ``pid: N[, tid: T, name: X]  >>> PROCESS <<<`` line (the name when the dump has no
  ``Cmd line:``), its time from ``Crash time: 'YYYY-MM-DDTHH:MM:SS.mmm+ZZZZ'``, its
  threads from the ART dump between the ``--- --- ---`` and ``+++ +++ +++`` lines, read
  by the rules above (a ``----- pid`` line copied inside it takes over). Reading stops at
  ``+++ +++ +++``: logcat, open files, memory info and the app's own sections are not
  part of the dump. ``Crash type:`` other than ``'anr'`` is an error at that line.
* Lines longer than 64 Ki characters are skipped and counted (``overlong_lines``); at
  most 1,024 frames per thread, 500,000 frames and lock lines per file and 100,000
  threads per file are kept (the rest counted), so memory is bounded on any input.

A file with no process is an error (:class:`~mqoe.errors.InputFileError`: "not an ANR
trace file", "binary data" when it held NUL or undecodable bytes — a large binary file is
rejected after its first MiB —, "a crash tombstone" for debuggerd's crash reports, or an
xCrash tombstone without its dump). One file is one event; its first process is the app
(services follow); see :mod:`.graph` for the blocked thread in watchdog kills.

Stacks missing
--------------
A thread *has a stack* when the dump holds a Java or native frame of it (kernel frames
alone do not count). ``AnrFile.stacks_missing`` says no thread of the app has one — a
Waiting Channels fallback, a frozen process, a failed dump — and the report counts the
app's ``threads_without_stack``; such events are of family ``unknown`` unless kernel
frames or the wait channel show a sync or memory stall.
"""

from mqoe.analysis.anr.cluster import Clustering, cluster_events
from mqoe.analysis.anr.events import FAMILIES, EventSummary, family_of, summarize
from mqoe.analysis.anr.features import (
    GENERIC_KINDS,
    NORMALISATION_RULES,
    SPECIFIC_KINDS,
    Features,
    event_features,
    normalise_frame,
    similarity,
)
from mqoe.analysis.anr.graph import CriticalPath, WaitEdge, WaitForGraph, blocked_thread
from mqoe.analysis.anr.model import (
    AnrFile,
    Frame,
    LockOp,
    ParseStats,
    ProcessDump,
    ThreadDump,
    parse_dump_time,
)
from mqoe.analysis.anr.read import LoadResult, load_events, parse_anr_file, parse_anr_text
from mqoe.analysis.anr.render import format_anr, format_xcrash
from mqoe.analysis.anr.report import AnrReport, analyze
from mqoe.metrics.zipf import ZipfFit, fit_zipf

__all__ = [
    "FAMILIES",
    "GENERIC_KINDS",
    "NORMALISATION_RULES",
    "SPECIFIC_KINDS",
    "AnrFile",
    "AnrReport",
    "Clustering",
    "CriticalPath",
    "EventSummary",
    "Features",
    "Frame",
    "LoadResult",
    "LockOp",
    "ParseStats",
    "ProcessDump",
    "ThreadDump",
    "WaitEdge",
    "WaitForGraph",
    "ZipfFit",
    "analyze",
    "blocked_thread",
    "cluster_events",
    "event_features",
    "family_of",
    "fit_zipf",
    "format_anr",
    "format_xcrash",
    "load_events",
    "normalise_frame",
    "parse_anr_file",
    "parse_anr_text",
    "parse_dump_time",
    "similarity",
    "summarize",
]
