"""View-hierarchy dumps as shells and editors hand them over: UTF-8 with or without a
BOM, UTF-16 with or without one (Windows PowerShell's ``adb exec-out uiautomator dump
/dev/tty > dump.xml`` writes UTF-16LE with a BOM, the XML declaration still saying
UTF-8), and LF, CRLF, CR or CR CR LF line ends. Every variant must give the numbers of
its plain UTF-8/LF twin, and an error the line number of the twin's."""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.layout.parse import parse_layout
from mqoe.analysis.layout.report import analyze_layout
from mqoe.analysis.layout.write import layout_to_json, layout_to_xml
from mqoe.errors import InputFileError
from mqoe.generators.layout import synth_layout
from mqoe.metrics.overdraw import ViewNode

_APPIUM = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy index="0" class="hierarchy" rotation="0" width="720" height="1280">
  <android.widget.FrameLayout index="0" class="android.widget.FrameLayout" text="" \
bounds="[0,0][720,1280]" displayed="true">
    <android.widget.TextView index="0" class="android.widget.TextView" \
text="Привет ✓ 🎞 &amp; ü" bounds="[0,0][720,100]" displayed="true" />
    <android.widget.ImageView index="1" class="android.widget.ImageView" text="" \
bounds="[0,50][360,400]" displayed="true" />
  </android.widget.FrameLayout>
</hierarchy>
"""

ENCODINGS: dict[str, Callable[[str], bytes]] = {
    "utf-8": lambda text: text.encode("utf-8"),
    "utf-8 BOM": lambda text: codecs.BOM_UTF8 + text.encode("utf-8"),
    "utf-16le BOM": lambda text: codecs.BOM_UTF16_LE + text.encode("utf-16-le"),
    "utf-16be BOM": lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
    "utf-16le": lambda text: text.encode("utf-16-le"),
    "utf-16be": lambda text: text.encode("utf-16-be"),
}
LINE_ENDS = ("\n", "\r\n", "\r", "\r\r\n")


def _variant(text: str, encoding: str, end: str) -> bytes:
    return ENCODINGS[encoding](text.replace("\n", end))


def _document(kind: str, nodes: list[ViewNode]) -> str:
    if kind == "xml":
        return layout_to_xml(nodes)
    if kind == "xml-flags":
        return layout_to_xml(nodes, flags=True)
    return layout_to_json(nodes)


_texts = st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=8)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    items=st.integers(0, 8),
    text=_texts,
    kind=st.sampled_from(["xml", "xml-flags", "json", "appium"]),
    encoding=st.sampled_from(sorted(ENCODINGS)),
    end=st.sampled_from(LINE_ENDS),
)
def test_every_encoding_and_line_end_gives_the_numbers_of_the_plain_twin(
    seed: int, items: int, text: str, kind: str, encoding: str, end: str
) -> None:
    if kind == "appium":
        document = _APPIUM
    else:
        nodes = synth_layout(np.random.default_rng(seed), (270, 480), items=items)
        nodes[4] = ViewNode(nodes[4].cls, nodes[4].bounds, nodes[4].parent, True, text=text)
        document = _document(kind, nodes)
    twin = parse_layout(document.encode("utf-8"), "twin")
    got = parse_layout(_variant(document, encoding, end), "variant")
    assert got.nodes == twin.nodes
    assert got.screen == twin.screen
    assert got.format == twin.format
    assert (
        analyze_layout(got).summary()["pixels_drawn"]
        == (analyze_layout(twin).summary()["pixels_drawn"])
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    broken_line=st.integers(2, 30),
    kind=st.sampled_from(["xml", "json"]),
    encoding=st.sampled_from(sorted(ENCODINGS)),
    end=st.sampled_from(LINE_ENDS),
)
def test_errors_name_the_line_of_the_plain_twin(
    broken_line: int, kind: str, encoding: str, end: str
) -> None:
    nodes = synth_layout(np.random.default_rng(1), (270, 480), items=3)
    lines = _document(kind, nodes).split("\n")
    lines.insert(broken_line - 1, "<<" if kind == "xml" else "@")
    document = "\n".join(lines)
    with pytest.raises(InputFileError) as plain:
        parse_layout(document.encode("utf-8"), "twin")
    with pytest.raises(InputFileError) as variant:
        parse_layout(_variant(document, encoding, end), "variant")
    assert plain.value.line == broken_line
    assert variant.value.line == broken_line


def test_powershell_utf16_with_a_utf8_declaration() -> None:
    # the declaration says UTF-8, the bytes are UTF-16LE with a BOM: the bytes win
    data = codecs.BOM_UTF16_LE + _APPIUM.replace("\n", "\r\n").encode("utf-16-le")
    assert b"encoding='UTF-8'" not in data  # only readable as UTF-16
    layout = parse_layout(data, "dump.xml")
    assert layout.nodes[1].text == "Привет ✓ 🎞 & ü"
    assert layout.screen == (720, 1280)


def test_a_utf16_declaration_on_utf8_bytes_reads_the_bytes() -> None:
    # re-saved as UTF-8 by an editor that kept the old declaration
    document = _APPIUM.replace("encoding='UTF-8'", "encoding='UTF-16'")
    layout = parse_layout(document.encode("utf-8"), "dump.xml")
    assert layout.nodes[1].text == "Привет ✓ 🎞 & ü"


def test_an_eight_bit_declaration_is_honoured() -> None:
    document = _APPIUM.replace("encoding='UTF-8'", "encoding='ISO-8859-1'")
    document = document.replace("Привет ✓ 🎞 &amp; ü", "Grüße")
    layout = parse_layout(document.encode("latin-1"), "dump.xml")
    assert layout.nodes[1].text == "Grüße"


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_json_dumps_in_every_encoding(encoding: str) -> None:
    document = json.dumps({"class": "android.widget.ImageView", "bounds": [0, 0, 10, 20],
                           "text": "ü✓"})  # fmt: skip
    layout = parse_layout(ENCODINGS[encoding](document), "h.json")
    assert layout.format == "json"
    assert layout.nodes[0].text == "ü✓"
    assert layout.screen == (10, 20)


def test_bad_bytes_in_utf16_name_the_line() -> None:
    data = (
        codecs.BOM_UTF16_LE
        + '<hierarchy>\r\n<node bounds="[0,0][1,1]"\r\n'.encode("utf-16-le")
        + b"\x00\xdc"
    )  # a lone low surrogate
    with pytest.raises(InputFileError, match="utf-16") as info:
        parse_layout(data, "dump.xml")
    assert info.value.line == 3
