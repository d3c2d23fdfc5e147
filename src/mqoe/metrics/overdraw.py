"""Exact GPU overdraw of a view hierarchy (what Android's "Debug GPU overdraw" shows): how
many times each pixel is painted in a frame, from a flat list of :class:`ViewNode` (the
geometry rules are in :mod:`mqoe.analysis.layout`). One pure function shared by the
layout analyser and the simulator's UI model (draw cost ∝
:attr:`OverdrawStats.pixels_drawn`).

Overdraw levels (Android's names, :data:`LEVELS`): a pixel painted *k* times has
overdraw *k − 1*: ``0x`` = painted once, ``1x`` twice (blue), ``2x`` three times (green),
``3x`` four times (pink), ``4+x`` five or more (red); pixels painted zero times are
``undrawn``. The **mean overdraw factor** is the mean number of paints per screen pixel
(1.0 is the ideal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mqoe.errors import UserError

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
MAX_SCREEN_PX = 1_000_000  # per side; phone screens are < 4,000 px
MAX_GRID_CELLS = 40_000_000  # count grid (int32): 160 MB at most
HIDDEN_BUDGET_CELLS = 400_000_000  # cells visited to attribute hidden pixels (~1 s)

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
    (width, height) px; the clipping and drawing rules are in :mod:`mqoe.analysis.layout`.

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
