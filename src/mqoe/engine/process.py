"""Events and generator-based processes on top of the kernel (SimPy-like, minimal).

A process is a generator that yields :class:`Event` objects and is resumed with the
event's value once it fires. Processes can be stopped (a killed app, a cancelled download).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mqoe.engine.kernel import Environment


# Event states, as module constants for the hot paths (a global read is cheaper than
# a class attribute's).
_PENDING, _TRIGGERED, _PROCESSED = 0, 1, 2


class Event:
    """Something that happens once; callbacks run when it fires, in insertion order."""

    PENDING = _PENDING
    TRIGGERED = _TRIGGERED  # scheduled to fire
    PROCESSED = _PROCESSED  # fired; callbacks have run

    __slots__ = ("_state", "callbacks", "env", "value")

    def __init__(self, env: Environment) -> None:
        self.env = env
        # None once processed (late waiters are resumed through the heap instead).
        self.callbacks: list[Callable[[Event], None]] | None = []
        self.value: Any = None
        self._state = _PENDING

    @property
    def triggered(self) -> bool:
        return self._state != Event.PENDING

    @property
    def processed(self) -> bool:
        return self._state == Event.PROCESSED

    def succeed(self, value: Any = None) -> Event:
        """Fire this event at the current instant (after the running callback returns)."""
        if self._state != _PENDING:
            raise RuntimeError("event has already been triggered")
        self._state = _TRIGGERED
        self.value = value
        self.env._push_event(0, self)
        return self

    def _trigger(self) -> None:
        """Fire: run the callbacks once (called by the kernel when the event is due)."""
        self._state = _PROCESSED
        callbacks, self.callbacks = self.callbacks, None
        if callbacks:
            for callback in callbacks:
                callback(self)


class Process(Event):
    """Runs a generator; as an event, it fires with the generator's return value."""

    __slots__ = ("_generator", "_resume_cb", "_target", "name")

    def __init__(
        self, env: Environment, generator: Generator[Event, Any, Any], name: str = ""
    ) -> None:
        super().__init__(env)
        if not hasattr(generator, "send"):
            raise TypeError(f"process needs a generator, got {type(generator).__name__}")
        self._generator = generator
        self.name = name
        self._resume_cb = self._resume  # one bound method for the process's whole life
        start = Event(env)
        self._target: Event | None = start
        start.callbacks = [self._resume_cb]
        start.succeed()

    @property
    def alive(self) -> bool:
        return self._state == Event.PENDING

    def _resume(self, event: Event) -> None:
        try:
            target = self._generator.send(event.value)
        except StopIteration as stop:
            self._target = None
            self._finish(stop.value)
            return
        self._target = target
        try:
            callbacks = target.callbacks
        except AttributeError:
            self._generator.close()
            raise TypeError(
                f"process {self.name!r} yielded {target!r}; yield Event objects"
            ) from None
        if callbacks is not None:
            callbacks.append(self._resume_cb)
        else:
            # Already fired: resume at this instant through the heap (no recursion).
            self.env.schedule(0, self._resume_later, target)

    def _resume_later(self, event: Event) -> None:
        if self._target is event and self._state == Event.PENDING:
            self._resume(event)

    def _finish(self, value: Any) -> None:
        self._state = Event.TRIGGERED
        self.value = value
        self._trigger()

    def stop(self, value: Any = None) -> None:
        """End the process now: it will not resume; waiters on it fire with ``value``."""
        if self._state != Event.PENDING:
            return
        target, self._target = self._target, None
        if target is not None and target.callbacks and self._resume_cb in target.callbacks:
            target.callbacks.remove(self._resume_cb)
        self._generator.close()
        self._finish(value)
