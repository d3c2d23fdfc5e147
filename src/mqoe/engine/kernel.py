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

The heap is written here rather than taken from :mod:`heapq`: its entries are
:class:`_Entry` objects whose keys, compiled, compare as native ints (heapq compared
``(time, priority, seq, item)`` tuples element by element through the generic object
comparison, a fifth of a Wi-Fi run's time). Code outside the kernel that still pushes
such tuples on ``Environment._heap`` with heapq is served: that list is drained into the
heap before every event is taken (:meth:`Environment._take_inbox`).

This module is compiled with mypyc when the package is built with it (``setup.py``);
the Python source is the reference and runs identically without it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Final, Generic, TypeVar

from mypy_extensions import i64

from mqoe.engine.process import _TRIGGERED, Event, Process, Scheduled
from mqoe.engine.streams import RandomStreams
from mqoe.engine.trace import Recorder

URGENT: Final = 0  # runs before NORMAL callbacks at the same instant
NORMAL: Final = 1
_FOREVER: Final = (1 << 62) - 1  # run() without a limit: later than any event

Callback = Callable[[Any], None]
T = TypeVar("T")
# A list-based queue drops its delivered items once this many lead it and they are half
# of it (amortised O(1); until then they stay referenced, even when the queue is empty:
# clearing it each time it empties freed its list, which the next item allocated again).
_COMPACT_AT: Final = 64


class _Entry:
    """One entry of the event heap: ``item`` fires at ``time_ns``; ties are broken by
    ``priority`` then the insertion number ``seq`` (unique, so the order is total).

    The keys are 64-bit integers (``i64``): compiled, the heap compares and moves them
    without the tag checks of a Python int, and an instant from 2**63 ns (292 years) on
    raises OverflowError (interpreted, the keys are plain ints)."""

    __slots__ = ("item", "priority", "seq", "time_ns")

    def __init__(self, time_ns: i64, priority: i64, seq: i64, item: Scheduled) -> None:
        self.time_ns: i64 = time_ns
        self.priority: i64 = priority
        self.seq: i64 = seq
        self.item = item


def _before(a: _Entry, b: _Entry) -> bool:
    """``a`` comes first: the order of the tuples (time_ns, priority, seq)."""
    if a.time_ns != b.time_ns:
        return a.time_ns < b.time_ns
    if a.priority != b.priority:
        return a.priority < b.priority
    return a.seq < b.seq


# The binary heap of heapq (heappush, heappop and their sifts: the same layout), on
# entries; the entry being placed is passed along rather than read back from the list.
def _heappush(heap: list[_Entry], entry: _Entry) -> None:
    heap.append(entry)
    _sift_down(heap, 0, len(heap) - 1, entry)


def _heappop(heap: list[_Entry]) -> _Entry:
    last = heap.pop()  # IndexError on an empty heap, as heapq
    if not heap:
        return last
    top = heap[0]
    _sift_up(heap, 0, last)
    return top


def _sift_down(heap: list[_Entry], start: i64, pos: i64, entry: _Entry) -> None:
    """Put ``entry``, meant for slot ``pos``, there or on the way to the root ``start``
    where it belongs (heapq's ``_siftdown``)."""
    time_ns = entry.time_ns
    while pos > start:
        parent_pos = (pos - 1) >> 1
        parent = heap[parent_pos]
        # Not _before(entry, parent): the times first, inline (they nearly always differ).
        if time_ns > parent.time_ns or (time_ns == parent.time_ns and not _before(entry, parent)):
            break
        heap[pos] = parent
        pos = parent_pos
    heap[pos] = entry


def _sift_up(heap: list[_Entry], pos: i64, entry: _Entry) -> None:
    """Fill slot ``pos`` with ``entry``: the smaller child moves up until a leaf is free,
    then the entry sifts down from there (heapq's bottom-up ``_siftup``: fewer
    comparisons)."""
    end: i64 = len(heap)
    start = pos
    child = 2 * pos + 1
    while child < end:
        smaller = heap[child]
        right = child + 1
        if right < end:
            other = heap[right]
            # Not _before(smaller, other), the times first as in _sift_down.
            if smaller.time_ns > other.time_ns or (
                smaller.time_ns == other.time_ns and not _before(smaller, other)
            ):
                child = right
                smaller = other
        heap[pos] = smaller
        pos = child
        child = 2 * pos + 1
    _sift_down(heap, start, pos, entry)


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


def _stale(entry: _Entry) -> bool:
    """An entry that fires nothing: a cancelled timer, or a deadline's moved-on entry."""
    item = entry.item
    if isinstance(item, Timer):
        return item.callback is None
    if isinstance(item, Deadline):
        return not item._is_due(entry.time_ns, entry.seq)
    return False


class Environment:
    """Simulated time, the event heap, named random streams and the trace recorder.

    ``seed`` derives every random stream (:meth:`rng`); ``trace`` turns the recorder on.
    """

    __slots__ = ("_events", "_heap", "_seq", "now", "streams", "trace")

    def __init__(self, seed: object = 0, *, trace: bool = False) -> None:
        # Current simulated time in nanoseconds. A plain slot rather than a read-only
        # property: models read it on every event, and a property costs ~8× the read.
        # Only the kernel advances it.
        self.now = 0
        # The event heap, keyed by (time_ns, priority, insertion number): unique keys,
        # so the heap's layout never changes the order.
        self._events: list[_Entry] = []
        # Entries as (time_ns, priority, insertion number, item) tuples that code outside
        # the kernel pushed with heapq: moved to the heap before the next event is taken.
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
        _heappush(self._events, _Entry(time_ns, priority, seq, timer))
        return timer

    def _push_event(self, delay_ns: int, event: Scheduled) -> None:
        """Fire ``event._trigger()`` after ``delay_ns``, ordered exactly as a timer
        scheduled now would be (for items that fire themselves: no Timer, no callback)."""
        seq = self._seq + 1
        self._seq = seq
        _heappush(self._events, _Entry(self.now + delay_ns, NORMAL, seq, event))

    def _entry_of(self, item: Scheduled) -> _Entry:
        """A heap entry for ``item`` to re-push with :meth:`_push_own`: for items that are
        in the heap at most once at a time (a link's transmission, the Wi-Fi channel's
        frame), so no entry is allocated per event."""
        return _Entry(0, NORMAL, 0, item)

    def _push_own(self, delay_ns: int, entry: _Entry) -> None:
        """As :meth:`_push_event` for ``entry.item``, reusing ``entry`` (which must not be
        in the heap: the run loop reads no entry after triggering its item)."""
        seq = self._seq + 1
        self._seq = seq
        entry.time_ns = self.now + delay_ns
        entry.seq = seq
        _heappush(self._events, entry)

    def _push_timer(self, timer: Timer, priority: int = NORMAL) -> None:
        """Put a timer made by the caller in the heap at its ``time_ns`` (not before now),
        ordered as ``schedule`` would order it (the CPU scheduler's inlined schedule)."""
        seq = self._seq + 1
        self._seq = seq
        _heappush(self._events, _Entry(timer.time_ns, priority, seq, timer))

    def _take_inbox(self) -> None:
        """Move the tuples pushed on ``_heap`` from outside into the heap (all of them:
        they are ordered by their keys there, wherever they sat in the list)."""
        events = self._events
        for time_ns, priority, seq, item in self._heap:
            _heappush(events, _Entry(time_ns, priority, seq, item))
        self._heap.clear()

    def schedule_at(
        self, time_ns: int, callback: Callback, arg: Any = None, priority: int = NORMAL
    ) -> Timer:
        """Call ``callback(arg)`` at absolute time ``time_ns`` (not before now)."""
        return self.schedule(time_ns - self.now, callback, arg, priority)

    def peek(self) -> int | None:
        """Time of the next live event, or None when nothing is scheduled."""
        heap = self._events
        if self._heap:
            self._take_inbox()
        while heap and _stale(heap[0]):
            self._drop_stale(_heappop(heap))
        return heap[0].time_ns if heap else None

    def step(self) -> bool:
        """Process one live event; False when the heap is empty."""
        heap = self._events
        if self._heap:
            self._take_inbox()
        while heap:
            entry = _heappop(heap)
            if _stale(entry):
                self._drop_stale(entry)
                continue
            self.now = entry.time_ns
            entry.item._trigger()
            return True
        return False

    def _drop_stale(self, entry: _Entry) -> None:
        item = entry.item
        if isinstance(item, Deadline):
            item._passed()  # puts its live key (if any) in the heap

    def run(self, until_ns: int | None = None) -> None:
        """Process events with time < ``until_ns`` (all of them if None); then now = until."""
        heap = self._events
        inbox = self._heap
        limit = until_ns if until_ns is not None else _FOREVER
        if limit < self.now:
            raise ValueError(f"until ({limit} ns) lies before now ({self.now} ns)")
        while True:
            if inbox:
                self._take_inbox()
            if not heap:
                break
            # Pop first, put back the one entry past the limit: a test fewer per event
            # (entries are unique, so the heap's layout never changes the order).
            entry = _heappop(heap)
            time_ns = entry.time_ns
            if time_ns >= limit:
                _heappush(heap, entry)
                break
            self.now = time_ns
            entry.item._trigger()  # a cancelled Timer does nothing
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
        _heappush(self._events, _Entry(self.now + delay_ns, NORMAL, seq, event))
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

    __slots__ = ("_deliver", "_entry", "_env", "_head", "_items", "_seqs", "_times", "delay_ns")

    def __init__(self, env: Environment, delay_ns: int, deliver: Callable[[T], None]) -> None:
        if delay_ns < 0:
            raise ValueError(f"negative delay ({delay_ns} ns)")
        self._env = env
        self.delay_ns = delay_ns
        self._deliver = deliver
        # The line, in arrival order: arrival time, insertion number and item, from
        # ``_head`` on (parallel lists and a head index: no tuple per item and, compiled,
        # no deque method called by name).
        self._times: list[int] = []
        self._seqs: list[int] = []
        self._items: list[T] = []
        self._head = 0
        # The line's one heap entry (for its first item), reused: it is in the heap only
        # while the line holds an item, and is re-pushed only after it was popped.
        self._entry = _Entry(0, NORMAL, 0, self)

    def __len__(self) -> int:
        return len(self._times) - self._head

    def put(self, item: T) -> None:
        env = self._env
        time_ns = env.now + self.delay_ns
        times = self._times
        if len(times) > self._head and times[-1] > time_ns:  # would overtake: not a FIFO
            env.schedule(self.delay_ns, self._deliver, item)
            return
        seq = env._seq + 1
        env._seq = seq
        times.append(time_ns)
        self._seqs.append(seq)
        self._items.append(item)
        if len(times) - self._head == 1:
            entry = self._entry
            entry.time_ns = time_ns
            entry.seq = seq
            _heappush(env._events, entry)

    def _trigger(self) -> None:
        head = self._head
        times = self._times
        item = self._items[head]
        head += 1
        # Drop the delivered in bulk (all of them when the line is empty): not a clear
        # per delivery, whose freed lists the next put would allocate again.
        if head >= _COMPACT_AT and 2 * head >= len(times):
            del times[:head]
            del self._seqs[:head]
            del self._items[:head]
            head = 0
        if head < len(times):
            entry = self._entry
            entry.time_ns = times[head]
            entry.seq = self._seqs[head]
            _heappush(self._env._events, entry)
        self._head = head
        self._deliver(item)


class Fifo(Generic[T]):
    """A first-in first-out queue: a list and a head index. Compiled, it beats a
    ``deque``, whose methods mypyc calls by name; interpreted, it is as fast."""

    __slots__ = ("_head", "_items")

    def __init__(self) -> None:
        self._items: list[T] = []
        self._head = 0

    def __len__(self) -> int:
        return len(self._items) - self._head

    def push(self, item: T) -> None:
        self._items.append(item)

    def first(self) -> T:
        """The oldest item (IndexError when empty)."""
        if self._head == len(self._items):
            raise IndexError("first() of an empty Fifo")
        return self._items[self._head]

    def pop(self) -> T:
        """Remove and return the oldest item (IndexError when empty)."""
        head = self._head
        items = self._items
        if head == len(items):
            raise IndexError("pop() from an empty Fifo")
        item = items[head]
        head += 1
        if head >= _COMPACT_AT and 2 * head >= len(items):  # as the delay line does
            del items[:head]
            head = 0
        self._head = head
        return item


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
        _heappush(self._env._events, _Entry(time_ns, NORMAL, seq, self))

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
