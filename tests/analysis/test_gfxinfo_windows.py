"""Dumps of a process with several windows (Android 10+ print one PROFILEDATA block per
ViewRootImpl): SR/FF per window, and per process one frame per vsync — the frame of the
window that completed last — checked on hand-made dumps and against a brute-force
reference on generated ones."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.gfxinfo.data import parse_gfxinfo_text
from mqoe.analysis.gfxinfo.format import LAYOUT_ANDROID14, LAYOUT_OLD, NO_INPUT
from mqoe.analysis.gfxinfo.report import GfxinfoReport, analyze
from mqoe.metrics.jank import FROZEN_FRAME_NS, SLOW_FRAME_NS

MS = 1_000_000
V = 16_666_667  # one 60 Hz vsync, ns
T0 = 7_000_000_000_000
OLD14 = LAYOUT_OLD[:14]  # Android 6–7: no buffer columns


def _frame(start: int, duration: int, flags: int = 0, vsync_id: int = 1) -> dict[str, int]:
    t = [start + duration * k // 10 for k in range(11)]
    return {
        "Flags": flags, "FrameTimelineVsyncId": vsync_id, "IntendedVsync": start,
        "Vsync": start, "OldestInputEvent": NO_INPUT, "NewestInputEvent": 0, "InputEventId": 0,
        "HandleInputStart": t[1], "AnimationStart": t[2], "PerformTraversalsStart": t[3],
        "DrawStart": t[4], "FrameDeadline": start + V, "FrameStartTime": t[1],
        "FrameInterval": V, "SyncQueued": t[5], "SyncStart": t[6],
        "IssueDrawCommandsStart": t[7], "SwapBuffers": t[9], "FrameCompleted": start + duration,
        "DequeueBufferDuration": 40_000, "QueueBufferDuration": 30_000, "GpuCompleted": t[10],
        "SwapBuffersCompleted": t[10], "DisplayPresentTime": -1,
        "CommandSubmissionCompleted": t[9],
    }  # fmt: skip


def _block(
    header: Sequence[str], frames: Sequence[dict[str, int]], window: str, titled: bool
) -> str:
    lines = [f"\t{window}/android.view.ViewRootImpl@1a2b3c (visibility=0)"]
    if titled:  # Android 12+ name the window and print its own summary
        lines += [f"Window: {window}", "Stats since: 1ns", f"Total frames rendered: {len(frames)}"]
    lines += ["", "---PROFILEDATA---", ",".join(header) + ","]
    lines += [",".join(str(f[name]) for name in header) + "," for f in frames]
    return "\n".join([*lines, "---PROFILEDATA---", "", ""])


def _dump(
    windows: dict[str, list[dict[str, int]]],
    header: Sequence[str] = OLD14,
    titled: bool = False,
) -> str:
    body = "".join(_block(header, frames, name, titled) for name, frames in windows.items())
    return (
        "Applications Graphics Acceleration Info:\nUptime: 1 Realtime: 1\n\n"
        "** Graphics info for pid 42 [com.app] **\n\nStats since: 1ns\n"
        "Total frames rendered: 999\nJanky frames: 9 (0.90%)\n\nProfile data in ms:\n\n" + body
    )


def _process(report: GfxinfoReport) -> dict[str, Any]:
    rows = report.packages[report.packages["package"] == "com.app"]
    assert len(rows) == 1
    return {str(k): v for k, v in rows.iloc[0].to_dict().items()}


def _window(report: GfxinfoReport, name: str) -> dict[str, Any]:
    rows = report.windows[report.windows["window"].astype(str).str.startswith(name)]
    assert len(rows) == 1
    return {str(k): v for k, v in rows.iloc[0].to_dict().items()}


# -- hand-made ---------------------------------------------------------------------------------


def test_a_vsync_both_windows_drew_is_one_process_frame_timed_by_the_later_one() -> None:
    main = [_frame(T0, 8 * MS), _frame(T0 + V, 8 * MS), _frame(T0 + 2 * V, 8 * MS)]
    dialog = [_frame(T0 + V, 30 * MS), _frame(T0 + 3 * V, 9 * MS)]
    report = analyze(parse_gfxinfo_text(_dump({"com.app/Main": main, "com.app/Dialog": dialog})))
    process = _process(report)
    # vsyncs 0, 1, 2, 3: vsync 1 was drawn by both; the dialog finished it, 30 ms after it
    assert (process["frames"], process["shared_vsyncs"], process["window_frames"]) == (4, 1, 5)
    assert (process["sr"], process["ff"], process["windows"]) == (1, 0, 2)
    main_row, dialog_row = _window(report, "com.app/Main"), _window(report, "com.app/Dialog")
    assert (main_row["frames"], main_row["sr"], dialog_row["frames"], dialog_row["sr"]) == (
        3,
        0,
        2,
        1,
    )
    frames = report.frames
    chosen = frames[frames["process_frame"]]
    assert len(chosen) == 4
    shared = chosen[chosen["intended_vsync_ns"] == T0 + V]
    assert shared["window"].astype(str).tolist() == [
        "com.app/Dialog/android.view.ViewRootImpl@1a2b3c"
    ]


def test_a_flagged_frame_does_not_stand_for_its_vsync() -> None:
    main = [_frame(T0, 8 * MS)]
    dialog = [_frame(T0, 900 * MS, flags=1)]  # window visibility changed: not a normal frame
    report = analyze(parse_gfxinfo_text(_dump({"com.app/Main": main, "com.app/Dialog": dialog})))
    process = _process(report)
    assert (process["frames"], process["ff"], process["shared_vsyncs"]) == (1, 0, 0)
    assert (process["rows"], process["flagged_rows"]) == (2, 1)


def test_gaps_run_over_process_frames_not_window_frames() -> None:
    # Main is slow at vsyncs 0 and 2; the dialog redraws vsync 1 only, fast
    main = [_frame(T0, 30 * MS), _frame(T0 + 2 * V, 30 * MS)]
    dialog = [_frame(T0 + V, 5 * MS)]
    report = analyze(parse_gfxinfo_text(_dump({"com.app/Main": main, "com.app/Dialog": dialog})))
    gaps = report.gaps[report.gaps["kind"] == "sr_to_sr"]
    assert gaps["gap_frames"].tolist() == [2]  # vsync 0 → vsync 2, vsync 1 between them


def test_window_summaries_are_reported_beside_the_windows_figures() -> None:
    main = [_frame(T0 + k * V, 8 * MS, vsync_id=k) for k in range(4)]
    dialog = [_frame(T0 + k * V, 20 * MS, vsync_id=k) for k in (1, 2)]
    text = _dump({"com.app/Main": main, "com.app/Dialog": dialog}, LAYOUT_ANDROID14, titled=True)
    report = analyze(parse_gfxinfo_text(text))
    assert _window(report, "com.app/Main")["reported_total_frames_rendered"] == 4
    assert _window(report, "com.app/Dialog")["reported_total_frames_rendered"] == 2
    process = _process(report)
    assert process["reported_total_frames_rendered"] == 999  # the process's own summary
    assert (process["frames"], process["shared_vsyncs"], process["sr"]) == (4, 2, 2)


# -- generated, against a brute-force reference ------------------------------------------------

_window_frames = st.lists(
    st.tuples(
        st.integers(0, 30),  # vsync index
        st.sampled_from([5, 15, 17, 40, 650, 701, 900]),  # duration, ms
        st.sampled_from([0, 0, 0, 0, 1, 2]),  # Flags
    ),
    max_size=25,
    unique_by=lambda frame: frame[0],  # a window draws a vsync at most once
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(windows=st.lists(_window_frames, min_size=1, max_size=3), titled=st.booleans())
def test_process_frames_match_a_brute_force_reference(
    windows: list[list[tuple[int, int, int]]], titled: bool
) -> None:
    frames = {
        f"com.app/W{w}": [_frame(T0 + k * V, ms * MS + w, flags) for k, ms, flags in sorted(spec)]
        for w, spec in enumerate(windows)
    }
    header = LAYOUT_ANDROID14 if titled else OLD14
    report = analyze(parse_gfxinfo_text(_dump(frames, header, titled)))
    # the reference: per vsync the normal frame that completed last
    latest: dict[int, int] = {}
    drawn_by: dict[int, set[str]] = defaultdict(set)
    for name, window in frames.items():
        normal = [f for f in window if f["Flags"] == 0]
        mine = [f["FrameCompleted"] - f["IntendedVsync"] for f in normal]
        row = _window(report, name) if window else None
        if row is not None:
            slow = sum(SLOW_FRAME_NS < d <= FROZEN_FRAME_NS for d in mine)
            frozen = sum(d > FROZEN_FRAME_NS for d in mine)
            assert (row["frames"], row["sr"], row["ff"]) == (len(mine), slow, frozen)
        for f in normal:
            vsync = f["IntendedVsync"]
            latest[vsync] = max(latest.get(vsync, 0), f["FrameCompleted"])
            drawn_by[vsync].add(name)
    durations = [done - vsync for vsync, done in latest.items()]
    process = _process(report)
    if not any(frames.values()):
        return
    assert process["frames"] == len(latest)
    assert process["sr"] == sum(SLOW_FRAME_NS < d <= FROZEN_FRAME_NS for d in durations)
    assert process["ff"] == sum(d > FROZEN_FRAME_NS for d in durations)
    assert process["shared_vsyncs"] == sum(len(names) > 1 for names in drawn_by.values())
    chosen = report.frames[report.frames["process_frame"]]
    got = dict(zip(chosen["intended_vsync_ns"], chosen["frame_completed_ns"], strict=True))
    assert got == latest


@pytest.mark.parametrize("order", ["main-first", "dialog-first"])
def test_the_rule_does_not_depend_on_the_blocks_order(order: str) -> None:
    main = [_frame(T0 + k * V, (8 + 10 * (k % 3)) * MS) for k in range(6)]
    dialog = [_frame(T0 + k * V, 12 * MS) for k in (0, 2, 4)]
    windows = {"com.app/Main": main, "com.app/Dialog": dialog}
    if order == "dialog-first":
        windows = dict(reversed(list(windows.items())))
    process = _process(analyze(parse_gfxinfo_text(_dump(windows))))
    # Main takes 8, 18, 28, 8, 18, 28 ms; the dialog 12 ms at vsyncs 0, 2, 4, so the
    # process frames take 12, 18, 28, 8, 18, 28 ms: four slow
    assert (process["frames"], process["sr"], process["shared_vsyncs"]) == (6, 4, 3)
    assert pd.notna(process["frame_p50_ms"])
