"""Parsing one log file: lines sorted by tag and tokenised in chunks, every field
checked (:class:`_FileParser`); malformed lines are errors naming ``file:line``, or are
skipped and counted."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.memlog.model import (
    MEMINFO_COLUMNS,
    MEMINFO_FIELDS,
    TRIM_LEVELS,
    BoolArray,
    IntArray,
    ObjArray,
    PhoneConfig,
)
from mqoe.analysis.memlog.read import _read_text
from mqoe.errors import InputFileError

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
_MAX_ISSUES = 1000  # skipped lines remembered individually (all are counted)


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
