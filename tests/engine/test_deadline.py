"""A deadline is exactly a timer cancelled and scheduled anew at each ``set``: same
instants, same order against every other event, however often it is pushed back or
brought forward, cancelled or re-armed from its own callback."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.engine import Deadline, Environment, Timer

# A script: at each step, run some time, then act on one of two deadlines (re-arm with a
# delay, or cancel) and schedule an unrelated timer. Small ranges: ties are the point.
_step = st.tuples(
    st.integers(0, 6),  # run this long first
    st.integers(0, 1),  # which deadline
    st.one_of(st.none(), st.integers(0, 12)),  # cancel, or re-arm with this delay
    st.integers(0, 12),  # an unrelated timer's delay
)


class _TimerDeadline:
    """The reference: one Timer per ``set``, the previous one cancelled."""

    def __init__(self, env: Environment, callback: object) -> None:
        self.env, self.callback = env, callback
        self.timer: Timer | None = None

    def set(self, delay_ns: int) -> None:
        self.cancel()
        self.timer = self.env.schedule(delay_ns, self._fire)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _fire(self, arg: object) -> None:
        self.timer = None
        self.callback(arg)  # type: ignore[operator]

    @property
    def active(self) -> bool:
        return self.timer is not None


def _replay(
    script: list[tuple[int, int, int | None, int]], use_deadline: bool, stepwise: bool
) -> list[tuple[int, str]]:
    env = Environment()
    seen: list[tuple[int, str]] = []
    deadlines: list[Deadline | _TimerDeadline] = []

    def fired(name: str, rearm_ns: int) -> object:
        def callback(_: object) -> None:
            seen.append((env.now, name))
            if rearm_ns:  # a deadline re-armed from its own callback (as an RTO is)
                deadlines[int(name[-1])].set(rearm_ns)

        return callback

    for k in range(2):
        callback = fired(f"deadline{k}", 3 * k)
        deadlines.append(Deadline(env, callback) if use_deadline else _TimerDeadline(env, callback))
    for i, (wait, which, delay, other) in enumerate(script):
        if stepwise:
            limit = env.now + wait
            while (nxt := env.peek()) is not None and nxt < limit and env.step():
                pass
            env.run(until_ns=limit)
        else:
            env.run(until_ns=env.now + wait)
        if delay is None:
            deadlines[which].cancel()
        else:
            deadlines[which].set(delay)
        seen.append((env.now, f"active{[d.active for d in deadlines]}"))
        env.schedule(other, lambda tag: seen.append((env.now, tag)), f"timer{i}")
    env.run(until_ns=env.now + 500)
    seen.append((env.now, f"active{[d.active for d in deadlines]}"))
    return seen


@settings(max_examples=400, deadline=None)
@given(st.lists(_step, max_size=40), st.booleans())
def test_a_deadline_orders_everything_exactly_as_a_new_timer_per_set(
    script: list[tuple[int, int, int | None, int]], stepwise: bool
) -> None:
    expected = _replay(script, use_deadline=False, stepwise=False)
    assert _replay(script, use_deadline=True, stepwise=stepwise) == expected


def test_a_deadline_pushed_back_keeps_one_heap_entry() -> None:
    env = Environment()
    fired: list[int] = []
    deadline = Deadline(env, lambda _: fired.append(env.now))
    for _ in range(100):  # re-armed every ns, 200 ns ahead: one entry, not 100
        deadline.set(200)
        env.run(until_ns=env.now + 1)
    assert len(env._events) == 1
    env.run()
    assert fired == [99 + 200]
    assert not env._events and not deadline.active


def test_a_deadline_brought_forward_fires_at_the_earlier_instant_once() -> None:
    env = Environment()
    fired: list[int] = []
    deadline = Deadline(env, lambda _: fired.append(env.now))
    deadline.set(100)
    deadline.set(10)
    env.run()
    assert fired == [10]


def test_a_cancelled_deadline_never_fires_and_peek_skips_it() -> None:
    env = Environment()
    deadline = Deadline(env, lambda _: pytest.fail("fired"))
    deadline.set(100)
    deadline.cancel()
    assert env.peek() is None and not env.step()


def test_a_deadline_refuses_the_past() -> None:
    with pytest.raises(ValueError, match="past"):
        Deadline(Environment(), print).set(-1)
