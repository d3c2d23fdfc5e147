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
pages a touch hits is a binomial draw, uniform over a list. The lists' age order is
kept coarsely, as two cohorts per list (:class:`Lists`): a scan takes the older
cohort's pages, drawn uniformly among them, before the pages added or rotated since.

Uses are not uniform over a working set: a process's *hot* file pages (a fraction of
its file working set) take most of its uses, a cold tail the rest. Hot and cold pages
share the kernel's lists; here each file kind keeps its hot pages as a second
:class:`Lists` (``code_hot``, ``data_hot``), and a scan of a list draws its pages from
both parts in proportion to their sizes.

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
MMAP_LOTSAMISS = 100  # mm/filemap.c: more misses than this and readaround stops
_SHADOW_BUCKET = 1024  # eviction-counter width of one shadow bucket


@dataclass(slots=True)
class Lists:
    """One kind's inactive and active lists: sizes, pages whose accessed bit is set
    (young), and inactive pages with PG_referenced.

    Each list keeps its order as two cohorts: the *head* — pages added, rotated or
    moved to it since the scanner last passed — and the older rest, the *tail*. A scan
    takes tail pages first; when the tail is used up the head becomes the tail (a new
    round). So a page waits a whole round between two scans of it, as on a real list,
    and a page used between them is found young. The ``*_head*`` counts are the head's
    share of the list's counts."""

    inactive: int = 0
    active: int = 0
    inactive_young: int = 0
    active_young: int = 0
    referenced: int = 0
    inactive_head: int = 0
    inactive_head_young: int = 0
    inactive_head_referenced: int = 0
    active_head: int = 0
    active_head_young: int = 0

    @property
    def pages(self) -> int:
        return self.inactive + self.active

    def check(self) -> None:
        assert 0 <= self.inactive_young <= self.inactive, self
        assert 0 <= self.active_young <= self.active, self
        assert 0 <= self.referenced <= self.inactive, self
        assert 0 <= self.inactive_head <= self.inactive, self
        assert 0 <= self.active_head <= self.active, self
        for head, whole, size, head_size in (
            (self.inactive_head_young, self.inactive_young, self.inactive, self.inactive_head),
            (self.inactive_head_referenced, self.referenced, self.inactive, self.inactive_head),
            (self.active_head_young, self.active_young, self.active, self.active_head),
        ):
            assert 0 <= head <= min(whole, head_size), self
            assert whole - head <= size - head_size, self


@dataclass(slots=True)
class Lruvec:
    """A process's LRU lists, its reclaim statistics (get_scan_count's recent scanned
    and rotated pages, anon then file) and its evicted file pages' shadow entries."""

    anon: Lists = field(default_factory=Lists)
    code: Lists = field(default_factory=Lists)  # cold code pages (all, without a hot set)
    data: Lists = field(default_factory=Lists)
    code_hot: Lists = field(default_factory=Lists)
    data_hot: Lists = field(default_factory=Lists)
    recent_scanned: list[float] = field(default_factory=lambda: [0.0, 0.0])
    recent_rotated: list[float] = field(default_factory=lambda: [0.0, 0.0])
    shadows: list[list[int]] = field(default_factory=list)  # [counter bucket, pages]
    shadow_pages: int = 0  # the shadows' pages, summed
    evictions: int = 0  # its own eviction counter (memcg-aware workingset, Linux 4.7+)
    # Its files' readaround state (file_ra_state.mmap_miss): major faults less the
    # faults that found a page readaround had brought in.
    mmap_miss: int = 0

    def of(self, kind: str) -> Lists:
        return self.anon if kind == "anon" else self.code if kind == "code" else self.data

    def parts(self, kind: str) -> tuple[Lists, ...]:
        """The lists holding one kind's pages: cold then hot for file kinds."""
        if kind == "anon":
            return (self.anon,)
        return (self.code, self.code_hot) if kind == "code" else (self.data, self.data_hot)

    # The sums below are spelled out: reclaim and every refault read them.
    def inactive(self, kind: str) -> int:
        if kind == "anon":
            return self.anon.inactive
        if kind == "code":
            return self.code.inactive + self.code_hot.inactive
        return self.data.inactive + self.data_hot.inactive

    def active(self, kind: str) -> int:
        if kind == "anon":
            return self.anon.active
        if kind == "code":
            return self.code.active + self.code_hot.active
        return self.data.active + self.data_hot.active

    def pages(self, kind: str) -> int:
        return self.inactive(kind) + self.active(kind)

    @property
    def file_inactive(self) -> int:
        code, data = self.code, self.data
        return code.inactive + self.code_hot.inactive + data.inactive + self.data_hot.inactive

    @property
    def file_active(self) -> int:
        code, data = self.code, self.data
        return code.active + self.code_hot.active + data.active + self.data_hot.active

    @property
    def file_pages(self) -> int:
        return self.file_inactive + self.file_active

    @property
    def hot_file_pages(self) -> int:
        return self.code_hot.pages + self.data_hot.pages

    def check(self) -> None:
        for kind in KINDS:
            for part in self.parts(kind):
                part.check()
        assert all(n > 0 for _, n in self.shadows), self.shadows
        assert self.shadow_pages == sum(n for _, n in self.shadows), self.shadows


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
    """Pages enter the head of a list (faulted in: their accessed bit is set)."""
    if pages <= 0:
        return
    if active:
        lists.active += pages
        lists.active_head += pages
        if young:
            lists.active_young += pages
            lists.active_head_young += pages
    else:
        lists.inactive += pages
        lists.inactive_head += pages
        if young:
            lists.inactive_young += pages
            lists.inactive_head_young += pages


def put_back(lists: Lists, pages: int) -> None:
    """Scanned inactive pages that could not be reclaimed go back to the list's head."""
    add(lists, pages, active=False, young=False)


def remove(lists: Lists, pages: int, rng: np.random.Generator) -> None:
    """``pages`` leave the lists (unmapped), drawn uniformly from both."""
    pages = min(pages, lists.pages)
    if pages <= 0:
        return
    from_active = pick(rng, pages, lists.active, lists.pages)
    from_inactive = pages - from_active
    if from_active:
        head = pick(rng, from_active, lists.active_head, lists.active)
        tail = from_active - head
        head_young = pick(rng, head, lists.active_head_young, lists.active_head)
        tail_young = pick(
            rng, tail, lists.active_young - lists.active_head_young,
            lists.active - lists.active_head,
        )  # fmt: skip
        lists.active -= from_active
        lists.active_head -= head
        lists.active_young -= head_young + tail_young
        lists.active_head_young -= head_young
    if from_inactive:
        head = pick(rng, from_inactive, lists.inactive_head, lists.inactive)
        tail = from_inactive - head
        tail_size = lists.inactive - lists.inactive_head
        head_young = pick(rng, head, lists.inactive_head_young, lists.inactive_head)
        tail_young = pick(rng, tail, lists.inactive_young - lists.inactive_head_young, tail_size)
        head_ref = pick(rng, head, lists.inactive_head_referenced, lists.inactive_head)
        tail_ref = pick(rng, tail, lists.referenced - lists.inactive_head_referenced, tail_size)
        lists.inactive -= from_inactive
        lists.inactive_head -= head
        lists.inactive_young -= head_young + tail_young
        lists.inactive_head_young -= head_young
        lists.referenced -= head_ref + tail_ref
        lists.inactive_head_referenced -= head_ref


def touch(lists: Lists, hits: int, rng: np.random.Generator) -> None:
    """``hits`` uses of resident pages, uniform over both lists, set accessed bits:
    a page not yet young becomes young with chance 1 − e^(−hits per page)."""
    pages = lists.pages
    if hits <= 0 or pages <= 0:
        return
    mark(lists, -math.expm1(-hits / pages), rng)


def mark(lists: Lists, p: float, rng: np.random.Generator) -> None:
    """Each page of both lists is used with chance ``p``: its accessed bit is set."""
    if p <= 0.0:
        return
    head = draw(rng, lists.inactive_head - lists.inactive_head_young, p)
    tail = lists.inactive - lists.inactive_head - (lists.inactive_young - lists.inactive_head_young)
    lists.inactive_young += head + draw(rng, tail, p)
    lists.inactive_head_young += head
    head = draw(rng, lists.active_head - lists.active_head_young, p)
    tail = lists.active - lists.active_head - (lists.active_young - lists.active_head_young)
    lists.active_young += head + draw(rng, tail, p)
    lists.active_head_young += head


@dataclass(slots=True)
class Scan:
    """What one list scan did (pages)."""

    scanned: int = 0
    reclaimed: int = 0  # taken off the lists (to be freed or swapped)
    activated: int = 0  # inactive → active (referenced)
    rotated: int = 0  # kept where they are (PG_referenced set, or exec kept active)
    deactivated: int = 0  # active → inactive

    def add(self, other: Scan) -> None:
        self.scanned += other.scanned
        self.reclaimed += other.reclaimed
        self.activated += other.activated
        self.rotated += other.rotated
        self.deactivated += other.deactivated


def scan_inactive(parts: tuple[Lists, ...], kind: str, n: int, rng: np.random.Generator) -> Scan:
    """shrink_inactive over one list whose pages are held in ``parts`` (cold, hot):
    the ``n`` scanned pages fall on each part in proportion to its inactive pages."""
    return _scan_parts(parts, kind, n, rng, active=False)


def scan_active(parts: tuple[Lists, ...], kind: str, n: int, rng: np.random.Generator) -> Scan:
    """shrink_active over one list held in ``parts`` (see :func:`scan_inactive`)."""
    return _scan_parts(parts, kind, n, rng, active=True)


def _scan_parts(
    parts: tuple[Lists, ...], kind: str, n: int, rng: np.random.Generator, active: bool
) -> Scan:
    shrink = shrink_active if active else shrink_inactive
    if len(parts) == 1:
        return shrink(parts[0], kind, n, rng)
    cold, hot = parts
    cold_size, hot_size = (cold.active, hot.active) if active else (cold.inactive, hot.inactive)
    n = min(n, cold_size + hot_size)
    n_hot = pick(rng, n, hot_size, cold_size + hot_size)
    out = shrink(cold, kind, n - n_hot, rng)
    if n_hot:
        out.add(shrink(hot, kind, n_hot, rng))
    return out


def shrink_inactive(
    lists: Lists, kind: str, n: int, rng: np.random.Generator, reclaimable: bool = True
) -> Scan:
    """Scan ``n`` pages off the tail of the inactive list (shrink_inactive_list +
    page_check_references for mapped pages): young anon and young code pages are
    activated; young data pages are activated if PG_referenced was already set, else
    it is set and they rotate to the head; pages not young are reclaimed
    (``reclaimable`` False: anon with nowhere to go — they go back to the head, scanned
    but not reclaimed). Every scanned page's accessed bit is cleared."""
    n = min(n, lists.inactive)
    out = Scan(scanned=max(0, n))
    while n > 0:
        tail = lists.inactive - lists.inactive_head
        if tail <= 0:  # a new round: the head becomes the tail
            lists.inactive_head = lists.inactive_head_young = 0
            lists.inactive_head_referenced = 0
            tail = lists.inactive
        take = min(n, tail)
        n -= take
        young = pick(rng, take, lists.inactive_young - lists.inactive_head_young, tail)
        # PG_referenced is drawn independently of the accessed bit.
        referenced = pick(rng, take, lists.referenced - lists.inactive_head_referenced, tail)
        referenced_young = pick(rng, referenced, young, take)
        old = take - young
        lists.inactive -= take
        lists.inactive_young -= young
        lists.referenced -= referenced  # page_check_references tests and clears it
        if kind == "data":
            activated, rotated = referenced_young, young - referenced_young
        else:
            activated, rotated = young, 0
        add(lists, activated, active=True, young=False)
        add(lists, rotated, active=False, young=False)
        lists.referenced += rotated  # SetPageReferenced: activated on its next use
        lists.inactive_head_referenced += rotated
        out.activated += activated
        out.rotated += rotated
        if reclaimable:
            out.reclaimed += old
        else:
            put_back(lists, old)
            out.rotated += old
    return out


def shrink_active(lists: Lists, kind: str, n: int, rng: np.random.Generator) -> Scan:
    """Scan ``n`` pages off the tail of the active list (shrink_active_list): accessed
    bits are cleared; young code pages go back to the active head (rotated), every
    other page to the inactive head, referenced or not."""
    n = min(n, lists.active)
    out = Scan(scanned=max(0, n))
    while n > 0:
        tail = lists.active - lists.active_head
        if tail <= 0:  # a new round
            lists.active_head = lists.active_head_young = 0
            tail = lists.active
        take = min(n, tail)
        n -= take
        young = pick(rng, take, lists.active_young - lists.active_head_young, tail)
        lists.active -= take
        lists.active_young -= young
        rotated = young if kind == "code" else 0
        add(lists, rotated, active=True, young=False)
        add(lists, take - rotated, active=False, young=False)
        out.rotated += rotated
        out.deactivated += take - rotated
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
    sizes = (vec.anon.pages, vec.file_pages)
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
    vec.shadow_pages += pages
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
    close = 0
    for bucket, n in reversed(vec.shadows):  # the list runs oldest first: close ones last
        if bucket < oldest_close:
            break
        close += n
    activate = pick(rng, pages, close, total)
    _consume(vec.shadows, activate, newest_first=True)
    _consume(vec.shadows, pages - activate, newest_first=False)
    vec.shadow_pages -= pages
    return activate


def _consume(shadows: list[list[int]], pages: int, newest_first: bool) -> None:
    while pages > 0 and shadows:
        entry = shadows[-1] if newest_first else shadows[0]
        take = min(pages, entry[1])
        entry[1] -= take
        pages -= take
        if not entry[1]:
            shadows.pop(-1 if newest_first else 0)
