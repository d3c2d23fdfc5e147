"""ftrace/atrace/systrace text: hand-made traces with hand-computed states, frames and
causes; the generator's own schedule as ground truth; errors by line; fuzzing; the CLI."""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import time
import zlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.systrace.clusters import cluster_roles, clusters_from_profile, parse_clusters
from mqoe.analysis.systrace.model import SystraceTrace
from mqoe.analysis.systrace.parse import load_systrace, parse_systrace_text
from mqoe.analysis.systrace.read import MAX_LINE_CHARS
from mqoe.analysis.systrace.report import analyze, select_threads, slow_frame_correlation
from mqoe.cli import analyze_systrace as cli
from mqoe.device.profiles import load_profile
from mqoe.errors import InputFileError, UserError
from mqoe.generators.systrace.containers import wrap_html
from mqoe.generators.systrace.trace import SynthTruth, synth_systrace
from mqoe.metrics.sched import STATE_COLUMNS

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "systrace"
BASE_US = 1_000_000_000  # 1000 s: the hand-made traces' time zero
US = 1_000  # ns per µs


# -- hand-made lines --------------------------------------------------------------------


def ev(
    task: str, tid: int, cpu: int, t_us: int, event: str, body: str, tgid: int | None = None
) -> str:
    ts = BASE_US + t_us
    tg = f"({tgid:>5}) " if tgid is not None else ""
    return (
        f"{task:>16}-{tid:<5} {tg}[{cpu:03d}] d..2 "
        f"{ts // 1_000_000}.{ts % 1_000_000:06d}: {event}: {body}\n"
    )


def switch(cpu: int, t: int, prev: tuple[str, int], state: str, nxt: tuple[str, int]) -> str:
    pc = prev[0] if prev[1] else f"swapper/{cpu}"
    nc = nxt[0] if nxt[1] else f"swapper/{cpu}"
    body = (
        f"prev_comm={pc} prev_pid={prev[1]} prev_prio=120 prev_state={state} ==> "
        f"next_comm={nc} next_pid={nxt[1]} next_prio=120"
    )
    return ev(prev[0] if prev[1] else "<idle>", prev[1], cpu, t, "sched_switch", body)


def wake(cpu: int, t: int, waker: tuple[str, int], wakee: tuple[str, int], kind: str = "") -> str:
    body = f"comm={wakee[0]} pid={wakee[1]} prio=120 target_cpu={cpu:03d}"
    task = waker[0] if waker[1] else "<idle>"
    return ev(task, waker[1], cpu, t, kind or "sched_wakeup", body)


def mark(cpu: int, t: int, task: tuple[str, int], payload: str) -> str:
    return ev(task[0], task[1], cpu, t, "tracing_mark_write", payload)


IDLE = ("<idle>", 0)
WORKER = ("worker", 100)
MMCQD = ("mmcqd/0", 200)


def _states_trace() -> str:
    """worker: woken at 0, runs 10–110, preempted by mmcqd until 150, runs to 250, D until
    woken at 400, runs 410–500, sleeps to the end (600)."""
    return (
        "# tracer: nop\n#\n"
        + wake(0, 0, IDLE, WORKER)
        + switch(0, 10, IDLE, "R", WORKER)
        + switch(0, 110, WORKER, "R+", MMCQD)
        + switch(0, 150, MMCQD, "S", WORKER)
        + switch(0, 250, WORKER, "D", IDLE)
        + wake(1, 400, IDLE, WORKER)
        + switch(1, 410, IDLE, "R", WORKER)
        + switch(1, 500, WORKER, "S", IDLE)
        + ev("<idle>", 0, 1, 600, "cpu_idle", "state=1 cpu_id=1")
    )


def _row(trace: SystraceTrace, tid: int) -> dict[str, int]:
    table = trace.threads.set_index("tid")
    return {c: int(table.loc[tid, c]) for c in (*STATE_COLUMNS, "other_ns")}


def _write(tmp_path: Path, text: str | bytes, name: str = "t.trace") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# -- thread states and preemptions ------------------------------------------------------


def test_thread_states_follow_switches_and_wakeups() -> None:
    trace = parse_systrace_text(_states_trace())
    assert _row(trace, 100) == {
        "running_ns": (100 + 100 + 90) * US,
        "runnable_ns": (10 + 10) * US,
        "runnable_preempted_ns": 40 * US,
        "sleeping_ns": 100 * US,
        "blocked_io_ns": 150 * US,
        "other_ns": 0,
    }
    assert _row(trace, 200)["running_ns"] == 40 * US
    assert _row(trace, 200)["sleeping_ns"] == 450 * US  # from 150 to the end at 600
    assert trace.duration_ns == 600 * US
    assert trace.stats.skipped_events == {"cpu_idle": 1}


def test_a_preemption_row_records_the_victims_wait_and_the_preemptors_run() -> None:
    trace = parse_systrace_text(_states_trace())
    rows = trace.preemptions[
        ["core", "victim_tid", "preemptor_tid", "victim_wait_ns", "preemptor_run_ns"]
    ].values.tolist()
    assert rows == [[0, 100, 200, 40 * US, 40 * US]]
    summary = analyze([trace]).tables["preemption_summary"]
    assert summary["preemptor"].tolist() == ["mmcqd/0"]
    assert summary["mean_victim_wait_ms"].tolist() == [0.04]


def test_a_preemption_still_open_at_the_end_is_minus_one() -> None:
    text = wake(0, 0, IDLE, WORKER) + switch(0, 10, IDLE, "R", WORKER)
    text += switch(0, 20, WORKER, "R", MMCQD)
    trace = parse_systrace_text(text)
    assert trace.preemptions[["victim_wait_ns", "preemptor_run_ns"]].values.tolist() == [[-1, -1]]
    assert _row(trace, 100)["runnable_preempted_ns"] == 0  # the trace ends at 20


def test_other_prev_states_and_exits() -> None:
    text = (
        switch(0, 0, IDLE, "R", WORKER)
        + switch(0, 10, WORKER, "I", IDLE)  # idle kernel thread: "other"
        + wake(0, 30, IDLE, WORKER)
        + switch(0, 40, IDLE, "R", WORKER)
        + switch(0, 50, WORKER, "X", IDLE)  # exited: nothing counted after
        + ev("<idle>", 0, 0, 90, "cpu_idle", "state=1 cpu_id=0")
    )
    row = _row(parse_systrace_text(text), 100)
    assert row["other_ns"] == 20 * US
    assert row["running_ns"] == 20 * US
    assert row["runnable_ns"] == 10 * US
    assert sum(row.values()) == 50 * US


@pytest.mark.parametrize(
    "header",
    [
        "  worker-100   [000] d..2 1000.000010: ",
        "  worker-100   ( 1000) [000] d..2 1000.000010: ",
        "  worker-100   (-----) [000] 1000.000010: ",
        "  worker-100   [000] dn.2. 1000.000010: ",
        "worker-100 [000] 1000.000010000: ",
    ],
)
def test_header_variants_give_the_same_event(header: str) -> None:
    text = (
        wake(0, 0, IDLE, WORKER)
        + header
        + (
            "sched_switch: prev_comm=worker prev_pid=100 prev_prio=120 prev_state=S ==> "
            "next_comm=swapper/0 next_pid=0 next_prio=120\n"
        )
    )
    trace = parse_systrace_text(text)
    assert _row(trace, 100)["runnable_ns"] == 10 * US
    assert trace.end_ns == (BASE_US + 10) * US


@pytest.mark.parametrize(
    "name", ["Binder:1234_2", "Jit thread pool", "Sync-Worker 1", "kworker/u16:2-events", "<...>"]
)
def test_task_names_with_spaces_and_dashes(name: str) -> None:
    who = (name, 4321)
    text = wake(0, 0, IDLE, who) + switch(0, 5, IDLE, "R", who) + switch(0, 25, who, "S", IDLE)
    trace = parse_systrace_text(text)
    table = trace.threads.set_index("tid")
    assert table.loc[4321, "thread"] == name
    assert table.loc[4321, "running_ns"] == 20 * US


def test_the_tgid_column_names_the_process() -> None:
    text = (
        ev("<idle>", 0, 0, 0, "sched_switch", "prev_comm=swapper/0 prev_pid=0 prev_prio=120 "
           "prev_state=R ==> next_comm=app next_pid=300 next_prio=120", tgid=None)
        + ev("app", 300, 0, 5, "sched_switch", "prev_comm=app prev_pid=300 prev_prio=120 "
             "prev_state=S ==> next_comm=RenderThread next_pid=310 next_prio=120", tgid=300)
        + ev("RenderThread", 310, 0, 9, "sched_switch", "prev_comm=RenderThread prev_pid=310 "
             "prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120",
             tgid=300)
    )  # fmt: skip
    table = parse_systrace_text(text).threads.set_index("tid")
    assert table.loc[310, "tgid"] == 300
    assert table.loc[310, "process"] == "app"


def test_wakeups_in_the_old_format_and_waking_then_wakeup_count_once() -> None:
    old = ev("<idle>", 0, 0, 0, "sched_wakeup",
             "comm=worker pid=100 prio=120 success=1 target_cpu=000")  # fmt: skip
    text = (
        old
        + wake(0, 3, IDLE, WORKER)  # a second wakeup of a runnable thread changes nothing
        + switch(0, 10, IDLE, "R", WORKER)
        + switch(0, 20, WORKER, "S", IDLE)
        + wake(0, 30, IDLE, WORKER, "sched_waking")
        + wake(0, 35, IDLE, WORKER)
        + switch(0, 40, IDLE, "R", WORKER)
    )
    assert _row(parse_systrace_text(text), 100)["runnable_ns"] == (10 + 10) * US


def test_a_wakeup_does_not_change_a_preempted_or_running_thread() -> None:
    text = (
        wake(0, 0, IDLE, WORKER)
        + switch(0, 10, IDLE, "R", WORKER)
        + wake(1, 15, IDLE, WORKER)  # running: stays running
        + switch(0, 20, WORKER, "R+", MMCQD)
        + wake(1, 25, IDLE, WORKER)  # preempted: stays Runnable (Preempted)
        + switch(0, 50, MMCQD, "S", WORKER)
    )
    row = _row(parse_systrace_text(text), 100)
    assert (row["running_ns"], row["runnable_ns"], row["runnable_preempted_ns"]) == (
        10 * US, 10 * US, 30 * US)  # fmt: skip


def test_backwards_timestamps_are_counted_and_never_give_negative_times() -> None:
    text = (
        wake(0, 100, IDLE, WORKER)
        + switch(0, 110, IDLE, "R", WORKER)
        + switch(0, 90, WORKER, "S", IDLE)  # earlier than the line before, same CPU
        + ev("<idle>", 0, 0, 200, "cpu_idle", "state=1 cpu_id=0")
    )
    trace = parse_systrace_text(text)
    assert trace.stats.backwards_ts == 1
    row = _row(trace, 100)
    assert min(row.values()) >= 0
    assert sum(row.values()) == 100 * US  # its clock is clamped: 100 → 200


# -- frames, critical path, causes ------------------------------------------------------

APP = ("com.example", 300)
RT = ("RenderThread", 310)
APP2 = ("com.other", 400)
RT2 = ("RenderThread", 410)
SF = ("surfaceflinger", 600)


def _frames_trace() -> str:
    lines = [
        (10000, mark(0, 10000, APP, "B|300|Choreographer#doFrame")),
        (10500, mark(0, 10500, APP, "B|300|traversal")),
        (10500, mark(0, 10500, APP, "B|300|measure")),
        (11000, mark(0, 11000, APP, "E|300")),
        (11000, mark(0, 11000, APP, "B|300|layout")),
        (13500, mark(0, 13500, APP, "E|300")),
        (13500, mark(0, 13500, APP, "B|300|draw")),
        (13600, mark(1, 13600, RT, "B|300|DrawFrame")),
        (13600, mark(1, 13600, RT, "B|300|syncFrameState")),
        (14000, mark(1, 14000, RT, "E|300")),
        (14000, mark(1, 14000, RT, "B|300|flush commands")),
        (14200, mark(0, 14200, APP, "E|300")),
        (14200, mark(0, 14200, APP, "E")),  # a bare E ends the innermost slice too
        (14300, mark(0, 14300, APP, "E|300")),
        (28000, mark(1, 28000, RT, "E|300")),
        (30000, mark(1, 30000, RT, "E|300")),
        # A second process, interleaved: its DrawFrame belongs to its own doFrame.
        (12000, mark(2, 12000, APP2, "B|400|Choreographer#doFrame 4711")),
        (12500, mark(3, 12500, RT2, "B|400|DrawFrames 4711")),
        (13000, mark(2, 13000, APP2, "E|400")),
        (15000, mark(3, 15000, RT2, "E|400")),
        # Frame 1 of pid 300: its DrawFrame starts after the doFrame ended.
        (26667, mark(0, 26667, APP, "B|300|Choreographer#doFrame")),
        (27000, mark(0, 27000, APP, "E|300")),
        (31000, mark(1, 31000, RT, "B|300|DrawFrame")),
        (32000, mark(1, 32000, RT, "E|300")),
        # A second DrawFrame after the same doFrame: no doFrame to go to.
        (33000, mark(1, 33000, RT, "B|300|DrawFrame")),
        (33200, mark(1, 33200, RT, "E|300")),
        (33400, mark(2, 33400, SF, "B|600|onMessageReceived")),
        (33500, mark(2, 33500, SF, "B|600|handleMessageRefresh")),
        (35000, mark(2, 35000, SF, "E|600")),
        (35500, mark(2, 35500, SF, "E|600")),
    ]
    lines.sort(key=lambda x: x[0])
    return "".join(text for _, text in lines)


def test_frames_run_from_dofraame_start_to_the_end_of_its_drawframe() -> None:
    trace = parse_systrace_text(_frames_trace())
    f = trace.frames
    assert f["pid"].tolist() == [300, 400, 300]
    assert f["dur_ns"].tolist() == [20000 * US, 3000 * US, (32000 - 26667) * US]
    assert f["render_tid"].tolist() == [310, 410, 310]
    assert f["doframe_ms"].tolist() == [4.3, 1.0, 0.333]
    assert f["drawframe_ms"].tolist() == [16.4, 2.5, 1.0]
    assert f["slow"].tolist() == [True, False, False]  # 20 ms > 16.67 ms
    assert trace.stats.unassigned_drawframes == 1
    assert len(trace.compositions) == 1  # the nested SF slice is not a second one
    assert f["composite_ms"].iloc[0] == pytest.approx(2.1)


def test_the_critical_path_takes_the_longest_child_at_each_level() -> None:
    path = parse_systrace_text(_frames_trace()).critical_path
    first = path[path["frame"] == 0]
    rows = first[["stage", "depth", "name", "dur_ns", "self_ns"]].values.tolist()
    assert rows == [
        ["main", 0, "Choreographer#doFrame", 4300 * US, 600 * US],
        ["main", 1, "traversal", 3700 * US, 0],
        ["main", 2, "layout", 2500 * US, 2500 * US],
        ["render", 0, "DrawFrame", 16400 * US, 2000 * US],
        ["render", 1, "flush commands", 14000 * US, 14000 * US],
    ]


def test_frame_summary_uses_the_jank_thresholds() -> None:
    summary = analyze([parse_systrace_text(_frames_trace())]).tables["frame_summary"]
    by_pid = summary.set_index("pid")
    assert by_pid.loc[300, ["frames", "sr", "ff"]].tolist() == [2, 1, 0]
    assert by_pid.loc[300, "sr_pct"] == 50.0
    assert by_pid.loc[400, ["frames", "sr", "ff"]].tolist() == [1, 0, 0]


def _binder_trace() -> str:
    b = ("Binder:1234_2", 1250)
    return (
        switch(0, 0, IDLE, "R", APP)
        + mark(0, 0, APP, "B|300|Choreographer#doFrame")
        + mark(0, 1000, APP, "B|300|binder transaction")
        + wake(0, 1000, APP, b, "sched_waking")
        + switch(0, 1000, APP, "S", IDLE)
        + switch(1, 1010, IDLE, "R", b)
        + wake(1, 3000, b, APP, "sched_waking")
        + switch(1, 3000, b, "S", IDLE)
        + switch(0, 3050, IDLE, "R", APP)
        + mark(0, 3100, APP, "E|300")
        + wake(0, 4000, APP, b, "sched_waking")  # a call without a slice
        + switch(0, 4000, APP, "S", IDLE)
        + switch(1, 4010, IDLE, "R", b)
        + wake(1, 6000, b, APP, "sched_waking")
        + switch(1, 6000, b, "S", IDLE)
        + switch(0, 6020, IDLE, "R", APP)
        + switch(0, 7000, APP, "D", IDLE)
        + wake(0, 7500, IDLE, APP, "sched_waking")
        + switch(0, 7600, IDLE, "R", APP)
        + mark(0, 9000, APP, "E|300")
        + switch(0, 9500, APP, "S", IDLE)
    )


def test_binder_io_and_scheduling_delay_inside_a_frame() -> None:
    frame = parse_systrace_text(_binder_trace()).frames.iloc[0]
    assert frame["dur_ns"] == 9000 * US  # no DrawFrame: the doFrame's end
    # Slices: 1000–3100 (2.1 ms); waits on the Binder thread: 1000–3000 and 4000–6000.
    assert frame["binder_ns"] == 4000 * US
    assert frame["io_ns"] == 500 * US
    assert frame["sched_delay_ns"] == (50 + 20 + 100) * US


def test_slow_frame_correlation_compares_means() -> None:
    frames = pd.DataFrame(
        {
            "pid": [1, 1, 1, 1],
            "process": ["a"] * 4,
            "slow": [True, False, False, False],
            "frozen": [False, True, False, False],
            "binder_ns": [10e6, 20e6, 1e6, 3e6],
            "io_ns": [0, 0, 0, 0],
            "sched_delay_ns": [5e6, 5e6, 0, 0],
        }
    )
    table = slow_frame_correlation(frames).set_index("cause")
    assert table.loc["binder", ["slow_frames", "normal_frames"]].tolist() == [2, 2]
    assert table.loc["binder", ["slow_mean_ms", "normal_mean_ms", "ratio"]].tolist() == [
        15.0, 2.0, 7.5]  # fmt: skip
    assert np.isnan(table.loc["io", "ratio"])
    assert table.loc["sched_delay", "ratio"] == np.inf


def test_little_saturation_share_by_hand() -> None:
    a, b, c, d = ("a", 301), ("b", 302), ("c", 303), ("d", 304)
    text = (
        switch(2, 0, a, "S", IDLE)  # big CPU 2 known idle
        + switch(0, 100, IDLE, "R", b)
        + switch(1, 200, IDLE, "R", c)  # both LITTLE busy, big idle: saturated from 200
        + switch(2, 350, IDLE, "R", d)  # … to 350
        + switch(2, 400, d, "S", IDLE)  # again from 400
        + switch(0, 500, b, "S", IDLE)  # … to 500
        + ev("<idle>", 0, 1, 1000, "cpu_idle", "state=0 cpu_id=1")
    )
    trace = parse_systrace_text(text, clusters={0: "little", 1: "little", 2: "big"})
    assert trace.saturated_ns == 250 * US
    assert trace.saturated_share == 0.25
    assert parse_systrace_text(text).saturated_ns is None  # no map, no measure


def test_counters_and_async_slices() -> None:
    text = (
        mark(0, 0, APP, "C|300|queued|2")
        + mark(0, 10, APP, "C|300|queued|-1")
        + mark(0, 20, APP, "C|300|queued|5.5")
        + mark(0, 30, APP, "S|300|launching: com.example|7")
        + mark(0, 50, APP, "F|300|launching: com.example|7")
        + mark(0, 60, APP, "F|300|never started|8")
        + mark(0, 70, APP, "I|300|instant")
        + mark(0, 80, APP, "trace_event_clock_sync: parent_ts=1.0")
        + mark(0, 90, APP, "E|300")  # no open slice
    )
    trace = parse_systrace_text(text)
    counters = trace.counters.set_index("name")
    assert counters.loc["queued", ["samples", "min", "max", "last"]].tolist() == [3, -1, 5.5, 5.5]
    slices = trace.async_slices.set_index("name")
    assert slices.loc["launching: com.example", ["count", "total_ns"]].tolist() == [1, 20 * US]
    assert trace.stats.unmatched_async_finish == 1
    assert trace.stats.unsupported_markers == 2
    assert trace.stats.unmatched_ends == 1


# -- containers: HTML, gzip, zlib -------------------------------------------------------


def test_html_text_blocks_are_read_and_json_blocks_skipped(tmp_path: Path) -> None:
    text = _states_trace() + _frames_trace()
    plain = parse_systrace_text(text)
    html = load_systrace(_write(tmp_path, wrap_html(text), "t.html"))
    pd.testing.assert_frame_equal(html.threads, plain.threads)
    pd.testing.assert_frame_equal(html.frames, plain.frames)
    assert (html.stats.html_json_blocks, html.stats.html_text_blocks) == (1, 1)


def test_html_with_the_trace_on_the_tag_line_and_two_text_blocks(tmp_path: Path) -> None:
    parts = _states_trace().split("\n", 4)
    first, second = "\n".join(parts[:4]), parts[4]
    page = (
        "<!DOCTYPE html>\n<html><body>\n"
        f'<script class="trace-data" type="application/text">{first}\n</script>\n'
        f"<SCRIPT type='application/text' class='trace-data'>\n{second}</script></body></html>"
    )
    html = load_systrace(_write(tmp_path, page, "t.html"))
    pd.testing.assert_frame_equal(html.threads, parse_systrace_text(_states_trace()).threads)


def test_an_error_in_html_names_the_html_line(tmp_path: Path) -> None:
    bad = _states_trace().replace("prev_pid=100 prev_prio=120 prev_state=D", "prev_pid=x")
    path = _write(tmp_path, wrap_html(bad, json_block=False), "t.html")
    page_line = (
        wrap_html(bad, json_block=False)
        .splitlines()
        .index(next(line for line in bad.splitlines() if "prev_pid=x" in line))
    )
    with pytest.raises(InputFileError, match=rf"t\.html:{page_line + 1}: expected sched_switch"):
        load_systrace(path)


def test_html_without_text_trace_data_is_an_error(tmp_path: Path) -> None:
    page = '<html>\n<script class="trace-data" type="application/text">\n{"a": 1}\n</script>\n'
    with pytest.raises(InputFileError, match="only JSON trace data"):
        load_systrace(_write(tmp_path, page, "t.html"))


def test_gzip_and_atrace_zlib_files_read_like_text(tmp_path: Path) -> None:
    text = _states_trace()
    plain = parse_systrace_text(text).threads
    gz = load_systrace(_write(tmp_path, gzip.compress(text.encode()), "t.gz")).threads
    z = load_systrace(_write(tmp_path, b"TRACE:\n" + zlib.compress(text.encode()), "t.z"))
    pd.testing.assert_frame_equal(gz, plain)
    pd.testing.assert_frame_equal(z.threads, plain)


@pytest.mark.parametrize(
    "data",
    [gzip.compress(b"x" * 1000)[:-30], b"TRACE:\n" + zlib.compress(b"y" * 5000)[:-20],
     b"TRACE:\n\x78\x9c garbage"],
)  # fmt: skip
def test_corrupt_compressed_files_are_user_errors(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(InputFileError, match=r"t\.bin"):
        load_systrace(_write(tmp_path, data, "t.bin"))


# -- errors -----------------------------------------------------------------------------


def test_a_malformed_event_line_names_file_and_line(tmp_path: Path) -> None:
    text = _states_trace().replace("prev_pid=200 prev_prio=120 prev_state=S", "prev_pid=200")
    path = _write(tmp_path, text)
    line = text.splitlines().index(next(x for x in text.splitlines() if "prev_pid=200 ==>" in x))
    with pytest.raises(InputFileError, match=rf"t\.trace:{line + 1}: expected sched_switch"):
        load_systrace(path)
    skipped = load_systrace(path, skip_bad_lines=True)
    assert skipped.stats.bad_lines == 1
    assert skipped.stats.bad_examples[0][0] == line + 1


@pytest.mark.parametrize(
    "line",
    [
        "  worker-100  [000] d..2 1000.000700 sched_switch: no colon after the time\n",
        "  worker-100  [000] d..2 1000.000700: sched_switch prev_comm=a (no colon)\n",
        "  worker-100  [000] d..2 1000.000700: tracing_mark_write: B|12x|name\n",
        "  worker-100  [000] d..2 1000.000700: tracing_mark_write: B|12\n",
        "  worker-100  [000] d..2 1000.000700: tracing_mark_write: C|12|name|abc\n",
        "  worker-100  [000] d..2 1000.000700: tracing_mark_write: S|12|name|cookie\n",
        "  worker-100  [000] d..2 1000.000700: sched_wakeup: pid=5\n",
        "  worker-100  [000] d..2 99999999999.000700: sched_wakeup: comm=a pid=1 prio=1\n",
    ],
)
def test_lines_that_look_like_events_but_do_not_parse_are_errors(line: str) -> None:
    text = _states_trace() + line
    n = len(text.splitlines())
    with pytest.raises(InputFileError, match=rf"<text>:{n}: expected"):
        parse_systrace_text(text)
    assert parse_systrace_text(text, skip_bad_lines=True).stats.bad_lines == 1


def test_other_lines_are_ignored_and_counted() -> None:
    text = (
        "TRACE:\ncapturing trace... done\n"
        + _states_trace()
        + "CPU:1 [LOST 42 EVENTS]\n"
        + "  worker-100  [000] d..2 1000.000700: do_sys_open <-SyS_openat\n"
    )
    trace = parse_systrace_text(text)
    assert trace.stats.other_lines == 2
    assert trace.stats.lost_events == 42
    assert trace.stats.skipped_events["(function)"] == 1
    assert any("lost 42 events" in w for w in trace.stats.warnings())


@pytest.mark.parametrize(
    ("content", "hint"),
    [
        ("", "no ftrace events"),
        ("# tracer: nop\n#\n", "no ftrace events"),
        ('{"traceEvents": []}\n', "JSON trace"),
        ("\x00\x01\x02binary\n\x00\x00", "binary"),
    ],
)
def test_a_file_without_events_is_an_error(tmp_path: Path, content: str, hint: str) -> None:
    with pytest.raises(InputFileError, match=hint):
        load_systrace(_write(tmp_path, content))


def test_missing_files_and_folders_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"nope\.trace"):
        load_systrace(tmp_path / "nope.trace")
    with pytest.raises(InputFileError, match="folder"):
        load_systrace(tmp_path)


def test_a_huge_line_is_capped_and_reported(tmp_path: Path) -> None:
    text = _states_trace()
    head, tail = text.split("\n", 3)[:3], text.split("\n", 3)[3]
    huge = "\n".join(head) + "\n" + "x" * (MAX_LINE_CHARS * 3) + "\n" + tail
    path = _write(tmp_path, huge)
    with pytest.raises(InputFileError, match=r"t\.trace:4: expected a line over"):
        load_systrace(path)
    trace = load_systrace(path, skip_bad_lines=True)
    assert trace.stats.overlong_lines == 1
    assert _row(trace, 100) == _row(parse_systrace_text(text), 100)  # nothing else lost


def test_undecodable_bytes_do_not_stop_the_parser(tmp_path: Path) -> None:
    data = _states_trace().encode() + b"\xff\xfe\x80 garbage \x00\n"
    trace = load_systrace(_write(tmp_path, data))
    assert trace.stats.binary_lines == 1


def test_deeply_nested_slices_are_bounded() -> None:
    text = "".join(mark(0, i, APP, "B|300|s") for i in range(1_200))
    text += "".join(mark(0, 2_000 + i, APP, "E|300") for i in range(1_200))
    trace = parse_systrace_text(text)
    assert trace.stats.too_deep_slices == 200
    assert trace.stats.unmatched_ends == 0 and trace.stats.unterminated_slices == 0


# -- clusters ---------------------------------------------------------------------------


def test_cluster_specs_and_profiles() -> None:
    assert parse_clusters("0-1:little, 2-3:big,4:prime") == {
        0: "little", 1: "little", 2: "big", 3: "big", 4: "prime"}  # fmt: skip
    assert cluster_roles(parse_clusters("0-1:little,2-3:big,4:prime")) == ((0, 1), (2, 3, 4))
    assert cluster_roles({0: "silver", 1: "gold"}) == ((0,), (1,))  # lowest CPU's cluster
    mix = clusters_from_profile(load_profile("mi-8-pro"))
    assert cluster_roles(mix) == ((0, 1, 2, 3), (4, 5, 6, 7))
    for bad in ("0-3", "a-b:little", "3-1:x", "0:l,0:b", "0-99999:x"):
        with pytest.raises(UserError, match="clusters"):
            parse_clusters(bad)


def test_thread_selection_by_regex_and_top() -> None:
    trace = parse_systrace_text(_states_trace())
    states = analyze([trace]).tables["thread_states"]
    assert select_threads(states, "mmc", 10)["tid"].tolist() == [200]
    assert select_threads(states, None, 1)["tid"].tolist() == [100]  # most running time
    with pytest.raises(UserError, match="regular expression"):
        select_threads(states, "(", 10)


# -- the generator's ground truth -------------------------------------------------------


def _assert_matches_truth(trace: SystraceTrace, truth: SynthTruth) -> None:
    merged = trace.threads.merge(truth.threads, on="tid", suffixes=("", "_true"))
    assert len(merged) == len(truth.threads)
    for column in STATE_COLUMNS:
        assert merged[column].tolist() == merged[column + "_true"].tolist(), column
    assert (merged["thread"] == merged["thread_true"]).all()
    got = trace.preemptions[list(truth.preemptions.columns)].values.tolist()
    assert sorted(got) == sorted(truth.preemptions.values.tolist())
    for column in truth.frames.columns:
        assert trace.frames[column].tolist() == truth.frames[column].tolist(), column
    assert trace.saturated_ns == truth.saturated_ns
    assert (trace.start_ns, trace.end_ns) == (truth.start_ns, truth.end_ns)
    assert trace.stats.events == truth.event_lines
    assert trace.stats.skipped_events == {"cpu_frequency": truth.skipped_events}
    assert trace.stats.bad_lines == 0 and trace.stats.unmatched_ends == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_parsed_generator_traces_match_the_generators_schedule(seed: int) -> None:
    text, truth = synth_systrace(np.random.default_rng(seed), duration_s=2.0, frozen_prob=0.01)
    trace = parse_systrace_text(text, clusters=truth.clusters)
    _assert_matches_truth(trace, truth)
    # The generated trace exercises what it should.
    assert len(truth.preemptions) > 5
    assert set(truth.preemptions["victim_tid"]) & {2300, 2345}  # app threads preempted
    assert (truth.frames["io_ns"] > 0).any() and (truth.frames["binder_ns"] > 0).any()
    assert (truth.frames["sched_delay_ns"] > 0).any() and truth.saturated_ns > 0


def test_frozen_frames_and_sr_counts_match_the_truth_durations() -> None:
    text, truth = synth_systrace(np.random.default_rng(7), duration_s=6.0, frozen_prob=0.05)
    summary = analyze([parse_systrace_text(text)]).tables["frame_summary"].iloc[0]
    durations = truth.frames["dur_ns"]
    ff = int((durations > 700_000_000).sum())
    sr = int(((durations > 16_670_000) & (durations <= 700_000_000)).sum())
    assert ff > 0 and sr > 0
    assert (summary["frames"], summary["sr"], summary["ff"]) == (len(durations), sr, ff)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    tgid=st.booleans(),
    flags=st.sampled_from([0, 4, 5]),
    waking=st.booleans(),
    old=st.booleans(),
    binder_slices=st.booleans(),
    bare_end=st.booleans(),
    n_little=st.integers(1, 3),
)
def test_round_trip_generate_write_parse(
    seed: int,
    tgid: bool,
    flags: int,
    waking: bool,
    old: bool,
    binder_slices: bool,
    bare_end: bool,
    n_little: int,
) -> None:
    text, truth = synth_systrace(
        np.random.default_rng(seed),
        duration_s=0.6,
        n_little=n_little,
        tgid_column=tgid,
        irq_flags=flags,
        waking=waking,
        old_wakeup_format=old,
        binder_slices=binder_slices,
        bare_end=bare_end,
    )
    _assert_matches_truth(parse_systrace_text(text, clusters=truth.clusters), truth)


def test_the_html_wrapped_generator_trace_matches_too(tmp_path: Path) -> None:
    text, truth = synth_systrace(np.random.default_rng(11), duration_s=1.0)
    trace = load_systrace(_write(tmp_path, wrap_html(text), "g.html"), clusters=truth.clusters)
    _assert_matches_truth(trace, truth)


# -- fuzzing: parses or raises UserError, never anything else ---------------------------


@cache
def _seed_trace() -> str:
    text, _ = synth_systrace(np.random.default_rng(0), duration_s=0.15)
    return text + _frames_trace() + _binder_trace()


_mutation = st.tuples(
    st.sampled_from(["flip", "delete", "insert", "duplicate", "swap", "truncate"]),
    st.integers(0, 10**9),
    st.text(max_size=40),
)


def _mutate(text: str, mutations: Sequence[tuple[str, int, str]]) -> str:
    for op, pos, payload in mutations:
        if not text:
            break
        i = pos % len(text)
        lines = text.split("\n")
        j, k = pos % len(lines), (pos // 7) % len(lines)
        if op == "flip":
            text = text[:i] + (payload[:1] or "\x00") + text[i + 1 :]
        elif op == "delete":
            text = text[:i] + text[i + len(payload) + 1 :]
        elif op == "insert":
            text = text[:i] + payload + text[i:]
        elif op == "duplicate":
            text = "\n".join(lines[: j + 1] + lines[j:])
        elif op == "swap":
            lines[j], lines[k] = lines[k], lines[j]
            text = "\n".join(lines)
        else:
            text = text[:i]
    return text


def _parse_or_user_error(text: str, skip: bool) -> None:
    try:
        trace = parse_systrace_text(text, skip_bad_lines=skip, clusters={0: "little", 2: "big"})
    except UserError:
        return
    analyze([trace])  # the tables build too
    assert trace.stats.events > 0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations=st.lists(_mutation, min_size=1, max_size=8), skip=st.booleans())
def test_fuzz_mutated_traces(mutations: list[tuple[str, int, str]], skip: bool) -> None:
    _parse_or_user_error(_mutate(_seed_trace(), mutations), skip)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), prefix=st.sampled_from([b"", b"\x1f\x8b", b"TRACE:\n\x78"]))
def test_fuzz_binary_files(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, prefix: bytes
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "f.trace"
    path.write_bytes(prefix + data)
    with contextlib.suppress(UserError):
        load_systrace(path, skip_bad_lines=True)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutations=st.lists(_mutation, min_size=1, max_size=20), skip=st.booleans())
def test_fuzz_mutated_traces_deep(mutations: list[tuple[str, int, str]], skip: bool) -> None:
    _parse_or_user_error(_mutate(_seed_trace(), mutations), skip)


# -- the CLI ----------------------------------------------------------------------------


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_cli_json_reports_what_the_generator_scheduled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, truth = synth_systrace(np.random.default_rng(4), duration_s=3.0, frozen_prob=0.02)
    path = _write(tmp_path, text)
    assert _cli([str(path), "--json", "--clusters", "0-1:little,2-3:big"]) == 0
    payload = json.loads(capsys.readouterr().out)
    frames = payload["frame_summary"][0]
    durations = truth.frames["dur_ns"]
    assert frames["frames"] == len(durations)
    assert frames["ff"] == int((durations > 700_000_000).sum())
    saturation = payload["saturation"][0]
    assert saturation["saturated_s"] == pytest.approx(truth.saturated_ns / 1e9)
    preemptors = {row["preemptor"]: row["preemptions"] for row in payload["preemption_summary"]}
    counts = truth.preemptions["preemptor_tid"].value_counts()
    names = truth.threads.set_index("tid")["thread"]
    assert preemptors == {names[tid]: int(n) for tid, n in counts.items()}
    assert [r["tid"] for r in payload["thread_states"]][:1] == [
        int(truth.threads.sort_values("running_ns").iloc[-1]["tid"])
    ]
    assert {r["cause"] for r in payload["correlation"]} == {
        "binder", "io", "sched_delay", "little_saturated"}  # fmt: skip


def test_cli_tables_csv_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, truth = synth_systrace(np.random.default_rng(5), duration_s=1.5)
    path = _write(tmp_path, text)
    csv, plots = tmp_path / "csv", tmp_path / "plots"
    argv = [str(path), "--profile", "nokia-1", "--csv", str(csv), "--plot", str(plots)]
    assert _cli([*argv, "--threads", "Render|mmcqd"]) == 0
    shown = capsys.readouterr().out
    assert "RenderThread" in shown and "mmcqd/0" in shown and "kswapd0" not in shown
    assert "the cluster map has no big cores" in shown  # nokia-1: one cluster
    frames = pd.read_csv(csv / "frames.csv")
    assert frames["dur_ns"].tolist() == truth.frames["dur_ns"].tolist()
    assert {p.name for p in csv.iterdir()} >= {"thread_states.csv", "preemption_summary.csv",
                                               "frame_summary.csv", "correlation.csv"}  # fmt: skip
    pngs = sorted(plots.iterdir())
    assert len(pngs) == 3 and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    assert not [p for p in tmp_path.rglob(".*tmp*")]  # atomic writes leave no temp files


def test_cli_user_errors(tmp_path: Path) -> None:
    bad = _write(tmp_path, _states_trace() + "  x-1 [000] 1000.1: sched_switch: nonsense\n")
    n = len(_states_trace().splitlines()) + 1
    with pytest.raises(UserError, match=rf"t\.trace:{n}"):
        _cli([str(bad)])
    assert _cli([str(bad), "--skip-bad-lines", "--json"]) == 0
    with pytest.raises(UserError, match="clusters"):
        _cli([str(bad), "--clusters", "nonsense"])
    with pytest.raises(UserError, match="unknown profile"):
        _cli([str(bad), "--profile", "no-such-phone"])
    with pytest.raises(UserError, match="--top"):
        _cli([str(bad), "--top", "0"])


# -- speed and real data ----------------------------------------------------------------


@pytest.mark.slow
def test_a_million_lines_parse_in_under_15_seconds(tmp_path: Path) -> None:
    text, truth = synth_systrace(np.random.default_rng(9), duration_s=360.0)
    path = _write(tmp_path, text)
    lines = text.count("\n")
    del text
    assert lines >= 1_000_000
    start = time.perf_counter()
    trace = load_systrace(path, clusters=truth.clusters)
    assert time.perf_counter() - start < 15.0
    assert len(trace.frames) == len(truth.frames)


def test_real_traces_parse() -> None:
    if not REAL.is_dir():
        pytest.skip(f"no real systrace files in {REAL}")
    files = [p for p in sorted(REAL.rglob("*")) if p.is_file() and not p.name.endswith(".md")]
    assert len(files) >= 6
    for path in files:
        trace = load_systrace(path)  # every one reads without skipping a line
        assert trace.stats.events > 0 and trace.stats.bad_lines == 0
        assert (trace.threads[list(STATE_COLUMNS)] >= 0).all().all()
