"""The file system's view of the device: which model logical pages its files hold.

A minimal file-system allocator hands out logical pages (:meth:`FileSystem.allocate`: a
file takes the first free extent ahead that holds it whole, else pieces) and takes them
back (:meth:`FileSystem.release`); freed pages not discarded at once are remembered as
untrimmed, so a batched trim (:meth:`FileSystem.fitrim`, FITRIM with a start and length)
can discard them range by range later — only free extents of at least the queue's
discard granularity, as ext4 does (4 MiB on an eMMC: Linux's ``pref_erase``).
:meth:`FileSystem.age` ages a fresh device file by file (a file history's survivors) or
page by page. :class:`FileSystem` is a mixin of :class:`~mqoe.device.storage.Storage`
(which keeps its state); logical pages are *model* pages, ``scale`` real ones each.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from mqoe.device.flash_timing import FlashTiming, write_speed
from mqoe.device.ftl import PAGE_BYTES, Ftl, LpnArray
from mqoe.device.profiles import StorageSpec
from mqoe.engine import Environment, Event

_ALLOC_WINDOW: Final = 4096  # model pages the allocator scans at a time from its cursor
_AGED_MAX: Final = 4  # aged devices kept per process (a few MB each)


@dataclass(frozen=True, slots=True)
class _Aged:
    """A device as :meth:`FileSystem.age` left it: the FTL's state, the file space's, and
    the random generator's."""

    ftl: Ftl
    used: npt.NDArray[np.bool_]
    free: int
    cursor: int
    cursors: dict[str, int]
    rng_state: Mapping[str, Any]


# The last few devices aged in this process, by what aging depends on (FileSystem.age).
_AGED: dict[tuple[object, ...], _Aged] = {}


class StorageFull(Exception):
    """The file system has no free logical pages left for an allocation."""


@dataclass(eq=False, slots=True)
class FileSpace:
    """Which model logical pages the file system uses, and which free ones are untrimmed.

    Allocation goes forward from ``cursor``, wrapping at the end — as log-structured
    f2fs, and ext4's goal-directed block allocator, stream new data forward instead of
    into the blocks just freed. A file takes the first free extent ahead that holds it
    whole (ext4's mballoc looks for a free extent of the request's size before it
    settles for pieces: ext4_mb_regular_allocator's criteria), else the next free pages
    in pieces. So a freed page stays free (and, until it is discarded, valid to the
    flash) until the allocator comes round to it again."""

    used: npt.NDArray[np.bool_]
    untrimmed: npt.NDArray[np.bool_]  # free, and never discarded since it was freed
    # A page freed since the last FITRIM over it (ext4 clears a group's WAS_TRIMMED flag
    # on any free). False at first: the phone has trimmed since it booted (the flags
    # live in memory; a first fstrim after boot would trim every group).
    freed_since_trim: npt.NDArray[np.bool_]
    free: int  # free model pages
    cursor: int = 0
    carry_pages: int = 0  # real pages allocated but not yet worth a model page
    # Each goal's own cursor (a directory's block groups), else ``cursor``.
    cursors: dict[str, int] = field(default_factory=dict)

    def take(self, n: int, goal: str | None = None) -> LpnArray:
        """As :meth:`take_from` the cursor of ``goal`` (the shared one if None)."""
        if goal is None:
            lpns, self.cursor = self.take_from(self.cursor, n)
        else:
            lpns, self.cursors[goal] = self.take_from(self.cursors.get(goal, self.cursor), n)
        return lpns

    def take_from(self, cursor: int, n: int) -> tuple[LpnArray, int]:
        """``n`` free pages for a new file, and the cursor after them: the first free
        extent of at least ``n`` pages in the window from ``cursor`` on, else the next
        ``n`` free pages (the caller checked ``free``)."""
        used, size = self.used, len(self.used)
        pos = cursor
        if n > 0 and pos + n <= size and not used[pos : pos + n].any():
            # The window's first free extent begins at the cursor and holds the file (for
            # one page: the first free page) — the common case, without scanning.
            used[pos : pos + n] = True
            self.free -= n
            return np.arange(pos, pos + n, dtype=np.int64), (pos + n) % size
        end = min(size, pos + max(_ALLOC_WINDOW, 4 * n))
        if n > 1:
            starts, ends = _runs(~used[pos:end])
            fits = np.flatnonzero(ends - starts >= n)
            if len(fits):
                first = pos + int(starts[fits[0]])
                found = np.arange(first, first + n, dtype=np.int64)
                used[found] = True
                self.free -= n
                return found, (first + n) % size
        parts: list[LpnArray] = []
        need = n
        while need > 0:
            end = min(size, pos + max(_ALLOC_WINDOW, 2 * need))
            found = np.flatnonzero(~used[pos:end])[:need].astype(np.int64) + pos
            used[found] = True  # so a wrapped scan can never pick a page twice
            parts.append(found)
            need -= len(found)
            pos = (int(found[-1]) + 1 if need == 0 else end) % size if size else 0
        self.free -= n
        return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)), pos

    def next_free(self) -> LpnArray:
        """Every free page in the order the allocator would hand them out."""
        free = np.flatnonzero(~self.used).astype(np.int64)
        split = int(np.searchsorted(free, self.cursor))
        return np.concatenate([free[split:], free[:split]])


class FileSystem:
    """The file space of :class:`~mqoe.device.storage.Storage`: ``allocate``/``release``/
    ``fitrim`` and the aging and benchmark of a device's free space."""

    env: Environment
    spec: StorageSpec
    timing: FlashTiming
    scale: int
    _fs: FileSpace | None

    # Storage's (a compiled class's methods must exist where it is declared).
    @property
    def ftl(self) -> Ftl:
        raise NotImplementedError

    def discard(self, lpns: npt.ArrayLike, pages: int | None = None) -> Event:
        raise NotImplementedError

    def allocate(self, pages: int, goal: str | None = None) -> LpnArray:
        """The file system allocates a file of ``pages`` real pages: its model logical
        pages (``pages / scale``, remainder carried). ``goal`` names where the file's
        directory lives: files of one goal are allocated forward from their own cursor,
        as ext4 places a file in its directory's block group (the Orlov allocator spreads
        top-level directories; mballoc's goal is the inode's group). Raises
        :class:`StorageFull`."""
        fs = self._space()
        total = fs.carry_pages + max(0, pages)
        n = total // self.scale
        if n > fs.free:
            raise StorageFull(f"no room for {pages} pages ({fs.free * self.scale} free)")
        fs.carry_pages = total - n * self.scale
        lpns = fs.take(n, goal)
        fs.untrimmed[lpns] = False
        return lpns

    def release(
        self, lpns: npt.ArrayLike, *, discard: bool, pages: int | None = None
    ) -> Event | None:
        """A file is deleted: its pages are free. With ``discard`` a discard request is
        queued now (real-time WAM; its event is returned); else they wait, untrimmed,
        for a batched trim."""
        fs = self._space()
        array = np.asarray(lpns, dtype=np.int64).reshape(-1)
        if len(array) and not fs.used[array].all():
            raise ValueError("releasing logical pages that are not allocated")
        fs.used[array] = False
        fs.free += len(array)
        fs.freed_since_trim[array] = True
        if discard:
            return self.discard(array, pages)
        fs.untrimmed[array] = True
        return None

    def fitrim(self, start_lpn: int, length: int, all_free: bool = False) -> Event | None:
        """FITRIM on ``[start_lpn, start_lpn + length)``, one ext4 block group: if a page
        there was freed since the range's last FITRIM (or ``all_free``), discard every
        free extent in it of at least the queue's discard granularity — the ones trimmed
        before too, as ext4_trim_all_free does — else nothing (the group's WAS_TRIMMED
        flag). None when there is nothing to discard.

        The minimum: ext4 raises FITRIM's ``minlen`` to the queue's discard granularity
        (``StorageSpec.discard_granularity_kb``; "no point to try to trim less than
        discard granularity"), and Android's fstrim passes ``minlen = 0``. A shorter free
        extent stays valid to the flash until frees around it make it long enough and
        the group is trimmed again; real-time discards know no minimum."""
        fs = self._space()
        span = slice(start_lpn, start_lpn + length)
        if not (all_free or fs.freed_since_trim[span].any()):
            return None
        fs.freed_since_trim[span] = False
        candidates = ~fs.used[span]
        minlen = math.ceil(self.spec.discard_granularity_kb * 1024 / PAGE_BYTES / self.scale)
        if minlen > 1:
            candidates = _long_runs(candidates, minlen)
        lpns = np.flatnonzero(candidates).astype(np.int64) + start_lpn
        if not len(lpns):
            return None
        fs.untrimmed[lpns] = False
        return self.discard(lpns)

    def forget_trims(self) -> None:
        """A reboot: ext4 keeps WAS_TRIMMED in memory only, so the next FITRIM trims
        every block group's free extents again."""
        self._space().freed_since_trim[:] = True

    @property
    def untrimmed_pages(self) -> int:
        """Free model pages waiting for a batched trim."""
        return 0 if self._fs is None else int(np.count_nonzero(self._fs.untrimmed))

    @property
    def free_pages(self) -> int:
        """Real pages the file system could still allocate."""
        return self._space().free * self.scale

    def preload(self, pages: int) -> LpnArray:
        """Allocate and write a file instantly (state before the run; no I/O time)."""
        lpns = self.allocate(pages)
        self.ftl.write(lpns)
        return lpns

    def age(
        self,
        fraction: float,
        rng: np.random.Generator,
        fragmented: bool = True,
        file_pages: npt.ArrayLike | None = None,
        file_goals: npt.ArrayLike | None = None,
    ) -> None:
        """Age a fresh device (:meth:`Ftl.fill`); the aged data is the file system's.

        With ``file_pages`` (sizes in real 4 KB pages of the files the phone has
        written, in order) the file system is aged file by file: the files lie end to
        end over the logical space (as written into an empty file system) and each
        survives with probability ``fraction``, so the free space is the extents of
        the deleted files, merged where they were neighbours. ``file_goals`` (one per
        file, see :meth:`allocate`) puts each goal's files together, in the order of
        the goals' first files, and starts each goal's cursor where its files begin.
        Without ``file_pages``, the data is a random set of pages.

        Aging is a pure function of the fresh device, the arguments and ``rng``'s state,
        and it costs a second or so: the last few results in this process are kept
        (:data:`_AGED`) and a repeat — the same phone and seed aged for another policy —
        takes a copy, leaving ``rng`` where aging would."""
        if self._fs is not None:
            raise ValueError("age a storage before allocating any file")
        ftl = self.ftl
        key = self._aging_key(fraction, rng, fragmented, file_pages, file_goals)
        aged = _AGED.get(key) if key is not None else None
        if aged is None:
            self._age(fraction, rng, fragmented, file_pages, file_goals)
            if key is not None:
                fs = self._space()
                _AGED[key] = _Aged(
                    ftl.copy(),
                    fs.used.copy(),
                    fs.free,
                    fs.cursor,
                    dict(fs.cursors),
                    copy.deepcopy(rng.bit_generator.state),
                )
                while len(_AGED) > _AGED_MAX:
                    _AGED.pop(next(iter(_AGED)))
            return
        ftl.restore(aged.ftl)
        fs = self._space()
        fs.used[:] = aged.used
        fs.free, fs.cursor, fs.cursors = aged.free, aged.cursor, dict(aged.cursors)
        rng.bit_generator.state = copy.deepcopy(aged.rng_state)

    def _aging_key(
        self,
        fraction: float,
        rng: np.random.Generator,
        fragmented: bool,
        file_pages: npt.ArrayLike | None,
        file_goals: npt.ArrayLike | None,
    ) -> tuple[object, ...] | None:
        """What :meth:`age` depends on; None if its result is not to be kept (a device
        that is not a fresh plain :class:`Ftl`: aging checks it and says why)."""
        ftl = self.ftl
        if type(ftl) is not Ftl or ftl.written.any() or ftl.erase_counts.any():
            return None
        digest = hashlib.sha256()
        for array in (file_pages, file_goals):
            if array is not None:
                data = np.ascontiguousarray(array)
                digest.update(f"{data.dtype.str}{data.shape}".encode())
                digest.update(data.tobytes())
            digest.update(b"|")
        geometry = (ftl.physical_pages, ftl.pages_per_block, ftl.logical_pages,
                    ftl.gc_low_blocks, ftl.gc_policy, ftl.gc_frontier)  # fmt: skip
        return (geometry, self.scale, fraction, fragmented, repr(rng.bit_generator.state),
                digest.hexdigest())  # fmt: skip

    def _age(
        self,
        fraction: float,
        rng: np.random.Generator,
        fragmented: bool,
        file_pages: npt.ArrayLike | None,
        file_goals: npt.ArrayLike | None,
    ) -> None:
        ftl = self.ftl
        data = None
        if file_pages is not None:
            # File i spans model pages [bounds[i], bounds[i + 1]) (real pages / scale,
            # so small files share model pages as the allocator's carry does).
            sizes = np.asarray(file_pages, dtype=np.int64)
            real = np.concatenate(([0], np.cumsum(sizes)))
            if real[-1] // self.scale < ftl.logical_pages:
                raise ValueError("file_pages must fill the logical space at least once")
            fits = int(np.searchsorted(real // self.scale, ftl.logical_pages)) + 1
            sizes = sizes[:fits]  # the files written until the space was full
            starts: dict[str, int] = {}
            if file_goals is not None:
                goals = np.asarray(file_goals).reshape(-1)[:fits]
                if len(goals) != len(sizes):
                    raise ValueError("file_goals must name a goal for every file")
                names, first = np.unique(goals, return_index=True)
                rank = np.empty(len(names), dtype=np.int64)
                rank[np.argsort(first)] = np.arange(len(names))
                order = np.argsort(rank[np.searchsorted(names, goals)], kind="stable")
                sizes, goals = sizes[order], goals[order]
            first_page = np.concatenate(([0], np.cumsum(sizes))) // self.scale
            bounds = np.minimum(first_page, ftl.logical_pages)
            if file_goals is not None:
                at = np.flatnonzero(np.concatenate(([True], goals[1:] != goals[:-1])))
                starts = {str(goals[i]): int(first_page[i]) for i in at}
            kept = rng.random(len(bounds) - 1) < fraction
            owner = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
            layout = np.flatnonzero(kept[owner]).astype(np.int64)
            data = layout[rng.permutation(len(layout))] if fragmented else layout
        ftl.fill(fraction, rng, fragmented, data=data)
        fs = self._space()
        fs.used[:] = ftl.l2p >= 0
        fs.free = int(np.count_nonzero(~fs.used))
        fs.cursor = 0
        if file_pages is not None:
            fs.cursors = {g: start % ftl.logical_pages for g, start in starts.items()}

    def write_speed(
        self,
        pattern: Literal["random", "sequential"],
        rng: np.random.Generator | None = None,
        total_mb: float = 64.0,
        request_kb: int | None = None,
    ) -> float:
        """Benchmark (see :func:`write_speed`) on copies of this device's flash, writing
        into the pages the file system would allocate next; the device is unchanged."""
        fs = self._space()
        return write_speed(
            self.ftl,
            self.spec,
            pattern,
            rng if rng is not None else self.env.rng("storage.benchmark"),
            total_mb=total_mb,
            request_kb=request_kb,
            scale=self.scale,
            timing=self.timing,
            file_lpns=fs.next_free(),  # next allocated first
        )

    def _space(self) -> FileSpace:
        if self._fs is None:
            logical = self.ftl.logical_pages
            self._fs = FileSpace(
                np.zeros(logical, dtype=np.bool_),
                np.zeros(logical, dtype=np.bool_),
                np.zeros(logical, dtype=np.bool_),
                logical,
            )
        return self._fs


def _runs(free: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The runs of True in ``free``: their starts and their ends (exclusive)."""
    edges = np.diff(np.concatenate(([0], free.astype(np.int8), [0])))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def _long_runs(free: npt.NDArray[np.bool_], minlen: int) -> npt.NDArray[np.bool_]:
    """The pages of ``free`` that lie in runs of at least ``minlen`` free pages."""
    starts, ends = _runs(free)
    keep = ends - starts >= minlen
    marks = np.zeros(len(free) + 1, dtype=np.int32)
    np.add.at(marks, starts[keep], 1)
    np.add.at(marks, ends[keep], -1)
    return np.cumsum(marks[:-1]) > 0
