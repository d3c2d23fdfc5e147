"""ABR rules: hand-computed choices per rule, combination, user rules, parsing, invariants."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.errors import UserError
from mqoe.policies.abr import (
    ABR_RULES,
    BBA,
    AbrRule,
    AbrState,
    Bola,
    ConservativeThroughput,
    Decision,
    Download,
    DroppedFrames,
    ExoPlayerLike,
    Fixed,
    FunctionRule,
    MostConservative,
    Representation,
    Throughput,
    as_rule,
    buffer_choice,
    make_rule,
)

SPEC03_KBPS = [235, 375, 560, 750, 1050, 1400, 1750]  # downward-spiral study's ladder
SPEC03 = [Representation(float(kbps)) for kbps in SPEC03_KBPS]


def dl(kbps: float, duration_s: float = 1.0, segment: int = 0) -> Download:
    """A download measured at ``kbps`` (size = kbps × 125 bytes per second of download)."""
    return Download(segment, 0, kbps, round(kbps * 125 * duration_s), 0.0, duration_s)


def dl_sized(kbps: float, size_bytes: int) -> Download:
    """A download of ``size_bytes`` taking as long as ``kbps`` needs."""
    return Download(0, 0, kbps, size_bytes, 0.0, size_bytes * 8 / 1000 / kbps)


def state(
    *,
    ladder: Sequence[Representation] = SPEC03,
    buffer_s: float = 0.0,
    buffer_max_s: float = 240.0,
    segment_s: float = 4.0,
    downloads: Sequence[Download] = (),
    last: int | None = None,
    frame_stats: dict[int, tuple[int, int]] | None = None,
) -> AbrState:
    return AbrState(
        now_s=0.0,
        ladder=list(ladder),
        segment_s=segment_s,
        buffer_s=buffer_s,
        buffer_max_s=buffer_max_s,
        downloads=list(downloads),
        last=last,
        frame_stats=frame_stats or {},
    )


# --- ConservativeThroughput ---------------------------------------------------------------


def test_conservative_discrete_picks_the_rung_below_sixty_percent_of_the_estimate() -> None:
    # 0.6 × 2500 = 1500 → the 1400 rung (index 5), not 1750.
    decision = ConservativeThroughput().choose(state(downloads=[dl(2500)] * 3))
    assert decision == Decision(5)


def test_conservative_estimate_is_the_arithmetic_mean_of_the_last_window_downloads() -> None:
    # Mean of 1000 and 3000 = 2000 → 1200 → 1050 (index 4); a harmonic mean (1500 → 900)
    # would give 750, and the two old 100 Mbit/s downloads lie outside the window of 2.
    downloads = [dl(100_000), dl(100_000), dl(1000), dl(3000)]
    assert ConservativeThroughput(window=2).choose(state(downloads=downloads)) == Decision(4)


def test_conservative_default_window_is_ten_downloads() -> None:
    # Ten downloads at 1000 kbit/s → 600 → 560 (index 2); the 11th-oldest is ignored.
    downloads = [dl(100_000)] + [dl(1000)] * 10
    assert ConservativeThroughput().choose(state(downloads=downloads)) == Decision(2)


def test_conservative_without_history_starts_on_the_lowest_rung() -> None:
    assert ConservativeThroughput().choose(state()) == Decision(0)
    continuous = ConservativeThroughput(mode="continuous").choose(state())
    assert continuous == Decision(0, 235.0)


def test_conservative_continuous_requests_c_times_the_estimate() -> None:
    # 0.7 × 1800 = 1260: requested as such, labelled with the 1050 rung (index 4).
    decision = ConservativeThroughput(mode="continuous").choose(state(downloads=[dl(1800)]))
    assert decision.representation == 4
    assert decision.rate_kbps == pytest.approx(1260.0)
    # c = 1.0 with 1600 kbit/s: the request is 1600, labelled with the 1400 rung.
    full = ConservativeThroughput(mode="continuous", c=1.0).choose(state(downloads=[dl(1600)]))
    assert full == Decision(5, 1600.0)


def test_conservative_continuous_clamps_to_the_ladder_or_max_kbps() -> None:
    rule = ConservativeThroughput(mode="continuous")
    assert rule.choose(state(downloads=[dl(100)])) == Decision(0, 235.0)  # 70 → 235
    assert rule.choose(state(downloads=[dl(10_000)])) == Decision(6, 1750.0)  # 7000 → 1750
    capped = ConservativeThroughput(mode="continuous", max_kbps=3000.0)
    assert capped.choose(state(downloads=[dl(10_000)])) == Decision(6, 3000.0)


# --- Throughput -----------------------------------------------------------------------------


def test_throughput_picks_highest_rung_below_ninety_percent_of_last_three() -> None:
    # Last three at 1000 → 900 → 750 (index 3); with the 10000 one (window 4) it would be 1750.
    downloads = [dl(10_000), dl(1000), dl(1000), dl(1000)]
    assert Throughput().choose(state(downloads=downloads)) == Decision(3)
    assert Throughput(window=4).choose(state(downloads=downloads)) == Decision(6)


def test_throughput_without_history_is_the_lowest_rung() -> None:
    assert Throughput().choose(state()) == Decision(0)


# --- BBA ------------------------------------------------------------------------------------
# Downward-spiral study's ladder, 240 s buffer, 4 s segments: reservoir 90 s, cushion 126 s, and
# f(B) = 235 + 1515 × (B − 90) / 126: f(132) = 740, f(153) = 992.5, f(174) = 1245.


@pytest.mark.parametrize("last", [None, 0, 3, 6])
def test_bba_below_the_reservoir_is_the_lowest_rung(last: int | None) -> None:
    assert BBA().choose(state(buffer_s=50.0, last=last)) == Decision(0)
    assert BBA().choose(state(buffer_s=90.0, last=last)) == Decision(0)


@pytest.mark.parametrize("last", [None, 0, 3, 6])
def test_bba_above_reservoir_plus_cushion_is_the_top_rung(last: int | None) -> None:
    assert BBA().choose(state(buffer_s=216.0, last=last)) == Decision(6)
    assert BBA().choose(state(buffer_s=220.0, last=last)) == Decision(6)


def test_bba_hysteresis_keeps_the_previous_rate_inside_the_band() -> None:
    # f(153) = 992.5 lies between 750's neighbours 560 and 1050: stay on 750, although a
    # memoryless map would not; f(132) = 740 likewise keeps 750.
    assert BBA().choose(state(buffer_s=153.0, last=3)) == Decision(3)
    assert BBA().choose(state(buffer_s=132.0, last=3)) == Decision(3)
    # From 1050, f = 992.5 is above 750 (R−): stay on 1050.
    assert BBA().choose(state(buffer_s=153.0, last=4)) == Decision(4)


def test_bba_steps_up_to_the_highest_rate_below_f_once_f_reaches_the_next_rate() -> None:
    # From 750: f(174) = 1245 ≥ 1050 → max{R < 1245} = 1050 (index 4).
    assert BBA().choose(state(buffer_s=174.0, last=3)) == Decision(4)
    # From 235: f(132) = 740 ≥ 375 → max{R < 740} = 560 (index 2), skipping 375.
    assert BBA().choose(state(buffer_s=132.0, last=0)) == Decision(2)


def test_bba_steps_down_to_the_lowest_rate_above_f_once_f_falls_to_the_next_rate() -> None:
    # From 1400: f(153) = 992.5 ≤ 1050 → min{R > 992.5} = 1050 (index 4), not 750.
    assert BBA().choose(state(buffer_s=153.0, last=5)) == Decision(4)
    # From 1750: f(132) = 740 ≤ 1400 → min{R > 740} = 750 (index 3).
    assert BBA().choose(state(buffer_s=132.0, last=6)) == Decision(3)


def test_bba_uses_the_papers_strict_inequalities_when_f_lands_on_a_rung() -> None:
    # Ladder 100..500: f(153) = 100 + 400 × 63 / 126 = 300 exactly, the rate of index 2.
    ladder = [Representation(float(kbps)) for kbps in (100, 200, 300, 400, 500)]
    rule = BBA()
    # Up from 100: max{R < 300} = 200; down from 500: min{R > 300} = 400; on 300: stay.
    assert rule.choose(state(ladder=ladder, buffer_s=153.0, last=0)) == Decision(1)
    assert rule.choose(state(ladder=ladder, buffer_s=153.0, last=4)) == Decision(3)
    assert rule.choose(state(ladder=ladder, buffer_s=153.0, last=2)) == Decision(2)


def test_bba_scales_reservoir_and_cushion_to_a_small_buffer() -> None:
    # 60 s buffer, 4 s segments: 216 s shrink to 56 s of room → reservoir 23.33 s.
    rule = BBA()
    reservoir_s, cushion_end_s = rule.bounds_s(60.0, 4.0)
    assert reservoir_s == pytest.approx(90 * 56 / 216)
    assert cushion_end_s == 56.0
    assert rule.choose(state(buffer_s=56.0, buffer_max_s=60.0, last=0)) == Decision(6)
    assert rule.choose(state(buffer_s=20.0, buffer_max_s=60.0, last=6)) == Decision(0)
    # Unscaled, 56 s would still be inside the 90 s reservoir.
    assert rule.bounds_s(240.0, 4.0) == (90.0, 216.0)


# --- BOLA -----------------------------------------------------------------------------------
# Ladder 1000/2000/4000, 4 s segments, 20 s buffer: Q_max = 5, v = (0, ln 2, ln 4),
# V = 4 / (ln 4 + 5) = 0.62634; V·(v_m + 5) = 3.1317, 3.5658, 4.0.
# Score_m = (V·(v_m + 5) − Q) / S_m; switches 0→1 at Q = 2·3.1317 − 3.5658 = 2.698 and
# 1→2 at Q = 2·3.5658 − 4 = 3.132 (buffer 10.79 s and 12.53 s).
BOLA_LADDER = [Representation(1000.0), Representation(2000.0), Representation(4000.0)]


@pytest.mark.parametrize(
    ("buffer_s", "expected"),
    [(0.0, 0), (10.0, 0), (11.0, 1), (12.0, 1), (13.0, 2), (14.0, 2), (19.0, 2)],
)
def test_bola_basic_matches_the_hand_computed_choice(buffer_s: float, expected: int) -> None:
    s = state(ladder=BOLA_LADDER, buffer_s=buffer_s, buffer_max_s=20.0, segment_s=4.0)
    assert Bola().choose(s) == Decision(expected)


def test_bola_smaller_gamma_p_reaches_the_top_rung_at_a_lower_buffer() -> None:
    # Q = 3 (12 s). γp = 5 picks index 1 (above). γp = 0.5: V = 4 / (ln 4 + 0.5) = 2.1205,
    # V·(v_m + 0.5) = 1.0603, 2.5301, 4.0 → scores −1.94e-3, −0.235e-3, +0.25e-3 → index 2.
    s12 = state(ladder=BOLA_LADDER, buffer_s=12.0, buffer_max_s=20.0, segment_s=4.0)
    assert Bola().choose(s12) == Decision(1)
    assert Bola(gamma_p=0.5).choose(s12) == Decision(2)


def test_bola_breaks_score_ties_towards_the_lower_rung() -> None:
    # Two rungs at the same rate score identically at any buffer level.
    ladder = [Representation(1000.0), Representation(1000.0), Representation(4000.0)]
    s = state(ladder=ladder, buffer_s=0.0, buffer_max_s=20.0, segment_s=4.0)
    assert Bola().choose(s) == Decision(0)


# --- ExoPlayerLike --------------------------------------------------------------------------


def test_exoplayer_uses_seventy_percent_of_the_estimate() -> None:
    # One 1 MB download at 2000 kbit/s: 0.7 × 2000 = 1400 → index 5.
    s = state(downloads=[dl_sized(2000, 1_000_000)], buffer_s=15.0)
    assert ExoPlayerLike().choose(s) == Decision(5)


def test_exoplayer_estimate_is_a_sqrt_bytes_weighted_median() -> None:
    # Samples (kbit/s, weight): (1000, 900), (3000, 100), (3000, 100). Weighted median:
    # total 1100, half 550 → 1000 → 700 → 560 (index 2). The plain median (3000) would
    # give 1750 and the mean (1667) 1050.
    downloads = [dl_sized(1000, 810_000), dl_sized(3000, 10_000), dl_sized(3000, 10_000)]
    assert ExoPlayerLike().choose(state(downloads=downloads, buffer_s=15.0)) == Decision(2)


def test_exoplayer_median_moves_to_the_heavier_half() -> None:
    # (1000, 500), (3000, 600): total 1100, half 550 → the 500 at 1000 kbit/s is not
    # enough → 3000 → 2100 → 1750 (index 6). A lower percentile would stay at 1000.
    downloads = [dl_sized(1000, 250_000), dl_sized(3000, 360_000)]
    assert ExoPlayerLike().choose(state(downloads=downloads, buffer_s=15.0)) == Decision(6)


def test_exoplayer_window_holds_a_total_weight_of_2000() -> None:
    # Five old samples at 100 kbit/s, then two at 2000 kbit/s, each weight 1000: only the
    # newest two fit in 2000 → median 2000 → 1400 → index 5 (all seven: median 100).
    downloads = [dl_sized(100, 1_000_000)] * 5 + [dl_sized(2000, 1_000_000)] * 2
    assert ExoPlayerLike().choose(state(downloads=downloads, buffer_s=15.0)) == Decision(5)


def test_exoplayer_window_keeps_part_of_the_oldest_sample() -> None:
    # Newest first: (100, 900), (2000, 1000), then (100, 1000) trimmed to weight 100.
    # Total 2000, half 1000: 100-samples weigh 900 + 100 = 1000 → 100 kbit/s → index 0.
    # Dropping the partial sample instead would give 2000 (→ index 5).
    downloads = [dl_sized(100, 1_000_000), dl_sized(2000, 1_000_000), dl_sized(100, 810_000)]
    assert ExoPlayerLike().choose(state(downloads=downloads, buffer_s=15.0)) == Decision(0)


def test_exoplayer_ignores_zero_time_downloads() -> None:
    # ExoPlayer adds no meter sample for a transfer that took no time; counting it would
    # add a near-infinite throughput and move the median to the top rung.
    instant = Download(1, 0, 1000.0, 1_000_000, 5.0, 5.0)
    downloads = [dl_sized(1000, 1_000_000), instant, instant]
    assert ExoPlayerLike().choose(state(downloads=downloads, buffer_s=15.0)) == Decision(2)


def test_exoplayer_keeps_its_initial_estimate_until_2s_or_512kib_downloaded() -> None:
    # 37.5 kB in 0.1 s = 3000 kbit/s, but too little data: initial 1000 → 700 → 560.
    small = [dl(3000, duration_s=0.1)]
    assert ExoPlayerLike().choose(state(downloads=small)) == Decision(2)
    assert ExoPlayerLike().choose(state()) == Decision(2)
    # 21 such downloads pass 2 s (and 512 KiB): the measured 3000 → 2100 → 1750.
    assert ExoPlayerLike().choose(state(downloads=small * 21)) == Decision(6)


def test_exoplayer_does_not_switch_up_below_ten_seconds_of_buffer() -> None:
    fast = [dl_sized(10_000, 1_000_000)]  # ideal: the top rung
    assert ExoPlayerLike().choose(state(downloads=fast, buffer_s=9.9, last=2)) == Decision(2)
    assert ExoPlayerLike().choose(state(downloads=fast, buffer_s=10.0, last=2)) == Decision(6)


def test_exoplayer_does_not_switch_down_with_25_seconds_of_buffer() -> None:
    slow = [dl_sized(300, 1_000_000)]  # 0.7 × 300 = 210: ideal is the lowest rung
    assert ExoPlayerLike().choose(state(downloads=slow, buffer_s=25.0, last=5)) == Decision(5)
    assert ExoPlayerLike().choose(state(downloads=slow, buffer_s=24.9, last=5)) == Decision(0)


# --- DroppedFrames, Fixed -------------------------------------------------------------------


def test_dropped_frames_caps_below_the_lowest_rung_that_drops_too_many() -> None:
    stats = {1: (10, 400), 3: (80, 400), 5: (300, 400)}  # index 3 drops 20% > 15%
    assert DroppedFrames().choose(state(frame_stats=stats)) == Decision(2)


def test_dropped_frames_ignores_small_samples_and_ratios_at_the_limit() -> None:
    stats = {2: (300, 374), 4: (60, 400)}  # too few frames; exactly 15% is allowed
    assert DroppedFrames().choose(state(frame_stats=stats)) == Decision(6)
    assert DroppedFrames().choose(state()) == Decision(6)


def test_dropped_frames_on_the_lowest_rung_caps_at_the_lowest_rung() -> None:
    assert DroppedFrames().choose(state(frame_stats={0: (200, 400)})) == Decision(0)


def test_fixed_always_returns_its_rung_and_rejects_one_off_the_ladder() -> None:
    assert Fixed(representation=4).choose(state(buffer_s=100.0, last=1)) == Decision(4)
    with pytest.raises(UserError, match="not on the ladder"):
        Fixed(representation=7).choose(state())


# --- MostConservative and user rules --------------------------------------------------------


def test_most_conservative_picks_the_lowest_effective_rate() -> None:
    downloads = [dl(10_000)] * 3
    combined = MostConservative([Throughput(), Fixed(representation=2), DroppedFrames()])
    assert combined.choose(state(downloads=downloads)) == Decision(2)
    # A continuous 1000 kbit/s request (index 3) is below the 1050 rung.
    continuous = ConservativeThroughput(mode="continuous", c=1.0)
    pair = MostConservative([continuous, Fixed(representation=4)])
    assert pair.choose(state(downloads=[dl(1000)])) == Decision(3, 1000.0)


def test_most_conservative_breaks_ties_towards_the_lower_rung() -> None:
    def above(s: AbrState) -> Decision:
        return Decision(4, 750.0)  # a continuous request of 750 labelled as rung 4

    combined = MostConservative([above, Fixed(representation=3)])
    assert combined.choose(state()) == Decision(3)


def test_dropped_frames_caps_a_throughput_rule_via_make_rule() -> None:
    rule = make_rule("throughput+dropped-frames")
    s = state(downloads=[dl(10_000)] * 3, frame_stats={4: (100, 400)})
    assert rule.choose(s) == Decision(3)


class _HalfLadder:
    name = "half"

    def choose(self, state: AbrState) -> Decision:
        return Decision(len(state.ladder) // 2)


def test_a_plain_function_and_a_class_plug_in_as_rules() -> None:
    def second(s: AbrState) -> int:
        return 1

    function_rule = as_rule(second)
    assert isinstance(function_rule, FunctionRule)
    assert function_rule.choose(state()) == Decision(1)
    class_rule = as_rule(_HalfLadder())
    assert isinstance(class_rule, AbrRule)
    assert class_rule.choose(state()) == Decision(3)
    combined = MostConservative([second, _HalfLadder(), Throughput()])
    assert combined.choose(state(downloads=[dl(10_000)] * 3)) == Decision(1)
    assert combined.name == "second+half+throughput"


def test_most_conservative_needs_a_rule() -> None:
    with pytest.raises(ValueError, match="at least one"):
        MostConservative([])


# --- registry and make_rule -----------------------------------------------------------------


def test_registry_names_match_the_rules_and_defaults_construct() -> None:
    assert set(ABR_RULES) == {
        "conservative",
        "bba",
        "bola",
        "throughput",
        "exoplayer",
        "dropped-frames",
        "fixed",
    }
    for name, rule_type in ABR_RULES.items():
        rule = make_rule(name)
        assert type(rule) is rule_type
        assert getattr(rule, "name", None) == name


def test_make_rule_parses_typed_arguments() -> None:
    assert make_rule("bba:reservoir_s=10,cushion_s=20") == BBA(reservoir_s=10.0, cushion_s=20.0)
    assert make_rule(" fixed : representation=2 ") == Fixed(representation=2)
    conservative = make_rule("conservative:mode=continuous,c=1,max_kbps=3000,window=5")
    assert conservative == ConservativeThroughput(
        mode="continuous", c=1.0, max_kbps=3000.0, window=5
    )
    assert isinstance(conservative, ConservativeThroughput)
    assert isinstance(conservative.window, int) and isinstance(conservative.c, float)
    assert make_rule("conservative:max_kbps=none") == ConservativeThroughput(max_kbps=None)


def test_make_rule_joins_plus_specs_into_most_conservative() -> None:
    rule = make_rule("bba:reservoir_s=5+dropped-frames:max_drop_ratio=0.2")
    assert isinstance(rule, MostConservative)
    assert rule.rules == (BBA(reservoir_s=5.0), DroppedFrames(max_drop_ratio=0.2))


@dataclass(frozen=True, kw_only=True)
class _UserRule:
    name: ClassVar[str] = "user"

    enabled: bool = True
    label: str = "x"

    def choose(self, state: AbrState) -> Decision:
        return Decision(0)


@pytest.mark.parametrize(("text", "expected"), [("true", True), ("off", False), ("0", False)])
def test_make_rule_parses_a_registered_user_rule_with_bool_and_str_parameters(
    monkeypatch: pytest.MonkeyPatch, text: str, expected: bool
) -> None:
    monkeypatch.setitem(ABR_RULES, "user", _UserRule)
    rule = make_rule(f"user:enabled={text},label=hello")
    assert rule == _UserRule(enabled=expected, label="hello")
    with pytest.raises(UserError, match="user:enabled=maybe: expected true or false"):
        make_rule("user:enabled=maybe")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "unknown ABR rule 'nope'.*available: bba, bola, conservative"),
        ("", "unknown ABR rule ''"),
        ("throughput+", "unknown ABR rule ''"),
        ("bba:depth_s=3", "no parameter 'depth_s'; it has: cushion_s, reservoir_s"),
        ("bba:reservoir_s", "expected key=value"),
        ("bba:", "expected key=value"),
        ("bba:reservoir_s=abc", "bba:reservoir_s=abc: expected a number"),
        ("fixed:representation=1.5", "expected an integer"),
        ("conservative:mode=wavy", "expected one of discrete, continuous"),
        ("bba:reservoir_s=-1", "reservoir_s must be a non-negative number"),
        ("bola:gamma_p=nan", "gamma_p must be a positive number"),
        ("throughput:window=0", "window must be at least 1"),
        ("fixed:representation=-1", "representation must be a ladder index"),
        ("bba:reservoir_s=1,reservoir_s=2", "given twice"),
    ],
)
def test_make_rule_rejects_bad_specs_with_one_line(spec: str, message: str) -> None:
    with pytest.raises(UserError, match=message) as info:
        make_rule(spec)
    assert "\n" not in str(info.value)


# --- properties -----------------------------------------------------------------------------


@st.composite
def ladders(draw: st.DrawFn) -> list[Representation]:
    rates = draw(
        st.lists(
            st.floats(min_value=50.0, max_value=50_000.0, allow_nan=False),
            min_size=1,
            max_size=8,
            unique=True,
        )
    )
    return [Representation(rate) for rate in sorted(rates)]


@st.composite
def downloads_lists(draw: st.DrawFn) -> list[Download]:
    items = draw(
        st.lists(
            st.tuples(
                st.integers(min_value=0, max_value=5_000_000),
                st.floats(min_value=0.0, max_value=30.0, allow_nan=False),
            ),
            max_size=15,
        )
    )
    return [
        Download(i, 0, 1000.0, size, float(i), float(i) + duration)
        for i, (size, duration) in enumerate(items)
    ]


@st.composite
def states(draw: st.DrawFn) -> AbrState:
    ladder = draw(ladders())
    segment_s = draw(st.floats(min_value=0.5, max_value=10.0))
    buffer_max_s = draw(st.floats(min_value=segment_s, max_value=300.0))
    buffer_s = draw(st.floats(min_value=0.0, max_value=buffer_max_s))
    last = draw(st.none() | st.integers(min_value=0, max_value=len(ladder) - 1))
    frame_stats = draw(
        st.dictionaries(
            st.integers(min_value=0, max_value=10),
            st.tuples(st.integers(0, 1000), st.integers(0, 1000)).map(lambda p: (min(p), max(p))),
            max_size=5,
        )
    )
    return AbrState(
        now_s=0.0,
        ladder=ladder,
        segment_s=segment_s,
        buffer_s=buffer_s,
        buffer_max_s=buffer_max_s,
        downloads=draw(downloads_lists()),
        last=last,
        frame_stats=frame_stats,
    )


ALL_RULES: list[AbrRule] = [
    ConservativeThroughput(),
    ConservativeThroughput(mode="continuous"),
    ConservativeThroughput(mode="continuous", c=1.0, max_kbps=100.0),
    BBA(),
    BBA(reservoir_s=0.0, cushion_s=0.0),
    Bola(),
    Throughput(),
    ExoPlayerLike(),
    DroppedFrames(),
    Fixed(),
    MostConservative([Throughput(), DroppedFrames(), BBA()]),
]


@settings(max_examples=300)
@given(states())
def test_every_rule_returns_a_valid_index_without_mutating_the_state(s: AbrState) -> None:
    before = copy.deepcopy(s)
    for rule in ALL_RULES:
        decision = rule.choose(s)
        assert 0 <= decision.representation < len(s.ladder)
        assert rule.choose(s) == decision  # deterministic
        if decision.rate_kbps is not None:
            assert math.isfinite(decision.rate_kbps)
            assert decision.rate_kbps >= s.ladder[0].bitrate_kbps
    assert s == before


@given(states(), st.floats(min_value=100.0, max_value=100_000.0))
def test_continuous_rates_stay_between_the_lowest_rung_and_the_cap(
    s: AbrState, max_kbps: float
) -> None:
    low = s.ladder[0].bitrate_kbps
    for rule, cap in [
        (ConservativeThroughput(mode="continuous"), s.ladder[-1].bitrate_kbps),
        (ConservativeThroughput(mode="continuous", c=1.0, max_kbps=max_kbps), max_kbps),
    ]:
        decision = rule.choose(s)
        assert decision.rate_kbps is not None
        assert low <= decision.rate_kbps <= max(cap, low)
        assert decision.representation == highest_rung_at_most(s.ladder, decision.rate_kbps)


def highest_rung_at_most(ladder: Sequence[Representation], kbps: float) -> int:
    fitting = [i for i, rep in enumerate(ladder) if rep.bitrate_kbps <= kbps]
    return fitting[-1] if fitting else 0


@given(
    states(),
    st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=2, max_size=10),
    st.floats(min_value=0.0, max_value=200.0),
    st.floats(min_value=0.0, max_value=200.0),
)
def test_bba_is_monotone_in_buffer_for_a_fixed_previous_rate(
    s: AbrState, fractions: list[float], reservoir_s: float, cushion_s: float
) -> None:
    rule = BBA(reservoir_s=reservoir_s, cushion_s=cushion_s)
    buffers = sorted(fraction * s.buffer_max_s for fraction in fractions)
    chosen = [
        rule.choose(
            AbrState(
                now_s=s.now_s,
                ladder=s.ladder,
                segment_s=s.segment_s,
                buffer_s=buffer_s,
                buffer_max_s=s.buffer_max_s,
                downloads=s.downloads,
                last=s.last,
            )
        ).representation
        for buffer_s in buffers
    ]
    assert chosen == sorted(chosen)


@given(states())
def test_bola_index_never_decreases_as_the_buffer_grows(s: AbrState) -> None:
    # BOLA-BASIC's choice is a step function of Q that never steps down.
    low = Bola().choose(AbrState(0.0, s.ladder, s.segment_s, 0.0, s.buffer_max_s, []))
    high = Bola().choose(AbrState(0.0, s.ladder, s.segment_s, s.buffer_s, s.buffer_max_s, []))
    assert low.representation <= high.representation


@given(
    st.lists(st.tuples(st.sampled_from(sorted(ABR_RULES)), st.booleans()), min_size=1, max_size=4)
)
def test_make_rule_accepts_any_plus_joined_registered_names(names: list[tuple[str, bool]]) -> None:
    spec = "+".join(f" {name} " if padded else name for name, padded in names)
    rule = make_rule(spec)
    assert isinstance(rule, MostConservative) == (len(names) > 1)


# --- the fast path (buffer_choice) --------------------------------------------------------

FAST_RULES: list[AbrRule] = [
    BBA(),
    BBA(reservoir_s=0.0, cushion_s=0.0),
    BBA(reservoir_s=5.0, cushion_s=10.0),
    Bola(),
    Bola(gamma_p=1.0),
    Fixed(),
    Fixed(representation=1),
]


@settings(max_examples=300)
@given(states(), st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=8))
def test_buffer_choice_is_choose_for_any_buffer_and_previous_rung(
    s: AbrState, fractions: list[float]
) -> None:
    for rule in FAST_RULES:
        if isinstance(rule, Fixed) and rule.representation >= len(s.ladder):
            continue
        choice = buffer_choice(rule, s.ladder, s.segment_s, s.buffer_max_s)
        assert choice is not None
        for fraction in [*fractions, 1.0, 0.0]:
            for last in [None, 0, len(s.ladder) - 1, s.last]:
                b = fraction * s.buffer_max_s
                full = AbrState(s.now_s, s.ladder, s.segment_s, b, s.buffer_max_s, [], last)
                assert Decision(choice(b, last)) == rule.choose(full)


def test_a_subclass_that_overrides_choose_loses_the_fast_path() -> None:
    class Mine(Bola):
        def choose(self, state: AbrState) -> Decision:
            return Decision(0)

    assert buffer_choice(Bola(), SPEC03, 4.0, 60.0) is not None
    assert buffer_choice(Mine(), SPEC03, 4.0, 60.0) is None
    assert buffer_choice(Throughput(), SPEC03, 4.0, 60.0) is None  # needs the history
    assert buffer_choice(FunctionRule(lambda state: 0), SPEC03, 4.0, 60.0) is None
    unsorted = [Representation(500.0), Representation(300.0)]
    assert buffer_choice(BBA(), unsorted, 4.0, 60.0) is None  # bisection needs order


def test_fixed_fast_path_refuses_a_rung_off_the_ladder() -> None:
    with pytest.raises(UserError, match="representation 9 is not on the ladder"):
        buffer_choice(Fixed(representation=9), SPEC03, 4.0, 60.0)
