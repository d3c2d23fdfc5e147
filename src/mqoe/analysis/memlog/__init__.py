"""Memory-signal logs from real phones: parse, clean, and summarise a fleet.

The memory-pressure study (Coal Not Diamonds, CoNEXT 2022) ran a logger app that wrote,
per phone, a text file of tagged lines; a companion configuration file holds the phone's
``C:`` line. This package reads such files into tidy DataFrames (:func:`load_phone`)
and computes the per-phone and population statistics of that study (:func:`analyze`);
synthetic logs in the same format, for tests and demos, come from
:mod:`mqoe.generators.memlog`. Pure numpy/pandas; analysis never imports the engine.

Modules: :mod:`.model` (values and names), :mod:`.read` (finding files, reading text),
:mod:`.parse` (one file), :mod:`.load` (a phone's files merged), :mod:`.stats`
(per-phone statistics), :mod:`.report` (the fleet report).

File format accepted
--------------------
Text, one record per line, read through :mod:`mqoe.analysis.textio`: UTF-8 with or
without a BOM, UTF-16 with or without a BOM (Windows PowerShell's ``adb shell cat … >
file`` writes UTF-16LE), gzip-compressed or not; LF, CRLF, CR or CR CR LF line ends.
Every variant gives the same tables, and the same line numbers in errors (the ones an
editor shows). Bytes that are not valid in the encoding read as U+FFFD (so a damaged
number is a field error on its line; damaged free text is kept as it reads).
A line is a *tag* — letters, digits or ``_`` starting with a letter — then ``:``, then
the fields (whitespace before the tag or the colon is tolerated). After the colon the
fields of ``M D T B`` lines are separated by runs of whitespace (the logger writes
single tabs); ``M:\\t1600…``, ``M:1600…`` and ``M: 1600…`` are the same line. Fields
per tag (parsed by tag and field count, never by position across tags):

* ``M:`` (every second) — 8 fields ``unix_ms services availMem trimLevel screenOn
  powerSave batteryLow musicActive``. ``services`` is the running-services count or
  ``-`` (API ≥ 26); ``availMem`` is bytes; ``trimLevel`` (the last level the logger
  saw) is any integer, kept for reference — the analysis uses ``T:`` lines.
* ``D:`` (every 10 s) — the 8 ``M:`` fields, then 20 ``/proc/meminfo`` values in kB
  (MemFree Buffers Cached SwapCached Active Inactive Active(anon) Inactive(anon)
  Active(file) Inactive(file) Unevictable SwapTotal SwapFree Dirty Writeback AnonPages
  Mapped VmallocTotal VmallocUsed VmallocChunk); a value may be ``-`` (missing).
  A ``D:`` line is also a memory sample: :attr:`PhoneLog.samples` holds the ``M:`` and
  ``D:`` lines together (a ``D:`` and an ``M:`` line with identical first 8 fields are
  one sample).
* ``T:`` (each ``onTrimMemory``) — 7 fields ``unix_ms level availMem screenOn powerSave
  batteryLow musicActive``, ``level`` ∈ {0, 5, 10, 15, 20, 40, 60, 80}.
* ``B:`` (broadcasts) — 2 fields ``unix_ms event``; ``event`` is SCREEN_ON, SCREEN_OFF,
  POWER_SAVE_MODE_CHANGED, BATTERY_LOW, BATTERY_OKAY or another name (kept as is); a
  full action (``android.intent.action.SCREEN_ON``) is shortened to its last part.
* ``C:`` (configuration) — 14 fields ``unix_ms age q1 q2 q3 q4 q5 q6text MANUFACTURER
  totalMem threshold isLowRamDevice nCores API`` (bytes for ``totalMem`` and
  ``threshold``). ``q6text`` and ``MANUFACTURER`` are free text, so a ``C:`` line that
  holds a tab is split on **tabs only** (fields may then hold spaces, ``q6text`` may be
  empty, one trailing tab is allowed); a ``C:`` line without tabs is split on
  whitespace. The
  phone's configuration is the ``C:`` line with the latest ``unix_ms`` (the last one
  on a tie); ``age`` and the answers are kept as text.

Integers are decimal (Python ``int()`` syntax); ``unix_ms`` is milliseconds since the
Unix epoch (0 ≤ t < 10¹³). Booleans are ``0``/``1`` or ``true``/``false`` (any case).
Blank lines and lines starting with ``#`` are skipped; lines with another tag are
ignored and counted per tag (:attr:`ParseStats.unknown_tags`). Anything else is an
error: :class:`~mqoe.errors.InputFileError` naming ``file:line`` and what was
expected. Real phone files are forgiven three things, each counted in
:class:`ParseStats`: an unterminated last line that does not parse (the logger died
mid-write) and lines holding NUL bytes (blocks lost in a power failure read back as
zeros; trailing NUL padding is ignored) are dropped (``truncated``);
records are sorted by time, and those that came earlier than a preceding record of
the same tag in the same file are counted (``reordered``); exact duplicate records
(overlapping rotated files) are dropped (``duplicates``). ``skip_bad_lines=True``
also skips malformed lines, recording them in :attr:`ParseStats.skipped`.

Example (``phone07/phone07.log`` and ``phone07/phone07.conf``; ``→`` is a tab)::

    M:→1600000000000→-→2147483648→0→1→0→0→0
    T:→1600000000500→15→104857600→1→0→0→0
    B:→1600000001000→SCREEN_OFF

    C:→1599990000000→34→3→4→2→5→1→likes games→HMD Global→1073741824→150994944→1→4→29

Which files make a phone (:func:`discover_phones`): a directory without
subdirectories is one phone (named after it) made of all its files; a directory with
subdirectories is a fleet, each subdirectory one phone; files named on their own are
grouped by the part of their name before the first dot (``p7.log`` + ``p7.conf`` →
phone ``p7``). Hidden files and ``*.md`` files are ignored. A single log holding its
own ``C:`` line is a phone too. A path that is missing or that this user may not read
(a file, a folder, or anything inside a folder it may not enter) is one
:class:`~mqoe.errors.InputFileError` naming that path, never a ``PermissionError``.

Statistics (:func:`analyze`)
----------------------------
Times are ``unix_ms / 1000``. Each memory sample stands for the time until the next
sample, at most ``max_gap_s`` (default 30 s; a longer silence means the logger was not
running — phone asleep or off, logger killed); the last sample stands for nothing.

* **Interactive time** = the time of samples with ``screenOn`` set.
* **RAM utilisation** = ``1 − availMem / totalMem`` per sample; a phone's value is the
  median over its interactive samples (``utilisation_over="all"``: over all samples).
* **Pressure signals per hour** = ``T:`` lines with level 5/10/15 (RUNNING_MODERATE,
  LOW, CRITICAL) whose own ``screenOn`` is set, per interactive hour; Critical (15)
  alone is also reported.
* **States**: a ``T:`` line sets the state — level 5 Moderate, 10 Low, 15 Critical,
  any other level (0, 20…80) Normal; the state holds until the next ``T:`` line that
  sets a different state (repeats of the same state change nothing). Before the first
  ``T:`` line the phone is Normal. **% of time** in each state is taken over
  interactive time (exact overlap of the samples' intervals with the state timeline).
* A **run** is a maximal stretch of ``T:`` lines setting the same state, from its first
  line to the first line of the next run. Its **dwell time** is that span and it ends in
  a **transition** *from → to*. A run is *censored* — no dwell, no transition — when
  the logger was silent for more than ``max_gap_s`` inside it (a gap between
  consecutive records of any tag); the last run is open. The implicit Normal before
  the first ``T:`` line is not a run. Transition probabilities pool all kept phones:
  P(from → to) = transitions from → to / transitions out of *from*.
* **Cleaning rule**: a phone is kept only with a configuration (``totalMem``) and more
  than ``min_interactive_hours`` (default 10) of interactive time; dropped phones
  stay in the ``phones`` table with the reason.
* Population shares are over kept phones: median utilisation ≥ 60 % and ≥ 75 % (the
  study says "above 75 %"; with continuous values the two agree), ≥ 1
  Moderate/Low/Critical signal per interactive hour, > 10 Critical per hour.
  Medians and 75th percentiles use numpy's linear interpolation.

Errors name the file and line (:class:`InputFileError`).
"""

from mqoe.analysis.memlog.load import load_fleet, load_phone
from mqoe.analysis.memlog.model import (
    BROADCASTS,
    MEMINFO_COLUMNS,
    MEMINFO_FIELDS,
    STATES,
    TRIM_LEVELS,
    LineIssue,
    ParseStats,
    PhoneConfig,
    PhoneLog,
)
from mqoe.analysis.memlog.read import discover_phones
from mqoe.analysis.memlog.report import (
    PUBLISHED_POPULATION_FACTS,
    SUMMARY_LABELS,
    MemlogReport,
    analyze,
)
from mqoe.analysis.memlog.stats import PHONE_COLUMNS

__all__ = [
    "BROADCASTS",
    "MEMINFO_COLUMNS",
    "MEMINFO_FIELDS",
    "PHONE_COLUMNS",
    "PUBLISHED_POPULATION_FACTS",
    "STATES",
    "SUMMARY_LABELS",
    "TRIM_LEVELS",
    "LineIssue",
    "MemlogReport",
    "ParseStats",
    "PhoneConfig",
    "PhoneLog",
    "analyze",
    "discover_phones",
    "load_fleet",
    "load_phone",
]
