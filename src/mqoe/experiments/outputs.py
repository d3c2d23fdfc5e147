"""What every reproduction writes into its output folder, in one place."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mqoe.results import MetricRow, ResultsStore, atomic_write_text, write_metrics_csv
from mqoe.results.store import RunRecord


def write_outputs(
    out_dir: Path,
    records: Iterable[RunRecord],
    rows: Iterable[MetricRow],
    markdown: tuple[str, str],
) -> Path:
    """Store every run under ``out_dir/results``, write ``metrics.csv`` and the Markdown
    summary ``(file name, text)``; returns metrics.csv's path. Figures are the caller's."""
    out_dir.mkdir(parents=True, exist_ok=True)
    store = ResultsStore(out_dir / "results")
    for record in records:
        store.write(record)
    path = write_metrics_csv(out_dir / "metrics.csv", rows)
    atomic_write_text(out_dir / markdown[0], markdown[1])
    return path
