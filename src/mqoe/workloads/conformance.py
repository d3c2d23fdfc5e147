"""Conformance checks every registered scenario must pass (run in CI over the registry).

Like Gymnasium's env checker: a scenario's quick run completes, reports finite scalar
metrics and tidy tables, and the same (profile, params, seed) gives identical output.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from mqoe.device.profiles import DeviceProfile
from mqoe.workloads import get_scenario
from mqoe.workloads.runner import run_scenario


class ConformanceError(AssertionError):
    pass


def check_scenario(name: str, profile: DeviceProfile, seed: int = 7) -> None:
    """Raise ConformanceError if scenario ``name`` breaks the contract."""
    scenario = get_scenario(name)
    quick = dict(scenario.quick)
    first = run_scenario(name, profile, seed, quick)
    second = run_scenario(name, profile, seed, quick)
    if not first.metrics:
        raise ConformanceError(f"{name}: reports no metrics")
    for key, value in first.metrics.items():
        if isinstance(value, float) and math.isinf(value):
            raise ConformanceError(f"{name}: metric {key} is infinite")
    if _nan_to_none(first.metrics) != _nan_to_none(second.metrics):
        raise ConformanceError(f"{name}: same seed gave different metrics")
    if first.run_id != second.run_id:
        raise ConformanceError(f"{name}: same inputs gave different run ids")
    if set(first.tables) != set(second.tables):
        raise ConformanceError(f"{name}: same seed gave different tables")
    for table, frame in first.tables.items():
        if not isinstance(frame, pd.DataFrame):
            raise ConformanceError(f"{name}: table {table} is not a DataFrame")
        try:
            pd.testing.assert_frame_equal(frame, second.tables[table])
        except AssertionError as exc:
            raise ConformanceError(f"{name}: table {table} differs between runs: {exc}") from None


def _nan_to_none(metrics: Mapping[str, object]) -> dict[str, object]:
    """NaN never equals itself; map it to None so identical runs compare equal."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in metrics.items()}
