"""Processes: pid, parent, oom_score_adj, threads and their memory (in pages).

The memory model keeps each process's page counts here (the kernel's mm_struct
counters); lmkd reads oom_score_adj; a kill makes every thread exit at once and hands
the pages back after a teardown delay (see :meth:`ProcessTable.kill`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from mqoe.device.cpu import Thread
from mqoe.device.lru import Lruvec

# AOSP frameworks/base ProcessList.java.
NATIVE_ADJ: Final = -1000
SYSTEM_ADJ: Final = -900
FOREGROUND_APP_ADJ: Final = 0
VISIBLE_APP_ADJ: Final = 100
PERCEPTIBLE_APP_ADJ: Final = 200
SERVICE_ADJ: Final = 500
HOME_APP_ADJ: Final = 600
PREVIOUS_APP_ADJ: Final = 700
CACHED_APP_MIN_ADJ: Final = 900
CACHED_APP_MAX_ADJ: Final = 999
ZYGOTE_PID: Final = 2  # every app is a child of zygote (as NetPIS-S uses)


def sched_group(oom_score_adj: int) -> str | None:
    """The cgroup ActivityManager puts an app process in for its importance
    (computeOomAdjLocked's schedGroup → Process.setProcessGroup): the top app in
    ``top-app``, visible and perceptible ones (adj < 300) in ``foreground``, services,
    home, previous and cached apps in ``background``. System and native processes
    (adj < 0) keep the group their creator or init gave them: None."""
    if oom_score_adj < 0:
        return None
    if oom_score_adj == FOREGROUND_APP_ADJ:
        return "top-app"
    return "foreground" if oom_score_adj < 300 else "background"


@dataclass(eq=False)
class Process:
    pid: int
    name: str
    oom_score_adj: int
    ppid: int = ZYGOTE_PID
    threads: list[Thread] = field(default_factory=list)
    alive: bool = True
    started_ns: int = 0
    killed_ns: int = -1
    kill_reason: str = ""
    # Memory, in 4 KB pages (owned by mqoe.device.memory).
    anon_pages: int = 0  # resident anonymous pages
    anon_swapped: int = 0  # anonymous pages held compressed in zRAM
    file_ws_pages: int = 0  # file-backed working set (code, libraries, resources)
    file_resident: int = 0  # …of which in RAM; the rest refaults when touched
    code_ws_pages: int = 0  # …of the working set, pages mapped executable (VM_EXEC)
    gpu_pages: int = 0
    # zRAM compression ratio of its anon data (0: the profile's). Random bytes do not
    # compress: zRAM keeps such pages whole ("huge" pages), ratio 1.
    zram_ratio: float = 0.0
    sched_group: str = ""  # its cgroup (see sched_group), "" until it has one
    adj_seq: int = 0  # when its oom_score_adj was last set, as a sequence number
    # When the process last used its pages (allocate / touch): its LRU age for reclaim;
    # and how many file / anon pages it used lately (decayed; owned by the memory model).
    last_use_ns: int = 0
    recent_file: float = 0.0
    recent_anon: float = 0.0
    recent_refault_file: float = 0.0  # …of which faulted back in (refaults, swap-ins)
    recent_refault_anon: float = 0.0
    recent_at_ns: int = 0
    on_kill: list[Callable[[Process], None]] = field(default_factory=list)
    lru: Lruvec | None = None  # its LRU lists (the "lists" LRU model only)

    @property
    def rss_pages(self) -> int:
        """Resident pages (anon + file + GPU), as lmkd weighs processes."""
        return self.anon_pages + self.file_resident + self.gpu_pages

    @property
    def cached(self) -> bool:
        return self.oom_score_adj >= CACHED_APP_MIN_ADJ

    def __repr__(self) -> str:
        return f"Process({self.pid}, {self.name!r}, adj={self.oom_score_adj})"


class ProcessTable:
    """All processes of the phone; ``spawn`` and ``kill`` (listeners hear of both)."""

    def __init__(self) -> None:
        self.processes: list[Process] = []
        self._alive: list[Process] | None = []  # the living ones, in spawn order (None: stale)
        self._next_pid = 100
        self._adj_seq = 0  # counts oom_score_adj settings (lmkd's procprio order)
        self.listeners: list[Callable[[Process, str], None]] = []

    def spawn(self, name: str, oom_score_adj: int, now_ns: int, ppid: int = ZYGOTE_PID) -> Process:
        self._next_pid += 1
        process = Process(
            self._next_pid,
            name,
            oom_score_adj,
            ppid,
            started_ns=now_ns,
            last_use_ns=now_ns,
            recent_at_ns=now_ns,
        )
        self._adj_seq += 1
        process.adj_seq = self._adj_seq
        self.processes.append(process)
        self._alive = None
        for listener in self.listeners:
            listener(process, "spawn")
        return process

    @property
    def alive(self) -> list[Process]:
        """The living processes in spawn order (a shared list: do not change it)."""
        if self._alive is None:
            self._alive = [p for p in self.processes if p.alive]
        return self._alive

    def cached_count(self) -> int:
        return sum(1 for p in self.processes if p.alive and p.cached)

    def add_threads(self, process: Process, threads: list[Thread]) -> None:
        """The process starts ``threads`` (listeners hear "threads")."""
        process.threads += threads
        for listener in self.listeners:
            listener(process, "threads")

    def set_adj(self, process: Process, oom_score_adj: int) -> None:
        if oom_score_adj != process.oom_score_adj:  # ActivityManager tells lmkd of changes
            self._adj_seq += 1
            process.adj_seq = self._adj_seq
        process.oom_score_adj = oom_score_adj
        for listener in self.listeners:
            listener(process, "adj")

    def mark_killed(self, process: Process, now_ns: int, reason: str) -> None:
        process.alive = False
        self._alive = None
        process.killed_ns = now_ns
        process.kill_reason = reason
        for callback in process.on_kill:
            callback(process)
        for listener in self.listeners:
            listener(process, "kill")
