"""The storage I/O path (minimal): a request queue served by the ``mmcqd`` kernel thread.

mmcqd runs each request: it spends CPU in the block layer and host driver (a real-time
thread, so it preempts every fair-class thread — spec 01), then the device takes its
service time. The thread that asked waits in uninterruptible sleep (Blocked on I/O).
The responsiveness issue extends this with the flash translation layer and discards.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from dataclasses import dataclass

from mqoe.device.cpu import Cpu, RealTime, Thread
from mqoe.device.profiles import StorageSpec
from mqoe.engine import Environment, Event, us

MMCQD_PRIORITY = RealTime(1)  # above every fair thread, below other RT work


@dataclass(eq=False, slots=True)
class IoRequest:
    write: bool
    pages: int
    done: Event
    submitted_ns: int


class Storage:
    def __init__(self, env: Environment, cpu: Cpu, spec: StorageSpec) -> None:
        self.env = env
        self.cpu = cpu
        self.spec = spec
        self.mmcqd: Thread = cpu.thread("mmcqd", MMCQD_PRIORITY, process="kernel")
        self._queue: deque[IoRequest] = deque()
        self._wake: Event | None = None
        self.reads = 0
        self.writes = 0
        self.pages_read = 0
        self.pages_written = 0
        env.process(self._mmcqd(), "mmcqd")

    def submit(self, pages: int, write: bool = False) -> Event:
        """Queue a request of ``pages`` 4 KB pages; the event fires when it completes."""
        request = IoRequest(write, max(1, pages), Event(self.env), self.env.now)
        self._queue.append(request)
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()
        return request.done

    def read(self, thread: Thread, pages: int) -> Generator[Event, object, None]:
        """A synchronous read by ``thread`` (it sleeps in D state until the data is in)."""
        done = self.submit(pages)
        self.cpu.set_io_wait(thread, True)
        yield done
        if thread.alive:
            self.cpu.set_io_wait(thread, False)

    def service_ns(self, request: IoRequest) -> int:
        base = self.spec.write_us if request.write else self.spec.read_us
        return us(base + (request.pages - 1) * self.spec.page_us)

    def _mmcqd(self) -> Generator[Event, object, None]:
        while True:
            if not self._queue:
                self._wake = Event(self.env)
                yield self._wake
                continue
            request = self._queue.popleft()
            yield self.cpu.run(self.mmcqd, self.spec.request_cycles)
            yield self.env.timeout(self.service_ns(request))
            if request.write:
                self.writes += 1
                self.pages_written += request.pages
            else:
                self.reads += 1
                self.pages_read += request.pages
            request.done.succeed()
