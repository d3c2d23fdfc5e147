"""Writing a hierarchy back out as a uiautomator XML dump (:func:`layout_to_xml`) or
JSON (:func:`layout_to_json`): round trips and synthetic inputs."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any
from xml.sax.saxutils import escape

from mqoe.metrics.overdraw import ViewNode

# -- writers ----------------------------------------------------------------------------


def _children(nodes: Sequence[ViewNode]) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        if node.parent >= 0:
            kids[node.parent].append(i)
    return kids


def _walk(nodes: Sequence[ViewNode]) -> Iterator[tuple[int, bool]]:
    """(index, entering) events of a depth-first walk over the roots, in list order."""
    kids = _children(nodes)
    roots = [i for i, node in enumerate(nodes) if node.parent < 0]
    stack = [(i, True) for i in reversed(roots)]
    while stack:
        i, entering = stack.pop()
        yield i, entering
        if entering:
            stack.append((i, False))
            stack.extend((k, True) for k in reversed(kids[i]))


def _xml_attr(value: str) -> str:
    return escape(value, {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def layout_to_xml(nodes: Sequence[ViewNode], *, flags: bool = False, package: str = "") -> str:
    """A ``uiautomator dump`` of ``nodes`` (which must be in depth-first order).

    With ``flags`` the drawing flags are written as extra attributes, so the XML carries
    them exactly; without, a reader falls back to :func:`draws_by_class`.
    """
    parts = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>", '<hierarchy rotation="0">']
    index_in_parent = [0] * len(nodes)
    for kids in _children(nodes):
        for position, k in enumerate(kids):
            index_in_parent[k] = position
    for i, entering in _walk(nodes):
        if not entering:
            parts.append("</node>")
            continue
        n = nodes[i]
        left, top, right, bottom = n.bounds
        attrs = (
            f'index="{index_in_parent[i]}" text="{_xml_attr(n.text)}" '
            f'resource-id="{_xml_attr(n.resource_id)}" class="{_xml_attr(n.cls)}" '
            f'package="{_xml_attr(package)}" content-desc="" checkable="false" checked="false" '
            f'clickable="false" enabled="true" focusable="false" focused="false" '
            f'scrollable="false" long-clickable="false" password="false" selected="false" '
            f'bounds="[{left},{top}][{right},{bottom}]"'
        )
        if flags:
            attrs += (
                f' background="{str(n.draws).lower()}" opaque="{str(n.opaque).lower()}"'
                f' alpha="{n.alpha!r}" visible="{str(n.visible).lower()}"'
            )
        parts.append(f"<node {attrs}>")
    parts.append("</hierarchy>")
    return "\n".join(parts) + "\n"


def layout_to_json(nodes: Sequence[ViewNode]) -> str:
    """The JSON form of ``nodes`` (exact flags); a list when there are several roots."""
    objects: list[dict[str, Any]] = []
    for n in nodes:
        objects.append(
            {
                "class": n.cls,
                "bounds": list(n.bounds),
                "opaque": n.opaque,
                "alpha": n.alpha,
                "visible": n.visible,
                "background": n.draws,
                "text": n.text,
                "resource-id": n.resource_id,
                "children": [],
            }
        )
        if n.parent >= 0:
            objects[n.parent]["children"].append(objects[-1])
    roots = [objects[i] for i, n in enumerate(nodes) if n.parent < 0]
    return json.dumps(roots[0] if len(roots) == 1 else roots, indent=1) + "\n"
