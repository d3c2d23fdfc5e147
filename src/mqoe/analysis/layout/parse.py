"""A dump file or its bytes → :class:`~mqoe.analysis.layout.model.Layout`
(:func:`load_layout`, :func:`parse_layout`): the format told apart by content, and the
screen size (:func:`screen_size`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from mqoe.analysis.layout.model import Layout, LayoutFormat
from mqoe.analysis.layout.parse_json import _parse_json
from mqoe.analysis.layout.parse_xml import _parse_xml
from mqoe.analysis.layout.read import MAX_FILE_BYTES, _decode, read_dump
from mqoe.errors import InputFileError


def load_layout(
    path: str | Path,
    fmt: LayoutFormat = "auto",
    progress: Callable[[float], None] | None = None,
) -> Layout:
    """Read a view-hierarchy dump (see the package docstring), gzip-compressed or not.

    At most :data:`~mqoe.analysis.layout.read.MAX_FILE_BYTES` (+1) bytes are read,
    whatever ``stat`` says (:func:`~mqoe.analysis.layout.read.read_dump`).
    """
    return parse_layout(read_dump(path), str(path), fmt, progress)


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
    the package docstring): the ``declared`` size, turned a quarter when ``rotation`` is
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
