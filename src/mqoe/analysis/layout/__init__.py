"""View-hierarchy dumps: node count, depth and exact GPU overdraw (the redundant-rendering
findings of the Android responsiveness study, "Aging or Glitching?", MobiCom 2020).

Android draws a window's views bottom-up (painter's algorithm): each view that draws
something paints its whole visible rectangle, and opaque upper layers hide — but do not
spare — the ones below. "Debug GPU overdraw" colours each pixel by how many times it was
painted in a frame. :func:`overdraw` computes that count exactly, for every pixel, from a
flat list of :class:`ViewNode`; it is a pure function shared with the simulator's UI
model (draw cost ∝ :attr:`OverdrawStats.pixels_drawn`), so it lives in
:mod:`mqoe.metrics.overdraw`. :func:`load_layout` reads a real dump; :func:`analyze_layout`
turns one into tidy tables; :func:`layout_to_xml` and :func:`layout_to_json` write
hierarchies back out, and :mod:`mqoe.generators.layout` makes synthetic ones for tests.

Modules: :mod:`.model` (the parsed dump, drawing flags), :mod:`.read` (bytes and
encodings), :mod:`.parse` (format and screen size), :mod:`.parse_xml`,
:mod:`.parse_json`, :mod:`.report` (tables), :mod:`.write` (XML and JSON writers).

Overdraw levels (Android's names)
---------------------------------
A pixel painted *k* times has overdraw *k − 1*: ``0x`` = painted once (true colour),
``1x`` = twice (blue), ``2x`` = three times (green), ``3x`` = four times (pink),
``4+x`` = five or more times (red). Pixels painted zero times are ``undrawn``. The **mean
overdraw factor** is the mean number of paints per screen pixel (1.0 is the ideal; in the
responsiveness study a mail app's list items reached > 4).

Geometry rules
--------------
Bounds are integer screen pixels ``[left, top, right, bottom)``. A node is clipped to its
parent's clipped bounds (``clipChildren``, Android's default) and to the screen; a node
with ``right <= left`` or ``bottom <= top`` is empty and so are its descendants. A node
paints one layer over its clipped rectangle when it *draws*, is visible and has
``alpha > 0``, and all its ancestors are visible with ``alpha > 0`` (a translucent view's
offscreen layer is not counted). Paint order is document (pre-order) order. A drawing
node's **hidden** pixels are those covered later by an opaque layer: drawn for nothing
(the responsiveness study's "redundant UI rendering"); a drawing node whose every pixel
is hidden is a **candidate redundant layer**.

Screen size (:func:`screen_size`)
---------------------------------
The screen is ``--screen`` when given. Otherwise it comes from the dump:

1. **Declared**: Appium UiAutomator2 writes the display's ``width`` and ``height`` on its
   ``<hierarchy>`` root (``Display.getSize()``: the current rotation's app area). That
   size is the screen — grown, where a **full-window root** reaches past it, to that
   root's right/bottom edge: ``getSize()`` leaves the navigation bar out while bounds are
   clipped to the real display, and a window drawn edge to edge paints those pixels
   too. When ``rotation`` is 1 or 3 (a quarter turn) and the declared size needs less
   growing turned than as written, it is turned: it was written in the display's
   natural orientation.
2. Else **full-window roots**: the right/bottom extent of the roots whose bounds start
   at the top-left corner (``left <= 0`` and ``top <= 0``): an activity's decor view,
   the status bar. A root elsewhere — a dialog's or popup's window, a toast, the
   keyboard — is a window *on* the screen and says nothing of its size.
3. Else (a dump of a dialog's window alone, as ``uiautomator dump`` writes when a
   dialog has the focus) the size is unknown: :func:`analyze_layout` asks for
   ``--screen`` instead of taking the dialog for the screen.

Formats accepted (:func:`load_layout` tells them apart by content)
------------------------------------------------------------------
* ``uiautomator dump`` XML: a ``<hierarchy rotation=…>`` root holding nested ``<node>``
  elements with a ``bounds="[l,t][r,b]"`` attribute (required), ``class``, ``text``,
  ``resource-id`` and optionally ``visible-to-user``. A ``<!DOCTYPE``/``<!ENTITY``
  anywhere is rejected before parsing (so no entity expansion or external entities);
  elements without ``bounds``, ``class`` or a dotted name (wrappers) are ignored.
  uiautomator records no opacity, so whether a node draws is a **heuristic** on its
  class (:data:`DRAWING_CLASSES`, :func:`draws_by_class`): image views, buttons, edit
  texts, compound buttons, progress/seek/rating bars, web/texture views, cards, chips
  and FABs draw; a ``TextView`` draws only with non-empty ``text``; plain layouts draw
  nothing and no node is opaque. A node may carry the JSON flags as attributes
  (``background``, ``opaque`` = ``true``/``false``; ``alpha``; ``visible``) to override
  the heuristic — uiautomator never writes them, so a dump can be annotated by hand.
* Appium page source (XML): the same, but each element is named after its class
  (``<android.widget.FrameLayout …>``). UiAutomator2 (appium-uiautomator2-server) writes
  ``class`` too — it wins over the name, in which ``$`` became ``.`` — visibility as
  ``displayed``, and the display on the root (``<hierarchy index="0" class="hierarchy"
  rotation width height>``); a toast message is an ``android.widget.Toast`` element
  without ``bounds``, skipped and counted in :attr:`Layout.skipped`. The older
  UiAutomator1 bootstrap renamed uiautomator's ``<node>`` tags to the class and added
  ``instance``: read the same way. Espresso's ``visible`` is read as visibility.
* Selendroid page source, XML: a ``<views>`` root, one element per view named after its
  simple class, ``value`` (text), ``id``, ``shown`` (``View.isShown``), and the geometry
  in a ``<rect x y width height>`` first child.
* JSON: a node object (or a list of root nodes) ``{"class": str, "bounds": [l, t, r, b],
  "opaque": bool, "alpha": 0..1, "visible": bool, "background": bool, "children": [...]}``
  and optionally ``"text"`` and ``"resource-id"``. Only ``bounds`` is required;
  ``background`` (the node paints a layer) is exact when given and falls back to the
  class heuristic when absent; ``opaque`` defaults to false, ``alpha`` to 1, ``visible``
  to true. Bounds are rounded to whole pixels. Selendroid's JSON source is read too:
  ``rect`` ``{"origin": {"x", "y"}, "size": {"width", "height"}}`` stands for an absent
  ``bounds``, and ``type``, ``value``, ``id``, ``shown`` for absent ``class``, ``text``,
  ``resource-id``, ``visible``.

Bytes and text: gzip-compressed files are read. A byte-order mark decides the encoding
(UTF-8, UTF-16LE/BE: Windows PowerShell's ``>`` writes UTF-16LE with a BOM and leaves the
declaration saying UTF-8 — the bytes win); without one, NUL bytes mean UTF-16 (every
dump begins with an ASCII character); then an XML declaration naming an ASCII-compatible
encoding (Latin-1, cp1252 …); else UTF-8. LF, CRLF, CR and CR CR LF each end one line,
so line numbers in errors are an editor's.

Anything else is an :class:`~mqoe.errors.InputFileError` naming the file and the line
(XML: the element's; JSON: the syntax error's) and the node (``node #12`` in document
order; ``node 0/3/1`` as child indices in JSON). Files over :data:`MAX_FILE_BYTES` or
with more than :data:`MAX_NODES` nodes are refused: no phone screen holds that many views.
"""

from mqoe.analysis.layout.model import (
    DRAWING_CLASSES,
    MAX_NODES,
    TEXT_CLASSES,
    Layout,
    LayoutFormat,
    draws_by_class,
)
from mqoe.analysis.layout.parse import load_layout, parse_layout, screen_size
from mqoe.analysis.layout.read import MAX_FILE_BYTES
from mqoe.analysis.layout.report import LayoutReport, analyze_layout
from mqoe.analysis.layout.write import layout_to_json, layout_to_xml
from mqoe.metrics.overdraw import (
    HIDDEN_BUDGET_CELLS,
    LEVELS,
    MAX_GRID_CELLS,
    MAX_SCREEN_PX,
    OverdrawStats,
    ViewNode,
    overdraw,
)

__all__ = [
    "DRAWING_CLASSES",
    "HIDDEN_BUDGET_CELLS",
    "LEVELS",
    "MAX_FILE_BYTES",
    "MAX_GRID_CELLS",
    "MAX_NODES",
    "MAX_SCREEN_PX",
    "TEXT_CLASSES",
    "Layout",
    "LayoutFormat",
    "LayoutReport",
    "OverdrawStats",
    "ViewNode",
    "analyze_layout",
    "draws_by_class",
    "layout_to_json",
    "layout_to_xml",
    "load_layout",
    "overdraw",
    "parse_layout",
    "screen_size",
]
