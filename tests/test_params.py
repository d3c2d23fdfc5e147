from __future__ import annotations

from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.errors import UserError
from mqoe.params import coerce


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
