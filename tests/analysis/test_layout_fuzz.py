"""The shared mutation fuzzer (``tests/fuzzing.py``) on view-hierarchy dumps: uiautomator
XML, Appium page sources (UiAutomator2 and the old bootstrap's), Selendroid XML and JSON,
and mqoe's JSON. Each mutant must load and analyse, or fail with one user error naming
the file (and its line when it has one)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import numpy as np
import pytest

from mqoe.analysis.layout.parse import load_layout, parse_layout
from mqoe.analysis.layout.report import analyze_layout
from mqoe.analysis.layout.write import layout_to_json, layout_to_xml
from mqoe.generators.layout import synth_layout
from mqoe.metrics.overdraw import ViewNode
from tests.fuzzing import DEEP_INPUTS, QUICK_INPUTS, fuzz

_NODES = synth_layout(np.random.default_rng(5), (120, 200), items=3)


def _appium(nodes: Sequence[ViewNode], legacy: bool) -> str:
    """An Appium page source: tags named after the class (``$`` → ``.``), as both the
    UiAutomator2 server and the old bootstrap write them; UiAutomator2's root carries the
    display size, the bootstrap's only the rotation."""
    kids: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        if n.parent >= 0:
            kids[n.parent].append(i)
    out = [
        '<hierarchy rotation="0">'
        if legacy
        else '<hierarchy index="0" class="hierarchy" rotation="0" width="120" height="200">'
    ]

    def emit(i: int) -> None:
        n = nodes[i]
        tag = n.cls.replace("$", ".")
        left, top, right, bottom = n.bounds
        extra = ' instance="0"' if legacy else f' displayed="{str(n.visible).lower()}"'
        out.append(
            f'<{tag} class="{n.cls}" text={quoteattr(n.text)} resource-id="" '
            f'bounds="[{left},{top}][{right},{bottom}]"{extra}>'
        )
        for k in kids[i]:
            emit(k)
        out.append(f"</{tag}>")

    for root in (i for i, n in enumerate(nodes) if n.parent < 0):
        emit(root)
    return "\n".join([*out, "</hierarchy>"]) + "\n"


def _selendroid(nodes_json: str) -> str:
    def convert(node: dict[str, Any]) -> dict[str, Any]:
        left, top, right, bottom = node["bounds"]
        return {
            "type": str(node["class"]).rsplit(".", 1)[-1],
            "value": node["text"],
            "id": node["resource-id"],
            "shown": node["visible"],
            "rect": {"origin": {"x": left, "y": top},
                     "size": {"width": right - left, "height": bottom - top}},
            "children": [convert(c) for c in node["children"]],
        }  # fmt: skip

    return json.dumps(convert(json.loads(nodes_json)), indent=1)


def _seeds() -> dict[str, list[bytes]]:
    xml = layout_to_xml(_NODES)
    return {
        ".xml": [
            xml.encode(),
            layout_to_xml(_NODES, flags=True).encode(),
            _appium(_NODES, legacy=False).encode(),
            _appium(_NODES, legacy=True).encode(),
            b'<views><DecorView shown="true" value=""><rect x="0" y="0" width="120" height="200"/>'
            b'<ImageView shown="true" value=""><rect x="10" y="10" width="50" height="60"/>'
            b"</ImageView></DecorView></views>\n",
        ],
        ".json": [layout_to_json(_NODES).encode(), _selendroid(layout_to_json(_NODES)).encode()],
    }


_SEEDS = _seeds()


def _target(path: Path) -> None:
    layout = load_layout(path)
    report = analyze_layout(layout, None if layout.screen is not None else (120, 200))
    summary = report.summary()
    assert summary["nodes"] == len(layout.nodes) > 0
    assert 0 <= summary["share_undrawn"] <= 1


def test_the_seeds_are_valid_and_agree() -> None:
    for seeds in _SEEDS.values():
        for data in seeds:
            layout = parse_layout(data, "seed")
            assert len(layout.nodes) >= 2
    bounds = [[n.bounds for n in parse_layout(d, "seed").nodes] for d in _SEEDS[".xml"][:4]]
    assert bounds[1:] == bounds[:1] * 3


@pytest.mark.parametrize("suffix", [".xml", ".json"])
def test_fuzz_quick(tmp_path: Path, suffix: str) -> None:
    counts = fuzz(_target, _SEEDS[suffix], tmp_path, QUICK_INPUTS, seed=3, suffix=suffix)
    assert counts["accepted"] > 0
    assert counts["user_errors"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".xml", ".json"])
def test_fuzz_deep(tmp_path: Path, suffix: str) -> None:
    counts = fuzz(_target, _SEEDS[suffix], tmp_path, DEEP_INPUTS, seed=4, suffix=suffix)
    assert counts["accepted"] > 0
    assert counts["user_errors"] > 0
