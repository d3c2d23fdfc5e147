"""The summary renderer: the Markdown reproductions write, and nothing from input as markup."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given
from hypothesis import strategies as st

from mqoe.report.markdown import inline, render_markdown
from tests.report.conftest import HOSTILE_ATTR, HOSTILE_SCRIPT

ALLOWED_TAGS = {
    "h3", "h4", "h5", "h6", "p", "ul", "li", "span", "div", "table", "thead",
    "tbody", "tr", "th", "td", "code", "strong", "em",
}  # fmt: skip
ALLOWED_CLASSES = {
    "table-wrap", "md", "checkitem", "check yes", "check no", "num",
    "v met", "v not-met", "v reference",
}  # fmt: skip


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(fragment: str) -> _Tags:
    parser = _Tags()
    parser.feed(fragment)
    parser.close()
    return parser


def assert_only_own_markup(fragment: str) -> None:
    for tag, attrs in parse(fragment).tags:
        assert tag in ALLOWED_TAGS, (tag, fragment)
        for name, value in attrs:
            assert name == "class" and value in ALLOWED_CLASSES, (tag, name, value)


def test_headings_lists_checkboxes_tables_and_inline_styles() -> None:
    text = (
        "# gpu-buffers (quick)\n\nNexus 5, **2 seeds**, `mem_gb` and *means*.\n\n"
        "| mem_gb | policy | verdict |\n|---|---|---|\n| 1.5 | van | **not met** |\n"
        "| 2 | full | met |\n\n## The study's shape\n\n- [x] FULL > FAIR\n- [ ] kills\n"
        "- plain item\n  continued\n"
    )
    html = render_markdown(text)
    assert "<h3>gpu-buffers (quick)</h3>" in html
    assert "<h4>The study&#x27;s shape</h4>" in html
    assert "<strong>2 seeds</strong>" in html and "<code>mem_gb</code>" in html
    assert "<em>means</em>" in html
    assert '<td class="num">1.5</td><td>van</td><td><span class="v not-met">not met</span>' in html
    assert '<span class="check yes">✓</span> FULL &gt; FAIR' in html
    assert '<span class="check no">✗</span> kills' in html
    assert "<li>plain item continued</li>" in html
    assert_only_own_markup(html)


def test_hostile_markdown_is_text() -> None:
    text = (
        f"# {HOSTILE_SCRIPT}\n\n{HOSTILE_ATTR} and `{HOSTILE_SCRIPT}`\n\n"
        f"| a | {HOSTILE_ATTR} |\n|---|---|\n| **{HOSTILE_SCRIPT}** | x |\n\n"
        f"- [x] {HOSTILE_ATTR}\n"
        "[link](javascript:alert(1)) ![img](x onerror=alert(1))\n"
    )
    html = render_markdown(text)
    assert "<script" not in html and "<img" not in html and "href" not in html
    assert_only_own_markup(html)
    shown = "".join(parse(html).text)
    assert HOSTILE_SCRIPT in shown and HOSTILE_ATTR in shown


def test_code_spans_keep_their_stars() -> None:
    assert inline("`a**b**c` **d**") == "<code>a**b**c</code> <strong>d</strong>"


@given(st.text(max_size=300))
def test_any_text_renders_to_own_markup_only(text: str) -> None:
    assert_only_own_markup(render_markdown(text))


_TOKENS = st.sampled_from(
    [HOSTILE_SCRIPT, HOSTILE_ATTR, "</td>", "<b>", '"', "'", "&amp;", "|", "**", "*", "`",
     "\n", "- ", "# ", "[x] ", "---", "x", " "]
)  # fmt: skip


@given(st.lists(_TOKENS, max_size=40))
def test_markup_from_input_never_becomes_markup(tokens: list[str]) -> None:
    text = "".join(tokens)
    assert_only_own_markup(render_markdown(text))
    assert_only_own_markup(render_markdown(f"| h |\n|---|\n| {text} |\n"))
