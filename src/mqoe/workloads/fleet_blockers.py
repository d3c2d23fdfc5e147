"""The fleet's blocking mechanisms besides WAM (:mod:`mqoe.workloads.fleet_wam`):
lock contention in system_server (long holds of a hot lock that Binder calls, receivers
and watched threads wait behind), low memory (GC stalls when the apps a user keeps
exceed what the RAM holds) and app defects (a few apps hang their main thread). Only
blocks long enough to matter are drawn (thinned Poisson processes)."""

from __future__ import annotations

import math

import numpy as np

from mqoe.engine import RandomStreams
from mqoe.workloads.fleet_constants import FleetConstants
from mqoe.workloads.fleet_usage import HOUR_S, FloatArray, Timeline, Users
from mqoe.workloads.fleet_waiters import _DEFECT, _LOW_MEMORY, _Candidates, _hangs, _Segments


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


def _app_hang_rates(apps: int, seed: int, c: FleetConstants) -> FloatArray:
    """Per-app rate of ≥ 5 s main-thread hangs per foreground second: a few buggy apps
    (heavy-tailed) and a small base rate. The same app population for the whole fleet."""
    rng = RandomStreams(seed)("fleet/app-defects")
    buggy = rng.random(apps) < c.buggy_app_share
    rate = c.buggy_hangs_per_h * np.exp(c.buggy_hang_sigma * rng.standard_normal(apps))
    result: FloatArray = np.where(buggy, rate, c.base_hangs_per_h) / HOUR_S
    return result
