"""The delay line is exactly per-item timers: same instants, same order against every
other event, including ties and a delay that changes while items are in flight."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.engine import DelayLine, Environment

# A script: at each step, wait some time, then put an item on the line (with the line's
# delay possibly changed first) and schedule an unrelated timer with some delay.
_step = st.tuples(
    st.integers(0, 30),  # wait before this step
    st.integers(0, 40),  # the line's delay for this put
    st.integers(0, 40),  # an unrelated timer's delay
    st.booleans(),  # run until the next step's instant, or keep scheduling at this one
)


def _replay(script: list[tuple[int, int, int, bool]], use_line: bool) -> list[tuple[int, str]]:
    env = Environment()
    seen: list[tuple[int, str]] = []

    def deliver(item: str) -> None:
        seen.append((env.now, item))
        if item.endswith("!"):  # a delivery that puts another item (as a hop would)
            put(item[:-1] + "+")

    line: DelayLine[str] = DelayLine(env, 0, deliver)

    def put(item: str) -> None:
        if use_line:
            line.put(item)
        else:
            env.schedule(line.delay_ns, deliver, item)

    for i, (wait, delay, other, advance) in enumerate(script):
        if advance:
            env.run(until_ns=env.now + wait)
        line.delay_ns = delay
        put(f"item{i}" + ("!" if i % 3 == 0 else ""))
        env.schedule(other, lambda tag: seen.append((env.now, tag)), f"timer{i}")
    env.run()
    return seen


@settings(max_examples=300, deadline=None)
@given(st.lists(_step, max_size=40))
def test_a_delay_line_orders_everything_exactly_as_one_timer_per_item(
    script: list[tuple[int, int, int, bool]],
) -> None:
    assert _replay(script, use_line=True) == _replay(script, use_line=False)


def test_only_the_first_item_in_flight_holds_a_heap_entry() -> None:
    env = Environment()
    got: list[tuple[int, int]] = []
    line: DelayLine[int] = DelayLine(env, 100, lambda i: got.append((env.now, i)))
    for i in range(50):
        line.put(i)
        env.run(until_ns=env.now + 1)
    assert len(line) == 50 and len(env._events) == 1
    env.run()
    assert got == [(100 + i, i) for i in range(50)]
    assert len(line) == 0 and not env._events


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="negative delay"):
        DelayLine(Environment(), -1, print)


def test_a_long_line_delivers_every_item_in_order_through_its_compactions() -> None:
    # Hundreds in flight at once, delivered while more arrive: the line drops the
    # delivered ones from its lists as it goes (mqoe.engine.kernel._COMPACT_AT).
    env = Environment()
    got: list[tuple[int, int]] = []
    line: DelayLine[int] = DelayLine(env, 1_000, lambda i: got.append((env.now, i)))
    for i in range(5_000):
        line.put(i)
        env.run(until_ns=env.now + 3)  # ~333 in flight
        assert len(line) == min(i + 1, 333)  # those sent in the last 1,000 ns
    env.run()
    assert got == [(1_000 + 3 * i, i) for i in range(5_000)]
    assert len(line) == 0 and not env._events


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 1_000), st.none()), max_size=600))
def test_a_fifo_behaves_as_a_deque(ops: list[int | None]) -> None:
    from collections import deque

    from mqoe.engine import Fifo

    fifo: Fifo[int] = Fifo()
    reference: deque[int] = deque()
    for op in ops:  # an integer is pushed; None pops (or must fail when empty)
        if op is not None:
            fifo.push(op)
            reference.append(op)
        elif reference:
            assert fifo.first() == reference[0]
            assert fifo.pop() == reference.popleft()
        else:
            with pytest.raises(IndexError):
                fifo.pop()
            with pytest.raises(IndexError):
                fifo.first()
        assert len(fifo) == len(reference)
    assert [fifo.pop() for _ in range(len(fifo))] == list(reference)
