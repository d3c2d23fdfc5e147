"""A small, safe Markdown-to-HTML renderer for the summaries reproductions write.

It knows exactly what ``summary.md``/``comparison.md`` use: ``#`` headings, paragraphs,
``-``/``*`` lists (with ``[x]``/``[ ]`` check boxes), pipe tables, and inline
``**bold**``, ``*italic*`` and `` `code` ``. Everything else is text. Safety comes
from the order of work: each piece of input is HTML-escaped first and only then wrapped
in the few tags above, so no input character ever becomes markup (no raw HTML, no
links, no images, no attributes from the input).
"""

from __future__ import annotations

import html
import re

_HEADING = re.compile(r"(#{1,6})\s+(.*)")
_ITEM = re.compile(r"\s*[-*]\s+(.*)")
_CHECK = re.compile(r"\[([ xX])\]\s+(.*)")
_RULE = re.compile(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?")
_NUMBER = re.compile(r"[+\-−]?(\d[\d,]*\.?\d*|\.\d+)(e[+-]?\d+)?\s*%?")
_VERDICTS = ("met", "not met", "reference")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")


def render_markdown(text: str, heading_offset: int = 2) -> str:
    """HTML for ``text``; ``#`` becomes ``<h{1 + heading_offset}>`` (capped at h6)."""
    blocks: list[str] = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif heading := _HEADING.fullmatch(line.strip()):
            level = min(6, len(heading.group(1)) + heading_offset)
            blocks.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
            i += 1
        elif _is_table_start(lines, i):
            i = _table(lines, i, blocks)
        elif _ITEM.fullmatch(line):
            i = _list(lines, i, blocks)
        else:
            i = _paragraph(lines, i, blocks)
    return "\n".join(blocks)


def inline(text: str) -> str:
    """Escape ``text``, then apply `code`, **bold** and *italic* (code spans stay literal)."""
    parts = _CODE.split(text)
    out = []
    for index, part in enumerate(parts):
        escaped = html.escape(part, quote=True)
        if index % 2:
            out.append(f"<code>{escaped}</code>")
        else:
            escaped = _BOLD.sub(r"<strong>\1</strong>", escaped)
            out.append(_ITALIC.sub(r"<em>\1</em>", escaped))
    return "".join(out)


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        lines[i].lstrip().startswith("|")
        and i + 1 < len(lines)
        and _RULE.fullmatch(lines[i + 1].strip()) is not None
    )


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", body)]


def _table(lines: list[str], i: int, blocks: list[str]) -> int:
    header = _cells(lines[i])
    head = "".join(f"<th>{inline(c)}</th>" for c in header)
    rows = []
    i += 2
    while i < len(lines) and lines[i].lstrip().startswith("|"):
        cells = (_cells(lines[i]) + [""] * len(header))[: max(len(header), 1)]
        rows.append("<tr>" + "".join(_cell(c) for c in cells) + "</tr>")
        i += 1
    body = "\n".join(rows)
    blocks.append(
        f'<div class="table-wrap"><table class="md"><thead><tr>{head}</tr></thead>'
        f"<tbody>\n{body}\n</tbody></table></div>"
    )
    return i


def _cell(text: str) -> str:
    """A table cell: verdicts as coloured labels, numbers right-aligned."""
    bare = text.strip("*").strip()
    if bare in _VERDICTS:
        css = bare.replace(" ", "-")
        return f'<td><span class="v {css}">{html.escape(bare)}</span></td>'
    if _NUMBER.fullmatch(bare):
        return f'<td class="num">{inline(text)}</td>'
    return f"<td>{inline(text)}</td>"


def _list(lines: list[str], i: int, blocks: list[str]) -> int:
    items = []
    while i < len(lines) and (item := _ITEM.fullmatch(lines[i])):
        text = item.group(1)
        i += 1
        # A continuation line (indented, not a new item) belongs to this item.
        while i < len(lines) and lines[i].startswith("  ") and not _ITEM.fullmatch(lines[i]):
            text += " " + lines[i].strip()
            i += 1
        if check := _CHECK.fullmatch(text):
            done = check.group(1) != " "
            mark = '<span class="check yes">✓</span>' if done else '<span class="check no">✗</span>'
            items.append(f'<li class="checkitem">{mark} {inline(check.group(2))}</li>')
        else:
            items.append(f"<li>{inline(text)}</li>")
    blocks.append("<ul>" + "".join(items) + "</ul>")
    return i


def _paragraph(lines: list[str], i: int, blocks: list[str]) -> int:
    text = []
    while (
        i < len(lines)
        and lines[i].strip()
        and not _HEADING.fullmatch(lines[i].strip())
        and not _ITEM.fullmatch(lines[i])
        and not _is_table_start(lines, i)
    ):
        text.append(lines[i].strip())
        i += 1
    blocks.append(f"<p>{inline(' '.join(text))}</p>")
    return i
