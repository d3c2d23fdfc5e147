"""The app catalogue: per-app memory, GPU-buffer and launch-cost profiles (the
GPU-buffer study, 2015).

The study's workload launches 22 popular apps of 8 categories; each needs foreground and
background USS, GPU buffer bytes in both states, what those buffers hold (which decides
how well they compress), and the cost of a cold start and of a resume. The profiles are
TOML data (``apps.toml`` next to this module), validated here at the file boundary;
users add their own apps with files of the same format (``load_catalog(extra=...)``).

Every ``[[app]]`` table carries an ``[app.sources]`` table naming where each group of
numbers comes from. Sizes are in MiB (``_mb``), CPU work in millions of reference cycles
(Cortex-A53 cycles, as everywhere in mqoe), storage reads in MiB.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from mqoe.errors import InputFileError, UserError

# The GPU-buffer study's workload: the categories of its launch benchmark, in its order,
# and each one's share of the 256 launches (a field study's usage mix).
CATEGORIES: tuple[str, ...] = (
    "productivity",
    "news",
    "games",
    "communication",
    "references",
    "multimedia",
    "shopping",
    "browser",
)
CATEGORY_SHARES: Mapping[str, float] = MappingProxyType(
    {
        "productivity": 0.066,
        "news": 0.043,
        "games": 0.184,
        "communication": 0.383,
        "references": 0.066,
        "multimedia": 0.117,
        "shopping": 0.047,
        "browser": 0.094,
    }
)
# What a GPU buffer page can hold, from most to least compressible: cleared (all-zero)
# pages, flat UI surfaces, rendered text, photos/textures, noise-like data.
CONTENT_CLASSES = ("zero", "flat", "text", "photo", "noise")
REQUIRED_SOURCES = ("uss", "gpu", "content", "start", "resume")
PACKAGED = "apps.toml"
_PACKAGED_LABEL = f"packaged {PACKAGED}"  # how errors name it

_CONTENT_TOLERANCE = 1e-6
# An Android package name: dot-separated Java identifiers, at least two segments.
_PACKAGE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+")


class _Model(BaseModel):
    # strict: `fg_uss_mb = "90"` or `bg_gpu_work = 1` is an error, not a silent
    # conversion (an int for a float is still fine); inf/nan are refused.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class ContentMix(_Model):
    """Fractions of an app's GPU buffer bytes by content class, summing to 1."""

    zero: float = Field(ge=0, le=1)
    flat: float = Field(ge=0, le=1)
    text: float = Field(ge=0, le=1)
    photo: float = Field(ge=0, le=1)
    noise: float = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _sums_to_one(self) -> ContentMix:
        total = math.fsum(self.fractions().values())
        if abs(total - 1.0) > _CONTENT_TOLERANCE:
            raise ValueError(f"fractions must sum to 1 (±1e-6), got {total:.7g}")
        return self

    def fractions(self) -> dict[str, float]:
        """Class name → fraction, in ``CONTENT_CLASSES`` order."""
        return {name: float(getattr(self, name)) for name in CONTENT_CLASSES}


def _at_most(value: float, info: ValidationInfo, *bounds: str) -> float:
    """Check ``value`` ≤ each earlier-validated field named in ``bounds``."""
    for bound in bounds:
        limit = info.data.get(bound)  # absent when that field itself failed
        if limit is not None and value > limit:
            raise ValueError(f"must be ≤ {bound} ({limit:g})")
    return value


class AppSpec(_Model):
    """One app's profile (see ``apps.toml`` for the meaning and units of each field)."""

    name: str  # Android package name, unique
    label: str = Field(min_length=1)
    category: str
    fg_uss_mb: float = Field(gt=0)  # CPU-side + GPU buffers, in the foreground
    bg_uss_mb: float = Field(ge=0)  # once cached in the background
    gpu_fg_mb: float = Field(ge=0)  # part of fg_uss_mb
    gpu_bg_mb: float = Field(ge=0)  # part of bg_uss_mb
    file_mb: float = Field(ge=0)  # file-backed working set, not part of USS
    bg_gpu_work: bool  # issues GPU work while in the background
    start_mcycles: float = Field(gt=0)
    start_read_mb: float = Field(ge=0)
    resume_mcycles: float = Field(gt=0)
    resume_read_mb: float = Field(ge=0)
    fg_mcycles_per_s: float = Field(ge=0)
    content: ContentMix
    sources: dict[str, str]

    @field_validator("name")
    @classmethod
    def _package_name(cls, value: str) -> str:
        if not _PACKAGE_NAME.fullmatch(value):
            raise ValueError("must be an Android package name such as com.example.app")
        return value

    @field_validator("category")
    @classmethod
    def _known_category(cls, value: str) -> str:
        if value not in CATEGORIES:
            raise ValueError(f"must be one of {', '.join(CATEGORIES)}")
        return value

    @field_validator("bg_uss_mb")
    @classmethod
    def _bg_within_fg(cls, value: float, info: ValidationInfo) -> float:
        # Apps trim caches when they leave the screen; none grows (the GPU-buffer study gives none).
        return _at_most(value, info, "fg_uss_mb")

    @field_validator("gpu_fg_mb")
    @classmethod
    def _gpu_fg_within_uss(cls, value: float, info: ValidationInfo) -> float:
        return _at_most(value, info, "fg_uss_mb")

    @field_validator("gpu_bg_mb")
    @classmethod
    def _gpu_bg_within_uss_and_fg(cls, value: float, info: ValidationInfo) -> float:
        # Background apps free or keep their buffers; they do not allocate new ones.
        return _at_most(value, info, "bg_uss_mb", "gpu_fg_mb")

    @field_validator("sources")
    @classmethod
    def _sources_complete(cls, value: dict[str, str]) -> dict[str, str]:
        missing = [key for key in REQUIRED_SOURCES if key not in value]
        if missing:
            raise ValueError(f"missing {', '.join(missing)} (needs {', '.join(REQUIRED_SOURCES)})")
        empty = [key for key, text in value.items() if not text.strip()]
        if empty:
            raise ValueError(f"empty source text for {', '.join(empty)}")
        return value

    @property
    def fg_gpu_share(self) -> float:
        """GPU buffers' share of the foreground USS."""
        return self.gpu_fg_mb / self.fg_uss_mb

    @property
    def bg_gpu_share(self) -> float:
        """GPU buffers' share of the background USS (0 for an app that keeps nothing)."""
        return self.gpu_bg_mb / self.bg_uss_mb if self.bg_uss_mb > 0 else 0.0


@dataclass(frozen=True)
class AppCatalog:
    """The apps a workload can launch; ``source`` names the file(s) they came from."""

    apps: tuple[AppSpec, ...]
    source: str  # a file path, "packaged", or several joined by " + "

    def get(self, name: str) -> AppSpec:
        """The app with this package name."""
        for app in self.apps:
            if app.name == name:
                return app
        names = ", ".join(app.name for app in self.apps)
        raise UserError(f"unknown app {name!r} in catalogue {self.source}; known: {names}")

    def by_category(self) -> dict[str, tuple[AppSpec, ...]]:
        """Category → its apps, in the study's order; categories without apps are left out."""
        groups = {c: tuple(a for a in self.apps if a.category == c) for c in CATEGORIES}
        return {category: apps for category, apps in groups.items() if apps}

    def launch_weights(self) -> dict[str, float]:
        """App name → probability of a launch picking it, summing to 1.

        Each category's share (GPU-buffer study's table) is split equally among its apps; categories
        with no app in this catalogue are dropped and the other shares renormalised."""
        groups = self.by_category()
        total = math.fsum(CATEGORY_SHARES[category] for category in groups)
        if total <= 0:  # only an empty catalogue; load_catalog never returns one
            raise UserError(f"catalogue {self.source} has no apps to launch")
        weights = {
            app.name: CATEGORY_SHARES[category] / total / len(apps)
            for category, apps in groups.items()
            for app in apps
        }
        return {app.name: weights[app.name] for app in self.apps}


def load_catalog(path: str | Path | None = None, *, extra: Sequence[str | Path] = ()) -> AppCatalog:
    """Load an app catalogue: ``path`` (None → the packaged ``apps.toml``) plus the apps
    of each ``extra`` file. Any problem is a :class:`~mqoe.errors.UserError` naming the
    file, the app (index and name) and the field; app names must be unique across files."""
    main = ("packaged", _packaged()) if path is None else (str(path), _load_file(Path(path)))
    origins = [main, *((str(more), _load_file(Path(more))) for more in extra)]
    seen: dict[str, tuple[str, int]] = {}
    apps: list[AppSpec] = []
    for origin, specs in origins:
        for index, app in enumerate(specs, start=1):
            if app.name in seen:
                first, first_index = seen[app.name]
                where = _app_where(_label(origin), index, app.name)
                raise UserError(
                    f"{where}: name: duplicate of app #{first_index} in {_label(first)}"
                )
            seen[app.name] = (origin, index)
            apps.append(app)
    return AppCatalog(apps=tuple(apps), source=" + ".join(origin for origin, _ in origins))


def _label(origin: str) -> str:
    return _PACKAGED_LABEL if origin == "packaged" else origin


@cache
def _packaged() -> tuple[AppSpec, ...]:
    text = resources.files(__name__).joinpath(PACKAGED).read_text(encoding="utf-8")
    return _parse(text, _PACKAGED_LABEL)


def _load_file(path: Path) -> tuple[AppSpec, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such app catalogue file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read: {exc}") from None
    return _parse(text, str(path))


def _parse(text: str, label: str) -> tuple[AppSpec, ...]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = int(match.group(1)) if match else None
        raise InputFileError(label, f"not valid TOML: {exc}", line=line) from None
    unknown = sorted(set(data) - {"app"})
    if unknown:
        raise UserError(f"{label}: unknown top-level keys {unknown}; apps are [[app]] tables")
    entries = data.get("app")
    if (
        not isinstance(entries, list)
        or not entries
        or not all(isinstance(e, dict) for e in entries)
    ):
        raise UserError(f"{label}: expected one or more [[app]] tables")
    return tuple(_validate(entry, label, i) for i, entry in enumerate(entries, start=1))


def _validate(entry: dict[str, Any], label: str, index: int) -> AppSpec:
    try:
        return AppSpec.model_validate(entry)
    except ValidationError as exc:
        name = entry.get("name")
        where = _app_where(label, index, name if isinstance(name, str) else None)
        raise UserError(f"{where}: {_explain(exc.errors())}") from None


def _explain(errors: list[ErrorDetails]) -> str:
    """'field: what was expected (got …)' for the first problem, counting the others."""
    # A misspelt key shows up twice (extra + missing): name the misspelling first.
    errors = sorted(errors, key=lambda e: e["type"] != "extra_forbidden")
    first, rest = errors[0], errors[1:]
    if first["type"] == "missing":
        also = [_loc(e) for e in rest if e["type"] == "missing"]
        text = "missing" + (f" (so are {', '.join(also)})" if also else "")
        rest = [e for e in rest if e["type"] != "missing"]
    elif first["type"] == "extra_forbidden":
        text = "unknown field"
    else:
        text = first["msg"].removeprefix("Value error, ")
        if not isinstance(first["input"], dict):
            text += f" (got {first['input']!r})"
    if rest:
        text += f"; and {len(rest)} more problem{'s' if len(rest) > 1 else ''}"
    return f"{_loc(first)}: {text}"


def _loc(error: ErrorDetails) -> str:
    return ".".join(str(part) for part in error["loc"]) or "(app)"


def _app_where(label: str, index: int, name: str | None) -> str:
    return f"{label}: app #{index}" + (f" ({name!r})" if name is not None else "")
