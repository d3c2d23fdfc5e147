"""Who waits behind a blocking episode, and what the system makes of it (the fleet,
:mod:`mqoe.workloads.fleet`).

A blocking episode (:class:`_Segments`: a FIFO or a hold that a thread would wait
behind) becomes would-be ANRs/SNRs (:class:`_Candidates`) for each kind of waiter: the
foreground app's main thread (ANR when a pending input waits ≥ 5 s), broadcast receivers
(≥ 10 s foreground, ≥ 60 s background) and the system_server threads the Watchdog checks
(SNR when a check waits ≥ 60 s). Main-thread stalls of the thread itself (GC, app
defects) are candidates directly (:func:`_hangs`). :func:`_resolve` then applies the
system's own reactions: a Watchdog kill restarts the framework, a blocked thread makes
no further calls, a stuck receiver holds its queue.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mqoe.workloads.fleet_constants import FleetConstants
from mqoe.workloads.fleet_usage import (
    HOUR_S,
    BoolArray,
    FloatArray,
    IntArray,
    Timeline,
    Users,
    pick_apps,
)

# The events a waiter can become, and the blocking mechanism behind each (its cause).
KINDS = ("anr_input", "anr_broadcast", "snr")
CAUSES = ("wam", "lock", "low_memory", "app_defect")
_INPUT, _BROADCAST, _SNR = 0, 1, 2
_WAM, _LOCK, _LOW_MEMORY, _DEFECT = 0, 1, 2, 3
SYSTEM_APP = "system_server"


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


def _concat_columns(parts: Sequence[object]) -> list[Any]:
    """Column-wise concatenation of dataclasses of equal-length arrays."""
    columns = [list(vars(p).values()) for p in parts]
    return [np.concatenate(col) for col in zip(*columns, strict=True)]


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


def _watched_threads(android: IntArray, c: FleetConstants) -> FloatArray:
    extra = np.clip(android - 7, 0, 2)  # + animation thread (8), + surface animation (9)
    return (c.watched_threads_android7 + extra).astype(np.float64)


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
