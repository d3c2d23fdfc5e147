"""ResultsStore.read: a stored run comes back as the record that was written."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.errors import UserError
from mqoe.results import ResultsStore, RunRecord


def _record(run_id: str, metrics: dict[str, float | int | bool | str], **kw: object) -> RunRecord:
    fields: dict[str, object] = {
        "run_id": run_id,
        "scenario": "video",
        "profile": "nokia-1",
        "seed": 3,
        "params": {"pressure": "moderate", "fps": 60},
        "mqoe_version": "0.1.0",
        "started_utc": "2026-11-27T12:00:00+00:00",
        "wall_time_s": 2.5,
        "sim_duration_s": 120.0,
        "metrics": metrics,
    }
    return RunRecord(**(fields | kw))  # type: ignore[arg-type]


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def test_read_gives_back_metrics_tags_and_tables(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    frames = pd.DataFrame({"frame": [0, 1, 2], "ms": [16.6, 33.3, 8.0], "app": ["a", "b", "a"]})
    written = _record(
        "r1",
        {"drop_pct": 12.5, "frames": 3, "crashed": True, "rule": "bba", "gap": math.nan},
        tables={"frames": frames},
        tags={"sweep": "s", "sweep_id": "s-1"},
    )
    store.write(written)
    back = store.read("r1")
    assert back.tags == {"sweep": "s", "sweep_id": "s-1"}
    assert set(back.metrics) == set(written.metrics)
    for name, value in written.metrics.items():
        assert _same(value, back.metrics[name]), name
    assert back.params == {"pressure": "moderate", "fps": 60}
    assert (back.scenario, back.profile, back.seed) == ("video", "nokia-1", 3)
    assert list(back.tables) == ["frames"]
    pd.testing.assert_frame_equal(back.tables["frames"], frames)


def test_read_after_a_replacement_gives_the_new_run(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    store.write(_record("r1", {"x": 1.0}, tables={"t": pd.DataFrame({"v": [1, 2]})}))
    store.write(_record("r1", {"x": 2.0}, tables={"u": pd.DataFrame({"w": [5]})}))
    back = store.read("r1")
    assert back.metrics == {"x": 2.0}
    assert list(back.tables) == ["u"]
    store.write(_record("r1", {"x": 3.0}))  # a version without tables
    assert store.read("r1").tables == {}


def test_a_run_written_without_tag_names_reads_its_sweep_tags(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    store.write(_record("r1", {"x": 1.0}, tags={"sweep": "s", "sweep_id": "s-1"}))
    path = tmp_path / "runs" / "r1.parquet"
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({}), path)  # as an older mqoe wrote it
    back = store.read("r1")
    assert back.tags == {"sweep": "s", "sweep_id": "s-1"}
    assert back.metrics == {"x": 1.0}


def test_reading_a_missing_or_broken_run_is_a_user_error(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    with pytest.raises(UserError, match="no run 'nope'"):
        store.read("nope")
    store.write(_record("r1", {"x": 1.0}))
    (tmp_path / "runs" / "r1.parquet").write_bytes(b"not parquet")
    with pytest.raises(UserError, match="cannot read run 'r1'"):
        store.read("r1")


_names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: n not in {"run_id", "scenario", "profile", "seed", "params", "mqoe_version",
                        "started_utc", "wall_time_s", "sim_duration_s", "sweep", "sweep_id"}
)  # fmt: skip
_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(math.nan),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.booleans(),
    st.text(max_size=12),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(metrics=st.dictionaries(_names, _values, max_size=6))
def test_any_metrics_round_trip(
    tmp_path: Path, metrics: dict[str, float | int | bool | str]
) -> None:
    store = ResultsStore(tmp_path)
    store.write(_record("prop", metrics))
    back = store.read("prop").metrics
    assert list(back) == list(metrics)
    for name, value in metrics.items():
        assert _same(value, back[name]), (name, value, back[name])


_COLUMNS = st.sampled_from(
    [
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=True, allow_infinity=False),
        st.booleans(),
        st.text(max_size=6),
        st.one_of(st.none(), st.integers(0, 9)),
    ]
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), rows=st.integers(0, 6), width=st.integers(1, 4))
def test_a_table_reads_back_as_the_stored_file_without_its_run_id(
    tmp_path: Path, data: st.DataObject, rows: int, width: int
) -> None:
    """read() drops the store's run_id column before converting to pandas; the frame is
    the one converting the whole file and dropping the column afterwards gives."""
    columns = {
        f"c{i}": data.draw(st.lists(data.draw(_COLUMNS), min_size=rows, max_size=rows))
        for i in range(width)
    }
    root = Path(tempfile.mkdtemp(dir=tmp_path))  # one store per example
    store = ResultsStore(root)
    store.write(_record("t", {}, tables={"cells": pd.DataFrame(columns)}))
    stored = pq.read_table(root / "tables" / "cells" / "t.parquet")
    expected = stored.to_pandas().drop(columns="run_id")
    back = store.read("t").tables["cells"]
    pd.testing.assert_frame_equal(back, expected, check_exact=True)
    assert type(back.index) is type(expected.index)
