"""Events and generator-based processes on top of the kernel (SimPy-like, minimal).

A process is a generator that yields :class:`Event` objects and is resumed with the
event's value once it fires. Processes can be stopped (a killed app, a cancelled download).

This module is compiled with mypyc when the package is built with it (``setup.py``); the
annotations are then checked at run time, so every value crossing in from user code
(what a generator yields) is typed ``object`` and checked explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, ClassVar, Final

if TYPE_CHECKING:
    from mqoe.engine.kernel import Environment


# Event states, as module constants for the hot paths (a global read is cheaper than
# a class attribute's; compiled, they are C constants).
_PENDING: Final = 0
_TRIGGERED: Final = 1
_PROCESSED: Final = 2


class Scheduled:
    """Anything the kernel's heap holds: it knows how to fire itself."""

    __slots__ = ()

    def _trigger(self) -> None:
        raise NotImplementedError


class Event(Scheduled):
    """Something that happens once; callbacks run when it fires, in insertion order."""

    PENDING: ClassVar[int] = _PENDING
    TRIGGERED: ClassVar[int] = _TRIGGERED  # scheduled to fire
    PROCESSED: ClassVar[int] = _PROCESSED  # fired; callbacks have run

    __slots__ = ("_state", "_waiter", "callbacks", "env", "value")

    def __init__(self, env: Environment) -> None:
        self.env = env
        # None once processed (late waiters are resumed through the heap instead).
        self.callbacks: list[Callable[[Event], None]] | None = []
        # The first process to wait while no callback is queued: resumed before the
        # callbacks (it came first) without a bound method in the list.
        self._waiter: Process | None = None
        self.value: Any = None
        self._state = _PENDING

    @property
    def triggered(self) -> bool:
        return self._state != _PENDING

    @property
    def processed(self) -> bool:
        return self._state == _PROCESSED

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
        callbacks = self.callbacks
        self.callbacks = None
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter._resume(self)
        if callbacks:
            for callback in callbacks:
                callback(self)


class Process(Event):
    """Runs a generator; as an event, it fires with the generator's return value."""

    __slots__ = ("_generator", "_resume_cb", "_send", "_target", "name")

    def __init__(
        self, env: Environment, generator: Generator[Event, Any, Any], name: str = ""
    ) -> None:
        super().__init__(env)
        if not hasattr(generator, "send"):
            raise TypeError(f"process needs a generator, got {type(generator).__name__}")
        self._generator: Any = generator
        self._send: Callable[[Any], object] = generator.send  # looked up once, not per step
        self.name = name
        # One bound method for the process's whole life.
        self._resume_cb: Callable[[Event], None] = self._resume
        start = Event(env)
        self._target: Event | None = start
        start.callbacks = [self._resume_cb]
        start.succeed()

    @property
    def alive(self) -> bool:
        return self._state == _PENDING

    def _resume(self, event: Event) -> None:
        try:
            target = self._send(event.value)
        except StopIteration as stop:
            self._target = None
            self._finish(stop.value)
            return
        if not isinstance(target, Event):
            self._generator.close()
            raise TypeError(f"process {self.name!r} yielded {target!r}; yield Event objects")
        self._target = target
        callbacks = target.callbacks
        if callbacks is None:
            # Already fired: resume at this instant through the heap (no recursion).
            self.env.schedule(0, self._resume_later, target)
        elif callbacks or target._waiter is not None:
            callbacks.append(self._resume_cb)
        else:
            target._waiter = self

    def _resume_later(self, event: Event) -> None:
        if self._target is event and self._state == _PENDING:
            self._resume(event)

    def _finish(self, value: Any) -> None:
        self._state = _TRIGGERED
        self.value = value
        self._trigger()

    def stop(self, value: Any = None) -> None:
        """End the process now: it will not resume; waiters on it fire with ``value``."""
        if self._state != _PENDING:
            return
        target, self._target = self._target, None
        if target is not None:
            if target._waiter is self:
                target._waiter = None
            elif target.callbacks and self._resume_cb in target.callbacks:
                target.callbacks.remove(self._resume_cb)
        self._generator.close()
        self._finish(value)
