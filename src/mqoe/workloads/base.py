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
from mqoe.params import coerce

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


def parse_params(params_type: type[Any], overrides: Mapping[str, str], scenario: str) -> Any:
    """Build a params dataclass from ``key=value`` strings, with one-line errors for users."""
    fields = {f.name: f for f in dataclasses.fields(params_type)}
    hints = typing.get_type_hints(params_type)
    values: dict[str, Any] = {}
    for key, text in overrides.items():
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise UserError(f"scenario {scenario!r} has no parameter {key!r}; it has: {known}")
        values[key] = coerce(text, hints[key], f"--set {key}")
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
