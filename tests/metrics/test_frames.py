from __future__ import annotations

import pandas as pd
import pytest

from mqoe.metrics.frames import deadline_summary

PERIOD = 10


def _frames(rows: list[tuple[int, int]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(i, v, e, v + PERIOD) for i, (v, e) in enumerate(rows)],
        columns=["index", "vsync_ns", "end_ns", "deadline_ns"],
    )


def test_on_time_late_and_skipped_frames_are_counted_by_hand() -> None:
    # V-Syncs at 0,10,...,90: 10 frames due in a 100 ns window.
    # Frames at 0 (on time), 10 (late: ends 25, so 20 is skipped), 30 (exactly on deadline).
    frames = _frames([(0, 5), (10, 25), (30, 40)])
    summary = deadline_summary(frames, PERIOD, 100)
    assert summary["frames_due"] == 10
    assert summary["frames_on_time"] == 2
    assert summary["frames_late"] == 1
    assert summary["frames_skipped"] == 7
    assert summary["missed_deadline_rate"] == pytest.approx(0.8)
    assert summary["frame_latency_p50_ms"] == pytest.approx(10 / 1e6)


def test_frames_whose_deadline_lies_past_the_window_are_not_counted() -> None:
    frames = _frames([(0, 5), (90, 95)])  # the second one's deadline is 100 > window 95
    summary = deadline_summary(frames, PERIOD, 95)
    assert summary["frames_due"] == 9
    assert summary["frames_on_time"] == 1


def test_no_frames_at_all_means_every_frame_missed() -> None:
    summary = deadline_summary(_frames([]), PERIOD, 100)
    assert summary["missed_deadline_rate"] == 1.0


def test_playback_summary_counts_unshown_frames_as_drops_and_bins_shown_ones_per_second() -> None:
    from mqoe.metrics.frames import playback_summary

    start = 5 * 10**9
    period = 40 * 10**6  # 25 fps
    frames = pd.DataFrame(
        {
            "due_ns": [start + k * period for k in range(60)],
            "shown": [k % 4 != 0 for k in range(60)],  # every fourth frame dropped
        }
    )
    metrics, per_second = playback_summary(frames, due=60, start_ns=start, played_s=2.0)
    assert metrics["frame_drop_pct"] == pytest.approx(25.0)
    assert metrics["rendered_fps"] == pytest.approx(45 / 2.0)
    assert per_second["second"].tolist() == [0, 1, 2]  # 2.4 s of frames
    assert per_second["rendered_fps"].tolist() == [25 - 7, 25 - 6, 10 - 2]
    # Frames due but never handled (the decoder fell behind) are drops too.
    assert playback_summary(frames, due=90, start_ns=start, played_s=3.0)[0][
        "frame_drop_pct"
    ] == pytest.approx(50.0)
    empty = frames.iloc[:0]
    assert playback_summary(empty, due=0, start_ns=start, played_s=1.0)[0]["frame_drop_pct"] == 100
