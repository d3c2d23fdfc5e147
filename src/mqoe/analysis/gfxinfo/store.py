"""The compact per-frame store of :mod:`mqoe.analysis.gfxinfo.data`: for every PROFILEDATA
row, what the metrics need (≈ 40 bytes: run, line, IntendedVsync, FrameCompleted,
DisplayPresentTime, FrameInterval and flag bits), grown in large chunks; and the one
pass that finds frames repeated by overlapping dumps."""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mqoe.analysis.gfxinfo.format import MAX_INTERVAL_NS
from mqoe.analysis.gfxinfo.rows import Rows
from mqoe.metrics.jank import SLOW_FRAME_NS

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# FrameStore.bits
FLAGGED = 1  # Flags != 0: not a normal frame
VALID = 2  # 0 < IntendedVsync <= FrameCompleted
DEQUEUE_JUDGED = 4  # DequeueBufferDuration known (>= 0)
DEQUEUE_HIDES = 8  # duration - DequeueBufferDuration <= SLOW_FRAME_NS
DUPLICATE = 16  # the same frame seen in an earlier dump of the process
REPEATS = 32  # IntendedVsync not after its process's latest so far: may be a duplicate


@dataclass(frozen=True)
class FrameStore:
    """What the metrics need of each PROFILEDATA row kept, in reading order (all files):
    about 40 bytes a row. Times in ns (CLOCK_MONOTONIC)."""

    run: npt.NDArray[np.int32]  # the row's run: index into GfxinfoData.runs
    line: npt.NDArray[np.int64] | npt.NDArray[np.int32]
    intended: IntArray  # IntendedVsync
    completed: IntArray  # FrameCompleted
    present: IntArray  # DisplayPresentTime; 0 when absent or not set
    interval: npt.NDArray[np.int32]  # FrameInterval when in (0, 1 s], else 0
    bits: npt.NDArray[np.uint8]  # FLAGGED | VALID | DEQUEUE_JUDGED | DEQUEUE_HIDES | DUPLICATE

    def __len__(self) -> int:
        return len(self.intended)


_STORE_DTYPES: dict[str, Any] = {
    "run": np.int32, "line": np.int64, "intended": np.int64, "completed": np.int64,
    "present": np.int64, "interval": np.int32, "bits": np.uint8, "key": np.uint64,
}  # fmt: skip


def _mix(*columns: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """A 64-bit hash of each row's values (splitmix64 steps; wraps by design)."""
    h = np.full(len(columns[0]), 0x9E3779B97F4A7C15, dtype=np.uint64)
    for column in columns:
        h ^= column.astype(np.int64).view(np.uint64)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


class _Column:
    """A column that grows in chunks (64 Ki values, doubling up to 1 Mi): a long capture
    appends thousands of small blocks, and keeping each as its own small array between
    the transient ones of every batch fragments the heap."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype
        self.chunks: list[npt.NDArray[Any]] = []
        self.used = 0  # values in the last chunk

    def extend(self, values: npt.NDArray[Any]) -> None:
        done = 0
        while done < len(values):
            if not self.chunks or self.used == len(self.chunks[-1]):
                size = min(_STORE_CHUNK_MAX, _STORE_CHUNK << len(self.chunks))
                self.chunks.append(np.empty(size, dtype=self.dtype))
                self.used = 0
            last = self.chunks[-1]
            take = min(len(values) - done, len(last) - self.used)
            last[self.used : self.used + take] = values[done : done + take]
            self.used += take
            done += take

    def array(self) -> npt.NDArray[Any]:
        """The values as one array; the chunks are dropped as they are copied."""
        if not self.chunks:
            return np.zeros(0, dtype=self.dtype)
        total = sum(len(c) for c in self.chunks[:-1]) + self.used
        out = np.empty(total, dtype=self.dtype)
        at = 0
        while self.chunks:
            chunk = self.chunks.pop(0)
            take = self.used if not self.chunks else len(chunk)
            out[at : at + take] = chunk[:take]
            at += take
        return out


_TRIM_ROWS = 1 << 18  # rows between returns of freed heap memory to the OS (≈ 75 MB of text)


def release_memory() -> None:
    """Give freed heap memory back to the OS. glibc keeps what each batch's transient
    arrays freed when long-lived arrays sit between them, so a long read's resident size
    would grow with the file; ``malloc_trim`` returns it (a no-op elsewhere)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_LIBC = _libc()
_STORE_CHUNK = 1 << 16
_STORE_CHUNK_MAX = 1 << 20
_PENDING_ROWS = 1 << 13  # segments are converted to store columns this many rows at a time


class StoreBuilder:
    """Compact columns appended batch by batch (see :class:`FrameStore`)."""

    def __init__(self) -> None:
        self.columns = {k: _Column(dtype) for k, dtype in _STORE_DTYPES.items()}
        self.runs: list[tuple[int, int, str, int, int]] = []  # file, section, window, block, rows
        self.processes: dict[tuple[Any, ...], int] = {}  # (file, package, pid) → code
        self.latest: dict[int, int] = {}  # process code → latest IntendedVsync so far
        self.pending_process: list[int] = []
        self.pending: list[Rows] = []
        self.pending_rows = 0
        self.untrimmed = 0  # rows appended since memory was last released

    def add(self, file: int, section: int, rows: Rows, process: tuple[Any, ...]) -> None:
        self.runs.append((file, section, rows.window, rows.block, len(rows.lines)))
        self.pending_process.append(self.processes.setdefault(process, len(self.processes)))
        self.pending.append(rows)
        self.pending_rows += len(rows.lines)
        if self.pending_rows >= _PENDING_ROWS:
            self._drain()

    def _drain(self) -> None:
        """Append the pending segments' rows: what the metrics need, per row."""
        pending, first_run = self.pending, len(self.runs) - len(self.pending)
        if not pending:
            return
        sizes = np.array([len(r.lines) for r in pending], dtype=np.int64)

        def joined(name: str) -> npt.NDArray[Any] | None:
            parts = [r.columns.get(name) for r in pending]
            if all(p is None for p in parts):
                return None
            return np.concatenate([p if p is not None else np.full(len(r.lines), -1, np.int64)
                                   for p, r in zip(parts, pending, strict=True)])  # fmt: skip

        flags, start, done = (
            joined("flags"),
            joined("intended_vsync_ns"),
            joined("frame_completed_ns"),
        )
        assert flags is not None and start is not None and done is not None
        valid = (start > 0) & (done >= start)
        bits = (flags != 0).astype(np.uint8) * np.uint8(FLAGGED)
        bits |= valid.astype(np.uint8) * np.uint8(VALID)
        dequeue = joined("dequeue_buffer_duration_ns")
        if dequeue is not None:  # a block without the column has -1 there: not judged
            judged = dequeue >= 0
            # both differences are of non-negative values here: no overflow
            duration = np.where(valid, done - np.where(valid, start, 0), 0)
            hides = judged & valid & (duration - np.where(judged, dequeue, 0) <= SLOW_FRAME_NS)
            bits |= judged.astype(np.uint8) * np.uint8(DEQUEUE_JUDGED)
            bits |= hides.astype(np.uint8) * np.uint8(DEQUEUE_HIDES)
        bits |= self._repeats(start, sizes).astype(np.uint8) * np.uint8(REPEATS)
        present = joined("display_present_time_ns")
        interval = joined("frame_interval_ns")
        lines = np.concatenate([r.lines for r in pending])
        c = self.columns
        c["run"].extend(
            np.repeat(np.arange(first_run, first_run + len(pending), dtype=np.int32), sizes)
        )
        c["line"].extend(lines)
        c["intended"].extend(start)
        c["completed"].extend(done)
        c["present"].extend(
            np.maximum(present, 0) if present is not None else np.zeros(len(start), np.int64)
        )
        if interval is not None:
            usable = (interval > 0) & (interval <= MAX_INTERVAL_NS)
            c["interval"].extend(np.where(usable, interval, 0))
        else:
            c["interval"].extend(np.zeros(len(start), dtype=np.int32))
        c["bits"].extend(bits)
        c["key"].extend(np.concatenate([r.texts for r in pending]).view(np.uint64))
        self.untrimmed += self.pending_rows
        self.pending_process.clear()
        pending.clear()
        self.pending_rows = 0
        if self.untrimmed >= _TRIM_ROWS:
            release_memory()
            self.untrimmed = 0

    def _repeats(self, start: IntArray, sizes: IntArray) -> BoolArray:
        """Rows whose IntendedVsync is not after every earlier one of their process: only
        these can repeat an earlier dump's frame (a frame keeps its IntendedVsync)."""
        out = np.zeros(len(start), np.bool_)
        at = 0
        for code, group in itertools.groupby(zip(self.pending_process, sizes.tolist(), strict=True),
                                             key=lambda pair: pair[0]):  # fmt: skip
            length = sum(size for _, size in group)
            part = start[at : at + length]
            running = np.maximum.accumulate(part)
            before = np.empty(length, np.int64)
            before[0] = self.latest.get(code, -(2**63))
            before[1:] = np.maximum(running[:-1], before[0])
            out[at : at + length] = part <= before
            self.latest[code] = max(int(before[0]), int(running[-1]))
            at += length
        return out

    def finish(self) -> tuple[dict[str, npt.NDArray[Any]], npt.NDArray[np.uint64]]:
        """The columns, each made one array as its chunks are dropped."""
        self._drain()
        out = {}
        for name, column in self.columns.items():
            out[name] = column.array()
            release_memory()  # the chunks just copied: the peak stays one column above
        if len(out["line"]) and out["line"].max() < 2**31:
            out["line"] = out["line"].astype(np.int32)
        key = out.pop("key")
        release_memory()
        return out, key


def mark_duplicates(
    columns: dict[str, npt.NDArray[Any]], key: npt.NDArray[np.uint64], process: npt.NDArray[Any]
) -> int:
    """Flag rows equal to an earlier row of the same process (the same text, so the same
    IntendedVsync and FrameCompleted): a frame that two overlapping dumps both hold.
    Returns their count."""
    maybe = np.flatnonzero(columns["bits"] & REPEATS)
    if not len(maybe):  # no row goes back in time: a capture of dumps that do not overlap
        return 0
    # only rows at an IntendedVsync some candidate has can take part
    values = np.unique(columns["intended"][maybe])
    del maybe
    intended = columns["intended"]
    takes = np.zeros(len(intended), np.bool_)
    for a in range(0, len(intended), 1 << 18):  # bounded temporaries
        part = intended[a : a + (1 << 18)]
        at = np.minimum(np.searchsorted(values, part), len(values) - 1)
        takes[a : a + len(part)] = values[at] == part
    rows = np.flatnonzero(takes)
    del takes
    later = rows[_duplicates(key[rows], process[rows], intended[rows], columns["completed"][rows])]
    columns["bits"][later] |= np.uint8(DUPLICATE)
    return len(later)


def _duplicates(
    key: npt.NDArray[np.uint64], process: npt.NDArray[Any], intended: IntArray, completed: IntArray
) -> IntArray:
    """Positions of the rows equal to an earlier one (same text hash, process,
    IntendedVsync and FrameCompleted)."""
    h = _mix(key, process)
    order = np.argsort(h, kind="stable")  # equal hashes keep reading order: the first stays
    sorted_h = h[order]
    del h
    same_hash = np.flatnonzero(sorted_h[1:] == sorted_h[:-1])
    del sorted_h
    earlier, later = order[same_hash], order[same_hash + 1]
    del order
    same = (key[earlier] == key[later]) & (process[earlier] == process[later])
    same &= (intended[earlier] == intended[later]) & (completed[earlier] == completed[later])
    return np.asarray(later[same], dtype=np.int64)
