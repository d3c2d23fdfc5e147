"""View-hierarchy dumps: node count, depth and exact GPU overdraw (spec 04 §Rendering).

Android draws a window's views bottom-up (painter's algorithm): each view that draws
something paints its whole visible rectangle, and opaque upper layers hide — but do not
spare — the ones below. "Debug GPU overdraw" colours each pixel by how many times it was
painted in a frame. :func:`overdraw` computes that count exactly, for every pixel, from a
flat list of :class:`ViewNode`; it is a pure function shared with the simulator's UI
model (draw cost ∝ :attr:`OverdrawStats.pixels_drawn`). :func:`load_layout` reads a real
dump; :func:`analyze_layout` turns one into tidy tables; :func:`synth_layout`,
:func:`layout_to_xml` and :func:`layout_to_json` write synthetic hierarchies for tests.

Overdraw levels (Android's names)
---------------------------------
A pixel painted *k* times has overdraw *k − 1*: ``0x`` = painted once (true colour),
``1x`` = twice (blue), ``2x`` = three times (green), ``3x`` = four times (pink),
``4+x`` = five or more times (red). Pixels painted zero times are ``undrawn``. The **mean
overdraw factor** is the mean number of paints per screen pixel (1.0 is the ideal;
spec 04's mail-app list items reached > 4).

Geometry rules
--------------
Bounds are integer screen pixels ``[left, top, right, bottom)``. A node is clipped to its
parent's clipped bounds (``clipChildren``, Android's default) and to the screen; a node
with ``right <= left`` or ``bottom <= top`` is empty and so are its descendants. A node
paints one layer over its clipped rectangle when it *draws*, is visible and has
``alpha > 0``, and all its ancestors are visible with ``alpha > 0`` (a translucent view's
offscreen layer is not counted). Paint order is document (pre-order) order. A drawing
node's **hidden** pixels are those covered later by an opaque layer: drawn for nothing
(spec 04's "redundant UI rendering"); a drawing node whose every pixel is hidden is a
**candidate redundant layer**.

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

from __future__ import annotations

import codecs
import gzip
import json
import math
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from xml.parsers import expat
from xml.sax.saxutils import escape

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.textio import (
    describe_os_error,
    normalise_line_ends,
    open_input,
    sniff_encoding,
)
from mqoe.errors import InputFileError, UserError

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
LayoutFormat = Literal["auto", "xml", "json"]

MAX_FILE_BYTES = 64 * 1024 * 1024  # a 5,000-node uiautomator dump is ~2 MB
MAX_NODES = 500_000
MAX_SCREEN_PX = 1_000_000  # per side; phone screens are < 4,000 px
MAX_GRID_CELLS = 40_000_000  # count grid (int32): 160 MB at most
HIDDEN_BUDGET_CELLS = 400_000_000  # cells visited to attribute hidden pixels (~1 s)
_MAX_COORD = 10_000_000

#: Simple-class-name suffixes of views that usually draw something (the XML heuristic).
#: ``AppCompatImageView`` ends in ``ImageView``, ``MaterialButton`` in ``Button``.
DRAWING_CLASSES = (
    "ImageView",
    "ImageButton",
    "Button",
    "EditText",
    "CheckBox",
    "RadioButton",
    "Switch",
    "SwitchCompat",
    "ToggleButton",
    "ProgressBar",
    "SeekBar",
    "RatingBar",
    "WebView",
    "TextureView",
    "CardView",
    "Chip",
    "FloatingActionButton",
)
#: Suffixes that draw only when the node has text (``TextView``, ``CheckedTextView`` …).
TEXT_CLASSES = ("TextView",)

#: Overdraw levels: name, paints per pixel (lower bound), Android's colour blended over
#: white (hwui's 0x2f0000ff, 0x2f00ff00, 0x3fff0000, 0x7fff0000), undrawn in grey.
LEVELS: tuple[tuple[str, int, str], ...] = (
    ("undrawn", 0, "#d0d0d0"),
    ("0x", 1, "#ffffff"),
    ("1x", 2, "#d0d0ff"),
    ("2x", 3, "#d0ffd0"),
    ("3x", 4, "#ffc0c0"),
    ("4+x", 5, "#ff8080"),
)


def draws_by_class(cls: str, text: str = "") -> bool:
    """The heuristic for dumps without drawing flags: does a view of class ``cls`` draw?

    True for the suffixes in :data:`DRAWING_CLASSES`, and for :data:`TEXT_CLASSES` with
    non-empty ``text``; layouts and plain views draw nothing. A guess, not a fact: a
    layout with a background drawable draws too, and an ``ImageView`` without a bitmap
    does not.
    """
    simple = cls.rsplit(".", 1)[-1].rsplit("$", 1)[-1]
    if simple.endswith(TEXT_CLASSES):
        return bool(text.strip())
    return simple.endswith(DRAWING_CLASSES)


@dataclass(frozen=True, slots=True)
class ViewNode:
    """One view. ``parent`` indexes the same list (-1 for a root); parents come first.

    ``bounds`` are screen pixels ``(left, top, right, bottom)``, right/bottom exclusive.
    ``draws``: the view paints a layer over its bounds (background or content).
    """

    cls: str
    bounds: tuple[int, int, int, int]
    parent: int = -1
    draws: bool = False
    opaque: bool = False
    alpha: float = 1.0
    visible: bool = True
    text: str = ""
    resource_id: str = ""


@dataclass(frozen=True)
class Layout:
    """A parsed dump: nodes in document (paint) order and the screen they cover."""

    name: str
    nodes: tuple[ViewNode, ...]
    screen: tuple[int, int] | None  # width, height in px (module docstring); None: unknown
    format: str  # uiautomator-xml, appium-xml, selendroid-xml, json or selendroid-json
    guessed: int = 0  # nodes without a drawing flag: draws_by_class() decided
    skipped: int = 0  # elements without geometry (Appium's toast messages)
    screen_source: str = ""  # how the screen was found: see screen_size()


# -- overdraw -------------------------------------------------------------------------


@dataclass(frozen=True)
class OverdrawStats:
    """Exact per-pixel paint counts of a hierarchy, on a grid of rectangular cells.

    Cell ``(i, j)`` spans ``xs[j] <= x < xs[j+1]``, ``ys[i] <= y < ys[i+1]``; every pixel in
    it is painted ``draw_count[i, j]`` times. Per-node arrays follow the input order.
    """

    screen: tuple[int, int]
    xs: IntArray
    ys: IntArray
    draw_count: npt.NDArray[np.int32]
    clipped: IntArray  # [n, 4] clipped bounds; empty rectangles have zero area
    drawn: BoolArray  # [n] the node paints a non-empty layer
    depth: IntArray  # [n] 1 for a root
    hidden_px: IntArray | None  # [n] pixels later covered by an opaque layer (None: too big)
    area_by_draws: IntArray = field(repr=False)  # [k] px painted exactly k times

    @property
    def screen_px(self) -> int:
        return self.screen[0] * self.screen[1]

    @property
    def area_px(self) -> IntArray:
        """Clipped area of each node (px), whether it draws or not."""
        c = self.clipped
        return np.asarray((c[:, 2] - c[:, 0]) * (c[:, 3] - c[:, 1]), dtype=np.int64)

    @property
    def pixels_drawn(self) -> int:
        """Pixels painted per frame, counting repeats: the draw cost."""
        return int(np.dot(np.arange(len(self.area_by_draws)), self.area_by_draws))

    @property
    def mean_overdraw(self) -> float:
        """Mean paints per screen pixel (the mean overdraw factor; 1.0 is ideal)."""
        return self.pixels_drawn / self.screen_px

    @property
    def max_draws(self) -> int:
        return len(self.area_by_draws) - 1

    @property
    def drawing_layers(self) -> int:
        return int(self.drawn.sum())

    @property
    def levels_px(self) -> dict[str, int]:
        """Screen pixels per overdraw level (:data:`LEVELS`): undrawn, 0x … 4+x."""
        counts = self.area_by_draws
        result = {name: int(counts[k]) if k < len(counts) else 0 for name, k, _ in LEVELS[:-1]}
        result[LEVELS[-1][0]] = int(counts[LEVELS[-1][1] :].sum())
        return result

    @property
    def level_shares(self) -> dict[str, float]:
        return {name: px / self.screen_px for name, px in self.levels_px.items()}

    @property
    def hidden_draws_px(self) -> int | None:
        """Paints later covered by an opaque layer (wasted work), or None if not computed."""
        return None if self.hidden_px is None else int(self.hidden_px.sum())

    def pixel_counts(self, max_side: int = 2048) -> npt.NDArray[np.int32]:
        """Paint counts as an image ``[row, column]``, sampled at pixel centres and
        downscaled so neither side exceeds ``max_side`` (exact when the screen fits)."""
        width, height = self.screen
        scale = max(1.0, width / max_side, height / max_side)
        cols = (np.arange(max(1, int(width / scale))) + 0.5) * scale
        rows = (np.arange(max(1, int(height / scale))) + 0.5) * scale
        ci = np.searchsorted(self.xs, cols, side="right") - 1
        ri = np.searchsorted(self.ys, rows, side="right") - 1
        return self.draw_count[np.ix_(ri, ci)]


def _clip(
    nodes: Sequence[ViewNode], screen: tuple[int, int]
) -> tuple[IntArray, BoolArray, IntArray]:
    """Clipped bounds, effective drawing (visibility inherited) and depth, in one pass."""
    width, height = screen
    n = len(nodes)
    left, top, right, bottom = [0] * n, [0] * n, [0] * n, [0] * n
    shown, depth = [False] * n, [0] * n
    paints = [False] * n
    for i, node in enumerate(nodes):
        p = node.parent
        if p >= i or p < -1:
            raise ValueError(f"node {i}: parent {p} must be -1 or an earlier node")
        if p < 0:
            pl, pt, pr, pb, pshown, pdepth = 0, 0, width, height, True, 0
        else:
            pl, pt, pr, pb = left[p], top[p], right[p], bottom[p]
            pshown, pdepth = shown[p], depth[p]
        l0, t0, r0, b0 = node.bounds
        cl, ct = max(l0, pl), max(t0, pt)
        cr, cb = max(min(r0, pr), cl), max(min(b0, pb), ct)
        left[i], top[i], right[i], bottom[i] = cl, ct, cr, cb
        shown[i] = pshown and node.visible and node.alpha > 0
        depth[i] = pdepth + 1
        paints[i] = shown[i] and node.draws and cr > cl and cb > ct
    clipped = np.array([left, top, right, bottom], dtype=np.int64).T.reshape(n, 4)
    return clipped, np.array(paints, dtype=np.bool_), np.array(depth, dtype=np.int64)


def _grid(rects: IntArray, screen: tuple[int, int]) -> tuple[IntArray, IntArray]:
    """Cell edges: the rectangles' own edges (compressed) or every pixel, whichever is
    smaller — both give exact counts since all edges are whole pixels."""
    width, height = screen
    xs = np.unique(np.concatenate(([0, width], rects[:, 0], rects[:, 2])))
    ys = np.unique(np.concatenate(([0, height], rects[:, 1], rects[:, 3])))
    if (len(xs) - 1) * (len(ys) - 1) > width * height:
        xs, ys = np.arange(width + 1, dtype=np.int64), np.arange(height + 1, dtype=np.int64)
    cells = (len(xs) - 1) * (len(ys) - 1)
    if cells > MAX_GRID_CELLS:
        raise UserError(
            f"view hierarchy too complex for exact overdraw: {cells:,} grid cells "
            f"(limit {MAX_GRID_CELLS:,}); give a smaller --screen"
        )
    return xs.astype(np.int64), ys.astype(np.int64)


def overdraw(nodes: Sequence[ViewNode], screen: tuple[int, int]) -> OverdrawStats:
    """Exact overdraw of ``nodes`` (paint order, parents first) on a ``screen`` =
    (width, height) px; see the module docstring for the clipping and drawing rules.

    Counts come from a 2-D difference array over the rectangles' compressed edges (or over
    pixels when that is smaller), so the cost is O(nodes + cells), independent of how
    large the layers are: a 1440×2560 screen with 5,000 nodes takes tens of milliseconds.
    """
    width, height = screen
    if not (0 < width <= MAX_SCREEN_PX and 0 < height <= MAX_SCREEN_PX):
        raise UserError(f"screen must be 1..{MAX_SCREEN_PX} px per side, got {width}x{height}")
    clipped, drawn, depth = _clip(nodes, screen)
    rects = clipped[drawn]
    xs, ys = _grid(rects, screen)
    li = np.searchsorted(xs, rects[:, 0])
    ti = np.searchsorted(ys, rects[:, 1])
    ri = np.searchsorted(xs, rects[:, 2])
    bi = np.searchsorted(ys, rects[:, 3])
    diff = np.zeros((len(ys), len(xs)), dtype=np.int32)
    np.add.at(diff, (ti, li), 1)
    np.add.at(diff, (ti, ri), -1)
    np.add.at(diff, (bi, li), -1)
    np.add.at(diff, (bi, ri), 1)
    np.cumsum(diff, axis=0, out=diff)
    np.cumsum(diff, axis=1, out=diff)
    counts = diff[:-1, :-1]
    dx, dy = np.diff(xs), np.diff(ys)
    area = np.zeros(int(counts.max(initial=0)) + 1, dtype=np.int64)
    rows = max(1, 4_000_000 // len(dx))  # weights in blocks: bounded extra memory
    for start in range(0, len(dy), rows):
        block = counts[start : start + rows].ravel()
        weights = np.outer(dy[start : start + rows], dx).ravel().astype(np.float64)
        area += np.rint(np.bincount(block, weights, len(area))).astype(np.int64)
    opaque = np.array([nodes[int(i)].opaque for i in np.flatnonzero(drawn)], dtype=np.bool_)
    hidden = _hidden(np.flatnonzero(drawn), opaque, (li, ti, ri, bi), counts.shape, dx, dy)
    hidden_px: IntArray | None = None
    if hidden is not None:
        hidden_px = np.zeros(len(nodes), dtype=np.int64)
        hidden_px[drawn] = hidden
    return OverdrawStats(
        screen=(width, height),
        xs=xs,
        ys=ys,
        draw_count=counts,
        clipped=clipped,
        drawn=drawn,
        depth=depth,
        hidden_px=hidden_px,
        area_by_draws=area,
    )


def _hidden(
    index: IntArray,
    opaque: BoolArray,
    cells: tuple[IntArray, IntArray, IntArray, IntArray],
    shape: tuple[int, ...],
    dx: IntArray,
    dy: IntArray,
) -> IntArray | None:
    """Per drawing layer, the pixels that a later opaque layer paints over.

    ``top[cell]`` is the last opaque layer covering the cell (painted in order); a layer
    is hidden where ``top`` is later than itself. Cost ∝ the layers' areas in cells, so it
    is skipped (None) past :data:`HIDDEN_BUDGET_CELLS`.
    """
    li, ti, ri, bi = cells
    hidden = np.zeros(len(index), dtype=np.int64)
    if not opaque.any():
        return hidden
    last_opaque = int(np.flatnonzero(opaque)[-1])
    sizes = (ri - li) * (bi - ti)
    if int(sizes[: last_opaque + 1].sum()) + int(sizes[opaque].sum()) > HIDDEN_BUDGET_CELLS:
        return None
    top = np.full(shape, -1, dtype=np.int64)
    for o in np.flatnonzero(opaque).tolist():
        top[ti[o] : bi[o], li[o] : ri[o]] = o
    unit = bool((dx == 1).all() and (dy == 1).all())
    for k in range(last_opaque):  # the layers after the last opaque one are never hidden
        covered = top[ti[k] : bi[k], li[k] : ri[k]] > k
        if unit:
            hidden[k] = int(np.count_nonzero(covered))
        elif covered.any():
            hidden[k] = int(dy[ti[k] : bi[k]] @ covered.astype(np.int64) @ dx[li[k] : ri[k]])
    return hidden


# -- reports --------------------------------------------------------------------------


@dataclass(frozen=True)
class LayoutReport:
    """A layout and its overdraw, as tidy tables."""

    layout: Layout
    stats: OverdrawStats

    def summary(self) -> dict[str, Any]:
        s = self.stats
        shares = s.level_shares
        redundant = None if s.hidden_px is None else int(self._redundant().sum())
        return {
            "file": self.layout.name,
            "format": self.layout.format,
            "drawing_guessed_nodes": self.layout.guessed,
            "skipped_elements": self.layout.skipped,
            "nodes": len(self.layout.nodes),
            "depth": int(s.depth.max(initial=0)),
            "drawing_layers": s.drawing_layers,
            "screen_w_px": s.screen[0],
            "screen_h_px": s.screen[1],
            "screen_source": (
                self.layout.screen_source if s.screen == self.layout.screen else "given"
            ),
            "pixels_drawn": s.pixels_drawn,
            "mean_overdraw": s.mean_overdraw,
            "max_draws": s.max_draws,
            **{"share_" + name.replace("+", "plus_"): share for name, share in shares.items()},
            "hidden_draws_px": s.hidden_draws_px,
            "redundant_layers": redundant,
        }

    def _redundant(self) -> BoolArray:
        s = self.stats
        assert s.hidden_px is not None
        return np.asarray(s.drawn & (s.hidden_px == s.area_px), dtype=np.bool_)

    def levels(self) -> pd.DataFrame:
        """Screen area per overdraw level, in Android's colours."""
        px = self.stats.levels_px
        rows = [
            {
                "level": name,
                "draws": f"{k}+" if name == LEVELS[-1][0] else str(k),
                "colour": colour,
                "area_px": px[name],
                "share": px[name] / self.stats.screen_px,
            }
            for name, k, colour in LEVELS
        ]
        return pd.DataFrame(rows)

    def draw_counts(self) -> pd.DataFrame:
        """Exact histogram: screen pixels painted ``draws`` times."""
        area = self.stats.area_by_draws
        return pd.DataFrame(
            {"draws": np.arange(len(area)), "area_px": area, "share": area / self.stats.screen_px}
        )

    def nodes(self) -> pd.DataFrame:
        """One row per node: clipped bounds and area, whether it paints, hidden pixels."""
        s = self.stats
        nodes = self.layout.nodes
        area = s.area_px
        hidden = np.full(len(nodes), np.nan) if s.hidden_px is None else s.hidden_px.astype(float)
        drawn_area = np.where(s.drawn, area, 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(s.drawn, hidden / np.maximum(drawn_area, 1), np.nan)
        return pd.DataFrame(
            {
                "node": np.arange(len(nodes)),
                "parent": [n.parent for n in nodes],
                "depth": s.depth,
                "class": [n.cls for n in nodes],
                "resource_id": [n.resource_id for n in nodes],
                "left_px": s.clipped[:, 0],
                "top_px": s.clipped[:, 1],
                "right_px": s.clipped[:, 2],
                "bottom_px": s.clipped[:, 3],
                "area_px": area,
                "draws": s.drawn,
                "opaque": [n.opaque for n in nodes],
                "hidden_px": hidden,
                "hidden_share": share,
            }
        )

    def redundant_layers(self) -> pd.DataFrame:
        """Drawing nodes whose every painted pixel is later covered by an opaque layer."""
        table = self.nodes()
        if self.stats.hidden_px is None:
            return table.iloc[:0]
        return table[self._redundant()].reset_index(drop=True)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return {"levels": self.levels(), "draw_counts": self.draw_counts(), "nodes": self.nodes()}


def analyze_layout(layout: Layout, screen: tuple[int, int] | None = None) -> LayoutReport:
    """Overdraw of a parsed layout on its own screen, or on ``screen`` = (width, height)
    px. A limit met on the way (a hierarchy too complex) is an error naming the file."""
    if screen is None:
        if layout.screen is None:
            raise InputFileError(
                layout.name,
                "the dump does not say its screen size (no width/height, and no full-window "
                "root at the top-left corner: only windows such as a dialog): "
                "give the screen size: --screen WxH",
            )
        width, height = screen = layout.screen
        if not (0 < width <= MAX_SCREEN_PX and 0 < height <= MAX_SCREEN_PX):
            raise InputFileError(
                layout.name,
                f"the roots' bounds give a {width}x{height} screen: not plausible "
                "(give the screen size: --screen WxH)",
            )
    try:
        stats = overdraw(layout.nodes, screen)
    except InputFileError:
        raise
    except UserError as error:
        raise InputFileError(layout.name, str(error)) from None
    return LayoutReport(layout, stats)


# -- parsing --------------------------------------------------------------------------

_BOUNDS = re.compile(r"\s*\[(-?\d{1,8}),(-?\d{1,8})\]\[(-?\d{1,8}),(-?\d{1,8})\]\s*")
_DOCTYPE = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']""")
_PIXELS = re.compile(r"\s*(-?\d{1,8})\s*")
_TRUE_FALSE = {"true": True, "false": False}
_TOAST = "android.widget.Toast"  # Appium's toast messages: a root child without bounds
#: Attributes that say whether a view is shown: uiautomator's, Appium UiAutomator2's
#: (``isVisibleToUser``), Appium Espresso's and mqoe's, Selendroid's (``View.isShown``).
_VISIBILITY = ("visible-to-user", "displayed", "visible")


def load_layout(
    path: str | Path,
    fmt: LayoutFormat = "auto",
    progress: Callable[[float], None] | None = None,
) -> Layout:
    """Read a view-hierarchy dump (see the module docstring), gzip-compressed or not.

    At most :data:`MAX_FILE_BYTES` (+1) bytes are read, whatever ``stat`` says: a pipe or
    a device such as ``/dev/zero`` is refused at the limit instead of filling memory.
    """
    stream, raw, _ = open_input(path)
    try:
        data = stream.read(MAX_FILE_BYTES + 1)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise InputFileError(path, f"a broken gzip file ({error})") from None
    except OSError as error:
        raise InputFileError(path, describe_os_error(error)) from None
    finally:
        raw.close()
    if len(data) > MAX_FILE_BYTES:
        raise InputFileError(
            path, f"larger than {MAX_FILE_BYTES:,} bytes: no view-hierarchy dump is that large"
        )
    return parse_layout(data, str(path), fmt, progress)


def parse_layout(
    data: bytes,
    name: str = "<bytes>",
    fmt: LayoutFormat = "auto",
    progress: Callable[[float], None] | None = None,
) -> Layout:
    """Parse the bytes of a dump; ``name`` is used in error messages."""
    if len(data) > MAX_FILE_BYTES:
        raise InputFileError(name, f"larger than {MAX_FILE_BYTES:,} bytes")
    text = _decode(data, name)
    head = text.lstrip()[:1]
    if fmt == "auto":
        if head == "<":
            fmt = "xml"
        elif head in ("{", "["):
            fmt = "json"
        elif not head:
            raise InputFileError(name, "empty file: expected an XML or JSON view hierarchy")
        else:
            raise InputFileError(name, "neither XML ('<…') nor JSON ('{…' or '[…')")
    found = _parse_xml(text, name, progress) if fmt == "xml" else _parse_json(text, name)
    if not found.nodes:
        raise InputFileError(name, "the hierarchy holds no nodes")
    roots = [n.bounds for n in found.nodes if n.parent < 0]
    screen, source = screen_size(roots, found.declared, found.rotation)
    return Layout(
        name, tuple(found.nodes), screen, found.kind, found.guessed, found.skipped, source
    )


def screen_size(
    roots: Sequence[tuple[int, int, int, int]],
    declared: tuple[int, int] | None = None,
    rotation: int | None = None,
) -> tuple[tuple[int, int] | None, str]:
    """The screen (width, height px) a dump covers, and where it came from (the rule in
    the module docstring): the ``declared`` size, turned a quarter when ``rotation`` is
    odd and the windows say so, grown to the full-window ``roots``; else those roots'
    extent; else ``(None, "unknown")``."""
    full = [b for b in roots if b[0] <= 0 and b[1] <= 0]
    extent = (max(b[2] for b in full), max(b[3] for b in full)) if full else None
    if declared is None:
        return (extent, "full-window roots") if extent else (None, "unknown")
    if extent is None:
        return declared, "declared"
    candidates = [declared]
    if rotation in (1, 3):
        candidates.append((declared[1], declared[0]))

    def grown(size: tuple[int, int]) -> int:
        return max(size[0], extent[0]) * max(size[1], extent[1]) - size[0] * size[1]

    best = min(candidates, key=grown)  # ties keep the size as declared
    screen = (max(best[0], extent[0]), max(best[1], extent[1]))
    source = "declared" if best == declared else "declared, turned"
    return screen, source if screen == best else source + ", grown to the windows"


def _decode(data: bytes, name: str) -> str:
    """Bytes → text with LF line ends. A BOM wins; then NUL bytes (a dump begins with an
    ASCII character, so a NUL beside it means UTF-16 without a BOM); then an XML
    declaration naming an ASCII-compatible encoding; then UTF-8. A declaration naming
    UTF-16/32 on bytes without NULs is ignored (the file was re-saved as UTF-8): the
    bytes win."""
    codec, skip = sniff_encoding(data[:512])
    if skip == 0 and codec == "utf-8":
        if len(data) >= 2 and data[0] and not data[1]:
            codec = "utf-16-le"
        elif len(data) >= 2 and data[1] and not data[0]:
            codec = "utf-16-be"
        else:
            codec = _declared_encoding(data, name)
    try:
        text = data[skip:].decode(codec)
    except UnicodeDecodeError as error:
        before = data[skip : skip + error.start].decode(codec, errors="replace")
        line = normalise_line_ends(before).count("\n") + 1
        raise InputFileError(name, f"not valid {codec} text ({error.reason})", line) from None
    return normalise_line_ends(text)


def _declared_encoding(data: bytes, name: str) -> str:
    declared = _XML_ENCODING.match(data[:200])
    if declared is None:
        return "utf-8"
    label = declared.group(1).decode("ascii")
    try:
        codec = codecs.lookup(label).name
    except LookupError:
        raise InputFileError(name, f"unsupported encoding {label!r}", line=1) from None
    if codec.startswith(("utf-16", "utf-32", "utf_16", "utf_32")):
        return "utf-8"
    try:
        compatible = "<?xml encoding=''?>".encode(codec) == b"<?xml encoding=''?>"
    except (UnicodeError, LookupError):
        compatible = False
    if not compatible:
        raise InputFileError(name, f"unsupported encoding {label!r}", line=1)
    return codec


@dataclass
class _Found:
    """What a parser found: nodes and what the dump says about its screen."""

    nodes: list[ViewNode] = field(default_factory=list)
    kind: str = ""
    guessed: int = 0
    skipped: int = 0
    declared: tuple[int, int] | None = None
    rotation: int | None = None


class _Bad(Exception):
    """A malformed element; the parser adds the line it is on."""


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


def _flag(attrib: Mapping[str, str], key: str, where: str, default: bool) -> bool:
    """A true/false attribute; absent or empty (Selendroid's ``optString`` of a missing
    value) is the default."""
    raw = attrib.get(key, "")
    if not raw:
        return default
    value = _TRUE_FALSE.get(raw.strip().lower())
    if value is None:
        raise _Bad(f"{where}: {key}={raw[:20]!r}, expected true or false")
    return value


def _alpha(value: object, where: str, error: Callable[[str], Exception]) -> float:
    try:
        alpha = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise error(f"{where}: alpha {str(value)[:20]!r} is not a number") from None
    if isinstance(value, bool) or not 0.0 <= alpha <= 1.0:
        raise error(f"{where}: alpha {str(value)[:20]!r}, expected a number in [0, 1]")
    return alpha


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


# -- writers and a synthetic generator (tests, demos) ----------------------------------


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


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[ViewNode] = []

    def add(self, parent: int, cls: str, box: tuple[int, int, int, int], **kw: Any) -> int:
        self.nodes.append(ViewNode(cls, box, parent, **kw))
        return len(self.nodes) - 1


_W = "android.widget."


def synth_layout(
    rng: np.random.Generator,
    screen: tuple[int, int] = (1080, 1920),
    *,
    items: int = 12,
    columns: int = 1,
) -> list[ViewNode]:
    """A **synthetic** mail-app-like hierarchy (spec 04), for tests and demos.

    A decor view with an opaque window background; a toolbar (opaque) with an icon and a
    title; a list of ``items`` rows in ``columns`` columns, each nested 3–4 layouts deep
    (a card, often a redundant opaque container background, sometimes one more layout,
    an avatar, sender, subject and a snippet that may be empty); a translucent FAB over
    the list; an invisible overlay and an alpha-0 image. Rows past the bottom are
    clipped and text boxes overflow their parents. Drawing flags follow
    :func:`draws_by_class` except for the marked backgrounds (decor, toolbar, containers).
    """
    width, height = screen
    b = _Builder()
    decor = b.add(-1, _W + "FrameLayout", (0, 0, width, height), draws=True, opaque=True)
    column = b.add(decor, _W + "LinearLayout", (0, 0, width, height))
    bar = round(0.08 * height)
    toolbar = b.add(
        column, "androidx.appcompat.widget.Toolbar", (0, 0, width, bar), draws=True, opaque=True
    )
    icon = round(0.1 * width)
    b.add(toolbar, _W + "ImageButton", (0, 0, icon, bar), draws=True)
    title = (icon, round(0.2 * bar), round(0.7 * width), round(0.8 * bar))
    b.add(toolbar, _W + "TextView", title, draws=True, text="Inbox")
    content = b.add(column, _W + "FrameLayout", (0, bar, width, height))
    listing = b.add(content, "androidx.recyclerview.widget.RecyclerView", (0, bar, width, height))
    cols = max(1, columns)
    row_h = max(3, round(height * float(rng.uniform(0.08, 0.14)) / cols**0.5))
    col_w = max(2, width // cols)
    for item in range(items):
        r, c = divmod(item, cols)
        _synth_row(b, rng, listing, item, c * col_w, bar + r * row_h, col_w, row_h)
    fab = round(0.15 * width)
    fab_box = (width - fab - 4, height - fab - 4, width - 4, height - 4)
    b.add(
        content,
        "com.google.android.material.floatingactionbutton.FloatingActionButton",
        fab_box,
        draws=True,
        alpha=0.9,
    )
    overlay = b.add(content, _W + "FrameLayout", (0, bar, width, height), visible=False)
    spinner = (width // 3, height // 3, 2 * width // 3, height // 2)
    b.add(overlay, _W + "ProgressBar", spinner, draws=True)
    b.add(content, _W + "ImageView", (0, bar, width // 2, height // 2), draws=True, alpha=0.0)
    return b.nodes


def _synth_row(
    b: _Builder,
    rng: np.random.Generator,
    parent: int,
    item: int,
    left: int,
    top: int,
    width: int,
    height: int,
) -> None:
    top += int(rng.integers(0, 2))
    right, bottom = left + width, top + height - 1
    card_box = (left, top, right, bottom)
    card = b.add(
        parent,
        "androidx.cardview.widget.CardView",
        card_box,
        draws=True,
        opaque=bool(rng.random() < 0.5),
    )
    holder = b.add(
        card,
        "androidx.constraintlayout.widget.ConstraintLayout",
        card_box,
        draws=bool(rng.random() < 0.7),
        opaque=True,
    )
    if rng.random() < 0.5:  # a 4th level, as in spec 04's mail app
        holder = b.add(holder, _W + "LinearLayout", card_box)
    avatar = max(1, min(height - 2, width // 4))
    b.add(
        holder,
        _W + "ImageView",
        (left + 1, top + 1, left + 1 + avatar, top + 1 + avatar),
        draws=True,
    )
    x0 = left + avatar + 2
    texts = b.add(holder, _W + "LinearLayout", (x0, top, right, bottom))
    third = max(1, (height - 1) // 3)
    lines = (
        ((x0, top, right - 1, top + third), f"sender {item}"),
        ((x0, top + third, right, top + 2 * third), "subject"),
        ((x0, top + 2 * third, right + 5, bottom + 4), "" if rng.random() < 0.3 else "snippet …"),
    )
    for box, text in lines:
        b.add(texts, _W + "TextView", box, draws=bool(text), text=text)
