"""Big and bad input: the parser's memory does not grow with the lines, frames written as
they complete equal the generator's truth, write_large_capture writes one long valid
session, and the whole pipeline the CLI runs survives the shared mutation fuzzer."""

from __future__ import annotations

import hashlib
import time
import tracemalloc
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mqoe.analysis.systrace import parse as systrace_parse
from mqoe.analysis.systrace.parse import load_systrace, parse_systrace_lines, parse_systrace_text
from mqoe.analysis.systrace.report import analyze
from mqoe.generators.systrace.containers import wrap_html, wrap_linux_perf_data
from mqoe.generators.systrace.large import write_large_capture
from mqoe.generators.systrace.trace import synth_systrace
from tests.analysis.test_systrace import APP, RT, _assert_matches_truth, ev, mark
from tests.fuzzing import DEEP_INPUTS, QUICK_INPUTS, fuzz

MB = 1_000_000


@cache
def _capture_lines(target_bytes: int) -> tuple[str, ...]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "capture.txt"
        write_large_capture(path, target_bytes, seed=3)
        return tuple(path.read_text(encoding="utf-8").splitlines(keepends=True))


def _parse_peak(lines: tuple[str, ...]) -> int:
    """Peak traced bytes while the parser reads ``lines`` (up to its last line; the
    output tables it builds afterwards are measured separately)."""
    peak: list[int] = []

    def source() -> Iterator[str]:
        yield from lines
        peak.append(tracemalloc.get_traced_memory()[1])

    tracemalloc.start()
    try:
        parse_systrace_lines(source())
    finally:
        tracemalloc.stop()
    return peak[0]


# -- memory -----------------------------------------------------------------------------


def test_the_parsers_memory_does_not_grow_with_the_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    # Frames are written every _HOUSEKEEPING_LINES lines; a smaller window lets a 2 MB
    # capture span many windows, as a 1 GB one spans many of the default size.
    monkeypatch.setattr(systrace_parse, "_HOUSEKEEPING_LINES", 1024)
    lines = _capture_lines(2 * MB)
    quarter = lines[: len(lines) // 4]
    _parse_peak(quarter[:2000])  # first-use allocations (regex caches, lazy imports)
    small, big = _parse_peak(quarter), _parse_peak(lines)
    grown_bytes = sum(map(len, lines)) - sum(map(len, quarter))
    # What still grows is one compact row per frame (and per critical-path entry).
    assert (big - small) / grown_bytes < 0.1, (small, big)
    assert big < 2.5 * small, (small, big)


def test_the_output_tables_are_compact() -> None:
    trace = parse_systrace_lines(_capture_lines(2 * MB))
    frames, path = trace.frames, trace.critical_path
    assert len(frames) > 250 and len(path) > 4 * len(frames)
    assert frames.memory_usage(deep=True).sum() / len(frames) < 300  # bytes a frame
    assert path.memory_usage(deep=True).sum() / len(path) < 64  # bytes a path entry
    tagged = analyze([trace]).tables["critical_path"]
    assert tagged.memory_usage(deep=True).sum() / len(path) < 72  # the file name: 1 byte


# -- frames written while streaming -----------------------------------------------------


@pytest.mark.parametrize("seed", [5, 6])
def test_frames_written_as_they_complete_match_the_truth(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    text, truth = synth_systrace(
        np.random.default_rng(seed), duration_s=1.5, frozen_prob=0.01, binder_prob=0.5
    )
    whole = parse_systrace_text(text, clusters=truth.clusters)
    monkeypatch.setattr(systrace_parse, "_HOUSEKEEPING_LINES", 64)  # write rows every 64 lines
    streamed = parse_systrace_text(text, clusters=truth.clusters)
    _assert_matches_truth(streamed, truth)
    pd.testing.assert_frame_equal(streamed.frames, whole.frames)
    pd.testing.assert_frame_equal(streamed.critical_path, whole.critical_path)


def test_a_binder_call_open_when_a_frame_ends_still_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    # The frame (doFrame 0–1 ms, DrawFrame to 5 ms) ends while the main thread is in a
    # binder transaction begun at 2 ms; rows are written every 64 lines, many times
    # before that slice ends at 8 ms: the frame still gets its 3 ms of binder time.
    filler = "".join(
        ev("<idle>", 0, 3, 5000 + i, "cpu_idle", "state=1 cpu_id=3") for i in range(300)
    )
    text = (
        mark(0, 0, APP, "B|300|Choreographer#doFrame")
        + mark(1, 500, RT, "B|300|DrawFrame")
        + mark(0, 1000, APP, "E|300")
        + mark(0, 2000, APP, "B|300|binder transaction")
        + mark(1, 5000, RT, "E|300")
        + filler
        + mark(0, 8000, APP, "E|300")
    )
    whole = parse_systrace_text(text)
    monkeypatch.setattr(systrace_parse, "_HOUSEKEEPING_LINES", 64)
    streamed = parse_systrace_text(text)
    assert whole.frames["binder_ns"].tolist() == [3_000_000]
    pd.testing.assert_frame_equal(streamed.frames, whole.frames)


# -- write_large_capture ----------------------------------------------------------------


def test_write_large_capture_writes_one_long_valid_session(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    write_large_capture(path, 3 * MB, seed=1)
    size = path.stat().st_size
    assert 3 * MB <= size < 5 * MB
    trace = load_systrace(path)
    s = trace.stats
    assert (s.bad_lines, s.backwards_ts, s.unmatched_ends, s.unterminated_slices) == (0, 0, 0, 0)
    assert s.incomplete_frames == 0 and s.switches > 5_000
    assert len(trace.threads) == 8  # the same threads go on from block to block
    per_s = len(trace.frames) / (trace.duration_ns / 1e9)
    assert 40 < per_s < 61  # one frame per 60 Hz V-Sync at most
    again = tmp_path / "again.txt"
    write_large_capture(again, 3 * MB, seed=1)
    assert hashlib.sha256(again.read_bytes()).digest() == hashlib.sha256(path.read_bytes()).digest()


@pytest.mark.slow
def test_write_large_capture_writes_at_least_100_mb_per_second(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    start = time.perf_counter()
    write_large_capture(path, 300 * MB)
    rate = path.stat().st_size / MB / (time.perf_counter() - start)
    assert rate >= 100, f"{rate:.0f} MB/s"


# -- the fuzz target: what the CLI runs, on mutants of generated captures ---------------


@cache
def _seeds() -> list[bytes]:
    def trace(**options: Any) -> str:
        text, _ = synth_systrace(np.random.default_rng(2), duration_s=0.06, **options)
        return text

    old = trace(marker_event="0", tgid_column=False, irq_flags=0, render_thread=False)
    return [
        trace().encode(),
        wrap_html(trace(binder_slices=False)).encode(),
        old.encode(),
        wrap_linux_perf_data(trace(doframe=False, render_thread=False)).encode(),
    ]


def _pipeline(path: Path) -> None:
    trace = load_systrace(path, clusters={0: "little", 1: "little", 2: "big", 3: "big"})
    report = analyze([trace])
    assert trace.stats.events > 0
    assert (report.tables["thread_states"].filter(like="_ns") >= 0).all().all()


def test_fuzz_the_systrace_pipeline(tmp_path: Path) -> None:
    counts = fuzz(_pipeline, _seeds(), tmp_path, QUICK_INPUTS)
    assert counts["accepted"] > 0 and counts["user_errors"] > 0


@pytest.mark.slow
def test_fuzz_the_systrace_pipeline_deep(tmp_path: Path) -> None:
    counts = fuzz(_pipeline, _seeds(), tmp_path, DEEP_INPUTS, seed=1)
    assert counts["accepted"] > 0 and counts["user_errors"] > 0
