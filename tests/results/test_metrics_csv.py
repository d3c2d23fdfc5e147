"""metrics.csv: exact columns, condition syntax, round trips and errors that name lines."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.errors import InputFileError
from mqoe.results import (
    MetricRow,
    format_condition,
    metrics_frame,
    parse_condition,
    read_metrics_csv,
    write_metrics_csv,
)

HEADER = "figure,profile,condition,metric,value,unit\n"

# Free-text fields: anything printable or not, incl. spaces, commas, quotes, line breaks.
free_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=20)
# Condition keys and values: anything but the separators.
condition_text = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters=";=,\r\n"), max_size=8
)
conditions = st.dictionaries(condition_text.filter(bool), condition_text, max_size=4)
metric_rows = st.builds(
    MetricRow,
    figure=free_text,
    profile=free_text,
    condition=conditions,
    metric=free_text,
    value=st.floats(),  # finite, nan and ±inf
    unit=free_text,
)


def comparable(row: MetricRow) -> tuple[object, ...]:
    # repr tells nan from nan-less values and -0.0 from 0.0, where == would not.
    return (row.figure, row.profile, dict(row.condition), row.metric, repr(row.value), row.unit)


@given(st.lists(metric_rows, max_size=6))
def test_rows_round_trip_through_the_file(rows: list[MetricRow]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_metrics_csv(Path(tmp) / "out" / "metrics.csv", rows)
        back = read_metrics_csv(path)
    assert [comparable(r) for r in back] == [comparable(r) for r in rows]


def test_file_has_the_exact_header_and_row_layout(tmp_path: Path) -> None:
    rows = [
        MetricRow("fig 3", "nokia-1", {"hogs": "4", "burst": "2.0"}, "missed, rate", 0.7, "%"),
        MetricRow("fig 3", "nokia-1", {}, "jank", float("nan"), "count"),
    ]
    path = write_metrics_csv(tmp_path / "metrics.csv", rows)
    assert path.read_text(encoding="utf-8") == (
        HEADER
        + 'fig 3,nokia-1,burst=2.0;hogs=4,"missed, rate",0.7,%\nfig 3,nokia-1,,jank,nan,count\n'
    )


def test_format_condition_sorts_keys() -> None:
    assert format_condition({"b": 1, "a": "x"}) == "a=x;b=1"
    assert format_condition({}) == ""


def test_format_condition_writes_bools_and_shortest_floats() -> None:
    text = format_condition({"on": True, "off": False, "one": 1.0, "p": 0.7, "tiny": 1e-5})
    assert text == "off=false;on=true;one=1.0;p=0.7;tiny=1e-05"


@pytest.mark.parametrize(
    "condition",
    [
        {"": "x"},
        {"a;b": "x"},
        {"a=b": "x"},
        {"a,b": "x"},
        {"a\nb": "x"},
        {"a": "x;y"},
        {"a": "1,2"},
    ],
)
def test_format_condition_rejects_separators_and_empty_keys(condition: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        format_condition(condition)


@given(
    st.dictionaries(
        condition_text.filter(bool),
        st.one_of(condition_text, st.integers(), st.floats(), st.booleans()),
        max_size=5,
    )
)
def test_parse_inverts_format(condition: dict[str, object]) -> None:
    parsed = parse_condition(format_condition(condition))
    assert sorted(parsed) == sorted(condition)
    for key, value in condition.items():
        if isinstance(value, bool):
            assert parsed[key] == str(value).lower()
        elif isinstance(value, float):
            assert parsed[key] == repr(value)
            assert repr(float(parsed[key])) == repr(value)
        else:
            assert parsed[key] == str(value)


@given(st.text(st.sampled_from("ab=;,\n"), max_size=12))
def test_text_that_parses_is_formatted_back_unchanged(text: str) -> None:
    try:
        parsed = parse_condition(text)
    except ValueError:
        return
    assert format_condition(parsed) == text


@pytest.mark.parametrize(
    "text", ["a", "=1", "a=1;", ";a=1", "a=1;;b=2", "a=1=2", "b=1;a=2", "a=1;a=2"]
)
def test_parse_condition_rejects_malformed_text(text: str) -> None:
    with pytest.raises(ValueError):
        parse_condition(text)


@pytest.mark.parametrize(
    ("content", "line", "expected"),
    [
        ("figure,profile,metric,condition,value,unit\n", 1, "expected the header"),
        ("", 1, "empty file"),
        (HEADER + "f,p,,m,1.0,s\nf,p,,m,1.0\n", 3, "expected 6 columns"),
        (HEADER + "f,p,,m,1.0,s,extra\n", 2, "expected 6 columns"),
        (HEADER + "f,p,,m,fast,s\n", 2, "expected a number"),
        (HEADER + "f,p,,m,,s\n", 2, "expected a number"),
        (HEADER + "f,p,,m,1_000,s\n", 2, "expected a number"),
        (HEADER + "f,p,b=1;a=2,m,1.0,s\n", 2, "sorted"),
        (HEADER + "f,p,a,m,1.0,s\n", 2, "key=value"),
        (HEADER + '"multi\nline",p,,m,1.0,s\nf,p,,m,x,s\n', 4, "expected a number"),
        (HEADER + '"unterminated,p,,m,1.0,s\n', 2, "not valid CSV"),
    ],
)
def test_bad_file_raises_input_file_error_naming_the_line(
    tmp_path: Path, content: str, line: int, expected: str
) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text(content, encoding="utf-8", newline="")
    with pytest.raises(InputFileError, match=expected) as info:
        read_metrics_csv(path)
    assert f"{path}:{line}:" in str(info.value)
    assert info.value.line == line


def test_missing_and_non_utf8_files_raise_input_file_error(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="cannot read"):
        read_metrics_csv(tmp_path / "missing.csv")
    path = tmp_path / "latin1.csv"
    path.write_bytes(HEADER.encode() + "f,p,,m,1.0,s\nf,p,,é,1.0,s\n".encode("latin-1"))
    with pytest.raises(InputFileError, match="UTF-8") as info:
        read_metrics_csv(path)
    assert info.value.line == 3


def test_reader_accepts_crlf_bom_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_bytes(
        "\ufeff".encode() + HEADER.replace("\n", "\r\n").encode() + b"\r\nf,p,,m,2,s\r\n"
    )
    assert read_metrics_csv(path) == [MetricRow("f", "p", {}, "m", 2.0, "s")]


def test_metrics_frame_has_the_csv_columns_and_condition_strings() -> None:
    frame = metrics_frame([MetricRow("f", "p", {"b": "2", "a": "1"}, "m", 3.0, "ms")])
    assert list(frame.columns) == ["figure", "profile", "condition", "metric", "value", "unit"]
    assert frame["condition"].tolist() == ["a=1;b=2"]
    assert frame["value"].tolist() == [3.0]
    empty = metrics_frame([])
    assert list(empty.columns) == list(frame.columns)
    assert str(empty["value"].dtype) == "float64"


@given(
    st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200).map(str.encode),
        st.text(st.sampled_from('abf1.e-,;="\r\n '), max_size=200).map(
            lambda body: (HEADER + body).encode()
        ),
    )
)
def test_garbage_either_parses_or_raises_input_file_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "metrics.csv"
        path.write_bytes(data)
        try:
            rows = read_metrics_csv(path)
        except InputFileError as exc:
            assert str(exc).startswith(str(path))
            return
        # Whatever was accepted is valid: it survives our own write and read unchanged.
        again = read_metrics_csv(write_metrics_csv(Path(tmp) / "again.csv", rows))
    assert [comparable(r) for r in again] == [comparable(r) for r in rows]
