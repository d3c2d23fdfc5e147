"""Memory-signal logs from real phones (spec 01 §7): parse, clean, and summarise a fleet.

The study's logger app wrote, per phone, a text file of tagged lines; a companion
configuration file holds the phone's ``C:`` line. This module reads such files into
tidy DataFrames (:func:`load_phone`), computes the per-phone and population statistics
of spec 01 (:func:`analyze`), and writes synthetic logs in the same format for tests
and demos (:func:`synthesize_phone`, :func:`synthesize_config`). Pure numpy/pandas;
analysis never imports the engine.

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
* Population shares are over kept phones: median utilisation ≥ 60 % and ≥ 75 % (spec
  01 says "above 75 %"; with continuous values the two agree), ≥ 1
  Moderate/Low/Critical signal per interactive hour, > 10 Critical per hour.
  Medians and 75th percentiles use numpy's linear interpolation.

Errors name the file and line (:class:`InputFileError`).
"""

from __future__ import annotations

import math
import os
import re
import stat
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.textio import describe_os_error, read_text
from mqoe.errors import InputFileError, UserError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
ObjArray = npt.NDArray[np.object_]

#: ``ComponentCallbacks2`` levels (spec 06) plus the logger's 0 = "none".
TRIM_LEVELS = (0, 5, 10, 15, 20, 40, 60, 80)
STATES = ("Normal", "Moderate", "Low", "Critical")
_STATE_OF_LEVEL = np.zeros(81, dtype=np.int64)  # trim level → index into STATES
_STATE_OF_LEVEL[[5, 10, 15]] = [1, 2, 3]  # RUNNING_MODERATE / LOW / CRITICAL; others Normal
BROADCASTS = ("SCREEN_ON", "SCREEN_OFF", "POWER_SAVE_MODE_CHANGED", "BATTERY_LOW", "BATTERY_OKAY")

MEMINFO_FIELDS = (
    "MemFree", "Buffers", "Cached", "SwapCached", "Active", "Inactive", "Active(anon)",
    "Inactive(anon)", "Active(file)", "Inactive(file)", "Unevictable", "SwapTotal",
    "SwapFree", "Dirty", "Writeback", "AnonPages", "Mapped", "VmallocTotal",
    "VmallocUsed", "VmallocChunk",
)  # fmt: skip

#: Spec 01's published population facts, keyed like :meth:`MemlogReport.summary`.
#: Shares are fractions of phones; the dwell times are the 75th percentile of the time
#: spent in Critical before moving to Low / to Normal.
SPEC01_POPULATION_FACTS: dict[str, float] = {
    "share_util_ge_60pct": 0.80,
    "share_util_ge_75pct": 0.20,
    "share_pressure_ge_1_per_h": 0.63,
    "share_critical_gt_10_per_h": 0.19,
    "p_critical_to_low": 0.672,
    "p_critical_to_normal": 0.136,
    "dwell_critical_to_low_p75_s": 12.8,
    "dwell_critical_to_normal_p75_s": 10.8,
}


#: A human label for each key of :meth:`MemlogReport.summary` (for tables and plots).
SUMMARY_LABELS: dict[str, str] = {
    "n_phones": "phones read",
    "n_kept": "phones kept",
    "n_dropped": "phones dropped",
    "interactive_h_kept": "interactive hours (kept phones)",
    "median_of_median_utilisation": "median of the phones' median RAM utilisation",
    "share_util_ge_60pct": "phones with median RAM utilisation ≥ 60 %",
    "share_util_ge_75pct": "phones with median RAM utilisation ≥ 75 %",
    "share_pressure_ge_1_per_h": "phones with ≥ 1 Moderate/Low/Critical signal per hour",
    "share_critical_gt_10_per_h": "phones with > 10 Critical signals per hour",
    "p_critical_to_normal": "after Critical: to Normal",
    "p_critical_to_moderate": "after Critical: to Moderate",
    "p_critical_to_low": "after Critical: to Low",
    "dwell_critical_to_low_median_s": "time in Critical before Low, median (s)",
    "dwell_critical_to_low_p75_s": "time in Critical before Low, 75th percentile (s)",
    "dwell_critical_to_normal_median_s": "time in Critical before Normal, median (s)",
    "dwell_critical_to_normal_p75_s": "time in Critical before Normal, 75th percentile (s)",
}


def _snake(name: str) -> str:
    name = name.replace("(", "_").replace(")", "")
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower() + "_kb"


MEMINFO_COLUMNS = tuple(_snake(name) for name in MEMINFO_FIELDS)

# Field kinds: how a token is read and what the error says it should be.
_KIND_TEXT = {
    "ms": "a unix time in milliseconds (integer, 0 ≤ t < 10^13)",
    "count": "a count ≥ 0 or '-'",
    "bytes": "a number of bytes ≥ 0",
    "int": "an integer",
    "level": "a trim level (0, 5, 10, 15, 20, 40, 60 or 80)",
    "bool": "a boolean (0/1 or true/false)",
    "kb": "a number of kB ≥ 0 or '-'",
    "event": "a broadcast name",
}
_INT_RANGE = {
    "ms": (0, 10**13),
    "count": (0, 2**31),
    "bytes": (0, 2**53),
    "int": (-(2**31), 2**31),
    "level": (0, 81),
    "kb": (0, 2**53),
}
_BOOL_TOKENS = {"0": False, "1": True, "false": False, "true": True}

_BASE = (
    ("unix_ms", "unix_ms", "ms"),
    ("running_services", "services", "count"),
    ("avail_bytes", "availMem", "bytes"),
    ("trim_level", "trimLevel", "int"),
    ("screen_on", "screenOn", "bool"),
    ("power_save", "powerSave", "bool"),
    ("battery_low", "batteryLow", "bool"),
    ("music_active", "musicActive", "bool"),
)
# tag → (column, logger's field name, kind) per field, in order
_FIELDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "M": _BASE,
    "D": _BASE + tuple((c, f, "kb") for c, f in zip(MEMINFO_COLUMNS, MEMINFO_FIELDS, strict=True)),
    "T": (
        ("unix_ms", "unix_ms", "ms"),
        ("level", "level", "level"),
        ("avail_bytes", "availMem", "bytes"),
        ("screen_on", "screenOn", "bool"),
        ("power_save", "powerSave", "bool"),
        ("battery_low", "batteryLow", "bool"),
        ("music_active", "musicActive", "bool"),
    ),
    "B": (("unix_ms", "unix_ms", "ms"), ("event", "event", "event")),
}
_C_FIELDS = (
    "unix_ms", "age", "q1", "q2", "q3", "q4", "q5", "q6text", "MANUFACTURER", "totalMem",
    "threshold", "isLowRamDevice", "nCores", "API",
)  # fmt: skip
_TAG = re.compile(r"([A-Za-z][A-Za-z0-9_]*)[ \t]*:")
_CHUNK_LINES = 1 << 18  # tokenise in chunks: bounds the peak memory of a 3-week log
# A 3-week log at 1 Hz is ~110 MB; the whole file is held while parsing (vectorised by
# tag), so a bound keeps a gzip bomb or a wrong file from exhausting memory.
_MAX_FILE_BYTES = 1 << 30
_MAX_ISSUES = 1000  # skipped lines remembered individually (all are counted)


# -- parsed data --------------------------------------------------------------------


@dataclass(frozen=True)
class PhoneConfig:
    """The fields of a phone's ``C:`` line (the latest one)."""

    unix_ms: int
    age: str
    answers: tuple[str, str, str, str, str]  # q1..q5, as written
    q6_text: str
    manufacturer: str
    total_mem_bytes: int  # ActivityManager.MemoryInfo.totalMem
    threshold_bytes: int  # MemoryInfo.threshold (low-memory threshold)
    is_low_ram_device: bool
    n_cores: int
    api: int


@dataclass(frozen=True)
class LineIssue:
    """A malformed line skipped with ``skip_bad_lines=True``."""

    path: str
    line: int
    what: str


@dataclass(frozen=True)
class ParseStats:
    """What parsing a phone's files met, for data-quality reporting."""

    lines: int = 0  # physical lines read
    records: Mapping[str, int] = field(default_factory=dict)  # kept records per tag
    skipped_blank: int = 0  # blank and '#' lines
    unknown_tags: Mapping[str, int] = field(default_factory=dict)  # ignored lines per tag
    reordered: int = 0  # records earlier than a preceding one of the same tag and file
    duplicates: int = 0  # exact duplicate records dropped
    truncated: int = 0  # cut-off writes dropped: bad unterminated last line, NUL lines
    n_skipped: int = 0  # malformed lines skipped (skip_bad_lines=True)
    skipped: tuple[LineIssue, ...] = ()  # the first _MAX_ISSUES of them


@dataclass(frozen=True)
class PhoneLog:
    """One phone's log, sorted by time. DataFrame columns are named with their units."""

    name: str
    paths: tuple[Path, ...]
    samples: pd.DataFrame  # M: and D: lines: unix_ms, kind, the 8 M: fields
    meminfo: pd.DataFrame  # D: lines: unix_ms and the 20 /proc/meminfo values (kB)
    trims: pd.DataFrame  # T: lines
    broadcasts: pd.DataFrame  # B: lines: unix_ms, event
    config: PhoneConfig | None  # the latest C: line, if any
    stats: ParseStats


# -- finding and reading files -----------------------------------------------------------


def _visible(path: Path) -> bool:
    return not path.name.startswith(".") and path.suffix.lower() != ".md"


def _phone_stem(path: Path) -> str:
    return path.name.split(".", 1)[0] or path.name


def _is_dir(path: Path) -> bool | None:
    """True for a folder, False for anything else, None when nothing is there; a path
    that cannot be looked at (e.g. inside a folder this user may not enter) is an error."""
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputFileError(path, describe_os_error(exc)) from None


def _entries(folder: Path) -> tuple[list[Path], list[Path]]:
    """The visible ``(files, subfolders)`` of ``folder``, sorted by name; an unreadable
    folder is an error naming it. Other entries (sockets, FIFOs, broken links) are
    skipped: they hold no log."""
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        raise InputFileError(folder, describe_os_error(exc)) from None
    files: list[Path] = []
    folders: list[Path] = []
    for entry in entries:
        path = Path(entry.path)
        if not _visible(path):
            continue
        try:
            if entry.is_dir():
                folders.append(path)
            elif entry.is_file():
                files.append(path)
        except OSError as exc:
            raise InputFileError(path, describe_os_error(exc)) from None
    return files, folders


def discover_phones(paths: Sequence[str | Path]) -> dict[str, list[Path]]:
    """Group files into phones (see the module docstring); name → files, sorted.

    Two groups that would share a name are told apart by their parent directory. A
    missing or unreadable path is an :class:`InputFileError` naming it.
    """
    groups: dict[Path, list[Path]] = {}  # key: the directory, or parent/stem for files
    for item in map(Path, paths):
        kind = _is_dir(item)
        if kind is None:
            raise InputFileError(item, "no such file or folder")
        if not kind:
            groups.setdefault(item.parent / _phone_stem(item), []).append(item)
            continue
        files, subdirs = _entries(item)
        if not subdirs:
            groups.setdefault(item, []).extend(files)
            continue
        for sub in subdirs:
            groups.setdefault(sub, []).extend(_entries(sub)[0])
        for loose in files:
            groups.setdefault(item / _phone_stem(loose), []).append(loose)
    names = Counter(key.name for key in groups)
    out: dict[str, list[Path]] = {}
    for key, found in groups.items():
        name = key.name if names[key.name] == 1 else f"{key.parent.name}/{key.name}"
        if not found:
            raise InputFileError(key, "no log files for this phone")
        out[str(key) if name in out else name] = sorted(set(found))
    return out


def load_fleet(paths: Sequence[str | Path], *, skip_bad_lines: bool = False) -> list[PhoneLog]:
    """Every phone found in ``paths`` (:func:`discover_phones`), loaded."""
    return [
        load_phone(files, name=name, skip_bad_lines=skip_bad_lines)
        for name, files in discover_phones(paths).items()
    ]


def load_phone(
    paths: str | Path | Sequence[str | Path],
    *,
    name: str | None = None,
    skip_bad_lines: bool = False,
) -> PhoneLog:
    """Parse one phone's files (logs and configuration, any mix, or a directory of them).

    Records from all files are merged and sorted by ``unix_ms`` (stable). Raises
    :class:`InputFileError` on the first malformed line unless ``skip_bad_lines``.
    """
    items = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    files: list[Path] = []
    for item in items:
        if _is_dir(item):
            inside = _entries(item)[0]
            if not inside:
                raise InputFileError(item, "no log files in this directory")
            files.extend(inside)
        else:
            files.append(item)
    if not files:
        raise UserError("load_phone needs at least one file")
    label = name if name is not None else (_phone_stem(items[0]) if items else "phone")
    parsed = [_FileParser(path, skip_bad_lines).parse() for path in files]
    return _merge(label, tuple(files), parsed)


def _read_text(path: Path) -> str:
    """The whole file as text with LF line ends, whatever encoding and line ends it has."""
    try:
        return read_text(path, max_bytes=_MAX_FILE_BYTES)
    except zlib.error as exc:  # a damaged deflate stream inside a well-formed gzip header
        raise InputFileError(path, f"corrupt gzip file: {exc}") from None


# -- parsing one file ------------------------------------------------------------------


def _problem(kind: str, token: str) -> str | None:
    """What is wrong with one field token, or None: the reference for every check."""
    if kind == "event":
        return None
    if kind == "bool":
        return None if token.lower() in _BOOL_TOKENS else _KIND_TEXT[kind]
    if kind in ("count", "kb") and token == "-":
        return None
    try:
        value = int(token)
    except ValueError:
        return _KIND_TEXT[kind]
    low, high = _INT_RANGE[kind]
    if not low <= value < high or (kind == "level" and value not in TRIM_LEVELS):
        return _KIND_TEXT[kind]
    return None


def _ints(tokens: ObjArray, kind: str) -> tuple[IntArray, BoolArray]:
    """Integer column and its bad-token mask; '-' (where allowed) reads as -1."""
    bad = np.zeros(len(tokens), dtype=np.bool_)
    dash = np.zeros(len(tokens), dtype=np.bool_)
    if kind in ("count", "kb"):
        dash = np.asarray(tokens == "-", dtype=np.bool_)
        if dash.all():  # e.g. the services count on API ≥ 26
            return np.full(len(tokens), -1, dtype=np.int64), bad
        if dash.any():
            tokens = np.where(dash, "0", tokens).astype(object)
    try:
        values = tokens.astype(np.int64)
    except (ValueError, OverflowError, TypeError):
        values = np.zeros(len(tokens), dtype=np.int64)
        for i, token in enumerate(tokens.tolist()):
            try:
                number = int(token)
            except ValueError:
                bad[i] = True
                continue
            if -(2**63) <= number < 2**63:
                values[i] = number
            else:
                bad[i] = True
    low, high = _INT_RANGE[kind]
    bad |= (values < low) | (values >= high)
    if kind == "level":
        bad |= ~np.isin(values, TRIM_LEVELS)
    values[dash] = -1
    return values, bad


def _bools(tokens: ObjArray) -> tuple[BoolArray, BoolArray]:
    codes, uniques = pd.factorize(tokens)
    table = [_BOOL_TOKENS.get(str(u).lower()) for u in uniques]
    values = np.array([v is True for v in table], dtype=np.bool_)[codes]
    bad = np.array([v is None for v in table], dtype=np.bool_)[codes]
    return values, bad


def _events(tokens: ObjArray) -> ObjArray:
    codes, uniques = pd.factorize(tokens)
    short = np.array([str(u).rsplit(".", 1)[-1] or str(u) for u in uniques], dtype=object)
    return np.asarray(short[codes], dtype=object)


def _tokenise(tag: str, lines: list[str], width: int) -> ObjArray | None:
    """The ``len(lines) × width`` field tokens of lines that all start with ``tag:``.

    One C-level ``str.split`` over the whole chunk, each line prefixed by a sentinel
    token: if the sentinels land every ``width + 1`` tokens, every line has ``width``
    fields and the tokens are exactly each line's own ``split()``. Returns None when
    some line has another field count (the caller then goes line by line).
    """
    body = "\n".join(lines)
    if "\x01" in body:
        return None
    tokens = ("\n" + body).replace("\n" + tag + ":", "\n\x01 ").split()
    n = len(lines)
    if len(tokens) != n * (width + 1):
        return None
    grid = np.array(tokens, dtype=object).reshape(n, width + 1)
    if not bool(np.all(grid[:, 0] == "\x01")):
        return None
    return np.asarray(grid[:, 1:], dtype=object)


class _FileParser:
    """Reads one file into per-tag column arrays; collects counts and issues."""

    def __init__(self, path: Path, lenient: bool) -> None:
        self.path = path
        self.lenient = lenient
        self.lines: dict[str, list[str]] = {tag: [] for tag in (*_FIELDS, "C")}
        self.numbers: dict[str, list[int]] = {tag: [] for tag in (*_FIELDS, "C")}
        self.unknown: Counter[str] = Counter()
        self.blank = 0  # blank and comment lines
        self.truncated = 0  # lines dropped as cut-off writes
        self.issues: list[tuple[int, str]] = []  # (line, what), lenient mode
        self.columns: dict[str, dict[str, npt.NDArray[Any]]] = {}
        self.configs: list[PhoneConfig] = []
        self.n_lines = 0

    def fail(self, line: int, what: str) -> None:
        """Note a malformed line; strict parsing raises the earliest one at the end."""
        self.issues.append((line, what))

    def parse(self) -> _FileParser:
        text = _read_text(self.path)
        body = text.rstrip("\x00")  # a phone that lost power may pad the file with NULs
        lines = body.split("\n")
        terminated = body.endswith("\n") or not body
        if terminated:
            lines.pop()
        self.n_lines = len(lines)
        if not terminated and self._truncated(lines[-1], len(lines)):
            lines[-1] = ""
            self.truncated = 1
        if "\x00" in body:  # blocks lost in a power failure read back as NULs
            for i, line in enumerate(lines):
                if "\x00" in line:
                    lines[i] = ""
                    self.truncated += 1
        self._classify(lines)
        self.blank -= self.truncated  # dropped lines were blanked to keep line numbers
        for tag, spec in _FIELDS.items():
            self.columns[tag] = self._parse_tag(tag, spec)
        for line, number in zip(self.lines["C"], self.numbers["C"], strict=True):
            config = self._config(line, number)
            if config is not None:
                self.configs.append(config)
        self.issues.sort()
        if self.issues and not self.lenient:
            first, what = self.issues[0]
            raise InputFileError(self.path, what, line=first)
        return self

    def _truncated(self, line: str, number: int) -> bool:
        """True when the unterminated last line does not parse (a cut-off write)."""
        probe = _FileParser(self.path, lenient=True)
        probe._classify([line])
        if probe.issues:
            return True
        if probe.lines["C"]:
            probe._config(probe.lines["C"][0], number)
        for tag, spec in _FIELDS.items():
            probe._parse_tag(tag, spec)
        return bool(probe.issues)

    def _classify(self, lines: list[str]) -> None:
        """Sort lines into the tag groups, in file order; count blank and unknown lines.

        Lines that start exactly with ``X:`` are picked out with vector operations; the
        rest (blank, comments, a leading space or BOM, other tags) go one by one.
        """
        keys = np.array([line[:2] for line in lines], dtype="<U2")
        known = np.zeros(len(lines), dtype=np.bool_)
        picked: dict[str, list[tuple[int, str]]] = {tag: [] for tag in self.lines}
        for tag in self.lines:
            rows = np.flatnonzero(keys == tag + ":")
            known[rows] = True
            self.numbers[tag] = (rows + 1).tolist()
            self.lines[tag] = [lines[i] for i in rows.tolist()]
        for i in np.flatnonzero(~known).tolist():
            stripped = lines[i].strip().lstrip("\ufeff").strip()
            if not stripped or stripped.startswith("#"):
                self.blank += 1
                continue
            match = _TAG.match(stripped)
            if match is None:
                self.fail(i + 1, "expected a tagged line 'M:', 'D:', 'T:', 'B:' or 'C:'")
            elif match.group(1) not in self.lines:
                self.unknown[match.group(1)] += 1
            else:
                tag = match.group(1)
                picked[tag].append((i + 1, tag + ":" + stripped[match.end() :]))
        for tag, extra in picked.items():
            if extra:  # merge back in file order
                merged = sorted([*zip(self.numbers[tag], self.lines[tag], strict=True), *extra])
                self.numbers[tag] = [number for number, _ in merged]
                self.lines[tag] = [line for _, line in merged]

    def _parse_tag(self, tag: str, spec: tuple[tuple[str, str, str], ...]) -> dict[str, Any]:
        lines, numbers = self.lines[tag], self.numbers[tag]
        parts: list[dict[str, npt.NDArray[Any]]] = []
        for start in range(0, len(lines), _CHUNK_LINES):
            chunk = lines[start : start + _CHUNK_LINES]
            where = numbers[start : start + _CHUNK_LINES]
            parts.append(self._parse_chunk(tag, spec, chunk, where))
        if not parts:
            parts.append(self._parse_chunk(tag, spec, [], []))
        return {col: np.concatenate([p[col] for p in parts]) for col in parts[0]}

    def _parse_chunk(
        self,
        tag: str,
        spec: tuple[tuple[str, str, str], ...],
        lines: list[str],
        numbers: list[int],
    ) -> dict[str, npt.NDArray[Any]]:
        width = len(spec)
        grid = _tokenise(tag, lines, width) if lines else np.empty((0, width), dtype=object)
        rows = list(range(len(lines)))
        if grid is None:  # some line has the wrong field count: find it, keep the rest
            split = [line[2:].split() for line in lines]
            rows = [i for i, fields in enumerate(split) if len(fields) == width]
            for i, fields in enumerate(split):
                if len(fields) != width:
                    names = " ".join(f for _, f, _ in spec)
                    self.fail(
                        numbers[i], f"{tag}: expected {width} fields '{names}', got {len(fields)}"
                    )
                    if not self.lenient:
                        break  # lines are in order: the first is the one to report
            grid = np.array([split[i] for i in rows], dtype=object).reshape(len(rows), width)
        out: dict[str, npt.NDArray[Any]] = {}
        bad = np.zeros(len(rows), dtype=np.bool_)
        for j, (column, _, kind) in enumerate(spec):
            tokens = np.asarray(grid[:, j], dtype=object)
            if kind == "bool":
                out[column], wrong = _bools(tokens)
            elif kind == "event":
                out[column], wrong = _events(tokens), np.zeros(len(rows), dtype=np.bool_)
            else:
                out[column], wrong = _ints(tokens, kind)
            bad |= wrong
        if bad.any():
            for i in np.flatnonzero(bad).tolist():
                self.fail(numbers[rows[i]], self._field_problem(tag, spec, grid[i]))
                if not self.lenient:
                    break
            out = {column: values[~bad] for column, values in out.items()}
        return out

    @staticmethod
    def _field_problem(tag: str, spec: tuple[tuple[str, str, str], ...], row: ObjArray) -> str:
        for j, (_, name, kind) in enumerate(spec):
            token = str(row[j])
            problem = _problem(kind, token)
            if problem is not None:
                return f"{tag}: field {j + 1} ({name}) should be {problem}, got {token[:40]!r}"
        return f"{tag}: malformed line"  # unreachable: the vector checks mirror _problem

    def _config(self, line: str, number: int) -> PhoneConfig | None:
        rest = line[2:].lstrip(" ")
        if "\t" in rest:
            fields = [f.strip() for f in rest.removeprefix("\t").split("\t")]
            if len(fields) == len(_C_FIELDS) + 1 and not fields[-1]:
                fields.pop()  # a trailing tab
        else:
            fields = rest.split()
        if len(fields) != len(_C_FIELDS):
            self.fail(
                number,
                f"C: expected {len(_C_FIELDS)} fields '{' '.join(_C_FIELDS)}', got {len(fields)}",
            )
            return None
        checks = {0: "ms", 9: "bytes", 10: "bytes", 11: "bool", 12: "int", 13: "int"}
        for j, kind in checks.items():
            problem = _problem(kind, fields[j])
            if problem is None and j in (9, 12, 13) and int(fields[j]) <= 0:
                problem = "a positive integer"
            if problem is not None:
                got = fields[j][:40]
                self.fail(
                    number, f"C: field {j + 1} ({_C_FIELDS[j]}) should be {problem}, got {got!r}"
                )
                return None
        return PhoneConfig(
            unix_ms=int(fields[0]),
            age=fields[1],
            answers=(fields[2], fields[3], fields[4], fields[5], fields[6]),
            q6_text=fields[7],
            manufacturer=fields[8],
            total_mem_bytes=int(fields[9]),
            threshold_bytes=int(fields[10]),
            is_low_ram_device=_BOOL_TOKENS[fields[11].lower()],
            n_cores=int(fields[12]),
            api=int(fields[13]),
        )


# -- merging a phone's files ------------------------------------------------------------


def _reordered(times: IntArray) -> int:
    if len(times) < 2:
        return 0
    return int(np.count_nonzero(times[1:] < np.maximum.accumulate(times)[:-1]))


def _frame(columns: Mapping[str, npt.NDArray[Any]], nullable: Sequence[str] = ()) -> pd.DataFrame:
    data: dict[str, Any] = {}
    for name, values in columns.items():
        if name in nullable:
            data[name] = pd.arrays.IntegerArray(values, values < 0)
        else:
            data[name] = values
    return pd.DataFrame(data)


def _sorted_unique(
    columns: Mapping[str, npt.NDArray[Any]], subset: Sequence[str] | None = None
) -> tuple[dict[str, npt.NDArray[Any]], int]:
    """Stable sort by unix_ms; drop exact duplicates (only possible at equal times).

    Works on the column arrays, so a phone's table is built once (pandas' per-frame
    overhead, not the data, dominated small phones when each file made its own frames).
    """
    out = dict(columns)
    times = out["unix_ms"]
    if len(times) > 1 and not bool(np.all(times[1:] >= times[:-1])):
        order = np.argsort(times, kind="stable")
        out = {name: values[order] for name, values in out.items()}
        times = out["unix_ms"]
    if len(times) < 2 or not bool(np.any(times[1:] == times[:-1])):
        return out, 0
    keys = pd.DataFrame({name: out[name] for name in (subset or list(out))})
    duplicated = keys.duplicated(keep="first").to_numpy(np.bool_)
    return {name: values[~duplicated] for name, values in out.items()}, int(duplicated.sum())


def _joined(files: list[_FileParser], tags: Sequence[str], names: Sequence[str]) -> dict[str, Any]:
    """The columns ``names`` of every file's ``tags`` tables, end to end (file order)."""
    return {
        name: np.concatenate([parsed.columns[tag][name] for parsed in files for tag in tags])
        for name in names
    }


def _merge(name: str, paths: tuple[Path, ...], files: list[_FileParser]) -> PhoneLog:
    base = [column for column, _, _ in _BASE]
    reordered = sum(
        _reordered(parsed.columns[tag]["unix_ms"]) for parsed in files for tag in _FIELDS
    )
    # D before M in each file, so that an M: line repeating a D: line's sample is the one
    # dropped as a duplicate (kind 1 = D, 0 = M).
    joined = _joined(files, ("D", "M"), base)
    joined["kind"] = np.concatenate(
        [
            np.full(len(parsed.columns[tag]["unix_ms"]), code, dtype=np.int8)
            for parsed in files
            for tag, code in (("D", 1), ("M", 0))
        ]
    )
    sample_cols, dup_samples = _sorted_unique(joined, base)
    codes = sample_cols.pop("kind")
    samples = _frame(sample_cols, nullable=["running_services"])
    samples.insert(1, "kind", pd.Series(pd.Categorical.from_codes(codes, pd.Index(["M", "D"]))))
    meminfo_cols, dup_meminfo = _sorted_unique(
        _joined(files, ("D",), ["unix_ms", *MEMINFO_COLUMNS])
    )
    meminfo = _frame(meminfo_cols, nullable=MEMINFO_COLUMNS)
    trim_cols, dup_trims = _sorted_unique(_joined(files, ("T",), [c for c, _, _ in _FIELDS["T"]]))
    trims = _frame(trim_cols)
    broadcast_cols, dup_broadcasts = _sorted_unique(
        _joined(files, ("B",), [c for c, _, _ in _FIELDS["B"]])
    )
    broadcasts = _frame(broadcast_cols)
    configs = [c for parsed in files for c in parsed.configs]
    config = max(reversed(configs), key=lambda c: c.unix_ms) if configs else None
    issues = [LineIssue(str(p.path), line, what) for p in files for line, what in p.issues]
    unknown: Counter[str] = Counter()
    for parsed in files:
        unknown.update(parsed.unknown)
    stats = ParseStats(
        lines=sum(p.n_lines for p in files),
        records={
            "M": int((samples["kind"] == "M").sum()),
            "D": len(meminfo),
            "T": len(trims),
            "B": len(broadcasts),
            "C": len(configs),
        },
        skipped_blank=sum(p.blank for p in files),
        unknown_tags=dict(sorted(unknown.items())),
        reordered=reordered,
        duplicates=dup_samples + dup_meminfo + dup_trims + dup_broadcasts,
        truncated=sum(p.truncated for p in files),
        n_skipped=len(issues),
        skipped=tuple(issues[:_MAX_ISSUES]),
    )
    return PhoneLog(name, paths, samples, meminfo, trims, broadcasts, config, stats)


# -- per-phone statistics -----------------------------------------------------------------


@dataclass(frozen=True)
class _Timeline:
    """A phone's sample intervals and state runs, in seconds from its first record."""

    start_s: FloatArray  # per sample
    cover_s: FloatArray  # the time each sample stands for
    run_start_s: FloatArray  # per run of T: lines setting one state
    run_state: IntArray  # index into STATES
    censored: BoolArray  # run contains a logger silence > max_gap_s (or is the last)


def _timeline(phone: PhoneLog, max_gap_s: float) -> _Timeline:
    sample_ms = phone.samples["unix_ms"].to_numpy(np.int64)
    trim_ms = phone.trims["unix_ms"].to_numpy(np.int64)
    alive_ms = np.unique(
        np.concatenate([sample_ms, trim_ms, phone.broadcasts["unix_ms"].to_numpy(np.int64)])
    )
    origin = int(alive_ms[0]) if len(alive_ms) else 0
    start = (sample_ms - origin) / 1000.0
    cover = np.append(np.minimum(np.diff(start), max_gap_s), 0.0) if len(start) else start
    levels = phone.trims["level"].to_numpy(np.int64)
    states = _STATE_OF_LEVEL[levels]  # levels were checked to be in TRIM_LEVELS
    first = np.ones(len(states), dtype=np.bool_)
    first[1:] = states[1:] != states[:-1]
    run_start = (trim_ms[first] - origin) / 1000.0
    run_state = states[first]
    alive = (alive_ms - origin) / 1000.0
    silent = np.flatnonzero(np.diff(alive) > max_gap_s)
    gap_from, gap_to = alive[silent], alive[silent + 1]
    censored = np.ones(len(run_start), dtype=np.bool_)  # the last run stays open
    if len(run_start) > 1:
        nxt = np.searchsorted(gap_to, run_start[:-1], side="right")
        inside = nxt < len(gap_to)
        inside[inside] = gap_from[nxt[inside]] < run_start[1:][inside]
        censored[:-1] = inside
    return _Timeline(start, cover, run_start, run_state, censored)


def _state_seconds(timeline: _Timeline, mask: BoolArray) -> FloatArray:
    """Seconds spent in each state within the intervals of the samples in ``mask``."""
    a = timeline.start_s[mask]
    b = a + timeline.cover_s[mask]
    if not len(a):
        return np.zeros(len(STATES))
    origin = min(float(a[0]), float(timeline.run_start_s[0]) if len(timeline.run_start_s) else 0)
    knots = np.concatenate(([origin], timeline.run_start_s))
    state = np.concatenate(([0], timeline.run_state))
    onehot = np.eye(len(STATES))[state]
    cumulative = np.vstack(
        (np.zeros(len(STATES)), np.cumsum(np.diff(knots)[:, None] * onehot[:-1], 0))
    )

    def upto(t: FloatArray) -> FloatArray:  # seconds in each state from ``origin`` to t
        k = np.searchsorted(knots, t, side="right") - 1
        result: FloatArray = cumulative[k] + (t - knots[k])[:, None] * onehot[k]
        return result

    seconds: FloatArray = (upto(b) - upto(a)).sum(axis=0)
    return seconds


PHONE_COLUMNS = (
    "phone", "kept", "drop_reason", "manufacturer", "api", "total_mem_bytes",
    "is_low_ram_device", "n_samples", "logged_h", "interactive_h", "median_utilisation",
    "moderate_per_h", "low_per_h", "critical_per_h", "pressure_per_h", "share_normal",
    "share_moderate", "share_low", "share_critical", "reordered", "duplicates", "truncated",
    "skipped_lines", "unknown_lines",
)  # fmt: skip


def _phone_row(
    phone: PhoneLog,
    timeline: _Timeline,
    state_s: FloatArray,
    over: str,
    min_hours: float,
) -> dict[str, Any]:
    """One row of the ``phones`` table (see :data:`PHONE_COLUMNS`)."""
    screen = phone.samples["screen_on"].to_numpy(np.bool_)
    interactive_s = float(timeline.cover_s[screen].sum())
    hours = interactive_s / 3600.0
    config = phone.config
    utilisation = math.nan
    if config is not None:
        avail = phone.samples["avail_bytes"].to_numpy(np.float64)
        chosen = avail if over == "all" else avail[screen]
        if len(chosen):
            utilisation = float(np.median(1.0 - chosen / config.total_mem_bytes))
    levels = phone.trims["level"].to_numpy(np.int64)
    counted = levels[phone.trims["screen_on"].to_numpy(np.bool_)]
    per_hour = {
        name: np.count_nonzero(np.isin(counted, lvls)) / hours if hours > 0 else math.nan
        for name, lvls in (
            ("moderate_per_h", [5]),
            ("low_per_h", [10]),
            ("critical_per_h", [15]),
            ("pressure_per_h", [5, 10, 15]),
        )
    }
    shares = {
        "share_" + state.lower(): value / interactive_s if interactive_s > 0 else math.nan
        for state, value in zip(STATES, state_s.tolist(), strict=True)
    }
    reasons = []
    if config is None:
        reasons.append("no C: configuration line (total memory unknown)")
    if not hours > min_hours:
        reasons.append(f"{hours:.1f} h of interactive data (needs > {min_hours:g} h)")
    stats = phone.stats
    return {
        "phone": phone.name,
        "kept": not reasons,
        "drop_reason": "; ".join(reasons),
        "manufacturer": config.manufacturer if config else "",
        "api": config.api if config else math.nan,
        "total_mem_bytes": config.total_mem_bytes if config else math.nan,
        "is_low_ram_device": config.is_low_ram_device if config else math.nan,
        "n_samples": len(phone.samples),
        "logged_h": float(timeline.cover_s.sum()) / 3600.0,
        "interactive_h": hours,
        "median_utilisation": utilisation,
        **per_hour,
        **shares,
        "reordered": stats.reordered,
        "duplicates": stats.duplicates,
        "truncated": stats.truncated,
        "skipped_lines": stats.n_skipped,
        "unknown_lines": sum(stats.unknown_tags.values()),
    }


# -- the report --------------------------------------------------------------------------


def _median(values: FloatArray) -> float:
    """Median of the non-NaN values (as pandas' ``Series.median``), NaN when none."""
    finite = values[~np.isnan(values)]
    return float(np.median(finite)) if len(finite) else math.nan


def _share(values: FloatArray, test: Any) -> float:
    return float(np.mean(test(values))) if len(values) else math.nan


def _by_pair(frame: pd.DataFrame, source: str, target: str, value: str) -> dict[Any, float]:
    """``{(source, target): value}`` over a small table's rows."""
    keys = zip(frame[source].tolist(), frame[target].tolist(), strict=True)
    return dict(zip(keys, frame[value].to_numpy(np.float64).tolist(), strict=True))


@dataclass(frozen=True)
class MemlogReport:
    """Tidy tables of a fleet analysis; :meth:`summary` has the headline numbers.

    ``tables``: ``phones`` (one row per phone, kept or dropped with the reason),
    ``utilisation_cdf`` (kept phones' median utilisation, ascending, with its CDF),
    ``state_time`` (phone × state: interactive seconds and share), ``transitions``
    (every from → to pair, count and probability), ``dwells`` (one row per uncensored
    run: phone, state, to_state, dwell_s) and ``dwell`` (per state and per from → to,
    with ``to_state="any"`` for the state as a whole: n, median_s, p75_s).
    """

    tables: dict[str, pd.DataFrame]
    min_interactive_hours: float  # the cleaning rule applied
    max_gap_s: float  # the longest time one sample stood for

    def summary(self) -> dict[str, float]:
        """Headline numbers; the keys of :data:`SPEC01_POPULATION_FACTS` among them."""
        phones = self.tables["phones"]
        kept = phones["kept"].to_numpy(np.bool_)

        def of_kept(column: str) -> FloatArray:
            values: FloatArray = phones[column].to_numpy(np.float64)[kept]
            return values

        util = of_kept("median_utilisation")
        n_kept = int(kept.sum())
        out = {
            "n_phones": float(len(phones)),
            "n_kept": float(n_kept),
            "n_dropped": float(len(phones) - n_kept),
            "interactive_h_kept": float(of_kept("interactive_h").sum()),
            "median_of_median_utilisation": _median(util),
            "share_util_ge_60pct": _share(util, lambda v: v >= 0.60),
            "share_util_ge_75pct": _share(util, lambda v: v >= 0.75),
            "share_pressure_ge_1_per_h": _share(of_kept("pressure_per_h"), lambda v: v >= 1.0),
            "share_critical_gt_10_per_h": _share(of_kept("critical_per_h"), lambda v: v > 10.0),
        }
        # Small fixed tables (one row per state pair): looked up, not filtered by masks.
        probability = _by_pair(self.tables["transitions"], "from_state", "to_state", "probability")
        for to in ("Normal", "Moderate", "Low"):
            out[f"p_critical_to_{to.lower()}"] = probability.get(("Critical", to), math.nan)
        dwell = self.tables["dwell"]
        by_measure = {m: _by_pair(dwell, "state", "to_state", m + "_s") for m in ("median", "p75")}
        for to in ("Low", "Normal"):
            for measure, values in by_measure.items():
                key = f"dwell_critical_to_{to.lower()}_{measure}_s"
                out[key] = values.get(("Critical", to), math.nan)
        return out

    def comparison(self) -> pd.DataFrame:
        """metric, label, computed, published (spec 01; NaN where it gives none)."""
        summary = self.summary()
        return pd.DataFrame(
            {
                "metric": list(summary),
                "label": [SUMMARY_LABELS[k] for k in summary],
                "computed": list(summary.values()),
                "published": [SPEC01_POPULATION_FACTS.get(k, math.nan) for k in summary],
            }
        )


def analyze(
    phones: Sequence[PhoneLog],
    min_interactive_hours: float = 10.0,
    *,
    max_gap_s: float = 30.0,
    utilisation_over: Literal["interactive", "all"] = "interactive",
) -> MemlogReport:
    """Per-phone and population statistics of spec 01 §7 (definitions: module docstring).

    ``min_interactive_hours``: the cleaning rule (kept phones have strictly more).
    ``max_gap_s``: the longest time one sample stands for; longer silences censor runs.
    """
    if not (math.isfinite(min_interactive_hours) and min_interactive_hours >= 0):
        raise UserError(f"min_interactive_hours must be ≥ 0, got {min_interactive_hours}")
    if not (math.isfinite(max_gap_s) and max_gap_s > 0):
        raise UserError(f"max_gap_s must be > 0, got {max_gap_s}")
    if utilisation_over not in ("interactive", "all"):
        raise UserError(f"utilisation_over must be 'interactive' or 'all': {utilisation_over!r}")
    rows: list[dict[str, Any]] = []
    state_rows: list[dict[str, Any]] = []
    dwell_rows: list[dict[str, Any]] = []
    for phone in phones:
        timeline = _timeline(phone, max_gap_s)
        state_s = _state_seconds(timeline, phone.samples["screen_on"].to_numpy(np.bool_))
        row = _phone_row(phone, timeline, state_s, utilisation_over, min_interactive_hours)
        rows.append(row)
        total = float(state_s.sum())
        for state, value in zip(STATES, state_s.tolist(), strict=True):
            share = value / total if total > 0 else math.nan
            state_rows.append(
                {"phone": phone.name, "state": state, "interactive_s": value, "share": share}
            )
        if row["kept"]:
            dwell_rows.extend(_dwells(phone.name, timeline))
    phones_table = pd.DataFrame(rows, columns=list(PHONE_COLUMNS))
    phones_table["kept"] = phones_table["kept"].astype(bool)
    cdf = phones_table.loc[phones_table["kept"], ["phone", "median_utilisation"]]
    cdf = cdf.sort_values("median_utilisation", kind="stable").reset_index(drop=True)
    cdf["cdf"] = np.arange(1, len(cdf) + 1, dtype=np.float64) / max(len(cdf), 1)
    dwells = pd.DataFrame(dwell_rows, columns=["phone", "state", "to_state", "dwell_s"])
    tables = {
        "phones": phones_table,
        "utilisation_cdf": cdf,
        "state_time": pd.DataFrame(
            state_rows, columns=["phone", "state", "interactive_s", "share"]
        ),
        "transitions": _transition_table(dwells),
        "dwells": dwells,
        "dwell": _dwell_table(dwells),
    }
    return MemlogReport(tables, float(min_interactive_hours), float(max_gap_s))


def _dwells(name: str, timeline: _Timeline) -> list[dict[str, Any]]:
    out = []
    starts, states = timeline.run_start_s, timeline.run_state
    for k in np.flatnonzero(~timeline.censored).tolist():
        out.append(
            {
                "phone": name,
                "state": STATES[int(states[k])],
                "to_state": STATES[int(states[k + 1])],
                "dwell_s": float(starts[k + 1] - starts[k]),
            }
        )
    return out


def _transition_table(dwells: pd.DataFrame) -> pd.DataFrame:
    counts = Counter(zip(dwells["state"], dwells["to_state"], strict=True))
    rows = []
    for source in STATES:
        out_total = sum(counts[(source, to)] for to in STATES)
        for to in STATES:
            if to == source:
                continue
            n = counts[(source, to)]
            p = n / out_total if out_total else math.nan
            rows.append({"from_state": source, "to_state": to, "count": n, "probability": p})
    return pd.DataFrame(rows)


def _dwell_table(dwells: pd.DataFrame) -> pd.DataFrame:
    state = dwells["state"].to_numpy(dtype=object)
    target = dwells["to_state"].to_numpy(dtype=object)
    seconds = dwells["dwell_s"].to_numpy(np.float64)
    rows = []
    for source in STATES:
        mine = state == source
        for to in ("any", *STATES):
            if to == source:
                continue
            values = seconds[mine if to == "any" else mine & (target == to)]
            median = float(np.median(values)) if len(values) else math.nan
            p75 = float(np.percentile(values, 75)) if len(values) else math.nan
            rows.append(
                {
                    "state": source,
                    "to_state": to,
                    "n": len(values),
                    "median_s": median,
                    "p75_s": p75,
                }
            )
    return pd.DataFrame(rows)


# -- synthetic logs ----------------------------------------------------------------------

#: Illustrative Markov chain for synthetic logs (rows sum to 1): not fitted to any data.
SYNTHETIC_TRANSITIONS: dict[str, dict[str, float]] = {
    "Normal": {"Moderate": 0.6, "Low": 0.25, "Critical": 0.15},
    "Moderate": {"Normal": 0.5, "Low": 0.35, "Critical": 0.15},
    "Low": {"Normal": 0.3, "Moderate": 0.3, "Critical": 0.4},
    "Critical": {"Normal": 0.2, "Moderate": 0.2, "Low": 0.6},
}
#: Mean dwell per state for synthetic logs, seconds (exponential): illustrative.
SYNTHETIC_DWELL_MEAN_S = {"Normal": 900.0, "Moderate": 60.0, "Low": 20.0, "Critical": 10.0}
_STATE_UTILISATION = (None, 0.80, 0.86, 0.92)  # Normal comes from normal_utilisation
_STATE_LEVEL = (0, 5, 10, 15)
_NORMAL_LEVELS = (0, 20, 40, 60, 80)


def _alternating(rng: np.random.Generator, end_ms: int, means_s: tuple[float, float]) -> IntArray:
    """Change times (ms) of an on/off process with exponential durations, starting 'on'."""
    times: list[int] = []
    t, on = 0, True
    while True:
        t += max(1, round(1000 * float(rng.exponential(means_s[0] if on else means_s[1]))))
        if t >= end_ms:
            return np.array(times, dtype=np.int64)
        times.append(t)
        on = not on


def _markov(
    rng: np.random.Generator,
    end_ms: int,
    transitions: Mapping[str, Mapping[str, float]],
    dwell_mean_s: Mapping[str, float],
) -> tuple[IntArray, IntArray]:
    """Entry times (ms, strictly increasing) and states of a chain started in Normal at 0."""
    times, states = [0], [0]
    while True:
        name = STATES[states[-1]]
        nxt = times[-1] + max(1, round(1000 * float(rng.exponential(dwell_mean_s[name]))))
        if nxt >= end_ms:
            return np.array(times[1:], dtype=np.int64), np.array(states[1:], dtype=np.int64)
        row = transitions[name]
        targets = [other for other in STATES if other != name and row.get(other, 0.0) > 0]
        if not targets:
            raise UserError(f"synthetic transitions: state {name} has no way out")
        weights = np.array([row[other] for other in targets], dtype=np.float64)
        pick = int(rng.choice(len(targets), p=weights / weights.sum()))
        states.append(STATES.index(targets[pick]))
        times.append(nxt)


def synthesize_phone(
    rng: np.random.Generator,
    hours: float,
    total_mem_bytes: int,
    *,
    start_ms: int = 1_600_000_000_000,
    api: int = 29,
    normal_utilisation: float = 0.6,
    screen_on_mean_s: float = 600.0,
    screen_off_mean_s: float = 1800.0,
    transitions: Mapping[str, Mapping[str, float]] | None = None,
    dwell_mean_s: Mapping[str, float] | None = None,
) -> str:
    """A **synthetic** logger file (``M D T B`` lines) for tests and demos.

    One ``M:`` line per second (every tenth second a ``D:`` line instead), starting at
    ``start_ms`` with up to 50 ms jitter; the screen alternates on/off with exponential
    durations (starting on, ``SCREEN_OFF``/``SCREEN_ON`` broadcasts at each change); the
    pressure state follows a Markov chain (default :data:`SYNTHETIC_TRANSITIONS`,
    :data:`SYNTHETIC_DWELL_MEAN_S`) with one ``T:`` line at each state entry (Normal
    entries use a random level among 0/20/40/60/80). Utilisation is
    ``normal_utilisation`` in Normal and 0.80/0.86/0.92 under pressure, ± 2 % noise;
    power save, battery low and music stay 0. Illustrative only: never a source of
    spec 01's facts.
    """
    if not (math.isfinite(hours) and hours > 0):
        raise UserError(f"hours must be > 0, got {hours}")
    if total_mem_bytes <= 0:
        raise UserError(f"total_mem_bytes must be > 0, got {total_mem_bytes}")
    if not 0 < normal_utilisation < 1:
        raise UserError(f"normal_utilisation must be in (0, 1), got {normal_utilisation}")
    n = max(1, round(hours * 3600))
    offset_ms = np.arange(n, dtype=np.int64) * 1000 + rng.integers(0, 50, n)
    screen_ms = _alternating(rng, n * 1000, (screen_on_mean_s, screen_off_mean_s))
    screen = np.searchsorted(screen_ms, offset_ms, side="right") % 2 == 0
    entry_ms, entry_state = _markov(
        rng, n * 1000, transitions or SYNTHETIC_TRANSITIONS, dwell_mean_s or SYNTHETIC_DWELL_MEAN_S
    )
    normal_levels = rng.choice(_NORMAL_LEVELS, len(entry_state))
    levels = np.where(entry_state == 0, normal_levels, np.take(_STATE_LEVEL, entry_state))
    # the last entry at or before each sample; index 0 is the Normal before any entry
    k = np.searchsorted(entry_ms, offset_ms, side="right")
    state = np.concatenate(([0], entry_state))[k]
    last_level = np.concatenate(([0], levels))[k]
    mean_util = np.array([normal_utilisation, *_STATE_UTILISATION[1:]], dtype=np.float64)
    util = np.clip(mean_util[state] + rng.normal(0.0, 0.02, n), 0.02, 0.99)
    avail = np.round(total_mem_bytes * (1.0 - util)).astype(np.int64)
    services = ["-"] * n if api >= 26 else [str(v) for v in rng.integers(20, 60, n).tolist()]
    columns = (
        (start_ms + offset_ms).tolist(),
        services,
        avail.tolist(),
        last_level.tolist(),
        screen.astype(np.int64).tolist(),
    )
    lines = [
        f"{'M' if i % 10 else 'D'}:\t{t}\t{s}\t{a}\t{lv}\t{on}\t0\t0\t0"
        for i, (t, s, a, lv, on) in enumerate(zip(*columns, strict=True))
    ]
    for i in range(0, n, 10):
        meminfo = _synthetic_meminfo(int(avail[i]) // 1024, total_mem_bytes // 1024)
        lines[i] += "\t" + "\t".join(map(str, meminfo))
    events: list[tuple[int, str]] = []
    at = np.searchsorted(offset_ms, entry_ms, side="right") - 1  # the sample just before
    for t, lv, i in zip(
        entry_ms.tolist(), levels.tolist(), np.maximum(at, 0).tolist(), strict=True
    ):
        events.append((t, f"T:\t{start_ms + t}\t{lv}\t{avail[i]}\t{int(screen[i])}\t0\t0\t0"))
    for number, t in enumerate(screen_ms.tolist()):
        name = "SCREEN_OFF" if number % 2 == 0 else "SCREEN_ON"
        events.append((t, f"B:\t{start_ms + t}\t{name}"))
    times = np.concatenate((offset_ms, np.array([t for t, _ in events], dtype=np.int64)))
    every = lines + [line for _, line in events]
    return "\n".join(every[i] for i in np.argsort(times, kind="stable").tolist()) + "\n"


def _synthetic_meminfo(avail_kb: int, total_kb: int) -> list[int]:
    """Plausible /proc/meminfo values (kB) around an available-memory figure."""
    free, cached = avail_kb // 4, avail_kb // 2
    anon = max(total_kb - avail_kb - total_kb // 10, 0)
    swap_total = total_kb // 2
    return [
        free, avail_kb // 50, cached, avail_kb // 40, anon // 2 + cached // 2,
        anon // 2 + cached // 2, anon // 2, anon // 2, cached // 2, cached // 2, 256,
        swap_total, swap_total // 2, 64, 0, anon, cached // 4, 263061440, 65536, 0,
    ]  # fmt: skip


def synthesize_config(
    total_mem_bytes: int,
    *,
    unix_ms: int = 1_600_000_000_000,
    api: int = 29,
    n_cores: int = 8,
    manufacturer: str = "mqoe synthetic",
    threshold_bytes: int | None = None,
    is_low_ram_device: bool | None = None,
    age: str = "-",
    answers: tuple[str, str, str, str, str] = ("-", "-", "-", "-", "-"),
    q6_text: str = "synthetic phone",
) -> str:
    """A **synthetic** configuration file: one tab-separated ``C:`` line.

    ``threshold_bytes`` defaults to 1/8 of the memory, ``is_low_ram_device`` to
    ``total_mem_bytes ≤ 1 GiB`` (Android Go devices).
    """
    threshold = total_mem_bytes // 8 if threshold_bytes is None else threshold_bytes
    low_ram = total_mem_bytes <= 1 << 30 if is_low_ram_device is None else is_low_ram_device
    for text in (age, *answers, q6_text, manufacturer):
        if "\t" in text or "\n" in text:
            raise UserError(f"configuration text fields cannot hold tabs or newlines: {text!r}")
    fields = [
        str(unix_ms), age, *answers, q6_text, manufacturer, str(total_mem_bytes),
        str(threshold), "1" if low_ram else "0", str(n_cores), str(api),
    ]  # fmt: skip
    return "C:\t" + "\t".join(fields) + "\n"
