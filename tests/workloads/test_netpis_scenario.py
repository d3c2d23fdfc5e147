"""Scenario ``netpis``: determinism, untouched background, exceptions, crash-safe traces."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from mqoe.device.phone import Phone
from mqoe.device.profiles import load_profile
from mqoe.engine import seconds
from mqoe.workloads.base import parse_params
from mqoe.workloads.netpis import NetPisScenario, NetPisScenarioParams, bg_rate, recovery_s
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


def _series(rates_mbps: list[float]) -> pd.DataFrame:
    """A timeseries table at 0.5 s steps whose background runs at the given rates."""
    t = [0.5 * i for i in range(len(rates_mbps) + 1)]
    got = [0.0]
    for r in rates_mbps:
        got.append(got[-1] + r * 1e6 / 8 * 0.5)
    return pd.DataFrame({"t_s": t, "bg_bytes": got})


def test_recovery_is_the_first_second_back_at_80_percent_of_the_baseline() -> None:
    # 10 Mbit/s, throttled to 1 from 5 s, then 9 from 10 s: back within 1 s of 10 s.
    series = _series([10.0] * 10 + [1.0] * 10 + [9.0] * 20)
    baseline = bg_rate(series, 0.0, 5.0)
    assert baseline == pytest.approx(10e6 / 8)
    assert recovery_s(series, 10.0, baseline) == pytest.approx(1.0)  # 1 s smoothing window
    assert math.isnan(recovery_s(series, 10.0, 2 * baseline))  # never back to 16 Mbit/s
    assert math.isnan(recovery_s(series, float("nan"), baseline))  # the video never ended


def test_on_the_receive_path_the_apps_loader_threads_read_and_their_sockets_cost_memory() -> None:
    phone = Phone(PROFILE, 2)
    params = parse_params(NetPisScenarioParams, {**SHORT, "stack": "true"}, "netpis")
    session = NetPisScenario().build(phone, params)
    phone.run(session.duration_ns)
    stack = phone.stack
    assert stack is not None and stack.packets > 1000
    threads = pd.DataFrame(phone.cpu.thread_table())
    loaders = threads[threads["thread"] == "loader"]
    assert set(loaders["process"]) == {"com.android.vending", "com.google.android.youtube"}
    assert (loaders["running_ns"] > 0).all()  # each app's reads ran on its own thread
    assert int(threads.loc[threads["thread"] == "softirq/0", "running_ns"].sum()) > 0
    # Data waited between 20 ms polls, charged to its app; every socket was read.
    assert all(s.peak_pages > 0 and s.bytes_read > 0 for s in stack.sockets)
    assert not any(s.wakes for s in stack.sockets)  # both apps poll
    phone.memory.check()
    metrics = session.collect().metrics
    assert metrics["fg_bytes_total"] > 0 and metrics["bg_bytes_total"] > 0
