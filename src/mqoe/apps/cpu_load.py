"""Synthetic CPU loads: a busy-looping hog and a bursty thread woken at a given rate."""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Literal

from mqoe.device.cpu import SchedPolicy, Thread
from mqoe.device.phone import Phone
from mqoe.engine import Event, seconds


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
    preempts fair-class threads whenever requests arrive (spec 01).
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
        phone.env.process(self._loop(), name)

    def _loop(self) -> Generator[Event, None, None]:
        env, cpu = self.phone.env, self.phone.cpu
        rng = env.rng(f"burst:{self.thread.name}")
        mean_gap_ns = seconds(1.0 / self.rate_hz)
        while True:
            if self.arrivals == "poisson":
                gap = max(1, round(rng.exponential(mean_gap_ns)))
            else:
                gap = mean_gap_ns
            yield env.timeout(gap)
            yield cpu.run(self.thread, self.burst_cycles)
            self.bursts += 1
