from __future__ import annotations

from collections.abc import Generator

import pytest

from mqoe.engine import Environment, Event


def test_process_resumes_after_each_timeout_and_returns_a_value() -> None:
    env = Environment()
    times: list[int] = []

    def worker() -> Generator[Event, None, str]:
        for delay in (5, 10, 20):
            yield env.timeout(delay)
            times.append(env.now)
        return "done"

    proc = env.process(worker())
    got: list[object] = []

    def waiter() -> Generator[Event, object, None]:
        value = yield proc
        got.append((env.now, value))

    env.process(waiter())
    env.run()
    assert times == [5, 15, 35]
    assert got == [(35, "done")]
    assert not proc.alive


def test_timeout_value_is_sent_into_the_process() -> None:
    env = Environment()
    got: list[object] = []

    def proc() -> Generator[Event, object, None]:
        got.append((yield env.timeout(3, value="payload")))

    env.process(proc())
    env.run()
    assert got == ["payload"]


def test_waiting_on_an_already_fired_event_resumes_at_the_same_instant() -> None:
    env = Environment()
    event = env.event()
    event.succeed(42)
    got: list[tuple[int, object]] = []

    def late() -> Generator[Event, object, None]:
        yield env.timeout(10)
        value = yield event  # fired long ago
        got.append((env.now, value))

    env.process(late())
    env.run()
    assert got == [(10, 42)]


def test_an_event_succeeds_only_once() -> None:
    env = Environment()
    event = env.event().succeed()
    with pytest.raises(RuntimeError):
        event.succeed()


def test_stopped_process_never_resumes_and_its_waiters_fire() -> None:
    env = Environment()
    steps: list[int] = []

    def victim() -> Generator[Event, None, None]:
        while True:
            yield env.timeout(10)
            steps.append(env.now)

    proc = env.process(victim())
    woke: list[tuple[int, object]] = []

    def watcher() -> Generator[Event, object, None]:
        value = yield proc
        woke.append((env.now, value))

    env.process(watcher())
    env.schedule(25, lambda _: proc.stop("killed"))
    env.run(until_ns=100)
    assert steps == [10, 20]
    assert woke == [(25, "killed")]


def test_yielding_something_that_is_not_an_event_is_a_type_error() -> None:
    env = Environment()

    def bad() -> Generator[object, None, None]:
        yield 5

    env.process(bad())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="yield Event"):
        env.run()
