"""A periodic frame thread: one unit of work per V-Sync, due by the next V-Sync.

This is the simplest renderer (no buffer queue yet): at each V-Sync tick the thread
starts the newest due frame if it is idle; ticks that pass while it is still busy are
frames it never started (skipped), as Choreographer skips frames after a long one.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from mqoe.device.cpu import SchedPolicy
from mqoe.device.phone import Phone
from mqoe.engine import Event


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One started frame: its V-Sync, when its work ended, and its deadline (ns)."""

    index: int
    vsync_ns: int
    end_ns: int
    deadline_ns: int


class FrameLoop:
    def __init__(
        self,
        phone: Phone,
        name: str,
        period_ns: int,
        work_cycles: float,
        policy: SchedPolicy | None = None,
        cpus: tuple[int, ...] | None = None,
    ) -> None:
        if period_ns <= 0 or work_cycles <= 0:
            raise ValueError("period_ns and work_cycles must be positive")
        self.phone = phone
        self.period_ns = period_ns
        self.work_cycles = work_cycles
        self.thread = phone.cpu.thread(name, policy, process=name, cpus=cpus)
        self.frames: list[FrameRecord] = []
        phone.env.process(self._loop(), name)

    def _loop(self) -> Generator[Event, None, None]:
        env, cpu, period = self.phone.env, self.phone.cpu, self.period_ns
        index = 0
        while True:
            # The next V-Sync at or after now (ticks missed while busy are skipped).
            index = max(index, -(-env.now // period))
            wait = index * period - env.now
            if wait:
                yield env.timeout(wait)
            vsync = index * period
            yield cpu.run(self.thread, self.work_cycles)
            self.frames.append(FrameRecord(index, vsync, env.now, vsync + period))
            index += 1
