"""Binder: a process's pool of threads serving synchronous transactions.

A client's transaction sleeps while one of the server's pool threads runs the server
side at the client's priority (the Binder driver's priority inheritance); when every
pool thread is busy, transactions wait in FIFO order. The pool's threads live in the
server process, so they run on the cores of that process's cpuset: a transaction to
SurfaceFlinger (every ``dequeueBuffer`` and ``queueBuffer`` of an app before Android
12's BLAST) is served on SurfaceFlinger's cores, whoever calls it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from typing import Final

from mqoe.device.cpu import Cpu, Fair, SchedPolicy, Thread
from mqoe.engine import Environment, Event

# A Binder round trip beyond the server's own work (assumed: ~30 µs on an A53: the
# driver's copy and two context switches), reference cycles.
TRANSACTION_CYCLES: Final = 50_000.0


class BinderPool:
    """``threads`` Binder threads of ``process`` on ``cpus`` (None: every core)."""

    def __init__(
        self,
        env: Environment,
        cpu: Cpu,
        process: str,
        threads: int,
        *,
        cpus: tuple[int, ...] | None = None,
        transaction_cycles: float = TRANSACTION_CYCLES,
    ) -> None:
        if threads < 1:
            raise ValueError("a Binder pool needs at least one thread")
        if transaction_cycles < 0:
            raise ValueError("transaction_cycles must not be negative")
        self.env = env
        self.cpu = cpu
        self.transaction_cycles = transaction_cycles
        self._queue: deque[tuple[float, SchedPolicy, Event]] = deque()
        self._idle: list[Event] = []
        self.calls = 0
        self.threads = [
            cpu.thread(f"binder:{k + 1}", Fair(0), process=process, cpus=cpus)
            for k in range(threads)
        ]
        for thread in self.threads:
            env.process(self._serve(thread), thread.name)

    def call(self, client: Thread, server_cycles: float) -> Generator[Event, object, None]:
        """A synchronous transaction from ``client`` (``yield from`` it)."""
        done = Event(self.env)
        self._queue.append((server_cycles + self.transaction_cycles, client.policy, done))
        self.calls += 1
        if self._idle:
            self._idle.pop().succeed()
        yield done

    def set_affinity(self, cpus: tuple[int, ...] | None) -> None:
        """Move the whole pool to ``cpus`` (its process changed cpuset)."""
        for thread in self.threads:
            self.cpu.set_affinity(thread, cpus)

    def _serve(self, thread: Thread) -> Generator[Event, object, None]:
        env, cpu = self.env, self.cpu
        while True:
            if not self._queue:
                wake = Event(env)
                self._idle.append(wake)
                yield wake
                continue
            cycles, policy, done = self._queue.popleft()
            if thread.policy != policy:
                cpu.set_policy(thread, policy)
            yield cpu.run(thread, cycles)
            done.succeed()
