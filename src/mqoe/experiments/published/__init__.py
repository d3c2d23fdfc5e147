"""The published values of each reproduced work, as data: one ``<work>.toml`` here.

A file holds the work's citation and the numbers its reproduction sets beside the
simulated ones::

    [citation]
    authors = ["…"]     # only names that are certain; omitted when the list is not known
    et_al = true        # the list names the first author(s) only
    title = "…"         # omitted when the work's title is not known
    venue = "ACM CoNEXT"
    year = 2022
    short = "…"         # what a table's source column or a legend shows
    full = "…"          # what a summary or the work's documentation page shows

    [[value]]
    key = "frame_drop_pct/nokia-1/1080p30/normal"   # what the reproduction looks up
    value = 19.0
    unit = "%"
    where = "…"         # the table, figure or section of the paper
    source = "…"        # the exact text of comparison.md/.csv's source column

:func:`load` gives a work's values by key, :func:`citation` its citation. A broken file
is reported in one line naming the file and the entry (:class:`mqoe.errors.InputFileError`).
The values are printed beside simulated numbers only; none feeds a simulation.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mqoe.errors import InputFileError, UserError

DATA_DIR = Path(__file__).parent
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Citation:
    short: str  # in a table's source column or a legend: "Huang et al., IMC 2012"
    full: str  # in a summary or on the work's documentation page
    authors: tuple[str, ...] = ()  # only names that are certain; () when not known
    et_al: bool = False  # authors names the first author(s) only
    title: str = ""  # "" when the work's title is not known
    venue: str = ""
    year: int | None = None


@dataclass(frozen=True, slots=True)
class Published:
    """One published number of a work and where it is stated."""

    value: float
    unit: str
    source: str  # the work's short citation and which of its measurements (as printed)
    where: str = ""  # the table, figure or section of the paper


class UnknownKey(UserError, KeyError):
    """A reproduction looked up a key its work's file does not have."""

    __str__ = Exception.__str__  # one plain line, not KeyError's quoted repr


class PublishedValues(Mapping[str, Published]):
    """A work's published values by key; a missing key names the file."""

    def __init__(self, path: Path, values: dict[str, Published]) -> None:
        self.path = path
        self._values = values

    def __getitem__(self, key: str) -> Published:
        try:
            return self._values[key]
        except KeyError:
            raise UnknownKey(f"{self.path}: no [[value]] with key {key!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


@dataclass(frozen=True, slots=True)
class WorkData:
    """One file: the work's citation and its published values."""

    citation: Citation
    values: PublishedValues


# -- the file's schema ----------------------------------------------------------------
class _CitationEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    authors: list[str] = Field(default_factory=list)
    et_al: bool = False
    title: str = ""
    venue: str = ""
    year: int | None = Field(default=None, strict=True)
    short: str = Field(min_length=1)
    full: str = Field(min_length=1)


class _ValueEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(min_length=1)
    value: float = Field(strict=True, allow_inf_nan=False)  # a TOML number, not "19"
    unit: str = Field(min_length=1)
    where: str = Field(min_length=1)
    source: str = Field(min_length=1)


# -- loading --------------------------------------------------------------------------
def works() -> tuple[str, ...]:
    """The works that have a file here, by name."""
    return tuple(sorted(p.stem for p in DATA_DIR.glob("*.toml")))


def path_of(work: str) -> Path:
    return DATA_DIR / f"{work}.toml"


@cache
def _work(work: str) -> WorkData:
    path = path_of(work)
    if not path.is_file():
        raise UserError(f"{path}: no published-data file for work {work!r}")
    return read(path)


def load(work: str) -> PublishedValues:
    """``work``'s published values by key (the file is read once)."""
    return _work(work).values


def citation(work: str) -> Citation:
    """``work``'s citation, from its file."""
    return _work(work).citation


def read(path: Path) -> WorkData:
    """Read and check one published-data file (any path; :func:`load` reads ours)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputFileError(path, f"cannot read it: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = int(match.group(1)) if match else None
        raise InputFileError(path, f"not valid TOML: {exc}", line=line) from None
    unknown = sorted(set(data) - {"citation", "value"})
    if unknown:
        what = f"unknown top-level keys {unknown}; expected [citation] and [[value]] tables"
        raise InputFileError(path, what)
    if not isinstance(data.get("citation"), dict):
        raise InputFileError(path, "expected a [citation] table")
    entries = data.get("value", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputFileError(path, "expected [[value]] tables")
    cited = _check(_CitationEntry, data["citation"], path, "[citation]")
    values: dict[str, Published] = {}
    for i, entry in enumerate(entries, start=1):
        key = entry.get("key")
        where = f"[[value]] #{i}" + (f" ({key!r})" if isinstance(key, str) else "")
        v = _check(_ValueEntry, entry, path, where)
        if v.key in values:
            raise InputFileError(path, f"{where}: key repeats an earlier [[value]]")
        values[v.key] = Published(v.value, v.unit, v.source, v.where)
    fields = cited.model_dump()
    fields["authors"] = tuple(cited.authors)
    return WorkData(Citation(**fields), PublishedValues(path, values))


def _check(model: type[M], entry: dict[str, Any], path: Path, where: str) -> M:
    try:
        return model.model_validate(entry)
    except ValidationError as exc:
        # A misspelt field shows up twice (extra + missing): name the misspelling first.
        first = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        field = ".".join(str(part) for part in first["loc"])
        got = "" if first["type"] == "missing" else f" (got {first['input']!r})"
        more = len(exc.errors()) - 1
        also = f"; and {more} more problem{'s' if more > 1 else ''}" if more else ""
        raise InputFileError(path, f"{where}: {field}: {first['msg']}{got}{also}") from None
