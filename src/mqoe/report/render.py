"""The reproduction report as one static, self-contained HTML page.

No scripts, no external resources: figures are ``data:`` URIs, the style sheet is
inline, and a Content-Security-Policy forbids anything else, so the page opens offline
and an injected tag could not run even if escaping failed. Every string that came from
a file (work names, labels, parameters, sources) passes through :func:`_e` or the safe
Markdown renderer; the only unescaped text is this module's own markup.
"""

from __future__ import annotations

import base64
import html
import math
import re
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path

from mqoe.report.collect import (
    FEATURED,
    PNG_SIGNATURE,
    Figure,
    Reproduction,
    RunsSummary,
    ScenarioRuns,
)
from mqoe.report.markdown import render_markdown
from mqoe.report.style import CSS
from mqoe.results.comparison import ComparisonRow, format_number

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'"
_SHOWN_PARAM_SETS = 200  # a sweep's worth; beyond this the table says how many more
_OPEN_PARAM_SETS = 12  # parameter tables up to this size start unfolded
_WIDE_ASPECT = 2.2  # figures wider than this (or _WIDE_PX pixels) span the whole row
_WIDE_PX = 1000  # a figure this large would be unreadable at half width
_LONG_FACT = 32  # a fact longer than this (a list of profiles) gets a whole row
_MID_FACT = 16  # … and one longer than this (a time span) two cells


def render_report(
    reproductions: Sequence[Reproduction], *, source: Path, version: str, generated_utc: str
) -> str:
    """The whole page for ``reproductions`` read from ``source``."""
    ids = _anchor_ids([r.name for r in reproductions])
    body = "\n".join(
        [
            _header(reproductions, source, version, generated_utc),
            '<div class="layout">',
            _toc(reproductions, ids),
            "<main>",
            _overview(reproductions, ids),
            *(_work(r, anchor) for r, anchor in zip(reproductions, ids, strict=True)),
            "</main>",
            "</div>",
            _footer(version),
        ]
    )
    title = "mqoe reproduction report"
    if len(reproductions) == 1:
        title += f": {reproductions[0].name}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="mqoe {_e(version)}">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def _e(value: object) -> str:
    """Escape any value for HTML text or a double-quoted attribute."""
    return html.escape(str(value), quote=True)


def _anchor_ids(names: Sequence[str]) -> list[str]:
    """Unique, attribute-safe anchors: ``w1-aging-glitching``, …"""
    return [
        f"w{i}-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "work")
        for i, name in enumerate(names, start=1)
    ]


# -- page furniture -------------------------------------------------------------------
def _header(reps: Sequence[Reproduction], source: Path, version: str, generated: str) -> str:
    versions = sorted({v for r in reps if r.runs for v in r.runs.versions})
    made_with = ", ".join(versions) if versions else "unknown (no results store)"
    noun = "reproduction" if len(reps) == 1 else "reproductions"
    return (
        '<header class="top"><div class="top-inner">'
        '<p class="kicker">mqoe · virtual smartphone for mobile QoE research</p>'
        "<h1>Reproduction report</h1>"
        '<dl class="meta">'
        f"<div><dt>Generated</dt><dd>{_e(generated)}</dd></div>"
        f"<div><dt>Report by</dt><dd>mqoe {_e(version)}</dd></div>"
        f"<div><dt>Runs made with</dt><dd>mqoe {_e(made_with)}</dd></div>"
        f"<div><dt>Contents</dt><dd>{len(reps)} {noun}</dd></div>"
        f'<div class="wide"><dt>Source</dt><dd><code>{_e(source)}</code></dd></div>'
        "</dl></div></header>"
    )


def _toc(reps: Sequence[Reproduction], ids: Sequence[str]) -> str:
    items = ['<li><a href="#overview">Overview</a></li>']
    for rep, anchor in zip(reps, ids, strict=True):
        sub = [f'<li><a href="#{anchor}-comparison">{_comparison_title(rep)}</a></li>']
        if rep.figures:
            sub.append(f'<li><a href="#{anchor}-figures">Figures ({len(rep.figures)})</a></li>')
        sub.append(f'<li><a href="#{anchor}-runs">Runs and parameters</a></li>')
        items.append(
            f'<li><a href="#{anchor}">{_e(rep.name)}</a>'
            f"{_badge_counts(rep.comparison)}<ol>{''.join(sub)}</ol></li>"
        )
    return (
        f'<nav class="toc" aria-label="Contents"><h2>Contents</h2><ol>{"".join(items)}</ol></nav>'
    )


def _footer(version: str) -> str:
    return (
        f"<footer><p>Written by <code>mqoe report</code> (mqoe {_e(version)}). "
        "One self-contained file: figures are embedded, nothing is fetched, no scripts run. "
        "Published values are printed beside simulated ones; they are never used to make "
        "them.</p></footer>"
    )


# -- overview ---------------------------------------------------------------------------
def _overview(reps: Sequence[Reproduction], ids: Sequence[str]) -> str:
    rows = []
    for rep, anchor in zip(reps, ids, strict=True):
        met, not_met, reference = _counts(rep.comparison)
        checks = (
            f'<span class="v met">{met} met</span> <span class="v not-met">{not_met} not met</span>'
            f' <span class="v reference">{reference} ref.</span>'
            if rep.comparison is not None
            else '<span class="muted">no comparison.csv</span>'
        )
        runs = rep.runs
        rows.append(
            "<tr>"
            f'<td><a href="#{anchor}">{_e(rep.name)}</a></td>'
            f"<td>{checks}</td>"
            f'<td class="num">{len(rep.figures)}</td>'
            f'<td class="num">{runs.runs if runs else "—"}</td>'
            f'<td class="num">{_duration(runs.wall_time_total_s) if runs else "—"}</td>'
            f"<td>{_e(', '.join(runs.versions)) if runs else '—'}</td>"
            "</tr>"
        )
    return (
        '<section id="overview"><h2>Overview</h2>'
        '<div class="table-wrap"><table class="overview"><thead><tr>'
        "<th>reproduction</th><th>published-vs-simulated checks</th>"
        '<th class="num">figures</th><th class="num">runs</th>'
        '<th class="num">run wall time</th><th>mqoe version</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def _counts(rows: Sequence[ComparisonRow] | None) -> tuple[int, int, int]:
    verdicts = [r.verdict for r in rows or ()]
    return verdicts.count("met"), verdicts.count("not met"), verdicts.count("reference")


def _badge_counts(rows: Sequence[ComparisonRow] | None) -> str:
    if rows is None:
        return ""
    met, not_met, _ = _counts(rows)
    if met + not_met == 0:
        return ""
    return f' <span class="toc-score">{met}/{met + not_met}</span>'


# -- one reproduction -----------------------------------------------------------------
def _work(rep: Reproduction, anchor: str) -> str:
    lead = FEATURED.get(rep.name)
    kind = "work featured" if lead else "work"
    parts = [f'<section class="{kind}" id="{anchor}"><h2>{_e(rep.name)}</h2>']
    if lead:
        parts.append(f'<p class="lead">{_e(lead)}</p>')
    parts.append(f'<p class="path">from <code>{_e(rep.path)}</code></p>')
    if rep.problems:
        items = "".join(f"<li>{_e(p)}</li>" for p in rep.problems)
        parts.append(f'<div class="problems"><strong>Problems reading this folder</strong>'
                     f"<ul>{items}</ul></div>")  # fmt: skip
    parts.append(_comparison_section(rep, anchor))
    if rep.figures:
        parts.append(_figures_section(rep.figures, anchor))
    parts.append(_runs_section(rep.runs, rep.metrics_rows, anchor))
    parts.append("</section>")
    return "\n".join(parts)


def _comparison_title(rep: Reproduction) -> str:
    """A featured study has no published values: its rows are expectations."""
    return "Expected vs simulated" if rep.name in FEATURED else "Published vs simulated"


def _comparison_section(rep: Reproduction, anchor: str) -> str:
    head = f'<h3 id="{anchor}-comparison">{_comparison_title(rep)}</h3>'
    if rep.comparison is None:
        if rep.summary is None:
            return head + '<p class="muted">No comparison.csv and no Markdown summary.</p>'
        name, text = rep.summary
        return (
            f'{head}<p class="note">This reproduction wrote no <code>comparison.csv</code>; '
            f"its <code>{_e(name)}</code> is shown as written.</p>"
            f'<div class="markdown">{render_markdown(text)}</div>'
        )
    parts = [head, _scorecard(rep.comparison), _comparison_table(rep.comparison)]
    if rep.summary is not None:
        name, text = rep.summary
        opened = " open" if rep.name in FEATURED else ""  # its table is the result
        parts.append(
            f'<details class="notes"{opened}><summary>Notes from <code>{_e(name)}</code></summary>'
            f'<div class="markdown">{render_markdown(text)}</div></details>'
        )
    return "\n".join(parts)


def _scorecard(rows: Sequence[ComparisonRow]) -> str:
    met, not_met, reference = _counts(rows)
    checked = met + not_met
    share = f" ({100 * met / checked:.0f}% of checked rows)" if checked else ""
    return (
        f'<p class="score"><span class="v met">{met} met</span> '
        f'<span class="v not-met">{not_met} not met</span> '
        f'<span class="v reference">{reference} reference</span>'
        f'<span class="muted">{share}. Difference = simulated − published.</span></p>'
    )


def _comparison_table(rows: Sequence[ComparisonRow]) -> str:
    body = []
    section = None
    for row in rows:
        if row.section != section:
            section = row.section
            body.append(f'<tr class="group"><th colspan="7">{_e(section) or "—"}</th></tr>')
        css = row.verdict.replace(" ", "-")
        body.append(
            f'<tr class="row-{css}">'
            f"<td>{_e(row.what)}</td>"
            f'<td class="num">{_e(row.published)}</td>'
            f'<td class="num">{_e(row.simulated)}</td>'
            f'<td class="num">{_difference(row.difference)}</td>'
            f"<td>{_e(row.tolerance)}</td>"
            f'<td><span class="v {css}">{_e(row.verdict)}</span></td>'
            f'<td class="source">{_e(row.source)}</td>'
            "</tr>"
        )
    return (
        '<div class="table-wrap"><table class="comparison"><thead><tr>'
        '<th>what</th><th class="num">published</th><th class="num">simulated</th>'
        '<th class="num">difference</th><th>tolerance</th><th>verdict</th><th>source</th>'
        f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _difference(value: float | None) -> str:
    if value is None:
        return '<span class="muted">—</span>'
    text = format_number(value)
    if math.isfinite(value) and value > 0:
        text = "+" + text
    return _e(text.replace("-", "−"))


def _figures_section(figures: Sequence[Figure], anchor: str) -> str:
    items = []
    for index, figure in enumerate(figures, start=1):
        size = _png_size(figure)
        dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
        wide = " wide" if size and (size[0] > _WIDE_ASPECT * size[1] or size[0] >= _WIDE_PX) else ""
        encoded = base64.b64encode(figure.data).decode("ascii")
        items.append(
            f'<figure class="fig{wide}" id="{anchor}-fig{index}">'
            f'<img src="data:{figure.mime};base64,{encoded}" alt="{_e(figure.name)}"{dims}>'
            f"<figcaption>{_e(figure.name)}</figcaption></figure>"
        )
    return f'<h3 id="{anchor}-figures">Figures</h3><div class="figures">{"".join(items)}</div>'


def _png_size(figure: Figure) -> tuple[int, int] | None:
    """Pixel size from the PNG header (IHDR), so the page lays out before decoding."""
    data = figure.data
    if figure.mime != "image/png" or len(data) < 24 or not data.startswith(PNG_SIGNATURE):
        return None
    width, height = struct.unpack(">II", data[16:24])
    return (width, height) if width > 0 and height > 0 else None


# -- runs, parameters, seeds, versions ------------------------------------------------
def _runs_section(runs: RunsSummary | None, metrics_rows: int | None, anchor: str) -> str:
    head = f'<h3 id="{anchor}-runs">Runs and parameters</h3>'
    if runs is None:
        return (
            head + '<p class="muted">No results store (<code>results/</code>) in this folder.</p>'
        )
    facts = [
        ("runs", str(runs.runs)),
        ("run wall time, total", _duration(runs.wall_time_total_s)),
        ("run wall time, median", _duration(runs.wall_time_median_s)),
        ("simulated time, total", _duration(runs.sim_time_total_s)),
        ("mqoe version", ", ".join(runs.versions)),
        ("seeds", _ranges(runs.seeds)),
        ("profiles", ", ".join(runs.profiles)),
        ("started (UTC)", _span(runs.first_started_utc, runs.last_started_utc)),
    ]
    if metrics_rows is not None:
        facts.append(("metrics.csv", f"{metrics_rows} rows"))
    # Short facts fill the grid; long ones (lists of profiles) follow, a row each.
    ordered = sorted(facts, key=lambda kv: len(kv[1]) > _LONG_FACT)
    cells = "".join(
        f"<div{_fact_class(v)}><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in ordered
    )
    scenarios = "".join(_scenario(s) for s in runs.scenarios)
    return f'{head}<dl class="facts">{cells}</dl>{scenarios}'


def _fact_class(value: str) -> str:
    if len(value) > _LONG_FACT:
        return ' class="long"'
    return ' class="mid"' if len(value) > _MID_FACT else ""


def _scenario(s: ScenarioRuns) -> str:
    constant = (
        "".join(
            f'<span class="kv"><span class="k">{_e(k)}</span>=<span class="val">{_e(v)}</span>'
            "</span> "
            for k, v in s.constant.items()
        )
        or '<span class="muted">none</span>'
    )
    sets = s.param_sets[:_SHOWN_PARAM_SETS]
    head = "".join(f"<th>{_e(n)}</th>" for n in s.varying)
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{_e(p.params.get(n, '—'))}</td>" for n in s.varying)
        + f'<td class="num">{p.runs}</td><td>{_e(", ".join(p.profiles))}</td>'
        + f"<td>{_e(_ranges(p.seeds))}</td></tr>"
        for p in sets
    )
    more = len(s.param_sets) - len(sets)
    more_row = (
        f'<tr><td colspan="{len(s.varying) + 3}" class="muted">… {more} more parameter sets'
        "</td></tr>"
        if more > 0
        else ""
    )
    opened = " open" if len(s.param_sets) <= _OPEN_PARAM_SETS else ""
    noun = "set" if len(s.param_sets) == 1 else "sets"
    return (
        f'<div class="scenario"><h4>scenario <code>{_e(s.scenario)}</code>: {s.runs} runs, '
        f"{len(s.param_sets)} parameter {noun}</h4>"
        f'<p class="constant"><span class="label">same in every run:</span> {constant}</p>'
        f"<details{opened}><summary>parameter sets</summary>"
        '<div class="table-wrap"><table class="params"><thead><tr>'
        f'{head}<th class="num">runs</th><th>profiles</th><th>seeds</th></tr></thead>'
        f"<tbody>{rows}{more_row}</tbody></table></div></details></div>"
    )


def _duration(seconds: float) -> str:
    """``0.37 s``, ``42.1 s``, ``6 min 05 s``, ``2 h 03 min``, ``21.0 d``."""
    if not math.isfinite(seconds):
        return str(seconds)
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    return f"{seconds / 86400:.1f} d"


def _ranges(values: Iterable[int]) -> str:
    """``[1, 2, 3, 7]`` → ``1–3, 7``."""
    ordered = sorted(set(values))
    parts = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}–{ordered[j]}")
        i = j + 1
    return ", ".join(parts) or "—"


def _span(first: str, last: str) -> str:
    """``2026-11-24 13:14:20 → 13:14:26`` (the date once when both share it)."""
    a, b = first[:19].replace("T", " "), last[:19].replace("T", " ")
    if a == b:
        return a
    if a[:11] == b[:11] and len(b) > 11:
        b = b[11:]
    return f"{a} → {b}"
