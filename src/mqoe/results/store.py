"""The results store: one Parquet row per run, named tidy tables, SQL over both.

Layout under the root::

    runs/<run_id>.parquet                  one row: fixed columns, tags, one per metric
    tables/<table_name>/<run_id>.parquet   the run's table, with ``run_id`` first
    failures/<run_id>.parquet              a run that raised: its inputs and the error
    sweeps/<sweep_id>.parquet              one row per sweep (name, spec, planned runs)
    .quarantine/…                          unreadable files moved aside (same sub-paths)

A run is *committed* once its ``runs/`` file exists; that file is written last, and
queries read only the table files of committed runs, so a crash mid-write never shows a
half-stored run. Storing a run removes a failure recorded earlier under its id (a retry
that succeeded). Tags (e.g. ``sweep``, ``sweep_id``) are extra text columns of the
``runs`` row; rows without them read as NULL.

Storing an id that is already committed replaces the run in one step, the rename of its
``runs/`` file, so a reader (or a writer killed at any point) sees the old run or the
new one, never neither and never a mix: the new tables go to versioned names
``<run_id>~<version>.parquet`` next to the old ones, the new ``runs/`` file names its
version in its Parquet metadata, and the old version's files are removed only after.
(A re-run whose record has no tables marks its version with an empty
``<run_id>~<version>.gone`` where the old tables are.) The version is
``<writer pid>-<random hex>``.

Opening a store removes what killed writers left: temporaries
(``.<name>.tmp-<pid>-<hex>``, see :mod:`mqoe.results.atomic`) and superseded versions
whose writer process is gone; a live writer's files are kept. A query that meets an
unreadable Parquet file (truncated, empty, not Parquet) moves it into ``.quarantine/``,
logs one warning naming it (logger ``mqoe.results.store``; a command line shows it as
one line on stderr) and answers over the rest. A quarantined ``runs/`` file uncommits
its run, so a resumed sweep runs it again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from mqoe.errors import UserError
from mqoe.results import files as layout
from mqoe.results.atomic import (
    atomic_write,
    atomic_write_bytes,
    atomic_write_parquet,
    unlink_durably,
)
from mqoe.results.files import GONE, RETRIES, RUN_ID, SUFFIX
from mqoe.results.tables import ColumnTable, arrow_column, held_table, large_strings

if TYPE_CHECKING:  # DuckDB is imported by the queries: storing a run needs none of it
    import duckdb  # (nor pandas, when its tables are ColumnTables: mqoe.results.tables)
    import pandas as pd

_TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_VERSION_KEY = b"mqoe.version"  # in a runs/ file's Parquet metadata: its tables' version
_TAGS_KEY = b"mqoe.tags"  # … and which of its text columns are tags (a JSON list)
_QUOTED_PARQUET = re.compile(r"'([^']+\.parquet)'")  # how DuckDB names a file in errors
QUARANTINE = ".quarantine"

_log = logging.getLogger(__name__)

FIXED_COLUMNS: tuple[str, ...] = (
    "run_id",
    "scenario",
    "profile",
    "seed",
    "params",
    "mqoe_version",
    "started_utc",
    "wall_time_s",
    "sim_duration_s",
)

# Views over the store's own directories; a run's table may not take these names.
RESERVED_VIEWS: tuple[str, ...] = ("runs", "failures", "sweeps")

MetricValue = float | int | bool | str


@dataclass(frozen=True)
class RunRecord:
    """Everything stored about one simulation run."""

    run_id: str  # [A-Za-z0-9_.-]+, chosen by the caller; names the files
    scenario: str
    profile: str
    seed: int
    params: Mapping[str, object]  # stored as canonical JSON in column `params`
    mqoe_version: str
    started_utc: str  # ISO-8601
    wall_time_s: float
    sim_duration_s: float
    metrics: Mapping[str, MetricValue]  # scalar metrics, one column each
    # Named tidy tables: DataFrames, or a mqoe.results.Tables (DataFrames on access).
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    # Text columns after the fixed ones, e.g. {"sweep": name, "sweep_id": id}.
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Quarantined:
    """An unreadable file a query found: where it was, where it went (None if it could
    not be moved, e.g. a read-only store: then only this store object skips it)."""

    path: Path
    moved_to: Path | None
    reason: str


def default_results_dir() -> Path:
    """``$MQOE_RESULTS`` if set (and non-empty), else ``mqoe-results`` in the working dir."""
    return Path(os.environ.get("MQOE_RESULTS") or "mqoe-results")


class ResultsStore:
    """Runs and their tables stored as Parquet under ``root``, queried with DuckDB.

    Opening one removes stale temporaries and superseded versions of killed writers
    (never a live process's files; nothing is created). ``quarantined`` lists the
    unreadable files this object's queries moved aside."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.quarantined: list[Quarantined] = []
        self._skipped: set[Path] = set()  # unreadable files that could not be moved
        self._remove_leftovers()

    @property
    def _runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def _tables_dir(self) -> Path:
        return self.root / "tables"

    @property
    def _failures_dir(self) -> Path:
        return self.root / "failures"

    @property
    def _sweeps_dir(self) -> Path:
        return self.root / "sweeps"

    def write(self, record: RunRecord) -> Path:
        """Store ``record``, replacing any earlier run with the same id; returns its runs/ file.

        A replacement is atomic: until the new run is committed the old one stays whole.
        Raises ``ValueError`` for a bad run id, table name or metric name.
        """
        row = _summary_row(record)
        run_id = record.run_id
        tables = {
            name: _tagged_table(run_id, name, held_table(record.tables, name))
            for name in record.tables
        }
        runs_file = self._runs_dir / (run_id + SUFFIX)
        tags = list(record.tags)
        if runs_file.is_file():
            self._replace(run_id, row, tables, tags)
        else:
            self._write_new(run_id, row, tables, tags)
        unlink_durably(self._failures_dir / (run_id + SUFFIX))  # a retry that succeeded
        return runs_file

    def _write_new(
        self, run_id: str, row: pa.Table, tables: Mapping[str, pa.Table], tags: list[str]
    ) -> None:
        """A run not committed yet: tables under their plain names, then its row."""
        filename = run_id + SUFFIX
        for name, table in tables.items():
            _write_table(self._tables_dir / name / filename, table)
        # An earlier attempt that died before its row may have left other tables.
        for directory in self._table_dirs():
            stale = directory / filename
            if directory.name not in tables and stale.is_file():
                unlink_durably(stale)
                layout.remove_if_empty(directory)
        _write_row(self._runs_dir / filename, row, version="", tags=tags)

    def _replace(
        self, run_id: str, row: pa.Table, tables: Mapping[str, pa.Table], tags: list[str]
    ) -> None:
        """A committed run: the new version's tables beside the old ones, then its row
        (the commit), then the old version's files go, its ``.gone`` marker last."""
        version = f"{os.getpid()}-{secrets.token_hex(4)}"
        old_tables = sorted({path.parent.name for path, _ in self._files_of(run_id)})
        try:
            for name, table in tables.items():
                path = self._tables_dir / name / layout.versioned(run_id, version)
                _write_table(path, table)
            if not tables and old_tables:  # else queries would take the old files as current
                marker = self._tables_dir / old_tables[0] / f"{run_id}~{version}{GONE}"
                atomic_write_bytes(marker, b"")
            _write_row(self._runs_dir / (run_id + SUFFIX), row, version, tags)
        except BaseException:
            if self._version_of(run_id) != version:  # not committed: drop what was staged
                with contextlib.suppress(OSError):
                    for path, staged in self._files_of(run_id):
                        if staged == version:
                            path.unlink(missing_ok=True)
            raise
        files = self._files_of(run_id)
        for path, file_version in files:
            if file_version != version:
                unlink_durably(path)
        for path, file_version in files:
            if file_version == version and path.suffix == GONE:
                unlink_durably(path)
        for directory in {path.parent for path, _ in files}:
            layout.remove_if_empty(directory)

    def read(self, run_id: str) -> RunRecord:
        """The committed run ``run_id`` as the :class:`RunRecord` that was stored: its
        metrics, tags and tables (without the store's ``run_id`` column). Raises
        ``UserError`` if no such run is committed or its files cannot be read."""
        path = self._runs_dir / (run_id + SUFFIX)
        try:
            row_table = _read_parquet(path)
            metadata = row_table.schema.metadata or {}
            version = metadata.get(_VERSION_KEY, b"").decode("utf-8", "replace")
            tables = {}
            for directory in self._table_dirs():
                name = layout.versioned(run_id, version) if version else run_id + SUFFIX
                if (directory / name).is_file():
                    tables[directory.name] = _without_run_id(_read_parquet(directory / name))
        except FileNotFoundError:
            if path.is_file():  # a table replaced under us by a concurrent writer
                return self.read(run_id)
            raise UserError(f"no run {run_id!r} is stored under {self.root}") from None
        except (OSError, pa.ArrowException) as exc:
            raise UserError(f"cannot read run {run_id!r}: {layout.first_line(exc)}") from None
        row = row_table.to_pylist()[0]
        fixed = {name: row.pop(name) for name in FIXED_COLUMNS}
        if _TAGS_KEY in metadata:
            tag_names = json.loads(metadata[_TAGS_KEY])
        else:  # written before tags were named in the metadata: the sweep's own tags
            tag_names = [name for name in ("sweep", "sweep_id") if name in row]
        tags = {name: row.pop(name) for name in tag_names}
        return RunRecord(
            run_id=fixed["run_id"],
            scenario=fixed["scenario"],
            profile=fixed["profile"],
            seed=fixed["seed"],
            params=json.loads(fixed["params"]),
            mqoe_version=fixed["mqoe_version"],
            started_utc=fixed["started_utc"],
            wall_time_s=fixed["wall_time_s"],
            sim_duration_s=fixed["sim_duration_s"],
            # Arrow writes a float NaN as null; a metric is never None (refused on write).
            metrics={name: math.nan if value is None else value for name, value in row.items()},
            tables=tables,
            tags=tags,
        )

    def write_failure(self, run_id: str, row: Mapping[str, object]) -> Path:
        """Record that run ``run_id`` raised: ``row`` (its inputs and the error, plain
        values) becomes ``failures/<run_id>.parquet``, queried as the view ``failures``.
        The run stays uncommitted, so a resumed sweep tries it again."""
        if not RUN_ID.fullmatch(run_id):
            raise ValueError(f"run_id {run_id!r} must match [A-Za-z0-9_.-]+")
        import pandas as pd

        frame = pd.DataFrame({"run_id": [run_id], **{k: [v] for k, v in row.items()}})
        return atomic_write_parquet(self._failures_dir / (run_id + SUFFIX), frame)

    def write_sweep(self, sweep_id: str, row: Mapping[str, object]) -> Path:
        """Describe a sweep: ``row`` becomes ``sweeps/<sweep_id>.parquet`` (view ``sweeps``)."""
        if not RUN_ID.fullmatch(sweep_id):
            raise ValueError(f"sweep_id {sweep_id!r} must match [A-Za-z0-9_.-]+")
        import pandas as pd

        frame = pd.DataFrame({"sweep_id": [sweep_id], **{k: [v] for k, v in row.items()}})
        return atomic_write_parquet(self._sweeps_dir / (sweep_id + SUFFIX), frame)

    def run_ids(self) -> set[str]:
        """Ids of the committed runs (empty for a new store); cheap: a directory listing."""
        return set(self._committed_run_ids_or_empty())

    def failure_ids(self) -> set[str]:
        """Ids of the runs recorded as failed (a directory listing)."""
        files = self._readable(layout.parquet_files(self._failures_dir))
        return {path.name.removesuffix(SUFFIX) for path in files}

    def runs(self) -> pd.DataFrame:
        """All summary rows, ordered by run id; metrics a run lacks are missing (NULL)."""
        return self.query("select * from runs order by run_id")

    def table(self, name: str) -> pd.DataFrame:
        """All rows of table ``name`` across runs, each tagged with its ``run_id``."""
        names = self.table_names()
        if name not in names:
            self._committed_run_ids()  # an empty store gets the "no runs yet" message
            stored = ", ".join(names) or "none"
            raise UserError(f"no table {name!r} under {self.root}; stored tables: {stored}")
        return self.query(f'select * from "{name}"')

    def table_names(self) -> list[str]:
        """Names of tables that at least one committed run has, sorted."""
        run_ids = set(self._committed_run_ids_or_empty())
        return sorted(self._table_files(run_ids))

    def query(self, sql: str) -> pd.DataFrame:
        """Run ``sql`` in DuckDB over the view ``runs`` and one view per table name.

        Views union columns by name, so runs with different metrics coexist (missing
        values are NULL). An unreadable file is quarantined (see the module's docs) and
        the query answered without it. Raises ``UserError`` for an empty store or a
        failing query.
        """
        import duckdb

        retries = 0  # each retry follows a quarantined or a vanished file: it ends
        while True:
            try:
                con = self._connect()
            except duckdb.Error as exc:
                if self._set_aside_unreadable(exc, retries < RETRIES):
                    retries += 1
                    continue
                raise UserError(
                    f"cannot read results under {self.root}: {layout.first_line(exc)}"
                ) from None
            try:
                result = con.execute(sql)
                if result is None:  # DuckDB's answer to a query of only blanks or comments
                    raise UserError("query failed: no SQL statement given")
                return result.df()
            except duckdb.Error as exc:
                if self._set_aside_unreadable(exc, retries < RETRIES):
                    retries += 1
                    continue
                raise UserError(f"query failed: {layout.first_line(exc)}") from None
            finally:
                con.close()

    def _connect(self) -> duckdb.DuckDBPyConnection:
        import duckdb

        failures = self._readable(layout.parquet_files(self._failures_dir))
        sweeps = self._readable(layout.parquet_files(self._sweeps_dir))
        # A sweep whose every run failed so far is still worth querying.
        run_ids = self._committed_run_ids_or_empty() if failures else self._committed_run_ids()
        con = duckdb.connect(":memory:")
        try:
            if run_ids:
                layout.create_view(con, "runs", [self._runs_dir / (r + SUFFIX) for r in run_ids])
            for view, files in (("failures", failures), ("sweeps", sweeps)):
                if files:
                    layout.create_view(con, view, files)
            for name, files in self._table_files(set(run_ids)).items():
                layout.create_view(con, name, files)
        except BaseException:
            con.close()
            raise
        return con

    def _set_aside_unreadable(self, exc: duckdb.Error, may_retry: bool) -> bool:
        """After DuckDB failed: quarantine the store's unreadable files it may have met.
        True if the query is worth trying again (something was set aside, or a file it
        named was replaced meanwhile); False if the failure is not about our files."""
        import duckdb

        quoted = [Path(text) for text in _QUOTED_PARQUET.findall(str(exc))]
        if may_retry and any(p.is_relative_to(self.root) and not p.exists() for p in quoted):
            return True  # e.g. an old version its writer removed after our listing
        ours = set(self._all_files())
        named = [path for path in quoted if path in ours]
        if named:
            suspects = {path: layout.unreadable(path, deep=True) for path in named}
        elif quoted or not isinstance(exc, duckdb.IOException | duckdb.InvalidInputException):
            return False  # the user's own SQL or file
        else:  # DuckDB did not say which file: check every footer (cheap)
            suspects = {path: layout.unreadable(path, deep=False) for path in sorted(ours)}
        bad = {path: reason for path, reason in suspects.items() if reason is not None}
        for path, reason in bad.items():
            self._quarantine(path, reason)
        return bool(bad)

    def _quarantine(self, path: Path, reason: str) -> None:
        relative = path.relative_to(self.root)
        target = self.root / QUARANTINE / relative
        copies = 0
        while target.exists():  # an earlier bad copy of the same file stays
            copies += 1
            target = target.with_name(f"{path.stem}.{copies}{path.suffix}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
        except OSError as exc:
            self._skipped.add(path)
            self.quarantined.append(Quarantined(path, None, reason))
            why = exc.strerror or layout.first_line(exc)
            _log.warning("%s: unreadable (%s); cannot move it (%s), skipped", path, reason, why)
            return
        self.quarantined.append(Quarantined(path, target, reason))
        _log.warning("%s: unreadable (%s); moved to %s, queries skip it", path, reason, target)

    def _readable(self, files: Iterable[Path]) -> list[Path]:
        return [path for path in files if path not in self._skipped]

    def _all_files(self) -> Iterator[Path]:
        """Every Parquet file the store's views may read."""
        yield from layout.parquet_files(self._runs_dir)
        yield from layout.parquet_files(self._failures_dir)
        yield from layout.parquet_files(self._sweeps_dir)
        for directory in self._table_dirs():
            yield from layout.parquet_files(directory)

    def _committed_run_ids(self) -> list[str]:
        run_ids = self._committed_run_ids_or_empty()
        if not run_ids:
            raise UserError(f"no runs stored under {self.root} yet; run `mqoe run …` first")
        return run_ids

    def _committed_run_ids_or_empty(self) -> list[str]:
        files = self._readable(layout.parquet_files(self._runs_dir))
        stems = (path.name.removesuffix(SUFFIX) for path in files)
        return sorted(stem for stem in stems if RUN_ID.fullmatch(stem))

    def _table_dirs(self) -> list[Path]:
        if not self._tables_dir.is_dir():
            return []
        return sorted(
            d for d in self._tables_dir.iterdir() if d.is_dir() and _is_table_name(d.name)
        )

    def _files_of(self, run_id: str) -> list[tuple[Path, str]]:
        """The run's table files and ``.gone`` markers, with their version ("": plain)."""
        found = []
        for directory in self._table_dirs():
            for entry in layout.entries(directory):
                parsed = layout.table_entry(entry)
                if parsed is not None and parsed[0] == run_id:
                    found.append((directory / entry, parsed[1]))
        return found

    def _version_of(self, run_id: str) -> str | None:
        """The version of the committed run's tables ("": plain names); None if the run
        is not committed."""
        path = self._runs_dir / (run_id + SUFFIX)
        try:
            metadata = pq.read_schema(path).metadata or {}
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException):
            return ""  # unreadable: the query of its row quarantines it
        version: bytes = metadata.get(_VERSION_KEY, b"")
        return version.decode("utf-8", "replace")

    def _table_files(self, run_ids: set[str]) -> dict[str, list[Path]]:
        """Table name → its files of committed runs, in run-id order; tables without any omitted."""
        listing: dict[str, dict[str, dict[str, str]]] = {}  # table → run → version → entry
        versioned: set[str] = set()
        for directory in self._table_dirs():
            per_run: dict[str, dict[str, str]] = {}
            for entry in layout.entries(directory):
                parsed = layout.table_entry(entry)
                if parsed is None or parsed[0] not in run_ids:
                    continue
                if parsed[1]:
                    versioned.add(parsed[0])
                if entry.endswith(SUFFIX):
                    per_run.setdefault(parsed[0], {})[parsed[1]] = entry
            listing[directory.name] = per_run
        # Only runs stored more than once need their row's metadata read.
        current = {run_id: self._version_of(run_id) or "" for run_id in versioned}
        found: dict[str, list[Path]] = {}
        for name, per_run in listing.items():
            files = []
            for run_id in sorted(per_run):
                chosen = per_run[run_id].get(current.get(run_id, ""))
                path = self._tables_dir / name / chosen if chosen is not None else None
                if path is not None and path not in self._skipped:
                    files.append(path)
            if files:
                found[name] = files
        return found

    def _remove_leftovers(self) -> None:
        """Temporaries of dead writers, and table versions a dead writer superseded."""
        if not self.root.is_dir():
            return
        for directory in (self.root, self._runs_dir, self._failures_dir, self._sweeps_dir):
            layout.remove_dead_temporaries(directory, layout.entries(directory))
        by_run: dict[str, list[tuple[Path, str]]] = {}
        for directory in self._table_dirs():
            entries = layout.entries(directory)
            layout.remove_dead_temporaries(directory, entries)
            for entry in entries:
                parsed = layout.table_entry(entry)
                if parsed is not None:
                    by_run.setdefault(parsed[0], []).append((directory / entry, parsed[1]))
        for run_id, files in by_run.items():
            if any(version for _, version in files):
                self._remove_superseded(run_id, files)

    def _remove_superseded(self, run_id: str, files: list[tuple[Path, str]]) -> None:
        """The run's files of other versions than its committed one, once their writer
        is gone (a live one may be mid-write, or about to remove them itself)."""
        current = self._version_of(run_id)
        others = [(path, version) for path, version in files if version != current]
        if current is None:  # not committed; plain files may be a first write under way
            stale = [path for path, version in others if version and layout.writer_gone(version)]
        elif current and not layout.writer_gone(current):
            return  # its writer is still removing the older versions itself
        else:  # older versions are superseded; a live writer's newer staging stays
            stale = [path for path, version in others if not version or layout.writer_gone(version)]
        removed = [layout.remove_quietly(path) for path in stale]
        if current and len(stale) == len(others) and all(removed):
            for path, version in files:
                if version == current and path.suffix == GONE:
                    layout.remove_quietly(path)


def _summary_row(record: RunRecord) -> pa.Table:
    if not RUN_ID.fullmatch(record.run_id):
        raise ValueError(f"run_id {record.run_id!r} must match [A-Za-z0-9_.-]+")
    try:
        params = json.dumps(dict(record.params), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"params of run {record.run_id!r} are not plain JSON: {exc}") from None
    row: dict[str, object] = {
        "run_id": record.run_id,
        "scenario": record.scenario,
        "profile": record.profile,
        "seed": int(record.seed),
        "params": params,
        "mqoe_version": record.mqoe_version,
        "started_utc": record.started_utc,
        "wall_time_s": float(record.wall_time_s),
        "sim_duration_s": float(record.sim_duration_s),
    }
    # DuckDB matches column names case-insensitively, so "Seed" would clash with "seed".
    taken = {name.lower() for name in FIXED_COLUMNS}
    for name, tag in record.tags.items():
        if not isinstance(name, str) or not name or name.lower() in taken:
            raise ValueError(f"tag name {name!r} is empty or clashes with another column")
        if not isinstance(tag, str):
            raise ValueError(f"tag {name!r} must be a str, not {tag!r}")
        taken.add(name.lower())
        row[name] = tag
    for name, value in record.metrics.items():
        if not isinstance(name, str) or not name or name.lower() in taken:
            raise ValueError(f"metric name {name!r} is empty or clashes with another column")
        taken.add(name.lower())
        row[name] = _metric_value(name, value)
    columns = [arrow_column([value]) for value in row.values()]
    if all(column is not None for column in columns):  # as from_pandas would type them
        return pa.Table.from_arrays(columns, names=list(row))
    import pandas as pd

    frame = pd.DataFrame({name: [value] for name, value in row.items()})
    return pa.Table.from_pandas(frame, preserve_index=False)


def _metric_value(name: str, value: object) -> MetricValue:
    if type(value) not in (float, int, bool, str):
        import numpy as np

        if isinstance(value, np.generic):  # numpy scalars from metric computations
            value = value.item()
    if not isinstance(value, float | int | bool | str):
        raise ValueError(f"metric {name!r} must be a float, int, bool or str, not {value!r}")
    return value


def _tagged_table(run_id: str, name: str, table: pd.DataFrame | ColumnTable) -> pa.Table:
    """The table as written: ``run_id`` first, then its columns (a DataFrame's index
    dropped). A :class:`ColumnTable` becomes the Arrow table its DataFrame would."""
    if not _is_table_name(name):
        raise ValueError(
            f"table name {name!r} must match [a-z_][a-z0-9_]* and not be one of "
            f"{', '.join(RESERVED_VIEWS)}"
        )
    names = table.column_names if isinstance(table, ColumnTable) else table.columns
    if any(str(column).lower() == "run_id" for column in names):
        raise ValueError(f"table {name!r} already has a run_id column; the store adds it")
    # The run id as pandas' str column would hold it (not pa.array: it imports pandas).
    ids = large_strings([run_id] * len(table))
    if isinstance(table, ColumnTable):
        arrow = table.direct_arrow()
        if arrow is not None and ids is not None:
            return arrow.add_column(0, "run_id", ids)
        table = table.to_pandas()  # pandas decides the types, as for any DataFrame
    # The frame's own columns as pandas converts them, on this thread (a table's
    # conversion is milliseconds: a thread pool per call costs more than it saves),
    # then the run id in front: not inserted into the frame (a copy of every column).
    arrow = pa.Table.from_pandas(table, preserve_index=False, nthreads=1)
    if ids is None:  # not UTF-8: pyarrow refuses it here, as it did in the column
        ids = pa.array([run_id] * len(table), pa.large_string())
    return arrow.add_column(0, "run_id", ids)


def _read_parquet(path: Path) -> pa.Table:
    """One stored file, whole. The same table as ``pq.read_table(path)`` at a third of its
    cost for the store's small files (no dataset discovery, no thread pool)."""
    with pq.ParquetFile(path) as file:
        return file.read(use_threads=False)


def _without_run_id(table: pa.Table) -> pd.DataFrame:
    """A stored table as its record held it: the store's ``run_id`` column dropped before
    the conversion to pandas (the same frame as dropping it after, at half the cost)."""
    frame: pd.DataFrame = table.remove_column(table.schema.get_field_index("run_id")).to_pandas(
        use_threads=False
    )
    return frame


def _write_table(path: Path, table: pa.Table) -> None:
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def _is_table_name(name: str) -> bool:
    return bool(_TABLE_NAME.fullmatch(name)) and name not in RESERVED_VIEWS


def _write_row(path: Path, table: pa.Table, version: str, tags: Iterable[str]) -> None:
    """Write a runs/ file atomically, naming its tables' version and its tag columns in
    its metadata."""
    metadata = {**(table.schema.metadata or {}), _TAGS_KEY: json.dumps(list(tags)).encode()}
    if version:
        metadata[_VERSION_KEY] = version.encode()
    table = table.replace_schema_metadata(metadata)
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))
