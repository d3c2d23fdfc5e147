"""Tables held as columns: stored without pandas, read back exactly as DataFrames are."""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.results import ColumnTable, ResultsStore, RunRecord, Tables
from mqoe.results.tables import arrow_column


def _record(run_id: str, tables: Mapping[str, Any], metrics: Mapping[str, Any]) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        scenario="trace-abr",
        profile="nokia-1",
        seed=3,
        params={"rule": "bba"},
        mqoe_version="0.1.0",
        started_utc="2024-05-01T12:00:00+00:00",
        wall_time_s=0.5,
        sim_duration_s=600.0,
        metrics=metrics,
        tables=tables,
    )


ENERGY_ROWS = [
    {"cluster": "little", "busy_s": 1.5, "mean_busy_khz": math.nan, "freq_changes": 3,
     "energy_j": 0.25, "power_source": "soc energy model", "online": True},
    {"cluster": "big", "busy_s": 0.0, "mean_busy_khz": 1.2e6, "freq_changes": 0,
     "energy_j": math.nan, "power_source": "", "online": False},
]  # fmt: skip
SEGMENT_COLUMNS = {
    "segment": np.arange(3),
    "representation": np.array([0, 2, 1]),
    "bitrate_kbps": np.array([235.0, 560.0, math.nan]),
    "ok": np.array([True, False, True]),
}
METRICS = {"qoe_lin": 1.5, "energy_j": math.nan, "segments": 3, "stalled": False, "rule": "x"}


def _store_both(root: Path) -> ResultsStore:
    """Run ``df`` given as DataFrames (the old way) and run ``cols`` as ColumnTables."""
    store = ResultsStore(root)
    frames = {"energy": pd.DataFrame(ENERGY_ROWS), "segments": pd.DataFrame(SEGMENT_COLUMNS)}
    columns = Tables(
        {
            "energy": ColumnTable.from_records(ENERGY_ROWS),
            "segments": ColumnTable(SEGMENT_COLUMNS),
        }
    )
    store.write(_record("df", frames, METRICS))
    store.write(_record("cols", columns, METRICS))
    return store


def test_column_tables_read_back_as_the_same_dataframes(tmp_path: Path) -> None:
    store = _store_both(tmp_path)
    old, new = store.read("df"), store.read("cols")
    assert old.metrics.keys() == new.metrics.keys()
    for name in ("energy", "segments"):
        pd.testing.assert_frame_equal(old.tables[name], new.tables[name], check_exact=True)
    for view in ("energy", "segments", "runs"):

        def rows(run_id: str, view: str = view) -> pd.DataFrame:
            sql = f"select * from {view} where run_id = '{run_id}'"
            return store.query(sql).drop(columns="run_id")

        pd.testing.assert_frame_equal(rows("df"), rows("cols"), check_exact=True)
    table = store.table("segments")
    by_run = [table[table.run_id == r].drop(columns="run_id").reset_index(drop=True)
              for r in ("df", "cols")]  # fmt: skip
    pd.testing.assert_frame_equal(by_run[0], by_run[1], check_exact=True)


def test_column_tables_write_the_same_arrow_columns_and_nulls(tmp_path: Path) -> None:
    _store_both(tmp_path)
    for sub in ("runs", "tables/energy", "tables/segments"):
        old = pq.read_table(tmp_path / sub / "df.parquet")
        new = pq.read_table(tmp_path / sub / "cols.parquet")
        assert new.schema.remove_metadata() == old.schema.remove_metadata()
        ids = ["run_id"]
        assert new.drop_columns(ids).equals(old.drop_columns(ids))  # NaN stored as null
    energy = pq.read_table(tmp_path / "tables/energy/cols.parquet")
    assert energy.column("mean_busy_khz").null_count == 1


def test_tables_give_dataframes_on_access_and_keep_what_was_given() -> None:
    segments = ColumnTable(SEGMENT_COLUMNS)
    frame = pd.DataFrame({"a": [1, 2]})
    tables = Tables({"segments": segments, "other": frame})
    assert list(tables) == ["segments", "other"] and len(tables) == 2
    assert tables.n_rows("segments") == 3 and tables.held("segments") is segments
    made = tables["segments"]
    pd.testing.assert_frame_equal(made, pd.DataFrame(SEGMENT_COLUMNS))
    assert tables["segments"] is made  # made once; a reader's change is what gets stored
    assert tables.held("segments") is made and tables["other"] is frame
    copy = pickle.loads(pickle.dumps(tables))
    pd.testing.assert_frame_equal(copy["segments"], made)
    rows = pickle.loads(pickle.dumps(ColumnTable.from_records(ENERGY_ROWS)))
    pd.testing.assert_frame_equal(rows.to_pandas(), pd.DataFrame(ENERGY_ROWS))


def test_a_changed_dataframe_of_a_column_table_is_what_is_stored(tmp_path: Path) -> None:
    tables = Tables({"segments": ColumnTable(SEGMENT_COLUMNS)})
    tables["segments"]["extra"] = 1.0
    store = ResultsStore(tmp_path)
    store.write(_record("r", tables, {}))
    assert "extra" in store.read("r").tables["segments"].columns


def test_column_tables_refuse_a_run_id_column_and_unequal_columns(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="different lengths"):
        ColumnTable({"a": [1, 2], "b": [1]})
    store = ResultsStore(tmp_path)
    bad = Tables({"t": ColumnTable({"RUN_ID": [1]})})
    with pytest.raises(ValueError, match="run_id"):
        store.write(_record("r", bad, {}))


# Columns whose Arrow type pandas decides differently (mixed, None, empty, big ints)
# take pandas' own way: the result must still be from_pandas's.
AWKWARD: list[dict[str, Any]] = [
    {"mixed": [1, 2.5]},
    {"none": [None, "a"]},
    {"none_float": [None, 1.0]},
    {"empty": []},
    {"big": [1 << 63]},
    {"ints_bools": [1, True]},
    {"uint8": np.array([1, 2], np.uint8)},
    {"texts": np.array(["a", "b"])},
    {"surrogate": ["\udcff"]},
]


@pytest.mark.parametrize("columns", AWKWARD, ids=lambda c: next(iter(c)))
def test_awkward_columns_are_written_as_pandas_would(tmp_path: Path, columns: Any) -> None:
    try:
        expected = pa.Table.from_pandas(pd.DataFrame(columns), preserve_index=False)
    except (pa.ArrowException, UnicodeError) as exc:
        with pytest.raises(type(exc)):
            ColumnTable(columns).to_arrow()
        return
    assert ColumnTable(columns).to_arrow().equals(expected)
    store = ResultsStore(tmp_path)
    store.write(_record("df", {"t": pd.DataFrame(columns)}, {}))
    store.write(_record("cols", Tables({"t": ColumnTable(columns)}), {}))
    pd.testing.assert_frame_equal(
        store.read("df").tables["t"], store.read("cols").tables["t"], check_exact=True
    )


_VALUES = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1),
    st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=1),
    st.lists(st.booleans(), min_size=1),
    st.lists(st.text(), min_size=1),
)


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_a_column_is_the_arrow_array_from_pandas_makes(values: list[Any]) -> None:
    expected = pa.Table.from_pandas(pd.DataFrame({"c": values}), preserve_index=False)
    array = arrow_column(values)
    assert array is not None
    assert array.type == expected.schema.field("c").type
    assert array.equals(expected.column("c").chunk(0))
    as_numpy = pd.DataFrame({"c": values})["c"].to_numpy()
    if as_numpy.dtype != object:  # the same values as a numpy column
        from_numpy = arrow_column(as_numpy)
        assert from_numpy is not None and from_numpy.equals(expected.column("c").chunk(0))


def test_storing_column_tables_imports_no_pandas(tmp_path: Path) -> None:
    code = f"""
import math, sys
import numpy as np
from mqoe.results import ColumnTable, ResultsStore, RunRecord, Tables
tables = Tables({{
    "segments": ColumnTable({{"k": np.arange(2), "s": np.array([0.5, math.nan])}}),
    "energy": ColumnTable.from_records([{{"cluster": "little", "j": 1.0, "n": 2, "ok": True}}]),
}})
record = RunRecord("r", "trace-abr", "nokia-1", 0, {{}}, "0", "t", 0.1, 1.0,
                   {{"m": 1.0, "nan": math.nan, "n": 3, "b": False, "s": "x"}}, tables)
ResultsStore({str(tmp_path)!r}).write(record)
assert tables.n_rows("segments") == 2
print(sorted(m for m in sys.modules if m.split(".")[0] == "pandas"))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.strip() == "[]"
    stored = ResultsStore(tmp_path).read("r")
    assert stored.tables["energy"]["cluster"].tolist() == ["little"]
    assert math.isnan(stored.tables["segments"]["s"].iloc[1])
