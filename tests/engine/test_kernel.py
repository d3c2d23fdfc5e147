from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.engine import NORMAL, URGENT, Environment, ms


def test_callbacks_run_in_time_order_and_advance_the_clock() -> None:
    env = Environment()
    seen: list[tuple[int, str]] = []
    env.schedule(ms(3), lambda a: seen.append((env.now, a)), "c")
    env.schedule(ms(1), lambda a: seen.append((env.now, a)), "a")
    env.schedule(ms(2), lambda a: seen.append((env.now, a)), "b")
    env.run()
    assert seen == [(ms(1), "a"), (ms(2), "b"), (ms(3), "c")]


def test_ties_break_by_priority_then_insertion_order() -> None:
    env = Environment()
    seen: list[str] = []
    env.schedule(5, seen.append, "normal-1", NORMAL)
    env.schedule(5, seen.append, "urgent", URGENT)
    env.schedule(5, seen.append, "normal-2", NORMAL)
    env.run()
    assert seen == ["urgent", "normal-1", "normal-2"]


def test_cancelled_timer_never_fires_and_peek_skips_it() -> None:
    env = Environment()
    seen: list[str] = []
    timer = env.schedule(10, seen.append, "cancelled")
    env.schedule(20, seen.append, "kept")
    timer.cancel()
    assert not timer.active
    assert env.peek() == 20
    env.run()
    assert seen == ["kept"]


def test_run_until_stops_before_the_limit_and_sets_the_clock() -> None:
    env = Environment()
    seen: list[int] = []
    for t in (10, 20, 30):
        env.schedule(t, seen.append, t)
    env.run(until_ns=20)
    assert seen == [10]
    assert env.now == 20
    env.run(until_ns=100)
    assert seen == [10, 20, 30]
    assert env.now == 100


def test_scheduling_into_the_past_is_refused() -> None:
    env = Environment()
    with pytest.raises(ValueError):
        env.schedule(-1, print)
    env.run(until_ns=50)
    with pytest.raises(ValueError):
        env.run(until_ns=10)


def test_step_returns_false_when_nothing_is_left() -> None:
    env = Environment()
    env.schedule(1, lambda _: None)
    assert env.step() is True
    assert env.step() is False


@given(
    st.lists(
        st.tuples(st.integers(0, 50), st.sampled_from([URGENT, NORMAL]), st.booleans()),
        max_size=60,
    )
)
def test_event_order_is_time_priority_insertion_and_clock_is_monotone(
    items: list[tuple[int, int, bool]],
) -> None:
    env = Environment()
    fired: list[tuple[int, int, int]] = []
    clock: list[int] = []
    timers = []
    for index, (delay, priority, _) in enumerate(items):
        key = (delay, priority, index)
        timers.append(
            env.schedule(delay, lambda k: (fired.append(k), clock.append(env.now)), key, priority)
        )
    for timer, (_, _, cancel) in zip(timers, items, strict=True):
        if cancel:
            timer.cancel()
    env.run()
    expected = sorted((d, p, i) for i, (d, p, cancel) in enumerate(items) if not cancel)
    assert fired == expected
    assert clock == sorted(clock)
    assert all(now == key[0] for now, key in zip(clock, fired, strict=True))
