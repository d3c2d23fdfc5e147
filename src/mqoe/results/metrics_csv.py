"""``metrics.csv``: the tidy, stable file other tools (and golden tests) read.

One row per number, columns exactly ``figure,profile,condition,metric,value,unit``.
``condition`` is ``key=value;key=value`` with keys in Python string order (Unicode code
points) and is empty when there is no condition; keys and values never contain ``;``,
``=``, ``,`` or a line break. ``value`` is a decimal or scientific number, ``nan``,
``inf`` or ``-inf``. The file is UTF-8 with ``\\n`` line endings, quoted by the ``csv``
module where a field needs it.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mqoe.errors import InputFileError
from mqoe.results.atomic import atomic_write_text

if TYPE_CHECKING:
    import pandas as pd

COLUMNS: tuple[str, ...] = ("figure", "profile", "condition", "metric", "value", "unit")

_FORBIDDEN = re.compile(r"[;=,\r\n]")
_NUMBER = re.compile(
    r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)", re.IGNORECASE
)


@dataclass(frozen=True)
class MetricRow:
    """One number of one figure: ``value`` in ``unit`` for ``metric`` under ``condition``."""

    figure: str
    profile: str
    condition: Mapping[str, str]
    metric: str
    value: float
    unit: str


def format_condition(condition: Mapping[str, object]) -> str:
    """``{"b": 1, "a": "x"}`` → ``"a=x;b=1"``; ``{}`` → ``""``.

    Bools are written ``true``/``false`` and floats in their shortest round-trip form
    (``1.0``, ``0.7``). Raises ``ValueError`` for an empty key, or a key or value
    containing ``;``, ``=``, ``,`` or a line break.
    """
    parts = []
    for key in sorted(condition):
        if not isinstance(key, str) or not key or _FORBIDDEN.search(key):
            raise ValueError(f"condition key {key!r} must be non-empty without ; = , or newline")
        text = _condition_value(condition[key])
        if _FORBIDDEN.search(text):
            raise ValueError(f"condition value {text!r} of {key!r} contains ; = , or newline")
        parts.append(f"{key}={text}")
    return ";".join(parts)


def parse_condition(text: str) -> dict[str, str]:
    """Inverse of :func:`format_condition` (values stay strings).

    Raises ``ValueError`` unless ``text`` is exactly what ``format_condition`` writes:
    ``key=value`` pairs joined by ``;``, keys non-empty and strictly sorted.
    """
    if text == "":
        return {}
    if "," in text or "\n" in text or "\r" in text:
        raise ValueError("a condition cannot contain ',' or a line break")
    result: dict[str, str] = {}
    previous = None
    for pair in text.split(";"):
        key, sep, value = pair.partition("=")
        if not sep or not key or "=" in value:
            raise ValueError(f"expected key=value with a non-empty key, found {pair!r}")
        if previous is not None and key <= previous:
            raise ValueError(f"keys must be sorted without repeats; {key!r} follows {previous!r}")
        result[key] = value
        previous = key
    return result


def write_metrics_csv(path: str | Path, rows: Iterable[MetricRow]) -> Path:
    """Write ``rows`` to ``path`` atomically, in the given order; returns ``path``."""
    lines = [_csv_line(COLUMNS)]
    for row in rows:
        condition = format_condition(row.condition)
        value = repr(float(row.value))
        lines.append(_csv_line((row.figure, row.profile, condition, row.metric, value, row.unit)))
    return atomic_write_text(path, "".join(lines))


def read_metrics_csv(path: str | Path) -> list[MetricRow]:
    """Read and validate a metrics.csv; blank lines are skipped.

    Raises ``InputFileError`` naming the line and what was expected for an unreadable
    file, a wrong header, a wrong column count, a bad number or a bad condition.
    """
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records = _records(path, reader)
    header = next(records, None)
    if header is None:
        raise InputFileError(path, f"empty file; expected the header {','.join(COLUMNS)}", 1)
    line, fields = header
    if tuple(fields) != COLUMNS:
        found = ",".join(fields)
        raise InputFileError(path, f"expected the header {','.join(COLUMNS)}, found {found}", line)
    return [_metric_row(path, line, fields) for line, fields in records]


def metrics_frame(rows: Iterable[MetricRow]) -> pd.DataFrame:
    """``rows`` as a DataFrame with the metrics.csv columns (condition as its string)."""
    import pandas as pd  # here, not at the top: reading and writing the CSV need none

    records = [
        (r.figure, r.profile, format_condition(r.condition), r.metric, float(r.value), r.unit)
        for r in rows
    ]
    frame = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    return frame.astype({"value": "float64"})


def _csv_line(fields: Iterable[str]) -> str:
    # The csv module quotes a field only for characters in its line terminator, so a
    # lone "\r" would go unquoted with "\n" and be read back as a line break. Quote as
    # for "\r\n", then end the record with "\n".
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(fields)
    return buffer.getvalue()[:-2] + "\n"


def _condition_value(value: object) -> str:
    import numpy as np

    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _read_text(path: str | Path) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError(path, "not UTF-8 text", line) from None


class _CsvReader(Protocol):
    line_num: int

    def __next__(self) -> list[str]: ...


def _records(path: str | Path, reader: _CsvReader) -> Iterator[tuple[int, list[str]]]:
    """Non-blank records with the line each starts on."""
    line = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputFileError(path, f"not valid CSV: {exc}", line) from None
        if fields:
            yield line, fields
        line = reader.line_num + 1


def _metric_row(path: str | Path, line: int, fields: list[str]) -> MetricRow:
    if len(fields) != len(COLUMNS):
        expected = f"expected {len(COLUMNS)} columns ({','.join(COLUMNS)})"
        raise InputFileError(path, f"{expected}, found {len(fields)}", line)
    figure, profile, condition, metric, value, unit = fields
    if not _NUMBER.fullmatch(value):
        raise InputFileError(path, f"value: expected a number, nan or inf, found {value!r}", line)
    try:
        parsed = parse_condition(condition)
    except ValueError as exc:
        raise InputFileError(path, f"condition {condition!r}: {exc}", line) from None
    return MetricRow(figure, profile, parsed, metric, float(value), unit)
