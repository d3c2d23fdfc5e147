"""Every reproduction's ``--quick`` metrics equal its golden file, value for value.

A refactor must not move a result; a change meant to move one regenerates the goldens
deliberately (``make goldens``) and says in its commit which metrics moved and why.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mqoe.experiments import EXPERIMENTS
from mqoe.results import read_metrics_csv
from mqoe.results.metrics_csv import format_condition


def golden_path(work: str) -> Path:
    """The committed golden of ``work`` (written by tests/golden/regenerate.py)."""
    return Path(__file__).resolve().parent / f"{work}.metrics.csv"


Key = tuple[str, str, str, str]


def _rows(path: Path) -> dict[Key, tuple[float, str]]:
    return {
        (r.figure, r.profile, format_condition(r.condition), r.metric): (r.value, r.unit)
        for r in read_metrics_csv(path)
    }


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def differences(golden: Path, fresh: Path, limit: int = 12) -> list[str]:
    """What differs between two metrics.csv files, one line each (at most ``limit``)."""
    want, got = _rows(golden), _rows(fresh)
    lines = [f"missing: {k}" for k in want.keys() - got.keys()]
    lines += [f"new: {k}" for k in got.keys() - want.keys()]
    for key in sorted(want.keys() & got.keys()):
        (a, unit_a), (b, unit_b) = want[key], got[key]
        if not _same(a, b) or unit_a != unit_b:
            lines.append(f"{key}: golden {a!r} {unit_a}, now {b!r} {unit_b}")
    return lines[:limit] + ([f"… {len(lines) - limit} more"] if len(lines) > limit else [])


@pytest.mark.parametrize("work", sorted(EXPERIMENTS))
def test_quick_metrics_equal_the_golden(work: str, tmp_path: Path) -> None:
    golden = golden_path(work)
    assert golden.is_file(), f"no golden for {work}: run `make goldens`"
    fresh = EXPERIMENTS[work].reproduce(tmp_path, quick=True)
    diff = differences(golden, fresh)
    assert not diff, (
        f"{work}: --quick metrics moved from tests/golden (if intended, `make goldens` and "
        "say why in the commit):\n" + "\n".join(diff)
    )


def test_differences_finds_a_moved_value(tmp_path: Path) -> None:
    work = sorted(EXPERIMENTS)[0]
    golden = golden_path(work)
    text = golden.read_text().splitlines()
    header, first = text[0], text[1]
    cells = first.split(",")
    value_at = header.split(",").index("value")
    cells[value_at] = repr(float(cells[value_at] or 0) + 1.0)
    moved = tmp_path / "moved.csv"
    moved.write_text("\n".join([header, ",".join(cells), *text[2:]]) + "\n")
    assert len(differences(golden, moved)) == 1
    assert differences(golden, golden) == []
