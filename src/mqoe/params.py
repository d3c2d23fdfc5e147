"""Typed ``key=value`` parameters: one parser for scenario ``--set`` pairs, ABR rule
specs and every other place users configure a component by name (as Mahimahi does).

Scenario parameters also have ranges, declared once: by the unit in the field's name
(``duration_s`` is a time, ``rtt_ms`` too, ``rt_rate_hz`` a rate, ``buffer_kbit`` a size…;
see :func:`unit_range`), or by the field's own metadata where its unit does not say
enough (:func:`bounds`) or where a negative value means something (:data:`NEGATIVE_OK`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from mqoe.errors import UserError

T = TypeVar("T")
# The run-level CPU knobs every phone scenario takes (``--set governor=…``), applied by
# :mod:`mqoe.device.cpu.knobs`; named here so checking a run's keys imports no device.
CPU_KNOBS = ("governor", "hotplug", "interaction_boost")
_NONE_WORDS = ("none", "")
_BOOLS = {"1": True, "true": True, "yes": True, "on": True}
_BOOLS |= {"0": False, "false": False, "no": False, "off": False}


def coerce(text: str, kind: Any, label: str) -> Any:
    """Parse ``text`` as the annotated type: bool, int, float, str, a ``Literal`` choice,
    or an optional one (``none`` → None). ``label`` names the setting in errors
    (``"--set hogs"``, ``"bba:reservoir_s"``): ``UserError("label=text: expected …")``."""
    text = text.strip()
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        if len(options) < len(typing.get_args(kind)) and text.lower() in _NONE_WORDS:
            return None
        if len(options) != 1:
            raise TypeError(f"parameter {label} has unsupported type {kind!r}")
        return coerce(text, options[0], label)
    if origin is Literal:
        choices = typing.get_args(kind)
        if text not in choices:
            raise UserError(f"{label}={text}: expected one of {', '.join(map(str, choices))}")
        return text
    if kind is bool:
        if text.lower() not in _BOOLS:
            raise UserError(f"{label}={text}: expected true or false")
        return _BOOLS[text.lower()]
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise UserError(f"{label}={text}: expected {what}") from None
    if kind is str:
        return text
    raise TypeError(f"parameter {label} has unsupported type {kind!r}; use bool/int/float/str")


def constructor_parameters(component: type) -> dict[str, Any]:
    """Keyword parameters of a class's constructor with their (evaluated) annotations.

    A class compiled with mypyc (:mod:`mqoe.native`) has a text signature instead: its
    parameters read as positional-only and unannotated, though its constructor takes
    them by keyword and checks their types. There each default's type stands for the
    annotation (compiled defaults keep their types: ``99.0`` for a float, ``0`` for an
    int), and a parameter without a default is a string."""
    return dict(_constructor_parameters(component))


@functools.lru_cache(maxsize=256)
def _constructor_parameters(component: type) -> dict[str, Any]:
    """:func:`constructor_parameters`, once per class (parsing a compiled class's text
    signature takes milliseconds, and a sweep builds its components once per run)."""
    out: dict[str, Any] = {}
    compiled = not inspect.isfunction(getattr(component, "__init__", None))
    keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for parameter in inspect.signature(component, eval_str=True).parameters.values():
        if compiled and parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            has_default = parameter.default is not inspect.Parameter.empty
            out[parameter.name] = type(parameter.default) if has_default else str
        elif parameter.kind in keyword:
            empty = parameter.annotation is inspect.Parameter.empty
            out[parameter.name] = str if empty else parameter.annotation
    return out


def make_component(spec: str, registry: Mapping[str, type[T]], what: str) -> T:
    """``"name"`` or ``"name:key=value,…"`` → ``registry[name](key=value, …)``, values
    parsed by the constructor's annotations. ``what`` names the kind of component in
    errors (``"ABR rule"``, ``"WAM policy"``): one-line ``UserError``s for unknown names,
    unknown or repeated keys, and bad values."""
    name, sep, arguments = spec.strip().partition(":")
    name = name.strip()
    parameters = constructor_parameters(_lookup(registry, name, what))
    kwargs: dict[str, Any] = {}
    for item in arguments.split(",") if sep else ():
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UserError(f"{what} {spec.strip()!r}: expected key=value, got {item!r}")
        if key in kwargs:
            raise UserError(f"{what} {name!r}: parameter {key!r} given twice")
        _check_key(parameters, key, name, what)
        kwargs[key] = coerce(text, parameters[key], f"{name}:{key}")
    return build_component(name, registry, kwargs, what)


def build_component(
    name: str, registry: Mapping[str, type[T]], kwargs: Mapping[str, Any], what: str
) -> T:
    """``registry[name](**kwargs)`` for values already typed (a profile's TOML), with the
    same one-line ``UserError``s as :func:`make_component`."""
    component = _lookup(registry, name, what)
    parameters = constructor_parameters(component)
    for key in kwargs:
        _check_key(parameters, key, name, what)
    try:
        return component(**kwargs)
    except (ValueError, TypeError) as exc:
        raise UserError(f"{what} {name!r}: {exc}") from None


def _lookup(registry: Mapping[str, type[T]], name: str, what: str) -> type[T]:
    component = registry.get(name)
    if component is None:
        available = ", ".join(sorted(registry))
        raise UserError(f"unknown {what} {name!r}; available: {available}")
    return component


def _check_key(parameters: Mapping[str, Any], key: str, name: str, what: str) -> None:
    if key not in parameters:
        known = ", ".join(sorted(parameters)) or "none"
        raise UserError(f"{what} {name!r} has no parameter {key!r}; it has: {known}")


# -- ranges ---------------------------------------------------------------------------
RANGE_KEY = "mqoe.range"  # dataclass field metadata: the field's own Range
NEGATIVE_KEY = "mqoe.negative"  # dataclass field metadata: negative values mean something

# Simulated time is integer nanoseconds, which numpy and the engine hold as int64 (±292
# years). Ten years keeps any time parameter, and sums of a few of them, far inside that,
# and is longer than anything worth simulating event by event.
MAX_TIME_S = 10 * 365.25 * 86_400.0
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Range:
    """The values a numeric parameter accepts: ``low ≤ value ≤ high``, plus 0 when
    ``zero`` (0 conventionally means off / none / the default), and the same magnitudes
    negated when ``signed``. ``what`` and ``unit`` name the quantity in errors."""

    low: float
    high: float
    zero: bool = False
    signed: bool = False
    what: str = "a number"
    unit: str = ""

    def __contains__(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if value == 0 and self.zero:
            return True
        magnitude = abs(value) if self.signed else value
        return self.low <= magnitude <= self.high

    def describe(self) -> str:
        """E.g. ``"0 or a time of 1e-09 to 3.156e+08 s"``."""
        sign = "±" if self.signed else ""
        span = f"{self.what} of {sign}{_number(self.low)} to {sign}{_number(self.high)}"
        span += f" {self.unit}" if self.unit else ""
        return f"0 or {span}" if self.zero and not self.low <= 0 <= self.high else span


def _number(x: float) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


_Unit = tuple[str, float, str]  # (name suffix, base units per one of it, symbol)


@dataclass(frozen=True)
class _Quantity:
    """A kind of amount, with ``low``, the smallest positive amount that means something,
    and ``high``, a generous physical ceiling, both in base units. Below ``low`` (a time
    under the clock's 1 ns tick, a size under a byte, work under a cycle) an amount
    rounds to 0, which means "off" or stalls a loop; 0 itself is allowed."""

    name: str  # in errors: "a time"
    low: float
    high: float
    units: tuple[_Unit, ...]


_QUANTITIES = (
    _Quantity(
        "a time",
        1e-9,
        MAX_TIME_S,
        (
            ("_ns", 1e-9, "ns"),
            ("_us", 1e-6, "µs"),
            ("_ms", 1e-3, "ms"),
            ("_s", 1.0, "s"),
            ("_hour", 3600.0, "h"),
            ("_days", 86_400.0, "days"),
            ("days", 86_400.0, "days"),  # the whole name
        ),
    ),
    # A rate is the inverse of a time: at most one event per clock tick.
    _Quantity("a rate", 1 / MAX_TIME_S, 1e9, (("_hz", 1.0, "Hz"),)),
    # 10^15 cycles ≈ 12 days of a 1 GHz core: far more than any one piece of work.
    _Quantity("work", 1.0, 1e15, (("_cycles", 1.0, "cycles"), ("_mcycles", 1e6, "Mcycles"))),
    # 1 PiB: a thousand times a phone's storage.
    _Quantity(
        "a size",
        1.0,
        2.0**50,
        (
            ("_bytes", 1.0, "bytes"),
            ("_kbit", 125.0, "kbit"),
            ("_kb", 1024.0, "KB"),
            ("_mb", 2.0**20, "MB"),
            ("_gb", 2.0**30, "GB"),
            ("_pages", 4096.0, "pages"),
        ),
    ),
    _Quantity("a volume a day", 1.0, 2.0**50, (("_gb_per_day", 2.0**30, "GB/day"),)),
    # 1 Tbit/s: beyond any link a phone has.
    _Quantity("a bit rate", 1.0, 1e12, (("_kbps", 1e3, "kbit/s"), ("_mbps", 1e6, "Mbit/s"))),
)
_BY_SUFFIX = sorted(
    ((suffix, scale, symbol, q) for q in _QUANTITIES for suffix, scale, symbol in q.units),
    key=lambda entry: -len(entry[0]),  # the longest suffix decides: _gb_per_day over _day
)


def unit_range(name: str) -> Range | None:
    """The range a parameter's unit implies, from its name: an amount of time, rate,
    work, size or bit rate is 0 or between the smallest amount that can be represented
    and a generous physical ceiling (``duration_s``: 0 or 1 ns to 10 years). None when
    the name carries no unit."""
    for suffix, scale, symbol, quantity in _BY_SUFFIX:
        if name.endswith(suffix) and (suffix.startswith("_") or name == suffix):
            low, high = quantity.low / scale, quantity.high / scale
            return Range(low, high, zero=True, what=quantity.name, unit=symbol)
    return None


def bounds(
    low: float, high: float, *, zero: bool = False, what: str = "a number", unit: str = ""
) -> Mapping[str, Range]:
    """Field metadata declaring a parameter's range where its name's unit does not say
    it: ``fps: float = field(default=60.0, metadata=bounds(0.1, 1000, unit="Hz"))``."""
    return types.MappingProxyType({RANGE_KEY: Range(low, high, zero, False, what, unit)})


# Field metadata for an amount whose negative values mean something (say so in the
# field's comment, e.g. "−1 = until the end"): its unit's range, negated values too.
NEGATIVE_OK: Mapping[str, bool] = types.MappingProxyType({NEGATIVE_KEY: True})


def field_range(field: dataclasses.Field[Any], kind: Any) -> Range | None:
    """The declared range of a numeric dataclass field of annotated type ``kind``: its
    metadata, else its unit (:func:`unit_range`), else for integers the int64 range
    (numpy and the engine store them so). None: any finite number."""
    declared = field.metadata.get(RANGE_KEY)
    if isinstance(declared, Range):
        return declared
    found = unit_range(field.name)
    if found is not None and field.metadata.get(NEGATIVE_KEY):
        return dataclasses.replace(found, signed=True)
    if found is not None:
        return found
    if _plain(kind) is int:
        return Range(-INT64_MAX - 1, INT64_MAX, what="an integer")
    return None


def _plain(kind: Any) -> Any:
    """``int | None`` → ``int``; other annotations unchanged."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        if len(options) == 1:
            return options[0]
    return kind


def check_number(value: object, limit: Range | None, label: str, text: str | None = None) -> None:
    """Raise ``UserError("label=text: expected …")`` unless ``value`` is a finite number
    within ``limit`` (any finite number when None). Non-numbers pass (their type was
    checked when they were parsed)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    shown = text if text is not None else repr(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"{label}={shown}: expected a finite number")
    if limit is not None and value not in limit:
        raise UserError(f"{label}={shown}: expected {limit.describe()}")
