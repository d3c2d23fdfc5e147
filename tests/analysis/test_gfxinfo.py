"""``dumpsys gfxinfo`` framestats: hand-made dumps with hand-computed SR/FF, stages, buffer
rules and gaps; round trips from the generator's ground truth; errors by line; fuzzing."""

from __future__ import annotations

import argparse
import gzip
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis import gfxinfo as gfx
from mqoe.analysis.gfxinfo import parse as gfxinfo_parse
from mqoe.analysis.gfxinfo.data import parse_gfxinfo_text, read_gfxinfo
from mqoe.analysis.gfxinfo.format import (
    COLUMNS,
    LAYOUT_NEW,
    LAYOUT_OLD,
    NO_INPUT,
    REQUIRED_COLUMNS,
    SUMMARY_COLUMNS,
)
from mqoe.analysis.gfxinfo.report import GfxinfoReport, analyze
from mqoe.analysis.gfxinfo.rows import Header, parse_rows, parse_rows_slowly
from mqoe.cli import analyze_gfxinfo as cli
from mqoe.errors import InputFileError, UserError
from mqoe.generators.gfxinfo import SynthTruth, _aosp_percentile, synth_gfxinfo

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "gfxinfo"
MS = 1_000_000
T0 = 5_000_000_000_000  # CLOCK_MONOTONIC ns of the first hand-made frame
OLD14 = LAYOUT_OLD[:14]  # Android 6–7: no buffer columns at all


# -- hand-made dumps ---------------------------------------------------------------------------


def _frame(
    start: int,
    duration: int,
    flags: int = 0,
    dequeue: int = 50_000,
    present: int = 0,
    interval: int = 16_666_667,
) -> dict[str, int]:
    """A frame whose timestamps split ``duration`` into tenths, stage by stage."""
    t = [start + duration * k // 10 for k in range(11)]
    return {
        "Flags": flags, "FrameTimelineVsyncId": 7, "IntendedVsync": start, "Vsync": start,
        "OldestInputEvent": NO_INPUT, "NewestInputEvent": 0, "InputEventId": 0,
        "HandleInputStart": t[1], "AnimationStart": t[2], "PerformTraversalsStart": t[3],
        "DrawStart": t[4], "FrameDeadline": start + interval, "FrameStartTime": t[1],
        "FrameInterval": interval, "WorkloadTarget": interval, "SyncQueued": t[5],
        "SyncStart": t[6], "IssueDrawCommandsStart": t[7], "SwapBuffers": t[9],
        "FrameCompleted": start + duration, "DequeueBufferDuration": dequeue,
        "QueueBufferDuration": 30_000, "GpuCompleted": t[10] + 1,
        "SwapBuffersCompleted": t[10], "DisplayPresentTime": present,
        "CommandSubmissionCompleted": t[9],
    }  # fmt: skip


def _block(header: Sequence[str], frames: Sequence[dict[str, int]], window: str = "") -> str:
    lines = [f"\t{window} (visibility=0)"] if window else []
    lines += ["---PROFILEDATA---", ",".join(header) + ","]
    lines += [",".join(str(f[name]) for name in header) + "," for f in frames]
    return "\n".join([*lines, "---PROFILEDATA---", ""])


def _section(package: str, pid: int, body: str, summary: str = "") -> str:
    return (
        f"** Graphics info for pid {pid} [{package}] **\n\n{summary}\nProfile data in ms:\n{body}"
    )


def _dump(*sections: str) -> str:
    head = "Applications Graphics Acceleration Info:\nUptime: 1 Realtime: 1\n\n"
    return head + "\n".join(sections) + "View hierarchy:\n\n  x\n\nTotal ViewRootImpl: 1\n"


def _write(tmp_path: Path, text: str | bytes, name: str = "gfx.txt") -> Path:
    path = tmp_path / name
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8", newline="")
    else:
        path.write_bytes(text)
    return path


def _one(report: GfxinfoReport, package: str) -> dict[str, Any]:
    rows = report.packages[report.packages["package"] == package]
    assert len(rows) == 1
    return {str(k): v for k, v in rows.iloc[0].to_dict().items()}


# -- rows, columns, durations ------------------------------------------------------------------


def test_columns_are_mapped_by_header_name_in_any_order() -> None:
    header = list(reversed(LAYOUT_NEW))
    frame = _frame(T0, 10 * MS)
    data = parse_gfxinfo_text(_dump(_section("p", 1, _block(header, [frame]))))
    row = data.frames.iloc[0]
    for name in header:
        expected = frame[name]
        value = row[COLUMNS[name]]
        assert (value is pd.NA) if expected == NO_INPUT and "Input" in name else value == expected


def test_slow_and_frozen_use_the_shared_thresholds_and_skip_flagged_rows() -> None:
    durations = [10 * MS, 16_670_000, 16_670_001, 700_000_000, 700_000_001]
    frames = [_frame(T0 + i * 10**9, d) for i, d in enumerate(durations)]
    frames.append(_frame(T0 + 9 * 10**9, 900 * MS, flags=1))  # window change: not counted
    frames.append(_frame(T0 + 10**10, 50 * MS, flags=2))  # RenderThread animation
    report = analyze(parse_gfxinfo_text(_dump(_section("p", 1, _block(OLD14, frames)))))
    row = _one(report, "p")
    # 16.670001 and 700 ms are slow; 700.000001 ms is frozen; 16.67 ms exactly is not slow
    assert (row["frames"], row["sr"], row["ff"], row["rows"], row["flagged_rows"]) == (
        5,
        2,
        1,
        7,
        2,
    )
    assert row["sr_pct"] == pytest.approx(40.0) and row["ff_pct"] == pytest.approx(20.0)
    assert report.frames["duration_ns"].tolist()[:5] == durations
    assert report.frames["normal"].tolist() == [True] * 5 + [False, False]


def test_stages_partition_the_frame_duration() -> None:
    frame = _frame(T0, 100 * MS)
    frames = analyze(parse_gfxinfo_text(_dump(_section("p", 1, _block(OLD14, [frame]))))).frames
    got = {stage: int(frames.iloc[0][stage]) for stage in gfx.STAGES}
    # tenths: delay 1, input 1, animation 1, traversal 1, draw 1, sync wait 1, sync 1,
    # issue 2 (IssueDrawCommandsStart at 7/10, SwapBuffers at 9/10), swap 1
    expected = [10, 10, 10, 10, 10, 10, 10, 20, 10]
    assert list(got.values()) == [e * MS for e in expected]
    assert sum(got.values()) == int(frames.iloc[0]["duration_ns"])


def test_unused_oldest_input_event_reads_as_missing() -> None:
    used = _frame(T0, 5 * MS) | {"OldestInputEvent": T0 - 3 * MS, "NewestInputEvent": T0 - MS}
    data = parse_gfxinfo_text(
        _dump(_section("p", 1, _block(OLD14, [_frame(T0 - 10**9, 5 * MS), used])))
    )
    oldest = data.frames["oldest_input_event_ns"]
    assert oldest.isna().tolist() == [True, False]
    assert data.frames["newest_input_event_ns"].isna().tolist() == [True, False]
    assert int(oldest.iloc[1]) == T0 - 3 * MS


def test_packages_blocks_windows_and_repeated_dumps() -> None:
    a1 = [_frame(T0 + i * 20 * MS, 8 * MS) for i in range(3)]
    a2 = [_frame(T0 + i * 20 * MS, 30 * MS) for i in range(3, 5)]
    b = [_frame(T0 + i * 20 * MS, 40 * MS) for i in range(4)]
    first = _section("com.a", 10, _block(OLD14, a1, "com.a/Main") + _block(OLD14, a2, "com.a/Dlg"))
    again = _section("com.a", 10, _block(OLD14, a1[1:] + a2, "com.a/Main"))  # a later dump
    text = _dump(first, _section("com.b", 20, _block(OLD14, b)), again)
    data = parse_gfxinfo_text(text)
    assert data.warnings.duplicate_rows == 4
    report = analyze(data)
    assert (_one(report, "com.a")["frames"], _one(report, "com.a")["sr"]) == (5, 2)
    assert (_one(report, "com.b")["frames"], _one(report, "com.b")["sr"]) == (4, 4)
    windows = data.frames[data.frames["package"] == "com.a"]["window"].tolist()
    assert windows == ["com.a/Main"] * 3 + ["com.a/Dlg"] * 2
    assert data.sections.set_index("package")["sections"].to_dict() == {"com.a": 2, "com.b": 1}


def test_a_new_header_inside_a_block_switches_layout() -> None:
    body = _block(OLD14, [_frame(T0, 20 * MS)]).replace("---PROFILEDATA---\n", "", 1)
    body = body.rsplit("---PROFILEDATA---", 1)[0]
    second = [
        ",".join(LAYOUT_NEW) + ",",
        ",".join(str(_frame(T0 + 10**9, 30 * MS)[n]) for n in LAYOUT_NEW) + ",",
    ]
    text = _dump(
        _section("p", 1, "---PROFILEDATA---\n" + body + "\n".join(second) + "\n---PROFILEDATA---\n")
    )
    frames = parse_gfxinfo_text(text).frames
    assert frames["frame_interval_ns"].isna().tolist() == [True, False]
    assert (frames["frame_completed_ns"] - frames["intended_vsync_ns"]).tolist() == [
        20 * MS,
        30 * MS,
    ]


def test_profiledata_without_a_section_belongs_to_an_unknown_package() -> None:
    data = parse_gfxinfo_text(_block(OLD14, [_frame(T0, 5 * MS)]))
    assert data.frames["package"].tolist() == ["(unknown)"]
    assert data.frames["pid"].tolist() == [-1]
    assert data.warnings.profiledata_outside_section == 1


# -- summary lines -----------------------------------------------------------------------------

_SUMMARY = """Stats since: 11480279581474ns
Total frames rendered: 37
Janky frames: 5 (13.51%)
Janky frames (legacy): 6 (16.22%)
50th percentile: 6ms
90th percentile: 25ms
95th percentile: 32ms
99th percentile: 48ms
Number Missed Vsync: 1
Number High input latency: 2
Number Slow UI thread: 3
Number Slow bitmap uploads: 4
Number Slow issue draw commands: 5
Number Frame deadline missed: 7
Number Frame deadline missed (legacy): 8
HISTOGRAM: 5ms=20 6ms=3 7ms=2 48ms=1 4950ms=0
50th gpu percentile: 3ms
90th gpu percentile: 5ms
95th gpu percentile: 6ms
99th gpu percentile: 9ms
GPU HISTOGRAM: 1ms=0 2ms=10
Pipeline=Skia (OpenGL)
"""


def test_summary_lines_are_read_with_their_values() -> None:
    window = "Window: p/p.Main\n" + _SUMMARY.replace(
        "Total frames rendered: 37", "Total frames rendered: 30"
    )
    text = _dump(_section("p", 1, window + _block(LAYOUT_NEW, [_frame(T0, 5 * MS)]), _SUMMARY))
    data = parse_gfxinfo_text(text)
    process, per_window = data.summaries.to_dict(orient="records")
    assert process["scope"] == "process" and per_window["scope"] == "p/p.Main"
    expected = {
        "stats_since_ns": 11480279581474, "total_frames_rendered": 37, "janky_frames": 5,
        "janky_pct": 13.51, "janky_legacy_frames": 6, "janky_legacy_pct": 16.22,
        "p50_ms": 6, "p90_ms": 25, "p95_ms": 32, "p99_ms": 48, "missed_vsync": 1,
        "high_input_latency": 2, "slow_ui_thread": 3, "slow_bitmap_uploads": 4,
        "slow_issue_draw_commands": 5, "frame_deadline_missed": 7,
        "frame_deadline_missed_legacy": 8, "gpu_p50_ms": 3, "gpu_p90_ms": 5, "gpu_p95_ms": 6,
        "gpu_p99_ms": 9,
    }  # fmt: skip
    assert {k: process[k] for k in expected} == expected
    assert per_window["total_frames_rendered"] == 30
    cpu = data.histograms[(data.histograms["kind"] == "cpu") & (data.histograms["summary"] == 0)]
    # buckets with frames only: AOSP prints every bucket, most of them empty
    assert dict(zip(cpu["bucket_ms"], cpu["frames"], strict=True)) == {5: 20, 6: 3, 7: 2, 48: 1}
    row = _one(analyze(data), "p")
    assert row["reported_total_frames_rendered"] == 37  # the process's record, not the window's
    assert row["reported_janky_pct"] == 13.51


def test_nan_percent_and_malformed_summary_lines() -> None:
    summary = (
        "Total frames rendered: 0\nJanky frames: 0 (nan%)\n50th percentile: lots\nNumber Weird: 3\n"
    )
    data = parse_gfxinfo_text(_dump(_section("idle", 7, "", summary)))
    record = data.summaries.iloc[0]
    assert record["janky_frames"] == 0 and math.isnan(record["janky_pct"])
    assert data.warnings.malformed_summary_lines == 2
    row = _one(analyze(data), "idle")
    # no PROFILEDATA block: the per-frame figures are unknown, not zero
    assert pd.isna(row["frames"]) and pd.isna(row["sr"]) and math.isnan(row["sr_pct"])
    assert pd.isna(row["sr_aware"]) and pd.isna(row["ff_aware"]) and not row["framestats"]
    assert row["reported_total_frames_rendered"] == 0


def test_aosp_percentile_walks_down_from_the_slowest_bucket() -> None:
    histogram = {5: 50, 6: 30, 20: 20}
    assert [_aosp_percentile(histogram, p) for p in (50, 90, 99)] == [6, 20, 20]
    assert _aosp_percentile({5: 0, 4950: 0}, 50) == 4950  # what phones print with no frames


# -- buffer-aware counting ---------------------------------------------------------------------


def test_present_rule_hides_slow_frames_whose_predecessor_stayed_one_interval() -> None:
    v = 16_666_667
    frames = [
        _frame(T0, 8 * MS, present=T0 + 2 * v),
        _frame(T0 + v, 30 * MS, present=T0 + 3 * v),  # a new frame at the next refresh: hidden
        _frame(T0 + 2 * v, 30 * MS, present=T0 + 5 * v),  # one refresh repeated: visible
        _frame(T0 + 4 * v, 800 * MS, present=T0 + 55 * v),  # frozen, visible
        _frame(T0 + 5 * v, 30 * MS, present=-1),  # no present time: the dequeue rule judges
        _frame(T0 + 60 * v, 30 * MS, present=T0 + 62 * v, flags=1),  # counted as shown only
        _frame(T0 + 61 * v, 40 * MS, present=T0 + 63 * v),  # hidden behind the flagged frame
    ]
    frames[4]["DequeueBufferDuration"] = 20 * MS  # 30 − 20 ≤ 16.67 ms: hidden
    report = analyze(parse_gfxinfo_text(_dump(_section("p", 1, _block(LAYOUT_NEW, frames)))))
    row = _one(report, "p")
    assert (row["sr"], row["ff"], row["sr_aware"], row["ff_aware"]) == (4, 1, 1, 1)
    assert report.frames["aware_rule"].tolist() == [
        "dequeue", "present", "present", "present", "dequeue", "none", "present",
    ]  # fmt: skip
    assert row["aware_rule"] == "dequeue+present"


def test_dequeue_rule_hides_frames_slow_only_from_waiting_for_a_buffer() -> None:
    frames = [
        _frame(T0, 30 * MS, dequeue=20 * MS),  # 10 ms without the wait: hidden
        _frame(T0 + 10**9, 30 * MS, dequeue=5 * MS),  # 25 ms without it: visible
        _frame(T0 + 2 * 10**9, 30 * MS, dequeue=30 * MS - 16_670_000),  # exactly at the limit
    ]
    report = analyze(parse_gfxinfo_text(_dump(_section("p", 1, _block(LAYOUT_OLD, frames)))))
    row = _one(report, "p")
    assert (row["sr"], row["sr_aware"], row["aware_rule"]) == (3, 1, "dequeue")
    assert report.frames["hidden"].tolist() == [True, False, True]


def test_no_buffer_columns_means_no_aware_counts(tmp_path: Path) -> None:
    frames = [_frame(T0, 30 * MS)]
    path = _write(tmp_path, _dump(_section("p", 1, _block(OLD14, frames))))
    payload = analyze(read_gfxinfo(path)).to_json()
    package = payload["packages"][0]
    assert package["sr"] == 1 and package["sr_aware"] is None and package["ff_aware"] is None
    assert package["aware_unjudged_slow"] == 1


# -- temporal clustering -----------------------------------------------------------------------


def test_gaps_between_slow_frames_count_normal_frames_only() -> None:
    kinds = ["ok", "sr", "sr", "flag", "ff", "ok", "sr", "ok", "ff", "ok"]
    duration = {"ok": 8 * MS, "sr": 40 * MS, "ff": 900 * MS, "flag": 40 * MS}
    frames = [
        _frame(T0 + i * 10**9, duration[k], flags=4 if k == "flag" else 0)
        for i, k in enumerate(kinds)
    ]
    gaps = analyze(parse_gfxinfo_text(_dump(_section("p", 1, _block(OLD14, frames))))).gaps
    # normal ranks: ok0 sr1 sr2 ff3 ok4 sr5 ok6 ff7 ok8 (the flagged row has no rank)
    sr_sr = gaps[gaps["kind"] == "sr_to_sr"]
    ff_sr = gaps[gaps["kind"] == "ff_to_sr"]
    assert sr_sr["gap_frames"].tolist() == [1, 3]
    assert ff_sr["gap_frames"].tolist() == [2]  # the last FF has no SR after it
    assert sr_sr["gap_ms"].tolist() == [1000.0, 4000.0]
    assert ff_sr["gap_after_end_ms"].tolist() == [(2 * 10**9 - 900 * MS) / 1e6]


# -- errors and forgiven damage ----------------------------------------------------------------

_GOOD = _frame(T0, 5 * MS)
_GOOD_ROW = ",".join(str(_GOOD[n]) for n in OLD14) + ","


def _broken(row: str) -> str:
    good = _block(OLD14, [_GOOD])
    return _dump(
        _section(
            "p",
            1,
            good.replace("---PROFILEDATA---\n", "", 1)
            .join(["---PROFILEDATA---\n", ""])
            .replace(_GOOD_ROW, _GOOD_ROW + "\n" + row),
        )
    )


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (_GOOD_ROW.replace(",", ",,", 1), "expected 14 comma-separated fields"),
        (_GOOD_ROW[: _GOOD_ROW.rindex(",", 0, -1) + 1], "found 13"),
        (_GOOD_ROW.replace(str(T0), "5e12", 1), "IntendedVsync: expected an integer"),
        (_GOOD_ROW.replace(str(T0), "99999999999999999999", 1), "expected an integer (int64)"),
        ("View hierarchy:", "expected a PROFILEDATA row"),
        ("\x00\x00\x00", "expected a PROFILEDATA row"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, row: str, message: str) -> None:
    text = _broken(row)
    path = _write(tmp_path, text)
    line = text.splitlines().index(row) + 1
    with pytest.raises(InputFileError) as info:
        read_gfxinfo(path)
    assert info.value.line == line and message in str(info.value)
    assert str(path) in str(info.value)
    data = read_gfxinfo(path, skip_bad_lines=True)
    assert len(data.frames) == 1 and data.warnings.skipped_lines == 1
    assert data.warnings.skipped_examples[0][1] == line


@pytest.mark.parametrize(
    ("block", "message", "line"),
    [
        (f"---PROFILEDATA---\n{_GOOD_ROW}\n", "row before the header", 3),
        (
            "---PROFILEDATA---\nFlags,IntendedVsync,Vsync,\n1,2,3,\n",
            "lacks column FrameCompleted",
            3,
        ),
        (
            "---PROFILEDATA---\nFlags,Flags,IntendedVsync,FrameCompleted\n",
            "repeats column Flags",
            3,
        ),
        ("---PROFILEDATA---\nhello world\n", "expected the PROFILEDATA header", 3),
    ],
)
def test_bad_blocks_are_errors(block: str, message: str, line: int) -> None:
    text = "** Graphics info for pid 1 [p] **\n" + block + "---PROFILEDATA---\n"
    with pytest.raises(InputFileError) as info:
        parse_gfxinfo_text(text, name="dump.txt")
    assert info.value.line == line and message in str(info.value)
    assert "dump.txt" in str(info.value)
    assert parse_gfxinfo_text(text, skip_bad_lines=True).warnings.skipped_lines >= 1


@pytest.mark.parametrize("content", [b"", b"hello\nworld\n", b"\x89PNG\r\n\x1a\n\x00\x00garbage"])
def test_a_file_without_gfxinfo_is_an_error(tmp_path: Path, content: bytes) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(InputFileError, match="no dumpsys gfxinfo output"):
        read_gfxinfo(path)
    good = _write(tmp_path, _dump(_section("p", 1, _block(OLD14, [_GOOD]))), "good.txt")
    data = read_gfxinfo([path, good], skip_bad_lines=True)
    assert data.warnings.files_without_content == [str(path)] and len(data.frames) == 1


def test_missing_file_and_directory_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no such file"):
        read_gfxinfo(tmp_path / "nope.txt")
    with pytest.raises(InputFileError, match="is a folder"):
        read_gfxinfo(tmp_path)


def test_truncated_file_keeps_complete_rows(tmp_path: Path) -> None:
    frames = [_frame(T0 + i * 10**9, 20 * MS) for i in range(3)]
    text = _dump(_section("p", 1, _block(OLD14, frames)))
    cut = text[: text.index("---PROFILEDATA---", text.index("Flags")) - 9]  # mid last row
    data = read_gfxinfo(_write(tmp_path, cut))
    assert len(data.frames) == 2
    assert (data.warnings.truncated_blocks, data.warnings.truncated_rows) == (1, 1)
    whole_row = text[: text.index("---PROFILEDATA---", text.index("Flags")) - 1]  # no newline
    data = read_gfxinfo(_write(tmp_path, whole_row, "b.txt"))
    assert len(data.frames) == 3
    assert (data.warnings.truncated_blocks, data.warnings.truncated_rows) == (1, 0)


def test_block_closed_by_a_new_section_is_forgiven() -> None:
    body = _block(OLD14, [_GOOD]).rsplit("---PROFILEDATA---", 1)[0]
    text = _dump(_section("a", 1, body), _section("b", 2, _block(OLD14, [_GOOD])))
    data = parse_gfxinfo_text(text)
    assert data.frames["package"].tolist() == ["a", "b"]
    assert data.warnings.unterminated_blocks == 1


def test_line_endings_gzip_and_encodings_read_the_same(tmp_path: Path) -> None:
    text, _ = synth_gfxinfo(np.random.default_rng(5), frames=60)
    plain = read_gfxinfo(_write(tmp_path, text)).frames
    for name, data in (
        ("crlf.txt", text.replace("\n", "\r\n").encode()),
        ("adb.txt", text.replace("\n", "\r\r\n").encode()),
        ("gz.txt.gz", gzip.compress(text.encode())),
    ):
        frames = read_gfxinfo(_write(tmp_path, data, name)).frames
        assert frames.drop(columns="file").equals(plain.drop(columns="file"))
    latin = text.replace("Pipeline=Skia", "Pipeline=Sk\xe9a").encode("latin-1")
    data = read_gfxinfo(_write(tmp_path, latin, "latin.txt"))
    assert data.warnings.undecodable_lines >= 1 and len(data.frames) == len(plain)


def test_truncated_gzip_keeps_what_came_before(tmp_path: Path) -> None:
    text, _ = synth_gfxinfo(np.random.default_rng(6), frames=40)
    packed = gzip.compress(text.encode())
    data = read_gfxinfo(_write(tmp_path, packed[: len(packed) - 20], "cut.gz"))
    assert data.warnings.truncated_gzip == 1
    assert 0 < len(data.frames) <= 40


def test_ten_megabyte_line_is_cut_not_held(tmp_path: Path) -> None:
    good = _dump(_section("p", 1, _block(OLD14, [_GOOD])))
    huge = "x" * (10 * 2**20)
    data = read_gfxinfo(_write(tmp_path, good + huge))  # no newline at the end
    assert data.warnings.overlong_lines == 1 and len(data.frames) == 1
    inside = good.replace(_GOOD_ROW, _GOOD_ROW + "\n" + "1" * (2 * 2**20))
    with pytest.raises(InputFileError, match="longer than") as info:
        read_gfxinfo(_write(tmp_path, inside, "in.txt"))
    assert info.value.line == inside.splitlines().index(_GOOD_ROW) + 2


# -- fast path vs reference --------------------------------------------------------------------

_TOKENS = [
    "0", "7", "-1", "12", "", " ", "x", "007", "--1", "1-", "+1", "\t3", "1_0", "٣",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551616",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.lists(st.sampled_from(_TOKENS), min_size=2, max_size=4), st.booleans()),
        min_size=1,
        max_size=5,
    ),
    unknown_last=st.booleans(),
    wanted=st.sampled_from([None, {"flags"}, {"frame_completed_ns", "intended_vsync_ns"}]),
)
def test_vectorised_rows_agree_with_the_row_by_row_reference(
    rows: list[tuple[list[str], bool]], unknown_last: bool, wanted: set[str] | None
) -> None:
    names = ("Flags", "IntendedVsync", "Vendor" if unknown_last else "FrameCompleted")
    known = tuple((i, COLUMNS[n]) for i, n in enumerate(names) if n in COLUMNS)
    header = Header(names, 1, known)
    raw = [",".join(fields) + ("," if comma else "") for fields, comma in rows]
    lines = list(range(2, 2 + len(raw)))
    fast = parse_rows(raw, header, wanted)
    columns, kept, bad = parse_rows_slowly(raw, lines, header, wanted)
    if fast is not None:
        assert not bad and kept.tolist() == lines
        assert {k: v.tolist() for k, v in fast.items()} == {
            k: v.tolist() for k, v in columns.items()
        }
    # every field numeric, the extra ones past the header too (a blank extra field sends
    # the row to the reference parser, which is allowed: results agree above)
    plain = all(
        all(t and t.lstrip("-").isdigit() and t.count("-") <= t.startswith("-") for t in f)
        for f, _ in rows
    )
    if plain and not bad:  # nothing unusual: the fast path must take it
        assert fast is not None


# -- round trips from the generator ------------------------------------------------------------


def _layouts() -> st.SearchStrategy[Any]:
    optional = [n for n in LAYOUT_NEW if n not in REQUIRED_COLUMNS]
    custom = st.lists(st.sampled_from(optional), unique=True).flatmap(
        lambda extra: st.permutations([*REQUIRED_COLUMNS, *extra])
    )
    return st.one_of(st.sampled_from(["old", "new"]), custom)


def _check_against_truth(report: GfxinfoReport, truth: SynthTruth) -> None:
    frames = report.frames
    for pkg in truth.packages:
        row = _one(report, pkg.package)
        assert row["pid"] == pkg.pid
        if not len(pkg.rows["Flags"]):  # an idle package: no framestats rows, nothing known
            assert pd.isna(row["frames"]) and pd.isna(row["sr"]) and not row["framestats"]
            continue
        assert (row["frames"], row["sr"], row["ff"]) == (pkg.frames, pkg.sr, pkg.ff)
        aware = (row["sr_aware"], row["ff_aware"])
        expected_aware = (pkg.sr_aware, pkg.ff_aware)
        if pkg.sr_aware is None:
            assert pd.isna(aware[0]) and pd.isna(aware[1])
        else:
            assert aware == expected_aware
        mine = frames[frames["package"] == pkg.package].sort_values("line")
        for name in pkg.header:
            if name not in COLUMNS:
                continue
            expected = pkg.rows[name].astype(object)
            if name in ("OldestInputEvent", "NewestInputEvent"):
                expected[pkg.rows["OldestInputEvent"] == NO_INPUT] = pd.NA
            got = mine[COLUMNS[name]].astype(object).tolist()
            assert got == expected.tolist(), name
        process = report.summaries[
            (report.summaries["package"] == pkg.package) & (report.summaries["scope"] == "process")
        ].iloc[0]
        for key, value in pkg.summary.items():
            got_value = process[key]
            assert (
                (pd.isna(got_value) and math.isnan(value))
                if isinstance(value, float) and math.isnan(value)
                else got_value == value
            ), key
        gaps = report.gaps[report.gaps["package"] == pkg.package]
        assert tuple(gaps[gaps["kind"] == "sr_to_sr"]["gap_frames"]) == pkg.sr_to_sr_frames
        assert tuple(gaps[gaps["kind"] == "ff_to_sr"]["gap_frames"]) == pkg.ff_to_sr_frames


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    layout=_layouts(),
    n_packages=st.integers(1, 3),
    frames=st.integers(1, 250),
    extra=st.integers(0, 2),
    blocks=st.integers(1, 3),
    crlf=st.booleans(),
    hz=st.sampled_from([60.0, 90.0, 120.0]),
)
def test_generated_dumps_parse_back_to_their_ground_truth(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    layout: Any,
    n_packages: int,
    frames: int,
    extra: int,
    blocks: int,
    crlf: bool,
    hz: float,
) -> None:
    rng = np.random.default_rng(seed)
    packages = [f"com.example.app{i}" for i in range(n_packages)]
    text, truth = synth_gfxinfo(
        rng, packages, frames, layout, refresh_hz=hz, extra_columns=extra, blocks=blocks,
        slow_rate=0.1, frozen_rate=0.03, idle_packages=("com.android.systemui",),
    )  # fmt: skip
    if crlf:
        text = text.replace("\n", "\r\n")
    path = _write(tmp_path_factory.mktemp("rt"), text)
    report = analyze(read_gfxinfo(path))
    _check_against_truth(report, truth)
    assert report.warnings["unknown_columns"] == (
        {f"VendorExtra{k}": blocks * n_packages for k in range(extra)}
    )


@pytest.mark.parametrize("layout", ["old", "new", "android14"])
def test_large_blocks_take_the_vectorised_path_and_match_the_truth(
    monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    calls: list[bool] = []
    real = gfxinfo_parse.parse_rows

    def spy(rows: Sequence[str], header: Header, wanted: Any = None) -> Any:
        result = real(rows, header, wanted)
        calls.append(result is not None)
        return result

    monkeypatch.setattr(gfxinfo_parse, "parse_rows", spy)
    text, truth = synth_gfxinfo(np.random.default_rng(12), ("a", "b"), 2000, layout)
    _check_against_truth(analyze(parse_gfxinfo_text(text)), truth)
    assert calls and all(calls)


def test_generator_mix_is_realistic() -> None:
    _, truth = synth_gfxinfo(np.random.default_rng(11), ("a", "b"), 3000, "new", flagged=4)
    for pkg in truth.packages:
        flags, start, done = (
            pkg.rows["Flags"],
            pkg.rows["IntendedVsync"],
            pkg.rows["FrameCompleted"],
        )
        ms = (done - start)[flags == 0] / 1e6
        assert np.mean((ms >= 5) & (ms <= 14)) > 0.75  # mostly 5–14 ms
        assert 0.02 < pkg.sr / pkg.frames < 0.25 and 0 < pkg.ff / pkg.frames < 0.02
        assert (flags != 0).sum() == 4 and flags[0] != 0
        assert pkg.sr_aware is not None and pkg.sr_aware < pkg.sr  # buffers hide some
        assert np.all(np.diff(start) > 0)


# -- the CLI -----------------------------------------------------------------------------------


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_cli_json_csv_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, truth = synth_gfxinfo(np.random.default_rng(8), ("com.a", "com.b"), 400, "new")
    old, old_truth = synth_gfxinfo(np.random.default_rng(9), ("com.c",), 300, "old")
    files = [str(_write(tmp_path, text, "new.txt")), str(_write(tmp_path, old, "old.txt"))]
    assert (
        _run([*files, "--json", "--csv", str(tmp_path / "csv"), "--plot", str(tmp_path / "png")])
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) >= {"packages", "warnings"}
    expected = {p.package: p for p in (*truth.packages, *old_truth.packages)}
    for package in payload["packages"]:
        keys = {
            "package",
            "pid",
            "file",
            "frames",
            "sr",
            "ff",
            "sr_pct",
            "ff_pct",
            "sr_aware",
            "ff_aware",
        }
        assert keys <= set(package)
        pkg = expected[package["package"]]
        assert (package["pid"], package["frames"], package["sr"], package["ff"]) == (
            pkg.pid,
            pkg.frames,
            pkg.sr,
            pkg.ff,
        )
        assert (package["sr_aware"], package["ff_aware"]) == (pkg.sr_aware, pkg.ff_aware)
        assert package["sr_pct"] == pytest.approx(100 * pkg.sr / pkg.frames)
    for name in ("packages", "frames", "gaps", "gap_summary", "summaries", "histograms"):
        assert (tmp_path / "csv" / f"{name}.csv").is_file()
    assert len(pd.read_csv(tmp_path / "csv" / "frames.csv")) == 1100
    for name in ("frame_duration_cdf", "slow_frame_stages", "slow_frame_gaps"):
        assert (tmp_path / "png" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert not list((tmp_path / "csv").glob(".*"))  # no temporary files left behind


def test_cli_table_output_and_user_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, _ = synth_gfxinfo(np.random.default_rng(10), ("com.a",), 100, "old")
    assert _run([str(_write(tmp_path, text))]) == 0
    assert "com.a" in capsys.readouterr().out
    bad = text.replace("\n0,", "\n0,x", 1)
    path = _write(tmp_path, bad, "bad.txt")
    line = bad.split("\n").index(next(x for x in bad.split("\n") if x.startswith("0,x"))) + 1
    with pytest.raises(UserError, match=f"bad.txt:{line}:"):
        _run([str(path)])
    assert _run([str(path), "--skip-bad-lines"]) == 0
    assert "skipped" in capsys.readouterr().err


# -- real data and speed -----------------------------------------------------------------------


def test_real_gfxinfo_dumps_parse_and_analyse() -> None:
    if not REAL.is_dir():
        pytest.skip(f"real gfxinfo corpus not found: looked for {REAL}")
    files = sorted(p for p in REAL.iterdir() if p.is_file() and not p.name.startswith("."))
    report = analyze(read_gfxinfo(files))
    assert set(SUMMARY_COLUMNS) <= set(report.summaries.columns)
    assert report.warnings["skipped_lines"] == 0
    rows = report.packages.set_index("package")
    # the corpus README's hand-computed figures
    app = rows.loc["com.example.app"]
    assert (app["rows"], app["flagged_rows"], app["invalid_rows"]) == (105, 33, 1)
    assert (app["window_frames"], app["shared_vsyncs"], app["frames"]) == (71, 10, 61)
    assert app["reported_total_frames_rendered"] == 130
    windows = report.windows[report.windows["package"] == "com.example.app"]
    assert windows["sr"].sum() == 14 and windows["ff"].sum() == 0
    assert sorted(windows["reported_total_frames_rendered"]) == [19, 84]
    instagram = rows.loc["com.instagram.android"]
    assert pd.isna(instagram["frames"]) and not instagram["framestats"]
    assert (instagram["reported_total_frames_rendered"], instagram["reported_janky_frames"]) == (
        51,
        9,
    )


@pytest.mark.slow
def test_a_million_rows_parse_and_analyse_in_under_ten_seconds(tmp_path: Path) -> None:
    text, truth = synth_gfxinfo(np.random.default_rng(1), ("com.big",), 100_000, "new")
    head, _, rest = text.partition("** Graphics info")
    section = "** Graphics info" + rest
    pid = truth.packages[0].pid
    copies = [section.replace(f"pid {pid} [", f"pid {pid + k} [", 1) for k in range(10)]
    path = _write(tmp_path, head + "".join(copies))
    start = time.perf_counter()
    report = analyze(read_gfxinfo(path))
    elapsed = time.perf_counter() - start
    assert report.packages["rows"].sum() == 1_000_000
    assert report.packages["sr"].tolist() == [truth.packages[0].sr] * 10
    assert elapsed < 10.0
