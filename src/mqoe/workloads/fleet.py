"""The fleet simulation (responsiveness study, MobiCom 2020): ANR/SNR over tens of
thousands of phones for weeks.

``run_fleet(FleetParams(phones=30_000, days=21, wam="realtime"))`` draws phones from
the responsiveness study's 15 profiles, gives each an owner (:mod:`mqoe.workloads.fleet_usage`) and
lets ANRs and SNRs emerge from four blocking mechanisms, each a queue or a hold that a
thread waits behind, judged by Android's timeouts (AOSP defaults):

* **WAM** — under real-time WAM every deletion queues discard work (bytes ÷ the flash's
  discard throughput) in a FIFO drained at that rate; an ``fsync`` waits for the
  backlog queued before it (the study's quasi-async dependency). Lazy WAM instead runs one
  uninterruptible trim a night (idle + charging, ~03:00) that fsyncs queue behind;
  practical WAM trims when the deleted bytes S_d reach ``threshold_gb``, in page groups,
  only while the screen is locked, so an fsync waits at most for the group in flight.
* **Lock contention** — a system_server thread holds a hot lock for long (heavy-tailed
  hold times; longer with more processes to iterate and a slower CPU); the foreground
  app's Binder calls, broadcast receivers and watched system threads wait behind it.
* **Low memory** — when the apps a user keeps exceed what the RAM holds, GC pauses
  (allocation stalls behind reclaim) grow; a long one blocks input handling.
* **App defects** — a few apps hang their main thread now and then (heavy-tailed).

Waiters are the foreground app's main thread (ANR when a pending input waits ≥ 5 s),
broadcast receivers (≥ 10 s foreground, ≥ 60 s background) and the system_server
threads the Watchdog checks every 30 s (SNR when a check waits ≥ 60 s; the framework
restarts, killing the apps). Only blocks long enough to matter are generated (exact
thinning of Poisson processes), so a fleet costs seconds, not hours.

Randomness: phones are simulated in blocks of ``BLOCK_PHONES``; each block has its own
named streams from ``(seed, block)``, and the usage streams do not depend on the WAM
policy, so the same seed gives the same phones and days under every policy, for any
number of workers, and ``phones=N`` gives the first N phones of any larger fleet.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.engine import RandomStreams, validate_seed
from mqoe.errors import UserError
from mqoe.metrics.zipf import ZipfFit, fit_zipf
from mqoe.policies.wam import GROUP_PAGES, Lazy, Practical, RealTime, WamPolicy, make_wam_policy
from mqoe.workloads.fleet_usage import (
    DAY_S,
    GB,
    HOUR_S,
    Deletions,
    Hardware,
    Timeline,
    UsageConstants,
    Users,
    build_timeline,
    draw_deletions,
    draw_users,
    pick_apps,
    spec04_hardware,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

BLOCK_PHONES = 500  # the unit of seeding and of work handed to a worker
PAGE_BYTES = 4096

KINDS = ("anr_input", "anr_broadcast", "snr")
CAUSES = ("wam", "lock", "low_memory", "app_defect")
_INPUT, _BROADCAST, _SNR = 0, 1, 2
_WAM, _LOCK, _LOW_MEMORY, _DEFECT = 0, 1, 2, 3
SYSTEM_APP = "system_server"


@dataclass(frozen=True)
class FleetParams:
    """What to simulate. ``wam`` is a WAM policy spec of :mod:`mqoe.policies.wam`
    (``"practical:threshold_gb=4"``); ``threshold_gb`` and ``group_pages`` set
    practical WAM's knobs when the spec does not."""

    phones: int = 30_000  # the study: 30,000+ opt-in phones
    days: int = 21  # the study: three weeks
    seed: int = 0
    wam: str = "realtime"  # real-time WAM: the default the study found (MobiCom 2020)
    threshold_gb: float = 6.0  # practical WAM: S_d that triggers a batched trim (the study's)
    group_pages: int = 32_768  # practical WAM: pages per trim group (the study: 32 K)
    workers: int = 1  # processes sharing the blocks (results do not depend on it)
    # Android per phone: the profile's (the study's table), one version for all, or "mix":
    # 7, 8, 9 with equal odds whatever the model (separates version from hardware).
    android: Literal["profile", "mix", "7", "8", "9"] = "profile"

    def __post_init__(self) -> None:
        validate_seed(self.seed)
        if self.phones < 1 or self.days < 1 or self.workers < 1:
            raise UserError("fleet: phones, days and workers must be at least 1")
        if not (self.threshold_gb > 0 and math.isfinite(self.threshold_gb)):
            raise UserError(f"fleet: threshold_gb={self.threshold_gb}: expected a positive size")
        if self.group_pages < 1:
            raise UserError(f"fleet: group_pages={self.group_pages}: expected at least 1")
        if self.android not in ("profile", "mix", "7", "8", "9"):
            raise UserError(f"fleet: android={self.android}: expected profile, mix, 7, 8 or 9")
        self.policy()  # the WAM spec is valid and has a vectorised form (UserError if not)

    def policy(self) -> WamPolicy:
        """The WAM policy object ``wam`` names, practical WAM's knobs from ``threshold_gb``
        and ``group_pages`` unless its spec sets them (setting both ways is refused)."""
        try:
            policy = make_wam_policy(self.wam)
        except (UserError, ValueError, TypeError) as exc:
            raise UserError(f"fleet: wam={self.wam!r}: {exc}") from None
        if type(policy) not in FLEET_WAM:
            names = ", ".join(t.__name__ for t in FLEET_WAM)
            raise UserError(f"fleet: wam={self.wam!r}: no vectorised form (the fleet has {names})")
        knobs = {"threshold_gb": self.threshold_gb, "group_pages": self.group_pages}
        changed = {k: v for k, v in knobs.items() if v != _FLEET_DEFAULTS[k]}
        if isinstance(policy, Practical):
            if ":" in self.wam and changed:
                raise UserError(f"fleet: set {next(iter(changed))} in wam={self.wam!r} or as a "
                                "parameter, not both")  # fmt: skip
            if ":" not in self.wam:
                policy = dataclasses.replace(policy, **knobs)  # type: ignore[arg-type]
        return policy


# The knobs' defaults, to tell a value the user set from one left alone.
_FLEET_DEFAULTS = {f.name: f.default for f in dataclasses.fields(FleetParams)}


@dataclass(frozen=True)
class FleetConstants:
    """Mechanism constants. Timeouts are Android's (AOSP defaults); rates of defects, lock-hold
    tails and GC stalls are calibration constants fitted once by hand, under real-time
    WAM, to the responsiveness study's population figures (never computed from them)."""

    usage: UsageConstants = field(default_factory=UsageConstants)
    # -- Android timeouts (AOSP defaults) --------------------------------------------------
    input_timeout_s: float = 5.0  # input dispatch ANR
    broadcast_fg_timeout_s: float = 10.0  # foreground broadcast ANR
    broadcast_bg_timeout_s: float = 60.0  # background broadcast ANR
    watchdog_timeout_s: float = 60.0  # system_server Watchdog kill → SNR
    watchdog_check_s: float = 30.0  # Watchdog posts its checks every 30 s
    restart_s: float = 90.0  # assumed: framework restart after a Watchdog kill
    touch_interval_s: float = 2.0  # assumed: an active user touches every ~2 s
    # -- discard cost (documented assumptions) -------------------------------------------
    # Discarding costs a busy time per command plus bytes at the device's trim bandwidth.
    # Real-time discards go out per freed extent — at least one per deleted file — while
    # a batched trim (FITRIM) walks the coalesced free space, whose extents shrink
    # ∝ (1 − fill) as the flash fills and fragments.
    emmc_discard_mb_s: float = 200.0  # assumed: eMMC 5.1 TRIM over large ranges
    emmc_discard_cmd_ms: float = 4.0  # assumed: eMMC busy time per TRIM command
    ufs_discard_mb_s: float = 800.0  # assumed: UFS 2.1 UNMAP over large ranges
    ufs_discard_cmd_ms: float = 3.0  # assumed: UNMAP queues, but the FTL updates its map
    free_extent_mb: float = 8.0  # assumed: free extent on an empty file system
    # -- who waits on a discard backlog (rates of fsync by blocking thread) ----------------
    fg_fsync_interval_s: float = 30.0  # assumed: main-thread SharedPreferences/SQLite commit
    fg_binder_interval_s: float = 10.0  # assumed: main-thread Binder call into system_server
    receivers_fg_per_h: float = 6.0  # assumed: foreground broadcasts received per hour
    receivers_bg_per_h: float = 30.0  # assumed: background broadcasts per hour (Android 7)
    # Android 8 stops delivering most implicit broadcasts to manifest receivers and
    # limits background services (developer.android.com, "Background Execution Limits").
    receivers_bg_android8: float = 0.35  # assumed share left
    # Android 9's App Standby Buckets defer the background work of rarely used apps.
    receivers_bg_android9: float = 0.7  # assumed further share left
    system_fsync_interval_s: float = 120.0  # assumed: watched threads' AtomicFile writes
    # Threads the Watchdog checks (AOSP Watchdog.java): foreground, main, UI, I/O and
    # display threads; + the animation thread (8.0); + the surface animation thread (9.0).
    watched_threads_android7: int = 5
    # assumed: each watched thread needs the hot lock every ~10 min (through Binder into
    # PackageManager/ActivityManager); the Watchdog's monitors do not take it, so more
    # watched threads mean more chances one is caught behind a long hold.
    system_lock_interval_s: float = 600.0
    # -- lock contention in system_server (fitted to the study's population figures) -------
    # Holds ≥ the scale below, per hour: while the screen is on (AMS/WMS work for the
    # foreground: process and window management) and while locked (background
    # maintenance: package dexopt, backups, jobs — longer batches, fewer waiters).
    lock_holds_per_on_h: float = 0.75
    lock_on_hold_s: float = 1.0  # Pareto scale of an on-screen hold at the reference load
    lock_on_alpha: float = 2.0  # Pareto tail of on-screen holds
    lock_holds_per_off_h: float = 0.0035
    lock_off_hold_s: float = 1.0  # Pareto scale of a background hold
    lock_off_alpha: float = 1.0  # Pareto tail: background batches run long
    # AMS iterates its processes under the lock (updateOomAdjLocked): scale ∝ processes.
    lock_ref_processes: float = 10.0
    # assumed: long holds are mostly the holder waiting (I/O, Binder), only partly
    # computing, so a faster CPU shortens them only weakly: scale ∝ cpu_speed^-0.3.
    lock_cpu_exponent: float = 0.3
    # Per-phone factors on the rate of long holds, lognormal and correlated: apps that
    # hammer system services while in use; background work that runs away on some phones
    # (many packages to dexopt, a job that loops) — rare but heavy-tailed.
    lock_fg_phone_sigma: float = 1.2
    lock_bg_phone_sigma: float = 2.2
    lock_phone_correlation: float = 0.5
    processes_per_recent_app: float = 2.0  # assumed: services/providers started on their behalf
    # Android 8's background execution limits stop most background services and
    # implicit-broadcast launches; 9's standby buckets defer rare apps' jobs: fewer
    # processes started in the background.
    processes_android8: float = 0.6  # assumed share left
    processes_android9: float = 0.85  # assumed further share left
    max_cached_processes: float = 32.0  # AOSP CUR_MAX_CACHED_PROCESSES (ro.sys.fw.bg_apps_limit)
    # -- low memory: GC stalls (fitted to the study's population figures) -------------------
    system_mb: float = 1_500.0  # assumed: system_server, SystemUI, launcher, GMS resident
    app_base_mb: float = 80.0  # assumed: per cached app …
    app_mb_per_mpx: float = 60.0  # … plus bitmaps that scale with screen megapixels
    reserved_share: float = 0.12  # RAM userspace never sees (profile schema default)
    gc_stalls_per_on_h: float = 0.04  # long stalls per screen-on hour at demand = capacity
    gc_pressure_exponent: float = 4.0  # stall rate ∝ (demand / capacity)^k …
    gc_pressure_max: float = 2.0  # assumed: … up to where lmkd pins free memory at its floor
    gc_stall_min_s: float = 0.5  # Pareto scale at demand = capacity on the reference CPU
    gc_alpha: float = 1.5  # Pareto tail of stall times
    # Android 8's concurrent copying collector replaced CMS's pauses (source.android.com,
    # "ART garbage collection"): shorter blocking collections.
    gc_android8_scale: float = 0.5  # assumed
    # -- app defects (fitted to the study's population figures) ----------------------------
    buggy_app_share: float = 0.1  # share of apps with a main-thread hang bug
    buggy_hangs_per_h: float = 0.055  # median rate of ≥ 5 s hangs per foreground hour …
    buggy_hang_sigma: float = 1.2  # … lognormal across buggy apps (heavy-tailed)
    base_hangs_per_h: float = 0.001  # every other app
    hang_alpha: float = 1.2  # Pareto tail of hang times above 5 s


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


# -- blocking episodes -------------------------------------------------------------------


@dataclass(frozen=True)
class _Segments:
    """Blocking episodes: a thread that blocks ``u`` s after ``t0`` (0 ≤ u < length)
    waits ``wait0 − u`` (a FIFO or a hold that ends at ``t0 + wait0``)."""

    phone: IntArray
    t0: FloatArray
    wait0: FloatArray
    length: FloatArray

    @staticmethod
    def empty() -> _Segments:
        return _Segments(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0))

    def where(self, keep: BoolArray) -> _Segments:
        return _Segments(self.phone[keep], self.t0[keep], self.wait0[keep], self.length[keep])

    @staticmethod
    def concat(parts: list[_Segments]) -> _Segments:
        if not parts:
            return _Segments.empty()
        return _Segments(
            np.concatenate([p.phone for p in parts]),
            np.concatenate([p.t0 for p in parts]),
            np.concatenate([p.wait0 for p in parts]),
            np.concatenate([p.length for p in parts]),
        )


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


def _concat_columns(parts: list[_Trims] | list[_Candidates]) -> list[Any]:
    """Column-wise concatenation of dataclasses of equal-length arrays."""
    columns = [list(vars(p).values()) for p in parts]
    return [np.concatenate(col) for col in zip(*columns, strict=True)]


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


def _lock_holds(
    users: Users, timeline: Timeline, c: FleetConstants, rng: np.random.Generator
) -> _Segments:
    """Hot-lock holds in system_server ≥ the input timeout (thinned Pareto), on screen and
    while locked. The scale grows with the processes AMS iterates and shrinks weakly with
    CPU speed; per-phone factors (mean one) scale how often long holds happen."""
    n = users.n
    phones = np.arange(n)
    load = (_cached_processes(users, c) / c.lock_ref_processes) * users.cpu_speed ** (
        -c.lock_cpu_exponent
    )
    z_fg, z_other = rng.standard_normal(n), rng.standard_normal(n)
    rho = c.lock_phone_correlation
    z_bg = rho * z_fg + math.sqrt(1.0 - rho**2) * z_other
    fg_factor = np.exp(c.lock_fg_phone_sigma * z_fg - c.lock_fg_phone_sigma**2 / 2)
    bg_factor = np.exp(c.lock_bg_phone_sigma * z_bg - c.lock_bg_phone_sigma**2 / 2)
    floor = c.input_timeout_s
    start, end = timeline.phone_start(phones), timeline.phone_end(phones)
    on0, on1 = timeline.on_time(start), timeline.on_time(end)
    off0, off1 = start - on0, end - on1
    parts = []
    on = (c.lock_holds_per_on_h, c.lock_on_hold_s, c.lock_on_alpha, fg_factor)
    off = (c.lock_holds_per_off_h, c.lock_off_hold_s, c.lock_off_alpha, bg_factor)
    for (per_h, hold_s, alpha, factor), lo, hi, inverse in (
        (on, on0, on1, timeline.from_on_time),
        (off, off0, off1, timeline.from_off_time),
    ):
        scale = hold_s * load
        p_long = np.minimum(1.0, (scale / floor) ** alpha)
        k = rng.poisson(per_h / HOUR_S * factor * p_long * (hi - lo))
        phone = np.repeat(phones, k)
        t0 = inverse(lo[phone] + rng.random(len(phone)) * (hi - lo)[phone])
        xm = np.maximum(scale[phone], floor)
        hold = xm * (1.0 - rng.random(len(phone))) ** (-1.0 / alpha)
        stop = np.minimum(t0 + hold, timeline.phone_end(phone))
        parts.append(_Segments(phone, t0, hold, np.maximum(stop - t0, 0.0)))
    return _Segments.concat(parts)


def _cached_processes(users: Users, c: FleetConstants) -> FloatArray:
    """Processes kept cached: the user's apps and those started on their behalf, up to
    what the RAM holds and the cached-process cap."""
    per_app = c.processes_per_recent_app * np.where(users.android >= 8, c.processes_android8, 1.0)
    per_app = per_app * np.where(users.android >= 9, c.processes_android9, 1.0)
    wanted = users.recent_apps * per_app
    result: FloatArray = np.minimum(
        np.minimum(wanted, _app_capacity(users, c)), c.max_cached_processes
    )
    return result


def _app_capacity(users: Users, c: FleetConstants) -> FloatArray:
    """How many apps fit in RAM beside the system before lmkd must kill."""
    usable = users.ram_mb * (1.0 - c.reserved_share) - c.system_mb
    per_app = c.app_base_mb + c.app_mb_per_mpx * users.display_mpx
    result: FloatArray = np.maximum(usable / per_app, 1.0)
    return result


# -- waiters -----------------------------------------------------------------------------


# Who waits: the foreground app's main thread, the foreground and background broadcast
# queues (receivers run one at a time: a stuck one holds its queue until its ANR), and
# the threads the Watchdog checks.
_LANE_MAIN, _LANE_FG_QUEUE, _LANE_BG_QUEUE, _LANE_WATCHDOG = 0, 1, 2, 3


@dataclass(frozen=True)
class _Candidates:
    """Would-be ANRs/SNRs before the system restarts and blocked threads are resolved."""

    phone: IntArray
    start: FloatArray  # the waiting thread blocks
    end: FloatArray  # … and is released
    fire: FloatArray  # the dialog / the Watchdog kill
    kind: IntArray
    cause: IntArray
    app: IntArray  # -1: system_server
    wait: FloatArray  # the wait judged against the timeout
    lane: IntArray
    segment: IntArray  # the blocking episode (-1: a stall of the thread itself)
    dies_with_system: BoolArray  # the blocker is a system_server thread (a lock holder)

    @staticmethod
    def concat(parts: list[_Candidates]) -> _Candidates:
        return _Candidates(*_concat_columns(parts))

    def where(self, keep: BoolArray) -> _Candidates:
        return _Candidates(*(v[keep] for v in vars(self).values()))


@dataclass(frozen=True)
class _Blocked:
    """What a set of waiters shares: the event kind and cause, the lane, the blocker."""

    kind: int
    cause: int
    lane: int
    dies_with_system: bool = False

    def make(
        self,
        phone: IntArray,
        start: FloatArray,
        end: FloatArray,
        fire: FloatArray,
        app: IntArray,
        wait: FloatArray,
        segment: IntArray,
    ) -> _Candidates:
        n = len(phone)
        return _Candidates(
            phone,
            start,
            end,
            fire,
            np.full(n, self.kind),
            np.full(n, self.cause),
            app.astype(np.int64),
            wait,
            np.full(n, self.lane),
            segment.astype(np.int64),
            np.full(n, self.dies_with_system),
        )


@dataclass(frozen=True)
class _WaiterRates:
    """Per-second rates at which each kind of thread needs what a segment blocks."""

    foreground: float  # the foreground app's main thread, while the screen is on
    receiver_fg: FloatArray  # per phone
    receiver_bg: FloatArray
    system: FloatArray  # watched system_server threads


def _waiters(
    seg: _Segments,
    cause: int,
    rates: _WaiterRates,
    users: Users,
    timeline: Timeline,
    c: FleetConstants,
    rng: np.random.Generator,
    first_segment: int,
    dies_with_system: bool,
) -> _Candidates:
    """Threads that block during the segments, and how long their timeouts see them wait."""
    ids = first_segment + np.arange(len(seg.t0))
    long = seg.wait0 >= c.input_timeout_s
    seg, ids = seg.where(long), ids[long]
    main = _Blocked(_INPUT, cause, _LANE_MAIN, dies_with_system)
    fg_queue = _Blocked(_BROADCAST, cause, _LANE_FG_QUEUE, dies_with_system)
    bg_queue = _Blocked(_BROADCAST, cause, _LANE_BG_QUEUE, dies_with_system)
    watchdog = _Blocked(_SNR, cause, _LANE_WATCHDOG, dies_with_system)
    fg_timeout, bg_timeout = c.broadcast_fg_timeout_s, c.broadcast_bg_timeout_s
    cand = _Candidates.concat(
        [
            _foreground_waiters(seg, ids, main, rates.foreground, timeline, c, rng),
            _receiver_waiters(seg, ids, fg_queue, fg_timeout, rates.receiver_fg, users, rng),
            _receiver_waiters(seg, ids, bg_queue, bg_timeout, rates.receiver_bg, users, rng),
            _system_waiters(seg, ids, watchdog, rates.system, c, rng),
        ]
    )
    if not dies_with_system:
        return cand
    # The ANR path (AMS appNotResponding, the broadcast timeout handler) takes the AMS
    # lock: an ANR caused by a hold of it is raised only when the hold ends.
    hold_end = np.full(first_segment + len(long), np.inf)
    hold_end[ids] = seg.t0 + seg.wait0
    anr = cand.kind != _SNR
    fire = np.where(anr, np.maximum(cand.fire, hold_end[cand.segment]), cand.fire)
    return dataclasses.replace(cand, fire=fire)


def _foreground_waiters(
    seg: _Segments,
    ids: IntArray,
    blocked: _Blocked,
    rate: float,
    timeline: Timeline,
    c: FleetConstants,
    rng: np.random.Generator,
) -> _Candidates:
    """The main thread's first blocking call in the segment (on-screen time only); an
    input the user sends while it is blocked pends; ANR if it pends ≥ the timeout."""
    n = len(seg.t0)
    on_call = timeline.on_time(seg.t0) + rng.exponential(1.0, n) / rate
    call = timeline.from_on_time(on_call)
    last = max(len(timeline.start) - 1, 0)
    session = np.minimum(np.searchsorted(timeline.on_after, on_call, side="left"), last)
    touch = rng.exponential(c.touch_interval_s, n)
    limit = seg.t0 + np.minimum(seg.length, seg.wait0 - c.input_timeout_s)
    call = np.where(np.isfinite(call), call, seg.t0 + seg.length)  # no call: no wait
    wait = seg.wait0 - (call - seg.t0)
    pending = wait - touch
    ok = (call < limit) & (pending >= c.input_timeout_s)
    if len(timeline.end):
        ok &= call + touch < timeline.end[session]
    app = timeline.app[session] if len(timeline.app) else np.zeros(n, np.int64)
    fire = call + touch + c.input_timeout_s
    return blocked.make(seg.phone, call, call + wait, fire, app, pending, ids).where(ok)


def _receiver_waiters(
    seg: _Segments,
    ids: IntArray,
    blocked: _Blocked,
    timeout_s: float,
    rate: FloatArray,
    users: Users,
    rng: np.random.Generator,
) -> _Candidates:
    """Broadcast receivers (of the user's apps) dispatched in the part of the segment
    where the wait still exceeds the broadcast timeout."""
    window = np.clip(np.minimum(seg.length, seg.wait0 - timeout_s), 0.0, None)
    k = rng.poisson(rate[seg.phone] * window)
    i = np.repeat(np.arange(len(k)), k)
    u = rng.random(len(i)) * window[i]
    t = seg.t0[i] + u
    wait = seg.wait0[i] - u
    app = pick_apps(users, seg.phone[i], rng)
    return blocked.make(seg.phone[i], t, t + wait, t + timeout_s, app, wait, ids[i])


def _system_waiters(
    seg: _Segments,
    ids: IntArray,
    blocked: _Blocked,
    rate: FloatArray,
    c: FleetConstants,
    rng: np.random.Generator,
) -> _Candidates:
    """The first watched system_server thread to block in the segment; the Watchdog's
    check, posted at a uniform phase of its 30 s period, waits behind it: SNR at 60 s."""
    n = len(seg.t0)
    u = rng.exponential(1.0, n) / rate[seg.phone]
    phase = rng.random(n) * c.watchdog_check_s
    wait = seg.wait0 - u
    check_wait = wait - phase
    ok = (u < seg.length) & (check_wait >= c.watchdog_timeout_s)
    start = seg.t0 + u
    fire = start + phase + c.watchdog_timeout_s
    app = np.full(n, -1, np.int64)
    return blocked.make(seg.phone, start, start + wait, fire, app, check_wait, ids).where(ok)


def _hangs(
    timeline: Timeline,
    rate_per_s: FloatArray,
    xm_s: FloatArray,
    alpha: float,
    cause: int,
    c: FleetConstants,
    rng: np.random.Generator,
) -> _Candidates:
    """Main-thread stalls ≥ the input timeout during sessions (a Poisson process of rate
    ``rate_per_s`` per session, Pareto lengths above ``xm_s`` ≥ 5 s); ANR when an input
    sent during the stall (while the screen is still on) pends ≥ the timeout."""
    duration = timeline.end - timeline.start
    k = rng.poisson(rate_per_s * duration)
    i = np.repeat(np.arange(len(k)), k)
    t = timeline.start[i] + rng.random(len(i)) * duration[i]
    stall = xm_s[i] * (1.0 - rng.random(len(i))) ** (-1.0 / alpha)
    touch = rng.exponential(c.touch_interval_s, len(i))
    pending = stall - touch
    ok = (pending >= c.input_timeout_s) & (t + touch < timeline.end[i])
    fire = t + touch + c.input_timeout_s
    app = timeline.app[i]
    none = np.full(len(i), -1, np.int64)
    blocked = _Blocked(_INPUT, cause, _LANE_MAIN)
    return blocked.make(timeline.phone[i], t, t + stall, fire, app, pending, none).where(ok)


def _app_hang_rates(apps: int, seed: int, c: FleetConstants) -> FloatArray:
    """Per-app rate of ≥ 5 s main-thread hangs per foreground second: a few buggy apps
    (heavy-tailed) and a small base rate. The same app population for the whole fleet."""
    rng = RandomStreams(seed)("fleet/app-defects")
    buggy = rng.random(apps) < c.buggy_app_share
    rate = c.buggy_hangs_per_h * np.exp(c.buggy_hang_sigma * rng.standard_normal(apps))
    result: FloatArray = np.where(buggy, rate, c.base_hangs_per_h) / HOUR_S
    return result


def _resolve(cand: _Candidates, c: FleetConstants) -> _Candidates:
    """Apply the system's own reactions, in time order:

    * a Watchdog kill restarts the framework: every app dies (waits in progress end
      without their ANR), nothing runs during the restart, and a lock holder — a
      system_server thread — dies too, ending its hold (a discard backlog, in the
      kernel, stays);
    * a blocked main thread makes no further calls until released, and a stuck receiver
      holds its broadcast queue until its ANR moves the queue on.
    """
    by_start = np.argsort(cand.start, kind="stable")
    segment_kill: dict[int, float] = {}
    kills: list[float] = []
    keep = np.zeros(len(cand.phone), bool)
    for j in by_start[cand.kind[by_start] == _SNR].tolist():
        if kills and cand.start[j] < kills[-1] + c.restart_s:
            continue
        keep[j] = True
        kills.append(float(cand.fire[j]))
        if cand.dies_with_system[j]:
            segment_kill[int(cand.segment[j])] = float(cand.fire[j])
    kill_at = np.array(kills)  # increasing: kept SNRs are ≥ a restart apart
    others = by_start[cand.kind[by_start] != _SNR]
    alive = np.ones(len(others), bool)
    if len(kill_at):
        k = np.searchsorted(kill_at, cand.start[others] - c.restart_s, side="left")
        hit = kill_at[np.minimum(k, len(kill_at) - 1)]
        alive &= ~((k < len(kill_at)) & (hit <= cand.fire[others]))
        held = np.array([segment_kill.get(s, np.inf) for s in cand.segment[others].tolist()])
        alive &= ~(cand.dies_with_system[others] & (cand.start[others] >= held))
    others = others[alive]
    for lane in (_LANE_MAIN, _LANE_FG_QUEUE, _LANE_BG_QUEUE):
        free_at = -np.inf
        release = cand.end if lane == _LANE_MAIN else cand.fire
        for j in others[cand.lane[others] == lane].tolist():
            if cand.start[j] >= free_at:
                keep[j] = True
                free_at = release[j]
    return cand.where(keep)


# -- one block -------------------------------------------------------------------------


@dataclass(frozen=True)
class _BlockResult:
    phones: pd.DataFrame
    events: pd.DataFrame
    trims: pd.DataFrame


def _watched_threads(android: IntArray, c: FleetConstants) -> FloatArray:
    extra = np.clip(android - 7, 0, 2)  # + animation thread (8), + surface animation (9)
    return (c.watched_threads_android7 + extra).astype(np.float64)


def _simulate_block(args: tuple[FleetParams, FleetConstants, int]) -> _BlockResult:
    """One block of ``BLOCK_PHONES`` phones (the last block of a fleet is simulated whole
    and cut, so a phone's draws never depend on the fleet size)."""
    params, c, block = args
    streams = RandomStreams(params.seed)

    def rng(name: str) -> np.random.Generator:
        return streams(f"fleet/{block}/{name}")

    hardware = spec04_hardware()
    span_s = (params.days + 2) * DAY_S
    users = draw_users(BLOCK_PHONES, hardware, c.usage, rng("users"), params.android)
    timeline = build_timeline(users, params.days, c.usage, rng("sessions"), span_s)
    deletions = draw_deletions(users, timeline, c.usage, rng("deletions"))
    cost = discard_cost(users.ufs, users.fill, c)
    trims, wam_segments = _wam_segments(params, timeline, deletions, cost, c)
    holds = _lock_holds(users, timeline, c, rng("locks"))
    wam_rates, lock_rates = _waiter_rates(users, c)
    wam = _waiters(wam_segments, _WAM, wam_rates, users, timeline, c, rng("wam-waiters"), 0, False)
    first_hold = len(wam_segments.t0)
    lock = _waiters(
        holds, _LOCK, lock_rates, users, timeline, c, rng("lock-waiters"), first_hold, True
    )
    gc = _gc_stalls(users, timeline, c, rng("gc"))
    defects = _defect_stalls(timeline, params.seed, c, rng("defects"))
    events = _resolve(_Candidates.concat([wam, lock, gc, defects]), c)
    realtime_s = np.bincount(
        deletions.phone,
        cost.realtime_s(deletions.phone, deletions.bytes, deletions.files),
        BLOCK_PHONES,
    ).astype(np.float64)
    n = min(BLOCK_PHONES, params.phones - block * BLOCK_PHONES)
    return _block_tables(
        params,
        block,
        n,
        users,
        timeline,
        deletions,
        cost.batched_bytes_s,
        realtime_s,
        trims,
        events,
        hardware,
    )


def _wam_segments(
    params: FleetParams,
    timeline: Timeline,
    deletions: Deletions,
    cost: DiscardCost,
    c: FleetConstants,
) -> tuple[_Trims, _Segments]:
    """The policy's batched trims (none under real-time WAM) and what fsyncs wait behind."""
    policy = params.policy()
    return FLEET_WAM[type(policy)](policy, timeline, deletions, cost, c)


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


def _waiter_rates(users: Users, c: FleetConstants) -> tuple[_WaiterRates, _WaiterRates]:
    """How often each thread fsyncs (WAM) and needs the hot lock (lock contention)."""
    n = users.n
    background = np.where(users.android >= 8, c.receivers_bg_android8, 1.0)
    background = background * np.where(users.android >= 9, c.receivers_bg_android9, 1.0)
    receiver_bg = c.receivers_bg_per_h / HOUR_S * background
    receiver_fg = np.full(n, c.receivers_fg_per_h / HOUR_S)
    system_fsync = np.full(n, 1.0 / c.system_fsync_interval_s)
    system_lock = _watched_threads(users.android, c) / c.system_lock_interval_s
    return (
        _WaiterRates(1.0 / c.fg_fsync_interval_s, receiver_fg, receiver_bg, system_fsync),
        _WaiterRates(1.0 / c.fg_binder_interval_s, receiver_fg, receiver_bg, system_lock),
    )


def _gc_stalls(
    users: Users, timeline: Timeline, c: FleetConstants, rng: np.random.Generator
) -> _Candidates:
    """Long GC stalls under memory pressure (apps the user keeps ÷ apps the RAM holds):
    more frequent and longer as pressure rises, shorter on a faster CPU and with Android
    8's concurrent copying collector."""
    pressure = np.minimum(users.recent_apps / _app_capacity(users, c), c.gc_pressure_max)
    android8 = np.where(users.android >= 8, c.gc_android8_scale, 1.0)
    scale = c.gc_stall_min_s * pressure / users.cpu_speed * android8
    p_long = np.minimum(1.0, (scale / c.input_timeout_s) ** c.gc_alpha)
    rate = c.gc_stalls_per_on_h / HOUR_S * pressure**c.gc_pressure_exponent * p_long
    xm = np.maximum(scale, c.input_timeout_s)
    phone = timeline.phone
    return _hangs(timeline, rate[phone], xm[phone], c.gc_alpha, _LOW_MEMORY, c, rng)


def _defect_stalls(
    timeline: Timeline, seed: int, c: FleetConstants, rng: np.random.Generator
) -> _Candidates:
    """Main-thread hangs of buggy apps while they are in the foreground."""
    rate = _app_hang_rates(c.usage.apps, seed, c)[timeline.app]
    xm = np.full(len(timeline.app), c.input_timeout_s)
    return _hangs(timeline, rate, xm, c.hang_alpha, _DEFECT, c, rng)


def _block_tables(
    params: FleetParams,
    block: int,
    n: int,
    users: Users,
    timeline: Timeline,
    deletions: Deletions,
    rate: FloatArray,
    realtime_s: FloatArray,
    trims: _Trims,
    events: _Candidates,
    hardware: Hardware,
) -> _BlockResult:
    first_id = block * BLOCK_PHONES
    origin = timeline.phone_start(np.arange(BLOCK_PHONES))
    ev_keep = events.phone < n
    ev = events.where(ev_keep)
    app_names = np.array([f"app-{i + 1:03d}" for i in range(users.app_cdf.shape[1])] + [SYSTEM_APP])
    events_df = pd.DataFrame(
        {
            "phone_id": ev.phone + first_id,
            "t_s": ev.fire - origin[ev.phone],
            "kind": np.array(KINDS)[ev.kind],
            "app": app_names[ev.app],
            "cause": np.array(CAUSES)[ev.cause],
            "wait_s": ev.wait,
        }
    )
    counts = {}
    for kind_name, kinds in (("anr", (_INPUT, _BROADCAST)), ("snr", (_SNR,))):
        is_kind = np.isin(ev.kind, kinds)
        counts[kind_name] = np.bincount(ev.phone[is_kind], minlength=BLOCK_PHONES)[:n]
        for cause, name in enumerate(CAUSES):
            sel = is_kind & (ev.cause == cause)
            counts[f"{kind_name}_{name}"] = np.bincount(ev.phone[sel], minlength=BLOCK_PHONES)[:n]
    on_s = np.bincount(timeline.phone, timeline.end - timeline.start, BLOCK_PHONES)[:n]
    sessions = np.bincount(timeline.phone, minlength=BLOCK_PHONES)[:n]
    deleted = np.bincount(deletions.phone, deletions.bytes, BLOCK_PHONES)[:n]
    trim_keep = trims.phone < n
    model = users.model[:n]
    phones_df = pd.DataFrame(
        {
            "phone_id": np.arange(n) + first_id,
            "model": np.array(hardware.names)[model],
            "tier": np.array(hardware.tiers)[model],
            "android": users.android[:n],
            "ram_gb": users.ram_mb[:n] / 1024.0,
            "storage": np.where(users.ufs[:n], "ufs", "emmc"),
            "capacity_gb": users.capacity_gb[:n],
            "cpu_speed": users.cpu_speed[:n],
            "fill_pct": 100.0 * users.fill[:n],
            "trim_mb_s": rate[:n] / 1e6,
            "deleted_gb_per_day": deleted / GB / params.days,
            "sessions_per_day": sessions / params.days,
            "screen_on_h_per_day": on_s / HOUR_S / params.days,
            "recent_apps": users.recent_apps[:n],
            "anr": counts["anr"],
            "snr": counts["snr"],
            **{k: v for k, v in counts.items() if k not in ("anr", "snr")},
            "trims": np.bincount(trims.phone[trim_keep], minlength=BLOCK_PHONES)[:n],
            "trim_s": np.bincount(trims.phone[trim_keep], trims.busy_s[trim_keep], BLOCK_PHONES)[
                :n
            ],
            "realtime_discard_s": realtime_s[:n] if params.policy().discard_on_delete() else 0.0,
        }
    )
    tp = trims.phone[trim_keep]
    trims_df = pd.DataFrame(
        {
            "phone_id": tp + first_id,
            "start_s": trims.start[trim_keep] - origin[tp],
            "end_s": trims.end[trim_keep] - origin[tp],
            "gb": trims.bytes[trim_keep] / GB,
            "busy_s": trims.busy_s[trim_keep],
            "completed": trims.completed[trim_keep],
        }
    )
    return _BlockResult(phones_df, events_df.sort_values(["phone_id", "t_s"]), trims_df)


# -- the fleet -------------------------------------------------------------------------


@dataclass(frozen=True)
class FleetResult:
    """Tidy outputs of a fleet run: one row per phone, per ANR/SNR, per batched trim."""

    params: FleetParams
    phones: pd.DataFrame  # phone_id, model, tier, android, ram_gb, storage, anr, snr, …
    events: pd.DataFrame  # phone_id, t_s, kind, app, cause, wait_s
    trims: pd.DataFrame  # phone_id, start_s, end_s, gb, busy_s, completed

    def per_app(self) -> pd.DataFrame:
        """ANRs per app (most first): app, anr, and the share of each cause."""
        anr = self.events[self.events["kind"] != "snr"]
        table = anr.groupby(["app", "cause"]).size().unstack("cause", fill_value=0)
        table = table.reindex(columns=list(CAUSES), fill_value=0)
        table.insert(0, "anr", table.sum(axis=1))
        return table.sort_values("anr", ascending=False, kind="stable").reset_index()

    def breakdown(self, by: str = "model") -> pd.DataFrame:
        """Per ``model`` / ``tier`` / ``android`` / ``storage``: phones, ANR and SNR per
        phone, share of phones without either, and the WAM-caused shares."""
        if by not in self.phones.columns:
            raise UserError(f"fleet breakdown: no column {by!r} in the phones table")
        grouped = self.phones.groupby(by, sort=True)
        return pd.DataFrame(
            {
                "phones": grouped.size(),
                "anr_per_phone": grouped["anr"].mean(),
                "snr_per_phone": grouped["snr"].mean(),
                "phones_without_anr_pct": grouped["anr"].apply(lambda s: 100.0 * (s == 0).mean()),
                "phones_without_snr_pct": grouped["snr"].apply(lambda s: 100.0 * (s == 0).mean()),
                "anr_wam_per_phone": grouped["anr_wam"].mean(),
                "snr_wam_per_phone": grouped["snr_wam"].mean(),
            }
        ).reset_index()

    def anr_snr_gaps_s(self) -> FloatArray:
        """Gaps (s) between consecutive events of one phone where an ANR meets an SNR."""
        ev = self.events.sort_values(["phone_id", "t_s"], kind="stable")
        phone = ev["phone_id"].to_numpy()
        t = ev["t_s"].to_numpy(np.float64)
        snr = (ev["kind"] == "snr").to_numpy()
        pair = (phone[1:] == phone[:-1]) & (snr[1:] != snr[:-1])
        gaps: FloatArray = (t[1:] - t[:-1])[pair]
        return gaps

    def zipf(self) -> ZipfFit:
        """Zipf fit of ANRs per app: log count = −a log rank + b (least squares, R²)."""
        return fit_zipf(self.per_app()["anr"].to_numpy())

    def summary(self) -> dict[str, float]:
        """Population statistics comparable with the responsiveness study's population figures."""
        ph, ev = self.phones, self.events
        anr, snr = ph["anr"].to_numpy(), ph["snr"].to_numpy()
        gaps = self.anr_snr_gaps_s()
        anr_total, snr_total = int(anr.sum()), int(snr.sum())
        window_s = 10 * DAY_S
        windows = int(self.params.days * DAY_S // window_s)
        every = np.ones(len(ph), bool)
        for w in range(windows):
            inside = ev[(ev["t_s"] >= w * window_s) & (ev["t_s"] < (w + 1) * window_s)]
            every &= ph["phone_id"].isin(inside["phone_id"]).to_numpy()
        zipf = self.zipf()
        return {
            "phones": float(len(ph)),
            "days": float(self.params.days),
            "anr_per_phone": float(anr.mean()),
            "snr_per_phone": float(snr.mean()),
            "phones_without_anr_pct": 100.0 * float((anr == 0).mean()),
            "phones_without_snr_pct": 100.0 * float((snr == 0).mean()),
            "max_anr_per_phone": float(anr.max()),
            "max_snr_per_phone": float(snr.max()),
            "anr_snr_corr": _corr(anr, snr),
            "median_anr_snr_gap_days": float(np.median(gaps)) / DAY_S if len(gaps) else math.nan,
            "phones_event_every_10_days_pct": 100.0 * float(every.mean()) if windows else math.nan,
            "wam_anr_share_pct": 100.0 * float(ph["anr_wam"].sum()) / max(anr_total, 1),
            "wam_snr_share_pct": 100.0 * float(ph["snr_wam"].sum()) / max(snr_total, 1),
            **{
                f"{name}_anr_share_pct": 100.0 * float(ph[f"anr_{name}"].sum()) / max(anr_total, 1)
                for name in CAUSES[1:]
            },
            "lock_snr_share_pct": 100.0 * float(ph["snr_lock"].sum()) / max(snr_total, 1),
            "trims_per_phone": float(ph["trims"].mean()),
            "trim_s_per_phone": float(ph["trim_s"].mean()),
            "zipf_a": zipf.a,
            "zipf_r2": zipf.r2,
        }


def _corr(x: npt.NDArray[np.int64], y: npt.NDArray[np.int64]) -> float:
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def _blocks(params: FleetParams, c: FleetConstants) -> Iterator[_BlockResult]:
    n_blocks = -(-params.phones // BLOCK_PHONES)
    jobs = [(params, c, b) for b in range(n_blocks)]
    workers = min(params.workers, n_blocks)
    if workers == 1:
        yield from map(_simulate_block, jobs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_simulate_block, jobs)


def run_fleet(params: FleetParams, constants: FleetConstants | None = None) -> FleetResult:
    """Simulate ``params.phones`` phones for ``params.days`` days under one WAM policy.

    Blocks of ``BLOCK_PHONES`` phones are simulated independently (over
    ``params.workers`` processes) from per-block seeds; results are concatenated in block
    order, so they do not depend on the number of workers."""
    c = constants or FleetConstants()
    parts = list(_blocks(params, c))
    return FleetResult(
        params,
        pd.concat([p.phones for p in parts], ignore_index=True),
        pd.concat([p.events for p in parts], ignore_index=True),
        pd.concat([p.trims for p in parts], ignore_index=True),
    )
