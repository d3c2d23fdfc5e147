"""The scenario protocol: how a workload is wired onto a phone and what it reports.

A scenario has frozen, typed parameters (a dataclass with units in field names), builds
its apps and policies on a :class:`~mqoe.device.phone.Phone`, and after the run
collects scalar metrics plus named tidy tables. The runner owns simulated time.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from mqoe.device.phone import Phone
from mqoe.errors import UserError

Scalar = float | int | bool | str


@dataclass(frozen=True)
class ScenarioOutput:
    """What a run reports: scalar metrics (one column each) and named tidy tables."""

    metrics: Mapping[str, Scalar]
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class Session:
    """A built scenario: how long to simulate, and how to collect results afterwards."""

    duration_ns: int
    collect: Callable[[], ScenarioOutput]


class Scenario(Protocol):
    """A registered workload (see :data:`mqoe.workloads.SCENARIOS`)."""

    name: str
    summary: str
    params_type: type[Any]  # a frozen dataclass of parameters with defaults
    # Parameter overrides that make a short run, for conformance checks and smoke tests.
    quick: Mapping[str, str]

    def build(self, phone: Phone, params: Any) -> Session: ...


_BOOLS = {"1": True, "true": True, "yes": True, "on": True}
_BOOLS |= {"0": False, "false": False, "no": False, "off": False}


def _coerce(text: str, kind: Any, key: str) -> Any:
    """Parse a ``--set`` value as the field's type (parameters are bool/int/float/str)."""
    if kind is bool:
        if text.strip().lower() not in _BOOLS:
            raise UserError(f"--set {key}={text}: expected true or false")
        return _BOOLS[text.strip().lower()]
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            label = "an integer" if kind is int else "a number"
            raise UserError(f"--set {key}={text}: expected {label}") from None
    if kind is str:
        return text
    raise TypeError(f"parameter {key} has unsupported type {kind!r}; use bool/int/float/str")


def parse_params(params_type: type[Any], overrides: Mapping[str, str], scenario: str) -> Any:
    """Build a params dataclass from ``key=value`` strings, with one-line errors for users."""
    fields = {f.name: f for f in dataclasses.fields(params_type)}
    hints = typing.get_type_hints(params_type)
    values: dict[str, Any] = {}
    for key, text in overrides.items():
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise UserError(f"scenario {scenario!r} has no parameter {key!r}; it has: {known}")
        values[key] = _coerce(text, hints[key], key)
    try:
        return params_type(**values)
    except (ValueError, TypeError) as exc:
        raise UserError(f"scenario {scenario!r}: {exc}") from None


def params_dict(params: Any) -> dict[str, Any]:
    """Parameters as a plain dict (stored with every run)."""
    return dataclasses.asdict(params)


def parse_assignments(items: list[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` → ``{"a": "1", "b": "x"}`` (later ones win), for ``--set``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out
