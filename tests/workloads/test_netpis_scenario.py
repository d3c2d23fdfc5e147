"""Scenario ``netpis``: determinism, untouched background, exceptions, crash-safe traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqoe.device.phone import Phone
from mqoe.device.profiles import load_profile
from mqoe.engine import seconds
from mqoe.workloads.netpis import NetPisScenario, NetPisScenarioParams
from mqoe.workloads.runner import run_scenario

PROFILE = load_profile("nexus-5")
SHORT = {"duration_s": "25", "fg_start_s": "10", "video_s": "20", "other_stations": "1"}


def test_same_seed_same_results() -> None:
    a = run_scenario("netpis", PROFILE, 3, {**SHORT, "variant": "netpis"})
    b = run_scenario("netpis", PROFILE, 3, {**SHORT, "variant": "netpis"})
    assert repr(dict(a.metrics)) == repr(dict(b.metrics))  # nan-safe, exact
    assert a.tables["timeseries"].equals(b.tables["timeseries"])


def test_background_untouched_when_no_foreground_flow_exists() -> None:
    """The video never starts: NetPIS must leave the download exactly as the kernel would."""
    quiet = {**SHORT, "duration_s": "12", "fg_start_s": "100"}
    original = run_scenario("netpis", PROFILE, 1, {**quiet, "variant": "original"})
    netpis = run_scenario("netpis", PROFILE, 1, {**quiet, "variant": "netpis"})
    assert netpis.metrics["bg_bytes_total"] == original.metrics["bg_bytes_total"]
    assert netpis.metrics["bg_acks"] == original.metrics["bg_acks"]
    assert (netpis.tables["timeseries"]["bg_rcvbuf_bytes"] == 1 << 20).all()


def test_netpis_throttles_the_background_without_overruns() -> None:
    run = run_scenario("netpis", PROFILE, 1, {**SHORT, "variant": "netpis"})
    series = run.tables["timeseries"]
    during = series[series["t_s"] > 10]  # the video runs from 10 s
    assert (during["bg_rcvbuf_bytes"] < 1 << 20).any()
    assert run.metrics["overruns"] == 0


def test_an_app_locked_foreground_buffer_is_window_limited_and_bg_only_leaves_it() -> None:
    locked = {**SHORT, "fg_rcvbuf_kb": "32"}
    own = run_scenario("netpis", PROFILE, 1, {**locked, "variant": "bg-only"})
    fg_buffers = own.tables["timeseries"]["fg_rcvbuf_bytes"]
    assert set(fg_buffers[fg_buffers > 0]) == {32 * 1024}  # the app's SO_RCVBUF, untouched
    assert own.metrics["fg_rwnd_limited_share"] > 0.2  # its window holds the video back
    lifted = run_scenario("netpis", PROFILE, 1, {**locked, "variant": "fg-only"})
    assert lifted.metrics["fg_rwnd_limited_share"] < 0.05  # lifted to the kernel's 1 MB
    assert lifted.metrics["fg_bytes_total"] > own.metrics["fg_bytes_total"]
    with pytest.raises(ValueError, match="fg_rcvbuf_kb"):
        NetPisScenarioParams(fg_rcvbuf_kb=-1)


def test_exception_list_is_honoured() -> None:
    run = run_scenario(
        "netpis", PROFILE, 1, {**SHORT, "variant": "netpis", "exceptions": "com.android.vending"}
    )
    assert (run.tables["timeseries"]["bg_rcvbuf_bytes"] == 1 << 20).all()


class Crash(Exception):
    pass


def test_tracer_persists_a_readable_trace_that_survives_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "netpis-trace.json"
    params = NetPisScenarioParams(
        duration_s=20, fg_start_s=1, video_s=10, other_stations=0, variant="netpis",
        trace_path=str(path),
    )  # fmt: skip
    phone = Phone(PROFILE, 1)
    NetPisScenario().build(phone, params)

    def crash(_: object) -> None:
        raise Crash

    phone.env.schedule(seconds(3.5), crash)
    with pytest.raises(Crash):
        phone.env.run(seconds(20))
    data = json.loads(path.read_text())  # complete JSON: written atomically
    times = [t for t, *_ in data["trace"]]
    assert seconds(3) <= max(times) < seconds(3.5)  # the last dump before the crash (1 s)
    assert data["processes"]
    assert not list(tmp_path.glob("*.tmp*"))
