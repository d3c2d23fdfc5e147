"""One ANR event summarised: its app, critical threads and root-cause family
(:func:`summarize`, :func:`family_of`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mqoe.analysis.anr.features import (
    Features,
    event_features,
    normalise_state,
    stack_functions,
    stack_labels,
)
from mqoe.analysis.anr.graph import CriticalPath, WaitForGraph, blocked_thread
from mqoe.analysis.anr.model import AnrFile

FloatArray = npt.NDArray[np.float64]

FAMILIES = ("wam", "lock_contention", "low_memory", "app_defect", "unknown")
_WAM = re.compile(
    r"fsync|fdatasync|sync_file_range|jbd2|ext4_sync|f2fs_sync|f2fs_issue_flush|discard"
    r"|FileDescriptor\.sync|FileUtils\.sync",
    re.IGNORECASE,
)
_LOW_MEMORY = re.compile(
    r"art::gc::|WaitForGcToComplete|CollectGarbage|ConcurrentCopying|lowmemorykiller|lowmem_"
    r"|\blmk|try_to_free_pages|__alloc_pages_slowpath|shrink_node"
)
_SYSTEM_PREFIXES = ("/system/", "/vendor/", "/apex/", "/product/", "android.hardware.")
SYSTEM_PROCESSES = frozenset(("system_server", "surfaceflinger", "zygote", "zygote64"))


def is_system_process(name: str) -> bool:
    """``system_server`` and native services (``/system/bin/…``, ``android.hardware.…``)."""
    return name in SYSTEM_PROCESSES or name.startswith(_SYSTEM_PREFIXES)


@dataclass(frozen=True)
class EventSummary:
    """What the report keeps of one ANR file (the parsed file itself is dropped)."""

    file: str
    pid: int
    process: str  # the app: first process of the file
    time: str
    blocked_thread: str
    critical_threads: tuple[str, ...]
    critical_processes: tuple[str, ...]
    critical_state: str
    deadlock: bool
    wait_for_length: int
    path: str  # e.g. "main -lock-> SyncWorker"
    watchdog: bool
    family: str
    stack: tuple[str, ...]  # normalised frames of the critical thread(s), top first
    features: Features
    warnings: tuple[tuple[str, int], ...] = ()
    source: str = "anr_trace"  # AnrFile.source: "anr_trace" | "xcrash_tombstone"
    stacks_missing: bool = False  # no thread of the app has a stack (AnrFile.stacks_missing)
    threads_without_stack: int = 0  # in the app process (ProcessDump.threads_without_stack)


def family_of(graph: WaitForGraph, walk: CriticalPath) -> str:
    """Root-cause family by rules on the critical thread(s), first match wins.

    1. ``wam`` — an fsync/fdatasync/sync_file_range/jbd2/ext4 or f2fs sync/discard frame
       (Java, native or kernel) in a critical thread's stack.
    2. ``low_memory`` — a critical thread ``WaitingForGcToComplete`` or named
       ``HeapTaskDaemon``, or GC / low-memory-killer / direct-reclaim frames.
    3. ``lock_contention`` — the critical thread is in a system service (another process
       than the app, or the first process is itself a system process, as in watchdog
       dumps) and holds or waits for monitors there (lock lines, or a lock edge of the
       path inside that process).
    4. ``unknown`` — no critical thread has a user-space stack in the dump (waiting
       channels, thread headers or kernel frames only, or no thread at all): nothing to
       tell an app defect from anything else. Rules 1–2 still read kernel frames and the
       wait channel (a thread parked in ``jbd2_log_wait_commit`` is waiting for a sync).
    5. ``app_defect`` — anything else.
    """
    critical = [graph.thread(node) for node in walk.critical]
    functions = stack_functions(critical)
    if any(_WAM.search(f) for f in functions):
        return "wam"
    states = [normalise_state(t.state) for t in critical]
    if (
        "WaitingForGcToComplete" in states
        or any(t.name == "HeapTaskDaemon" for t in critical)
        or any(_LOW_MEMORY.search(f) for f in functions)
    ):
        return "low_memory"
    if walk.critical:
        p = walk.critical[0][0]
        system = p != 0 or is_system_process(graph.anr.processes[0].name)
        locked = any(t.locks for t in critical) or any(
            e.kind == "lock" and e.source[0] == p for e in walk.edges
        )
        if system and locked:
            return "lock_contention"
    if not any(t.has_stack for t in critical):
        return "unknown"
    return "app_defect"


def _path_text(graph: WaitForGraph, walk: CriticalPath) -> str:
    if not walk.path:
        return ""
    parts = [graph.thread(walk.path[0]).name]
    for edge in walk.edges:
        target = graph.thread(edge.target).name
        if edge.target[0] != edge.source[0]:
            target = f"{graph.process(edge.target).name}/{target}"
        parts.append(f"-{edge.kind}-> {target}")
    return " ".join(parts)


def summarize(anr: AnrFile) -> EventSummary:
    """Wait-for graph, critical thread(s), features and family of one parsed file."""
    graph = WaitForGraph(anr)
    walk = graph.walk(blocked_thread(anr))
    critical = [graph.thread(node) for node in walk.critical]
    stack: list[str] = []
    for node, thread in zip(walk.critical, critical, strict=True):
        if len(critical) > 1:
            stack.append(f"[{graph.process(node).name}/{thread.name}]")
        stack.extend(stack_labels(thread))
    app = anr.processes[0]
    return EventSummary(
        file=anr.path,
        pid=app.pid,
        process=app.name,
        time=app.time_text,
        blocked_thread=graph.thread(walk.start).name if walk.start is not None else "",
        critical_threads=tuple(t.name for t in critical),
        critical_processes=tuple(graph.process(node).name for node in walk.critical),
        critical_state=critical[0].state if critical else "",
        deadlock=walk.cycle,
        wait_for_length=walk.length,
        path=_path_text(graph, walk),
        watchdog=anr.watchdog is not None,
        family=family_of(graph, walk),
        stack=tuple(stack),
        features=event_features(graph, walk),
        warnings=tuple(anr.stats.warnings().items()),
        source=anr.source,
        stacks_missing=anr.stacks_missing,
        threads_without_stack=app.threads_without_stack,
    )
