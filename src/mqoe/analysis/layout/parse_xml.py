"""uiautomator, Appium (UiAutomator2, UiAutomator1) and Selendroid XML dumps, read with
expat after refusing any ``<!DOCTYPE``/``<!ENTITY`` (formats: :mod:`mqoe.analysis.layout`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from xml.parsers import expat

from mqoe.analysis.layout.model import MAX_NODES, _alpha, _Bad, _flag, _Found, draws_by_class
from mqoe.errors import InputFileError
from mqoe.metrics.overdraw import MAX_SCREEN_PX, ViewNode

# -- parsing --------------------------------------------------------------------------

_BOUNDS = re.compile(r"\s*\[(-?\d{1,8}),(-?\d{1,8})\]\[(-?\d{1,8}),(-?\d{1,8})\]\s*")
_DOCTYPE = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_PIXELS = re.compile(r"\s*(-?\d{1,8})\s*")
_TOAST = "android.widget.Toast"  # Appium's toast messages: a root child without bounds
#: Attributes that say whether a view is shown: uiautomator's, Appium UiAutomator2's
#: (``isVisibleToUser``), Appium Espresso's and mqoe's, Selendroid's (``View.isShown``).
_VISIBILITY = ("visible-to-user", "displayed", "visible")


@dataclass
class _Pending:
    """A Selendroid view whose geometry (its ``<rect>`` child) has not been seen yet."""

    tag: str
    attrib: dict[str, str]
    bounds: tuple[int, int, int, int] | None = None


class _XmlReader:
    """pyexpat handlers building :class:`ViewNode` from start tags, streaming (no element
    tree is kept). Dialects, told apart by the root element:

    * ``<hierarchy>`` (uiautomator, Appium): a view is a ``<node>`` (uiautomator) or an
      element named after its class (Appium), with ``bounds``; other elements without
      ``bounds``, ``class`` or a dotted tag (wrappers) are ignored. Appium UiAutomator2's
      root states the display: ``width``, ``height``, ``rotation``.
    * ``<views>`` (Selendroid): every element is a view, its geometry a ``<rect>`` child.
    * a bare ``<node>`` (or any element with ``bounds``) as the root: a single tree.
    """

    def __init__(self, found: _Found) -> None:
        self.found = found
        self.nodes = found.nodes
        self.stack: list[int | _Pending | None] = []  # per open element
        self.dialect = ""
        self.skip_depth = 0  # > 0 inside a skipped subtree (a toast)

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if self.skip_depth:
            self.skip_depth += 1
        elif not self.dialect:
            self._root(tag, attrib)
        elif self.dialect == "selendroid":
            self._selendroid(tag, attrib)
        elif tag == "node" or "bounds" in attrib or "class" in attrib or "." in tag:
            if "bounds" not in attrib and attrib.get("class", tag) == _TOAST:
                self.found.skipped += 1
                self.skip_depth = 1
                return
            self.stack.append(self._new_node(tag, attrib, None, self._parent()))
        else:
            self.stack.append(None)

    def end(self, tag: str) -> None:
        if self.skip_depth:
            self.skip_depth -= 1
            return
        top = self.stack.pop()
        if isinstance(top, _Pending):
            self._new_node(top.tag, top.attrib, top, self._parent())

    def _root(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == "hierarchy":
            self.dialect = "hierarchy"
            self._display(attrib)
            self.stack.append(None)
        elif tag == "views":
            self.dialect = "selendroid"
            self.stack.append(None)
        elif tag == "node" or "bounds" in attrib:
            self.dialect = "hierarchy"
            self.stack.append(self._new_node(tag, attrib, None, -1))
        else:
            raise _Bad(
                f"root element <{tag[:40]}>: expected a uiautomator or Appium <hierarchy>, "
                "or a Selendroid <views>"
            )

    def _display(self, attrib: Mapping[str, str]) -> None:
        """Appium UiAutomator2's ``Display.getSize()`` (width, height) and rotation."""
        if "width" in attrib or "height" in attrib:
            sizes = [_PIXELS.fullmatch(attrib.get(key, "")) for key in ("width", "height")]
            if sizes[0] is None or sizes[1] is None:
                got = " ".join(f"{k}={attrib.get(k, '')[:12]!r}" for k in ("width", "height"))
                raise _Bad(f"<hierarchy {got}>: expected whole pixels")
            width, height = int(sizes[0].group(1)), int(sizes[1].group(1))
            if 0 < width <= MAX_SCREEN_PX and 0 < height <= MAX_SCREEN_PX:
                self.found.declared = (width, height)
        rotation = _PIXELS.fullmatch(attrib.get("rotation", ""))
        if rotation is not None and 0 <= int(rotation.group(1)) <= 3:
            self.found.rotation = int(rotation.group(1))

    def _selendroid(self, tag: str, attrib: dict[str, str]) -> None:
        if tag != "rect":
            self._parent()  # a child view: its parent's geometry is complete, add it
            self.stack.append(_Pending(tag, dict(attrib)))
            return
        top = self.stack[-1] if self.stack else None
        if not isinstance(top, _Pending) or top.bounds is not None:
            raise _Bad("a <rect> that is not the first child of a view")
        values = [_PIXELS.fullmatch(attrib.get(k, "")) for k in ("x", "y", "width", "height")]
        if any(v is None for v in values):
            got = " ".join(f"{k}={attrib.get(k, '')[:12]!r}" for k in ("x", "y", "width", "height"))
            raise _Bad(f"<rect {got}>: expected whole pixels")
        x, y, width, height = (int(v.group(1)) for v in values if v is not None)
        top.bounds = (x, y, x + width, y + height)
        self.stack.append(None)

    def _parent(self, below: int | None = None) -> int:
        """The index of the nearest view enclosing stack position ``below`` (default: the
        top); a pending Selendroid view found on the way is added now, as its geometry
        is complete once a child begins."""
        for depth in range(len(self.stack) if below is None else below, 0, -1):
            entry = self.stack[depth - 1]
            if isinstance(entry, _Pending):
                index = self._new_node(entry.tag, entry.attrib, entry, self._parent(depth - 1))
                self.stack[depth - 1] = index
                return index
            if entry is not None:
                return entry
        return -1

    def _new_node(
        self, tag: str, attrib: Mapping[str, str], pending: _Pending | None, parent: int
    ) -> int:
        index = len(self.nodes)
        if index >= MAX_NODES:
            raise _Bad(f"more than {MAX_NODES:,} nodes")
        selendroid = self.dialect == "selendroid"
        cls = attrib.get("class", "") or ("" if tag == "node" else tag) or "android.view.View"
        where = f"node #{index} ({cls[:60]})"
        if pending is None:
            bounds = _xml_bounds(attrib.get("bounds"), where)
        elif pending.bounds is None:
            raise _Bad(f"{where}: no <rect> child giving its geometry")
        else:
            bounds = pending.bounds
        text = attrib.get("value" if selendroid else "text", "")
        self.found.guessed += not attrib.get("background", "")
        visible = True
        for key in ("shown",) if selendroid else _VISIBILITY:
            visible = _flag(attrib, key, where, True) and visible
        alpha = _alpha(attrib["alpha"], where, _Bad) if attrib.get("alpha", "") else 1.0
        self.nodes.append(
            ViewNode(
                cls=cls,
                bounds=bounds,
                parent=parent,
                draws=_flag(attrib, "background", where, draws_by_class(cls, text)),
                opaque=_flag(attrib, "opaque", where, False),
                alpha=alpha,
                visible=visible,
                text=text,
                resource_id=attrib.get("id" if selendroid else "resource-id", ""),
            )
        )
        if not self.found.kind:
            kind = "selendroid" if selendroid else "uiautomator" if tag == "node" else "appium"
            self.found.kind = kind + "-xml"
        return index


def _xml_bounds(raw: str | None, where: str) -> tuple[int, int, int, int]:
    match = _BOUNDS.fullmatch(raw) if raw is not None else None
    if match is None:
        got = "missing" if raw is None else repr(raw[:60])
        raise _Bad(f"{where}: bounds {got}, expected '[l,t][r,b]'")
    left, top, right, bottom = map(int, match.groups())
    return left, top, right, bottom


def _parse_xml(text: str, name: str, progress: Callable[[float], None] | None) -> _Found:
    # Without a DOCTYPE there can be no entity declarations, so no entity expansion and
    # no external entities: reject one before the parser sees a byte (defusedxml's rule).
    found = _DOCTYPE.search(text)
    if found:
        line = text.count("\n", 0, found.start()) + 1
        raise InputFileError(name, "DOCTYPE/ENTITY declarations are not accepted", line)
    result = _Found()
    reader = _XmlReader(result)
    parser = expat.ParserCreate()
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    step = 1 << 20
    try:
        for start in range(0, len(text), step):
            parser.Parse(text[start : start + step], False)
            if progress is not None:
                progress(min(1.0, (start + step) / len(text)))
        parser.Parse("", True)
    except expat.ExpatError as error:
        reason = expat.errors.messages.get(error.code, "syntax error")
        raise InputFileError(name, f"malformed XML ({reason})", error.lineno) from None
    except _Bad as error:
        raise InputFileError(name, str(error), parser.CurrentLineNumber) from None
    return result
