"""The discrete-event kernel: an integer-nanosecond clock and a deterministic event heap.

Ties are broken by (time, priority, insertion order), so a run is deterministic by
construction (as in SimPy). Callbacks take exactly one argument; a process layer on top
(:mod:`mqoe.engine.process`) offers generator-based processes for readable models.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator
from typing import Any

from mqoe.engine.process import _TRIGGERED, Event, Process
from mqoe.engine.streams import RandomStreams
from mqoe.engine.trace import Recorder

URGENT = 0  # runs before NORMAL callbacks at the same instant
NORMAL = 1

Callback = Callable[[Any], None]
_heappush = heapq.heappush  # a global read less on every event scheduled


class Timer:
    """A scheduled callback; ``cancel()`` makes it a no-op (lazy deletion from the heap)."""

    __slots__ = ("arg", "callback", "time_ns")

    def __init__(self, time_ns: int, callback: Callback, arg: Any) -> None:
        self.time_ns = time_ns
        self.callback: Callback | None = callback
        self.arg = arg

    def cancel(self) -> None:
        self.callback = None
        self.arg = None

    @property
    def active(self) -> bool:
        return self.callback is not None

    def _trigger(self) -> None:
        callback = self.callback
        if callback is not None:
            self.callback = None
            callback(self.arg)


# The heap holds (time_ns, priority, insertion counter, item); an item is a Timer or an
# Event pushed directly (timeouts, succeeded events) and knows how to _trigger itself.
_Item = Timer | Event


def _cancelled(item: _Item) -> bool:
    return isinstance(item, Timer) and item.callback is None


class Environment:
    """Simulated time, the event heap, named random streams and the trace recorder.

    ``seed`` derives every random stream (:meth:`rng`); ``trace`` turns the recorder on.
    """

    __slots__ = ("_heap", "_seq", "now", "streams", "trace")

    def __init__(self, seed: int = 0, *, trace: bool = False) -> None:
        # Current simulated time in nanoseconds. A plain slot rather than a read-only
        # property: models read it on every event, and a property costs ~8× the read.
        # Only the kernel advances it.
        self.now = 0
        self._heap: list[tuple[int, int, int, _Item]] = []
        self._seq = 0
        self.streams = RandomStreams(seed)
        self.trace = Recorder(enabled=trace)

    @property
    def seed(self) -> int:
        return self.streams.seed

    def rng(self, name: str) -> Any:
        """The named ``numpy.random.Generator`` (see :class:`RandomStreams`)."""
        return self.streams(name)

    # -- scheduling -------------------------------------------------------------------
    def schedule(
        self, delay_ns: int, callback: Callback, arg: Any = None, priority: int = NORMAL
    ) -> Timer:
        """Call ``callback(arg)`` after ``delay_ns`` (an int ≥ 0); returns a cancellable timer."""
        if delay_ns < 0:
            raise ValueError(f"cannot schedule into the past (delay {delay_ns} ns)")
        time_ns = self.now + delay_ns
        timer = Timer(time_ns, callback, arg)
        self._seq += 1
        _heappush(self._heap, (time_ns, priority, self._seq, timer))
        return timer

    def _push_event(self, delay_ns: int, event: Event) -> None:
        self._seq += 1
        _heappush(self._heap, (self.now + delay_ns, NORMAL, self._seq, event))

    def schedule_at(
        self, time_ns: int, callback: Callback, arg: Any = None, priority: int = NORMAL
    ) -> Timer:
        """Call ``callback(arg)`` at absolute time ``time_ns`` (not before now)."""
        return self.schedule(time_ns - self.now, callback, arg, priority)

    def peek(self) -> int | None:
        """Time of the next live event, or None when nothing is scheduled."""
        heap = self._heap
        while heap and _cancelled(heap[0][3]):
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def step(self) -> bool:
        """Process one live event; False when the heap is empty."""
        heap = self._heap
        while heap:
            time_ns, _, _, item = heapq.heappop(heap)
            if _cancelled(item):
                continue
            self.now = time_ns
            item._trigger()
            return True
        return False

    def run(self, until_ns: int | None = None) -> None:
        """Process events with time < ``until_ns`` (all of them if None); then now = until."""
        heap = self._heap
        pop = heapq.heappop
        limit = until_ns if until_ns is not None else 1 << 62
        if limit < self.now:
            raise ValueError(f"until ({limit} ns) lies before now ({self.now} ns)")
        while heap:
            # Pop first, put back the one entry past the limit: a test fewer per event
            # (entries are unique, so the heap's layout never changes the order).
            entry = pop(heap)
            time_ns = entry[0]
            if time_ns >= limit:
                heapq.heappush(heap, entry)
                break
            self.now = time_ns
            entry[3]._trigger()  # a cancelled Timer does nothing
        if until_ns is not None:
            self.now = until_ns

    # -- process layer ----------------------------------------------------------------
    def event(self) -> Event:
        """A fresh pending event; trigger it with ``succeed(value)``."""
        return Event(self)

    def timeout(self, delay_ns: int, value: Any = None) -> Event:
        """An event that fires after ``delay_ns``."""
        if delay_ns < 0:
            raise ValueError(f"negative timeout ({delay_ns} ns)")
        event = Event(self)
        event._state = _TRIGGERED
        event.value = value
        self._seq += 1
        _heappush(self._heap, (self.now + delay_ns, NORMAL, self._seq, event))
        return event

    def process(self, generator: Generator[Event, Any, Any], name: str = "") -> Process:
        """Start a generator process; it runs from the current instant."""
        return Process(self, generator, name)
