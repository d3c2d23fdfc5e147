"""Scenario ``frame-deadlines``: a periodic frame thread against CPU hogs and an RT burst.

The first scenario that exercises the scheduler: a frame thread with fixed work per
frame (deadline = frame period), optional fair-class hogs, and a real-time I/O thread
that wakes at a given rate for a given burst (an mmcqd stand-in). Misses emerge from
CFS sharing, wake-up placement and RT preemption; nothing is looked up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import pandas as pd

from mqoe.apps.cpu_load import BurstThread, CpuHog
from mqoe.apps.frame_loop import FrameLoop
from mqoe.device.cpu import Fair, RealTime, parse_cpuset
from mqoe.device.phone import Phone
from mqoe.engine import seconds
from mqoe.errors import UserError
from mqoe.metrics.frames import deadline_summary
from mqoe.metrics.sched import preemption_frame, preemption_summary, thread_states
from mqoe.params import bounds
from mqoe.workloads.base import ScenarioOutput, Session

MCYCLES = 1e6  # 1 Mcycle = 1 ms of work on the reference core (Cortex-A53 at 1 GHz)


@dataclass(frozen=True)
class FrameDeadlinesParams:
    duration_s: float = 10.0  # simulated time
    # Frame rate; deadline = 1/fps (a 60 Hz panel). Bounds: a slide show to 4× the
    # fastest panel a profile may have (240 Hz).
    fps: float = field(default=60.0, metadata=bounds(0.1, 1000.0, what="a frame rate", unit="Hz"))
    frame_mcycles: float = (
        9.0  # work per frame, ref. Mcycles: ≈ 8.2 ms on a 1.1 GHz A53, half a 60 Hz budget
    )
    frame_nice: int = 0  # the frame thread's nice (Android app main thread default: 0)
    frame_cpus: str = ""  # cpuset, e.g. "0-3"; "" = all cores
    hogs: int = 0  # fair-class busy-loop threads
    hog_nice: int = 0
    hog_cpus: str = ""
    rt_rate_hz: float = 100.0  # RT thread wake-ups per second (0 = no RT thread)
    rt_burst_mcycles: float = 0.5  # RT work per wake-up (0 = no RT thread)
    rt_priority: int = 50  # SCHED_FIFO priority (mmcqd-like kernel thread)
    rt_arrivals: str = "poisson"  # "poisson" or "periodic"
    rt_cpus: str = ""

    def __post_init__(self) -> None:
        if self.duration_s <= 0 or self.fps <= 0 or self.frame_mcycles <= 0:
            raise ValueError("duration_s, fps and frame_mcycles must be positive")
        if self.hogs < 0 or self.rt_rate_hz < 0 or self.rt_burst_mcycles < 0:
            raise ValueError("hogs, rt_rate_hz and rt_burst_mcycles must not be negative")
        if self.rt_arrivals not in ("poisson", "periodic"):
            raise ValueError(f"rt_arrivals must be poisson or periodic, got {self.rt_arrivals!r}")
        Fair(self.frame_nice), Fair(self.hog_nice), RealTime(self.rt_priority)  # validate ranges


class FrameDeadlines:
    name = "frame-deadlines"
    summary = "a periodic frame thread vs fair-class CPU hogs and a real-time I/O burst thread"
    params_type = FrameDeadlinesParams
    quick: Mapping[str, str] = MappingProxyType(
        {"duration_s": "1", "hogs": "4", "rt_burst_mcycles": "2"}
    )

    def build(self, phone: Phone, params: FrameDeadlinesParams) -> Session:
        n_cores = len(phone.cpu.cores)
        try:
            frame_cpus = parse_cpuset(params.frame_cpus, n_cores)
            hog_cpus = parse_cpuset(params.hog_cpus, n_cores)
            rt_cpus = parse_cpuset(params.rt_cpus, n_cores)
        except ValueError as exc:
            raise UserError(f"scenario {self.name!r}: {exc}") from None
        period_ns = seconds(1.0 / params.fps)
        frames = FrameLoop(
            phone,
            "frame",
            period_ns,
            params.frame_mcycles * MCYCLES,
            Fair(params.frame_nice),
            frame_cpus,
        )
        for i in range(params.hogs):
            CpuHog(phone, f"hog{i}", Fair(params.hog_nice), hog_cpus)
        if params.rt_rate_hz > 0 and params.rt_burst_mcycles > 0:
            BurstThread(
                phone,
                "rt_io",
                RealTime(params.rt_priority),
                params.rt_rate_hz,
                params.rt_burst_mcycles * MCYCLES,
                arrivals="poisson" if params.rt_arrivals == "poisson" else "periodic",
                cpus=rt_cpus,
            )
        duration_ns = seconds(params.duration_s)

        def collect() -> ScenarioOutput:
            frame_table = pd.DataFrame(
                [(f.index, f.vsync_ns, f.end_ns, f.deadline_ns) for f in frames.frames],
                columns=["index", "vsync_ns", "end_ns", "deadline_ns"],
            )
            threads = pd.DataFrame(phone.cpu.thread_table())
            preemptions = preemption_frame(phone.cpu.preemptions.rows())
            metrics: dict[str, float | int] = dict(
                deadline_summary(frame_table, period_ns, duration_ns)
            )
            metrics["preemptions"] = len(preemptions)
            frame_tid = frames.thread.tid
            metrics["frame_thread_preempted"] = int((preemptions["victim_tid"] == frame_tid).sum())
            return ScenarioOutput(
                metrics=metrics,
                tables={
                    "frames": frame_table,
                    "thread_states": thread_states(threads),
                    "preemption_summary": preemption_summary(preemptions, threads),
                },
            )

        return Session(duration_ns, collect)
