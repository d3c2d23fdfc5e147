"""The one exception family for mistakes a user can fix.

The CLI renders a :class:`UserError` as a single line and exits with code 2; any other
exception is a bug in mqoe and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """Bad input from a user: a file, a parameter, a name. The message says what to fix."""


class InputFileError(UserError):
    """A user-supplied file is malformed; the message names the file, line and expectation."""

    def __init__(self, path: str | Path, what: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.what = what
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {what}")
