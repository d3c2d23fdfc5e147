"""Synthetic CPU loads: a busy-looping hog and a bursty thread woken at a given rate."""

from __future__ import annotations

import math
from typing import Literal

from mqoe.device.cpu import SchedPolicy, Thread
from mqoe.device.phone import Phone
from mqoe.engine import seconds


class CpuHog:
    """A thread that spins forever (a busy loop, like a benchmark or a runaway app)."""

    def __init__(
        self,
        phone: Phone,
        name: str,
        policy: SchedPolicy | None = None,
        cpus: tuple[int, ...] | None = None,
    ) -> None:
        self.thread: Thread = phone.cpu.thread(name, policy, process=name, cpus=cpus)
        phone.cpu.run(self.thread, math.inf)


class BurstThread:
    """Wakes ``rate_hz`` times per second (Poisson or periodic) and runs a burst of work.

    With a real-time policy this stands in for a kernel I/O thread such as mmcqd, which
    preempts fair-class threads whenever requests arrive (the memory-pressure study).
    """

    def __init__(
        self,
        phone: Phone,
        name: str,
        policy: SchedPolicy,
        rate_hz: float,
        burst_cycles: float,
        *,
        arrivals: Literal["poisson", "periodic"] = "poisson",
        cpus: tuple[int, ...] | None = None,
    ) -> None:
        if rate_hz <= 0 or burst_cycles <= 0:
            raise ValueError("rate_hz and burst_cycles must be positive")
        self.phone = phone
        self.thread = phone.cpu.thread(name, policy, process=name, cpus=cpus)
        self.rate_hz = rate_hz
        self.burst_cycles = burst_cycles
        self.arrivals = arrivals
        self.bursts = 0
        self._rng = phone.env.rng(f"burst:{self.thread.name}")
        self._mean_gap_ns = seconds(1.0 / rate_hz)
        self._gaps: list[float] = []  # exponential draws not used yet, next last
        # Callbacks rather than a generator process (this runs on every burst); the
        # first step is scheduled now, at the instant and in the order a process's would.
        phone.env.schedule(0, self._next)

    def _next(self, _: object = None) -> None:
        """Sleep until the next arrival."""
        if self.arrivals == "poisson":
            gaps = self._gaps
            if not gaps:
                # Draws in blocks: a Generator's exponential draws are the same values,
                # in the same order, one at a time or as an array (the stream is this
                # thread's own).
                gaps.extend(reversed(self._rng.exponential(self._mean_gap_ns, 64).tolist()))
            gap = max(1, round(gaps.pop()))
        else:
            gap = self._mean_gap_ns
        self.phone.env.schedule(gap, self._burst)

    def _burst(self, _: object) -> None:
        done = self.phone.cpu.run(self.thread, self.burst_cycles)
        assert done.callbacks is not None  # a fresh event: it fires once the work is done
        done.callbacks.append(self._finished)

    def _finished(self, _: object) -> None:
        self.bursts += 1
        self._next()
