"""The power HAL's interaction boost: clock floors for a touch or a fling's duration."""

from __future__ import annotations

from collections.abc import Generator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mqoe.device.cpu.governors import Interactive, Powersave, Schedutil
from mqoe.device.cpu.knobs import apply_cpu_knobs
from mqoe.device.cpu.opp import OppTable
from mqoe.device.phone import Phone
from mqoe.device.profiles import DeviceProfile, load_profile
from mqoe.engine import Event, ms
from mqoe.workloads.runner import run_scenario
from tests.conftest import make_profile

OPP = [200_000, 400_000, 600_000, 800_000, 1_000_000]
BOOST = {"min_freq_mhz": {"c0": 550}, "min_duration_ms": 100, "max_duration_ms": 1000}


def _profile(boost: dict[str, object] | None = BOOST) -> DeviceProfile:
    base = make_profile([(2, 1000.0, 1.0)])
    cpu = {**base.cpu.model_dump(), "interaction_boost": boost}
    return base.model_copy(update={"cpu": base.cpu.model_validate(cpu, strict=False)})


def _phone(governor: object, boost: dict[str, object] | None = BOOST) -> Phone:
    """A one-cluster phone with OPP steps, at its bottom step under ``governor``."""
    phone = Phone(_profile(boost), 0)
    policy = phone.cpu.policies["c0"]
    policy.opp = OppTable(tuple(OPP))
    policy.min_khz, policy.max_khz = OPP[0], OPP[-1]
    for core in policy.cores:
        core.busy_opp_ns = [0] * len(OPP)
    policy.active_opp_ns = [0] * len(OPP)
    phone.cpu._set_freq(policy, OPP[0])
    policy._target = OPP[0]
    policy.governor = governor  # type: ignore[assignment]
    governor.start(policy)  # type: ignore[attr-defined]
    return phone


def _interactive() -> Interactive:
    return Interactive(hispeed_freq=800_000, go_hispeed_load=90, target_loads="90",
                       timer_rate=20_000, min_sample_time=40_000)  # fmt: skip


def test_a_touch_raises_the_floor_at_once_for_the_minimum_duration() -> None:
    phone = _phone(_interactive())
    policy, boost = phone.cpu.policies["c0"], phone.cpu.interaction_boost
    assert boost is not None
    phone.run(ms(5))
    assert policy.cur_khz == OPP[0]
    phone.cpu.interaction_hint()  # a tap: min_duration_ms
    assert policy.min_khz == 600_000  # 550 MHz resolved to the next step up
    assert policy.cur_khz == 600_000  # no transition latency here: now
    phone.run(ms(99))
    assert policy.cur_khz == 600_000 and boost.active
    phone.run(ms(2))
    assert not boost.active and policy.min_khz == OPP[0]
    # Released: the idle cluster's governor brings the clock down at its next sample.
    phone.run(ms(25))
    assert policy.cur_khz == OPP[0]
    assert boost.boosted_total_ns() == ms(100)


def test_a_fling_holds_the_floor_for_its_duration_within_the_bounds() -> None:
    phone = _phone(_interactive())
    boost = phone.cpu.interaction_boost
    assert boost is not None
    phone.cpu.interaction_hint(ms(400))
    assert boost.until_ns == ms(400)
    phone.cpu.interaction_hint(ms(50))  # covered by the running lock: dropped
    assert boost.hints == 1 and boost.until_ns == ms(400)
    phone.run(ms(300))
    phone.cpu.interaction_hint(ms(5000))  # extends, capped at max_duration_ms
    assert boost.hints == 2 and boost.until_ns == ms(300) + ms(1000)
    phone.run(ms(1001))
    assert not boost.active
    assert boost.boosted_total_ns() == ms(1300)


def test_under_load_the_governor_may_go_above_the_floor_but_never_below() -> None:
    phone = _phone(_interactive())
    cpu = phone.cpu
    policy = cpu.policies["c0"]
    thread = cpu.thread("ui")
    seen: list[int] = []

    def bursts() -> Generator[Event, None, None]:
        for _ in range(20):  # 4 ms of work every 16 ms: ~25% load
            yield cpu.run(thread, 4e6 * 0.6)
            yield phone.env.timeout(ms(12))

    def sample() -> Generator[Event, None, None]:
        while phone.env.now < ms(300):
            seen.append(policy.cur_khz)
            yield phone.env.timeout(ms(1))

    cpu.interaction_hint(ms(300))
    phone.env.process(bursts())
    phone.env.process(sample())
    phone.run(ms(299))
    assert min(seen) == 600_000 and set(seen) <= set(OPP)


@pytest.mark.parametrize("governor", [Schedutil(), Powersave()])
def test_every_governor_honours_the_floor_and_its_release(governor: object) -> None:
    phone = _phone(governor)
    policy = phone.cpu.policies["c0"]
    phone.run(ms(1))
    low = policy.cur_khz
    phone.cpu.interaction_hint()
    assert policy.cur_khz == 600_000 > low
    phone.run(ms(150))
    assert policy.cur_khz == low  # both re-evaluate on the limits change


def test_a_phone_without_the_table_ignores_hints_and_the_knob_turns_it_off() -> None:
    phone = _phone(_interactive(), boost=None)
    assert phone.cpu.interaction_boost is None
    phone.cpu.interaction_hint(ms(100))
    assert phone.cpu.policies["c0"].min_khz == OPP[0]
    redmi = load_profile("redmi-5")
    assert redmi.cpu.interaction_boost is not None
    off, knobs, rest = apply_cpu_knobs(redmi, {"interaction_boost": "off", "app": "gmail"})
    assert off.cpu.interaction_boost is None
    assert knobs == {"interaction_boost": "off"} and rest == {"app": "gmail"}


def test_the_table_is_checked() -> None:
    with pytest.raises(ValidationError, match="names cluster"):
        _profile({"min_freq_mhz": {"big": 1000}})
    with pytest.raises(ValidationError, match="must not exceed"):
        _profile({"min_freq_mhz": {"c0": 1000}, "min_duration_ms": 900, "max_duration_ms": 800})
    with pytest.raises(ValidationError, match="at least one cluster"):
        _profile({"min_freq_mhz": {}})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 3000)), min_size=1, max_size=12))
def test_the_lock_ends_at_the_latest_hint_end_and_floors_come_back(
    hints: list[tuple[int, int]],
) -> None:
    phone = _phone(_interactive())
    boost = phone.cpu.interaction_boost
    policy = phone.cpu.policies["c0"]
    assert boost is not None
    end = 0
    for gap_ms, duration_ms in hints:
        phone.run(ms(gap_ms))
        now = phone.env.now
        phone.cpu.interaction_hint(ms(duration_ms))
        this_end = now + ms(min(max(duration_ms, 100), 1000))
        end = max(end, this_end) if end > now else this_end
        assert boost.until_ns == end and policy.min_khz == 600_000
    phone.run(end - phone.env.now + 1)
    assert not boost.active and policy.min_khz == OPP[0]


def test_a_fling_in_ui_bench_takes_the_boost_and_it_speeds_the_frames() -> None:
    profile = load_profile("redmi-5")
    params = {"app": "gmail", "duration_s": "4"}
    boosted = run_scenario("ui-bench", profile, 1, params)
    plain = run_scenario("ui-bench", profile, 1, {**params, "interaction_boost": "off"})
    frames = boosted.tables["frames"]
    assert len(frames) > 100
    slow = int(boosted.metrics["naive_sr"]) + int(boosted.metrics["naive_ff"])
    slow_plain = int(plain.metrics["naive_sr"]) + int(plain.metrics["naive_ff"])
    assert slow < slow_plain
    assert 0 < boosted.metrics["interaction_boost_s"] <= 4.0
    assert plain.metrics["interaction_boost_s"] == 0.0
