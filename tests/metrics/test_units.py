"""One registry of metric units: suffix rules, named exceptions, unknown names refused."""

from __future__ import annotations

import pytest

from mqoe.emulation.spiral import METRICS as TESTBED_METRICS
from mqoe.experiments.downward_spiral import METRICS as SPIRAL_METRICS
from mqoe.metrics.units import unit_of


@pytest.mark.parametrize(
    ("metric", "unit"),
    [
        ("rate_alone_kbps", "kbit/s"),
        ("sequential_mbps", "MB/s"),
        ("rebuffer_s", "s"),
        ("frame_drop_pct", "%"),
        ("energy_j", "J"),
        ("cpu_power_mw", "mW"),
        ("trimmed_gb", "GB"),
        ("jain_index", "ratio"),
        ("rcvbuf_mb", "MiB"),  # named: binary, not the _mb suffix's MB
        ("service_s_alone", "s"),
    ],
)
def test_units_by_suffix_and_by_name(metric: str, unit: str) -> None:
    assert unit_of(metric) == unit


def test_an_unknown_metric_is_refused_with_the_fix() -> None:
    with pytest.raises(KeyError, match=r"add it to mqoe\.metrics\.units\.NAMED"):
        unit_of("mystery")


def test_the_spiral_has_the_same_units_in_the_simulator_and_the_testbed() -> None:
    before = {"rate_alone_kbps": "kbit/s", "rate_competing_kbps": "kbit/s",
              "rate_competing_min_kbps": "kbit/s", "video_tput_alone_kbps": "kbit/s",
              "video_tput_competing_kbps": "kbit/s", "competitor_tput_kbps": "kbit/s",
              "fair_share_kbps": "kbit/s", "jain_index": "ratio", "rebuffer_s": "s",
              "video_retransmits": "segments", "competitor_retransmits": "segments",
              "bottleneck_drops": "packets"}  # fmt: skip
    assert set(SPIRAL_METRICS) <= set(TESTBED_METRICS) == set(before)
    assert {m: unit_of(m) for m in TESTBED_METRICS} == before
