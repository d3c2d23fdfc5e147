"""The results API (DataFrames, export) and the store's tags, failures and sweeps views."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from mqoe.errors import UserError
from mqoe.results import ResultsStore, RunRecord, api


def record(run_id: str, hogs: int, rate: float, tags: dict[str, str] | None = None) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        scenario="frame-deadlines",
        profile="nokia-1",
        seed=1,
        params={"hogs": hogs, "fps": 60.0},
        mqoe_version="0.1.0",
        started_utc="2024-05-01T12:00:00+00:00",
        wall_time_s=0.5,
        sim_duration_s=10.0,
        metrics={"missed_rate": rate},
        tables={"frames": pd.DataFrame({"frame": [0, 1], "late": [False, hogs > 0]})},
        tags=tags or {},
    )


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    store = ResultsStore(tmp_path)
    store.write(record("single", 0, 0.0))
    store.write(record("s-a", 2, 0.25, {"sweep": "s", "sweep_id": "s-1"}))
    store.write(record("s-b", 4, 0.75, {"sweep": "s", "sweep_id": "s-1"}))
    return store


def test_tags_are_columns_after_the_fixed_ones(store: ResultsStore) -> None:
    row = pd.read_parquet(store.root / "runs" / "s-a.parquet")
    assert list(row.columns[9:]) == ["sweep", "sweep_id", "missed_rate"]
    single = api.load_runs(store.root).set_index("run_id").loc["single"]
    assert pd.isna(single["sweep"])  # a run without tags reads NULL


def test_load_runs_filters_by_sweep_and_expands_params(store: ResultsStore) -> None:
    runs = api.load_runs(store.root, sweep="s", expand_params=True)
    assert runs["run_id"].tolist() == ["s-a", "s-b"]
    assert runs["param_hogs"].tolist() == [2, 4]
    assert runs["param_fps"].tolist() == [60.0, 60.0]
    assert api.load_runs(store.root, sweep="o'brien").empty


def test_query_and_load_table(store: ResultsStore) -> None:
    frame = api.query(store.root, "select sweep, avg(missed_rate) as m from runs group by 1")
    got = dict(zip(frame["sweep"].fillna("-"), frame["m"], strict=True))
    assert got == {"-": 0.0, "s": 0.5}
    late = api.load_table(store.root, "frames").groupby("run_id")["late"].sum()
    assert late.to_dict() == {"s-a": 1, "s-b": 1, "single": 0}


def test_export_csv_and_parquet_round_trip(store: ResultsStore, tmp_path: Path) -> None:
    api.export(store.root, "runs", tmp_path / "x" / "runs.csv")
    api.export(store.root, "select run_id, missed_rate from runs", tmp_path / "r.parquet")
    csv = pd.read_csv(tmp_path / "x" / "runs.csv")
    assert sorted(csv["run_id"]) == ["s-a", "s-b", "single"]
    assert json.loads(csv.set_index("run_id").loc["s-b", "params"]) == {"fps": 60.0, "hogs": 4}
    parquet = pd.read_parquet(tmp_path / "r.parquet").sort_values("run_id")
    assert parquet["missed_rate"].tolist() == [0.25, 0.75, 0.0]
    with pytest.raises(UserError, match=r"\.csv or \.parquet"):
        api.export(store.root, "runs", tmp_path / "runs.xlsx")
    assert not (tmp_path / "runs.xlsx").exists()


def test_failures_view_and_clearing(store: ResultsStore) -> None:
    assert api.load_failures(store.root).empty
    store.write_failure("s-c", {"sweep": "s", "error_type": "UserError", "error": "bad cpuset"})
    failures = api.load_failures(store.root)
    assert failures[["run_id", "error"]].values.tolist() == [["s-c", "bad cpuset"]]
    assert "s-c" not in store.run_ids()
    store.write(record("s-c", 1, 0.1, {"sweep": "s", "sweep_id": "s-1"}))
    assert api.load_failures(store.root).empty and "s-c" in store.run_ids()


def test_a_store_with_only_failures_is_queryable(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    store.write_failure("x", {"error": "boom"})
    assert api.query(tmp_path, "select count(*) as n from failures")["n"].tolist() == [1]


def test_sweeps_view(store: ResultsStore) -> None:
    store.write_sweep("s-1", {"sweep": "s", "planned_runs": 3})
    joined = api.query(
        store.root,
        "select s.planned_runs, count(r.run_id) as stored from sweeps s "
        "join runs r using (sweep_id) group by 1",
    )
    assert joined.values.tolist() == [[3, 2]]


@pytest.mark.parametrize("name", ["failures", "sweeps", "runs"])
def test_reserved_view_names_are_refused_as_tables(tmp_path: Path, name: str) -> None:
    bad = RunRecord(**{**record("a", 0, 0.0).__dict__, "tables": {name: pd.DataFrame({"x": [1]})}})
    with pytest.raises(ValueError, match="one of runs, failures, sweeps"):
        ResultsStore(tmp_path).write(bad)


@pytest.mark.parametrize("tag", ["seed", "Run_Id", "missed_rate", ""])
def test_tag_clashing_with_a_column_is_refused(tmp_path: Path, tag: str) -> None:
    with pytest.raises(ValueError, match="empty or clashes with another column"):
        ResultsStore(tmp_path).write(record("a", 0, 0.0, {tag: "x"}))
    assert ResultsStore(tmp_path).run_ids() == set()


def test_non_text_tag_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must be a str"):
        ResultsStore(tmp_path).write(record("a", 0, 0.0, {"sweep": 3}))  # type: ignore[dict-item]
