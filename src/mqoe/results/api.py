"""Results for notebooks and scripts: pandas DataFrames from a results directory.

Everything reads the same DuckDB views as ``mqoe results query``: ``runs`` (one row per
stored run, single runs and sweep runs alike; sweep runs carry ``sweep`` and
``sweep_id``), ``failures``, ``sweeps`` and one view per table name::

    from mqoe.results import api
    runs = api.load_runs("mqoe-results", sweep="video-pressure", expand_params=True)
    api.query("mqoe-results", "select sweep, avg(frame_drop_pct) from runs group by 1")
    api.export("mqoe-results", "runs", "runs.parquet")
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from mqoe.errors import UserError
from mqoe.results.atomic import atomic_write_parquet, atomic_write_text
from mqoe.results.store import ResultsStore, default_results_dir

_VIEW = re.compile(r"[a-z_][a-z0-9_]*")
FORMATS = ("csv", "parquet")


def _store(results_dir: str | Path | None) -> ResultsStore:
    return ResultsStore(results_dir if results_dir is not None else default_results_dir())


def query(results_dir: str | Path | None, sql: str) -> pd.DataFrame:
    """The result of ``sql`` over the store's views. Raises ``UserError`` on failure."""
    return _store(results_dir).query(sql)


def load_runs(
    results_dir: str | Path | None = None,
    *,
    sweep: str | None = None,
    expand_params: bool = False,
) -> pd.DataFrame:
    """One row per stored run, ordered by run id; only sweep ``sweep``'s runs if given.

    With ``expand_params`` each parameter also gets a column ``param_<name>`` (decoded
    from the ``params`` JSON), ready for ``groupby``.
    """
    if sweep is None:
        frame = query(results_dir, "select * from runs order by run_id")
    else:
        name = sweep.replace("'", "''")
        frame = query(results_dir, f"select * from runs where sweep = '{name}' order by run_id")
    if expand_params and not frame.empty:
        params = pd.DataFrame([json.loads(text) for text in frame["params"]], index=frame.index)
        frame = pd.concat([frame, params.add_prefix("param_")], axis=1)
    return frame.reset_index(drop=True)


def load_table(results_dir: str | Path | None, name: str) -> pd.DataFrame:
    """Every run's rows of table ``name``, each tagged with its ``run_id``."""
    return _store(results_dir).table(name)


def load_failures(results_dir: str | Path | None = None) -> pd.DataFrame:
    """Failed sweep runs with their error (an empty frame when none failed, or when the
    only failure files were unreadable and quarantined)."""
    store = _store(results_dir)
    if store.failure_ids():
        try:
            return store.query("select * from failures order by run_id")
        except UserError:
            if store.failure_ids():
                raise
    return pd.DataFrame(columns=["run_id", "sweep", "error_type", "error"])


def export(
    results_dir: str | Path | None, what: str, path: str | Path, fmt: str | None = None
) -> Path:
    """Write a view (``runs``, ``failures``, a table name) or a ``select`` to ``path`` as
    CSV or Parquet (``fmt``, default from the suffix), atomically. Returns the path."""
    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise UserError(f"{path}: cannot tell the format; use a .csv or .parquet name")
    sql = f'select * from "{what}"' if _VIEW.fullmatch(what) else what
    frame = query(results_dir, sql)
    if fmt == "csv":
        return atomic_write_text(path, frame.to_csv(index=False))
    return atomic_write_parquet(path, frame)


__all__ = ["FORMATS", "export", "load_failures", "load_runs", "load_table", "query"]
