"""Appium and Selendroid page sources beside uiautomator dumps, and the screen-size rule.

The documents below are written the way the tools write them:

* Appium UiAutomator2 (appium-uiautomator2-server, ``AccessibilityNodeInfoDumper``):
  root ``<hierarchy index="0" class="hierarchy" rotation=… width=… height=…>`` (width and
  height are ``Display.getSize()``: the app area in the current rotation, which may leave
  out the navigation bar); each element's tag is its class name with ``$@#&`` turned into
  ``.``; attributes ``class``, ``text``, ``resource-id``, ``bounds="[l,t][r,b]"`` (clipped
  to the real display), ``displayed`` (``isVisibleToUser``) …; a toast message is an
  ``android.widget.Toast`` child of the root with no ``bounds``.
* Old Appium (UiAutomator1 bootstrap, ``XMLHierarchy``): a uiautomator dump
  ``<hierarchy rotation=…>`` whose ``<node>`` tags were renamed to the class and given an
  ``instance`` attribute; no width or height.
* Selendroid: JSON views ``{"type": simple class, "rect": {"origin": {x, y}, "size":
  {width, height}}, "shown": bool, "value": text, "id": …, "children": […]}``, and the
  same as XML (``JsonXmlUtil``): root ``<views>``, a tag per view, the geometry in a
  ``<rect x y width height/>`` child.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.layout.model import draws_by_class
from mqoe.analysis.layout.parse import load_layout, parse_layout
from mqoe.analysis.layout.report import analyze_layout
from mqoe.errors import InputFileError
from mqoe.generators.layout import synth_layout
from mqoe.metrics.overdraw import ViewNode, overdraw

_W = "android.widget."

_UIAUTOMATOR2 = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy index="0" class="hierarchy" rotation="0" width="1080" height="2280">
  <android.widget.FrameLayout index="0" package="com.example.mail" \
class="android.widget.FrameLayout" text="" checkable="false" checked="false" clickable="false" \
enabled="true" focusable="false" focused="false" long-clickable="false" password="false" \
scrollable="false" selected="false" bounds="[0,0][1080,2280]" displayed="true" \
a11y-important="false" screen-reader-focusable="false" drawing-order="0" showing-hint="false" \
text-entry-key="false" dismissable="false" a11y-focused="false" heading="false" live-region="0" \
context-clickable="false" content-invalid="false" window-id="42">
    <android.widget.LinearLayout index="0" package="com.example.mail" \
class="android.widget.LinearLayout" text="" bounds="[0,0][1080,2280]" displayed="true">
      <android.widget.ImageView index="0" package="com.example.mail" \
class="android.widget.ImageView" text="" resource-id="com.example.mail:id/avatar" \
bounds="[0,100][200,300]" displayed="true" />
      <android.widget.TextView index="1" package="com.example.mail" \
class="android.widget.TextView" text="Inbox &amp; more" bounds="[200,100][1080,300]" \
displayed="true" />
      <com.example.mail.Outer.InnerImageView index="2" package="com.example.mail" \
class="com.example.mail.Outer$InnerImageView" text="" bounds="[0,300][540,900]" \
displayed="true" />
      <android.widget.Button index="3" package="com.example.mail" class="android.widget.Button" \
text="Hidden" bounds="[0,900][1080,1000]" displayed="false" />
    </android.widget.LinearLayout>
  </android.widget.FrameLayout>
  <android.widget.Toast index="1" text="Message sent" class="android.widget.Toast" \
package="com.android.settings" displayed="true" />
</hierarchy>
"""

_OLD_APPIUM = (
    '<?xml version="1.0" encoding="UTF-8"?><hierarchy rotation="1">'
    '<android.widget.FrameLayout index="0" text="" class="android.widget.FrameLayout" '
    'package="com.example" content-desc="" checkable="false" checked="false" clickable="false" '
    'enabled="true" focusable="false" focused="false" scrollable="false" '
    'long-clickable="false" password="false" selected="false" bounds="[0,0][1920,1080]" '
    'resource-id="" instance="0">'
    '<android.widget.ImageView index="0" text="" class="android.widget.ImageView" '
    'package="com.example" content-desc="" bounds="[0,0][960,1080]" resource-id="" '
    'instance="0"/>'
    '<android.widget.ImageView index="1" text="" class="android.widget.ImageView" '
    'package="com.example" content-desc="" bounds="[480,0][1440,540]" '
    'resource-id="com.example:id/b" instance="1" NAF="true"/>'
    "</android.widget.FrameLayout></hierarchy>"
)


def _write(tmp_path: Path, text: str, name: str = "source.xml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_appium_uiautomator2_page_source(tmp_path: Path) -> None:
    layout = load_layout(_write(tmp_path, _UIAUTOMATOR2))
    assert layout.format == "appium-xml"
    assert [n.cls for n in layout.nodes] == [
        _W + "FrameLayout",
        _W + "LinearLayout",
        _W + "ImageView",
        _W + "TextView",
        "com.example.mail.Outer$InnerImageView",  # the class attribute, not the tag
        _W + "Button",
    ]
    assert [n.parent for n in layout.nodes] == [-1, 0, 1, 1, 1, 1]
    assert layout.nodes[3].text == "Inbox & more"
    assert layout.nodes[2].resource_id == "com.example.mail:id/avatar"
    assert [n.visible for n in layout.nodes] == [True] * 5 + [False]  # displayed="false"
    assert layout.skipped == 1  # the toast: no bounds
    assert layout.screen == (1080, 2280)
    summary = analyze_layout(layout).summary()
    assert summary["nodes"] == 6
    assert summary["depth"] == 3
    # ImageView 200×200, TextView with text 880×200, InnerImageView 540×600; the
    # Button is not displayed and layouts draw nothing
    assert summary["pixels_drawn"] == 200 * 200 + 880 * 200 + 540 * 600
    assert summary["drawing_layers"] == 3


def test_old_appium_bootstrap_source_with_class_tags(tmp_path: Path) -> None:
    layout = load_layout(_write(tmp_path, _OLD_APPIUM))
    assert layout.format == "appium-xml"
    assert [n.cls for n in layout.nodes] == [_W + "FrameLayout", _W + "ImageView", _W + "ImageView"]
    assert [n.parent for n in layout.nodes] == [-1, 0, 0]
    assert layout.nodes[2].resource_id == "com.example:id/b"
    assert layout.screen == (1920, 1080)  # landscape: the root window's own bounds
    stats = analyze_layout(layout).stats
    assert stats.pixels_drawn == 960 * 1080 + 960 * 540
    assert stats.levels_px["1x"] == 480 * 540  # the two images overlap there


_SELENDROID_JSON = {
    "id": "", "ref": "r0", "l10n": {"matches": 0}, "name": "null", "value": "", "shown": True,
    "type": "DecorView",
    "rect": {"origin": {"y": 0, "x": 0}, "size": {"width": 480, "height": 800}},
    "children": [
        {"id": "title", "ref": "r1", "l10n": {"matches": 0}, "name": "null",
         "value": "selendroid-test-app", "shown": True, "type": "TextView",
         "rect": {"origin": {"y": 39, "x": 6}, "size": {"width": 468, "height": 35}}},
        {"id": "buttonStartWebview", "ref": "r2", "l10n": {"matches": 0}, "name": "null",
         "value": "", "shown": True, "type": "ImageButton",
         "rect": {"origin": {"y": 177, "x": 0}, "size": {"width": 240, "height": 91}}},
        {"id": "visibleTextView", "ref": "r3", "l10n": {"matches": 0}, "name": "null",
         "value": "Text is sometimes displayed", "shown": False, "type": "TextView",
         "rect": {"origin": {"y": 430, "x": 192}, "size": {"width": 267, "height": 29}}},
        {"id": "", "ref": "r4", "l10n": {"matches": 0}, "name": "null", "value": "",
         "shown": True, "type": "PullToRefreshListView$InternalListView",
         "rect": {"origin": {"y": 268, "x": 0}, "size": {"width": 480, "height": 72}}},
    ],
}  # fmt: skip


def test_selendroid_json_source(tmp_path: Path) -> None:
    layout = load_layout(_write(tmp_path, json.dumps(_SELENDROID_JSON), "source.json"))
    assert layout.format == "selendroid-json"
    assert [n.bounds for n in layout.nodes] == [
        (0, 0, 480, 800), (6, 39, 474, 74), (0, 177, 240, 268), (192, 430, 459, 459),
        (0, 268, 480, 340),
    ]  # fmt: skip
    assert [n.cls for n in layout.nodes][:3] == ["DecorView", "TextView", "ImageButton"]
    assert layout.nodes[1].text == "selendroid-test-app"
    assert layout.nodes[1].resource_id == "title"
    assert [n.visible for n in layout.nodes] == [True, True, True, False, True]
    assert layout.screen == (480, 800)
    # the titled TextView and the ImageButton draw; the hidden TextView does not
    assert analyze_layout(layout).stats.pixels_drawn == 468 * 35 + 240 * 91


def _opt_string(value: object) -> str:
    """org.json's ``optString``: booleans as true/false, an absent key as ""."""
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)


def _selendroid_xml(view: dict[str, object]) -> str:
    """``JsonXmlUtil.buildXmlDocument``: a ``<views>`` root, a tag per view named after
    its simple class, the rectangle as a ``<rect>`` child before the children."""

    def element(v: dict[str, object]) -> str:
        tag = str(v["type"]).rsplit("$", 1)[-1]
        keys = ("name", "label", "value", "ref", "id", "shown", "error")
        attrs = " ".join(f'{k}="{_opt_string(v.get(k))}"' for k in keys)
        rect = v["rect"]
        assert isinstance(rect, dict)
        origin, size = rect["origin"], rect["size"]
        inner = (
            f'<rect x="{origin["x"]}" y="{origin["y"]}" height="{size["height"]}" '
            f'width="{size["width"]}"/>'
        )
        children = v.get("children", [])
        assert isinstance(children, list)
        inner += "".join(element(c) for c in children)
        return f"<{tag} {attrs}>{inner}</{tag}>"

    return '<?xml version="1.0" encoding="UTF-8"?><views>' + element(view) + "</views>"


def test_selendroid_xml_source_equals_its_json(tmp_path: Path) -> None:
    from_json = load_layout(_write(tmp_path, json.dumps(_SELENDROID_JSON), "s.json"))
    from_xml = load_layout(_write(tmp_path, _selendroid_xml(_SELENDROID_JSON), "s.xml"))
    assert from_xml.format == "selendroid-xml"
    assert [n.bounds for n in from_xml.nodes] == [n.bounds for n in from_json.nodes]
    assert [n.parent for n in from_xml.nodes] == [n.parent for n in from_json.nodes]
    assert [n.visible for n in from_xml.nodes] == [n.visible for n in from_json.nodes]
    assert [n.text for n in from_xml.nodes] == [n.text for n in from_json.nodes]
    assert [n.cls for n in from_xml.nodes][-1] == "InternalListView"  # tag: no package
    assert analyze_layout(from_xml).stats.pixels_drawn == 468 * 35 + 240 * 91


def test_a_selendroid_view_without_a_rect_names_the_view(tmp_path: Path) -> None:
    path = _write(tmp_path, '<views><DecorView shown="true"><TextView value="x"/></DecorView>'
                  "</views>")  # fmt: skip
    with pytest.raises(InputFileError, match=r"node #0 \(DecorView\).*rect") as info:
        load_layout(path)
    assert info.value.path == str(path)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('<hierarchy><android.widget.TextView text="a" class="android.widget.TextView"/>'
         "</hierarchy>", r"node #0 \(android.widget.TextView\): bounds missing"),
        ('<hierarchy><android.widget.TextView bounds="[0,0][1,1]" displayed="maybe"/>'
         "</hierarchy>", "displayed"),
        ('<hierarchy width="wide" height="9"><node bounds="[0,0][1,1]"/></hierarchy>', "width"),
        ("<views><rect x='0'/></views>", "rect"),
    ],
)  # fmt: skip
def test_malformed_appium_sources_name_file_and_what(
    tmp_path: Path, document: str, message: str
) -> None:
    path = _write(tmp_path, document)
    with pytest.raises(InputFileError, match=message) as info:
        load_layout(path)
    assert info.value.path == str(path)


# -- the screen-size rule -------------------------------------------------------------

_DIALOG = (
    '<node class="android.widget.FrameLayout" bounds="[72,800][1008,1400]">'
    '<node class="android.widget.Button" text="OK" bounds="[600,1250][960,1380]"/></node>'
)


def test_a_dialog_only_dump_does_not_become_the_screen(tmp_path: Path) -> None:
    # uiautomator dumps the active window: with a dialog up, only the dialog's window.
    layout = load_layout(_write(tmp_path, f'<hierarchy rotation="0">{_DIALOG}</hierarchy>'))
    assert layout.screen is None
    with pytest.raises(InputFileError, match=r"--screen") as info:
        analyze_layout(layout)
    assert "dialog" in str(info.value) or "full-window" in str(info.value)
    report = analyze_layout(layout, (1080, 1920))
    assert report.stats.screen == (1080, 1920)
    assert report.stats.pixels_drawn == 360 * 130


def test_the_device_size_in_the_dump_wins_over_a_dialog(tmp_path: Path) -> None:
    document = f'<hierarchy index="0" class="hierarchy" rotation="0" width="1080" height="1920">' \
        f"{_DIALOG}</hierarchy>"  # fmt: skip
    layout = load_layout(_write(tmp_path, document))
    assert layout.screen == (1080, 1920)
    assert analyze_layout(layout).stats.levels_px["undrawn"] == 1080 * 1920 - 360 * 130


def test_a_full_window_root_beside_a_dialog_gives_the_screen(tmp_path: Path) -> None:
    # several windows (UiAutomator2 with multi-window on): the app behind the dialog
    app = '<node class="android.widget.FrameLayout" bounds="[0,0][1080,2340]"/>'
    ime = '<node class="android.inputmethodservice.SoftInputWindow" bounds="[0,1500][1080,2340]"/>'
    layout = load_layout(_write(tmp_path, f"<hierarchy>{_DIALOG}{ime}{app}</hierarchy>"))
    assert layout.screen == (1080, 2340)


def test_system_bars_left_out_of_the_declared_size_are_still_screen(tmp_path: Path) -> None:
    # Display.getSize() leaves out the navigation bar (2280 − 2154 px) while bounds are
    # clipped to the real display: a window drawn edge to edge reaches past it.
    document = _UIAUTOMATOR2.replace('height="2280"', 'height="2154"', 1)
    layout = load_layout(_write(tmp_path, document))
    assert layout.screen == (1080, 2280)


def test_a_declared_size_in_natural_orientation_is_turned_with_the_display(
    tmp_path: Path,
) -> None:
    # rotation 1 (a quarter turn) and a portrait width/height while the windows are
    # landscape: the size was written before the rotation was applied
    root = '<node class="android.widget.FrameLayout" bounds="[0,0][2280,1080]"/>'
    document = f'<hierarchy rotation="1" width="1080" height="2280">{root}</hierarchy>'
    assert load_layout(_write(tmp_path, document)).screen == (2280, 1080)
    # rotation 0: no turn to undo, so the windows simply extend the declared size
    document = f'<hierarchy rotation="0" width="1080" height="2280">{root}</hierarchy>'
    assert load_layout(_write(tmp_path, document)).screen == (2280, 2280)


# -- Appium XML written from generated hierarchies ------------------------------------


def _appium_xml(nodes: Sequence[ViewNode], screen: tuple[int, int]) -> str:
    """An Appium UiAutomator2 page source of ``nodes`` (depth-first order): tags are the
    class names cleaned as ``toXmlNodeName`` does, ``displayed`` carries visibility."""
    kids: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        if n.parent >= 0:
            kids[n.parent].append(i)
    out = [
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>",
        f'<hierarchy index="0" class="hierarchy" rotation="0" width="{screen[0]}" '
        f'height="{screen[1]}">',
    ]

    def esc(text: str) -> str:
        return (text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
                .replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;"))  # fmt: skip

    def emit(i: int, index: int) -> None:
        n = nodes[i]
        tag = re.sub(r"\.+", ".", re.sub(r"[$@#&]", ".", n.cls)).strip(".")
        left, top, right, bottom = n.bounds
        out.append(
            f'<{tag} index="{index}" package="com.example" class="{esc(n.cls)}" '
            f'text="{esc(n.text)}" resource-id="{esc(n.resource_id)}" '
            f'bounds="[{left},{top}][{right},{bottom}]" displayed="{str(n.visible).lower()}">'
        )
        for position, k in enumerate(kids[i]):
            emit(k, position)
        out.append(f"</{tag}>")

    for position, root in enumerate(i for i, n in enumerate(nodes) if n.parent < 0):
        emit(root, position)
    out.append("</hierarchy>")
    return "\n".join(out) + "\n"


_texts = st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), items=st.integers(0, 12), text=_texts,
       inner=st.sampled_from(["", "$Inner", "$1"]))  # fmt: skip
def test_appium_source_of_a_generated_hierarchy_reads_back_exactly(
    seed: int, items: int, text: str, inner: str
) -> None:
    screen = (360, 640)
    nodes = synth_layout(np.random.default_rng(seed), screen, items=items)
    nodes[3] = ViewNode(nodes[3].cls + inner, nodes[3].bounds, nodes[3].parent,
                        text=text + " &<\"'\n")  # fmt: skip
    appium = parse_layout(_appium_xml(nodes, screen).encode(), "appium.xml")
    assert appium.format == "appium-xml"
    # what a uiautomator dump of the same screen gives: the class heuristic, visibility
    # as written, nothing opaque
    expected = tuple(
        ViewNode(n.cls, n.bounds, n.parent, draws_by_class(n.cls, n.text), False, 1.0,
                 n.visible, n.text, n.resource_id)
        for n in nodes
    )  # fmt: skip
    assert appium.nodes == expected
    assert appium.screen == screen
    twin = overdraw(expected, screen)
    stats = analyze_layout(appium).stats
    assert stats.area_by_draws.tolist() == twin.area_by_draws.tolist()
    assert stats.pixels_drawn == twin.pixels_drawn
