"""The results store: one Parquet row per run, named tidy tables, SQL over both.

Layout under the root::

    runs/<run_id>.parquet                  one row: fixed columns, tags, one per metric
    tables/<table_name>/<run_id>.parquet   the run's table, with ``run_id`` first
    failures/<run_id>.parquet              a run that raised: its inputs and the error
    sweeps/<sweep_id>.parquet              one row per sweep (name, spec, planned runs)

A run is *committed* once its ``runs/`` file exists; that file is written last, and
queries read only the table files of committed runs, so a crash mid-write never shows a
half-stored run. Storing a run removes a failure recorded earlier under its id (a retry
that succeeded). Tags (e.g. ``sweep``, ``sweep_id``) are extra text columns of the
``runs`` row; rows without them read as NULL.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from mqoe.errors import UserError
from mqoe.results.atomic import atomic_write_parquet, unlink_durably

_RUN_ID = re.compile(r"[A-Za-z0-9_.-]+")
_TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_SUFFIX = ".parquet"

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
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)  # named tidy tables
    # Text columns after the fixed ones, e.g. {"sweep": name, "sweep_id": id}.
    tags: Mapping[str, str] = field(default_factory=dict)


def default_results_dir() -> Path:
    """``$MQOE_RESULTS`` if set (and non-empty), else ``mqoe-results`` in the working dir."""
    return Path(os.environ.get("MQOE_RESULTS") or "mqoe-results")


class ResultsStore:
    """Runs and their tables stored as Parquet under ``root``, queried with DuckDB."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

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

        Raises ``ValueError`` for a bad run id, table name or metric name.
        """
        row = _summary_row(record)
        run_id = record.run_id
        tables = {name: _tagged_table(run_id, name, df) for name, df in record.tables.items()}
        filename = run_id + _SUFFIX
        runs_file = self._runs_dir / filename
        # Uncommit the old run first: until the new summary row lands, the run is absent
        # rather than shown with a mix of old and new tables.
        unlink_durably(runs_file)
        for name, df in tables.items():
            atomic_write_parquet(self._tables_dir / name / filename, df)
        self._remove_stale_tables(filename, keep=tables.keys())
        written = atomic_write_parquet(runs_file, row)
        unlink_durably(self._failures_dir / filename)  # a retry that succeeded
        return written

    def write_failure(self, run_id: str, row: Mapping[str, object]) -> Path:
        """Record that run ``run_id`` raised: ``row`` (its inputs and the error, plain
        values) becomes ``failures/<run_id>.parquet``, queried as the view ``failures``.
        The run stays uncommitted, so a resumed sweep tries it again."""
        if not _RUN_ID.fullmatch(run_id):
            raise ValueError(f"run_id {run_id!r} must match [A-Za-z0-9_.-]+")
        frame = pd.DataFrame({"run_id": [run_id], **{k: [v] for k, v in row.items()}})
        return atomic_write_parquet(self._failures_dir / (run_id + _SUFFIX), frame)

    def write_sweep(self, sweep_id: str, row: Mapping[str, object]) -> Path:
        """Describe a sweep: ``row`` becomes ``sweeps/<sweep_id>.parquet`` (view ``sweeps``)."""
        if not _RUN_ID.fullmatch(sweep_id):
            raise ValueError(f"sweep_id {sweep_id!r} must match [A-Za-z0-9_.-]+")
        frame = pd.DataFrame({"sweep_id": [sweep_id], **{k: [v] for k, v in row.items()}})
        return atomic_write_parquet(self._sweeps_dir / (sweep_id + _SUFFIX), frame)

    def run_ids(self) -> set[str]:
        """Ids of the committed runs (empty for a new store); cheap: a directory listing."""
        return set(self._committed_run_ids_or_empty())

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
        values are NULL). Raises ``UserError`` for an empty store or a failing query.
        """
        con = self._connect()
        try:
            result = con.execute(sql)
            if result is None:  # DuckDB's answer to a query of only blanks or comments
                raise UserError("query failed: no SQL statement given")
            return result.df()
        except duckdb.Error as exc:
            raise UserError(f"query failed: {_first_line(exc)}") from None
        finally:
            con.close()

    def _connect(self) -> duckdb.DuckDBPyConnection:
        failures = _parquet_files(self._failures_dir)
        sweeps = _parquet_files(self._sweeps_dir)
        # A sweep whose every run failed so far is still worth querying.
        run_ids = self._committed_run_ids_or_empty() if failures else self._committed_run_ids()
        con = duckdb.connect(":memory:")
        try:
            if run_ids:
                _create_view(con, "runs", [self._runs_dir / (r + _SUFFIX) for r in run_ids])
            for view, files in (("failures", failures), ("sweeps", sweeps)):
                if files:
                    _create_view(con, view, files)
            for name, files in self._table_files(set(run_ids)).items():
                _create_view(con, name, files)
        except duckdb.Error as exc:
            con.close()
            raise UserError(f"cannot read results under {self.root}: {_first_line(exc)}") from None
        return con

    def _remove_stale_tables(self, filename: str, keep: Iterable[str]) -> None:
        """Drop this run's files in tables the new record no longer has."""
        if not self._tables_dir.is_dir():
            return
        kept = set(keep)
        for directory in self._tables_dir.iterdir():
            stale = directory / filename
            if directory.name not in kept and stale.is_file():
                unlink_durably(stale)
                _remove_if_empty(directory)

    def _committed_run_ids(self) -> list[str]:
        run_ids = self._committed_run_ids_or_empty()
        if not run_ids:
            raise UserError(f"no runs stored under {self.root} yet; run `mqoe run …` first")
        return run_ids

    def _committed_run_ids_or_empty(self) -> list[str]:
        if not self._runs_dir.is_dir():
            return []
        names = (p.name for p in self._runs_dir.iterdir() if p.name.endswith(_SUFFIX))
        stems = (name.removesuffix(_SUFFIX) for name in names)
        return sorted(stem for stem in stems if _RUN_ID.fullmatch(stem))

    def _table_files(self, run_ids: set[str]) -> dict[str, list[Path]]:
        """Table name → its files of committed runs, in run-id order; tables without any omitted."""
        if not self._tables_dir.is_dir():
            return {}
        found: dict[str, list[Path]] = {}
        for directory in sorted(self._tables_dir.iterdir()):
            if not directory.is_dir() or not _is_table_name(directory.name):
                continue
            files = [directory / (r + _SUFFIX) for r in sorted(run_ids)]
            committed = [f for f in files if f.is_file()]
            if committed:
                found[directory.name] = committed
        return found


def _summary_row(record: RunRecord) -> pd.DataFrame:
    if not _RUN_ID.fullmatch(record.run_id):
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
    return pd.DataFrame({name: [value] for name, value in row.items()})


def _metric_value(name: str, value: object) -> MetricValue:
    if isinstance(value, np.generic):  # numpy scalars from metric computations
        value = value.item()
    if not isinstance(value, float | int | bool | str):
        raise ValueError(f"metric {name!r} must be a float, int, bool or str, not {value!r}")
    return value


def _tagged_table(run_id: str, name: str, df: pd.DataFrame) -> pd.DataFrame:
    if not _is_table_name(name):
        raise ValueError(
            f"table name {name!r} must match [a-z_][a-z0-9_]* and not be one of "
            f"{', '.join(RESERVED_VIEWS)}"
        )
    if any(str(column).lower() == "run_id" for column in df.columns):
        raise ValueError(f"table {name!r} already has a run_id column; the store adds it")
    tagged = df.reset_index(drop=True)
    tagged.insert(0, "run_id", run_id)
    return tagged


def _is_table_name(name: str) -> bool:
    return bool(_TABLE_NAME.fullmatch(name)) and name not in RESERVED_VIEWS


def _parquet_files(directory: Path) -> list[Path]:
    """The committed ``*.parquet`` files of ``directory`` (temporary files start with a dot)."""
    if not directory.is_dir():
        return []
    return sorted(
        p for p in directory.iterdir() if p.name.endswith(_SUFFIX) and not p.name.startswith(".")
    )


def _create_view(con: duckdb.DuckDBPyConnection, name: str, files: list[Path]) -> None:
    # An explicit file list, not a glob: a root such as "results[2]" would be read as a
    # glob pattern, and listing in Python lets us skip tables of uncommitted runs.
    paths = ", ".join(_sql_string(str(f)) for f in files)
    con.execute(
        f'create view "{name}" as select * from read_parquet([{paths}], union_by_name=true)'
    )


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not empty, or a concurrent writer added a file
        directory.rmdir()
