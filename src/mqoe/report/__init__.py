"""The reproduction report: one static, self-contained HTML page (``mqoe report``).

``build_report(out_dir)`` reads one reproduction folder, or a folder of them as
``mqoe reproduce all`` writes, and returns the page and the problems met on the way;
``write_report`` writes it atomically. :mod:`mqoe.report.browser` opens a page in
headless Chromium (console messages, figures decoded, requests made, a screenshot).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mqoe import __version__
from mqoe.report.collect import Reproduction, find_reproductions, load_reproduction
from mqoe.report.render import render_report
from mqoe.results.atomic import atomic_write_text


@dataclass(frozen=True)
class Report:
    """A rendered report: the HTML and what it was made from."""

    html: str
    reproductions: tuple[Reproduction, ...]

    @property
    def problems(self) -> list[str]:
        return [p for r in self.reproductions for p in r.problems]

    @property
    def figure_count(self) -> int:
        return sum(len(r.figures) for r in self.reproductions)


def build_report(
    out_dir: Path,
    works: Sequence[str] | None = None,
    *,
    generated_utc: str | None = None,
    version: str = __version__,
) -> Report:
    """Read the reproductions under ``out_dir`` and render the page.

    ``generated_utc`` defaults to now (the only clock read, for the header); pass a
    fixed string for a reproducible file. Raises ``UserError`` when there is nothing
    to report or a named work is missing.
    """
    folders = find_reproductions(out_dir, works)
    reproductions = tuple(load_reproduction(folder) for folder in folders)
    when = generated_utc or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    page = render_report(reproductions, source=out_dir, version=version, generated_utc=when)
    return Report(page, reproductions)


def write_report(report: Report, path: Path) -> Path:
    """Write the page atomically; returns ``path``."""
    return atomic_write_text(path, report.html)


__all__ = ["Report", "build_report", "write_report"]
