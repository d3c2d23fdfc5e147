"""Sweep files: a TOML description of many runs, validated with file:line errors, and
expanded into a deterministic list of jobs (one per run, each with a stable run id).

A sweep file::

    [sweep]
    name = "video-pressure"           # [A-Za-z0-9_.-]+; prefixes every run id
    scenario = "video"                # a phone scenario or a population (fleet)
    profiles = ["nokia-1", "nexus-5"] # or profile = "nokia-1"; names or .toml paths
    seeds = { start = 0, count = 3 }  # or a list: seeds = [0, 1, 2]

    [fixed]                           # held for every run (as --set)
    duration_s = 30

    [grid]                            # every combination of these lists
    pressure = ["normal", "moderate", "critical"]

    [random]                          # `samples` draws, crossed with the grid
    samples = 4
    seed = 7
    params.boot_free_mb = { uniform = [5.0, 50.0] }
    params.apps = { integers = [0, 6] }   # both ends included

Runs = grid points × random samples × profiles × seeds, duplicates merged. Each random
parameter has its own stream (SeedSequence of ``seed`` and the parameter's name), so
adding a parameter does not change the values drawn for the others.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import tomllib
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mqoe import __version__
from mqoe.device.profiles import DeviceProfile, load_profile
from mqoe.engine import validate_seed
from mqoe.errors import InputFileError, UserError
from mqoe.params import coerce
from mqoe.workloads import SCENARIOS
from mqoe.workloads.base import NO_PROFILE, params_dict, parse_params, why_no_phone
from mqoe.workloads.population import POPULATIONS

Value = bool | int | float | str
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_DEFAULT_PROFILE = "nokia-1"  # as `mqoe run`


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SeedRange(_Model):
    start: Annotated[int, Field(ge=0)] = 0
    count: Annotated[int, Field(ge=1, le=10_000_000)]


class SweepSection(_Model):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$", max_length=64)]
    scenario: str
    description: str = ""
    profile: str | None = None
    profiles: Annotated[list[str], Field(min_length=1)] | None = None
    seeds: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)] | SeedRange = [0]

    @model_validator(mode="after")
    def _one_profile_key(self) -> SweepSection:
        if self.profile is not None and self.profiles is not None:
            raise ValueError("give profile or profiles, not both")
        return self


_T = TypeVar("_T")
_Pair = Annotated[list[_T], Field(min_length=2, max_length=2)]  # [low, high]


class RandomParam(_Model):
    """One distribution: exactly one of the keys."""

    uniform: _Pair[float] | None = None
    log_uniform: _Pair[float] | None = None
    integers: _Pair[int] | None = None  # both ends included
    choice: Annotated[list[Value], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> RandomParam:
        given = [k for k in ("uniform", "log_uniform", "integers", "choice") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError("give exactly one of uniform, log_uniform, integers, choice")
        low_high = self.uniform or self.log_uniform or self.integers
        if low_high is not None and not all(math.isfinite(v) for v in low_high):
            raise ValueError(f"bounds must be finite numbers, got {low_high}")
        if low_high is not None and low_high[0] > low_high[1]:
            raise ValueError(f"low {low_high[0]} is above high {low_high[1]}")
        if self.log_uniform is not None and self.log_uniform[0] <= 0:
            raise ValueError("log_uniform bounds must be positive")
        return self

    def draw(self, rng: np.random.Generator, n: int) -> list[Value]:
        """``n`` values as plain Python scalars."""
        if self.uniform is not None:
            return [float(v) for v in rng.uniform(self.uniform[0], self.uniform[1], size=n)]
        if self.log_uniform is not None:
            low, high = (math.log(v) for v in self.log_uniform)
            return [float(math.exp(v)) for v in rng.uniform(low, high, size=n)]
        if self.integers is not None:
            low, high = self.integers
            return [int(v) for v in rng.integers(low, high, size=n, endpoint=True)]
        assert self.choice is not None
        return [self.choice[int(i)] for i in rng.integers(len(self.choice), size=n)]


class RandomSpec(_Model):
    samples: Annotated[int, Field(ge=1, le=1_000_000)]
    seed: Annotated[int, Field(ge=0)] = 0
    params: Annotated[dict[str, RandomParam], Field(min_length=1)]


class SweepFile(_Model):
    sweep: SweepSection
    fixed: dict[str, Value] = {}
    grid: dict[str, Annotated[list[Value], Field(min_length=1)]] = {}
    random: RandomSpec | None = None


@dataclass(frozen=True)
class Job:
    """One run of a sweep: everything a worker needs, and the id it is stored under."""

    run_id: str
    sweep: str
    sweep_id: str
    scenario: str
    profile: DeviceProfile | None  # None for a population or a scenario without a phone
    seed: int
    overrides: Mapping[str, str]  # key=value strings, as `mqoe run --set`

    @property
    def profile_name(self) -> str:
        """The profile, as the run's record names it."""
        if self.profile is not None:
            return self.profile.name
        return self.scenario if self.scenario in POPULATIONS else NO_PROFILE

    @property
    def tags(self) -> dict[str, str]:
        return {"sweep": self.sweep, "sweep_id": self.sweep_id}


@dataclass(frozen=True)
class Sweep:
    """A validated sweep file and its jobs, in a fixed order."""

    name: str
    sweep_id: str  # name + digest of every planned run id: changes when any run does
    scenario: str
    path: Path
    spec: Mapping[str, Any]  # the validated file as plain data (stored with the sweep)
    jobs: tuple[Job, ...]
    merged_duplicates: int = 0
    varied: tuple[str, ...] = field(default=())  # parameters the grid or samples vary


def load_sweep(path: str | Path) -> Sweep:
    """Read, validate and expand a sweep file. Raises ``InputFileError`` (file:line) or
    ``UserError`` (missing file)."""
    path = Path(path)
    raw = _read_toml(path)
    spec = _validate(raw, path)
    return _expand(spec, path)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such sweep file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(path, f"not valid TOML: {exc}", _toml_error_line(str(exc))) from None
    except RecursionError:
        raise InputFileError(path, "not valid TOML: nested too deeply") from None


def _fail(path: Path, loc: tuple[int | str, ...], what: str) -> InputFileError:
    dotted = ".".join(str(part) for part in loc) or "(top level)"
    return InputFileError(path, f"key {dotted}: {what}", _key_line(path, loc))


_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\" -]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\" -]+?)\s*=")


def _toml_error_line(message: str) -> int | None:
    match = re.search(r"line (\d+)", message)
    return int(match.group(1)) if match else None


def _key_line(path: Path, loc: tuple[int | str, ...]) -> int | None:
    """The line of the key an error points at, else of its nearest enclosing key or
    table; dotted keys (``params.x = …``) count as nested tables, as TOML reads them.
    (A sweep file has no arrays of tables, so a list index stays with its key.)"""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    where: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(lines, start=1):
        if header := _HEADER.match(line):
            table = _dotted(header.group(1))
            where.setdefault(table, number)
        elif key := _KEY.match(line):
            where.setdefault((*table, *_dotted(key.group(1))), number)
    names = tuple(part for part in loc if isinstance(part, str))
    for end in range(len(names), 0, -1):
        if names[:end] in where:
            return where[names[:end]]
    return None


def _dotted(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip('"') for part in text.split("."))


def _validate(raw: dict[str, Any], path: Path) -> SweepFile:
    try:
        return SweepFile.model_validate(raw)
    except ValidationError as exc:
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        first = errors[0]
        # Union members and validator wrappers add their own names to the location.
        loc = tuple(p for p in first["loc"] if p not in _PYDANTIC_NOISE)
        got = first.get("input")
        got_text = "" if isinstance(got, dict) else f", got {got!r}"
        more = len(errors) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise _fail(path, loc, f"{first['msg']}{got_text}{tail}") from None


_PYDANTIC_NOISE = frozenset(
    {"list[int]", "SeedRange", "list[str]", "bool", "int", "float", "str", "function-after"}
)


def _expand(spec: SweepFile, path: Path) -> Sweep:
    section = spec.sweep
    population = section.scenario in POPULATIONS
    if section.scenario not in SCENARIOS and not population:
        known = ", ".join(sorted({*SCENARIOS, *POPULATIONS}))
        raise _fail(path, ("sweep", "scenario"), f"unknown scenario; available: {known}")
    entry = POPULATIONS[section.scenario] if population else SCENARIOS[section.scenario]
    params_type = entry.params_type
    profiles = _profiles(section, why_no_phone(entry, population), path)
    _check_size(spec, len(profiles), path)
    seeds = _seeds(section.seeds)
    points = _points(spec, params_type, path)
    # A profile's canonical JSON is part of every run id's digest: encoded once, not per run.
    profile_json = {id(p): _canonical(p.model_dump(mode="json")) for p in profiles if p}
    jobs: dict[str, Job] = {}
    total = 0
    for overrides in points:
        params = _canonical(params_dict(_parse_point(spec, params_type, overrides, path)))
        for profile in profiles:
            encoded = profile_json[id(profile)] if profile is not None else "null"
            for seed in seeds:
                total += 1
                run_id = _run_id(section, profile, encoded, seed, params)
                jobs.setdefault(
                    run_id,
                    Job(run_id, section.name, "", section.scenario, profile, seed, overrides),
                )
    sweep_id = f"{section.name}-{_digest(sorted(jobs))[:10]}"
    ordered = tuple(_with_sweep_id(job, sweep_id) for job in jobs.values())
    varied = tuple(sorted({*spec.grid, *(spec.random.params if spec.random else {})}))
    return Sweep(
        name=section.name,
        sweep_id=sweep_id,
        scenario=section.scenario,
        path=path,
        spec=spec.model_dump(mode="json"),
        jobs=ordered,
        merged_duplicates=total - len(ordered),
        varied=varied,
    )


def _parse_point(
    spec: SweepFile, params_type: type[Any], overrides: Mapping[str, str], path: Path
) -> Any:
    """The scenario's parameters for one point; its own checks (a negative duration, a
    low above a high) fail at the line of the key that breaks them."""
    try:
        return parse_params(params_type, overrides, spec.sweep.scenario)
    except UserError as exc:
        raise _fail(path, _culprit(spec, params_type, overrides), str(exc)) from None


def _culprit(
    spec: SweepFile, params_type: type[Any], overrides: Mapping[str, str]
) -> tuple[str, ...]:
    """Where a point the scenario rejects goes wrong: the first key that fails alone with
    the scenario's defaults; else (only a combination fails) the first key it sets."""
    sections = {
        **{k: ("fixed", k) for k in spec.fixed},
        **{k: ("grid", k) for k in spec.grid},
        **{k: ("random", "params", k) for k in (spec.random.params if spec.random else {})},
    }
    for key, text in overrides.items():
        try:
            parse_params(params_type, {key: text}, spec.sweep.scenario)
        except UserError:
            return sections[key]
    return sections[next(iter(overrides))] if overrides else ("sweep", "scenario")


def _with_sweep_id(job: Job, sweep_id: str) -> Job:
    return Job(job.run_id, job.sweep, sweep_id, job.scenario, job.profile, job.seed, job.overrides)


def _profiles(section: SweepSection, no_phone: str, path: Path) -> list[DeviceProfile | None]:
    """The sweep's profiles, loaded; ``[None]`` for a scenario that has no phone to
    profile (``no_phone`` says why: it draws its own phones, or models none)."""
    key = "profile" if section.profile is not None else "profiles"
    names = [section.profile] if section.profile is not None else section.profiles
    if no_phone:
        if names is not None:
            kind = "population scenario" if section.scenario in POPULATIONS else "scenario"
            what = f"{kind} {section.scenario!r} {no_phone}"
            raise _fail(path, ("sweep", key), f"{what}; remove {key}")
        return [None]
    loaded: list[DeviceProfile | None] = []
    for name in names or [_DEFAULT_PROFILE]:
        # A path is taken relative to the sweep file, so the file works from any directory.
        candidate = path.parent / name
        target = candidate if name.endswith(".toml") and candidate.is_file() else name
        try:
            loaded.append(load_profile(target))
        except UserError as exc:
            raise _fail(path, ("sweep", key), str(exc)) from None
    return loaded


MAX_RUNS = 1_000_000  # per sweep file: its jobs are planned in memory before any runs


def _check_size(spec: SweepFile, profiles: int, path: Path) -> None:
    """Refuse a file planning more than ``MAX_RUNS`` runs before expanding it (which would
    take minutes and gigabytes): count the product of its factors, duplicates included."""
    seeds = spec.sweep.seeds
    factors = {
        "grid point": math.prod(len(values) for values in spec.grid.values()),
        "sample": spec.random.samples if spec.random is not None else 1,
        "profile": profiles,
        "seed": len(seeds) if isinstance(seeds, list) else seeds.count,
    }
    planned = math.prod(factors.values())
    if planned > MAX_RUNS:
        product = " × ".join(f"{n:,} {what}{'s' if n != 1 else ''}" for what, n in factors.items())
        what = f"plans {planned:,} runs ({product}); at most {MAX_RUNS:,} per sweep file: split it"
        raise _fail(path, ("sweep",), what)


def _seeds(seeds: list[int] | SeedRange) -> list[int]:
    values = seeds if isinstance(seeds, list) else range(seeds.start, seeds.start + seeds.count)
    return list(dict.fromkeys(validate_seed(s) for s in values))


def _points(spec: SweepFile, params_type: type[Any], path: Path) -> list[dict[str, str]]:
    """Every combination of fixed values, grid values and random samples, as --set strings."""
    fields = set(params_type.__dataclass_fields__)
    sampled = spec.random.params if spec.random else {}
    seen: dict[str, str] = {}
    for section, keys in (("fixed", spec.fixed), ("grid", spec.grid), ("random", sampled)):
        for key in keys:
            loc: tuple[str, ...] = (
                (section, "params", key) if section == "random" else (section, key)
            )
            if key not in fields:
                known = ", ".join(sorted(fields))
                what = f"scenario {spec.sweep.scenario!r} has no parameter {key!r}; it has: {known}"
                raise _fail(path, loc, what)
            if key in seen:
                raise _fail(path, loc, f"parameter {key!r} is already set in [{seen[key]}]")
            seen[key] = section
    hints = _hints(params_type)
    fixed = {k: _text(v, hints[k], ("fixed", k), path) for k, v in spec.fixed.items()}
    grid = {k: [_text(v, hints[k], ("grid", k), path) for v in vs] for k, vs in spec.grid.items()}
    samples = _samples(spec.random, hints, path)
    points = []
    for combo in itertools.product(*grid.values()):
        for sample in samples:
            points.append({**fixed, **dict(zip(grid, combo, strict=True)), **sample})
    return points


def _samples(
    random: RandomSpec | None, hints: Mapping[str, Any], path: Path
) -> list[dict[str, str]]:
    if random is None:
        return [{}]
    columns: dict[str, list[str]] = {}
    for name, dist in random.params.items():
        # One stream per parameter, keyed by its name: others' draws do not shift.
        sequence = np.random.SeedSequence(random.seed, spawn_key=(zlib.crc32(name.encode()),))
        values = dist.draw(np.random.default_rng(sequence), random.samples)
        loc = ("random", "params", name)
        columns[name] = [_text(v, hints[name], loc, path) for v in values]
    return [{k: col[i] for k, col in columns.items()} for i in range(random.samples)]


def _hints(params_type: type[Any]) -> dict[str, Any]:
    import typing

    return typing.get_type_hints(params_type)


def _text(value: Value, kind: Any, loc: tuple[str, ...], path: Path) -> str:
    """A TOML value as the --set text the scenario parses, checked against its type now."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = repr(value)  # round-trips exactly
    else:
        text = str(value)
    try:
        parsed = coerce(text, kind, loc[-1])
    except UserError as exc:
        raise _fail(path, loc, str(exc)) from None
    # TOML has nan and inf, and float("nan") parses; no scenario means either, and a run
    # given one fails (or, worse, runs forever) only once the sweep is under way.
    if isinstance(parsed, float) and not math.isfinite(parsed):
        raise _fail(path, loc, f"expected a finite number, got {parsed}")
    return text


def _run_id(
    section: SweepSection,
    profile: DeviceProfile | None,
    profile_json: str,
    seed: int,
    params_json: str,
) -> str:
    """``<sweep>-<profile>-s<seed>-<digest>`` from every input, so the same sweep file gives
    the same ids and a changed input (profile file, parameter, mqoe version) a new one.

    The digest is the SHA-256 of the canonical JSON of ``{"sweep", "scenario", "profile"
    (its model dump), "seed", "params", "version"}``; the profile's and the parameters'
    parts arrive already encoded (``_canonical``) and are spliced in, in sorted key order,
    giving the very text ``_canonical`` of the whole would."""
    parts = {
        "params": params_json,
        "profile": profile_json,
        "scenario": _canonical(section.scenario),
        "seed": _canonical(seed),
        "sweep": _canonical(section.name),
        "version": _canonical(__version__),
    }
    payload = "{" + ",".join(f"{_canonical(k)}:{v}" for k, v in sorted(parts.items())) + "}"
    digest = hashlib.sha256(payload.encode()).hexdigest()[:12]
    if profile is None:
        return f"{section.name}-s{seed}-{digest}"
    return f"{section.name}-{_UNSAFE.sub('_', profile.name)}-s{seed}-{digest}"


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _digest(value: object) -> str:
    return hashlib.sha256(_canonical(value).encode()).hexdigest()


def describe(sweep: Sweep) -> dict[str, object]:
    """The sweep's row in the store's ``sweeps`` view."""
    profiles = sorted({job.profile_name for job in sweep.jobs})
    return {
        "sweep": sweep.name,
        "scenario": sweep.scenario,
        "profiles": ",".join(profiles),
        "varied": ",".join(sweep.varied),
        "planned_runs": len(sweep.jobs),
        "spec_path": str(sweep.path),
        "spec": json.dumps(sweep.spec, sort_keys=True),
        "mqoe_version": __version__,
    }


__all__ = ["Job", "Sweep", "describe", "load_sweep"]
