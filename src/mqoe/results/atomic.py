"""Atomic file writes: a reader sees the old file or the new one, never a torn one.

The data goes to a hidden temporary file in the destination directory, is fsynced, and
is renamed over the destination with ``os.replace`` (atomic on POSIX and Windows within
one filesystem); the directory is then fsynced so the rename itself survives a power
cut. The temporary name ``.{name}.tmp-{pid}-{hex}`` starts with a dot and does not end
in the destination's suffix, so globs such as ``*.parquet`` never pick up a half-written
file, even one left behind by a killed process.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas and pyarrow cost ~1 s to import: only Parquet writes need them
    import pandas as pd


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Write ``path`` atomically: ``write(tmp)`` fills a temporary file that replaces it.

    Parent directories are created. If ``write`` (or anything before the rename) raises,
    including ``KeyboardInterrupt``, the temporary file is removed, the exception
    propagates, and any previous file at ``path`` is left untouched. Returns ``path``.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}-{secrets.token_hex(6)}")
    try:
        write(tmp)
        _fsync_file(tmp)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(final.parent)
    return final


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Atomically replace ``path`` with ``data``."""

    def write(tmp: Path) -> None:
        tmp.write_bytes(data)

    return atomic_write(path, write)


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Atomically replace ``path`` with ``text`` as UTF-8, line endings written as given."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_parquet(path: str | Path, df: pd.DataFrame) -> Path:
    """Atomically replace ``path`` with ``df`` as Parquet (pyarrow); the index is dropped."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def unlink_durably(path: str | Path) -> bool:
    """Remove ``path`` and fsync its directory; returns False if it did not exist."""
    target = Path(path)
    try:
        target.unlink()
    except FileNotFoundError:
        return False
    _fsync_dir(target.parent)
    return True


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    # A rename is durable only once the directory entry is on disk. Windows cannot open
    # a directory for fsync, and there the rename is journalled by NTFS anyway.
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_output_dir(path: str | Path, option: str = "--out") -> Path:
    """Make sure results can be written under ``path`` before any work is done: it is
    created if missing, must be a folder, and a file must be creatable in it (tried, not
    guessed from permission bits, which root ignores and read-only mounts override).
    A :class:`~mqoe.errors.UserError` names the option and the path otherwise."""
    from mqoe.errors import UserError

    folder = Path(path)
    try:
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{option} {folder}: is a file, expected a folder")
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".mqoe-write-probe-{os.getpid()}-{secrets.token_hex(4)}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UserError(f"{option} {folder}: cannot write there ({reason})") from None
    return folder


def write_output(path: str | Path, data: bytes) -> Path:
    """:func:`atomic_write_bytes` for a file a user asked for (``--csv``, ``--plot``): a
    place that cannot be written (disk full, a folder gone read-only since it was
    checked) is a one-line :class:`~mqoe.errors.UserError` naming the file."""
    from mqoe.errors import UserError

    try:
        return atomic_write_bytes(path, data)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
