"""The spiral scenario: the collapse must come from TCP dynamics, and go when they do."""

from __future__ import annotations

import pytest

from mqoe.device.profiles import load_profile
from mqoe.errors import UserError
from mqoe.workloads.runner import run_scenario
from mqoe.workloads.spiral import jain_index

SHORT = {"duration_s": "360", "competitor_start_s": "120", "settle_s": "40"}


def _metrics(**overrides: object) -> dict[str, object]:
    params = {**SHORT, **{k: str(v) for k, v in overrides.items()}}
    return dict(run_scenario("spiral", load_profile("nexus-5"), 1, params).metrics)


def _rate(**overrides: object) -> float:
    value = _metrics(**overrides)["rate_competing_kbps"]
    assert isinstance(value, float)
    return value


def test_alone_the_client_streams_at_the_top_rate() -> None:
    m = _metrics(competitor_start_s=10_000)
    assert m["rate_alone_kbps"] == 1750.0
    assert m["video_tput_alone_kbps"] > 4000  # the whole 5 Mbit/s link, minus slow starts


def test_a_competitor_drives_the_discrete_client_into_the_spiral() -> None:
    m = _metrics(mode="discrete", buffer_kbit=120)
    assert m["rate_competing_kbps"] < 0.75 * 1750  # far below what the fair share sustains
    assert m["video_tput_competing_kbps"] < m["fair_share_kbps"]  # the client sees too little
    assert m["competitor_tput_kbps"] > m["fair_share_kbps"]  # …because the competitor takes more


def test_continuous_rates_and_bba_recover_from_the_spiral() -> None:
    spiral = _rate(mode="discrete")
    assert _rate(mode="continuous", c=1.0) > spiral + 300
    assert _rate(mode="bba") > spiral + 300


def test_without_restart_after_idle_the_spiral_weakens() -> None:
    # The mechanism: an idle connection restarting from IW sees a fraction of its share.
    with_restart = _metrics(mode="discrete")
    without = _metrics(mode="discrete", restart_after_idle="false")
    assert without["video_idle_restarts"] == 0
    assert with_restart["video_idle_restarts"] > 20
    assert without["video_tput_competing_kbps"] > with_restart["video_tput_competing_kbps"]


def test_one_connection_per_segment_opens_a_connection_each_time() -> None:
    m = _metrics(connection="per-request", duration_s=60, competitor_start_s=30)
    assert m["segments"] >= 10
    assert m["video_idle_restarts"] == 0  # fresh connections start from IW anyway


def test_a_user_rule_spec_replaces_the_mode() -> None:
    m = _metrics(rule="fixed:representation=0")
    assert m["rate_competing_kbps"] == 235.0


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"mode": "magic"}, "mode must be one of"),
        ({"connection": "quic"}, "persistent or per-request"),
        ({"ladder_kbps": "500,300"}, "ascending"),
        ({"cc": "bbr"}, "cubic or newreno"),
        ({"rule": "nope"}, "nope"),
    ],
)
def test_bad_spiral_parameters_are_user_errors(overrides: dict[str, str], fragment: str) -> None:
    with pytest.raises(UserError, match=fragment):
        run_scenario("spiral", load_profile("nexus-5"), 0, overrides)


def test_jain_index_by_hand() -> None:
    assert jain_index([1.0, 1.0]) == 1.0
    assert jain_index([1.0, 0.0]) == 0.5
    assert jain_index([3.0, 1.0]) == pytest.approx(16 / 20)


def test_the_client_can_be_the_phone_on_its_receive_path() -> None:
    from mqoe.device.phone import Phone
    from mqoe.device.profiles import load_profile
    from mqoe.engine import seconds
    from mqoe.workloads.spiral import Spiral, SpiralParams

    phone = Phone(load_profile("nexus-5"), 1)
    params = SpiralParams(duration_s=120, competitor_start_s=60, stack=True)
    session = Spiral().build(phone, params)
    phone.run(session.duration_ns)
    stack = phone.stack
    assert stack is not None and stack.packets > 1000
    readers = {s.process.name for s in stack.sockets}
    assert readers == {"com.example.player", "com.example.downloader"}
    assert all(s.bytes_read > 0 for s in stack.sockets)
    out = session.collect()
    assert len(out.tables["segments"]) > 10
    assert seconds(120) == phone.now_ns


def test_a_fast_bottleneck_is_still_the_bottleneck() -> None:
    """The servers' access links scale with the bottleneck: at 500 Mbit/s the competitor
    fills most of the router's link, not a 100 Mbit/s access link's."""
    params = {"duration_s": "4", "competitor_start_s": "1", "link_mbps": "500"}
    record = run_scenario("spiral", load_profile("nexus-5"), 1, params)
    series = record.tables["timeseries"]
    assert series["competitor_kbps"].max() > 200_000
