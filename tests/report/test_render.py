"""The HTML page: every part present, every label escaped, one self-contained file."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mqoe.report import build_report, write_report
from mqoe.report.render import _duration, _ranges
from mqoe.results.comparison import ComparisonRow
from tests.report.conftest import (
    HOSTILE_ATTR,
    HOSTILE_NAME,
    HOSTILE_SCRIPT,
    comparison_rows,
    three_runs,
    tiny_png_bytes,
)

Make = Callable[..., Path]
WHEN = "2026-01-02 03:04 UTC"


class _Page(HTMLParser):
    """Tags with attributes, the visible text, and the id/href graph."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def hostile_folder(root: Path, make: Make) -> Path:
    rows = [
        *comparison_rows(HOSTILE_SCRIPT),
        ComparisonRow.numeric(
            HOSTILE_ATTR, HOSTILE_ATTR, 1.0, 2.0, tolerance=HOSTILE_SCRIPT, met=True,
            source=HOSTILE_ATTR,
        ),
    ]  # fmt: skip
    runs = three_runs(hostile=True)
    make(root, HOSTILE_NAME, comparison=rows, runs=runs, summary=f"# {HOSTILE_SCRIPT}\n")
    make(root, "plain-work", figures=("only-figure",), comparison=None, runs=three_runs())
    return root


def test_hostile_labels_everywhere_stay_text(tmp_path: Path, make_reproduction: Make) -> None:
    page = build_report(hostile_folder(tmp_path, make_reproduction), generated_utc=WHEN).html
    parsed = parse(page)
    assert not any(tag == "script" for tag, _ in parsed.tags)
    for tag, attrs in parsed.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        if tag == "img":
            assert (attrs.get("src") or "").startswith("data:image/"), attrs
        if tag == "a":
            assert (attrs.get("href") or "").startswith("#"), attrs
    shown = "".join(parsed.text)
    # Work name, comparison cells, parameters and the Markdown summary, all shown literally.
    assert shown.count(HOSTILE_NAME) >= 3  # TOC, overview, section heading
    assert shown.count(HOSTILE_SCRIPT) >= 4
    assert shown.count(HOSTILE_ATTR) >= 4
    assert "<script" not in page.split("<style>")[0] + page.split("</style>")[1]
    assert "onerror=" not in page.replace("onerror=alert", "")  # only inside escaped text
    assert not re.search(r"<img[^>]*onerror", page)


def test_page_has_header_toc_overview_comparison_figures_and_runs(
    tmp_path: Path, make_reproduction: Make
) -> None:
    make_reproduction(tmp_path, "work-a", comparison=comparison_rows(), runs=three_runs())
    report = build_report(tmp_path, generated_utc=WHEN, version="1.2.3")
    page = report.html
    parsed = parse(page)
    shown = " ".join(parsed.text)
    assert WHEN in shown and "mqoe 1.2.3" in shown and "mqoe 9.9.9" in shown
    # Every in-page link points at an element that exists.
    ids = {attrs["id"] for _, attrs in parsed.tags if attrs.get("id")}
    hrefs = [attrs["href"] for tag, attrs in parsed.tags if tag == "a" and attrs.get("href")]
    assert {"#overview", "#w1-work-a", "#w1-work-a-comparison", "#w1-work-a-figures"} <= set(hrefs)
    assert all(h[1:] in ids for h in hrefs)
    # Published vs simulated: the difference is signed, the verdict coloured.
    assert '<td class="num">19</td><td class="num">19.8</td><td class="num">+0.75</td>' in page
    assert '<td class="num">−40</td>' in page
    assert page.count('<span class="v met">met</span>') == 2
    assert page.count('<span class="v not-met">not met</span>') == 1
    assert page.count('<span class="v reference">reference</span>') == 1
    assert '<span class="v met">2 met</span>' in page  # overview and scorecard
    assert "(67% of checked rows)" in page
    # Runs: 3 runs, 7.00 s in all, median 2.00 s, seeds 1–2, bitrate varies.
    for fact in ("<dd>3</dd>", "<dd>7.00 s</dd>", "<dd>2.00 s</dd>", "<dd>1–2</dd>"):
        assert fact in page
    assert '<span class="k">genre</span>=<span class="val">travel</span>' in page
    assert "<th>bitrate</th>" in page and "2 parameter sets" in page
    assert "Notes from <code>summary.md</code>" in page


def test_every_figure_is_embedded_once_with_its_name_and_size(
    tmp_path: Path, make_reproduction: Make
) -> None:
    make_reproduction(tmp_path, "w", figures=("a-fig", "b-fig"), svg_only=("c-svg",))
    report = build_report(tmp_path, generated_utc=WHEN)
    images = [attrs for tag, attrs in parse(report.html).tags if tag == "img"]
    assert [i["alt"] for i in images] == ["a-fig", "b-fig", "c-svg"]
    assert report.figure_count == 3
    folder = tmp_path / "w"
    for image in images:
        mime, _, payload = (image["src"] or "").removeprefix("data:").partition(";base64,")
        suffix = "png" if mime == "image/png" else "svg"
        assert base64.b64decode(payload) == (folder / f"{image['alt']}.{suffix}").read_bytes()
    png = images[0]
    assert (png["width"], png["height"]) == ("80", "48")  # 2 x 1.2 in at 40 dpi
    assert "width" not in images[2]  # SVG: no IHDR to read


def test_without_comparison_csv_the_markdown_summary_is_shown(
    tmp_path: Path, make_reproduction: Make
) -> None:
    make_reproduction(
        tmp_path, "w", summary="# w (quick)\n\n| a | verdict |\n|---|---|\n| 1 | met |\n"
    )
    page = build_report(tmp_path, generated_utc=WHEN).html
    assert "wrote no <code>comparison.csv</code>" in page
    assert '<td class="num">1</td><td><span class="v met">met</span></td>' in page
    assert "no comparison.csv" in page  # the overview says so too


def test_problems_are_shown_in_the_page(tmp_path: Path, make_reproduction: Make) -> None:
    folder = make_reproduction(tmp_path, "w")
    header = "section,what,published,simulated,difference,tolerance,verdict,source"
    (folder / "comparison.csv").write_text(f"{header}\na,b,1,2,1,t,{HOSTILE_SCRIPT},s\n")
    report = build_report(tmp_path, generated_utc=WHEN)
    assert len(report.problems) == 1
    assert 'class="problems"' in report.html
    assert (
        "comparison.csv:2: verdict &#x27;&lt;script&gt;alert(1)&lt;/script&gt;&#x27;" in report.html
    )


def test_same_inputs_give_the_same_file(tmp_path: Path, make_reproduction: Make) -> None:
    make_reproduction(tmp_path, "w", comparison=comparison_rows(), runs=three_runs())
    first = build_report(tmp_path, generated_utc=WHEN).html
    second = build_report(tmp_path, generated_utc=WHEN).html
    assert first == second


def test_the_page_forbids_scripts_and_remote_loads() -> None:
    from mqoe.report.render import CSP

    assert "default-src 'none'" in CSP and "img-src data:" in CSP and "script" not in CSP


def test_write_report_is_atomic(
    tmp_path: Path, make_reproduction: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_reproduction(tmp_path, "w")
    report = build_report(tmp_path, generated_utc=WHEN)
    target = tmp_path / "out" / "report.html"
    write_report(report, target)
    assert target.read_text(encoding="utf-8") == report.html
    old = target.read_bytes()

    def fail(_path: Path) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("mqoe.results.atomic._fsync_file", fail)
    with pytest.raises(OSError, match="disk full"):
        write_report(build_report(tmp_path, generated_utc="other"), target)
    assert target.read_bytes() == old
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.372, "0.37 s"), (42.13, "42.1 s"), (365, "6 min 05 s"), (7380, "2 h 03 min"),
     (1814400, "21.0 d")],
)  # fmt: skip
def test_durations_read_naturally(seconds: float, text: str) -> None:
    assert _duration(seconds) == text


def test_seed_lists_become_ranges() -> None:
    assert _ranges([7, 1, 2, 3, 3, 9, 10]) == "1–3, 7, 9–10"
    assert _ranges([]) == "—"


def test_wide_or_large_figures_take_a_whole_row(tmp_path: Path, make_reproduction: Make) -> None:
    folder = make_reproduction(tmp_path, "w", figures=("small",))
    (folder / "strip.png").write_bytes(tiny_png_bytes("strip", width_in=6.0, height_in=1.0))
    (folder / "big.png").write_bytes(tiny_png_bytes("big", width_in=26.0, height_in=20.0))
    page = build_report(tmp_path, generated_utc=WHEN).html
    found = re.findall(r'<figure class="([^"]+)"[^>]*><img[^>]* alt="([^"]+)"', page)
    assert {alt: css for css, alt in found} == {
        "big": "fig wide",  # 1040 px wide
        "small": "fig",  # 80 x 48
        "strip": "fig wide",  # 240 x 40: aspect 6
    }


def test_the_cross_resource_study_comes_first_with_its_lead_and_expectations(
    tmp_path: Path, make_reproduction: Make
) -> None:
    make_reproduction(tmp_path, "a-work", comparison=comparison_rows())
    make_reproduction(tmp_path, "pressure-meets-network", comparison=comparison_rows())
    page = build_report(tmp_path, generated_utc=WHEN, version="1.2.3").html
    assert page.index('id="w1-pressure-meets-network"') < page.index('id="w2-a-work"')
    assert '<section class="work featured" id="w1-pressure-meets-network">' in page
    assert '<p class="lead">Cross-resource study.' in page
    assert '<h3 id="w1-pressure-meets-network-comparison">Expected vs simulated</h3>' in page
    assert '<h3 id="w2-a-work-comparison">Published vs simulated</h3>' in page
    assert '<details class="notes" open>' in page  # the featured study's table is open
