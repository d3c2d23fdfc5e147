"""Typed ``key=value`` parameters: one parser for scenario ``--set`` pairs, ABR rule
specs and every other place users configure a component by name (as Mahimahi does)."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from mqoe.errors import UserError

T = TypeVar("T")
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


def constructor_parameters(component: type) -> dict[str, Any]:
    """Keyword parameters of a class's constructor with their (evaluated) annotations."""
    out: dict[str, Any] = {}
    for parameter in inspect.signature(component, eval_str=True).parameters.values():
        if parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            empty = parameter.annotation is inspect.Parameter.empty
            out[parameter.name] = str if empty else parameter.annotation
    return out


def make_component(spec: str, registry: Mapping[str, type[T]], what: str) -> T:
    """``"name"`` or ``"name:key=value,…"`` → ``registry[name](key=value, …)``, values
    parsed by the constructor's annotations. ``what`` names the kind of component in
    errors (``"ABR rule"``, ``"WAM policy"``): one-line ``UserError``s for unknown names,
    unknown or repeated keys, and bad values."""
    name, sep, arguments = spec.strip().partition(":")
    name = name.strip()
    component = registry.get(name)
    if component is None:
        available = ", ".join(sorted(registry))
        raise UserError(f"unknown {what} {name!r}; available: {available}")
    parameters = constructor_parameters(component)
    kwargs: dict[str, Any] = {}
    for item in arguments.split(",") if sep else ():
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UserError(f"{what} {spec.strip()!r}: expected key=value, got {item!r}")
        if key not in parameters:
            known = ", ".join(sorted(parameters)) or "none"
            raise UserError(f"{what} {name!r} has no parameter {key!r}; it has: {known}")
        if key in kwargs:
            raise UserError(f"{what} {name!r}: parameter {key!r} given twice")
        kwargs[key] = coerce(text, parameters[key], f"{name}:{key}")
    try:
        return component(**kwargs)
    except (ValueError, TypeError) as exc:
        raise UserError(f"{what} {name!r}: {exc}") from None
