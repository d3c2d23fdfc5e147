"""MemoryAware: caps per trim level computed by hand on the memory-pressure
study's ladders, recovery after the
quiet period, no cap without trims, and a valid, monotone index for any ladder."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.device.lmk import (
    TRIM_NONE,
    TRIM_RUNNING_CRITICAL,
    TRIM_RUNNING_LOW,
    TRIM_RUNNING_MODERATE,
)
from mqoe.policies.abr import (
    AbrRule,
    AbrState,
    Decision,
    MostConservative,
    Representation,
    Throughput,
)
from mqoe.policies.memory_adapt import MemoryAware

R = Representation
# Memory-pressure study's frame-rate experiments: 480p at 24/30/48/60 fps (2.5/2.5/4/4 Mbit/s).
FPS_480P = [R(2500, 480, 24), R(2500, 480, 30), R(4000, 480, 48), R(4000, 480, 60)]
# Memory-pressure study's ladder, 240p–1080p at 30 and 60 fps, sorted by bitrate:
# 0 240p30 · 1 240p60 · 2 360p30 · 3 360p60 · 4 480p30 · 5 480p60 · 6 720p30 · 7 720p60
# 8 1080p30 · 9 1080p60
SPEC01 = [R(500, 240, 30), R(1000, 240, 60), R(1000, 360, 30), R(1500, 360, 60),
          R(2500, 480, 30), R(4000, 480, 60), R(5000, 720, 30), R(7500, 720, 60),
          R(8000, 1080, 30), R(12000, 1080, 60)]  # fmt: skip

MODERATE, LOW, CRITICAL = TRIM_RUNNING_MODERATE, TRIM_RUNNING_LOW, TRIM_RUNNING_CRITICAL


def state(
    ladder: Sequence[Representation],
    trim_level: int = TRIM_NONE,
    *,
    now_s: float = 100.0,
    last_trim_s: float | None = 99.0,
) -> AbrState:
    return AbrState(
        now_s=now_s, ladder=ladder, segment_s=4.0, buffer_s=20.0, buffer_max_s=60.0,
        downloads=(), trim_level=trim_level, last_trim_s=last_trim_s,
    )  # fmt: skip


def choose(rule: MemoryAware, s: AbrState) -> int:
    return rule.choose(s).representation


@pytest.mark.parametrize(
    ("ladder", "step", "expected"),
    [
        # fps on 480p: caps 48 / 30 / 24 → 480p48, 480p30, 480p24.
        (FPS_480P, "fps", {MODERATE: 2, LOW: 1, CRITICAL: 0}),
        # resolution on a one-resolution ladder: nothing below 480p is offered, no cap.
        (FPS_480P, "resolution", {MODERATE: 3, LOW: 3, CRITICAL: 3}),
        # fps on 30/60: caps 48 / 30 / 30 (the lowest offered) → 1080p30 every time.
        (SPEC01, "fps", {MODERATE: 8, LOW: 8, CRITICAL: 8}),
        # resolution: caps 720 / 480 / 240 → 720p60, 480p60, 240p60.
        (SPEC01, "resolution", {MODERATE: 7, LOW: 5, CRITICAL: 1}),
        # both: (48 fps, 720p) → 720p30; (30, 480p) → 480p30; (30, 240p) → 240p30.
        (SPEC01, "both", {MODERATE: 6, LOW: 4, CRITICAL: 0}),
    ],
)
def test_caps_by_trim_level(
    ladder: Sequence[Representation], step: str, expected: dict[int, int]
) -> None:
    rule = MemoryAware(step=step)  # type: ignore[arg-type]
    got = {level: choose(rule, state(ladder, level)) for level in expected}
    assert got == expected


@pytest.mark.parametrize("step", ["fps", "resolution", "both"])
@pytest.mark.parametrize("ladder", [FPS_480P, SPEC01])
def test_no_trim_signal_no_cap(ladder: Sequence[Representation], step: str) -> None:
    rule = MemoryAware(step=step)  # type: ignore[arg-type]
    assert choose(rule, state(ladder, TRIM_NONE)) == len(ladder) - 1
    assert choose(rule, state(ladder, TRIM_NONE, last_trim_s=None)) == len(ladder) - 1


def test_recovers_after_the_quiet_period() -> None:
    rule = MemoryAware(step="fps", quiet_s=30.0)
    assert choose(rule, state(FPS_480P, MODERATE, now_s=39.9, last_trim_s=10.0)) == 2
    assert choose(rule, state(FPS_480P, MODERATE, now_s=40.0, last_trim_s=10.0)) == 3
    assert choose(rule, state(FPS_480P, CRITICAL, now_s=40.0, last_trim_s=10.5)) == 0
    assert choose(rule, state(FPS_480P, CRITICAL, now_s=41.0, last_trim_s=10.5)) == 3


def test_without_a_signal_time_the_signalled_cap_stays() -> None:
    rule = MemoryAware(step="fps", quiet_s=30.0)
    assert choose(rule, state(FPS_480P, LOW, now_s=1e6, last_trim_s=None)) == 1


def test_background_trim_levels_count_as_critical() -> None:
    rule = MemoryAware(step="fps")
    for level in (20, 40, 60, 80):  # UI_HIDDEN, BACKGROUND, MODERATE, COMPLETE
        assert choose(rule, state(FPS_480P, level)) == 0


def test_no_rung_meets_both_caps_gives_the_lowest_rung() -> None:
    # Moderate caps at 48 fps and 360p: 240p exists only at 60 fps, 30 fps only at 480p.
    ladder = [R(1000, 240, 60), R(2500, 480, 30)]
    assert choose(MemoryAware(step="both"), state(ladder, MODERATE)) == 0
    assert choose(MemoryAware(step="fps"), state(ladder, MODERATE)) == 1


def test_rungs_without_fps_or_height_are_not_capped_in_that_dimension() -> None:
    ladder = [R(500), R(1000, 480, 30), R(2000, 480, 60), R(3000)]
    assert choose(MemoryAware(step="fps"), state(ladder, CRITICAL)) == 3
    assert choose(MemoryAware(step="fps"), state([R(500), R(900)], CRITICAL)) == 1


def test_combines_with_a_network_rule_as_a_cap() -> None:
    rule = MostConservative([Throughput(), MemoryAware(step="fps")])
    rich = state(FPS_480P, LOW)
    assert rule.choose(rich) == Decision(0)  # no history: Throughput says the lowest rung
    assert isinstance(MemoryAware(), AbrRule)
    assert MemoryAware().choose(rich) == Decision(1)  # a plain ladder decision, no rate


@pytest.mark.parametrize(
    "kwargs",
    [{"step": "framerate"}, {"quiet_s": -1.0}, {"fps_levels": ()}, {"height_levels": (720, 0)}],
)
def test_rejects_bad_parameters(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        MemoryAware(**kwargs)  # type: ignore[arg-type]


_RUNGS = st.builds(
    Representation,
    bitrate_kbps=st.floats(100, 30000),
    height_px=st.one_of(st.none(), st.sampled_from([144, 240, 360, 480, 720, 1080, 1440])),
    fps=st.one_of(st.none(), st.sampled_from([15.0, 24.0, 25.0, 30.0, 48.0, 50.0, 60.0])),
)
_LEVELS = [TRIM_NONE, MODERATE, LOW, CRITICAL, 20, 40, 60, 80]


@given(
    rungs=st.lists(_RUNGS, min_size=1, max_size=12),
    step=st.sampled_from(["fps", "resolution", "both"]),
    now_s=st.floats(0, 1e5),
    since_s=st.one_of(st.none(), st.floats(0, 100)),
)
def test_always_a_valid_index_and_never_higher_under_more_pressure(
    rungs: list[Representation], step: str, now_s: float, since_s: float | None
) -> None:
    ladder = sorted(rungs, key=lambda rep: rep.bitrate_kbps)
    rule = MemoryAware(step=step)  # type: ignore[arg-type]
    last_trim_s = None if since_s is None else now_s - since_s
    picks = [choose(rule, state(ladder, level, now_s=now_s, last_trim_s=last_trim_s))
             for level in _LEVELS]  # fmt: skip
    assert all(0 <= pick < len(ladder) for pick in picks)
    assert picks[0] == len(ladder) - 1
    assert picks == sorted(picks, reverse=True)  # a higher trim level never raises the cap
