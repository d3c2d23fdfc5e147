"""The results store's files: names, versions, listings, and the checks its writers and
readers share (see :mod:`mqoe.results.store` for the layout they implement)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: storing a run needs neither, nor DuckDB at all
    import duckdb

RUN_ID = re.compile(r"[A-Za-z0-9_.-]+")
SUFFIX = ".parquet"
GONE = ".gone"  # marks a re-run's version in a table the new record does not have
# atomic_write's temporaries, and ensure_output_dir's probe; the pid is the writer's.
TEMPORARY = re.compile(r"\..+\.tmp-(?P<pid>\d+)-[0-9a-f]+")
PROBE = re.compile(r"\.mqoe-write-probe-(?P<pid>\d+)-[0-9a-f]+")


def parquet_files(directory: Path) -> list[Path]:
    """The committed ``*.parquet`` files of ``directory`` (temporary files start with a dot)."""
    if not directory.is_dir():
        return []
    return sorted(
        p for p in directory.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith(".")
    )


def create_view(con: duckdb.DuckDBPyConnection, name: str, files: list[Path]) -> None:
    # An explicit file list, not a glob: a root such as "results[2]" would be read as a
    # glob pattern, and listing in Python lets us skip tables of uncommitted runs.
    paths = ", ".join(sql_string(str(f)) for f in files)
    con.execute(
        f'create view "{name}" as select * from read_parquet([{paths}], union_by_name=true)'
    )


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not empty, or a concurrent writer added a file
        directory.rmdir()


RETRIES = 3  # re-reads after a file vanished under us (a concurrent writer's cleanup)


def versioned(run_id: str, version: str) -> str:
    return f"{run_id}~{version}{SUFFIX}"


def table_entry(entry: str) -> tuple[str, str] | None:
    """``(run_id, version)`` of a table directory's entry: ``<run_id>.parquet`` (version
    ""), ``<run_id>~<version>.parquet`` or a ``<run_id>~<version>.gone`` marker."""
    if entry.startswith("."):
        return None
    stem = entry.removesuffix(SUFFIX) if entry.endswith(SUFFIX) else None
    if stem is None and entry.endswith(GONE):
        stem = entry.removesuffix(GONE)
        if "~" not in stem:
            return None
    if stem is None:
        return None
    run_id, _, version = stem.partition("~")
    return (run_id, version) if RUN_ID.fullmatch(run_id) else None


def entries(directory: Path) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:  # missing, or not ours to list
        return []


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on this machine). Unknown counts as alive."""
    if os.name != "posix":
        return True  # os.kill(pid, 0) would terminate the process on Windows
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OverflowError, ValueError):
        return False  # not a pid any process can have
    except OSError:
        return True  # e.g. another user's process
    return True


def remove_dead_temporaries(directory: Path, entries: Iterable[str]) -> None:
    for entry in entries:
        match = TEMPORARY.fullmatch(entry) or PROBE.fullmatch(entry)
        if match is not None and not alive(int(match["pid"])):
            remove_quietly(directory / entry)


def writer_gone(version: str) -> bool:
    pid, _, _ = version.partition("-")
    return pid.isdigit() and not alive(int(pid))


def remove_quietly(path: Path) -> bool:
    """Remove ``path``; False if that failed (a read-only store is still readable)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        return False
    return True


def unreadable(path: Path, deep: bool) -> str | None:
    """Why ``path`` is not a readable Parquet file, or None if it is (or has gone):
    ``deep`` reads every page, otherwise only the footer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if deep:
            pq.read_table(path)
        else:
            pq.read_metadata(path)
    except FileNotFoundError:
        return None
    except (OSError, pa.ArrowException, ValueError) as exc:
        return first_line(exc)
    return None
