"""The report in headless Chromium: no console errors, every figure decoded, a screenshot.

Runs whenever Chromium is installed (Debian's `chromium`). Without it the tests skip,
except in CI (``CI=true``), where `make test` installs it and a missing browser fails.
The screenshot goes to ``$MQOE_REPORT_SCREENSHOT`` when set (CI keeps it as an
artifact), else to the test's temporary folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mqoe.report import build_report, write_report
from mqoe.report.browser import check_page, find_chromium
from mqoe.report.collect import PNG_SIGNATURE
from tests.report.conftest import (
    HOSTILE_ATTR,
    HOSTILE_NAME,
    HOSTILE_SCRIPT,
    comparison_rows,
    three_runs,
)

Make = Callable[..., Path]


@pytest.fixture(scope="module")
def chromium() -> str:
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no Chromium: `make test` installs Debian's chromium first")
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    return binary


def test_report_loads_cleanly_shows_every_figure_and_is_screenshotted(
    tmp_path: Path, make_reproduction: Make, chromium: str
) -> None:
    reps = tmp_path / "reproductions"
    make_reproduction(
        reps, HOSTILE_NAME, comparison=comparison_rows(HOSTILE_SCRIPT),
        runs=three_runs(hostile=True), summary=f"# {HOSTILE_ATTR}\n",
    )  # fmt: skip
    make_reproduction(
        reps, "plain-work", figures=("cdf", "bars", "timeline"), svg_only=("schematic",),
        comparison=None, runs=three_runs(),
    )  # fmt: skip
    report = build_report(reps, generated_utc="2026-01-02 03:04 UTC")
    page_path = write_report(report, tmp_path / "report.html")
    shot = Path(os.environ.get("MQOE_REPORT_SCREENSHOT") or tmp_path / "report-screenshot.png")

    page = check_page(page_path, screenshot=shot, width=1280, height=1000, chromium=chromium)

    assert page.console == []  # not even a warning: no CSP violation, no failed load
    assert page.dialogs == []  # no injected alert() ran
    assert all(url.startswith(("file:", "data:")) for url in page.requests), page.requests
    assert len(page.images) == report.figure_count == 6
    assert [i["alt"] for i in page.images] == [
        "drop-grid", "thread-states", "bars", "cdf", "schematic", "timeline"
    ]  # fmt: skip
    for image in page.images:
        assert image["scheme"] == "data" and image["decoded"], image
        assert image["width"] > 0 and image["height"] > 0, image
    for label in (HOSTILE_NAME, HOSTILE_SCRIPT, HOSTILE_ATTR):
        assert label in page.text
    assert page.title == "mqoe reproduction report"
    data = shot.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert int.from_bytes(data[16:20], "big") == 1280  # IHDR width


def test_the_check_sees_console_errors_dialogs_requests_and_broken_images(
    tmp_path: Path, chromium: str
) -> None:
    """The harness itself can fail: a page that does everything the report must not."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><title>bad</title><img alt='missing' src='missing.png'>"
        "<script>console.error('boom'); alert('injected');</script>",
        encoding="utf-8",
    )
    page = check_page(bad, chromium=chromium)
    assert "boom" in page.errors
    assert page.dialogs == ["injected"]
    assert any(url.endswith("/missing.png") for url in page.requests)
    (image,) = page.images
    assert not image["decoded"] and image["width"] == 0


def test_cli_screenshot_checks_the_written_report(
    tmp_path: Path, make_reproduction: Make, chromium: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mqoe.cli.main import main

    make_reproduction(tmp_path / "reps", "w", comparison=comparison_rows(), runs=three_runs())
    monkeypatch.setenv("MQOE_CHROMIUM", chromium)
    shot = tmp_path / "shot.png"
    assert main(["report", str(tmp_path / "reps"), "--screenshot", str(shot)]) == 0
    assert shot.read_bytes().startswith(PNG_SIGNATURE)
