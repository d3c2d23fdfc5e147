"""JSON dumps (a node object or a list of roots) and Selendroid's JSON page source
(formats: :mod:`mqoe.analysis.layout`)."""

from __future__ import annotations

import json
import math
from typing import Any

from mqoe.analysis.layout.model import _MAX_COORD, MAX_NODES, _alpha, _Found, draws_by_class
from mqoe.errors import InputFileError
from mqoe.metrics.overdraw import ViewNode


def _parse_json(text: str, name: str) -> _Found:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputFileError(name, f"invalid JSON ({error.msg})", error.lineno) from None
    except RecursionError:
        raise InputFileError(name, "JSON nested too deeply") from None
    except ValueError as error:  # e.g. an integer with thousands of digits
        raise InputFileError(name, f"invalid JSON ({str(error)[:80]})") from None
    roots = document if isinstance(document, list) else [document]
    found = _Found(kind="json")
    nodes = found.nodes
    # (object, parent index, position among siblings): an explicit stack, so depth cannot
    # overflow Python's
    positions: list[int] = []  # each node's index among its siblings, for error paths
    stack: list[tuple[Any, int, int]] = [(r, -1, i) for i, r in reversed(list(enumerate(roots)))]
    while stack:
        obj, parent, position = stack.pop()
        if len(nodes) >= MAX_NODES:
            raise InputFileError(name, f"more than {MAX_NODES:,} nodes")
        where = "node " + _json_path(nodes, positions, parent, position)
        node, children, selendroid = _json_node(obj, parent, where, name)
        found.guessed += "background" not in obj
        if not nodes and selendroid:
            found.kind = "selendroid-json"
        nodes.append(node)
        positions.append(position)
        stack.extend((children[i], len(nodes) - 1, i) for i in range(len(children) - 1, -1, -1))
    return found


def _json_path(nodes: list[ViewNode], positions: list[int], parent: int, position: int) -> str:
    """``0/3/1``: child indices from the root (the last 12 levels of a deep one)."""
    parts = [str(position)]
    while parent >= 0 and len(parts) < 12:
        parts.append(str(positions[parent]))
        parent = nodes[parent].parent
    if parent >= 0:
        parts.append("…")
    return "/".join(reversed(parts))


def _json_node(obj: Any, parent: int, where: str, name: str) -> tuple[ViewNode, list[Any], bool]:
    """One node; Selendroid's keys stand in for absent ones (``rect`` for ``bounds``,
    ``type``, ``value``, ``id``, ``shown`` for ``class``, ``text``, ``resource-id``,
    ``visible``). The flag says whether the geometry came from a Selendroid ``rect``."""

    def fail(what: str) -> InputFileError:
        return InputFileError(name, where + what)

    if not isinstance(obj, dict):
        raise fail(f": expected an object, got {type(obj).__name__}")
    selendroid = "bounds" not in obj and "rect" in obj
    bounds = _selendroid_rect(obj["rect"]) if selendroid else obj.get("bounds")
    if not (isinstance(bounds, list) and len(bounds) == 4 and all(map(_is_coord, bounds))):
        if selendroid:
            raise fail(": 'rect' must be {origin: {x, y}, size: {width, height}} numbers")
        raise fail(": 'bounds' must be [left, top, right, bottom] numbers")
    cls = _string_or(obj, "class", "type", "android.view.View")
    text = _string_or(obj, "text", "value", "")
    resource_id = _string_or(obj, "resource-id", "id", "")
    for key, value in (("class", cls), ("text", text), ("resource-id", resource_id)):
        if not isinstance(value, str):
            raise fail(f": {key!r} must be a string")
    flags: dict[str, bool] = {}
    for flag, key, default in (
        ("background", "background", draws_by_class(cls, text)),
        ("opaque", "opaque", False),
        ("visible", "visible" if "visible" in obj else "shown", True),
    ):
        value = obj.get(key, default)
        if not isinstance(value, bool):
            raise fail(f": {key!r} must be true or false")
        flags[flag] = value
    alpha = 1.0
    if "alpha" in obj:
        alpha = _alpha(obj["alpha"], where, lambda what: InputFileError(name, what))
    children = obj.get("children", [])
    if not isinstance(children, list):
        raise fail(": 'children' must be a list")
    left, top, right, bottom = (round(v) for v in bounds)
    node = ViewNode(
        cls=cls or "android.view.View",
        bounds=(left, top, right, bottom),
        parent=parent,
        draws=flags["background"],
        opaque=flags["opaque"],
        alpha=alpha,
        visible=flags["visible"],
        text=text,
        resource_id=resource_id,
    )
    return node, children, selendroid


def _string_or(obj: dict[str, Any], key: str, alias: str, default: str) -> Any:
    """``obj[key]`` (any type, checked by the caller); else a string ``obj[alias]``; else
    ``default``."""
    if key in obj:
        return obj[key]
    value = obj.get(alias)
    return value if isinstance(value, str) else default


def _selendroid_rect(rect: Any) -> list[Any] | None:
    """Selendroid's ``{"origin": {"x", "y"}, "size": {"width", "height"}}`` → bounds."""
    try:
        x, y = rect["origin"]["x"], rect["origin"]["y"]
        width, height = rect["size"]["width"], rect["size"]["height"]
    except (TypeError, KeyError):
        return None
    if not all(map(_is_coord, (x, y, width, height))):
        return None
    return [x, y, x + width, y + height]


def _is_coord(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) <= _MAX_COORD
    )
