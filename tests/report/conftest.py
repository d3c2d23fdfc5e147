"""Synthetic reproduction folders, as `mqoe reproduce` writes them, made in milliseconds.

Each folder has tiny matplotlib figures (PNG, and one SVG-only figure on request), a
metrics.csv, a comparison.csv, a Markdown summary and a results store of a few runs, so
the report's tests never run a reproduction.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib
import pytest

from mqoe.results import MetricRow, ResultsStore, RunRecord, write_metrics_csv
from mqoe.results.comparison import ComparisonRow, write_comparison_csv

matplotlib.use("Agg")

HOSTILE_SCRIPT = "<script>alert(1)</script>"
HOSTILE_ATTR = '"><img src=x onerror=alert(2)>'
HOSTILE_NAME = '"><img src=x onerror=alert(3)>'  # no "/": it must be a folder name


def tiny_png_bytes(label: str = "x", width_in: float = 2.0, height_in: float = 1.2) -> bytes:
    import io

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width_in, height_in), dpi=40)
    ax.plot([0, 1, 2], [0, 1, 0])
    ax.set_title(label[:20])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


TINY_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60">'
    b'<rect width="120" height="60" fill="#2457a6"/></svg>'
)


def comparison_rows(label: str = "") -> list[ComparisonRow]:
    return [
        ComparisonRow.numeric(
            f"drop-grid{label}", f"1080p30 drop{label}", 19.0, 19.75,
            tolerance="± 6 points", met=True, source=f"Coal Not Diamonds, Fig. 3{label}",
        ),
        ComparisonRow.numeric(
            "drop-grid", "480p30 crash, moderate", 40.0, 0.0,
            tolerance="± 20 points", met=False, source="Coal Not Diamonds, Fig. 3",
        ),
        ComparisonRow.numeric(
            "threads", "mmcqd preemptions", 378.3, 16.0,
            tolerance="none stated", met=None, source="Coal Not Diamonds, Fig. 3",
        ),
        ComparisonRow.shape("shape", "FULL > FAIR > VAN", True, source="GPU-buffer study"),
    ]  # fmt: skip


def run_record(
    run_id: str, *, seed: int, wall: float, params: dict[str, object], profile: str = "nokia-1"
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        scenario="video",
        profile=profile,
        seed=seed,
        params=params,
        mqoe_version="9.9.9",
        started_utc=f"2026-01-0{seed}T10:00:00+00:00",
        wall_time_s=wall,
        sim_duration_s=30.0,
        metrics={"frame_drop_pct": 1.5 * seed},
    )


def make(
    root: Path,
    name: str = "demo-work",
    *,
    figures: Sequence[str] = ("drop-grid", "thread-states"),
    svg_only: Sequence[str] = (),
    comparison: Sequence[ComparisonRow] | None = None,
    summary: str | None = "# demo (quick)\n\n- [x] a shape holds\n",
    runs: Sequence[RunRecord] = (),
) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    for figure in figures:
        (folder / f"{figure}.png").write_bytes(_png(figure))
        (folder / f"{figure}.svg").write_bytes(TINY_SVG)
    for figure in svg_only:
        (folder / f"{figure}.svg").write_bytes(TINY_SVG)
    rows = [MetricRow("drop-grid", "nokia-1", {"fps": "30"}, "frame_drop_pct", 19.75, "%")]
    write_metrics_csv(folder / "metrics.csv", rows)
    if comparison is not None:
        write_comparison_csv(folder / "comparison.csv", comparison)
    if summary is not None:
        (folder / "summary.md").write_text(summary, encoding="utf-8")
    store = ResultsStore(folder / "results")
    for record in runs:
        store.write(record)
    return folder


@functools.cache
def _png(label: str) -> bytes:
    return tiny_png_bytes(label)


@pytest.fixture
def make_reproduction() -> Callable[..., Path]:
    return make


def three_runs(hostile: bool = False) -> list[RunRecord]:
    """Seeds 1, 1, 2; wall times 1, 2, 4 s (total 7, median 2); `bitrate` varies."""
    label = HOSTILE_ATTR if hostile else "travel"
    return [
        run_record("r1", seed=1, wall=1.0, params={"bitrate": 500, "genre": label}),
        run_record("r2", seed=1, wall=2.0, params={"bitrate": 900, "genre": label}),
        run_record("r3", seed=2, wall=4.0, params={"bitrate": 900, "genre": label}),
    ]
