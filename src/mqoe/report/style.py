"""The report's inline style sheet (no web fonts, no external files)."""

from __future__ import annotations

CSS = """
:root {
  --ink: #1d2330; --muted: #5d6675; --line: #dfe3ea; --soft: #f5f7fa; --accent: #2457a6;
  --met: #1f7a3f; --met-bg: #e3f4e8; --bad: #b42318; --bad-bg: #fde8e6;
  --ref: #4b5563; --ref-bg: #eceff3; --warn-bg: #fff7e0; --warn: #8a5a00;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; color: var(--ink); background: #fff;
  font: 15px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue",
        "Noto Sans", "DejaVu Sans", Arial, sans-serif;
}
code { font: 0.88em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono",
       monospace; background: var(--soft); padding: 0.05em 0.3em; border-radius: 3px;
       overflow-wrap: anywhere; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
h1, h2, h3, h4 { line-height: 1.25; margin: 1.4em 0 0.5em; }
h2 { font-size: 1.55rem; padding-bottom: 0.25em; border-bottom: 2px solid var(--line); }
h3 { font-size: 1.15rem; color: #27354d; }
h4 { font-size: 1rem; margin-top: 1.2em; }
.muted { color: var(--muted); }

header.top { background: #1f4a8a; color: #fff; }
.top-inner { max-width: 1320px; margin: 0 auto; padding: 26px 32px 22px; }
.kicker { margin: 0; text-transform: uppercase; letter-spacing: 0.08em; font-size: 0.75rem;
          opacity: 0.85; }
header.top h1 { margin: 0.2em 0 0.6em; font-size: 2rem; font-weight: 650; }
dl.meta { display: flex; flex-wrap: wrap; gap: 6px 28px; margin: 0; }
dl.meta dt { font-size: 0.72rem; text-transform: uppercase; letter-spacing: 0.06em;
             opacity: 0.8; }
dl.meta dd { margin: 0; font-weight: 600; }
dl.meta code { background: rgba(255, 255, 255, 0.14); color: #fff; }

.layout { max-width: 1320px; margin: 0 auto; padding: 0 32px; display: grid;
          grid-template-columns: 230px minmax(0, 1fr); gap: 36px; }
nav.toc { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow: auto;
          padding: 22px 0 24px; font-size: 0.9rem; }
nav.toc h2 { font-size: 0.78rem; text-transform: uppercase; letter-spacing: 0.08em;
             color: var(--muted); border: 0; margin: 0 0 0.6em; }
nav.toc ol { list-style: none; margin: 0; padding: 0; }
nav.toc > ol > li { margin: 0 0 0.7em; }
nav.toc > ol > li > a { font-weight: 600; }
nav.toc ol ol { margin: 0.15em 0 0 0.8em; padding-left: 0.7em; border-left: 2px solid var(--line); }
nav.toc ol ol a { color: var(--muted); }
.toc-score { font-size: 0.75rem; color: var(--met); background: var(--met-bg);
             border-radius: 8px; padding: 0 6px; margin-left: 4px; }
main { min-width: 0; padding-bottom: 40px; }
section.work { margin-top: 8px; }
section.work.featured { border-left: 4px solid #2563eb; padding-left: 14px; }
p.lead { font-size: 1.05em; max-width: 60em; }
p.path { margin: -0.3em 0 0.8em; font-size: 0.85rem; color: var(--muted); }

.table-wrap { overflow-x: auto; margin: 0.6em 0 1em; border: 1px solid var(--line);
              border-radius: 6px; }
table { border-collapse: collapse; width: 100%; font-size: 0.86rem; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left;
         vertical-align: top; }
thead th { background: var(--soft); font-weight: 600; color: #2f3a4d; white-space: nowrap;
           position: sticky; top: 0; }
tbody tr:last-child td { border-bottom: 0; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.group th { background: #eef3fb; color: #1c3f77; font-weight: 650; font-size: 0.84rem;
              border-top: 1px solid var(--line); }
td.source { color: var(--muted); font-size: 0.8rem; min-width: 16em; }
tr.row-not-met td:first-child { box-shadow: inset 3px 0 0 var(--bad); }
tr.row-met td:first-child { box-shadow: inset 3px 0 0 var(--met); }
table.overview td:first-child { font-weight: 600; }

.v { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 0.78rem;
     font-weight: 600; white-space: nowrap; }
.v.met { color: var(--met); background: var(--met-bg); }
.v.not-met { color: var(--bad); background: var(--bad-bg); }
.v.reference { color: var(--ref); background: var(--ref-bg); }
p.score .muted { margin-left: 6px; font-size: 0.85rem; }
p.note { background: var(--soft); border-left: 3px solid var(--accent); padding: 6px 12px;
         font-size: 0.88rem; }
.problems { background: var(--warn-bg); color: var(--warn); border: 1px solid #f2d58a;
            border-radius: 6px; padding: 8px 14px; margin: 0.8em 0; font-size: 0.88rem; }
.problems ul { margin: 0.3em 0 0; padding-left: 1.2em; }

.markdown { font-size: 0.92rem; }
.markdown h3, .markdown h4, .markdown h5 { font-size: 1rem; }
.markdown ul { padding-left: 1.3em; }
.markdown li.checkitem { list-style: none; margin-left: -1.2em; }
.check { display: inline-block; width: 1.2em; font-weight: 700; }
.check.yes { color: var(--met); }
.check.no { color: var(--bad); }
details { margin: 0.5em 0 1em; }
details > summary { cursor: pointer; color: var(--accent); font-size: 0.9rem; }

.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr));
           gap: 18px; margin: 0.6em 0 1.2em; grid-auto-flow: row dense; }
figure.fig { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 10px;
             background: #fff; display: flex; flex-direction: column; align-items: center; }
figure.fig.wide { grid-column: 1 / -1; }
figure.fig img { display: block; max-width: 100%; height: auto; }
figure.fig figcaption { margin-top: 6px; font-size: 0.82rem; color: var(--muted);
                        font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono",
                        monospace; }

dl.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr));
           gap: 8px; margin: 0.6em 0 1em; }
dl.facts > div { background: var(--soft); border-radius: 6px; padding: 7px 11px; }
dl.facts > div.long { grid-column: 1 / -1; }
dl.facts > div.mid { grid-column: span 2; }
dl.facts > div.long dd { font-weight: 500; font-size: 0.9rem; }
dl.facts dt { font-size: 0.72rem; text-transform: uppercase; letter-spacing: 0.05em;
              color: var(--muted); }
dl.facts dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums;
              overflow-wrap: anywhere; }
.scenario h4 code { font-size: 0.95em; }
p.constant { font-size: 0.85rem; margin: 0.3em 0; }
p.constant .label { color: var(--muted); }
.kv { display: inline-block; background: var(--soft); border-radius: 4px; padding: 0 6px;
      margin: 2px 2px 2px 0; font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono",
      monospace; font-size: 0.8rem; }
.kv .k { color: var(--muted); }
footer { border-top: 1px solid var(--line); color: var(--muted); font-size: 0.82rem;
         max-width: 1320px; margin: 0 auto; padding: 14px 32px 30px; }

@media (max-width: 900px) {
  .layout { display: block; padding: 0 16px; }
  nav.toc { position: static; max-height: none; }
  .figures { grid-template-columns: 1fr; }
}
@media print {
  .layout { display: block; }
  nav.toc { position: static; max-height: none; }
  header.top { background: #fff; color: var(--ink); border-bottom: 2px solid var(--ink); }
  dl.meta code { background: var(--soft); color: var(--ink); }
  figure.fig, tr { break-inside: avoid; }
}
"""
