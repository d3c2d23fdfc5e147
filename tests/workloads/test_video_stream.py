"""Scenario video-stream: the memory-pressure player over the phone's Wi-Fi/TCP path."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mqoe.device.profiles import load_profile
from mqoe.errors import UserError
from mqoe.policies.abr import AbrState, Decision
from mqoe.workloads.runner import run_scenario

SHORT = {"setup_s": "8", "duration_s": "16", "boot_cached": "4", "system": "false"}


def _run(seed: int = 1, components: dict[str, object] | None = None, **over: str):  # type: ignore[no-untyped-def]
    return run_scenario(
        "video-stream", load_profile("nokia-1"), seed, SHORT | over, components=components
    )


def test_segments_cross_the_phones_stack_and_show_in_its_cpu_and_memory() -> None:
    record = _run(bottleneck_mbps="20", competitor="none")
    m = record.metrics
    assert m["segments"] >= 4
    assert m["softirq_cpu_s"] > 0  # protocol processing on the phone's CPU
    assert m["sock_peak_kb"] > 0  # queued data charged to the player
    assert m["segment_throughput_kbps"] > 1000
    threads = record.tables["thread_states_run"]
    assert "softirq/0" in set(threads["thread"])
    segments = record.tables["segments"]
    assert list(segments["segment"]) == list(range(len(segments)))


def test_same_seed_same_results() -> None:
    a = _run(seed=3, competitor="station", bottleneck_mbps="6")
    b = _run(seed=3, competitor="station", bottleneck_mbps="6")
    assert a.metrics == b.metrics
    assert a.tables["segments"].equals(b.tables["segments"])


def test_a_link_slower_than_the_lowest_rung_stalls_playback() -> None:
    record = _run(bottleneck_mbps="0.35", competitor="none", rule="throughput")
    m = record.metrics
    assert m["rebuffer_count"] >= 1 and m["rebuffer_s"] > 0
    segments = record.tables["segments"]
    assert segments["rebuffer_s"].sum() == pytest.approx(m["rebuffer_s"])
    assert m["qoe_lin"] < segments["bitrate_kbps"].sum() / 1000  # the stalls cost QoE
    frames = record.tables["frames"]
    assert frames["shown"].sum() <= m["frames_due"]


def test_a_competitor_on_the_bottleneck_lowers_what_the_rule_picks() -> None:
    alone = _run(bottleneck_mbps="8", competitor="none", rule="throughput")
    shared = _run(bottleneck_mbps="8", competitor="station", rule="throughput")
    assert shared.metrics["mean_bitrate_kbps"] < alone.metrics["mean_bitrate_kbps"]
    assert shared.metrics["competitor_kbps"] > 1000


def test_a_background_download_on_the_phone_costs_the_phone() -> None:
    record = _run(bottleneck_mbps="8", competitor="phone")
    threads = record.tables["thread_states_run"].set_index("thread")
    assert threads.loc["downloader", "running_ns"] > 0  # the app's reads of its socket
    assert record.metrics["competitor_kbps"] > 1000


@dataclass(frozen=True)
class Lowest:
    """Always the lowest rung."""

    def choose(self, state: AbrState) -> Decision:
        return Decision(0)


def test_an_abr_rule_object_drives_the_stream() -> None:
    record = _run(components={"abr": Lowest()}, bottleneck_mbps="20", competitor="none")
    assert set(record.tables["segments"]["representation"]) == {0}
    assert "Lowest" in record.params["component.abr"]
    assert "rule" not in record.params  # the component replaced it


@pytest.mark.parametrize(
    ("key", "value"),
    [("competitor", "neighbour"), ("rule", ""), ("bottleneck_mbps", "0"), ("rule", "nope")],
)
def test_bad_parameters_are_refused(key: str, value: str) -> None:
    with pytest.raises((UserError, ValueError)):
        _run(**{key: value})


class Recorder:
    """The lowest rung, keeping every state it was shown."""

    def __init__(self) -> None:
        self.states: list[AbrState] = []

    def params(self) -> dict[str, str]:
        return {}

    def choose(self, state: AbrState) -> Decision:
        self.states.append(state)
        return Decision(0)


def test_the_rule_sees_the_devices_signals() -> None:
    recorder = Recorder()
    over = {"pressure": "critical", "bottleneck_mbps": "20", "competitor": "none",
            "setup_s": "40", "boot_cached": "16"}  # fmt: skip
    _run(components={"abr": recorder}, **over)
    states = recorder.states
    assert len(states) >= 4
    late = states[-1]
    assert late.frame_stats and late.frame_stats[0][1] > 0  # frames shown at rung 0
    assert late.trim_level > 0  # the pressure state's trim signals
    assert all(s.memory_stall_pct >= 0 for s in states)
    assert any(s.memory_stall_pct > 0 for s in states)  # reclaim stalls under pressure
