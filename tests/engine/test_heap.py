"""The kernel's own event heap: the order of heapq on (time, priority, seq) tuples."""

from __future__ import annotations

import heapq

from hypothesis import given
from hypothesis import strategies as st

from mqoe.engine import NORMAL, URGENT, Environment
from mqoe.engine.kernel import Timer, _Entry, _heappop, _heappush

# Operations: push an entry with this (time, priority), or pop (None). Small times, so
# that ties on time (and on priority) are frequent; times past 2**62 too (big ints).
_ops = st.lists(
    st.one_of(
        st.none(),
        st.tuples(
            st.one_of(st.integers(0, 20), st.integers(2**62, 2**62 + 3)),
            st.sampled_from((URGENT, NORMAL)),
        ),
    ),
    max_size=300,
)


@given(_ops)
def test_the_heap_pops_in_the_order_of_heapq_on_key_tuples(
    ops: list[tuple[int, int] | None],
) -> None:
    heap: list[_Entry] = []
    reference: list[tuple[int, int, int]] = []
    timer = Timer(0, None, None)
    for seq, op in enumerate(ops):
        if op is None:
            if reference:
                entry = _heappop(heap)
                assert (entry.time_ns, entry.priority, entry.seq) == heapq.heappop(reference)
            continue
        time_ns, priority = op
        _heappush(heap, _Entry(time_ns, priority, seq, timer))
        heapq.heappush(reference, (time_ns, priority, seq))
    popped = []
    while heap:
        entry = _heappop(heap)
        popped.append((entry.time_ns, entry.priority, entry.seq))
    assert popped == sorted(reference)


@given(st.lists(st.tuples(st.integers(0, 10), st.booleans(), st.sampled_from((URGENT, NORMAL)))))
def test_tuples_pushed_with_heapq_from_outside_fire_in_key_order(
    events: list[tuple[int, bool, int]],
) -> None:
    """Code outside the kernel may still push (time, priority, seq, timer) on
    ``env._heap`` with heapq (the CPU scheduler's inlined schedule), or hand its own timer
    to ``env._push_timer``: such timers fire exactly where ``env.schedule`` would have put
    them, also when pushed by a callback."""

    def replay(outside: str) -> list[tuple[int, int]]:
        env = Environment()
        fired: list[tuple[int, int]] = []

        def fire(i: int) -> None:
            fired.append((env.now, i))

        def add(i: int, delay: int, priority: int) -> None:
            if outside == "push_timer" and i % 2:
                env._push_timer(Timer(env.now + delay, fire, i), priority)
            elif outside == "heapq" and i % 2:  # as mqoe.device.cpu.switch does
                env._seq += 1
                heapq.heappush(env._heap, (env.now + delay, priority, env._seq, Timer(0, fire, i)))
            else:
                env.schedule(delay, fire, i, priority)

        for i, (delay, from_callback, priority) in enumerate(events):
            if from_callback:  # pushed while the kernel runs, at t = 1
                env.schedule(1, lambda _, i=i, d=delay, p=priority: add(i, d, p), None, URGENT)
            else:
                add(i, delay, priority)
        env.run()
        return fired

    expected = replay(outside="")
    assert replay(outside="heapq") == expected
    assert replay(outside="push_timer") == expected


def test_peek_and_step_see_tuples_pushed_from_outside() -> None:
    env = Environment()
    seen: list[str] = []
    env.schedule(5, seen.append, "kernel")
    env._seq += 1
    heapq.heappush(env._heap, (3, NORMAL, env._seq, Timer(3, seen.append, "outside")))
    assert env.peek() == 3
    assert env.step() and seen == ["outside"] and env.now == 3
    assert env.step() and seen == ["outside", "kernel"]
    assert not env.step()
