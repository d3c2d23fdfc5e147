"""What every ``mqoe`` subcommand shares: the Rich consoles, a lazy progress bar, table
printing, JSON cleaning and output-path checks. Only the CLI prints; library code returns
data.

User text (paths, names from files, query results) never goes through Rich markup: print
it with ``markup=False``, as a :class:`rich.text.Text`, or :func:`rich.markup.escape` it
inside a markup string. Emoji codes are off on both consoles, so ``file:100:`` stays
``file:100:`` instead of becoming the hundred-points emoji.
"""

from __future__ import annotations

import errno
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console


class _LazyConsole:
    """A Rich console made when first used: importing Rich costs ~0.1 s, which
    ``mqoe --help``, ``--version`` and JSON output never need. Options are fixed when
    this is made, as for a console made at import."""

    _options: dict[str, Any]
    _console: Console | None

    def __init__(self, **options: Any) -> None:
        object.__setattr__(self, "_options", options)
        object.__setattr__(self, "_console", None)

    def made(self) -> Console:
        """The Rich console itself (made now if it was not yet)."""
        console = self._console
        if console is None:
            console = _make_console(**self._options)
            object.__setattr__(self, "_console", console)
        return console

    def __getattr__(self, name: str) -> Any:  # whatever this object itself lacks
        return getattr(self.made(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.made(), name, value)


def _make_console(**options: Any) -> Console:
    from rich.console import Console

    class _Console(Console):
        """A Rich console that reports a closed pipe as :class:`BrokenPipeError`, for
        ``mqoe.cli.main.main`` to handle in one place (Rich's own handler exits with 1)."""

        def on_broken_pipe(self) -> None:
            self.quiet = True  # drop whatever is still buffered
            raise BrokenPipeError(errno.EPIPE, "the reader of this output has gone")

    return _Console(**options)


# Piped output gets a wide fixed width so tables stay readable in logs and files.
out = cast(
    "Console",
    _LazyConsole(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 160),
)
# soft_wrap: one line stays one.
err = cast("Console", _LazyConsole(stderr=True, highlight=False, emoji=False, soft_wrap=True))


class LazyProgress:
    """A Rich progress bar (on stderr) that appears only once a job has taken longer than
    a second, and only on a terminal. Call it with the fraction done (0–1)."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self._enabled = enabled  # None: if stderr is a terminal, asked after that second
        self.start = time.perf_counter()
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, fraction: float) -> None:
        if self._progress is None:
            if time.perf_counter() - self.start < 1.0:
                return  # (a short job never makes the console, nor imports Rich)
            if self._enabled is None:
                self._enabled = err.is_terminal
        if not self._enabled:
            return
        if self._progress is None:
            from rich.markup import escape
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
                console=cast(_LazyConsole, err).made(),
                transient=True,
            )
            self._progress.start()
            # The description column renders markup; a label can hold a user's file name.
            self._task = self._progress.add_task(escape(self.label), total=1.0)
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
        from rich.table import Table
        from rich.text import Text

        table = Table()
        for column in frame.columns:
            table.add_column(Text(str(column)))
        for row in frame.itertuples(index=False):
            table.add_row(*(Text(f"{v:.6g}" if isinstance(v, float) else str(v)) for v in row))
        out.print(table)


def one_line(text: str) -> str:
    """``text`` as one printable line, for error messages: line breaks (with the blanks
    around them) become one space, and any other non-printable character is shown as its
    escape (``\\x1b``), so a message neither spreads over lines nor drives the terminal."""
    parts = (part.strip() for part in text.splitlines())
    joined = " ".join(part for part in parts if part)
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in joined)


def check_output_file(path: Path, option: str) -> Path:
    """Before any work: ``path`` can be written as a file — it is not a folder, and its
    folder exists or can be created and takes a new file. A one-line
    :class:`~mqoe.errors.UserError` naming ``option`` and the path otherwise."""
    from mqoe.errors import UserError
    from mqoe.results import ensure_output_dir

    if path.is_dir():
        raise UserError(f"{option} {path}: is a folder, expected a file name")
    ensure_output_dir(path.parent, option)
    return path
