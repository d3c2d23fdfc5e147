"""From files to a cluster report: per-event summaries, root-cause families, clusters,
nearest/furthest samples and the Zipf fit of events per app (spec 04, pipeline 1–5)."""

from __future__ import annotations

import math
import os
import re
import stat
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.anr.cluster import Clustering, cluster_events, encode, pair_similarity
from mqoe.analysis.anr.features import (
    Features,
    event_features,
    normalise_state,
    stack_functions,
    stack_labels,
)
from mqoe.analysis.anr.graph import CriticalPath, WaitForGraph, blocked_thread
from mqoe.analysis.anr.model import AnrFile
from mqoe.analysis.anr.parse import parse_anr_file
from mqoe.analysis.textio import describe_os_error, list_files
from mqoe.errors import InputFileError, UserError

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


# -- many files ------------------------------------------------------------------------


def discover_files(paths: Sequence[str | Path]) -> list[Path]:
    """Files named, and every non-hidden file under folders named (sorted).

    A path that cannot be reached, a folder (or subfolder) that cannot be listed and a
    folder without files each raise an :class:`~mqoe.errors.InputFileError` naming the
    path — never a permission error, nor an unreadable folder taken for an empty one.
    """
    found: list[Path] = []
    for item in map(Path, paths):
        try:
            mode = item.stat().st_mode
        except OSError as exc:  # EACCES on a parent folder is not "no such file"
            raise InputFileError(item, describe_os_error(exc)) from None
        if not stat.S_ISDIR(mode):
            found.append(item)
            continue
        inside = [
            p
            for p in list_files(item)
            if not any(part.startswith(".") for part in p.relative_to(item).parts)
        ]
        if not inside:
            raise InputFileError(item, "no files in this folder")
        found.extend(inside)
    return found


@dataclass
class LoadResult:
    """Summaries of the files that parsed, and what was skipped or forgiven."""

    events: list[EventSummary]
    files: int
    bad_files: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    warnings: Counter[str] = field(default_factory=Counter)  # summed ParseStats warnings


_Outcome = EventSummary | tuple[str, str, int | None]  # a summary, or (path, what, line)


def _load_one(path: Path) -> _Outcome:
    try:
        return summarize(parse_anr_file(path))
    except InputFileError as exc:  # returned, not raised: this exception does not pickle
        return (exc.path, exc.what, exc.line)


def _intern(event: EventSummary) -> EventSummary:
    """Share the strings of events parsed in worker processes (memory on 50k files)."""
    f = event.features
    features = Features(
        frozenset(sys.intern(g) for g in f.generic),
        tuple((sys.intern(t), c) for t, c in f.specific),
    )
    return EventSummary(
        **{
            **event.__dict__,
            "stack": tuple(sys.intern(s) for s in event.stack),
            "features": features,
        }
    )


def _outcomes(paths: list[Path], workers: int) -> Iterator[_Outcome]:
    if workers <= 1 or len(paths) < 64:
        yield from map(_load_one, paths)
        return
    from concurrent.futures import ProcessPoolExecutor

    chunk = max(1, min(256, len(paths) // (workers * 8)))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for outcome in pool.map(_load_one, paths, chunksize=chunk):
            yield _intern(outcome) if isinstance(outcome, EventSummary) else outcome


def default_workers() -> int:
    """Worker processes for parsing: the CPUs this process may use, at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


def load_events(
    paths: Sequence[str | Path],
    *,
    skip_bad_files: bool = False,
    workers: int = 1,
    progress: Callable[[float], None] | None = None,
) -> LoadResult:
    """Parse and summarise every ANR file in ``paths`` (files or directories).

    One file is one event. A file that is not an ANR trace raises
    :class:`~mqoe.errors.InputFileError`, or, with ``skip_bad_files``, is listed in
    :attr:`LoadResult.bad_files`. ``workers > 1`` parses in that many processes.
    """
    files = discover_files(paths)
    result = LoadResult([], len(files))
    for i, outcome in enumerate(_outcomes(files, workers)):
        if isinstance(outcome, EventSummary):
            result.events.append(outcome)
            result.warnings.update(dict(outcome.warnings))
        else:
            error = InputFileError(*outcome)
            if not skip_bad_files:
                raise error
            result.bad_files.append((error.path, str(error)))
        if progress is not None and (i % 256 == 0 or i + 1 == len(files)):
            progress((i + 1) / len(files))
    if not result.events:
        raise UserError(f"no ANR trace could be parsed from {len(files)} file(s)")
    return result


# -- Zipf ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZipfFit:
    """``log(count) = −a·log(rank) + b`` by least squares over ranks 1…n (natural logs)."""

    a: float
    b: float
    r2: float
    n: int


def fit_zipf(counts: Sequence[int] | npt.NDArray[Any]) -> ZipfFit:
    """Fit Zipf's law to positive counts (sorted here, largest = rank 1).

    Fewer than two counts give NaN; R² is NaN when all counts are equal (nothing to
    explain).
    """
    values = np.sort(np.asarray(counts, dtype=np.float64))[::-1]
    values = values[values > 0]
    n = len(values)
    if n < 2:
        return ZipfFit(math.nan, math.nan, math.nan, n)
    x = np.log(np.arange(1, n + 1, dtype=np.float64))
    y = np.log(values)
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / total if total > 0 else math.nan
    return ZipfFit(float(-slope), float(intercept), r2, n)


# -- the report ------------------------------------------------------------------------


@dataclass
class AnrReport:
    """Tables of the analysis (tidy DataFrames) plus the clustering and the Zipf fit.

    ``tables``: ``events`` (one row per file), ``clusters`` (one row per cluster),
    ``samples`` (nearest/furthest samples per cluster), ``apps`` (ANR events per app,
    ranked; watchdog kills — SNRs of ``system_server`` — are left out, as is the Zipf
    fit, which is over this table).
    """

    tables: dict[str, pd.DataFrame]
    events: Sequence[EventSummary]
    clustering: Clustering
    zipf: ZipfFit
    representatives: dict[int, tuple[str, ...]]

    def to_json(self) -> dict[str, Any]:
        clusters = self.tables["clusters"]
        return {
            "events": [
                {
                    "file": e.file,
                    "pid": e.pid,
                    "process": e.process,
                    "blocked_thread": e.blocked_thread,
                    "critical_threads": list(e.critical_threads),
                    "critical_processes": list(e.critical_processes),
                    "deadlock": e.deadlock,
                    "wait_for_length": e.wait_for_length,
                    "path": e.path,
                    "family": e.family,
                    "source": e.source,
                    "stacks_missing": e.stacks_missing,
                    "threads_without_stack": e.threads_without_stack,
                    "cluster": label,
                }
                for e, label in zip(self.events, self.clustering.labels.tolist(), strict=True)
            ],
            "clusters": [
                {
                    "id": int(r["cluster"]),
                    "size": int(r["size_events"]),
                    "family": r["family"],
                    "representative": list(self.representatives[int(r["cluster"])]),
                    "representative_file": r["representative_file"],
                    "unique_vectors": int(r["unique_vectors"]),
                    "apps": int(r["apps"]),
                }
                for r in clusters.to_dict("records")
            ],
            "zipf": {
                "a": _finite(self.zipf.a),
                "b": _finite(self.zipf.b),
                "r2": _finite(self.zipf.r2),
                "apps": self.zipf.n,
            },
            "method": self.clustering.method,
            "threshold": self.clustering.threshold,
        }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _majority(families: list[str]) -> str:
    counts = Counter(families)
    return max(FAMILIES, key=lambda f: (counts.get(f, 0), -FAMILIES.index(f)))


def analyze(
    events: Sequence[EventSummary],
    *,
    threshold: float = 0.95,
    method: str = "fast",
    k: int = 5,
) -> AnrReport:
    """Cluster ``events`` and build the report tables (see :class:`AnrReport`).

    Each cluster's representative is its most common feature vector (ties: the first
    seen), shown as the normalised critical stack of its first event. The ``k`` nearest
    and ``k`` furthest samples are the cluster's other distinct feature vectors ranked by
    similarity to the representative (each shown by its first event's file, with how
    many events share it).
    """
    if k < 0:
        raise UserError(f"k must be ≥ 0, got {k}")
    features = [e.features for e in events]
    clustering = cluster_events(features, threshold, method)
    enc = encode(features)
    uid = enc.event_uid
    labels = clustering.labels
    first_event: dict[int, int] = {}
    for i, u in enumerate(uid.tolist()):
        first_event.setdefault(u, i)
    cluster_rows: list[dict[str, Any]] = []
    sample_rows: list[dict[str, Any]] = []
    representatives: dict[int, tuple[str, ...]] = {}
    rep_similarity = np.ones(len(events), dtype=np.float64)
    members_of = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[members_of], np.arange(clustering.n_clusters + 1))
    for c in range(clustering.n_clusters):
        members = members_of[bounds[c] : bounds[c + 1]]
        uids, first_index, mult = np.unique(uid[members], return_index=True, return_counts=True)
        best = np.lexsort((first_index, -mult))[0]
        rep = int(uids[best])
        sims = pair_similarity(enc, np.full(len(uids), rep), uids)
        by_uid = dict(zip(uids.tolist(), sims.tolist(), strict=True))
        rep_similarity[members] = [by_uid[u] for u in uid[members].tolist()]
        rep_event = events[first_event[rep]]
        representatives[c] = rep_event.stack
        others = [j for j in range(len(uids)) if j != best]
        near = sorted(others, key=lambda j: (-sims[j], first_index[j]))[:k]
        far = sorted(others, key=lambda j: (sims[j], first_index[j]))[:k]
        for role, chosen in (("nearest", near), ("furthest", far)):
            for rank, j in enumerate(chosen, start=1):
                sample = events[first_event[int(uids[j])]]
                sample_rows.append(
                    {
                        "cluster": c,
                        "role": role,
                        "rank": rank,
                        "file": sample.file,
                        "process": sample.process,
                        "similarity": float(sims[j]),
                        "events_with_vector": int(mult[j]),
                    }
                )
        member_events = [events[i] for i in members.tolist()]
        member_apps = Counter(e.process for e in member_events)
        cluster_rows.append(
            {
                "cluster": c,
                "size_events": len(members),
                "share": len(members) / len(events),
                "family": _majority([e.family for e in member_events]),
                "unique_vectors": len(uids),
                "apps": len(member_apps),
                "top_app": member_apps.most_common(1)[0][0],
                "representative_file": rep_event.file,
                "representative_stack": "\n".join(rep_event.stack),
            }
        )
    events_frame = _events_frame(events, labels, rep_similarity)
    app_counts = Counter(e.process for e in events if not e.watchdog)  # SNRs are no app's ANR
    apps = sorted(app_counts.items(), key=lambda kv: (-kv[1], kv[0]))
    apps_frame = pd.DataFrame(
        {
            "app": [a for a, _ in apps],
            "events": [n for _, n in apps],
            "rank": np.arange(1, len(apps) + 1),
        }
    )
    tables = {
        "events": events_frame,
        "clusters": pd.DataFrame(cluster_rows, columns=_CLUSTER_COLUMNS),
        "samples": pd.DataFrame(sample_rows, columns=_SAMPLE_COLUMNS),
        "apps": apps_frame,
    }
    return AnrReport(tables, events, clustering, fit_zipf([n for _, n in apps]), representatives)


_CLUSTER_COLUMNS = [
    "cluster", "size_events", "share", "family", "unique_vectors", "apps", "top_app",
    "representative_file", "representative_stack",
]  # fmt: skip
_SAMPLE_COLUMNS = [
    "cluster", "role", "rank", "file", "process", "similarity", "events_with_vector",
]  # fmt: skip


def _events_frame(
    events: Sequence[EventSummary], labels: npt.NDArray[np.int64], rep_similarity: FloatArray
) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "file": [e.file for e in events],
            "pid": [e.pid for e in events],
            "process": [e.process for e in events],
            "time": [e.time for e in events],
            "blocked_thread": [e.blocked_thread for e in events],
            "critical_threads": [";".join(e.critical_threads) for e in events],
            "critical_processes": [";".join(e.critical_processes) for e in events],
            "critical_state": [e.critical_state for e in events],
            "deadlock": [e.deadlock for e in events],
            "wait_for_length": [e.wait_for_length for e in events],
            "path": [e.path for e in events],
            "watchdog": [e.watchdog for e in events],
            "family": [e.family for e in events],
            "cluster": labels,
            "similarity_to_representative": rep_similarity,
            "parse_warnings": [sum(n for _, n in e.warnings) for e in events],
            "source": [e.source for e in events],
            "stacks_missing": [e.stacks_missing for e in events],
            "threads_without_stack": [e.threads_without_stack for e in events],
        }
    )
    return frame
