from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.errors import UserError
from mqoe.params import coerce, make_component


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
