"""Tidy tables of one dump (:func:`analyze_layout`): nodes, overdraw levels, depth and
candidate redundant layers (:class:`LayoutReport`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mqoe.analysis.layout.model import Layout
from mqoe.errors import InputFileError, UserError
from mqoe.metrics.overdraw import LEVELS, MAX_SCREEN_PX, BoolArray, OverdrawStats, overdraw

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
