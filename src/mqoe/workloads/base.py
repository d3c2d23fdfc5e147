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
from typing import TYPE_CHECKING, Any, Protocol

from mqoe.errors import UserError
from mqoe.params import CPU_KNOBS, check_number, coerce, field_range

if TYPE_CHECKING:
    import pandas as pd

    from mqoe.device.phone import Phone
    from mqoe.results.tables import ColumnTable

Scalar = float | int | bool | str


@dataclass(frozen=True)
class ScenarioOutput:
    """What a run reports: scalar metrics (one column each) and named tidy tables
    (DataFrames, or :class:`~mqoe.results.tables.ColumnTable`: stored without pandas)."""

    metrics: Mapping[str, Scalar]
    tables: Mapping[str, pd.DataFrame | ColumnTable] = field(default_factory=dict)


@dataclass
class WarmStart:
    """Where a scenario's set-up phase ends, for warm starts (:mod:`mqoe.workloads.warm`).

    Runs that differ only in ``late_params`` (parameters the set-up never reads) share
    every event up to this point: the scenario calls :meth:`reached` there, just before
    the first event that reads them. A warm-start runner simulates the set-up once and
    continues one copy of the phone per run from here, after ``rebind(params)`` has
    applied that run's late parameters (it returns the run's duration in ns)."""

    late_params: frozenset[str]
    rebind: Callable[[Any], int]
    handler: Callable[[], None] | None = None  # set by a warm-start runner

    def reached(self) -> None:
        if self.handler is not None:
            self.handler()


@dataclass(frozen=True)
class Session:
    """A built scenario: how long to simulate, and how to collect results afterwards
    (and, optionally, where its set-up ends, for warm starts)."""

    duration_ns: int
    collect: Callable[[], ScenarioOutput]
    warm: WarmStart | None = None


class Scenario(Protocol):
    """A registered workload (see :data:`mqoe.workloads.SCENARIOS`).

    A scenario that models no phone (the trace-driven mode) says so with a class
    attribute ``device = False`` (see :func:`runs_on_a_phone`): it is then built on a
    :class:`~mqoe.device.no_device.NoDevice` instead of a
    :class:`~mqoe.device.phone.Phone`, and its runs take no profile.
    """

    name: str
    summary: str
    params_type: type[Any]  # a frozen dataclass of parameters with defaults
    # Parameter overrides that make a short run, for conformance checks and smoke tests.
    quick: Mapping[str, str]

    def build(self, phone: Phone, params: Any) -> Session: ...


NO_PROFILE = "none"  # a run's profile when its scenario models no phone


def runs_on_a_phone(scenario: object) -> bool:
    """Whether ``scenario`` models a phone (the default) or none (``device = False``)."""
    return bool(getattr(scenario, "device", True))


def why_no_phone(scenario: object, population: bool) -> str:
    """Why a run of ``scenario`` takes no profile, as errors say it; "" when it runs on
    a phone. A population (``population``) draws its own phones."""
    if population:
        return "draws its own phones"
    return "" if runs_on_a_phone(scenario) else "models no phone"


def parse_params(params_type: type[Any], overrides: Mapping[str, str], scenario: str) -> Any:
    """Build a params dataclass from ``key=value`` strings, with one-line errors for users.

    Every number is checked before anything is simulated: finite first (NaN would pass
    the scenario's own ``x <= 0`` checks), then the scenario's ``__post_init__`` checks,
    then each field's declared range (:func:`mqoe.params.field_range`: by its unit, or
    its own metadata), so an impossible value fails here rather than in the engine.
    """
    fields = {f.name: f for f in dataclasses.fields(params_type)}
    hints = typing.get_type_hints(params_type)
    values: dict[str, Any] = {}
    for key, given in overrides.items():
        if key in CPU_KNOBS:  # the phone's, not the scenario's (mqoe.device.cpu.knobs)
            # Here, not at the top: the CPU model (and the profiles' schema with it) is
            # imported only by a run that sets a knob.
            from mqoe.device.cpu.knobs import check_cpu_knob

            check_cpu_knob(key, given)
            continue
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise UserError(
                f"scenario {scenario!r} has no parameter {key!r}; it has: {known} "
                f"(and the phone's {', '.join(CPU_KNOBS)})"
            )
        values[key] = coerce(given, hints[key], f"--set {key}")
        check_number(values[key], None, f"--set {key}", given.strip())
    try:
        params = params_type(**values)
    except (ValueError, TypeError, OverflowError) as exc:
        raise UserError(f"scenario {scenario!r}: {exc}") from None
    for name, spec in fields.items():
        limit = field_range(spec, hints[name])
        text = overrides[name].strip() if name in overrides else None
        check_number(getattr(params, name), limit, f"--set {name}", text)
    return params


def params_dict(params: Any) -> dict[str, Any]:
    """Parameters as a plain dict (stored with every run)."""
    return dataclasses.asdict(params)


def parse_assignments(items: list[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` → ``{"a": "1", "b": "x"}``, for ``--set``. A key given twice
    is an error (which one was meant?), whether after one ``--set`` or across several."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"--set {item!r}: expected key=value")
        if key in out:
            raise UserError(
                f"--set: parameter {key!r} given twice ({out[key]!r}, {value.strip()!r})"
            )
        out[key] = value.strip()
    return out
