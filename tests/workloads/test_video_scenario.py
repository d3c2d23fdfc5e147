"""The video scenario measures thread states over the playback, as the study's trace did."""

from __future__ import annotations

import pytest

from mqoe.device.profiles import load_profile
from mqoe.metrics.sched import STATE_COLUMNS
from mqoe.workloads.runner import run_scenario


@pytest.fixture(scope="module")
def record():  # type: ignore[no-untyped-def]
    overrides = {"duration_s": "6", "resolution": "480p", "fps": "30", "setup_s": "20"}
    return run_scenario("video", load_profile("nokia-1"), 3, overrides)


def test_thread_states_cover_exactly_the_playback_window(record) -> None:  # type: ignore[no-untyped-def]
    window = record.tables["thread_states"].set_index("thread")
    whole = record.tables["thread_states_run"].set_index("thread")
    states = list(STATE_COLUMNS)
    # Threads alive throughout account for the same window: from play() (the first
    # frame comes a little later) to the end of the last frame's slot, 6 s after it.
    span = window.loc["kswapd0", states].sum()
    assert window.loc["system_server", states].sum() == span
    assert 6_000_000_000 < span < 6_500_000_000
    assert whole.loc["kswapd0", states].sum() == record.sim_duration_s * 1e9
    # The player's compositor did its work during playback (a last composition may run
    # a few ms past the last slot).
    compositor = whole.loc["Compositor", "running_ns"]
    assert window.loc["Compositor", "running_ns"] == pytest.approx(compositor, rel=0.01)
    assert compositor > 0
    # The system ran before playback too: the window holds less of its time.
    assert window.loc["system_server", "running_ns"] < whole.loc["system_server", "running_ns"]
    assert (window[states] >= 0).all().all()
