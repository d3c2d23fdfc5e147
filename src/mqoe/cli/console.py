"""What every ``mqoe`` subcommand shares: the Rich consoles, a lazy progress bar, table
printing and JSON cleaning. Only the CLI prints; library code returns data."""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from rich.console import Console
from rich.table import Table

# Piped output gets a wide fixed width so tables stay readable in logs and files.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True)  # one-line errors stay one line


class LazyProgress:
    """A Rich progress bar (on stderr) that appears only once a job has taken longer than
    a second, and only on a terminal. Call it with the fraction done (0–1)."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = err.is_terminal if enabled is None else enabled
        self.start = time.perf_counter()
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, fraction: float) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            if time.perf_counter() - self.start < 1.0:
                return
            from rich.progress import (
                BarColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=1.0)
        self._progress.update(self._task, completed=fraction)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def jsonable(value: Any) -> Any:
    """NaN and infinities become null, as JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def print_frame(frame: Any, fmt: str) -> None:
    """A DataFrame to stdout as a Rich table, CSV or JSON records."""
    if fmt == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif fmt == "json":
        sys.stdout.write(frame.to_json(orient="records") + "\n")
    else:
        table = Table()
        for column in frame.columns:
            table.add_column(str(column))
        for row in frame.itertuples(index=False):
            table.add_row(*(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row))
        out.print(table)
