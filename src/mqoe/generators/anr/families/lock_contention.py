"""Lock-contention scenarios: the main thread waiting on a system_server lock (AMS,
WMS), a deadlock in system_server, the watchdog killing it over the AMS lock."""

from __future__ import annotations

from mqoe.generators.anr.scenario import _Ctx, _Scenario
from mqoe.generators.anr.vocabulary import (
    _T,
    BINDER_CLIENT,
    BINDER_SERVE,
    CHOREOGRAPHER,
    MAIN_DISPATCH,
    RESUME,
    SERVICE_THREAD,
)


def _lock_contention_ams_lock(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Native",
        "S",
        "mid",
        [
            *BINDER_CLIENT,
            "j:android.app.IActivityManager$Stub$Proxy.getRunningAppProcesses",
            "j:android.app.ActivityManager.getRunningAppProcesses",
            f"j:{c.a}.util.ProcessUtil.isForeground",
            f"j:{c.a}.ui.MainActivity.onResume",
            *RESUME,
        ],
    )
    server = _T(
        c.ss_binder,
        "Blocked",
        "S",
        "idle",
        [
            "j:com.android.server.am.ActivityManagerService.getRunningAppProcesses",
            "-wait:AMS",
            "j:android.app.IActivityManager$Stub.onTransact",
            "j:com.android.server.am.ActivityManagerService.onTransact",
            *BINDER_SERVE,
        ],
    )
    holder = _T(
        "ActivityManager",
        "Runnable",
        "R",
        "high",
        [
            "j:com.android.server.am.OomAdjuster.computeOomAdjLSP",
            "j:com.android.server.am.OomAdjuster.updateOomAdjInnerLSP",
            "j:com.android.server.am.OomAdjuster.updateOomAdjLSP",
            "j:com.android.server.am.ActivityManagerService.updateOomAdjLocked",
            "-lock:AMS",
            "j:com.android.server.am.ActivityManagerService$MainHandler.handleMessage",
            *SERVICE_THREAD,
        ],
    )
    types = {"AMS": "com.android.server.am.ActivityManagerService"}
    return _Scenario([main], [server, holder], [("ss", holder.name)], 2, types)


def _lock_contention_wms_lock(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Native",
        "S",
        "mid",
        [
            *BINDER_CLIENT,
            "j:android.view.IWindowSession$Stub$Proxy.relayout",
            "j:android.view.ViewRootImpl.relayoutWindow",
            "j:android.view.ViewRootImpl.performTraversals",
            "j:android.view.ViewRootImpl.doTraversal",
            "j:android.view.ViewRootImpl$TraversalRunnable.run",
            *CHOREOGRAPHER,
            *MAIN_DISPATCH,
        ],
    )
    server = _T(
        c.ss_binder,
        "Blocked",
        "S",
        "idle",
        [
            "j:com.android.server.wm.WindowManagerService.relayoutWindow",
            "-wait:WMS",
            "j:com.android.server.wm.Session.relayout",
            "j:android.view.IWindowSession$Stub.onTransact",
            "j:com.android.server.wm.Session.onTransact",
            *BINDER_SERVE,
        ],
    )
    holder = _T(
        "android.anim",
        "Runnable",
        "R",
        "mid",
        [
            "j:com.android.server.wm.WindowAnimator.animate",
            "-lock:WMS",
            f"j:com.android.server.wm.WindowAnimator.lambda$new${int(c.g.rng.integers(0, 3))}",
            f"j:com.android.server.wm.WindowAnimator{c.lam}.doFrame",
            *CHOREOGRAPHER,
            *SERVICE_THREAD,
        ],
    )
    types = {"WMS": "com.android.server.wm.WindowManagerGlobalLock"}
    return _Scenario([main], [server, holder], [("ss", holder.name)], 2, types)


def _lock_contention_ss_deadlock(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Native",
        "S",
        "mid",
        [
            *BINDER_CLIENT,
            "j:android.app.IActivityManager$Stub$Proxy.broadcastIntentWithFeature",
            "j:android.app.ContextImpl.sendBroadcast",
            f"j:{c.a}.sync.StatusNotifier.publish",
            f"j:{c.a}.ui.MainActivity.onResume",
            *RESUME,
        ],
    )
    server = _T(
        c.ss_binder,
        "Blocked",
        "S",
        "idle",
        [
            "j:com.android.server.am.ActivityManagerService.broadcastIntentWithFeature",
            "-wait:AMS",
            "j:android.app.IActivityManager$Stub.onTransact",
            "j:com.android.server.am.ActivityManagerService.onTransact",
            *BINDER_SERVE,
        ],
    )
    first = _T(
        "android.display",
        "Blocked",
        "S",
        "low",
        [
            "j:com.android.server.wm.WindowManagerService.onDisplayChanged",
            "-wait:WMS",
            "j:com.android.server.am.ActivityManagerService.updateDisplayOverrideConfiguration",
            "-lock:AMS",
            "j:com.android.server.display.DisplayManagerService$DisplayManagerHandler.handleMessage",
            *SERVICE_THREAD,
        ],
    )
    second = _T(
        "android.anim",
        "Blocked",
        "S",
        "low",
        [
            "j:com.android.server.am.ActivityManagerService.getProcessStatesForPIDs",
            "-wait:AMS",
            "j:com.android.server.wm.WindowAnimator.animate",
            "-lock:WMS",
            f"j:com.android.server.wm.WindowAnimator{c.lam}.doFrame",
            *CHOREOGRAPHER,
            *SERVICE_THREAD,
        ],
    )
    types = {
        "AMS": "com.android.server.am.ActivityManagerService",
        "WMS": "com.android.server.wm.WindowManagerGlobalLock",
    }
    critical = [("ss", "android.display"), ("ss", "android.anim")]
    return _Scenario([main], [server, first, second], critical, 4, types, deadlock=True)


def _lock_contention_watchdog_ams(c: _Ctx) -> _Scenario:
    fg = _T(
        "android.fg",
        "Blocked",
        "S",
        "low",
        [
            "j:com.android.server.am.ActivityManagerService.monitor",
            "-wait:AMS",
            "j:com.android.server.Watchdog$HandlerChecker.run",
            "j:android.os.Handler.handleCallback",
            *SERVICE_THREAD,
        ],
    )
    holder = _T(
        c.ss_binder,
        "Runnable",
        "R",
        "high",
        [
            "j:com.android.server.am.ProcessList.updateLruProcessLocked",
            "j:com.android.server.am.ActivityManagerService.updateLruProcessLocked",
            "j:com.android.server.am.ActivityManagerService.attachApplicationLocked",
            "-lock:AMS",
            "j:com.android.server.am.ActivityManagerService.attachApplication",
            "j:android.app.IActivityManager$Stub.onTransact",
            *BINDER_SERVE,
        ],
    )
    msg = (
        "Blocked in monitor com.android.server.am.ActivityManagerService on foreground "
        "thread (android.fg), Blocked in handler on main thread (main)"
    )
    types = {"AMS": "com.android.server.am.ActivityManagerService"}
    return _Scenario([], [fg, holder], [("ss", holder.name)], 1, types, watchdog=msg)
