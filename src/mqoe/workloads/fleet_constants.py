"""The fleet's mechanism constants (:class:`FleetConstants`): Android's timeouts, the
cost of discards, how often threads fsync or need system_server's hot lock, and the
calibration constants of lock contention, GC stalls and app defects."""

from __future__ import annotations

from dataclasses import dataclass, field

from mqoe.workloads.fleet_usage import UsageConstants


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
