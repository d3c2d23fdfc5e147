"""`mqoe report`: what a user types and sees."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mqoe.cli.main import main
from tests.report.conftest import comparison_rows, three_runs

Make = Callable[..., Path]


def test_report_writes_report_html_into_the_folder(
    tmp_path: Path, make_reproduction: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    make_reproduction(tmp_path, "a-work", comparison=comparison_rows(), runs=three_runs())
    make_reproduction(tmp_path, "b-work")
    assert main(["report", str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="w1-a-work"' in page and 'id="w2-b-work"' in page
    out = capsys.readouterr().out
    assert "2 reproductions, 4 figures" in out and "report.html" in out


def test_works_and_output_choose_what_and_where(
    tmp_path: Path, make_reproduction: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    make_reproduction(tmp_path, "a-work")
    make_reproduction(tmp_path, "b-work")
    target = tmp_path / "site" / "b.html"
    assert main(["report", str(tmp_path), "--works", "b-work", "--output", str(target)]) == 0
    page = target.read_text(encoding="utf-8")
    assert "b-work" in page and "a-work" not in page
    assert not (tmp_path / "report.html").exists()


def test_problems_are_warnings_and_mistakes_are_one_line_errors(
    tmp_path: Path, make_reproduction: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = make_reproduction(tmp_path, "a-work")
    (folder / "comparison.csv").write_text("nonsense\n")
    assert main(["report", str(folder)]) == 0
    assert "warning:" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    error = capsys.readouterr().err
    assert "no such folder" in error and "Traceback" not in error
    assert main(["report", str(tmp_path), "--works", "zzz"]) == 2
    assert "available: a-work" in capsys.readouterr().err
