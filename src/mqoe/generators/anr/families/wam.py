"""WAM scenarios: the main thread stalled behind fsync (QueuedWork, a repository, a
binder call into a service that syncs, the watchdog killing system_server)."""

from __future__ import annotations

from mqoe.generators.anr.scenario import OBJ, _Ctx, _Scenario
from mqoe.generators.anr.vocabulary import (
    _T,
    ACTIVITY_H,
    BINDER_CLIENT,
    BINDER_SERVE,
    FSYNC,
    HANDLER_THREAD,
    POOL_BOTTOM,
    RESUME,
    SERVICE_THREAD,
)


def _wam_queued_work(c: _Ctx) -> _Scenario:
    stop = c.g.rng.choice(["handleStopActivity", "handlePauseActivity", "handleServiceArgs"])
    main = _T(
        "main",
        "Blocked",
        "S",
        "mid",
        [
            "j:android.app.QueuedWork.processPendingWork",
            "-wait:QW",
            "j:android.app.QueuedWork.waitToFinish",
            f"j:android.app.ActivityThread.{stop}",
            "j:android.app.servertransaction.TransactionExecutor.executeLifecycleState",
            "j:android.app.servertransaction.TransactionExecutor.execute",
            *ACTIVITY_H,
        ],
    )
    worker = _T(
        "queued-work-looper",
        "Native",
        "D",
        "idle",
        [
            *c.fsync_k,
            *FSYNC,
            "j:android.os.FileUtils.sync",
            "j:android.app.SharedPreferencesImpl.writeToFile",
            f"j:android.app.SharedPreferencesImpl{c.anon}.run",
            "j:android.app.QueuedWork.processPendingWork",
            "-lock:QW",
            "j:android.app.QueuedWork$QueuedWorkHandler.handleMessage",
            *HANDLER_THREAD,
        ],
    )
    return _Scenario([main, worker], [], [("app", worker.name)], 1, {"QW": OBJ})


def _wam_repo_fsync(c: _Ctx) -> _Scenario:
    name = str(c.g.rng.choice(["SyncWorker", "pool-2-thread-1", "DiskIO-1"]))
    main = _T(
        "main",
        "Blocked",
        "S",
        "mid",
        [
            f"j:{c.a}.data.Repo.getCached",
            "-wait:R",
            f"j:{c.a}.ui.MainActivity.onResume",
            *RESUME,
        ],
    )
    worker = _T(
        name,
        "Native",
        "D",
        "idle",
        [
            *c.fsync_k,
            *FSYNC,
            f"j:{c.a}.data.Repo.flush",
            "-lock:R",
            f"j:{c.a}.data.Repo{c.lam}.run",
            *POOL_BOTTOM,
        ],
    )
    return _Scenario([main, worker], [], [("app", name)], 1, {"R": OBJ})


def _wam_binder_fsync(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Native",
        "S",
        "mid",
        [
            *BINDER_CLIENT,
            "j:android.content.pm.IPackageManager$Stub$Proxy.setComponentEnabledSetting",
            "j:android.app.ApplicationPackageManager.setComponentEnabledSetting",
            f"j:{c.a}.boot.ComponentToggler.enable",
            f"j:{c.a}.App.onCreate",
            "j:android.app.Instrumentation.callApplicationOnCreate",
            "j:android.app.ActivityThread.handleBindApplication",
            f"j:android.app.ActivityThread.access$1{int(c.g.rng.integers(100, 999))}",
            *ACTIVITY_H,
        ],
    )
    server = _T(
        c.ss_binder,
        "Native",
        "D",
        "idle",
        [
            *c.fsync_k,
            *FSYNC,
            "j:android.os.FileUtils.sync",
            "j:android.util.AtomicFile.finishWrite",
            "j:com.android.server.pm.Settings.writeLPr",
            "j:com.android.server.pm.PackageManagerService.setEnabledSettings",
            "j:com.android.server.pm.PackageManagerService.setComponentEnabledSetting",
            "j:android.content.pm.IPackageManager$Stub.onTransact",
            *BINDER_SERVE,
        ],
    )
    return _Scenario([main], [server], [("ss", server.name)], 1, {})


def _wam_watchdog_fsync(c: _Ctx) -> _Scenario:
    fg = _T(
        "android.fg",
        "Blocked",
        "S",
        "low",
        [
            "j:com.android.server.pm.PackageManagerService.getPackageSetting",
            "-wait:PM",
            "j:com.android.server.pm.PackageManagerService$PackageManagerInternalImpl"
            ".getPackageSetting",
            "j:com.android.server.am.ActivityManagerService$LocalService.getPackageSetting",
            "j:com.android.server.Watchdog$HandlerChecker.run",
            "j:android.os.Handler.handleCallback",
            *SERVICE_THREAD,
        ],
    )
    writer = _T(
        "PackageManager",
        "Native",
        "D",
        "idle",
        [
            *c.fsync_k,
            *FSYNC,
            "j:android.os.FileUtils.sync",
            "j:android.util.AtomicFile.finishWrite",
            "j:com.android.server.pm.Settings.writeLPr",
            "-lock:PM",
            "j:com.android.server.pm.PackageManagerService$PackageHandler.doHandleMessage",
            "j:com.android.server.pm.PackageManagerService$PackageHandler.handleMessage",
            *SERVICE_THREAD,
        ],
    )
    msg = "Blocked in handler on foreground thread (android.fg)"
    types = {"PM": "com.android.server.pm.PackageManagerTracedLock"}
    return _Scenario([], [fg, writer], [("ss", "PackageManager")], 1, types, watchdog=msg)
