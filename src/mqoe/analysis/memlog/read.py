"""Finding a fleet's logs (:func:`discover_phones`: one phone per file stem, in folders
or as files) and reading a file's text through :mod:`mqoe.analysis.textio`."""

from __future__ import annotations

import os
import stat
import zlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from mqoe.analysis.textio import describe_os_error, read_text
from mqoe.errors import InputFileError

# A 3-week log at 1 Hz is ~110 MB; the whole file is held while parsing (vectorised by
# tag), so a bound keeps a gzip bomb or a wrong file from exhausting memory.
_MAX_FILE_BYTES = 1 << 30


# -- finding and reading files -----------------------------------------------------------


def _visible(path: Path) -> bool:
    return not path.name.startswith(".") and path.suffix.lower() != ".md"


def _phone_stem(path: Path) -> str:
    return path.name.split(".", 1)[0] or path.name


def _is_dir(path: Path) -> bool | None:
    """True for a folder, False for anything else, None when nothing is there; a path
    that cannot be looked at (e.g. inside a folder this user may not enter) is an error."""
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputFileError(path, describe_os_error(exc)) from None


def _entries(folder: Path) -> tuple[list[Path], list[Path]]:
    """The visible ``(files, subfolders)`` of ``folder``, sorted by name; an unreadable
    folder is an error naming it. Other entries (sockets, FIFOs, broken links) are
    skipped: they hold no log."""
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        raise InputFileError(folder, describe_os_error(exc)) from None
    files: list[Path] = []
    folders: list[Path] = []
    for entry in entries:
        path = Path(entry.path)
        if not _visible(path):
            continue
        try:
            if entry.is_dir():
                folders.append(path)
            elif entry.is_file():
                files.append(path)
        except OSError as exc:
            raise InputFileError(path, describe_os_error(exc)) from None
    return files, folders


def discover_phones(paths: Sequence[str | Path]) -> dict[str, list[Path]]:
    """Group files into phones (see the package docstring); name → files, sorted.

    Two groups that would share a name are told apart by their parent directory. A
    missing or unreadable path is an :class:`InputFileError` naming it.
    """
    groups: dict[Path, list[Path]] = {}  # key: the directory, or parent/stem for files
    for item in map(Path, paths):
        kind = _is_dir(item)
        if kind is None:
            raise InputFileError(item, "no such file or folder")
        if not kind:
            groups.setdefault(item.parent / _phone_stem(item), []).append(item)
            continue
        files, subdirs = _entries(item)
        if not subdirs:
            groups.setdefault(item, []).extend(files)
            continue
        for sub in subdirs:
            groups.setdefault(sub, []).extend(_entries(sub)[0])
        for loose in files:
            groups.setdefault(item / _phone_stem(loose), []).append(loose)
    names = Counter(key.name for key in groups)
    out: dict[str, list[Path]] = {}
    for key, found in groups.items():
        name = key.name if names[key.name] == 1 else f"{key.parent.name}/{key.name}"
        if not found:
            raise InputFileError(key, "no log files for this phone")
        out[str(key) if name in out else name] = sorted(set(found))
    return out


def _read_text(path: Path) -> str:
    """The whole file as text with LF line ends, whatever encoding and line ends it has."""
    try:
        return read_text(path, max_bytes=_MAX_FILE_BYTES)
    except zlib.error as exc:  # a damaged deflate stream inside a well-formed gzip header
        raise InputFileError(path, f"corrupt gzip file: {exc}") from None
