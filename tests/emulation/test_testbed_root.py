"""The real testbed (root + network namespaces): topology hygiene, the bottleneck's rate
and queue bound, receiver controls on real sockets, and the spiral end to end.

Skipped with the reason where the machine cannot run it; CI here has root. ~1 minute.
"""

from __future__ import annotations

import os
import statistics
import subprocess
from pathlib import Path

import pytest

from mqoe.cli.main import main
from mqoe.emulation import topology
from mqoe.emulation.bulk import run_bulk
from mqoe.emulation.owner import Owner
from mqoe.emulation.topology import FRAME_BYTES, BottleneckSpec, Topology, cleanup, ip
from mqoe.errors import UserError
from mqoe.results import read_metrics_csv

_WHY = topology.unavailable_reason()
needs_root = pytest.mark.skipif(bool(_WHY), reason=f"testbed unavailable: {_WHY}")
PAYLOAD_PER_FRAME = 1448 / FRAME_BYTES  # TCP payload of a 1514-byte frame (timestamps on)


def _ours() -> tuple[list[str], list[str]]:
    mine = f"mqoe-tb-{Owner.current().tag}-"
    names = [n for n in topology.list_namespaces() if n.startswith(mine)]
    links = [line for line in ip("-o", "link", "show").splitlines()
             if f"mtb{os.getpid():x}x" in line]  # fmt: skip
    return names, links


def test_refuses_without_root_with_one_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topology.os, "geteuid", lambda: 1000)
    with pytest.raises(UserError, match=r"needs root .* not running as root"):
        topology.require_testbed()


@needs_root
def test_topology_up_and_down_leaves_nothing_behind() -> None:
    with Topology(BottleneckSpec(5.0, 15000)) as topo:
        names, links = _ours()
        assert sorted(names) == sorted(topo.ns.values())
        assert links == []  # every veth lives inside a namespace
        assert topo.router_dev["cli"] in ip("link", "show", netns=topo.ns["rtr"])
        # tc shows tbf's byte limit as the latency it allows: (15000 − 3028) B at 5 Mbit/s
        assert "lat 19.2ms" in subprocess.run(
            ["tc", "-n", topo.ns["rtr"], "qdisc", "show", "dev", topo.router_dev["cli"]],
            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert _ours() == ([], [])


@needs_root
def test_cleanup_removes_a_crashed_runs_leftovers_but_not_a_live_run() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    crashed = Topology(BottleneckSpec(5.0, 15000), owner=Owner(dead.pid, 1))
    crashed.up()  # never taken down: as if its owner had been killed
    with Topology(BottleneckSpec(5.0, 15000)) as live:
        removed = cleanup()
        assert set(crashed.ns.values()) <= set(removed)
        assert not set(live.ns.values()) & set(removed)
        remaining = set(topology.list_namespaces())
        assert set(live.ns.values()) <= remaining
        assert not set(crashed.ns.values()) & remaining
    assert _ours() == ([], [])


@needs_root
def test_one_bulk_flow_gets_the_bottleneck_rate() -> None:
    result = run_bulk(BottleneckSpec(5.0, 15000), [""], duration_s=8.0)
    wire_kbps = result.goodput_kbps[0] / PAYLOAD_PER_FRAME
    assert wire_kbps == pytest.approx(5000, rel=0.05)


@needs_root
def test_the_queue_limit_bounds_queueing_delay() -> None:
    rate_bps = 5e6
    small, large = 15000, 60000
    bound_small_ms = small * 8 / rate_bps * 1e3  # 24 ms of queue at most
    r_small = run_bulk(BottleneckSpec(5.0, small), [""], duration_s=6.0)
    r_large = run_bulk(BottleneckSpec(5.0, large), [""], duration_s=6.0)
    srtt_small = statistics.median(r_small.srtt_ms[0][1:])
    srtt_large = statistics.median(r_large.srtt_ms[0][1:])
    base_ms, slack_ms = 4.5, 4.0  # idle RTT here; slack for the delay line and timers
    assert srtt_small <= base_ms + bound_small_ms + slack_ms
    assert srtt_small >= base_ms + 0.4 * bound_small_ms  # the flow does fill the queue
    assert srtt_large > base_ms + bound_small_ms + slack_ms  # a larger limit, longer queue
    assert r_small.qdisc["dropped"] > 0  # drop-tail at the limit


@needs_root
def test_a_clamped_receiver_is_throttled() -> None:
    result = run_bulk(BottleneckSpec(5.0, 15000), ["fixed:window_clamp_bytes=4096", ""],
                      duration_s=8.0)  # fmt: skip
    clamped, free = result.goodput_kbps
    # 4 KiB per RTT of ~4.5 ms + ~24 ms of the other flow's queue ≈ 1.2 Mbit/s at most
    assert clamped < 1500 and clamped < 0.4 * free  # measured ≈ 1060 vs 3710
    assert clamped + free == pytest.approx(5000 * PAYLOAD_PER_FRAME, rel=0.1)


@needs_root
def test_spiral_runs_end_to_end_on_a_short_schedule(tmp_path: Path) -> None:
    args = ["testbed", "spiral", "--set", "duration_s=16", "competitor_start_s=8",
            "settle_s=1", "buffer_max_s=8", "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    rows = {r.metric: r.value for r in read_metrics_csv(tmp_path / "metrics.csv")}
    assert {r.figure for r in read_metrics_csv(tmp_path / "metrics.csv")} == {"spiral-real"}
    assert rows["rate_alone_kbps"] == 1750.0  # alone on 5 Mbit/s: the top rung
    assert 1500 < rows["competitor_tput_kbps"] < 5000
    assert rows["video_tput_alone_kbps"] > 3500
    assert _ours() == ([], [])
