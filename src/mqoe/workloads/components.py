"""Policy objects handed to a run: ``run_scenario(..., components={"abr": MyRule()})``.

A scenario's policies are named by parameter strings from registries
(``--set rule=bba:reservoir_s=20``), which a sweep file and the command line can carry.
From Python a policy can also be an object — a rule class of your own, an instance of a
built-in rule with any arguments — given for a *slot*. The phone holds the components
(:meth:`mqoe.device.phone.Phone.take_component`); the scenarios that have the slot take
theirs when they build, and a component no scenario took is an error (a typo in a slot
name must not silently run the default).

Slots (:data:`SLOTS`): ``abr`` — the adaptive-bitrate rule of ``spiral``, ``video``,
``video-stream`` and ``trace-abr`` (an object with ``choose(state)``, or a plain
function of the state; it replaces the ``rule`` parameter, so setting both is refused).

The run id hashes each component's class and parameters as they are when the run starts
(:func:`describe`): a dataclass's fields, else the value of a ``params()`` method, else
its public attributes — plain data (numbers, strings, booleans, None, containers of
them) as it is, functions and objects (the rules inside a combination) by their own
class and parameters, four levels deep. Two objects of one class with the same
parameters are the same run; give a rule whose behaviour depends on anything else (an
array's contents, private state) a ``params()`` that says so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mqoe.errors import UserError
from mqoe.policies.abr.base import as_rule


@dataclass(frozen=True, slots=True)
class Slot:
    """A kind of component: the scenario parameter it replaces, and the check that an
    object can fill it (raises TypeError with the reason)."""

    param: str
    check: Callable[[object], object]


SLOTS: dict[str, Slot] = {
    "abr": Slot(param="rule", check=as_rule),
}


def validate(components: Mapping[str, object], overrides: Mapping[str, str]) -> dict[str, object]:
    """The components, each checked against its slot; ``UserError`` for an unknown
    slot, an object that cannot fill it, or a slot whose parameter is also set."""
    checked: dict[str, object] = {}
    for name, component in components.items():
        slot = SLOTS.get(name)
        if slot is None:
            raise UserError(f"unknown component slot {name!r}; slots: {', '.join(sorted(SLOTS))}")
        if slot.param in overrides:
            raise UserError(
                f"component {name!r} replaces the parameter {slot.param!r}: set one, not both"
            )
        try:
            slot.check(component)
        except TypeError as exc:
            raise UserError(f"component {name!r}: {exc}") from None
        checked[name] = component
    return checked


def describe(component: object) -> str:
    """``module.Class`` and its parameters as canonical JSON — what the run id hashes
    and the results store records (``params["component.<slot>"]``). A plain function is
    ``module.name`` and a digest of its code, so two lambdas are two components."""
    if inspect.isfunction(component):
        code = component.__code__
        plain = [c for c in code.co_consts if _is_plain(c)]
        body = code.co_code + repr((code.co_names, plain)).encode()
        digest = hashlib.sha256(body).hexdigest()[:12]
        return f"{component.__module__}.{component.__qualname__}#{digest}"
    kind = type(component)
    return (
        f"{kind.__module__}.{kind.__qualname__}{json.dumps(_parameters(component), sort_keys=True)}"
    )


def _parameters(component: object, depth: int = 0) -> dict[str, object]:
    if dataclasses.is_dataclass(component) and not isinstance(component, type):
        fields = {f.name: getattr(component, f.name) for f in dataclasses.fields(component)}
        return {k: _plain(v, depth) for k, v in fields.items()}
    params = getattr(component, "params", None)
    if callable(params):
        value = params()
        if not isinstance(value, Mapping):
            raise UserError(f"{type(component).__qualname__}.params() must return a mapping")
        return {str(k): _plain(v, depth) for k, v in value.items()}
    attributes = dict(getattr(component, "__dict__", {}))
    for kind in type(component).__mro__:  # a class with __slots__ has no __dict__
        slots = getattr(kind, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if hasattr(component, name):
                attributes.setdefault(name, getattr(component, name))
    return {k: _plain(v, depth) for k, v in sorted(attributes.items()) if not k.startswith("_")}


def _is_plain(value: object) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list | tuple):
        return all(_is_plain(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


_MAX_DEPTH = 4  # rules that hold rules (a combination of combinations), and no deeper


def _plain(value: object, depth: int) -> object:
    """A JSON-able description of ``value``: plain data as it is, a function or an
    object (a rule inside a combination) by :func:`describe`, containers item by item."""
    if _is_plain(value):
        return list(value) if isinstance(value, tuple) else value
    if depth >= _MAX_DEPTH:
        return type(value).__qualname__
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if inspect.isfunction(value):
        return describe(value)
    kind = type(value)
    return {"class": f"{kind.__module__}.{kind.__qualname__}", **_parameters(value, depth + 1)}
