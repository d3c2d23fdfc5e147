"""Linux's LRU lists, per process: the state and the page moves of mm/vmscan.c and
mm/workingset.c, as page counts (docs/decisions/0002-memory-lru.md).

Each process has one *lruvec* — as every app has its own memory cgroup on Android Go,
where ``ro.config.per_app_memcg`` defaults to ``ro.config.low_ram`` — holding three
kinds of pages, each on an inactive and an active list:

* ``anon``: heap, stacks, the MSE buffers. New anon pages start on the *active* list
  (``lru_cache_add_active_or_unevictable``, kernels before 5.9); swapped-in pages on
  the inactive one.
* ``code``: file pages mapped ``VM_EXEC`` (libraries, ``.oat`` code). Referenced code
  pages are activated on their first referenced scan and rotated on the active list
  instead of being deactivated — the protection ``page_check_references`` and
  ``shrink_active_list`` give executable mappings.
* ``data``: other mapped file pages (resources, ``.vdex``, fonts, the APK). A page must
  be found referenced on two scans of the inactive list to be activated (the first
  sets ``PG_referenced`` and rotates it).

``code`` and ``data`` together are the lruvec's file lists. Pages are counts; which
pages a touch hits and a scan takes are binomial draws, uniform over a list (the
lists' age order is not kept: a page's chance of being referenced when scanned rises
with its time on the list through the accessed-bit counts instead).

A scan reads and clears each page's accessed (young) bit, as ``page_referenced`` does.
Evicted file pages leave *shadow entries* (``workingset_eviction``): here, per lruvec,
buckets of the node's eviction counter. A refault whose distance (the counter now minus
the counter at its eviction) is at most the node's active file pages is activated
(``workingset_refault`` / ``workingset_activate``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

KINDS = ("anon", "code", "data")
FILE_KINDS = ("code", "data")
DEF_PRIORITY = 12  # include/linux/mmzone.h
_SHADOW_BUCKET = 1024  # eviction-counter width of one shadow bucket


@dataclass(slots=True)
class Lists:
    """One kind's inactive and active lists: sizes, pages whose accessed bit is set
    (young), and inactive pages with PG_referenced."""

    inactive: int = 0
    active: int = 0
    inactive_young: int = 0
    active_young: int = 0
    referenced: int = 0

    @property
    def pages(self) -> int:
        return self.inactive + self.active

    def check(self) -> None:
        assert 0 <= self.inactive_young <= self.inactive, self
        assert 0 <= self.active_young <= self.active, self
        assert 0 <= self.referenced <= self.inactive, self


@dataclass(slots=True)
class Lruvec:
    """A process's LRU lists, its reclaim statistics (get_scan_count's recent scanned
    and rotated pages, anon then file) and its evicted file pages' shadow entries."""

    anon: Lists = field(default_factory=Lists)
    code: Lists = field(default_factory=Lists)
    data: Lists = field(default_factory=Lists)
    recent_scanned: list[float] = field(default_factory=lambda: [0.0, 0.0])
    recent_rotated: list[float] = field(default_factory=lambda: [0.0, 0.0])
    shadows: list[list[int]] = field(default_factory=list)  # [counter bucket, pages]
    evictions: int = 0  # its own eviction counter (memcg-aware workingset, Linux 4.7+)

    def of(self, kind: str) -> Lists:
        return self.anon if kind == "anon" else self.code if kind == "code" else self.data

    @property
    def file_inactive(self) -> int:
        return self.code.inactive + self.data.inactive

    @property
    def file_active(self) -> int:
        return self.code.active + self.data.active

    @property
    def shadow_pages(self) -> int:
        return sum(n for _, n in self.shadows)

    def check(self) -> None:
        for kind in KINDS:
            self.of(kind).check()
        assert all(n > 0 for _, n in self.shadows), self.shadows


def draw(rng: np.random.Generator, n: int, p: float) -> int:
    """Binomial(n, p), without a draw for the certain cases."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    return int(rng.binomial(n, p))


def pick(rng: np.random.Generator, n: int, marked: int, size: int) -> int:
    """How many of ``n`` pages taken at random from ``size`` are among ``marked`` of them
    (hypergeometric)."""
    if n <= 0 or marked <= 0:
        return 0
    if marked >= size or n >= size:
        return min(n, marked)
    return int(rng.hypergeometric(marked, size - marked, n))


def add(lists: Lists, pages: int, active: bool, young: bool = True) -> None:
    """Pages enter a list (faulted in: their accessed bit is set)."""
    if active:
        lists.active += pages
        lists.active_young += pages if young else 0
    else:
        lists.inactive += pages
        lists.inactive_young += pages if young else 0


def remove(lists: Lists, pages: int, rng: np.random.Generator) -> None:
    """``pages`` leave the lists (unmapped), drawn uniformly from both."""
    pages = min(pages, lists.pages)
    if pages <= 0:
        return
    from_active = pick(rng, pages, lists.active, lists.pages)
    from_inactive = pages - from_active
    if from_active:
        lists.active_young -= pick(rng, from_active, lists.active_young, lists.active)
        lists.active -= from_active
    if from_inactive:
        lists.inactive_young -= pick(rng, from_inactive, lists.inactive_young, lists.inactive)
        lists.referenced -= pick(rng, from_inactive, lists.referenced, lists.inactive)
        lists.inactive -= from_inactive


def touch(lists: Lists, hits: int, rng: np.random.Generator) -> None:
    """``hits`` uses of resident pages, uniform over both lists, set accessed bits:
    a page not yet young becomes young with chance 1 − e^(−hits per page)."""
    pages = lists.pages
    if hits <= 0 or pages <= 0:
        return
    p = -math.expm1(-hits / pages)
    lists.inactive_young += draw(rng, lists.inactive - lists.inactive_young, p)
    lists.active_young += draw(rng, lists.active - lists.active_young, p)


@dataclass(slots=True)
class Scan:
    """What one list scan did (pages)."""

    scanned: int = 0
    reclaimed: int = 0  # taken off the lists (to be freed or swapped)
    activated: int = 0  # inactive → active (referenced)
    rotated: int = 0  # kept where they are (PG_referenced set, or exec kept active)
    deactivated: int = 0  # active → inactive


def shrink_inactive(
    lists: Lists, kind: str, n: int, rng: np.random.Generator, reclaimable: bool = True
) -> Scan:
    """Scan ``n`` pages off the inactive list (shrink_inactive_list + page_check_references
    for mapped pages): young anon and young code pages are activated; young data pages
    are activated if PG_referenced was already set, else it is set and they rotate;
    pages not young are reclaimed (``reclaimable`` False: anon with nowhere to go — they
    stay, scanned but not reclaimed)."""
    n = min(n, lists.inactive)
    out = Scan(scanned=n)
    if n <= 0:
        return out
    young = pick(rng, n, lists.inactive_young, lists.inactive)
    old = n - young
    # PG_referenced is drawn independently of the accessed bit.
    referenced = pick(rng, n, lists.referenced, lists.inactive)
    referenced_young = pick(rng, referenced, young, n)
    referenced_old = referenced - referenced_young
    lists.inactive_young -= young  # page_referenced clears the accessed bits
    if kind == "data":
        out.activated = referenced_young
        out.rotated = young - referenced_young
        lists.referenced += out.rotated - referenced_young
    else:
        out.activated = young
        lists.referenced -= referenced_young
    lists.inactive -= out.activated
    lists.active += out.activated
    if reclaimable:
        out.reclaimed = old
        lists.inactive -= old
        lists.referenced -= referenced_old
    else:
        out.rotated += old
    return out


def shrink_active(lists: Lists, kind: str, n: int, rng: np.random.Generator) -> Scan:
    """Scan ``n`` pages off the active list (shrink_active_list): accessed bits are
    cleared; young code pages stay active (rotated), every other page is deactivated
    to the inactive list, referenced or not."""
    n = min(n, lists.active)
    out = Scan(scanned=max(0, n))
    if n <= 0:
        return out
    young = pick(rng, n, lists.active_young, lists.active)
    lists.active_young -= young
    out.rotated = young if kind == "code" else 0
    out.deactivated = n - out.rotated
    lists.active -= out.deactivated
    lists.inactive += out.deactivated
    return out


def inactive_is_low(lists_inactive: int, lists_active: int, ratio: float) -> bool:
    """inactive_list_is_low: the inactive list is below active / ratio."""
    return lists_inactive * ratio < lists_active


def inactive_ratio(kind: str, lists_pages: int, kernel: tuple[int, int]) -> float:
    """The inactive:active target for lists holding ``lists_pages`` (inactive + active
    of one kind in one lruvec — a memory cgroup's own, as mem_cgroup_inactive_anon_is_low
    and, from Linux 4.8, inactive_list_is_low size it): int_sqrt(10 × their GB), 1 below
    1 GB; before 4.8 the file lists are kept 1:1."""
    if kernel < (4, 8) and kind != "anon":
        return 1.0
    gb = lists_pages >> 18  # 4 KB pages per GB
    return float(math.isqrt(10 * gb)) if gb else 1.0


def scan_fractions(vec: Lruvec, swappiness: int, anon_scannable: bool) -> tuple[float, float]:
    """get_scan_count's SCAN_FRACT weights (anon, file) per page of list size: the
    swappiness priority scaled by each kind's recent scanned ÷ rotated pages (a list
    whose scanned pages keep being rotated back is expensive to reclaim from). The
    recent counts are halved when they exceed a quarter of their lists, as the kernel
    decays them."""
    if not anon_scannable or swappiness == 0:
        return 0.0, 1.0
    sizes = (vec.anon.pages, vec.code.pages + vec.data.pages)
    for i in (0, 1):
        if vec.recent_scanned[i] > sizes[i] / 4:
            vec.recent_scanned[i] /= 2
            vec.recent_rotated[i] /= 2
    ap = swappiness * (vec.recent_scanned[0] + 1) / (vec.recent_rotated[0] + 1)
    fp = (200 - swappiness) * (vec.recent_scanned[1] + 1) / (vec.recent_rotated[1] + 1)
    return ap, fp


# -- workingset shadows ---------------------------------------------------------------
def evicted(vec: Lruvec, pages: int, counter: int) -> None:
    """``pages`` file pages evicted at eviction counter ``counter`` leave shadows."""
    if pages <= 0:
        return
    bucket = counter // _SHADOW_BUCKET
    if vec.shadows and vec.shadows[-1][0] == bucket:
        vec.shadows[-1][1] += pages
    else:
        vec.shadows.append([bucket, pages])


def refaulted(
    vec: Lruvec, pages: int, counter: int, active_file: int, rng: np.random.Generator
) -> int:
    """``pages`` evicted file pages fault back in: their shadows are consumed (drawn
    uniformly over the evicted pages). Returns how many had a refault distance of at
    most ``active_file`` — the ones to activate."""
    total = vec.shadow_pages
    if pages <= 0 or total <= 0:
        return 0
    pages = min(pages, total)
    oldest_close = (counter - active_file) // _SHADOW_BUCKET
    close = sum(n for bucket, n in vec.shadows if bucket >= oldest_close)
    activate = pick(rng, pages, close, total)
    _consume(vec.shadows, activate, newest_first=True)
    _consume(vec.shadows, pages - activate, newest_first=False)
    return activate


def _consume(shadows: list[list[int]], pages: int, newest_first: bool) -> None:
    while pages > 0 and shadows:
        entry = shadows[-1] if newest_first else shadows[0]
        take = min(pages, entry[1])
        entry[1] -= take
        pages -= take
        if not entry[1]:
            shadows.pop(-1 if newest_first else 0)
