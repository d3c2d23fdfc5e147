"""Where runs end up: the results store, atomic writes and the metrics.csv contract.

A results directory (``$MQOE_RESULTS``, default ``mqoe-results/``) holds::

    runs/<run_id>.parquet                  one summary row per run: run_id, scenario,
                                           profile, seed, params (canonical JSON),
                                           mqoe_version, started_utc, wall_time_s,
                                           sim_duration_s, then one column per metric
    tables/<table_name>/<run_id>.parquet   a run's named tidy table, run_id first
    tables/<table_name>/<run_id>~<v>.parquet   the same, for a run id stored again (the
                                           runs/ row names the current version)
    .quarantine/                           corrupt files moved aside, with a warning

A run's tables may be held as :class:`ColumnTable` in a :class:`Tables` mapping: the
store writes them through pyarrow without pandas, and ``record.tables[name]`` is still
a DataFrame (made on access).

Every file is written atomically (temporary file, fsync, rename), tables before the
summary row, so a run listed in ``runs`` always has its tables; storing an id again
replaces it in one step (a crash leaves the old run or the new one, never neither).
Read tables through the store's views, not by file name. :class:`ResultsStore`
queries all of it with DuckDB: the view ``runs`` plus one view per table name, with
columns unioned by name so runs of different scenarios coexist.

``metrics.csv`` (:func:`write_metrics_csv`, :func:`read_metrics_csv`) is the tidy,
stable file with columns ``figure,profile,condition,metric,value,unit`` that golden
tests and other tools read.
"""

from mqoe.results.atomic import (
    atomic_write,
    atomic_write_bytes,
    atomic_write_parquet,
    atomic_write_text,
    ensure_output_dir,
    write_output,
)
from mqoe.results.metrics_csv import (
    MetricRow,
    format_condition,
    metrics_frame,
    parse_condition,
    read_metrics_csv,
    write_metrics_csv,
)
from mqoe.results.store import ResultsStore, RunRecord, default_results_dir
from mqoe.results.tables import ColumnTable, Tables

__all__ = [
    "ColumnTable",
    "MetricRow",
    "ResultsStore",
    "RunRecord",
    "Tables",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_parquet",
    "atomic_write_text",
    "default_results_dir",
    "ensure_output_dir",
    "format_condition",
    "metrics_frame",
    "parse_condition",
    "read_metrics_csv",
    "write_metrics_csv",
    "write_output",
]
