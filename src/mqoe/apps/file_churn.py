"""File churn: apps creating, writing and deleting files — installs, updates, caches, media.

This is what ages a phone's flash (the responsiveness study, MobiCom 2020): every file
written programs flash pages (the FTL's utilisation and fragmentation grow), every file
deleted frees logical pages that the WAM policy discards at once (real-time) or counts
into S_d for a batched trim (see :mod:`mqoe.policies.wam`). Files of each
:class:`FileKind` are created at Poisson times with log-normal sizes and live an
exponential lifetime; each is written by the kind's own thread (D state while its
requests are served) and, as SQLite and installd do, fsynced — so a creation can also
wait behind queued discards.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from mqoe.device.cpu import Fair, Thread
from mqoe.device.file_space import StorageFull
from mqoe.device.ftl import PAGE_BYTES, LpnArray
from mqoe.device.phone import Phone
from mqoe.engine import Event, seconds
from mqoe.engine.rounding import round_half_even
from mqoe.policies.wam import Trimmer

_KB: Final = 1024
_HOUR_NS: Final = seconds(3600)


@dataclass(frozen=True, slots=True)
class FileKind:
    """One class of files: creation rate, log-normal size (mean, σ of the log) and
    mean lifetime before deletion (exponential)."""

    name: str
    creates_per_hour: float
    mean_size_kb: float
    size_sigma: float
    mean_lifetime_h: float

    def __post_init__(self) -> None:
        if not (self.creates_per_hour >= 0 and self.mean_size_kb > 0):
            raise ValueError("creates_per_hour must be ≥ 0 and mean_size_kb > 0")
        if not (self.size_sigma >= 0 and self.mean_lifetime_h > 0):
            raise ValueError("size_sigma must be ≥ 0 and mean_lifetime_h > 0")


# assumed: app caches (thumbnails, HTTP cache, logs) — small, many, cleared within hours.
CACHE_FILES: Final = FileKind("cache", 30.0, 256.0, 1.0, 6.0)
# assumed: photos, downloads, messenger media — a few MB, kept for days.
MEDIA_FILES: Final = FileKind("media", 2.0, 4096.0, 0.8, 72.0)
# assumed: app installs and updates (APK + optimised dex, tens of MB), replaced in days.
APP_FILES: Final = FileKind("app", 0.2, 40960.0, 0.6, 96.0)


@dataclass(frozen=True, slots=True)
class FileChurnParams:
    kinds: tuple[FileKind, ...] = (CACHE_FILES, MEDIA_FILES, APP_FILES)
    fsync: bool = True  # assumed: apps fsync what they write (SQLite, installd, DownloadManager)
    nice: int = 10  # assumed: background work (installs, cache writes) at background priority


def history_pages(
    params: FileChurnParams, rng: np.random.Generator, total_pages: int
) -> tuple[LpnArray, npt.NDArray[np.str_]]:
    """A phone's file history, to age its file system by
    (:meth:`mqoe.device.storage.Storage.age`): sizes (4 KB pages) and kinds of files as
    ``params``' kinds create them — each file of a kind in proportion to its creation
    rate, log-normal in size — until they add up to ``total_pages``."""
    kinds = [k for k in params.kinds if k.creates_per_hour > 0]
    if not kinds:
        raise ValueError("no file kind creates files")
    rates = np.array([k.creates_per_hour for k in kinds])
    mus = np.array([math.log(k.mean_size_kb * _KB) - k.size_sigma**2 / 2 for k in kinds])
    sigmas = np.array([k.size_sigma for k in kinds])
    sizes: list[LpnArray] = []
    which: list[npt.NDArray[np.int64]] = []
    total = 0
    while total < total_pages:
        pick = rng.choice(len(kinds), size=4096, p=rates / rates.sum())
        pages = np.ceil(rng.lognormal(mus[pick], sigmas[pick]) / PAGE_BYTES).astype(np.int64)
        sizes.append(pages)
        which.append(pick)
        total += int(pages.sum())
    names = np.array([k.name for k in kinds])
    return np.concatenate(sizes), names[np.concatenate(which)]


@dataclass(eq=False, slots=True)
class ChurnFile:
    kind: str
    lpns: LpnArray
    size_bytes: int
    created_ns: int
    deleted_ns: int = -1


class FileChurn:
    """File creation and deletion on ``phone.storage``, deletes going through ``trimmer``.

    Counters: ``files_created``, ``bytes_written``, ``files_deleted``, ``bytes_deleted``,
    ``failed_creates`` (the file system was full). ``files`` holds the live files,
    oldest first.
    """

    def __init__(
        self,
        phone: Phone,
        trimmer: Trimmer,
        params: FileChurnParams | None = None,
        name: str = "file-churn",
    ) -> None:
        self.phone = phone
        self.trimmer = trimmer
        self.params = params or FileChurnParams()
        self.name = name
        self.files: dict[int, ChurnFile] = {}
        self.files_created = 0
        self.bytes_written = 0
        self.files_deleted = 0
        self.bytes_deleted = 0
        self.failed_creates = 0
        self._next_id = 0
        for kind in self.params.kinds:
            if kind.creates_per_hour > 0:
                thread = phone.cpu.thread(
                    name + ":" + kind.name, Fair(self.params.nice), process=name
                )
                rng = phone.env.rng("file_churn:" + name + ":" + kind.name)
                phone.env.process(self._creator(kind, thread, rng), thread.name)

    def preload(self, count: int, size_bytes: int, kind: str = "preloaded") -> list[ChurnFile]:
        """Files that existed before the run (written instantly, never expiring)."""
        out = []
        for _ in range(count):
            lpns = self.phone.storage.preload(_pages(size_bytes))
            out.append(self.files[self._add(kind, lpns, size_bytes)])
        return out

    def delete_bytes(self, size_bytes: int) -> int:
        """Delete the oldest live files until ``size_bytes`` are freed (an uninstall, a
        cache clear); returns the bytes deleted."""
        freed = 0
        while freed < size_bytes and self.files:
            file_id = next(iter(self.files))
            freed += self.files[file_id].size_bytes
            self._delete(file_id)
        return freed

    # -- internals ----------------------------------------------------------------------
    def _creator(
        self, kind: FileKind, thread: Thread, rng: np.random.Generator
    ) -> Generator[Event, object, None]:
        env, storage = self.phone.env, self.phone.storage
        mean_gap_ns = _HOUR_NS / kind.creates_per_hour
        # Log-normal with the given mean: mu = ln(mean) − σ²/2.
        mu = math.log(kind.mean_size_kb * _KB) - kind.size_sigma**2 / 2
        while True:
            yield env.timeout(max(1, round_half_even(rng.exponential(mean_gap_ns))))
            size_bytes = max(1, round_half_even(rng.lognormal(mu, kind.size_sigma)))
            lifetime_ns = max(1, round_half_even(rng.exponential(kind.mean_lifetime_h * _HOUR_NS)))
            pages = _pages(size_bytes)
            try:
                lpns = storage.allocate(pages, goal=kind.name)
            except StorageFull:
                self.failed_creates += 1
                continue
            if self.params.fsync:
                yield from storage.fsync(thread, pages, lpns)
            else:
                yield from storage.write(thread, pages, lpns)
            file_id = self._add(kind.name, lpns, size_bytes)
            self.files_created += 1
            self.bytes_written += size_bytes
            env.schedule(lifetime_ns, self._expire, file_id)

    def _add(self, kind: str, lpns: LpnArray, size_bytes: int) -> int:
        self._next_id += 1
        self.files[self._next_id] = ChurnFile(kind, lpns, size_bytes, self.phone.env.now)
        return self._next_id

    def _expire(self, file_id: int) -> None:
        if file_id in self.files:  # not deleted early by delete_bytes
            self._delete(file_id)

    def _delete(self, file_id: int) -> None:
        file = self.files.pop(file_id)
        file.deleted_ns = self.phone.env.now
        self.trimmer.delete(file.lpns, file.size_bytes)
        self.files_deleted += 1
        self.bytes_deleted += file.size_bytes


def _pages(size_bytes: int) -> int:
    return max(1, math.ceil(size_bytes / PAGE_BYTES))
