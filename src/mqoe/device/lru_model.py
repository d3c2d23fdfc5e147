"""The LRU model interface: what :class:`~mqoe.device.memory.Memory` asks of the model
that chooses the pages reclaim takes (:class:`LruModel`), the reclaim batch a pass
fills in (:class:`ReclaimBatch`) and the storage read a model plans for file faults
(:class:`FaultRead`). The models: :mod:`mqoe.device.lru_recency` (``recency``, the
default) and :mod:`mqoe.device.lru_lists` (``lists``); the registry is
:data:`mqoe.device.memory.LRU_MODELS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from mqoe.device.process import Process


@dataclass(slots=True)
class ReclaimBatch:
    """What one reclaim pass did: pages scanned and reclaimed, the CPU it costs."""

    scanned: int = 0
    reclaimed: int = 0
    cycles: float = 0.0
    compressed: int = 0  # anon pages put into zRAM (their compression is run apart)
    writeback: int = 0
    aged: int = 0  # pages moved between the LRU lists (activated, rotated, deactivated)


class FaultRead(NamedTuple):
    """One storage read for file faults: the pages it brings in (``hot`` of them hot
    pages) and how many of the pending hot and cold faults it serves."""

    pages: int
    hot: int
    hot_served: int
    cold_served: int


class LruModel(Protocol):
    """How reclaim chooses pages: the per-process state it keeps (told of every page
    that arrives, is used, faults back or leaves) and one reclaim pass."""

    def allocating(self, process: Process, file_pages: int, anon_pages: int) -> None: ...
    def added(self, process: Process, kind: str, pages: int) -> None: ...
    def touched(self, process: Process, file_pages: int, anon_pages: int) -> tuple[int, int]:
        """Uses of pages; returns how many of the file uses fault (hot, cold pages)."""
        ...

    def read_around(
        self, process: Process, hot_faults: int, cold_faults: int, window: int
    ) -> FaultRead:
        """The read for the next of the pending file faults (on hot and cold pages),
        with a readaround ``window`` of pages."""
        ...

    def refaulted(self, process: Process, kind: str, pages: int, hot: int = 0) -> None: ...
    def removed(self, process: Process, kind: str, pages: int) -> None: ...
    def released(self, process: Process) -> None: ...
    def reclaim(self, target: int, batch: ReclaimBatch) -> None: ...
    def reclaim_from(self, process: Process, target: int, batch: ReclaimBatch) -> None:
        """Scan ``target`` pages of one process's memory (its cgroup's lruvec)."""
        ...

    def inactive_pages(self) -> tuple[int, int] | None:
        """The node's inactive (anon, file) pages, or None if the model keeps no lists."""
        ...

    def check(self) -> None: ...
