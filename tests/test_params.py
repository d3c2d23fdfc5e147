from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.errors import UserError
from mqoe.params import (
    MAX_TIME_S,
    NEGATIVE_OK,
    Range,
    bounds,
    check_number,
    coerce,
    field_range,
    make_component,
    unit_range,
)


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("4", int, 4),
        (" 2.5 ", float, 2.5),
        ("yes", bool, True),
        ("OFF", bool, False),
        ("x", str, "x"),
        ("none", float | None, None),
        ("3", int | None, 3),
        ("cubic", Literal["cubic", "newreno"], "cubic"),
    ],
)
def test_values_parse_as_their_annotated_type(text: str, kind: object, expected: object) -> None:
    assert coerce(text, kind, "k") == expected


@pytest.mark.parametrize(
    ("text", "kind", "fragment"),
    [
        ("4.5", int, "expected an integer"),
        ("fast", float, "expected a number"),
        ("maybe", bool, "expected true or false"),
        ("bbr", Literal["cubic", "newreno"], "expected one of cubic, newreno"),
    ],
)
def test_bad_values_name_the_setting(text: str, kind: object, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment) as info:
        coerce(text, kind, "--set cc")
    assert str(info.value).startswith(f"--set cc={text}")


@given(st.integers(), st.floats(allow_nan=False, allow_infinity=False))
def test_numbers_round_trip(i: int, f: float) -> None:
    assert coerce(str(i), int, "k") == i
    assert coerce(repr(f), float, "k") == f


@given(st.text(max_size=20), st.sampled_from([int, float, bool, str, float | None]))
def test_any_text_parses_or_is_a_user_error(text: str, kind: object) -> None:
    try:
        value = coerce(text, kind, "k")
    except UserError as exc:
        assert str(exc).startswith("k=")
        return
    allowed = (type(None), float) if kind == float | None else (kind,)
    assert isinstance(value, allowed)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Knob:
    level_mb: float = 1.0
    mode: Literal["a", "b"] = "a"

    def __post_init__(self) -> None:
        if self.level_mb < 0:
            raise ValueError("level_mb must not be negative")


_KNOBS = {"knob": _Knob}


def test_components_are_built_by_name_with_typed_parameters() -> None:
    assert make_component("knob", _KNOBS, "knob") == _Knob()
    assert make_component(" knob : level_mb = 2.5 , mode=b ", _KNOBS, "knob") == _Knob(2.5, "b")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("dial", "unknown knob 'dial'; available: knob"),
        ("knob:level=2", "has no parameter 'level'; it has: level_mb, mode"),
        ("knob:level_mb", "expected key=value, got 'level_mb'"),
        ("knob:level_mb=1,level_mb=2", "'level_mb' given twice"),
        ("knob:level_mb=-1", "level_mb must not be negative"),
        ("knob:mode=c", "expected one of a, b"),
    ],
)
def test_bad_component_specs_are_one_line_user_errors(spec: str, fragment: str) -> None:
    with pytest.raises(UserError, match=re.escape(fragment)):
        make_component(spec, _KNOBS, "knob")


# -- ranges ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "low", "high", "unit"),
    [
        ("duration_s", 1e-9, MAX_TIME_S, "s"),
        ("rtt_ms", 1e-6, MAX_TIME_S * 1e3, "ms"),
        ("warmup_days", 1e-9 / 86_400, MAX_TIME_S / 86_400, "days"),
        ("days", 1e-9 / 86_400, MAX_TIME_S / 86_400, "days"),
        ("rt_rate_hz", 1 / MAX_TIME_S, 1e9, "Hz"),
        ("frame_mcycles", 1e-6, 1e9, "Mcycles"),
        ("buffer_kbit", 1 / 125, 2.0**50 / 125, "kbit"),
        ("churn_gb_per_day", 2.0**-30, 2.0**20, "GB/day"),  # not "_day" of a time
        ("link_mbps", 1e-6, 1e6, "Mbit/s"),
    ],
)
def test_a_unit_in_the_name_gives_the_range(name: str, low: float, high: float, unit: str) -> None:
    limit = unit_range(name)
    assert limit is not None
    assert (limit.low, limit.high, limit.unit) == (pytest.approx(low), pytest.approx(high), unit)
    assert limit.zero and not limit.signed


@pytest.mark.parametrize("name", ["alpha", "fps", "revisit", "days_left", "mode_s2", "class"])
def test_names_without_a_unit_have_no_range(name: str) -> None:
    assert unit_range(name) is None


@dataclass(frozen=True)
class _Ranged:
    duration_s: float = 1.0
    stop_s: float = field(default=-1.0, metadata=NEGATIVE_OK)  # −1 = never
    fps: float = field(default=30.0, metadata=bounds(1.0, 120.0, unit="Hz"))
    count: int = 3
    ratio: float = 0.5


def _range_of(name: str) -> Range | None:
    spec = {f.name: f for f in fields(_Ranged)}[name]
    return field_range(spec, {"count": int}.get(name, float))


def test_metadata_overrides_or_extends_the_unit_rule() -> None:
    stop = _range_of("stop_s")
    assert stop is not None and stop.signed
    assert -1.0 in stop and 0.0 in stop and 5.0 in stop
    assert -1e-12 not in stop  # below the clock's tick on either side of zero
    fps = _range_of("fps")
    assert fps is not None and 0.0 not in fps and 1.0 in fps and 121.0 not in fps
    count = _range_of("count")
    assert count is not None and 2**63 - 1 in count and 2**63 not in count
    assert _range_of("ratio") is None


@given(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(sorted(vars(_Ranged()))))
def test_check_number_accepts_exactly_the_finite_values_in_range(value: float, name: str) -> None:
    limit = _range_of(name)
    try:
        check_number(value, limit, f"--set {name}", "TEXT")
    except UserError as exc:
        assert str(exc).startswith(f"--set {name}=TEXT: expected")
        assert not math.isfinite(value) or (limit is not None and value not in limit)
        return
    assert math.isfinite(value)
    assert limit is None or value in limit


def test_range_errors_say_what_is_expected() -> None:
    limit = unit_range("duration_s")
    with pytest.raises(UserError) as info:
        check_number(-10.0, limit, "--set duration_s", "-10")
    assert str(info.value) == "--set duration_s=-10: expected 0 or a time of 1e-09 to 3.156e+08 s"
    with pytest.raises(UserError, match=r"^--set x=nan: expected a finite number$"):
        check_number(math.nan, None, "--set x", "nan")
    check_number("text", limit, "--set duration_s")  # not a number: its parser checked it
    check_number(True, limit, "--set duration_s")  # a bool is not an amount
