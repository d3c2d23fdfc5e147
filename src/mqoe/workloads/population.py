"""Population runs: many phones at once, where a scenario of one phone would be too slow.

A population scenario is run like a phone scenario (``mqoe run NAME --set k=v --seed N``)
and stored the same way, but it draws its phones itself (the profile catalogue is its
input), so it takes no ``--profile``. Its result is scalar metrics plus tidy tables, as
:class:`~mqoe.workloads.base.ScenarioOutput`. The registry is explicit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Protocol

from mqoe.errors import UserError
from mqoe.workloads.base import ScenarioOutput
from mqoe.workloads.fleet import FleetParams, run_fleet


class Population(Protocol):
    """A registered population scenario (see :data:`POPULATIONS`)."""

    name: str
    summary: str
    params_type: type[Any]  # a frozen dataclass of parameters with defaults
    quick: Mapping[str, str]  # overrides for a short run

    def run(self, params: Any, seed: int) -> ScenarioOutput: ...


class Fleet:
    """The responsiveness study's crowd-sourced data: phones of the 15 models over days of
    use → ANR/SNR."""

    name = "fleet"
    summary = "ANR/SNR of a fleet of phones over days of use, under a WAM policy (MobiCom 2020)"
    params_type = FleetParams
    quick: Mapping[str, str] = MappingProxyType({"phones": "300", "days": "7"})

    def run(self, params: FleetParams, seed: int) -> ScenarioOutput:
        result = run_fleet(dataclasses.replace(params, seed=seed))
        tables = {
            "phones": result.phones,
            "events": result.events,
            "per_app": result.per_app(),
            "by_model": result.breakdown("model"),
            "by_android": result.breakdown("android"),
        }
        return ScenarioOutput(metrics=result.summary(), tables=tables)


POPULATIONS: dict[str, Population] = {p.name: p for p in (Fleet(),)}


def get_population(name: str) -> Population:
    if name not in POPULATIONS:
        raise UserError(
            f"unknown population scenario {name!r}; available: {', '.join(POPULATIONS)}"
        )
    return POPULATIONS[name]
