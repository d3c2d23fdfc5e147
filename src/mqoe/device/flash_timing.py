"""The flash's internal costs (:class:`FlashTiming`, per storage type in
:data:`FLASH_TIMING`: GC page copies, block erases, discards) and the write-speed
benchmark that prices an FTL's state with them (:func:`write_speed`, as a storage
benchmark app measures it: base request time plus GC time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from mqoe.device.ftl import PAGE_BYTES, Ftl
from mqoe.device.profiles import StorageSpec

# The write benchmark charges GC at the rate of the collector's next victims, at least this
# many (assumed: smooths a single lucky block; see write_speed).
BENCH_MIN_VICTIMS = 16
_MB = 1 << 20


@dataclass(frozen=True, slots=True)
class FlashTiming:
    """Device-internal costs of the FTL's work: per 4 KB page copied by GC, per block
    erased, per discard request and per 4 KB page discarded (µs)."""

    gc_copy_us: float
    erase_us: float
    discard_us: float
    discard_page_us: float

    @classmethod
    def for_type(cls, storage_type: str) -> FlashTiming:
        return FLASH_TIMING[storage_type]


FLASH_TIMING: dict[str, FlashTiming] = {
    "emmc": FlashTiming(
        # assumed: NAND page program ~400 µs per 16 KB page (datasheet range 200–600 µs)
        # plus a ~50 µs page read, over 2 planes in parallel → (400 + 50) / 4 / 2 per 4 KB.
        gc_copy_us=56.0,
        erase_us=3000.0,  # datasheet range: block erase 2–5 ms (MLC/TLC NAND)
        discard_us=4000.0,  # assumed: eMMC busy per TRIM command (as mqoe.workloads.fleet)
        # assumed: eMMC 5.1 trims ~200 MB/s over large ranges (fstrim of tens of GB takes
        # minutes on eMMC phones; the responsiveness study: discards are slow and
        # stall fsync).
        discard_page_us=20.48,
    ),
    "ufs": FlashTiming(
        gc_copy_us=14.0,  # assumed: as eMMC over ~8 planes (UFS 2.x: 4 channels/dies)
        erase_us=1000.0,  # assumed: 2–5 ms block erases overlapped across ~3 dies
        discard_us=2000.0,  # assumed: UNMAP queues, but the FTL updates its map
        discard_page_us=5.12,  # assumed: UFS 2.1 UNMAP ~800 MB/s over large ranges
    ),
}


def write_speed(
    ftl: Ftl,
    spec: StorageSpec,
    pattern: Literal["random", "sequential"],
    rng: np.random.Generator,
    *,
    total_mb: float = 64.0,
    request_kb: int | None = None,
    scale: int = 1,
    timing: FlashTiming | None = None,
    file_lpns: npt.ArrayLike | None = None,
) -> float:
    """Write speed in MB/s (MB = 2^20 bytes) as a storage benchmark app measures it.

    ``sequential``: a ``total_mb`` file written in order in ``request_kb`` requests
    (default 512 KB). ``random``: the file is laid out first (not timed), then
    ``total_mb`` of ``request_kb`` writes (default 4 KB) land at random offsets in it.
    Time = the requests' base device time + GC time. Device time only (no mmcqd CPU).
    The file goes to ``file_lpns`` (model pages, in order) or else to the lowest
    unmapped logical pages. ``ftl`` is not changed (a copy is written).

    GC comes in lumps: a device whose free blocks are at the low-water mark collects
    whole victims each time it opens a block. On a scaled model a benchmark is a few
    model pages, each lump ``scale`` real blocks, so whether the window holds a block
    switch would decide the result. Once GC is in its steady state (free blocks at the
    mark after the writes), the GC time is therefore charged at the rate the collector
    pays — GC time per page of free space it reclaims (erased pages − pages copied) —
    over the victims the device's GC would take next for writes of this size in the state
    after them (at least :data:`BENCH_MIN_VICTIMS`); before that (free blocks above the
    mark) the exact GC time is used.
    """
    if pattern not in ("random", "sequential"):
        raise ValueError(f"pattern must be 'random' or 'sequential', got {pattern!r}")
    timing = timing or FlashTiming.for_type(spec.type)
    request_pages = max(1, (request_kb or (4 if pattern == "random" else 512)) * 1024 // PAGE_BYTES)
    real_pages = max(request_pages, round(total_mb * _MB / PAGE_BYTES))
    n_model = max(1, real_pages // scale)
    if file_lpns is None:
        file_lpns = np.flatnonzero(ftl.l2p < 0)
    free = np.asarray(file_lpns, dtype=np.int64)
    target = free[:n_model]
    if len(target) < n_model:
        raise ValueError(f"not enough free space for a {total_mb} MB test file")
    bench = ftl.copy()
    writes = target
    if pattern == "random":
        bench.write(target)  # the benchmark's file exists before the timed writes
        writes = target[rng.integers(0, n_model, n_model)]
    cost = bench.write(writes)
    copies, erases = cost.gc_copies, cost.erases
    if bench.free_blocks <= bench.gc_low_blocks + 1:
        # The victims the benchmark's own writes need (one model block stands for
        # ``scale`` real ones, so the same share of the device at any scale).
        victims = max(BENCH_MIN_VICTIMS, math.ceil(n_model / bench.pages_per_block))
        copies, erases = bench.victim_cost(victims)
        ppb = bench.pages_per_block
        reclaimed = erases * ppb - copies  # > 0: victims always hold invalid pages
        per_page_us = (copies * timing.gc_copy_us + erases * timing.erase_us) / reclaimed
        gc_us = scale * n_model * per_page_us
    else:
        gc_us = scale * (copies * timing.gc_copy_us + erases * timing.erase_us)
    requests = real_pages / request_pages
    base_us = spec.write_us + (request_pages - 1) * spec.page_us
    seconds = (requests * base_us + gc_us) * 1e-6
    return real_pages * PAGE_BYTES / _MB / seconds
