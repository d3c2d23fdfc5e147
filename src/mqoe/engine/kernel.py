"""The discrete-event kernel: an integer-nanosecond clock and a deterministic event heap.

Ties are broken by (time, priority, insertion order), so a run is deterministic by
construction (as in SimPy). Callbacks take exactly one argument; a process layer on top
(:mod:`mqoe.engine.process`) offers generator-based processes for readable models.

A :class:`DelayLine` carries items that all wait the same time (a link's propagation
delay) with one heap entry per line instead of one per item in flight; each item keeps
the insertion number it would have had as a timer, so the order of everything the heap
holds is exactly as if each had been scheduled on its own.

A :class:`Deadline` is a timer re-armed far more often than it fires (TCP's
retransmission and delayed-ACK timers, pushed back by every ACK): re-arming later keeps
the heap entry it already has and moves on when that entry comes up, again with the
insertion number a fresh timer would have had, so cancelled timers do not pile up in the
heap (at 500 Mbit/s they were 99% of its ~1000 entries, and every push and pop paid
for them in tuple comparisons).

This module is compiled with mypyc when the package is built with it (``setup.py``);
the Python source is the reference and runs identically without it.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Generator
from typing import Any, Final, Generic, TypeVar

from mqoe.engine.process import _TRIGGERED, Event, Process, Scheduled
from mqoe.engine.streams import RandomStreams
from mqoe.engine.trace import Recorder

URGENT: Final = 0  # runs before NORMAL callbacks at the same instant
NORMAL: Final = 1
_FOREVER: Final = (1 << 62) - 1  # run() without a limit: later than any event

Callback = Callable[[Any], None]
T = TypeVar("T")
_heappush = heapq.heappush  # a global read less on every event scheduled
_heappop = heapq.heappop


class Timer(Scheduled):
    """A scheduled callback; ``cancel()`` makes it a no-op (lazy deletion from the heap)."""

    __slots__ = ("arg", "callback", "time_ns")

    def __init__(self, time_ns: int, callback: Callback | None, arg: Any) -> None:
        self.time_ns = time_ns
        self.callback: Callback | None = callback
        self.arg: Any = arg

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


def _stale(entry: tuple[int, int, int, Scheduled]) -> bool:
    """An entry that fires nothing: a cancelled timer, or a deadline's moved-on entry."""
    item = entry[3]
    if isinstance(item, Timer):
        return item.callback is None
    if isinstance(item, Deadline):
        return not item._is_due(entry[0], entry[2])
    return False


class Environment:
    """Simulated time, the event heap, named random streams and the trace recorder.

    ``seed`` derives every random stream (:meth:`rng`); ``trace`` turns the recorder on.
    """

    __slots__ = ("_heap", "_seq", "now", "streams", "trace")

    def __init__(self, seed: object = 0, *, trace: bool = False) -> None:
        # Current simulated time in nanoseconds. A plain slot rather than a read-only
        # property: models read it on every event, and a property costs ~8× the read.
        # Only the kernel advances it.
        self.now = 0
        # (time_ns, priority, insertion number, item): unique keys, so the heap's
        # layout never changes the order.
        self._heap: list[tuple[int, int, int, Scheduled]] = []
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
        seq = self._seq + 1
        self._seq = seq
        _heappush(self._heap, (time_ns, priority, seq, timer))
        return timer

    def _push_event(self, delay_ns: int, event: Scheduled) -> None:
        """Fire ``event._trigger()`` after ``delay_ns``, ordered exactly as a timer
        scheduled now would be (for items that fire themselves: no Timer, no callback)."""
        seq = self._seq + 1
        self._seq = seq
        _heappush(self._heap, (self.now + delay_ns, NORMAL, seq, event))

    def schedule_at(
        self, time_ns: int, callback: Callback, arg: Any = None, priority: int = NORMAL
    ) -> Timer:
        """Call ``callback(arg)`` at absolute time ``time_ns`` (not before now)."""
        return self.schedule(time_ns - self.now, callback, arg, priority)

    def peek(self) -> int | None:
        """Time of the next live event, or None when nothing is scheduled."""
        heap = self._heap
        while heap and _stale(heap[0]):
            self._drop_stale(_heappop(heap))
        return heap[0][0] if heap else None

    def step(self) -> bool:
        """Process one live event; False when the heap is empty."""
        heap = self._heap
        while heap:
            entry = _heappop(heap)
            if _stale(entry):
                self._drop_stale(entry)
                continue
            self.now = entry[0]
            entry[3]._trigger()
            return True
        return False

    def _drop_stale(self, entry: tuple[int, int, int, Scheduled]) -> None:
        item = entry[3]
        if isinstance(item, Deadline):
            item._passed()  # puts its live key (if any) in the heap

    def run(self, until_ns: int | None = None) -> None:
        """Process events with time < ``until_ns`` (all of them if None); then now = until."""
        heap = self._heap
        limit = until_ns if until_ns is not None else _FOREVER
        if limit < self.now:
            raise ValueError(f"until ({limit} ns) lies before now ({self.now} ns)")
        while heap:
            # Pop first, put back the one entry past the limit: a test fewer per event
            # (entries are unique, so the heap's layout never changes the order).
            entry = _heappop(heap)
            time_ns = entry[0]
            if time_ns >= limit:
                _heappush(heap, entry)
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
        seq = self._seq + 1
        self._seq = seq
        _heappush(self._heap, (self.now + delay_ns, NORMAL, seq, event))
        return event

    def process(self, generator: Generator[Event, Any, Any], name: str = "") -> Process:
        """Start a generator process; it runs from the current instant."""
        return Process(self, generator, name)


class DelayLine(Scheduled, Generic[T]):
    """Items that each arrive ``delay_ns`` after they were put in, handed to ``deliver``.

    Exactly like ``env.schedule(delay_ns, deliver, item)`` per item — same instants, same
    order against every other event (each item keeps the insertion number its own timer
    would have had) — but only the first item in flight holds a heap entry: with a
    constant delay, arrivals leave in the order they came in. Should the delay change
    so that an item would overtake the last one in line, it gets a timer of its own.
    """

    __slots__ = ("_deliver", "_env", "_line", "delay_ns")

    def __init__(self, env: Environment, delay_ns: int, deliver: Callable[[T], None]) -> None:
        if delay_ns < 0:
            raise ValueError(f"negative delay ({delay_ns} ns)")
        self._env = env
        self.delay_ns = delay_ns
        self._deliver = deliver
        # (arrival time, insertion number, item), in arrival order.
        self._line: deque[tuple[int, int, T]] = deque()

    def __len__(self) -> int:
        return len(self._line)

    def put(self, item: T) -> None:
        env = self._env
        time_ns = env.now + self.delay_ns
        line = self._line
        if line and line[-1][0] > time_ns:  # would overtake: not a FIFO any more
            env.schedule(self.delay_ns, self._deliver, item)
            return
        seq = env._seq + 1
        env._seq = seq
        line.append((time_ns, seq, item))
        if len(line) == 1:
            _heappush(env._heap, (time_ns, NORMAL, seq, self))

    def _trigger(self) -> None:
        line = self._line
        item = line.popleft()[2]
        if line:
            time_ns, seq, _ = line[0]
            _heappush(self._env._heap, (time_ns, NORMAL, seq, self))
        self._deliver(item)


class Deadline(Scheduled):
    """A re-armable timer: ``set(delay_ns)`` (re)arms it to call ``callback(None)`` then,
    ``cancel()`` disarms it. Exactly like cancelling a :class:`Timer` and scheduling a
    new one on each ``set`` — same instant, same order against every other event (the
    deadline keeps the insertion number the new timer would have had) — but a deadline
    pushed back keeps the heap entry it has: when that entry comes up, the deadline
    puts its current one in the heap. Only a deadline brought *forward* needs a new
    entry at once.

    Its entries in the heap are stacked here, the earliest last: an entry is only added
    before all the others, and the heap gives them back earliest first.
    """

    __slots__ = ("_callback", "_env", "_queued_seq", "_queued_time", "active", "seq", "time_ns")

    def __init__(self, env: Environment, callback: Callback) -> None:
        self._env = env
        self._callback = callback
        self.active = False
        self.time_ns = 0  # when armed: the instant it fires
        self.seq = 0  # and the insertion number its entry carries
        self._queued_time: list[int] = []  # keys of its entries in the heap, earliest last
        self._queued_seq: list[int] = []

    def set(self, delay_ns: int) -> None:
        """Arm (or re-arm) to fire ``delay_ns`` (≥ 0) from now."""
        if delay_ns < 0:
            raise ValueError(f"cannot schedule into the past (delay {delay_ns} ns)")
        env = self._env
        time_ns = env.now + delay_ns
        seq = env._seq + 1
        env._seq = seq
        self.active = True
        self.time_ns = time_ns
        self.seq = seq
        queued = self._queued_time
        if not queued or time_ns < queued[-1]:
            self._push(time_ns, seq)

    def cancel(self) -> None:
        self.active = False

    def _push(self, time_ns: int, seq: int) -> None:
        self._queued_time.append(time_ns)
        self._queued_seq.append(seq)
        _heappush(self._env._heap, (time_ns, NORMAL, seq, self))

    def _is_due(self, time_ns: int, seq: int) -> bool:
        return self.active and self.seq == seq and self.time_ns == time_ns

    def _passed(self) -> None:
        """Its earliest entry left the heap without firing: keep the live key in it."""
        self._queued_time.pop()
        self._queued_seq.pop()
        if not self.active:
            return
        queued = self._queued_time
        target = self.time_ns
        if queued and queued[-1] <= target:
            return  # an earlier (or the live) entry is still in the heap
        self._push(target, self.seq)

    def _trigger(self) -> None:
        time_ns = self._queued_time[-1]
        seq = self._queued_seq[-1]
        if self.active and self.seq == seq and self.time_ns == time_ns:
            self._queued_time.pop()
            self._queued_seq.pop()
            self.active = False
            self._callback(None)
        else:
            self._passed()
