"""``dumpsys gfxinfo`` files captured by other people on real phones (the shared corpus,
``shared/data/real/gfxinfo``): the figures its README computed by hand, the same figures
from the files re-encoded as Windows and old adb write them, and the CLI's text and JSON."""

from __future__ import annotations

import argparse
import codecs
import gzip
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mqoe.analysis.gfxinfo.data import read_gfxinfo
from mqoe.analysis.gfxinfo.report import GfxinfoReport, analyze
from mqoe.cli import analyze_gfxinfo as cli
from mqoe.metrics.jank import FROZEN_FRAME_NS, SLOW_FRAME_NS

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "gfxinfo"
TWO_WINDOWS = REAL / "emeron__gfxinfo_android14_two_windows.txt"
SUMMARY_ONLY = REAL / "toster__instagram_summary_only.txt"
LIST = "com.example.app/com.example.app.ListActivity"
DETAIL = "com.example.app/com.example.app.DetailActivity"


def _corpus(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"real gfxinfo corpus not found: looked for {path}")
    return path


def _one(table: pd.DataFrame, **where: Any) -> dict[str, Any]:
    mask = pd.Series(True, index=table.index)
    for key, value in where.items():
        mask &= table[key] == value
    rows = table[mask]
    assert len(rows) == 1, where
    return {str(k): v for k, v in rows.iloc[0].to_dict().items()}


def _plain_rows(path: Path) -> list[dict[str, Any]]:
    """The PROFILEDATA rows with their window, read with nothing but str.split: an
    independent reading to compare the analyser's with."""
    rows: list[dict[str, Any]] = []
    window, header, inside = "", None, False
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("Window: "):
            window = line[len("Window: ") :]
        elif line == "---PROFILEDATA---":
            inside, header = not inside, None
        elif inside and header is None:
            header = line.rstrip(",").split(",")
        elif inside and line:
            assert header is not None
            values = dict(zip(header, map(int, line.rstrip(",").split(",")), strict=True))
            rows.append({**values, "window": window})
    return rows


def _slow(duration: int) -> bool:
    return SLOW_FRAME_NS < duration <= FROZEN_FRAME_NS


@pytest.fixture(scope="module")
def two_windows() -> GfxinfoReport:
    return analyze(read_gfxinfo(_corpus(TWO_WINDOWS)))


# -- the two-window Android 14 dump (README: hand-computed figures) -----------------------------


def test_two_window_dump_has_the_readme_row_counts(two_windows: GfxinfoReport) -> None:
    process = _one(two_windows.packages, package="com.example.app")
    # README: 105 per-frame rows; 33 with Flags != 0; 1 (unflagged) with FrameCompleted = 0
    assert (process["rows"], process["flagged_rows"]) == (105, 33)
    assert two_windows.warnings["invalid_timestamp_rows"] == 1
    assert process["invalid_rows"] == 1
    windows = two_windows.windows
    assert sorted(windows["window"]) == sorted([LIST, DETAIL])
    # README: of the 71 normal frames, 14 take longer than 16.67 ms, none longer than 700 ms
    assert windows["frames"].sum() == 71
    assert windows["sr"].sum() == 14 and windows["ff"].sum() == 0
    assert process["window_frames"] == 71


def test_two_window_dump_counts_slow_frames_per_window(two_windows: GfxinfoReport) -> None:
    plain = _plain_rows(_corpus(TWO_WINDOWS))
    assert len(plain) == 105
    for name in (LIST, DETAIL):
        normal = [
            r["FrameCompleted"] - r["IntendedVsync"]
            for r in plain
            if r["window"] == name and r["Flags"] == 0 and r["FrameCompleted"] > 0
        ]
        row = _one(two_windows.windows, window=name)
        assert (row["frames"], row["sr"], row["ff"]) == (len(normal), sum(map(_slow, normal)), 0)
    assert _one(two_windows.windows, window=LIST)["frames"] == 19
    assert _one(two_windows.windows, window=DETAIL)["frames"] == 52


def test_two_window_dump_counts_a_vsync_drawn_by_both_windows_once(
    two_windows: GfxinfoReport,
) -> None:
    process = _one(two_windows.packages, package="com.example.app")
    # README: 10 vsyncs are drawn by both windows, so the process drew 71 - 10 frames
    assert process["shared_vsyncs"] == 10
    assert process["frames"] == 71 - 10
    assert process["windows"] == 2
    # the process frame of a vsync is its latest-completing window frame
    latest: dict[int, int] = defaultdict(int)
    for r in _plain_rows(TWO_WINDOWS):
        if r["Flags"] == 0 and r["FrameCompleted"] > 0:
            latest[r["IntendedVsync"]] = max(latest[r["IntendedVsync"]], r["FrameCompleted"])
    assert process["sr"] == sum(_slow(done - vsync) for vsync, done in latest.items())
    assert process["sr"] == 10 and process["ff"] == 0


def test_two_window_dump_reports_its_own_summaries_beside_the_computed_figures(
    two_windows: GfxinfoReport,
) -> None:
    process = _one(two_windows.packages, package="com.example.app")
    # README: the dump's own summary says 130 frames for the process and 19 + 84 per window
    assert process["reported_total_frames_rendered"] == 130
    assert process["reported_janky_frames"] == 13
    assert _one(two_windows.windows, window=LIST)["reported_total_frames_rendered"] == 19
    assert _one(two_windows.windows, window=DETAIL)["reported_total_frames_rendered"] == 84
    assert _one(two_windows.windows, window=DETAIL)["reported_p90_ms"] == 25
    payload = two_windows.to_json()
    json.dumps(payload)
    assert {w["window"]: w["reported_total_frames_rendered"] for w in payload["windows"]} == {
        LIST: 19,
        DETAIL: 84,
    }


def test_android14_swapped_interval_labels_are_read_by_value(two_windows: GfxinfoReport) -> None:
    # AOSP 12-14 print the FrameInterval and FrameStartTime labels in each other's place
    frames = two_windows.frames
    interval = frames["frame_interval_ns"].dropna()
    assert interval.between(1, 10**9).all() and set(interval) >= {8_333_333, 16_666_667}
    start = frames["frame_start_time_ns"].to_numpy(dtype="int64")
    handle = frames["handle_input_start_ns"].to_numpy(dtype="int64")
    assert ((start <= handle) & (handle - start < 10**7)).all()


# -- the summary-only dump (no framestats) ----------------------------------------------------


def test_summary_only_dump_reports_the_summary_and_no_per_frame_figures() -> None:
    report = analyze(read_gfxinfo(_corpus(SUMMARY_ONLY)))
    row = _one(report.packages, package="com.instagram.android")
    assert row["pid"] == 31185 and not row["framestats"]
    for unknown in ("rows", "frames", "sr", "ff", "sr_aware", "ff_aware", "window_frames"):
        assert pd.isna(row[unknown]), unknown
    for unknown in ("sr_pct", "ff_pct", "frame_p50_ms", "frame_p99_ms"):
        assert math.isnan(row[unknown]), unknown
    # README: 51 frames rendered, 9 janky, per the summary
    expected = {
        "total_frames_rendered": 51, "janky_frames": 9, "janky_pct": 17.65,
        "janky_legacy_frames": 13, "janky_legacy_pct": 25.49, "p50_ms": 7, "p90_ms": 48,
        "p95_ms": 109, "p99_ms": 300, "missed_vsync": 7, "high_input_latency": 83,
        "slow_ui_thread": 9, "slow_bitmap_uploads": 0, "slow_issue_draw_commands": 2,
        "frame_deadline_missed": 9, "frame_deadline_missed_legacy": 9, "gpu_p50_ms": 5,
        "gpu_p99_ms": 8,
    }  # fmt: skip
    assert {k: row[f"reported_{k}"] for k in expected} == expected
    cpu = report.histograms[report.histograms["kind"] == "cpu"]
    assert cpu["frames"].sum() == 51 and len(report.windows) == 0
    payload = report.to_json()
    package = payload["packages"][0]
    assert package["frames"] is None and package["sr"] is None and package["sr_pct"] is None
    assert package["reported_total_frames_rendered"] == 51
    histogram = next(h for h in payload["histograms"] if h["kind"] == "cpu")
    assert histogram["buckets"]["300"] == 1 and sum(histogram["buckets"].values()) == 51


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_summary_only_dump_prints_unknown_not_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run([str(_corpus(SUMMARY_ONLY))]) == 0
    text = capsys.readouterr().out
    table = text[: text.index("no framestats rows")]
    line = next(x for x in table.splitlines() if "31185" in x)
    cells = [c.strip() for c in line.strip("│┃ ").split("│")]
    # windows, frames, sr, ff, sr %, ff %: unknown, not 0; the dump's own summary beside
    assert cells[1:8] == ["31185", *["unknown"] * 6]
    assert "51" in cells and "17.65" in cells
    assert "0" not in cells
    assert "com.instagram.android 31185: no framestats rows" in text


# -- the same files as Windows and old adb write them ------------------------------------------


def _variants(text: str) -> dict[str, bytes]:
    lf = text.replace("\r\n", "\n")
    return {
        "powershell-utf16le-bom-crlf": codecs.BOM_UTF16_LE
        + lf.replace("\n", "\r\n").encode("utf-16-le"),
        "utf16be-bom": codecs.BOM_UTF16_BE + lf.encode("utf-16-be"),
        "utf16le-no-bom": lf.encode("utf-16-le"),
        "utf8-bom": codecs.BOM_UTF8 + lf.encode(),
        "cr": lf.replace("\n", "\r").encode(),
        "crlf": lf.replace("\n", "\r\n").encode(),
        "cr-cr-lf": lf.replace("\n", "\r\r\n").encode(),
        "gzip-utf16": gzip.compress(codecs.BOM_UTF16_LE + lf.encode("utf-16-le")),
    }


def _tables(report: GfxinfoReport) -> dict[str, pd.DataFrame]:
    return {
        name: table.drop(columns=["file"])
        for name, table in (
            ("packages", report.packages),
            ("windows", report.windows),
            ("summaries", report.summaries),
            ("histograms", report.histograms),
            ("gaps", report.gaps),
        )
    }


@pytest.mark.parametrize("source", [TWO_WINDOWS, SUMMARY_ONLY], ids=["two_windows", "summary"])
def test_corpus_reencoded_reads_the_same_as_the_plain_file(tmp_path: Path, source: Path) -> None:
    plain = _tables(analyze(read_gfxinfo(_corpus(source))))
    for name, data in _variants(source.read_text()).items():
        path = tmp_path / f"{name}.txt"
        path.write_bytes(data)
        report = analyze(read_gfxinfo(path))
        for table, expected in plain.items():
            pd.testing.assert_frame_equal(_tables(report)[table], expected, obj=f"{name}/{table}")
