"""WAM in the fleet: the discard queue, and each WAM policy's vectorised form
(:data:`FLEET_WAM`) — what an fsync waits behind under it, for every phone of a block
at once.

Under real-time WAM every deletion queues discard work (bytes ÷ the flash's discard
throughput) in a FIFO drained at that rate, and an ``fsync`` waits for the backlog
queued before it (the quasi-async dependency of "Aging or Glitching?", MobiCom 2020).
Lazy WAM runs one uninterruptible trim a night (idle + charging, ~03:00) that fsyncs
queue behind, a block group at a time; practical WAM trims when the deleted bytes S_d
reach a threshold, in page groups, only while the screen is locked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mqoe.policies.wam import GROUP_PAGES, Lazy, Practical, RealTime, WamPolicy
from mqoe.workloads.fleet_constants import FleetConstants
from mqoe.workloads.fleet_usage import (
    DAY_S,
    GB,
    HOUR_S,
    BoolArray,
    Deletions,
    FloatArray,
    IntArray,
    Timeline,
)
from mqoe.workloads.fleet_waiters import _concat_columns, _Segments

PAGE_BYTES = 4096


# -- the discard queue -----------------------------------------------------------------


def discard_backlog(t_s: FloatArray, work_s: FloatArray) -> FloatArray:
    """Backlog (s of discard work) just after each arrival of a FIFO drained at unit rate.

    Arrivals at sorted times ``t_s`` bring ``work_s``. Lindley's recursion
    B_n = max(0, B_{n−1} − (t_n − t_{n−1})) + w_n in closed form:
    B_n = C_n − t_n − min(0, min_{j ≤ n}(C_{j−1} − t_j)), C the cumulative work.
    """
    cumulative = np.cumsum(work_s)
    low = np.minimum.accumulate(np.minimum(cumulative - work_s - t_s, 0.0))
    backlog: FloatArray = np.maximum(cumulative - t_s - low, 0.0)
    return backlog


def fsync_waits(
    discard_t_s: FloatArray, discard_work_s: FloatArray, fsync_t_s: FloatArray
) -> FloatArray:
    """How long each fsync waits: for the discard work queued before it and not yet done
    (the responsiveness study's quasi-async dependency). Discards at an fsync's instant count as
    earlier (the deleting thread's journal commit came first)."""
    backlog = discard_backlog(discard_t_s, discard_work_s)
    i = np.searchsorted(discard_t_s, fsync_t_s, side="right") - 1
    last = backlog[np.maximum(i, 0)] - (fsync_t_s - discard_t_s[np.maximum(i, 0)])
    waits: FloatArray = np.where(i >= 0, np.maximum(last, 0.0), 0.0)
    return waits


@dataclass(frozen=True)
class DiscardCost:
    """Per-phone discard costs: seconds per byte, per command, and the free extent."""

    s_per_byte: FloatArray
    s_per_command: FloatArray
    extent_bytes: FloatArray

    def realtime_s(self, phone: IntArray, nbytes: FloatArray, files: FloatArray) -> FloatArray:
        """Discard work of deleting ``files`` files of ``nbytes`` in all (per extent)."""
        commands = np.maximum(files, nbytes / self.extent_bytes[phone])
        work: FloatArray = nbytes * self.s_per_byte[phone] + commands * self.s_per_command[phone]
        return work

    @property
    def batched_bytes_s(self) -> FloatArray:
        """Throughput of a batched trim over coalesced free space (bytes/s)."""
        rate: FloatArray = 1.0 / (self.s_per_byte + self.s_per_command / self.extent_bytes)
        return rate


def discard_cost(ufs: BoolArray, fill: FloatArray, c: FleetConstants) -> DiscardCost:
    """Each phone's discard costs from its storage type and how full it is."""
    mb_s = np.where(ufs, c.ufs_discard_mb_s, c.emmc_discard_mb_s)
    cmd_ms = np.where(ufs, c.ufs_discard_cmd_ms, c.emmc_discard_cmd_ms)
    extent_mb = c.free_extent_mb * np.maximum(1.0 - fill, 0.01)
    return DiscardCost(1.0 / (mb_s * 1e6), cmd_ms / 1e3, extent_mb * 1e6)


@dataclass(frozen=True)
class _Trims:
    """Batched trims (lazy / practical): busy seconds of discard work and the span."""

    phone: IntArray
    start: FloatArray
    end: FloatArray
    bytes: FloatArray
    busy_s: FloatArray
    completed: BoolArray

    @staticmethod
    def concat(parts: list[_Trims]) -> _Trims:
        if not parts:
            zero = np.zeros(0)
            return _Trims(np.zeros(0, np.int64), zero, zero, zero, zero, np.zeros(0, bool))
        return _Trims(*_concat_columns(parts))


def _realtime_segments(
    deletions: Deletions, cost: DiscardCost, period_end: FloatArray
) -> _Segments:
    """Real-time WAM: each deletion queues its discards, drained in FIFO order."""
    if len(deletions.t) == 0:
        return _Segments.empty()
    work = cost.realtime_s(deletions.phone, deletions.bytes, deletions.files)
    backlog = discard_backlog(deletions.t, work)
    gap = np.append(np.diff(deletions.t), np.inf)
    end = np.minimum(deletions.t + np.minimum(backlog, gap), period_end[deletions.phone])
    return _Segments(deletions.phone, deletions.t, backlog, np.maximum(end - deletions.t, 0.0))


def _idle_start(timeline: Timeline, phone: IntArray, t: FloatArray, idle_s: float) -> FloatArray:
    """The first time ≥ ``t`` after the screen has been off for ``idle_s``."""
    if len(timeline.start) == 0:
        return t
    for _ in range(8):
        i = np.searchsorted(timeline.start, t, side="right") - 1
        safe = np.maximum(i, 0)
        own = (i >= 0) & (timeline.phone[safe] == phone)
        t = np.where(own, np.maximum(t, timeline.end[safe] + idle_s), t)
    return t


# JobScheduler's idle: screen off for 71 min (AOSP IdleController, Android 7–9); the
# fstrim maintenance job is scheduled for 03:00 (AOSP MountServiceIdler).
_IDLE_S = 71 * 60.0
# An ext4 block group (32768 blocks of 4 KiB), the unit FITRIM trims at once.
_EXT4_GROUP_BYTES = float(GROUP_PAGES * PAGE_BYTES)
_TRIM_HOUR_S = 3 * HOUR_S


def _lazy_trims(
    timeline: Timeline,
    deletions: Deletions,
    rate: FloatArray,
    start_hour_s: float = _TRIM_HOUR_S,
    group_bytes: float = _EXT4_GROUP_BYTES,
) -> tuple[_Trims, _Segments]:
    """Lazy WAM: each night, once idle and charging after 03:00, trim everything deleted
    since the last completed trim, uninterruptibly; unplugging kills the trim, and the
    next one restarts from the head. The trim is ext4's FITRIM, which works block group
    by block group (ext4_trim_fs → ext4_trim_all_free), each group's discards issued
    and waited for before the next: an fsync meanwhile queues behind the discards
    issued before it, the rest of the group in flight, not the rest of the trim."""
    n = timeline.n_phones
    phones = np.arange(n)
    covered = deletions.bytes_before(timeline.phone_start(phones) - 1.0)
    rows: list[_Trims] = []
    for day in range(timeline.days):
        plug = timeline.sleep[:, day] + 900.0
        unplug = timeline.wake[:, day + 1]
        t3 = timeline.phone_start(phones) + (day + 1) * DAY_S + start_hour_s
        start = _idle_start(timeline, phones, np.maximum(t3, plug), _IDLE_S)
        pending = deletions.bytes_before(start) - covered
        ok = timeline.charging[:, day] & (start < unplug) & (pending > 0)
        ok &= start < timeline.phone_end(phones)
        busy = pending / rate
        end = np.minimum(start + busy, np.minimum(unplug, timeline.phone_end(phones)))
        done = ok & (start + busy <= unplug)
        covered = np.where(done, deletions.bytes_before(start), covered)
        rows.append(
            _Trims(phones[ok], start[ok], end[ok], pending[ok], (end - start)[ok], done[ok])
        )
    trims = _Trims.concat(rows)
    return trims, _trim_groups(trims, group_bytes / rate)


def _groups(trims: _Trims, group_s: FloatArray) -> tuple[IntArray, FloatArray, FloatArray]:
    """Each trim's groups back to back over its busy time: (the trim of each group, the
    group's start within that busy time, the group's length — the last one cut short)."""
    per = group_s[trims.phone]
    counts = np.ceil(trims.busy_s / per).astype(np.int64)
    trim = np.repeat(np.arange(len(trims.start)), counts)
    k = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    offset = k * per[trim]
    return trim, offset, np.minimum(per[trim], trims.busy_s[trim] - offset)


def _trim_groups(trims: _Trims, group_s: FloatArray) -> _Segments:
    """A trim's groups back to back from its start (on the wall clock: nothing pauses
    it): an fsync in a group waits for the rest of that group."""
    trim, offset, wait = _groups(trims, group_s)
    return _Segments(trims.phone[trim], trims.start[trim] + offset, wait, wait)


def _practical_trims(
    timeline: Timeline,
    deletions: Deletions,
    rate: FloatArray,
    threshold_bytes: float,
    group_bytes: float,
    min_timeout_s: float,
) -> tuple[_Trims, _Segments]:
    """Practical WAM: no real-time discards; when S_d ≥ threshold, trim in page groups
    while the screen is locked, pause on unlock once the group in flight is done, resume
    on lock. An fsync waits at most for the group in flight."""
    n = timeline.n_phones
    phones = np.arange(n)
    period_end = timeline.phone_end(phones)
    covered = deletions.bytes_before(timeline.phone_start(phones) - 1.0)
    ready = timeline.phone_start(phones)
    active = np.ones(n, bool)
    parts: list[_Trims] = []
    while active.any() and len(deletions.t):
        idx = np.searchsorted(deletions.cum_bytes, covered + threshold_bytes, side="left")
        safe = np.minimum(idx, len(deletions.t) - 1)
        active &= (idx < len(deletions.t)) & (deletions.phone[safe] == phones)
        start = timeline.next_locked(np.maximum(deletions.t[safe], ready))
        active &= start < period_end
        if not active.any():
            break
        pending = deletions.bytes_before(start) - covered
        busy = pending / rate
        end = timeline.from_off_time(timeline.off_time(start) + busy)
        completed = end <= period_end
        end = np.minimum(end, period_end)
        p = phones[active]
        span_busy = np.where(completed, busy, timeline.off_time(end) - timeline.off_time(start))
        parts.append(_Trims(p, start[p], end[p], pending[p], span_busy[p], completed[p]))
        covered = np.where(active, deletions.bytes_before(start), covered)
        ready = np.where(active, end, ready)
    trims = _Trims.concat(parts)
    segments = [_unlock_overflow(timeline, trims, rate, group_bytes)]
    group_s = group_bytes / rate
    if (group_s[trims.phone] >= min_timeout_s).any():
        segments.append(_locked_groups(timeline, trims, group_s))
    return trims, _Segments.concat(segments)


def _unlock_overflow(
    timeline: Timeline, trims: _Trims, rate: FloatArray, group_bytes: float
) -> _Segments:
    """At each unlock during a trim the group in flight finishes before the pause: an
    fsync right after the unlock waits for the rest of that group."""
    first = np.searchsorted(timeline.start, trims.start, side="right")
    last = np.searchsorted(timeline.start, trims.end, side="left")
    counts = np.maximum(last - first, 0)
    trim = np.repeat(np.arange(len(trims.start)), counts)
    session = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    phone = trims.phone[trim]
    group_s = group_bytes / rate[phone]
    done = timeline.off_time(timeline.start[session]) - timeline.off_time(trims.start[trim])
    in_flight = np.ceil(done / group_s - 1e-9) * group_s - done
    remaining = trims.bytes[trim] / rate[phone] - done
    wait = np.clip(np.minimum(in_flight, remaining), 0.0, None)
    return _Segments(phone, timeline.start[session], wait, wait)


def _locked_groups(timeline: Timeline, trims: _Trims, group_s: FloatArray) -> _Segments:
    """Each group while locked: an fsync waits for the rest of the group in flight (only
    built when a group lasts at least the shortest timeout: slow flash, huge groups)."""
    trim, offset, wait = _groups(trims, group_s)
    t0 = timeline.from_off_time(timeline.off_time(trims.start[trim]) + offset)
    next_on = timeline.start[
        np.minimum(np.searchsorted(timeline.start, t0, side="right"), len(timeline.start) - 1)
    ]
    length = np.clip(np.minimum(wait, next_on - t0), 0.0, None)
    return _Segments(trims.phone[trim], t0, wait, length)


# The fleet's vectorised form of each WAM policy class: the same decisions as the
# policy's hooks (mqoe.policies.wam.WamPolicy) take per phone in the engine, computed
# for every phone at once. A new policy runs in the fleet once it has an entry here.
def _fleet_realtime(
    policy: WamPolicy, timeline: Timeline, deletions: Deletions, cost: DiscardCost,
    c: FleetConstants,
) -> tuple[_Trims, _Segments]:  # fmt: skip
    period_end = timeline.phone_end(np.arange(timeline.n_phones))
    return _Trims.concat([]), _realtime_segments(deletions, cost, period_end)


def _fleet_lazy(
    policy: WamPolicy, timeline: Timeline, deletions: Deletions, cost: DiscardCost,
    c: FleetConstants,
) -> tuple[_Trims, _Segments]:  # fmt: skip
    assert isinstance(policy, Lazy)
    return _lazy_trims(timeline, deletions, cost.batched_bytes_s, policy.start_hour * HOUR_S,
                       float(policy.group_pages * PAGE_BYTES))  # fmt: skip


def _fleet_practical(
    policy: WamPolicy, timeline: Timeline, deletions: Deletions, cost: DiscardCost,
    c: FleetConstants,
) -> tuple[_Trims, _Segments]:  # fmt: skip
    assert isinstance(policy, Practical)
    return _practical_trims(timeline, deletions, cost.batched_bytes_s,
                            policy.threshold_gb * GB, policy.group_pages * PAGE_BYTES,
                            c.input_timeout_s)  # fmt: skip


FleetWam = Callable[
    [WamPolicy, Timeline, Deletions, DiscardCost, FleetConstants], tuple[_Trims, _Segments]
]
FLEET_WAM: dict[type, FleetWam] = {
    RealTime: _fleet_realtime,
    Lazy: _fleet_lazy,
    Practical: _fleet_practical,
}
