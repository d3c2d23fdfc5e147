"""View-hierarchy overdraw: hand-computed screens, brute force per pixel, safe
parsing of uiautomator XML and JSON, and the CLI."""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.layout import read as layout_read
from mqoe.analysis.layout.model import draws_by_class
from mqoe.analysis.layout.parse import load_layout, parse_layout
from mqoe.analysis.layout.report import analyze_layout
from mqoe.analysis.layout.write import layout_to_json, layout_to_xml
from mqoe.cli import analyze_layout as cli
from mqoe.errors import InputFileError, UserError
from mqoe.generators.layout import synth_layout
from mqoe.metrics import overdraw as overdraw_module
from mqoe.metrics.overdraw import ViewNode, overdraw

FRAME = "android.widget.FrameLayout"


def _node(
    bounds: tuple[int, int, int, int], parent: int = -1, draws: bool = True, **kw: object
) -> ViewNode:
    return ViewNode("android.view.View", bounds, parent, draws, **kw)  # type: ignore[arg-type]


# -- brute force: an independent per-pixel model ----------------------------------------


def _brute(
    nodes: Sequence[ViewNode], screen: tuple[int, int]
) -> tuple[npt.NDArray[np.int64], list[int], list[int]]:
    """Per pixel: a node covers it if it lies inside the node and every ancestor and the
    screen; count the drawing, visible ones. Hidden: pixels of a layer that a *later*
    opaque drawing layer covers. Returns (counts image, area per node, hidden per node)."""
    width, height = screen
    ys, xs = np.mgrid[0:height, 0:width]
    masks: list[npt.NDArray[np.bool_]] = []
    shown: list[bool] = []
    for node in nodes:
        left, top, right, bottom = node.bounds
        inside = (xs >= left) & (xs < right) & (ys >= top) & (ys < bottom)
        parent_mask = masks[node.parent] if node.parent >= 0 else np.ones_like(inside)
        parent_shown = shown[node.parent] if node.parent >= 0 else True
        masks.append(inside & parent_mask)
        shown.append(parent_shown and node.visible and node.alpha > 0)
    counts = np.zeros((height, width), dtype=np.int64)
    top_opaque = np.full((height, width), -1)
    for i, node in enumerate(nodes):
        if node.draws and shown[i]:
            counts += masks[i]
            if node.opaque:
                top_opaque[masks[i]] = i
    hidden = [
        int((masks[i] & (top_opaque > i)).sum()) if node.draws and shown[i] else 0
        for i, node in enumerate(nodes)
    ]
    return counts, [int(m.sum()) for m in masks], hidden


def _assert_matches_brute(nodes: Sequence[ViewNode], screen: tuple[int, int]) -> None:
    stats = overdraw(nodes, screen)
    counts, areas, hidden = _brute(nodes, screen)
    histogram = np.bincount(counts.ravel(), minlength=len(stats.area_by_draws))
    assert stats.area_by_draws.tolist() == histogram.tolist()
    assert np.array_equal(stats.pixel_counts(max_side=10_000), counts)
    assert stats.area_px.tolist() == areas
    assert stats.hidden_px is not None
    assert stats.hidden_px.tolist() == hidden
    assert stats.pixels_drawn == int(counts.sum())
    assert stats.mean_overdraw == pytest.approx(counts.mean())


# -- hand-computed screens ------------------------------------------------------------


def test_two_overlapping_children_on_a_window_background() -> None:
    # root 10x10 (opaque), A = left half, B = top-right 7x5 (opaque), A∩B = 2x5
    nodes = [
        _node((0, 0, 10, 10), opaque=True),
        _node((0, 0, 5, 10), 0),
        _node((3, 0, 10, 5), 0, opaque=True),
    ]
    stats = overdraw(nodes, (10, 10))
    assert stats.area_by_draws.tolist() == [0, 25, 65, 10]
    assert stats.pixels_drawn == 100 + 50 + 35
    assert stats.mean_overdraw == pytest.approx(1.85)
    assert stats.levels_px == {"undrawn": 0, "0x": 25, "1x": 65, "2x": 10, "3x": 0, "4+x": 0}
    assert stats.hidden_px is not None
    assert stats.hidden_px.tolist() == [35, 10, 0]  # B hides part of the root and of A
    assert stats.depth.tolist() == [1, 2, 2]
    assert stats.drawing_layers == 3


def test_levels_follow_android_naming_one_paint_is_zero_x() -> None:
    # six nested full-screen layers on a 2x1 screen, one pixel more deeply
    nodes = [_node((0, 0, 2, 1))] + [_node((0, 0, 1, 1), i) for i in range(5)]
    stats = overdraw(nodes, (2, 1))
    assert stats.area_by_draws.tolist() == [0, 1, 0, 0, 0, 0, 1]
    assert stats.level_shares == {
        "undrawn": 0.0, "0x": 0.5, "1x": 0.0, "2x": 0.0, "3x": 0.0, "4+x": 0.5
    }  # fmt: skip
    assert stats.max_draws == 6


def test_children_are_clipped_to_parents_and_screen() -> None:
    nodes = [
        _node((0, 0, 8, 8), draws=False),  # a layout: no paint, but it clips
        _node((-4, -4, 4, 4), 0),  # only the 4x4 on screen
        _node((6, 6, 20, 20), 0, draws=False),  # clipped to 2x2
        _node((0, 0, 100, 100), 2),  # inside the 2x2 clip
        _node((10, 10, 12, 12), 0, draws=False),  # entirely outside its parent
        _node((0, 0, 8, 8), 4),  # its child is clipped to nothing
    ]
    stats = overdraw(nodes, (8, 8))
    assert stats.area_px.tolist() == [64, 16, 4, 4, 0, 0]
    assert stats.drawn.tolist() == [False, True, False, True, False, False]
    assert stats.pixels_drawn == 20
    _assert_matches_brute(nodes, (8, 8))


def test_invisible_or_transparent_ancestors_hide_their_subtrees() -> None:
    nodes = [
        _node((0, 0, 4, 4), draws=False),
        _node((0, 0, 4, 4), 0, visible=False),
        _node((0, 0, 4, 4), 1),  # child of an invisible view
        _node((0, 0, 4, 4), 0, alpha=0.0),
        _node((0, 0, 4, 4), 3),  # child of an alpha-0 view
        _node((0, 0, 2, 2), 0, alpha=0.5),  # translucent: painted once
    ]
    stats = overdraw(nodes, (4, 4))
    assert stats.drawn.tolist() == [False, False, False, False, False, True]
    assert stats.pixels_drawn == 4


def test_parents_must_precede_children() -> None:
    with pytest.raises(ValueError, match="parent"):
        overdraw([_node((0, 0, 1, 1), 1), _node((0, 0, 1, 1))], (1, 1))
    with pytest.raises(UserError, match="screen"):
        overdraw([_node((0, 0, 1, 1))], (0, 5))


def test_an_empty_hierarchy_is_all_undrawn() -> None:
    stats = overdraw([], (3, 2))
    assert stats.area_by_draws.tolist() == [6]
    assert stats.mean_overdraw == 0.0


# -- brute-force properties -------------------------------------------------------------


@st.composite
def _hierarchies(draw: st.DrawFn) -> tuple[list[ViewNode], tuple[int, int]]:
    width, height = draw(st.integers(1, 20)), draw(st.integers(1, 20))
    nodes: list[ViewNode] = []
    for i in range(draw(st.integers(0, 25))):
        coord = st.integers(-4, 24)
        nodes.append(
            ViewNode(
                "v",
                (draw(coord), draw(coord), draw(coord), draw(coord)),
                draw(st.integers(-1, i - 1)),
                draws=draw(st.booleans()),
                opaque=draw(st.booleans()),
                alpha=draw(st.sampled_from([0.0, 0.4, 1.0])),
                visible=draw(st.integers(0, 5)) > 0,
            )
        )
    return nodes, (width, height)


@settings(max_examples=200, deadline=None)
@given(case=_hierarchies())
def test_overdraw_matches_brute_force_per_pixel(
    case: tuple[list[ViewNode], tuple[int, int]],
) -> None:
    _assert_matches_brute(*case)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), width=st.integers(8, 48), height=st.integers(12, 80),
       items=st.integers(0, 20), columns=st.integers(1, 4))  # fmt: skip
def test_synthetic_layouts_match_brute_force(
    seed: int, width: int, height: int, items: int, columns: int
) -> None:
    nodes = synth_layout(np.random.default_rng(seed), (width, height), items=items, columns=columns)
    _assert_matches_brute(nodes, (width, height))


def test_compressed_and_pixel_grids_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = synth_layout(np.random.default_rng(5), (60, 100), items=8, columns=2)
    compressed = overdraw(nodes, (60, 100))
    assert len(compressed.xs) < 61  # the rectangles' edges, not every pixel
    monkeypatch.setattr(  # force a grid of every pixel
        overdraw_module, "_grid", lambda rects, screen: (np.arange(61), np.arange(101))
    )
    pixel = overdraw(nodes, (60, 100))
    monkeypatch.undo()
    assert len(pixel.xs) == 61
    assert pixel.area_by_draws.tolist() == compressed.area_by_draws.tolist()
    assert pixel.hidden_px is not None and compressed.hidden_px is not None
    assert pixel.hidden_px.tolist() == compressed.hidden_px.tolist()


def test_hidden_pixels_are_skipped_past_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = synth_layout(np.random.default_rng(1), (90, 160), items=6)
    monkeypatch.setattr(overdraw_module, "HIDDEN_BUDGET_CELLS", 10)
    stats = overdraw(nodes, (90, 160))
    assert stats.hidden_px is None
    counts, _, _ = _brute(nodes, (90, 160))
    assert stats.pixels_drawn == int(counts.sum())  # the counts do not depend on it
    report = analyze_layout(parse_layout(layout_to_json(nodes).encode()))
    assert report.summary()["hidden_draws_px"] is None or report.stats.hidden_px is None
    assert report.redundant_layers().empty


# -- parsing --------------------------------------------------------------------------

_DUMP = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0"><node index="0" text="" resource-id="" class="{frame}"
 package="com.example" content-desc="" checkable="false" checked="false" clickable="false"
 enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false"
 password="false" selected="false" bounds="[0,0][1080,1920]"><node index="0" text="Hello &amp; bye"
 resource-id="com.example:id/title" class="android.widget.TextView" package="com.example"
 bounds="[0,0][1080,200]" /><node index="1" text="" class="android.widget.TextView"
 bounds="[0,200][1080,400]" /><node index="2" text="" class="android.widget.ImageView"
 bounds="[0,400][540,960]"><node index="0" class="android.widget.LinearLayout"
 bounds="[0,400][540,960]"/></node></node></hierarchy>
""".replace("{frame}", FRAME)


def _write(tmp_path: Path, data: str | bytes, name: str = "dump.xml") -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def test_uiautomator_dump_is_read_with_the_class_heuristic(tmp_path: Path) -> None:
    layout = load_layout(_write(tmp_path, _DUMP))
    assert layout.format == "uiautomator-xml"
    assert layout.screen == (1080, 1920)
    assert [n.parent for n in layout.nodes] == [-1, 0, 0, 0, 3]
    assert layout.nodes[1].text == "Hello & bye"
    assert layout.nodes[1].resource_id == "com.example:id/title"
    assert layout.nodes[2].bounds == (0, 200, 1080, 400)
    # a FrameLayout and a LinearLayout draw nothing; a TextView only with text
    assert [n.draws for n in layout.nodes] == [False, True, False, True, False]
    assert not any(n.opaque for n in layout.nodes)
    assert layout.guessed == 5
    summary = analyze_layout(layout).summary()
    assert summary["nodes"] == 5
    assert summary["depth"] == 3
    assert summary["drawing_layers"] == 2
    assert summary["pixels_drawn"] == 1080 * 200 + 540 * 560
    assert summary["share_undrawn"] == pytest.approx(1 - summary["pixels_drawn"] / (1080 * 1920))


@pytest.mark.parametrize(
    ("cls", "text", "draws"),
    [
        ("android.widget.ImageView", "", True),
        ("androidx.appcompat.widget.AppCompatImageView", "", True),
        ("com.google.android.material.button.MaterialButton", "", True),
        ("android.widget.TextView", "hi", True),
        ("android.widget.TextView", "  ", False),
        ("androidx.appcompat.widget.AppCompatTextView", "x", True),
        ("android.widget.FrameLayout", "", False),
        ("androidx.recyclerview.widget.RecyclerView", "", False),
        ("android.view.View", "", False),
        ("com.example.Outer$InnerImageView", "", True),
    ],
)
def test_draws_by_class_heuristic(cls: str, text: str, draws: bool) -> None:
    assert draws_by_class(cls, text) is draws


def test_screen_can_be_overridden(tmp_path: Path) -> None:
    layout = load_layout(_write(tmp_path, _DUMP))
    report = analyze_layout(layout, (540, 400))
    assert report.stats.screen == (540, 400)
    assert report.stats.pixels_drawn == 540 * 200  # the image view starts at y = 400


@pytest.mark.parametrize(
    "document",
    [
        # billion laughs
        '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
        '<!ENTITY lol2 "&lol;&lol;&lol;">]>\n<hierarchy>&lol2;</hierarchy>',
        # external entity (XXE)
        '<?xml version="1.0"?>\n<!DOCTYPE h [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        "<hierarchy>&x;</hierarchy>",
        "<hierarchy>\n<!doctype x></hierarchy>",
    ],
)
def test_doctype_and_entities_are_rejected_before_parsing(tmp_path: Path, document: str) -> None:
    for data in (document.encode(), document.encode("utf-16")):
        path = _write(tmp_path, data)
        with pytest.raises(InputFileError, match="DOCTYPE") as info:
            load_layout(path)
        assert info.value.path == str(path)
        assert info.value.line in (1, 2)


def test_undefined_entities_are_an_error_not_an_expansion(tmp_path: Path) -> None:
    path = _write(tmp_path, '<hierarchy>\n<node bounds="[0,0][1,1]" text="&x;"/></hierarchy>')
    with pytest.raises(InputFileError, match="undefined entity") as info:
        load_layout(path)
    assert info.value.line == 2


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('<hierarchy><node bounds="[0,0][10,10]"></hierarchy>', "malformed XML"),
        ('<hierarchy><node class="X" bounds="0,0,10,10"/></hierarchy>', r"node #0 \(X\): bounds"),
        ('<hierarchy><node bounds="[0,0][1,1]"/><node text="a"/></hierarchy>', "node #1.*missing"),
        ("<html><body/></html>", "root element <html>"),
        ('<hierarchy><node bounds="[0,0][1,1]" opaque="yes"/></hierarchy>', "opaque"),
        ('<hierarchy><node bounds="[0,0][1,1]" alpha="2"/></hierarchy>', "alpha"),
        ("<hierarchy rotation='0'/>", "no nodes"),
        ("", "empty file"),
        ("hello", "neither"),
        ('<?xml version="1.0" encoding="klingon"?><hierarchy/>', "encoding"),
    ],
)
def test_malformed_dumps_name_file_and_what(tmp_path: Path, document: str, message: str) -> None:
    path = _write(tmp_path, document)
    with pytest.raises(InputFileError, match=message) as info:
        load_layout(path)
    assert str(info.value).startswith(str(path))


def test_an_implausible_screen_asks_for_one(tmp_path: Path) -> None:
    path = _write(tmp_path, '<hierarchy><node bounds="[0,0][0,5]"/></hierarchy>')
    layout = load_layout(path)
    with pytest.raises(InputFileError, match=r"0x5 screen.*--screen") as info:
        analyze_layout(layout)
    assert info.value.path == str(path)
    assert analyze_layout(layout, (3, 5)).stats.screen_px == 15


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, b'<hierarchy>\n\n<node text="\xff" bounds="[0,0][1,1]"/></hierarchy>')
    with pytest.raises(InputFileError, match="utf-8") as info:
        load_layout(path)
    assert info.value.line == 3


def test_oversized_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout_read, "MAX_FILE_BYTES", 100)
    with pytest.raises(InputFileError, match="larger"):
        load_layout(_write(tmp_path, _DUMP))


def test_json_hierarchy_carries_exact_flags(tmp_path: Path) -> None:
    document = {
        "class": FRAME,
        "bounds": [0, 0, 100, 200],
        "background": True,
        "opaque": True,
        "children": [
            {"class": "android.widget.ImageView", "bounds": [0.4, 0, 50, 50.6]},
            {"class": "android.widget.ImageView", "bounds": [0, 0, 50, 50], "background": False},
            {"class": "X", "bounds": [0, 0, 9, 9], "alpha": 0.5, "visible": False},
        ],
    }
    layout = load_layout(_write(tmp_path, json.dumps(document), "h.json"))
    assert layout.format == "json"
    assert [n.draws for n in layout.nodes] == [True, True, False, False]  # 2nd: heuristic
    assert layout.guessed == 2
    assert layout.nodes[1].bounds == (0, 0, 50, 51)  # rounded to whole pixels
    assert layout.nodes[3].alpha == 0.5 and not layout.nodes[3].visible
    assert layout.screen == (100, 200)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('{"bounds": [0, 0, 1]}', "node 0: 'bounds'"),
        ('{"bounds": [0, 0, 9, 9], "children": [{"bounds": [0,0,1,1]}, {"x": 1}]}', "node 0/1:"),
        ('{"bounds": [0, 0, 9, 9], "opaque": "yes"}', "'opaque' must be true or false"),
        ('{"bounds": [0, 0, 9, 9], "alpha": -1}', "alpha"),
        ('{"bounds": [0, 0, 9, 9], "children": {}}', "'children' must be a list"),
        ('{"bounds": [true, 0, 9, 9]}', "'bounds'"),
        ('{"bounds": [0, 0, 1e300, 9]}', "'bounds'"),
        ("[1, 2]", "expected an object"),
        ("[]", "no nodes"),
        ('{"bounds": [0, 0, 9, 9],\n "class": 5}', "'class' must be a string"),
        ('{"bounds": [0, 0, 9, 9],\n "class": }', "invalid JSON"),
        ("[" * 100_000, "nested too deeply|invalid JSON"),
    ],
)
def test_malformed_json_names_file_and_node(tmp_path: Path, document: str, message: str) -> None:
    path = _write(tmp_path, document, "h.json")
    with pytest.raises(InputFileError, match=message) as info:
        load_layout(path)
    assert info.value.path == str(path)


def test_json_syntax_errors_carry_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"bounds": [0, 0, 9, 9],\n\n "class": }', "h.json")
    with pytest.raises(InputFileError) as info:
        load_layout(path)
    assert info.value.line == 3


def test_deep_hierarchies_do_not_recurse(tmp_path: Path) -> None:
    depth = 20_000
    xml = "<hierarchy>" + '<node bounds="[0,0][4,4]" class="android.widget.ImageView">' * depth
    xml += "</node>" * depth + "</hierarchy>"
    layout = load_layout(_write(tmp_path, xml))
    assert layout.screen == (4, 4)
    stats = overdraw(layout.nodes, layout.screen)
    assert int(stats.depth.max()) == depth
    assert stats.area_by_draws.tolist()[-1] == 16
    assert stats.max_draws == depth


# -- round trips through both formats ---------------------------------------------------

_texts = st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    items=st.integers(0, 15),
    columns=st.integers(1, 3),
    text=_texts,
    rid=_texts,
)
def test_generator_round_trips_through_json_and_flagged_xml(
    seed: int, items: int, columns: int, text: str, rid: str
) -> None:
    nodes = synth_layout(np.random.default_rng(seed), (360, 640), items=items, columns=columns)
    nodes[1] = ViewNode(nodes[1].cls, nodes[1].bounds, nodes[1].parent, text=text + "\n\t&<>\"'",
                        resource_id=rid)  # fmt: skip
    from_json = parse_layout(layout_to_json(nodes).encode())
    from_xml = parse_layout(layout_to_xml(nodes, flags=True).encode("utf-8"))
    assert from_json.nodes == tuple(nodes)
    assert from_xml.nodes == tuple(nodes)
    assert from_json.guessed == from_xml.guessed == 0
    plain = parse_layout(layout_to_xml(nodes).encode("utf-16"))
    assert [n.bounds for n in plain.nodes] == [n.bounds for n in nodes]
    assert [n.parent for n in plain.nodes] == [n.parent for n in nodes]
    assert [n.draws for n in plain.nodes] == [draws_by_class(n.cls, n.text) for n in nodes]
    assert not any(n.opaque for n in plain.nodes)


def test_synthetic_mail_app_has_spec04_nesting_and_redundant_layers() -> None:
    nodes = synth_layout(np.random.default_rng(2), (1080, 1920), items=12)
    report = analyze_layout(parse_layout(layout_to_json(nodes).encode()))
    summary = report.summary()
    assert summary["depth"] >= 7  # decor → column → content → list → card → holder → …
    assert summary["mean_overdraw"] > 2.5
    assert summary["redundant_layers"] > 0
    redundant = report.redundant_layers()
    assert (redundant["hidden_share"] == 1.0).all()
    assert set(redundant["class"]) <= {FRAME, "androidx.cardview.widget.CardView"}
    nodes_table = report.nodes()
    assert len(nodes_table) == len(nodes)
    assert nodes_table["area_px"].min() >= 0


# -- speed and limits -----------------------------------------------------------------


def test_five_thousand_nodes_on_a_1440x2560_screen_in_well_under_a_second() -> None:
    nodes = synth_layout(np.random.default_rng(0), (1440, 2560), items=700, columns=24)
    assert len(nodes) >= 5000
    on_screen = overdraw(nodes, (1440, 2560)).area_px > 0
    assert on_screen.sum() >= 5000
    best = min(_timed(lambda: overdraw(nodes, (1440, 2560))) for _ in range(3))
    assert best < 0.5


def test_adversarial_edges_stay_fast_and_exact_on_the_pixel_grid() -> None:
    rng = random.Random(4)
    width, height = 1440, 2560
    nodes = [_node((0, 0, width, height), opaque=True)]
    for _ in range(5000):  # distinct edges everywhere: the compressed grid would be huge
        left, top = rng.randrange(width), rng.randrange(height)
        nodes.append(_node((left, top, left + rng.randrange(1, 40), top + rng.randrange(1, 40)),
                           0, opaque=rng.random() < 0.5))  # fmt: skip
    start = time.perf_counter()
    stats = overdraw(nodes, (width, height))
    assert time.perf_counter() - start < 2.0
    assert (len(stats.xs) - 1) * (len(stats.ys) - 1) <= width * height  # pixels at most
    areas = sum((n.bounds[2] - n.bounds[0]) * (n.bounds[3] - n.bounds[1]) for n in nodes)
    expected = sum(
        (min(n.bounds[2], width) - n.bounds[0]) * (min(n.bounds[3], height) - n.bounds[1])
        for n in nodes
    )
    assert stats.pixels_drawn == expected <= areas


def test_a_grid_too_large_is_a_user_error() -> None:
    rng = random.Random(1)
    side = 1_000_000
    nodes = [_node((0, 0, side, side))] + [
        _node((x := rng.randrange(side), y := rng.randrange(side), x + 1, y + 1), 0)
        for _ in range(8000)
    ]
    with pytest.raises(UserError, match="too complex"):
        overdraw(nodes, (side, side))


def _timed(action: object) -> float:
    start = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - start


# -- fuzzing: parse or raise UserError, nothing else ----------------------------------


def _seeds() -> list[bytes]:
    nodes = synth_layout(np.random.default_rng(9), (100, 180), items=3)
    return [
        layout_to_xml(nodes, flags=True).encode(),
        layout_to_xml(nodes).encode(),
        layout_to_json(nodes).encode(),
        _DUMP.encode(),
    ]


_SEEDS = _seeds()
_TOKENS = [b"<", b">", b"/>", b"<node ", b"</node>", b'"', b"[", b"]", b",", b"{", b"}",
           b"&", b"&#0;", b"<!DOCTYPE", b"\x00", b"\xff", b"-", b"9999999999", b"true",
           b"null", b"\xfe\xff", b"\xef\xbb\xbf", b"1e999", b"NaN"]  # fmt: skip


_QUOTED = re.compile(rb'"[^"]{0,40}"')
_VALUES = [b"", b"[0,0][5,5]", b"[-9,-9][99999999,3]", b"[1,1][0,0]", b"true", b"false", b"2",
           b"-0.5", b"NaN", b"1e999", b"[0, 0, 4, 4]", b"android.widget.ImageView", b"&amp;",
           b"\xc3\xa9", b"\xff", b"&#x1F600;", b"0.0", b"null"]  # fmt: skip


def _mutate(data: bytes, rng: random.Random) -> bytes:
    """Byte-level damage (flips, insertions, deletions, cuts, splices) or value-level
    changes that keep the document well formed, so both error and success paths run."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(8)
        at = rng.randrange(len(buf) + 1)
        if kind == 0 and buf:
            buf[min(at, len(buf) - 1)] = rng.randrange(256)
        elif kind == 1:
            buf[at:at] = rng.choice(_TOKENS)
        elif kind == 2:
            del buf[at : at + rng.randint(1, 40)]
        elif kind == 3 and rng.random() < 0.3:
            buf = buf[:at]
        elif kind == 4:
            other = rng.choice(_SEEDS)
            start = rng.randrange(len(other))
            buf[at:at] = other[start : start + rng.randint(1, 80)]
        else:
            spans = list(_QUOTED.finditer(bytes(buf)))
            if spans:
                span = rng.choice(spans)
                buf[span.start() + 1 : span.end() - 1] = rng.choice(_VALUES)
    return bytes(buf)


def _parses_or_user_error(data: bytes) -> None:
    try:
        layout = parse_layout(data, "fuzz")
        analyze_layout(layout).summary()
    except UserError as error:
        assert "fuzz" in str(error)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), which=st.integers(0, len(_SEEDS) - 1))
def test_mutated_dumps_parse_or_raise_user_error(seed: int, which: int) -> None:
    _parses_or_user_error(_mutate(_SEEDS[which], random.Random(seed)))


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=300))
def test_binary_garbage_parses_or_raises_user_error(data: bytes) -> None:
    _parses_or_user_error(data)


@pytest.mark.slow
def test_deep_fuzz_ten_thousand_mutations() -> None:
    rng = random.Random(2024)
    for i in range(10_000):
        _parses_or_user_error(_mutate(_SEEDS[i % len(_SEEDS)], rng))


# -- the CLI --------------------------------------------------------------------------


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_cli_json_csv_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = synth_layout(np.random.default_rng(3), (270, 480), items=5)
    path = _write(tmp_path, layout_to_json(nodes), "h.json")
    rc = _run(
        [str(path), "--json", "--csv", str(tmp_path / "csv"), "--plot", str(tmp_path / "png")]
    )
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    counts, _, _ = _brute(nodes, (270, 480))
    assert payload["summary"]["pixels_drawn"] == int(counts.sum())
    assert payload["summary"]["nodes"] == len(nodes)
    assert sum(level["area_px"] for level in payload["levels"]) == 270 * 480
    assert len(payload["nodes"]) == len(nodes)
    for name in ("levels", "draw_counts", "nodes"):
        table = pd.read_csv(tmp_path / "csv" / f"{name}.csv")
        assert len(table) > 0
    assert pd.read_csv(tmp_path / "csv" / "nodes.csv")["area_px"].tolist() == [
        int(a) for a in overdraw(nodes, (270, 480)).area_px
    ]
    png = (tmp_path / "png" / "overdraw.png").read_bytes()
    assert png.startswith(b"\x89PNG")


def test_cli_table_output_and_screen_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, _DUMP)
    assert _run([str(path), "--screen", "540x400"]) == 0
    captured = capsys.readouterr()
    assert "5 nodes" in captured.out and "540x400" in captured.out
    assert "guessed" in captured.err


def test_cli_bad_file_is_a_user_error_naming_it(tmp_path: Path) -> None:
    path = _write(tmp_path, "<hierarchy><node bounds='[0,0][1,1]'>", "broken.xml")
    with pytest.raises(UserError, match=r"broken\.xml"):
        _run([str(path)])
    with pytest.raises(UserError, match=r"missing\.xml"):
        _run([str(tmp_path / "missing.xml")])
    with pytest.raises(SystemExit):
        _run([str(path), "--screen", "wide"])
