"""The results store: Parquet layout, replacement, validation and SQL over runs."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import mqoe.results.store as store_module
from mqoe.errors import UserError
from mqoe.results import ResultsStore, RunRecord, atomic_write, default_results_dir


def record(
    run_id: str,
    metrics: Mapping[str, float | int | bool | str],
    tables: Mapping[str, pd.DataFrame] | None = None,
    scenario: str = "frame-deadlines",
    params: Mapping[str, object] | None = None,
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        scenario=scenario,
        profile="nokia-1",
        seed=7,
        params=params if params is not None else {"hogs": 4, "alpha": 0.5},
        mqoe_version="0.1.0",
        started_utc="2024-05-01T12:00:00+00:00",
        wall_time_s=1.5,
        sim_duration_s=60.0,
        metrics=metrics,
        tables=tables or {},
    )


def frames(*durations_ms: float) -> pd.DataFrame:
    return pd.DataFrame({"frame": range(len(durations_ms)), "duration_ms": durations_ms})


def two_runs(root: Path) -> ResultsStore:
    store = ResultsStore(root)
    store.write(record("a", {"missed_rate": 0.25, "jank": 3}, {"frames": frames(10.0, 40.0)}))
    store.write(
        record(
            "b",
            {"missed_rate": 0.5, "startup_ms": 812.0},
            {"frames": frames(16.0), "launches": pd.DataFrame({"app": ["maps"]})},
            scenario="app-launch",
        )
    )
    return store


def test_layout_has_one_runs_row_and_run_id_tagged_tables(tmp_path: Path) -> None:
    two_runs(tmp_path)
    row = pd.read_parquet(tmp_path / "runs" / "a.parquet")
    assert list(row.columns) == [
        "run_id",
        "scenario",
        "profile",
        "seed",
        "params",
        "mqoe_version",
        "started_utc",
        "wall_time_s",
        "sim_duration_s",
        "missed_rate",
        "jank",
    ]
    assert len(row) == 1
    assert row["params"][0] == '{"alpha": 0.5, "hogs": 4}'
    assert json.loads(row["params"][0]) == {"alpha": 0.5, "hogs": 4}
    table = pd.read_parquet(tmp_path / "tables" / "frames" / "a.parquet")
    assert list(table.columns) == ["run_id", "frame", "duration_ms"]
    assert table["run_id"].tolist() == ["a", "a"]


def test_query_counts_runs_with_different_metric_columns(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    assert store.query("select count(*) as n from runs")["n"].tolist() == [2]


def test_metric_a_run_lacks_is_null(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    nulls = store.query("select run_id from runs where startup_ms is null")
    assert nulls["run_id"].tolist() == ["a"]
    runs = store.runs()
    assert runs["run_id"].tolist() == ["a", "b"]
    assert pd.isna(runs.loc[runs["run_id"] == "a", "startup_ms"]).all()
    assert runs.loc[runs["run_id"] == "b", "startup_ms"].tolist() == [812.0]


def test_table_returns_rows_of_all_runs_with_run_id(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    table = store.table("frames")
    assert list(table.columns) == ["run_id", "frame", "duration_ms"]
    assert list(zip(table["run_id"], table["duration_ms"], strict=True)) == [
        ("a", 10.0),
        ("a", 40.0),
        ("b", 16.0),
    ]
    assert store.table_names() == ["frames", "launches"]
    assert store.query("select app from launches")["app"].tolist() == ["maps"]


def test_rewriting_a_run_id_replaces_its_row_and_tables(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    store.write(record("b", {"missed_rate": 0.125}, {"frames": frames(5.0, 6.0, 7.0)}))
    runs = store.runs()
    assert len(runs) == 2
    assert runs.loc[runs["run_id"] == "b", "missed_rate"].tolist() == [0.125]
    assert store.query("select count(*) as n from frames where run_id = 'b'")["n"][0] == 3
    # The new record has no "launches" table, so the old one is gone with it.
    assert store.table_names() == ["frames"]
    assert not (tmp_path / "tables" / "launches").exists()


def test_tables_of_an_uncommitted_run_are_not_queried(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    # As if a writer crashed after the tables but before the runs/ row.
    frames(99.0).assign(run_id="c").to_parquet(tmp_path / "tables" / "frames" / "c.parquet")
    assert "c" not in set(store.table("frames")["run_id"])


def crash_on_runs_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the store's final write (the runs/ row) fail, as if the process died there."""

    def write(path: str | Path, fill: Callable[[Path], None]) -> Path:
        if Path(path).parent.name == "runs":
            raise KeyboardInterrupt
        return atomic_write(path, fill)

    monkeypatch.setattr(store_module, "atomic_write", write)


def test_run_interrupted_before_its_row_is_invisible_with_its_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = two_runs(tmp_path)
    crash_on_runs_row(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        store.write(record("c", {"m": 1.0}, {"frames": frames(1.0), "traces": frames(2.0)}))
    assert (tmp_path / "tables" / "traces" / "c.parquet").exists()
    assert store.runs()["run_id"].tolist() == ["a", "b"]
    assert "c" not in set(store.table("frames")["run_id"])
    assert store.table_names() == ["frames", "launches"]


def test_interrupted_rewrite_keeps_the_old_run_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = two_runs(tmp_path)
    crash_on_runs_row(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        store.write(record("a", {"missed_rate": 0.0}, {"frames": frames(1.0)}))
    # Neither gone nor shown with the new, never committed tables.
    assert store.runs()["missed_rate"].tolist() == [0.25, 0.5]
    a_frames = store.query("select duration_ms from frames where run_id = 'a'")
    assert a_frames["duration_ms"].tolist() == [10.0, 40.0]
    assert sorted(p.name for p in (tmp_path / "tables" / "frames").iterdir()) == [
        "a.parquet",
        "b.parquet",
    ]  # the staged new version was removed


@pytest.mark.parametrize("run_id", ["", "a/b", "../x", "a b", "ü"])
def test_bad_run_id_raises_value_error(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(ValueError, match="run_id"):
        ResultsStore(tmp_path).write(record(run_id, {"m": 1.0}))
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name", ["runs", "Frames", "1st", "bad-name", "a b", "", 'x"y'])
def test_bad_table_name_raises_value_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="table name"):
        ResultsStore(tmp_path).write(record("a", {"m": 1.0}, {name: frames(1.0)}))


@pytest.mark.parametrize("metric", ["seed", "run_id", "params", "Seed", ""])
def test_metric_clashing_with_fixed_column_raises_value_error(tmp_path: Path, metric: str) -> None:
    with pytest.raises(ValueError, match="metric name"):
        ResultsStore(tmp_path).write(record("a", {metric: 1.0}))


def test_table_with_its_own_run_id_column_raises_value_error(tmp_path: Path) -> None:
    table = pd.DataFrame({"run_id": ["x"], "v": [1]})
    with pytest.raises(ValueError, match="run_id column"):
        ResultsStore(tmp_path).write(record("a", {"m": 1.0}, {"t": table}))


def test_invalid_record_leaves_existing_run_in_place(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    with pytest.raises(ValueError):
        store.write(record("a", {"m": 1.0}, {"runs": frames(1.0)}))
    assert store.runs()["run_id"].tolist() == ["a", "b"]


def test_empty_or_missing_store_raises_user_error(tmp_path: Path) -> None:
    for root in (tmp_path / "missing", tmp_path):
        store = ResultsStore(root)
        with pytest.raises(UserError) as info:
            store.query("select 1")
        assert str(info.value) == f"no runs stored under {root} yet; run `mqoe run …` first"
        with pytest.raises(UserError, match="no runs stored"):
            store.table("frames")
        assert store.table_names() == []


def test_sql_error_raises_one_line_user_error(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    for sql in ("selec * from runs", "select nope from runs", "select * from missing_table", " "):
        with pytest.raises(UserError) as info:
            store.query(sql)
        message = str(info.value)
        assert message.startswith("query failed: ")
        assert "\n" not in message


def test_unknown_table_raises_user_error_listing_tables(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    with pytest.raises(UserError, match="stored tables: frames, launches"):
        store.table("frame")


@pytest.mark.parametrize("dirname", ["o'brien", "res[1]*?", 'q"uote'])
def test_root_path_with_quotes_or_glob_characters_works(tmp_path: Path, dirname: str) -> None:
    store = two_runs(tmp_path / dirname / "results")
    assert store.query("select count(*) as n from runs")["n"].tolist() == [2]
    assert len(store.table("frames")) == 3


def test_numpy_scalar_metrics_are_stored_as_plain_values(tmp_path: Path) -> None:
    import numpy as np

    store = ResultsStore(tmp_path)
    metrics: dict[str, Any] = {"n": np.int64(3), "x": np.float32(0.5), "ok": np.bool_(True)}
    store.write(record("a", metrics))
    row = store.runs().iloc[0]
    assert (row["n"], row["x"], bool(row["ok"])) == (3, 0.5, True)


def test_params_that_are_not_json_raise_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="params"):
        ResultsStore(tmp_path).write(record("a", {"m": 1.0}, params={"p": object()}))


def test_default_results_dir_follows_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MQOE_RESULTS", "/data/elsewhere")
    assert default_results_dir() == Path("/data/elsewhere")
    monkeypatch.delenv("MQOE_RESULTS")
    assert default_results_dir() == Path("mqoe-results")
