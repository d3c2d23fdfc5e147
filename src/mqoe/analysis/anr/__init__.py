"""ANR trace files (``/data/anr/…``): parse, build wait-for graphs, find critical
threads, cluster events by root cause and fit Zipf's law to events per app (spec 04
§"ANR/SNR root-cause pipeline", format in spec 06).

Modules: :mod:`.model` (parsed values), :mod:`.parse` (streaming parser, renderer),
:mod:`.graph` (wait-for graph, critical threads), :mod:`.features` (normalisation,
feature vectors, similarity), :mod:`.cluster` (exact and fast clustering),
:mod:`.report` (families, cluster report, Zipf), :mod:`.synth` (generator).

File format accepted
--------------------
Text (UTF-8; undecodable bytes are replaced and counted; a BOM is ignored; gzip files
are read too), LF or CRLF. Lines are stripped of surrounding blanks, then:

* ``----- pid N at DATE -----`` opens a process section, ``----- end N -----`` closes it.
  DATE is ``YYYY-MM-DD HH:MM:SS`` with an optional ``.fraction`` (up to ns) and UTC
  offset (``+0800``); an unreadable date is kept as text and counted (``bad_dates``).
  A section without its end line (next section or end of file) is kept and counted
  (``truncated_sections``); an end line with another pid is counted
  (``mismatched_ends``). Other ``----- … pid N … -----`` sections (waiting channels)
  are skipped up to their ``----- end N -----`` and counted.
* Inside a section, before the threads: ``Cmd line: NAME`` (also ``Cmdline:``),
  ``DALVIK THREADS (N):`` (N is checked against the threads found, mismatch counted);
  other header lines (build, heap, JIT statistics) are ignored.
* A thread header ``"NAME" [daemon] [prio=P] [tid=T] [sysTid=S] [(not attached)] STATE``
  (any order; native threads are ``"NAME" sysTid=S``) starts a thread; a blank line
  ends it. Within a thread:
  ``| key=value …`` property lines (``sysTid nice cgrp state schedstat=( run wait n )
  utm stm core HZ`` kept, others ignored; a non-integer value is counted in
  ``bad_values``); ``at FUNCTION(LOCATION)`` Java frames; ``native: #NN pc HEX PATH
  (SYMBOL+OFF)`` or ``#NN pc …`` native frames (``(BuildId: …)``/``(offset …)`` dropped);
  ``kernel: FN+0xA/0xB`` kernel frames; ``- waiting to lock|locked|waiting on|sleeping
  on <0xADDR> (a TYPE) [held by thread N | held by tid=N …]`` or ``… an unknown object``.
  Any other line inside a thread is skipped and counted (``unknown_lines``).
* Anywhere: ``*** WATCHDOG KILLING SYSTEM PROCESS: MESSAGE`` and ``*** GOODBYE!``; before
  the first section, ``Subject: …``.
* Lines longer than 64 Ki characters are skipped and counted (``overlong_lines``); at
  most 1,024 frames per thread, 500,000 frames and lock lines per file and 100,000 threads per
  file are kept (the rest counted), so memory is bounded on any input.

A file with no process section is an error (:class:`~mqoe.errors.InputFileError`: "not
an ANR trace file", or "binary data" when it held NUL or undecodable bytes; a large
binary file is rejected after its first MiB). One file is one event; its first process
is the app (services follow); see :mod:`.graph` for the blocked thread in watchdog kills.
"""

from mqoe.analysis.anr.cluster import Clustering, cluster_events
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
from mqoe.analysis.anr.parse import format_anr, parse_anr_file, parse_anr_text
from mqoe.analysis.anr.report import (
    FAMILIES,
    AnrReport,
    EventSummary,
    LoadResult,
    ZipfFit,
    analyze,
    family_of,
    fit_zipf,
    load_events,
    summarize,
)
from mqoe.analysis.anr.synth import SynthTruth, synth_anr, write_synth_dir

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
    "SynthTruth",
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
    "load_events",
    "normalise_frame",
    "parse_anr_file",
    "parse_anr_text",
    "parse_dump_time",
    "similarity",
    "summarize",
    "synth_anr",
    "write_synth_dir",
]
