"""comparison.csv: round trip, exact header, file:line errors, numeric rows."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.errors import InputFileError
from mqoe.results.comparison import (
    COLUMNS,
    VERDICTS,
    ComparisonRow,
    read_comparison_csv,
    write_comparison_csv,
)

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=30
)
_rows = st.builds(
    ComparisonRow,
    section=_text,
    what=_text,
    published=_text,
    simulated=_text,
    difference=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    tolerance=_text,
    verdict=st.sampled_from(VERDICTS),
    source=_text,
)


@given(st.lists(_rows, max_size=8))
def test_round_trip_keeps_every_field(
    tmp_path_factory: pytest.TempPathFactory, rows: list[ComparisonRow]
) -> None:
    path = tmp_path_factory.mktemp("cmp") / "comparison.csv"
    write_comparison_csv(path, rows)
    assert read_comparison_csv(path) == rows


def test_header_is_the_contract(tmp_path: Path) -> None:
    path = write_comparison_csv(tmp_path / "comparison.csv", [])
    assert path.read_text().splitlines() == [",".join(COLUMNS)]


def test_numeric_row_difference_and_verdicts() -> None:
    row = ComparisonRow.numeric("s", "drop", 19.0, 18.7, tolerance="±6", met=True, source="CND")
    assert row.difference == pytest.approx(-0.3)
    assert (row.published, row.simulated, row.verdict) == ("19", "18.7", "met")
    ref = ComparisonRow.numeric("s", "x", 1.0, math.nan, tolerance="", met=None, source="")
    assert ref.difference is None and ref.verdict == "reference" and ref.simulated == "nan"
    assert ComparisonRow.shape("s", "FULL > VAN", False).verdict == "not met"


def test_unknown_verdict_and_line_breaks_are_refused() -> None:
    with pytest.raises(ValueError, match="verdict"):
        ComparisonRow("s", "w", "1", "2", None, "", "maybe", "")
    with pytest.raises(ValueError, match="line break"):
        ComparisonRow("s", "w\r", "1", "2", None, "", "met", "")


def test_bad_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "comparison.csv"
    path.write_text(",".join(COLUMNS) + "\ns,w,1,2,abc,t,met,src\n")
    with pytest.raises(InputFileError, match=r"comparison\.csv:2: difference 'abc'"):
        read_comparison_csv(path)
    path.write_text("a,b\n")
    with pytest.raises(InputFileError, match=r"comparison\.csv:1: expected the header"):
        read_comparison_csv(path)
    path.write_text(",".join(COLUMNS) + "\ns,w,1,2,,t,perhaps,src\n")
    with pytest.raises(InputFileError, match=r":2: verdict 'perhaps'"):
        read_comparison_csv(path)
