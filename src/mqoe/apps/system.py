"""The phone's own processes: system_server, SystemUI, GMS, the launcher, audio, kernel
workers — what a booted Android holds in memory and does on the CPU while the user
watches a video.

Each service is a process at its ProcessList oom_score_adj holding an anon and a file
working set (allocated through the memory model at boot) with a few threads. Each
thread wakes at random (exponential gaps), uses ``touch_per_s`` of its process's pages
per second of gap — so reclaim finds them referenced, and evicted ones refault — and
runs an exponentially distributed burst of CPU. The load is light on its own; under
memory pressure its refaults and the CPU it competes for are part of what the video
threads wait behind (the memory-pressure study, CoNEXT 2022).

The catalogue (``apps/catalog/system.toml``) has a ``go`` table for Android Go
(low-RAM) profiles and a ``full`` one for the others; its values are calibration
constants, documented there.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Final

from mqoe.apps.system_catalog import CATALOGUE, ServiceSpec, load_catalogue
from mqoe.device.cpu import Fair, Thread
from mqoe.device.phone import Phone
from mqoe.device.process import Process
from mqoe.engine import Event
from mqoe.engine import Process as EngineProcess
from mqoe.engine.draws import Draws, PyDraws
from mqoe.engine.rounding import round_half_even

MB_PAGES: Final = 256
_ALLOC_STEP_PAGES: Final = MB_PAGES


class SystemService:
    """One always-running process of the phone (see the module docstring)."""

    def __init__(self, phone: Phone, spec: ServiceSpec, burst_scale: float = 1.0) -> None:
        if not burst_scale > 0:
            raise ValueError(f"burst_scale must be positive, got {burst_scale}")
        self.phone = phone
        self.spec = spec
        self.burst_scale = burst_scale
        env = phone.env
        self.process: Process = phone.processes.spawn(spec.name, spec.adj, env.now)
        names = [spec.name] + [f"{spec.name}:{k}" for k in range(1, spec.threads)]
        self.threads: list[Thread] = [
            phone.cpu.thread(name, Fair(spec.nice), process=spec.name) for name in names
        ]
        phone.processes.add_threads(self.process, self.threads)
        self.ready: Event = env.event()
        self._draws: PyDraws = Draws(env.rng(f"system:{spec.name}"))  # its threads share it
        self._procs: list[EngineProcess] = [env.process(self._boot(), spec.name)]
        self.process.on_kill.append(self._on_kill)

    def _on_kill(self, _: Process) -> None:
        for proc in self._procs:
            proc.stop()

    def _boot(self) -> Generator[Event, object, None]:
        memory, process, spec = self.phone.memory, self.process, self.spec
        if spec.preload:
            memory.set_preload(process)
        for mb, kind in ((spec.code_mb, "code"), (spec.file_mb, "file"), (spec.anon_mb, "anon")):
            total = round(mb * MB_PAGES)
            for start in range(0, total, _ALLOC_STEP_PAGES):
                yield from memory.allocate(
                    process, self.threads[0], min(_ALLOC_STEP_PAGES, total - start), kind
                )
        self.ready.succeed()
        env = self.phone.env
        for thread in self.threads:
            self._procs.append(env.process(self._work(thread), thread.name))

    def _work(self, thread: Thread) -> Generator[Event, object, None]:
        env, cpu, memory = self.phone.env, self.phone.cpu, self.phone.memory
        spec, process, rng = self.spec, self.process, self._draws
        # burst_scale > 1: fewer, longer bursts with the same mean CPU and memory use
        # (for hour-long workloads where single wake-ups do not matter).
        gap_s = spec.wake_gap_s * self.burst_scale
        burst = spec.burst_mcycles * 1e6 * self.burst_scale
        share = spec.touch_per_s * gap_s / spec.threads  # per wake, per thread
        while True:
            yield env.timeout(max(1, round_half_even(rng.exponential(gap_s) * 1e9)))
            file_pages = round_half_even(process.file_ws_pages * share)
            anon_pages = round_half_even((process.anon_pages + process.anon_swapped) * share)
            yield from memory.touch(process, thread, file_pages, anon_pages)
            yield cpu.run(thread, rng.exponential(burst))


def boot_system(
    phone: Phone, table: str | None = None, *, burst_scale: float = 1.0
) -> list[SystemService]:
    """Start the phone's own processes (``table``: go | full; default by the profile).
    ``burst_scale`` makes their CPU bursts that many times longer and rarer (same mean)."""
    table = table or ("go" if phone.profile.low_ram else "full")
    shared = phone.profile.memory.lru == "lists"  # the recency model maps nothing shared
    return [
        SystemService(phone, spec, burst_scale)
        for spec in load_catalogue(table)
        if shared or not spec.preload
    ]


__all__ = [
    "CATALOGUE",
    "MB_PAGES",
    "ServiceSpec",
    "SystemService",
    "boot_system",
    "load_catalogue",
]
