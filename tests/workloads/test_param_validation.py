"""Scenario parameters are checked before anything is simulated, for every registered
scenario and population: numbers finite, in the range their unit (or their field's own
declaration) allows, and each error is one line naming the key."""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.device.profiles import load_profile
from mqoe.errors import UserError
from mqoe.params import field_range
from mqoe.workloads import SCENARIOS
from mqoe.workloads.base import parse_params
from mqoe.workloads.population import POPULATIONS
from mqoe.workloads.runner import run_population, run_scenario

REGISTRY: dict[str, Any] = {**SCENARIOS, **POPULATIONS}


def _fields(kinds: tuple[type, ...]) -> Iterator[tuple[str, str]]:
    for name, entry in sorted(REGISTRY.items()):
        hints = typing.get_type_hints(entry.params_type)
        for field in dataclasses.fields(entry.params_type):
            if hints[field.name] in kinds:
                yield name, field.name


FLOAT_FIELDS = list(_fields((float,)))
NUMBER_FIELDS = list(_fields((float, int)))


def test_the_registry_has_float_parameters_to_check() -> None:
    assert len(FLOAT_FIELDS) > 50  # every scenario and the fleet contribute some
    assert {name for name, _ in FLOAT_FIELDS} == set(REGISTRY)


def _never_simulate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a run gets as far as building its phone (or its stand-in, for a
    scenario without one) or a population."""

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("simulation started before the parameters were checked")

    monkeypatch.setattr("mqoe.workloads.runner.PreparedRun.build", boom)
    for population in POPULATIONS.values():
        monkeypatch.setattr(population, "run", boom)


def _run(name: str, overrides: dict[str, str]) -> None:
    if name in POPULATIONS:
        run_population(name, 0, overrides)
    else:
        run_scenario(name, load_profile("nokia-1"), 0, overrides)


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e400"])
@pytest.mark.parametrize(("scenario", "key"), FLOAT_FIELDS)
def test_non_finite_floats_are_refused_before_simulating(
    monkeypatch: pytest.MonkeyPatch, scenario: str, key: str, text: str
) -> None:
    _never_simulate(monkeypatch)
    with pytest.raises(UserError) as info:
        _run(scenario, {key: text})
    message = str(info.value)
    assert f"{key}={text}" in message
    assert "finite" in message
    assert "\n" not in message


def _refusal(scenario: str, key: str, text: str) -> str:
    """The one-line error for ``key=text``: the generic check names the key; a
    scenario's own check (``nice must be in -20..19``) speaks for itself."""
    params_type = REGISTRY[scenario].params_type
    with pytest.raises(UserError) as info:
        parse_params(params_type, {key: text}, scenario)
    message = str(info.value)
    assert "\n" not in message
    assert f"--set {key}={text}: expected" in message or message.startswith(
        (f"scenario {scenario!r}: ", f"{scenario}: ", "seed must be")
    ), message
    return message


@pytest.mark.parametrize(("scenario", "key"), NUMBER_FIELDS)
def test_absurdly_large_numbers_are_refused_naming_the_key(scenario: str, key: str) -> None:
    kind = typing.get_type_hints(REGISTRY[scenario].params_type)[key]
    field = {f.name: f for f in dataclasses.fields(REGISTRY[scenario].params_type)}[key]
    if kind is float and field_range(field, kind) is None:
        return  # a dimensionless number: its scenario's own check decides (tested there)
    _refusal(scenario, key, "1e300" if kind is float else str(10**30))


@pytest.mark.parametrize(("scenario", "key"), NUMBER_FIELDS)
def test_negative_amounts_are_refused_unless_the_field_gives_them_a_meaning(
    scenario: str, key: str
) -> None:
    params_type = REGISTRY[scenario].params_type
    kind = typing.get_type_hints(params_type)[key]
    field = {f.name: f for f in dataclasses.fields(params_type)}[key]
    limit = field_range(field, kind)
    if limit is None or limit.signed or limit.low < 0:
        return  # unit-less, or negative values documented as meaningful (−1 = off, …)
    _refusal(scenario, key, "-10")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_defaults_and_quick_runs_lie_within_the_declared_ranges(name: str) -> None:
    entry = REGISTRY[name]
    parse_params(entry.params_type, {}, name)
    parse_params(entry.params_type, dict(entry.quick), name)


@pytest.mark.parametrize(
    ("scenario", "key", "text"),
    [
        # The cases a user found: each a traceback, some only after simulating a while.
        ("frame-deadlines", "duration_s", "nan"),
        ("frame-deadlines", "duration_s", "inf"),
        ("frame-deadlines", "duration_s", "1e400"),
        ("spiral", "rtt_ms", "nan"),
        ("frame-deadlines", "rt_rate_hz", "nan"),
        ("frame-deadlines", "frame_mcycles", "inf"),
        ("spiral", "competitor_start_s", "-10"),
        # …and their finite cousins, which overflowed the nanosecond clock or crashed later.
        ("frame-deadlines", "duration_s", "1e300"),
        ("frame-deadlines", "fps", "1e300"),
        ("frame-deadlines", "fps", "1e-300"),
        ("frame-deadlines", "rt_rate_hz", "1e-300"),
        ("netpis", "read_period_ms", "1e-300"),
        ("app-switching", "interaction_s", "1e300"),
        ("flash-aging", "days", "1e300"),
        ("frame-deadlines", "hogs", "99999999999999999999"),
        ("spiral", "iw_segments", "-5"),  # a ValueError deep in the TCP model
        ("video", "generator_adj", "5000"),  # outside oom_score_adj's -1000..1000
    ],
)
def test_the_reported_cases_fail_fast_with_one_line(
    monkeypatch: pytest.MonkeyPatch, scenario: str, key: str, text: str
) -> None:
    _never_simulate(monkeypatch)
    with pytest.raises(UserError) as info:
        _run(scenario, {key: text})
    assert f"--set {key}={text}: expected" in str(info.value)


def test_a_segment_longer_than_the_buffer_is_refused_before_simulating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _never_simulate(monkeypatch)  # it was a ValueError from the streaming client
    with pytest.raises(UserError, match="segment_s must not exceed buffer_max_s"):
        _run("spiral", {"segment_s": "300", "buffer_max_s": "240"})


@pytest.mark.parametrize(
    ("scenario", "overrides"),
    [
        ("spiral", {"competitor_stop_s": "-1", "max_rate_kbps": "-1"}),  # −1 = off
        ("video", {"boot_free_mb": "-1"}),  # negative: no boot cache
        ("video", {"generator_touch_s": "0", "setup_s": "0"}),  # 0 = never / no setup
        ("netpis", {"fg_rcvbuf_kb": "0"}),  # 0 = the kernel's default buffer
        ("frame-deadlines", {"rt_rate_hz": "0", "fps": "24"}),
        ("spiral", {"iw_segments": "0"}),  # 0 = the default window for the connection mode
    ],
)
def test_documented_sentinels_and_zeros_are_still_accepted(
    scenario: str, overrides: dict[str, str]
) -> None:
    params = parse_params(REGISTRY[scenario].params_type, overrides, scenario)
    for key, text in overrides.items():
        assert getattr(params, key) == float(text)


_FD = SCENARIOS["frame-deadlines"].params_type


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_any_duration_is_accepted_in_range_or_refused_in_one_line(value: float) -> None:
    text = repr(value)
    try:
        params = parse_params(_FD, {"duration_s": text}, "frame-deadlines")
    except UserError as exc:
        assert str(exc).count("\n") == 0 and "duration_s" in str(exc)
        return
    # What is accepted is a time the nanosecond clock can hold, and at least one tick.
    assert math.isfinite(params.duration_s)
    assert 1e-9 <= params.duration_s <= 1e9
    assert round(params.duration_s * 1e9) < 2**63
