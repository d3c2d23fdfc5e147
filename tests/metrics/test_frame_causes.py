"""Root-cause attribution of slow frames on hand-built frame tables."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from mqoe.metrics.frame_causes import (
    CAUSE_COLUMNS,
    attribute_causes,
    cause_shares,
    clustering,
    severe_slow,
)

MS = 1_000_000
PERIOD = 16_666_667


def _frame(i: int, duration_ms: float, **parts: Any) -> dict[str, Any]:
    """A frame at V-Sync i with a duration and components in ms (default 0)."""
    row: dict[str, Any] = {
        "app": parts.pop("app", "a"),
        "frame": i,
        "intended_vsync_ns": i * PERIOD,
        "duration_ns": round(duration_ms * MS),
    }
    for name in (
        "main_running", "render_running", "binder", "io", "main_runnable",
        "render_runnable", "dequeue_wait", "sf_delay", "sync_wait",
    ):  # fmt: skip
        row[name + "_ns"] = round(parts.pop(name, 0.0) * MS)
    row["main_start_ns"] = row["intended_vsync_ns"] + round(parts.pop("late", 0.0) * MS)
    row.update(parts)
    return row


def _table(*rows: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def test_each_slow_frame_gets_the_dominant_cause() -> None:
    frames = _table(
        _frame(0, 10, main_running=5, render_running=4),  # not slow: not attributed
        _frame(10, 30, main_running=15, render_running=10, binder=3),
        _frame(20, 40, main_running=5, io=20, binder=10),
        _frame(30, 25, render_running=8, main_runnable=6, render_runnable=7),
        _frame(40, 800, main_running=300, io=200, binder=50),  # FF
    )
    causes = attribute_causes(frames)
    assert list(causes.columns) == list(CAUSE_COLUMNS)
    assert causes["frame"].tolist() == [10, 20, 30, 40]
    assert causes["cause"].tolist() == ["ui_complex", "io_binder", "sched_delay", "ui_complex"]
    assert causes["kind"].tolist() == ["sr", "sr", "sr", "ff"]
    assert causes["ui_ns"].tolist() == [25 * MS, 5 * MS, 8 * MS, 300 * MS]
    assert causes["io_binder_ns"].tolist() == [3 * MS, 30 * MS, 0, 250 * MS]
    assert causes["sched_ns"].tolist() == [0, 0, 13 * MS, 0]


def test_ties_go_to_the_earlier_class() -> None:
    frames = _table(_frame(1, 20, main_running=6, binder=6, main_runnable=6))
    assert attribute_causes(frames)["cause"].tolist() == ["ui_complex"]
    frames = _table(_frame(1, 20, main_running=1, binder=6, main_runnable=6))
    assert attribute_causes(frames)["cause"].tolist() == ["io_binder"]


def test_surfaceflinger_delay_during_a_buffer_wait_is_scheduling_delay() -> None:
    # 12 ms waiting for a buffer, of which SF was runnable 9 ms: sched 9 > ui 8.
    frames = _table(_frame(1, 22, render_running=8, dequeue_wait=12, sf_delay=9))
    causes = attribute_causes(frames)
    assert causes["cause"].tolist() == ["sched_delay"]
    assert causes["sched_ns"].iloc[0] == 9 * MS and causes["waited_ns"].iloc[0] == 3 * MS
    # SF's delay beyond the wait does not count.
    frames = _table(_frame(1, 22, render_running=8, dequeue_wait=5, sf_delay=9))
    assert attribute_causes(frames)["sched_ns"].tolist() == [5 * MS]


def test_hidden_frames_are_skipped_only_when_buffer_aware() -> None:
    frames = _table(
        _frame(1, 30, main_running=20, ready_buffer=True),
        _frame(5, 30, io=20, ready_buffer=False),
    )
    assert attribute_causes(frames)["frame"].tolist() == [5]
    assert attribute_causes(frames, buffer_aware=False)["frame"].tolist() == [1, 5]


def test_a_frame_slow_only_from_waiting_inherits_the_previous_cause() -> None:
    frames = _table(
        _frame(1, 50, io=40, main_running=5),  # slow: its own I/O
        _frame(2, 40, late=33, main_running=3, render_running=3),  # waited for frame 1
        _frame(9, 30, late=20, main_running=3, sync_wait=5),  # waited, inherits again
        _frame(12, 30, main_running=25),  # its own work again
    )
    causes = attribute_causes(frames)
    assert causes["cause"].tolist() == ["io_binder", "io_binder", "io_binder", "ui_complex"]
    assert causes["inherited"].tolist() == [False, True, True, False]
    assert causes["waited_ns"].tolist() == [0, 33 * MS, 25 * MS, 0]
    # The first slow frame of an app has nothing to inherit: it keeps its own class.
    lonely = _table(_frame(3, 40, late=30, main_running=4))
    assert attribute_causes(lonely)["cause"].tolist() == ["ui_complex"]


def test_gaps_are_per_app_in_vsync_order() -> None:
    frames = _table(
        _frame(10, 20, main_running=15, app="b"),
        _frame(3, 20, main_running=15),
        _frame(4, 5),
        _frame(5, 20, main_running=15),
        _frame(20, 20, main_running=15),
        _frame(12, 20, main_running=15, app="b"),
    )
    causes = attribute_causes(frames)
    assert causes["app"].tolist() == ["a", "a", "a", "b", "b"]
    assert causes["frame"].tolist() == [3, 5, 20, 10, 12]
    gaps = causes["gap_frames"].tolist()
    assert np.isnan(gaps[0]) and np.isnan(gaps[3])
    assert [gaps[1], gaps[2], gaps[4]] == [2, 1, 1]  # ranks among each app's own frames
    assert causes["gap_ms"].iloc[1] == pytest.approx(2 * PERIOD / 1e6)


def test_flags_pass_through_and_default_to_false() -> None:
    frames = _table(
        _frame(1, 20, main_running=15, little_saturated=True, ruir=True),
        _frame(2, 20, main_running=15, little_saturated=False, ruir=False),
    )
    causes = attribute_causes(frames)
    assert causes["little_saturated"].tolist() == [True, False]
    assert causes["ruir"].tolist() == [True, False]
    bare = attribute_causes(_table(_frame(1, 20, main_running=15)))
    assert bare["little_saturated"].tolist() == [False] and bare["ruir"].tolist() == [False]


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match="binder_ns"):
        attribute_causes(_table(_frame(1, 20)).drop(columns=["binder_ns"]))


def test_shares_and_clustering() -> None:
    frames = _table(
        _frame(1, 800, main_running=700, ruir=True),  # FF
        _frame(2, 20, main_running=15, ruir=True),  # SR right after it
        _frame(3, 20, io=15),
        *(_frame(i, 5) for i in range(4, 10)),  # six fast frames
        _frame(30, 20, main_runnable=15, little_saturated=True),
    )
    causes = attribute_causes(frames)
    assert causes["gap_frames"].tolist()[1:] == [1, 1, 7]
    shares = cause_shares(causes)
    assert shares["ui_complex"] == 0.5 and shares["io_binder"] == 0.25
    assert shares["sched_delay"] == 0.25
    assert shares["ui_complex_ruir"] == 1.0 and shares["little_saturated"] == 0.25
    cl = clustering(causes, near_frames=5)
    assert cl["ff_followed_by_sr"] == 1.0
    assert cl["median_gap_frames"] == 1.0 and cl["near_share"] == pytest.approx(2 / 3)
    empty = cause_shares(attribute_causes(_table(_frame(1, 5))))
    assert all(np.isnan(v) for v in empty.values())


def test_severe_slow_frames_are_over_400_ms_and_not_frozen() -> None:
    frames = _table(
        _frame(1, 450, ready_buffer=False),
        _frame(2, 450, ready_buffer=True),
        _frame(3, 350, ready_buffer=False),
        _frame(4, 750, ready_buffer=False),
    )
    assert severe_slow(frames) == 1
    assert severe_slow(frames, buffer_aware=False) == 2
