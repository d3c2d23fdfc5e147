"""What a view-hierarchy dump is parsed into (:class:`Layout`; its nodes are
:class:`~mqoe.metrics.overdraw.ViewNode`), the limits on a dump, and the shared rules
for a node's drawing flags (the class heuristic :func:`draws_by_class`, ``true``/``false``
flags, alpha)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from mqoe.metrics.overdraw import ViewNode

LayoutFormat = Literal["auto", "xml", "json"]
MAX_NODES = 500_000
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


@dataclass(frozen=True)
class Layout:
    """A parsed dump: nodes in document (paint) order and the screen they cover."""

    name: str
    nodes: tuple[ViewNode, ...]
    screen: tuple[int, int] | None  # width, height in px (package docstring); None: unknown
    format: str  # uiautomator-xml, appium-xml, selendroid-xml, json or selendroid-json
    guessed: int = 0  # nodes without a drawing flag: draws_by_class() decided
    skipped: int = 0  # elements without geometry (Appium's toast messages)
    screen_source: str = ""  # how the screen was found: see screen_size()


_TRUE_FALSE = {"true": True, "false": False}


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
