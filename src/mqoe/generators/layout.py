"""A **synthetic** mail-app-like view hierarchy, for tests and demos (:func:`synth_layout`):
modelled on the mail app whose list items, nested 3–4 layers deep, the Android
responsiveness study (MobiCom 2020) found redrawn > 4 times per frame."""

from __future__ import annotations

from typing import Any

import numpy as np

from mqoe.metrics.overdraw import ViewNode


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
    """A **synthetic** mail-app-like hierarchy, for tests and demos.

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
    if rng.random() < 0.5:  # a 4th level, as in the responsiveness study's mail app
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
