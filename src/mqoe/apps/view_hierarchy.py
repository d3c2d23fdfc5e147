"""View hierarchies: concrete views on a screen, expanded from the catalogue's templates,
their overdraw (the exact count of :mod:`mqoe.metrics.overdraw`) and the RUIR fix
(:meth:`ViewHierarchy.trim_redundant_layers`: layers opaque layers above hide stop
painting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from mqoe.apps.ui_catalog import ViewSpec
from mqoe.metrics.overdraw import OverdrawStats, ViewNode, overdraw


class ViewHierarchy:
    """Concrete views on a screen, in paint order (pre-order, parents first).

    Built from templates by :meth:`from_specs`; every geometric question (overdraw,
    hidden layers) goes through :func:`mqoe.metrics.overdraw`, the exact count
    the real-dump analyser uses, so simulated and measured overdraw mean the same."""

    def __init__(self, nodes: Sequence[ViewNode], screen: tuple[int, int]) -> None:
        self.nodes: tuple[ViewNode, ...] = tuple(nodes)
        self.screen = screen
        self._stats: OverdrawStats | None = None

    @classmethod
    def from_specs(cls, views: Sequence[ViewSpec], screen: tuple[int, int]) -> ViewHierarchy:
        """Expand templates (fractional rects, repeats) into pixel views on ``screen``."""
        children: dict[str, list[ViewSpec]] = {}
        for view in views:
            children.setdefault(view.parent, []).append(view)
        nodes: list[ViewNode] = []
        width, height = screen

        def expand(view: ViewSpec, box: tuple[float, float, float, float], parent: int) -> None:
            left, top, right, bottom = box
            w, h = right - left, bottom - top
            x0, y0, x1, y1 = view.rect
            rl, rt, rr, rb = left + x0 * w, top + y0 * h, left + x1 * w, top + y1 * h
            step = (rb - rt) / view.repeat
            for k in range(view.repeat):
                copy = (rl, rt + k * step, rr, rt + (k + 1) * step)
                index = len(nodes)
                nodes.append(
                    ViewNode(
                        cls=view.id,
                        bounds=(round(copy[0]), round(copy[1]), round(copy[2]), round(copy[3])),
                        parent=parent,
                        draws=view.draws,
                        opaque=view.opaque,
                    )
                )
                for child in children.get(view.id, ()):
                    expand(child, copy, index)

        for root in children.get("", ()):
            expand(root, (0.0, 0.0, float(width), float(height)), -1)
        return cls(nodes, screen)

    # -- derived values -----------------------------------------------------------------
    @property
    def stats(self) -> OverdrawStats:
        """Exact per-pixel paint counts (computed once)."""
        if self._stats is None:
            self._stats = overdraw(self.nodes, self.screen)
        return self._stats

    @property
    def node_count(self) -> int:
        return len(self.nodes)

    @property
    def depth(self) -> npt.NDArray[np.int64]:
        """Nesting depth of each view (1 = a root)."""
        return self.stats.depth

    @property
    def area_fraction(self) -> npt.NDArray[np.float64]:
        """Each view's clipped area as a fraction of the screen."""
        return self.stats.area_px / self.stats.screen_px

    @property
    def drawing_layers(self) -> int:
        return self.stats.drawing_layers

    @property
    def pixels_painted(self) -> int:
        """Pixels painted per frame, repeats counted (what drawing costs)."""
        return self.stats.pixels_drawn

    @property
    def mean_overdraw(self) -> float:
        """Mean paints per screen pixel (1.0 ideal)."""
        return self.stats.mean_overdraw

    def redundant(self) -> npt.NDArray[np.int64]:
        """Indices of drawing layers that later opaque layers cover completely."""
        s = self.stats
        if s.hidden_px is None:  # too large to attribute: claim nothing
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(s.drawn & (s.hidden_px == s.area_px)).astype(np.int64)

    @property
    def redundant_layers(self) -> int:
        return len(self.redundant())

    def subtree_size(self, index: int) -> int:
        """Views in the subtree rooted at ``index`` (itself included)."""
        depth = self.depth
        end = index + 1
        while end < len(self.nodes) and depth[end] > depth[index]:
            end += 1
        return end - index

    def copies(self, view_id: str) -> list[int]:
        """Indices of the concrete copies of one template."""
        return [i for i, node in enumerate(self.nodes) if node.cls == view_id]

    # -- transforms ---------------------------------------------------------------------
    def trim_redundant_layers(self) -> tuple[ViewHierarchy, int]:
        """The RUIR fix: every layer that opaque layers above hide completely stops
        painting (e.g. merging an included layout whose root repeats its parent's
        background); a trimmed view left with no children is removed. Returns the new
        hierarchy and how many layers were trimmed. What the user sees is unchanged —
        the top-most layer of every pixel is never a hidden one — and one pass is a
        fixed point (removing layers never hides another)."""
        trimmed = self.redundant()
        if not len(trimmed):
            return self, 0
        trim = set(trimmed.tolist())
        nodes = [replace(n, draws=False) if i in trim else n for i, n in enumerate(self.nodes)]
        n_children = [0] * len(nodes)
        for node in nodes:
            if node.parent >= 0:
                n_children[node.parent] += 1
        keep = [True] * len(nodes)
        for i in range(len(nodes) - 1, -1, -1):  # children come after parents
            if i in trim and n_children[i] == 0:
                keep[i] = False
                if nodes[i].parent >= 0:
                    n_children[nodes[i].parent] -= 1
        new_index = np.cumsum(keep) - 1
        kept = [
            replace(node, parent=int(new_index[node.parent]) if node.parent >= 0 else -1)
            for node, k in zip(nodes, keep, strict=True)
            if k
        ]
        return ViewHierarchy(kept, self.screen), len(trim)

    def with_layer(
        self, bounds: tuple[int, int, int, int], *, opaque: bool = False, parent: int = -1
    ) -> ViewHierarchy:
        """A copy with one more drawing view painted last (on top of everything)."""
        node = ViewNode(cls="added", bounds=bounds, parent=parent, draws=True, opaque=opaque)
        return ViewHierarchy((*self.nodes, node), self.screen)
