"""Typed ``key=value`` parameters: one parser for scenario ``--set`` pairs, ABR rule
specs and every other place users configure a component by name (as Mahimahi does)."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from mqoe.errors import UserError

_NONE_WORDS = ("none", "")
_BOOLS = {"1": True, "true": True, "yes": True, "on": True}
_BOOLS |= {"0": False, "false": False, "no": False, "off": False}


def coerce(text: str, kind: Any, label: str) -> Any:
    """Parse ``text`` as the annotated type: bool, int, float, str, a ``Literal`` choice,
    or an optional one (``none`` → None). ``label`` names the setting in errors
    (``"--set hogs"``, ``"bba:reservoir_s"``): ``UserError("label=text: expected …")``."""
    text = text.strip()
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        if len(options) < len(typing.get_args(kind)) and text.lower() in _NONE_WORDS:
            return None
        if len(options) != 1:
            raise TypeError(f"parameter {label} has unsupported type {kind!r}")
        return coerce(text, options[0], label)
    if origin is Literal:
        choices = typing.get_args(kind)
        if text not in choices:
            raise UserError(f"{label}={text}: expected one of {', '.join(map(str, choices))}")
        return text
    if kind is bool:
        if text.lower() not in _BOOLS:
            raise UserError(f"{label}={text}: expected true or false")
        return _BOOLS[text.lower()]
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise UserError(f"{label}={text}: expected {what}") from None
    if kind is str:
        return text
    raise TypeError(f"parameter {label} has unsupported type {kind!r}; use bool/int/float/str")
