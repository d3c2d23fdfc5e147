"""What every reproduction writes into its output folder, in one place."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mqoe.results import (
    MetricRow,
    atomic_write,
    atomic_write_text,
    write_metrics_csv,
)
from mqoe.results.comparison import ComparisonRow, write_comparison_csv


def write_outputs(
    out_dir: Path,
    rows: Iterable[MetricRow],
    markdown: tuple[str, str],
    comparison: Iterable[ComparisonRow] = (),
) -> Path:
    """Write ``metrics.csv``, the Markdown summary ``(file name, text)`` and
    ``comparison.csv`` (published beside simulated); returns metrics.csv's path. The runs
    are already in ``out_dir/results`` (:mod:`mqoe.experiments.reproduction`); figures
    are the caller's."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = write_metrics_csv(out_dir / "metrics.csv", rows)
    atomic_write_text(out_dir / markdown[0], markdown[1])
    write_comparison_csv(out_dir / "comparison.csv", comparison)
    return path


def _savefig(fig: Any, fmt: str, tmp: Path) -> None:
    fig.savefig(tmp, dpi=110, format=fmt)


def save_figure(fig: Any, stem: Path) -> list[Path]:
    """Write a matplotlib figure as ``stem.png`` and ``stem.svg``, each atomically."""
    paths = []
    for fmt in ("png", "svg"):
        path = stem.with_suffix("." + fmt)
        atomic_write(path, functools.partial(_savefig, fig, fmt))
        paths.append(path)
    return paths
