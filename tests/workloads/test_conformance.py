"""The conformance checker must catch a scenario that breaks determinism."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import pytest

from mqoe.device.phone import Phone
from mqoe.device.profiles import load_profile
from mqoe.workloads import SCENARIOS
from mqoe.workloads.base import ScenarioOutput, Session
from mqoe.workloads.conformance import ConformanceError, check_scenario

_calls = itertools.count()


@dataclass(frozen=True)
class _Params:
    duration_s: float = 0.01


class _LeakyScenario:
    """Reads state outside the seeded streams: a different result on every run."""

    name = "leaky"
    summary = "test double"
    params_type = _Params
    quick: Mapping[str, str] = MappingProxyType({})

    def build(self, phone: Phone, params: _Params) -> Session:
        return Session(10_000_000, lambda: ScenarioOutput({"value": float(next(_calls))}))


def test_a_nondeterministic_scenario_fails_conformance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SCENARIOS, "leaky", _LeakyScenario())
    with pytest.raises(ConformanceError, match="different metrics"):
        check_scenario("leaky", load_profile("nokia-1"))


def test_nan_metrics_still_compare_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    class _NanScenario(_LeakyScenario):
        def build(self, phone: Phone, params: _Params) -> Session:
            return Session(10_000_000, lambda: ScenarioOutput({"value": float("nan")}))

    monkeypatch.setitem(SCENARIOS, "nan", _NanScenario())
    check_scenario("nan", load_profile("nokia-1"))
