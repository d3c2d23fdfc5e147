"""Frames on older releases (the frame rule per release in mqoe.analysis.systrace's
docstring): old kernels' ``0:`` trace markers, Android 4.x doFrames drawn on the main
thread, performTraversals where Choreographer is not traced; and Android 12+ vsync ids."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mqoe.analysis.systrace.parse import parse_systrace_text
from mqoe.generators.systrace.trace import synth_systrace
from tests.analysis.test_systrace import APP, RT, _assert_matches_truth, _frames_trace, mark

US = 1_000
APP4 = ("com.legacy", 500)
TRAV = ("com.notraced", 700)
TRAV_RT = ("RenderThread", 710)


def _old_kernel(text: str) -> str:
    """The same events as an Android 4.x kernel prints them: `0:` for a trace_marker
    write, no irq-flags column."""
    return text.replace(" d..2 ", " ").replace("tracing_mark_write:", "0:")


def test_old_kernel_marker_lines_read_like_tracing_mark_write() -> None:
    new, old = (
        parse_systrace_text(_frames_trace()),
        parse_systrace_text(_old_kernel(_frames_trace())),
    )
    assert len(old.frames) == 3
    pd.testing.assert_frame_equal(old.frames, new.frames)
    pd.testing.assert_frame_equal(old.critical_path, new.critical_path)
    assert old.stats.markers == new.stats.markers == len(_frames_trace().splitlines())
    assert "0" not in old.stats.skipped_events


def test_an_old_kernel_counter_line() -> None:
    line = "     hwc_eventmon-336   [000] 50260.929925: 0: C|124|VSYNC|1\n"
    counters = parse_systrace_text(line + line.replace("|1\n", "|0\n")).counters
    assert counters[["pid", "name", "samples", "last"]].values.tolist() == [[124, "VSYNC", 2, 0]]


def _android4(offset_us: int = 0) -> str:
    """The main thread draws and swaps inside its doFrame (no RenderThread): frames at
    0–7.2 ms and 16.667–36.667 ms (slow), after ``offset_us``."""
    lines = []
    for start, end in ((0, 7200), (16667, 36667)):
        for dt, payload in (
            (0, "B|500|Choreographer#doFrame"),
            (100, "B|500|performTraversals"),
            (2000, "B|500|draw"),
            (5000, "B|500|eglSwapBuffers"),
            (6000, "E|500"),
            (6500, "E|500"),
            (end - start - 200, "E|500"),
            (end - start, "E|500"),
        ):
            lines.append(mark(0, offset_us + start + dt, APP4, payload))
    return "".join(lines)


def test_android_4_frames_are_doframes_drawn_on_the_main_thread() -> None:
    trace = parse_systrace_text(_android4())
    f = trace.frames
    assert f["dur_ns"].tolist() == [7200 * US, 20000 * US]
    assert f["render_tid"].tolist() == [-1, -1]
    assert f["slow"].tolist() == [False, True]
    assert np.isnan(f["drawframe_ms"]).all()
    first = trace.critical_path[trace.critical_path["frame"] == 0]
    assert first["name"].tolist() == [
        "Choreographer#doFrame", "performTraversals", "draw", "eglSwapBuffers"]  # fmt: skip
    assert trace.stats.incomplete_frames == 0  # the last one ends with the trace


def _traversals_only() -> str:
    """No Choreographer in the trace: performTraversals is the outermost slice; the
    second traversal hands a DrawFrame to a RenderThread (a 5.x app, view tag only)."""
    return (
        mark(1, 1000, TRAV, "B|700|performTraversals")
        + mark(1, 3000, TRAV, "B|700|draw")
        + mark(1, 19000, TRAV, "E|700")
        + mark(1, 20000, TRAV, "E|700")
        + mark(1, 40000, TRAV, "B|700|performTraversals")
        + mark(2, 41000, TRAV_RT, "B|700|DrawFrame")
        + mark(1, 42000, TRAV, "E|700")
        + mark(2, 47000, TRAV_RT, "E|700")
    )


def test_without_doframe_performtraversals_starts_and_ends_a_frame() -> None:
    f = parse_systrace_text(_traversals_only()).frames
    assert f["start_ns"].diff().dropna().tolist() == [39000 * US]
    assert f["dur_ns"].tolist() == [19000 * US, 7000 * US]  # 2nd: to its DrawFrame's end
    assert f["render_tid"].tolist() == [-1, 710]
    assert f["doframe_ms"].tolist() == [19.0, 2.0]  # the root slice: performTraversals


def test_a_process_with_doframes_does_not_also_count_its_traversals() -> None:
    # The trace begins inside a doFrame, so its performTraversals has no doFrame around it.
    text = (
        mark(0, 0, APP4, "B|500|performTraversals")
        + mark(0, 3000, APP4, "E|500")
        + mark(0, 3100, APP4, "E|500")  # the end of the doFrame that began before the trace
        + _android4(offset_us=10_000)
    )
    trace = parse_systrace_text(text)
    assert trace.frames["dur_ns"].tolist() == [7200 * US, 20000 * US]
    assert trace.stats.unmatched_ends == 1
    both = parse_systrace_text(_traversals_only() + _android4(offset_us=100_000)).frames
    assert both.groupby("pid")["frame"].count().to_dict() == {500: 2, 700: 2}


def test_android_12_vsync_ids_are_kept_apart_from_the_slice_names() -> None:
    text = (
        mark(0, 0, APP, "B|300|Choreographer#doFrame 4711")
        + mark(0, 100, APP, "B|300|traversal")
        + mark(0, 1000, APP, "E|300")
        + mark(1, 1100, RT, "B|300|DrawFrames 4711")
        + mark(0, 1200, APP, "E|300")
        + mark(1, 5000, RT, "E|300")
    )
    trace = parse_systrace_text(text)
    assert trace.frames["vsync_id"].tolist() == [4711]
    assert trace.frames["dur_ns"].tolist() == [5000 * US]
    assert trace.critical_path["name"].tolist() == ["Choreographer#doFrame", "traversal",
                                                    "DrawFrames"]  # fmt: skip
    assert trace.frames["critical_path"].tolist() == [
        "Choreographer#doFrame > traversal | DrawFrames"]  # fmt: skip


@pytest.mark.parametrize("doframe", [True, False])
def test_generated_android_4_traces_match_the_generators_schedule(doframe: bool) -> None:
    text, truth = synth_systrace(
        np.random.default_rng(17),
        duration_s=1.5,
        render_thread=False,
        doframe=doframe,
        marker_event="0",
        tgid_column=False,
        irq_flags=0,
        waking=False,
        old_wakeup_format=True,
        frozen_prob=0.0,
    )
    assert "tracing_mark_write" not in text and "RenderThread" not in text
    trace = parse_systrace_text(text, clusters=truth.clusters)
    _assert_matches_truth(trace, truth)
    assert len(trace.frames) > 60 and (trace.frames["render_tid"] == -1).all()
    root = "Choreographer#doFrame" if doframe else "performTraversals"
    assert set(trace.frames["critical_path"].str.split(" > ").str[0]) == {root}
    assert (truth.frames["io_ns"] > 0).any() and (truth.frames["sched_delay_ns"] > 0).any()
