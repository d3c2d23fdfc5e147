"""ANR and SNR detection: Android's timeouts on the threads that block (the
responsiveness study, MobiCom 2020; AOSP timeouts).

* **ANR.** ``Dispatcher`` is the part of InputDispatcher/ActivityManager that hands
  work to an app's main thread (its :class:`Looper`) and starts a timer: input 5 s
  (foreground app), broadcast 10 s foreground / 60 s background, service start 20 s
  foreground / 200 s background (AOSP defaults). If the message has not been
  handled when the timer fires, an :class:`AnrRecord` is emitted at exactly that
  instant. While a process is "not responding" (its timed-out message still pending)
  further timeouts of it are not reported, as ProcessRecord's notResponding flag does.
* **SNR.** :class:`Watchdog` is system_server's Watchdog.java: every 30 s it posts a
  check at the front of each monitored looper (taking each monitored lock on the way);
  a check still pending 60 s after it was posted means the thread is blocked → the
  system process is killed and the framework restarts (an ``snr`` record).

Each record says what the blocked thread waited on — ``fsync``, ``lock:<name>``,
``binder:<service>``, ``gc`` (declared through :class:`Waits`), or ``cpu``/``io``/
``sleep`` from its scheduler state — and the wait chain (thread names) obtained by
following lock holders and Binder servers, so an analyser can build the wait-for graph
(step 1 of the responsiveness study's root-cause pipeline). :class:`Lock` is a Java
monitor for simulated threads.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from mqoe.device.cpu import Thread, ThreadState
from mqoe.device.storage import Storage
from mqoe.engine import Environment, Event, Timer, seconds

# AOSP frameworks/base defaults.
INPUT_DISPATCH_TIMEOUT_NS = seconds(5)  # InputDispatcher: DEFAULT_INPUT_DISPATCHING_TIMEOUT
BROADCAST_FG_TIMEOUT_NS = seconds(10)  # ActivityManagerService.BROADCAST_FG_TIMEOUT
BROADCAST_BG_TIMEOUT_NS = seconds(60)  # ActivityManagerService.BROADCAST_BG_TIMEOUT
SERVICE_TIMEOUT_NS = seconds(20)  # ActiveServices.SERVICE_TIMEOUT (foreground process)
SERVICE_BG_TIMEOUT_NS = seconds(200)  # ActiveServices.SERVICE_BACKGROUND_TIMEOUT
WATCHDOG_TIMEOUT_NS = seconds(60)  # Watchdog.DEFAULT_TIMEOUT: kill the system process
WATCHDOG_CHECK_INTERVAL_NS = WATCHDOG_TIMEOUT_NS // 2  # Watchdog.CHECK_INTERVAL

Handler = Callable[[Thread], Generator[Event, Any, Any]]

_STATE_WAIT = {
    ThreadState.RUNNING: "cpu",
    ThreadState.RUNNABLE: "cpu",
    ThreadState.RUNNABLE_PREEMPTED: "cpu",
    ThreadState.SLEEPING: "sleep",
    ThreadState.BLOCKED_IO: "io",
    ThreadState.DEAD: "dead",
}


class Lock:
    """A Java monitor: one holder (re-entrant), waiters served first come first served."""

    def __init__(self, env: Environment, name: str, waits: Waits | None = None) -> None:
        self.env = env
        self.name = name
        self.waits = waits
        self.holder: Thread | None = None
        self.waiters: deque[tuple[Thread, Event]] = deque()
        self._depth = 0

    def acquire(self, thread: Thread) -> Generator[Event, object, None]:
        """``synchronized (lock)`` entry: ``yield from lock.acquire(thread)``."""
        if self.holder is None or self.holder is thread:
            self.holder = thread
            self._depth += 1
            return
        granted = Event(self.env)
        self.waiters.append((thread, granted))
        if self.waits is not None:
            self.waits.begin(thread, "lock:" + self.name, self)
        try:
            yield granted
        finally:
            if self.waits is not None:
                self.waits.end(thread)
            if not granted.triggered:  # the waiter was stopped: leave the queue
                self.waiters = deque(w for w in self.waiters if w[1] is not granted)

    def release(self, thread: Thread) -> None:
        if self.holder is not thread:
            raise RuntimeError(f"{thread.name} releases lock {self.name} it does not hold")
        self._depth -= 1
        if self._depth:
            return
        self.holder = None
        if self.waiters:
            waiter, granted = self.waiters.popleft()
            self.holder = waiter
            self._depth = 1
            granted.succeed()


class Waits:
    """What each simulated thread waits on: the edges of the wait-for graph.

    Code declares a wait with :meth:`begin` (``"gc"``, ``"binder:<service>"`` with the
    server thread, ``"lock:<name>"`` with the :class:`Lock` — done by ``Lock`` itself)
    and ends it with :meth:`end`. Given a storage, ``fsync`` declares itself.
    """

    def __init__(self, storage: Storage | None = None) -> None:
        self._waits: dict[Thread, tuple[str, Thread | Lock | None]] = {}
        if storage is not None:
            storage.wait_listener = self._storage_wait

    def begin(self, thread: Thread, what: str, on: Thread | Lock | None = None) -> None:
        self._waits[thread] = (what, on)

    def end(self, thread: Thread) -> None:
        self._waits.pop(thread, None)

    def waited_on(self, thread: Thread) -> str:
        """The declared wait, else ``cpu``/``io``/``sleep``/``dead`` from its state."""
        entry = self._waits.get(thread)
        return entry[0] if entry is not None else _STATE_WAIT[thread.state]

    def successor(self, thread: Thread) -> Thread | None:
        """The thread this one waits for: a lock's holder or a Binder server."""
        entry = self._waits.get(thread)
        if entry is None:
            return None
        on = entry[1]
        return on.holder if isinstance(on, Lock) else on

    def chain(self, thread: Thread) -> list[Thread]:
        """From ``thread`` along successors to one without (a deadlock stops at the
        first repeated thread)."""
        out = [thread]
        seen = {thread}
        nxt = self.successor(thread)
        while nxt is not None and nxt not in seen:
            out.append(nxt)
            seen.add(nxt)
            nxt = self.successor(nxt)
        return out

    def _storage_wait(self, thread: Thread, what: str | None) -> None:
        if what is None:
            self.end(thread)
        else:
            self.begin(thread, what)


@dataclass(eq=False, slots=True)
class Message:
    """A message on a looper; ``done`` fires when its handler has returned."""

    handler: Handler
    posted_ns: int
    done: Event
    started_ns: int = -1
    finished_ns: int = -1


class Looper:
    """A thread's message loop (android.os.Looper): runs posted handlers one at a time."""

    def __init__(self, env: Environment, thread: Thread) -> None:
        self.env = env
        self.thread = thread
        self.queue: deque[Message] = deque()
        self.current: Message | None = None
        self._wake: Event | None = None
        self.process = env.process(self._loop(), thread.name)

    def post(self, handler: Handler, *, front: bool = False) -> Message:
        """Queue ``handler`` (``front``: postAtFrontOfQueue); returns its message."""
        message = Message(handler, self.env.now, Event(self.env))
        if front:
            self.queue.appendleft(message)
        else:
            self.queue.append(message)
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()
        return message

    @property
    def idle(self) -> bool:
        """Polling for messages: nothing running, nothing queued."""
        return self.current is None and not self.queue

    def _loop(self) -> Generator[Event, Any, None]:
        while True:
            if not self.queue:
                self._wake = Event(self.env)
                yield self._wake
                continue
            message = self.queue.popleft()
            self.current = message
            message.started_ns = self.env.now
            yield from message.handler(self.thread)
            message.finished_ns = self.env.now
            self.current = None
            message.done.succeed()


def binder_call(
    waits: Waits, caller: Thread, server: Looper, service: str, handler: Handler
) -> Generator[Event, Any, None]:
    """A synchronous Binder transaction: ``caller`` sleeps (``binder:<service>``) until
    the server's thread has run ``handler``."""
    message = server.post(handler)
    waits.begin(caller, "binder:" + service, server.thread)
    try:
        yield message.done
    finally:
        waits.end(caller)


@dataclass(frozen=True, slots=True)
class AnrRecord:
    """One ANR or SNR: when, which kind (``anr_input``, ``anr_broadcast``,
    ``anr_service``, ``snr``), the process and blocked thread, what it waited on, the
    wait chain from it (thread names, the blocked thread first) with each link's wait,
    and when the unanswered message (or watchdog check) was posted."""

    time_ns: int
    kind: str
    process: str
    thread: str
    waited_on: str
    chain: tuple[str, ...]
    chain_waited_on: tuple[str, ...]
    posted_ns: int


def _record(waits: Waits, kind: str, thread: Thread, now_ns: int, posted_ns: int) -> AnrRecord:
    chain = waits.chain(thread)
    return AnrRecord(
        now_ns,
        kind,
        thread.process,
        thread.name,
        waits.waited_on(thread),
        tuple(t.name for t in chain),
        tuple(waits.waited_on(t) for t in chain),
        posted_ns,
    )


class Dispatcher:
    """Hands input events, broadcasts and service starts to apps' main loopers, with
    Android's ANR timeouts. ``records`` holds the ANRs (also traced when enabled)."""

    def __init__(self, env: Environment, waits: Waits) -> None:
        self.env = env
        self.waits = waits
        self.records: list[AnrRecord] = []
        self._not_responding: set[str] = set()

    def dispatch_input(self, looper: Looper, handler: Handler) -> Message:
        """An input event to the foreground app: ANR after 5 s unhandled."""
        return self._post(looper, handler, "anr_input", INPUT_DISPATCH_TIMEOUT_NS)

    def send_broadcast(self, looper: Looper, handler: Handler, *, foreground: bool) -> Message:
        """A broadcast (onReceive on the main thread): ANR after 10 s (fg) / 60 s (bg)."""
        timeout = BROADCAST_FG_TIMEOUT_NS if foreground else BROADCAST_BG_TIMEOUT_NS
        return self._post(looper, handler, "anr_broadcast", timeout)

    def start_service(self, looper: Looper, handler: Handler, *, foreground: bool) -> Message:
        """A service start (onCreate/onStartCommand): ANR after 20 s (fg) / 200 s (bg)."""
        timeout = SERVICE_TIMEOUT_NS if foreground else SERVICE_BG_TIMEOUT_NS
        return self._post(looper, handler, "anr_service", timeout)

    def _post(self, looper: Looper, handler: Handler, kind: str, timeout_ns: int) -> Message:
        message = looper.post(handler)
        timer = self.env.schedule(timeout_ns, self._expire, (looper, message, kind))
        assert message.done.callbacks is not None
        message.done.callbacks.append(lambda _: self._answered(looper, timer))
        return message

    def _answered(self, looper: Looper, timer: Timer) -> None:
        if timer.active:
            timer.cancel()
        else:  # it had timed out: the process responds again
            self._not_responding.discard(looper.thread.process)

    def _expire(self, arg: tuple[Looper, Message, str]) -> None:
        looper, message, kind = arg
        process = looper.thread.process
        if process in self._not_responding:
            return
        self._not_responding.add(process)
        record = _record(self.waits, kind, looper.thread, self.env.now, message.posted_ns)
        self.records.append(record)
        if self.env.trace.enabled:
            self.env.trace.emit(record)


class _Checker:
    """Watchdog.HandlerChecker: one looper (and the monitors its check takes)."""

    __slots__ = ("completed", "looper", "monitors", "reported", "start_ns")

    def __init__(self, looper: Looper, monitors: tuple[Lock, ...]) -> None:
        self.looper = looper
        self.monitors = monitors
        self.completed = True
        self.reported = False
        self.start_ns = 0

    def schedule(self, now_ns: int) -> None:
        """scheduleCheckLocked: an idle looper without monitors passes at once."""
        if not self.monitors and self.looper.idle:
            self.completed = True
            return
        if not self.completed:
            return  # a check is still in flight
        self.completed = False
        self.reported = False
        self.start_ns = now_ns
        message = self.looper.post(self._check, front=True)
        assert message.done.callbacks is not None
        message.done.callbacks.append(self._done)

    def _check(self, thread: Thread) -> Generator[Event, object, None]:
        for lock in self.monitors:  # Monitor.monitor(): synchronized (lock) {}
            yield from lock.acquire(thread)
            lock.release(thread)

    def _done(self, _: Event) -> None:
        self.completed = True


class Watchdog:
    """system_server's Watchdog: SNR when a monitored looper is blocked ≥ 60 s.

    Every ``check_interval_ns`` (30 s) it schedules a check on each looper (posted at
    the front of its queue), waits one interval and evaluates: a check pending for
    ``timeout_ns`` (60 s) is overdue → an ``snr`` record for the first overdue looper
    (in registration order), then ``on_snr`` callbacks (a workload can model the
    framework restart there). One blocked episode is reported once. Half-way
    (≥ 30 s) the real one dumps stacks; here ``half_dumps`` counts them. As in AOSP, a
    thread blocked for 60–90 s may or may not be caught, depending on when the check
    that finds it busy was posted; one blocked ≥ 90 s always is.
    """

    def __init__(
        self,
        env: Environment,
        waits: Waits,
        *,
        timeout_ns: int = WATCHDOG_TIMEOUT_NS,
        check_interval_ns: int = WATCHDOG_CHECK_INTERVAL_NS,
    ) -> None:
        if timeout_ns <= 0 or check_interval_ns <= 0:
            raise ValueError("timeout_ns and check_interval_ns must be positive")
        self.env = env
        self.waits = waits
        self.timeout_ns = timeout_ns
        self.check_interval_ns = check_interval_ns
        self.records: list[AnrRecord] = []
        self.on_snr: list[Callable[[AnrRecord], None]] = []
        self.half_dumps = 0
        self._checkers: list[_Checker] = []
        self._waited_half = False
        self.process = env.process(self._run(), "watchdog")

    def add_thread(self, looper: Looper, monitors: Sequence[Lock] = ()) -> None:
        """Monitor ``looper``; its check also takes each of ``monitors`` (addMonitor)."""
        self._checkers.append(_Checker(looper, tuple(monitors)))

    def _run(self) -> Generator[Event, object, None]:
        while True:
            for checker in self._checkers:
                checker.schedule(self.env.now)
            yield self.env.timeout(self.check_interval_ns)
            self._evaluate()

    def _evaluate(self) -> None:
        now = self.env.now
        pending = [c for c in self._checkers if not c.completed and not c.reported]
        overdue = [c for c in pending if now - c.start_ns >= self.timeout_ns]
        if overdue:
            checker = overdue[0]
            for c in overdue:
                c.reported = True
            record = _record(self.waits, "snr", checker.looper.thread, now, checker.start_ns)
            self.records.append(record)
            if self.env.trace.enabled:
                self.env.trace.emit(record)
            for callback in self.on_snr:
                callback(record)
            self._waited_half = False
            return
        half = any(now - c.start_ns >= self.timeout_ns // 2 for c in pending)
        if half and not self._waited_half:
            self.half_dumps += 1
        self._waited_half = half
