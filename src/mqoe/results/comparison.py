"""``comparison.csv``: published values beside simulated ones, one row per check.

Every reproduction writes it next to ``metrics.csv`` so tools (the HTML report, a
notebook) read one shape instead of each work's Markdown. Columns, exactly::

    section,what,published,simulated,difference,tolerance,verdict,source

``published`` and ``simulated`` are text: a number (``19``), or a statement where the
published fact is not a number (``"FULL > FAIR > VAN"``). ``difference`` is simulated −
published when both are numbers, else empty. ``verdict`` is one of :data:`VERDICTS`:
``met`` / ``not met`` for a check with a tolerance, ``reference`` for a value shown
without one. No field contains a line break. The published values are printed beside
the simulated ones; they are never used to make them.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mqoe.errors import InputFileError
from mqoe.results.atomic import atomic_write_text

COLUMNS: tuple[str, ...] = (
    "section",
    "what",
    "published",
    "simulated",
    "difference",
    "tolerance",
    "verdict",
    "source",
)
VERDICTS: tuple[str, ...] = ("met", "not met", "reference")
_LINE_BREAK = re.compile(r"[\r\n]")  # one row per line, as in a table cell


@dataclass(frozen=True)
class ComparisonRow:
    """One published fact or value beside the simulated one, with its verdict."""

    section: str
    what: str
    published: str
    simulated: str
    difference: float | None
    tolerance: str
    verdict: str
    source: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {', '.join(VERDICTS)}")
        for name in ("section", "what", "published", "simulated", "tolerance", "source"):
            if _LINE_BREAK.search(getattr(self, name)):
                raise ValueError(f"{name} {getattr(self, name)!r} contains a line break")

    @classmethod
    def numeric(
        cls,
        section: str,
        what: str,
        published: float,
        simulated: float,
        *,
        tolerance: str,
        met: bool | None,
        source: str,
    ) -> ComparisonRow:
        """A row for two numbers; ``met=None`` marks a reference value (no tolerance)."""
        difference = simulated - published
        return cls(
            section=section,
            what=what,
            published=format_number(published),
            simulated=format_number(simulated),
            difference=difference if math.isfinite(difference) else None,
            tolerance=tolerance,
            verdict=verdict_of(met),
            source=source,
        )

    @classmethod
    def shape(
        cls, section: str, what: str, met: bool, *, simulated: str = "", source: str = ""
    ) -> ComparisonRow:
        """A row for a published shape ("FULL caches more apps than VAN"), met or not."""
        return cls(
            section=section,
            what=what,
            published="holds",
            simulated=simulated or ("holds" if met else "does not hold"),
            difference=None,
            tolerance="shape",
            verdict=verdict_of(met),
            source=source,
        )


def verdict_of(met: bool | None) -> str:
    return "reference" if met is None else ("met" if met else "not met")


def format_number(value: float) -> str:
    """Readable text for a table cell: 3 significant digits, at most 1 decimal from 10 up."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if abs(value) >= 10:
        return f"{value:.1f}".removesuffix(".0")
    return f"{value:.3g}"


def write_comparison_csv(path: Path, rows: Iterable[ComparisonRow]) -> Path:
    """Write ``comparison.csv`` atomically; returns ``path``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in rows:
        difference = "" if r.difference is None else repr(float(r.difference))
        fields = (r.section, r.what, r.published, r.simulated, difference, r.tolerance)
        writer.writerow((*fields, r.verdict, r.source))
    return atomic_write_text(path, buffer.getvalue())


def read_comparison_csv(path: Path) -> list[ComparisonRow]:
    """Read a ``comparison.csv``; :class:`InputFileError` names the file and line."""
    try:
        with path.open(encoding="utf-8", newline="") as f:  # keep \r inside quoted fields
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read comparison.csv: {exc}") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(header) != COLUMNS:
        raise InputFileError(path, f"expected the header {','.join(COLUMNS)}", 1)
    rows = []
    for line, fields in enumerate(reader, start=2):
        if len(fields) != len(COLUMNS):
            raise InputFileError(path, f"expected {len(COLUMNS)} fields, got {len(fields)}", line)
        section, what, published, simulated, diff, tolerance, verdict, source = fields
        try:
            difference = float(diff) if diff else None
        except ValueError:
            raise InputFileError(path, f"difference {diff!r} is not a number", line) from None
        if verdict not in VERDICTS:
            raise InputFileError(path, f"verdict {verdict!r} is not one of {VERDICTS}", line)
        rows.append(ComparisonRow(section, what, published, simulated, difference,
                                  tolerance, verdict, source))  # fmt: skip
    return rows
