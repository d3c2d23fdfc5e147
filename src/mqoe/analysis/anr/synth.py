"""Synthetic ANR trace files with known ground truth (tests, demos, benchmarks).

:func:`synth_anr` builds one event of a root-cause *family* (spec 04) and *variant* as a
structured :class:`~mqoe.analysis.anr.model.AnrFile` — the app process first, then
``system_server`` (with idle and busy Binder threads) and sometimes ``surfaceflinger``
(native threads in the ``"name" sysTid=N`` style) — and renders it in the exact format
of spec 06. What varies from file to file: pids, tids, sysTids, monitor addresses, pcs,
offsets, line numbers, lambda and anonymous-class numbers, dates (new and old styles),
CPU times, noise threads and their number, 32/64-bit libraries, kernel stack lines.
The truth says which threads are critical, by construction (not by the analyser).

:func:`write_synth_dir` writes N such files with apps drawn from a Zipf-like law.

The other inputs the analyser reads, for fuzzing and round trips:
:func:`synth_xcrash_tombstone` (an event's app process as an xCrash ANR tombstone),
:func:`synth_waiting_channels` (a dump whose stack dump failed: waiting channels only,
optionally of a frozen process) and :func:`synth_native_only` (debuggerd's native-only
backtrace of an app, between two Waiting Channels twins).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mqoe.analysis.anr.model import AnrFile, Frame, LockOp, ProcessDump, ThreadDump
from mqoe.analysis.anr.parse import format_anr, format_xcrash
from mqoe.errors import UserError

FAMILY_VARIANTS: dict[str, tuple[str, ...]] = {
    "wam": ("queued_work", "repo_fsync", "binder_fsync", "watchdog_fsync"),
    "lock_contention": ("ams_lock", "wms_lock", "ss_deadlock", "watchdog_ams"),
    "low_memory": ("gc_wait", "lock_gc", "lmk"),
    "app_defect": ("busy_loop", "network_main", "app_deadlock"),
}
# How often each variant is drawn within its family (watchdog kills — SNRs — are rarer).
VARIANT_WEIGHTS: dict[str, tuple[float, ...]] = {
    "wam": (0.5, 0.2, 0.25, 0.05),
    "lock_contention": (0.4, 0.35, 0.1, 0.15),
    "low_memory": (0.5, 0.3, 0.2),
    "app_defect": (0.4, 0.4, 0.2),
}
# Share of families in a generated fleet: WAM dominates, as in the study's findings.
FAMILY_WEIGHTS: dict[str, float] = {
    "wam": 0.45,
    "lock_contention": 0.2,
    "low_memory": 0.15,
    "app_defect": 0.2,
}
KNOWN_APPS = (
    "com.tencent.mm",
    "com.whatsapp",
    "com.facebook.katana",
    "com.instagram.android",
    "com.google.android.youtube",
    "com.android.chrome",
    "com.spotify.music",
    "com.google.android.gm",
    "com.supercell.clashofclans",
    "com.kiloo.subwaysurf",
    "com.facebook.orca",
    "com.ss.android.ugc.aweme",
    "com.taobao.taobao",
    "com.eg.android.AlipayGphone",
    "com.sina.weibo",
    "com.netease.cloudmusic",
)


@dataclass(frozen=True)
class SynthTruth:
    """Ground truth of one generated event."""

    family: str
    variant: str
    app: str  # the first process of the file (``system_server`` for watchdog kills)
    pid: int
    blocked_thread: str
    critical_threads: tuple[tuple[str, str], ...]  # (process name, thread name)
    deadlock: bool
    watchdog: bool
    wait_for_length: int
    anr: AnrFile  # the structure that was rendered


# -- stack vocabulary ------------------------------------------------------------------
# Spec strings: "j:fn" Java frame, "jn:fn" Java native method, "n:lib:symbol" native
# frame, "k:fn" kernel frame, "-wait:X" / "-lock:X" / "-on:X" / "-sleep:X" lock lines on
# the symbolic monitor X.

_START = ["n:libc:__pthread_start(void*)", "n:libc:__start_thread"]
IDLE_BINDER = [
    "n:libc:__ioctl",
    "n:libc:ioctl",
    "n:libbinder:android::IPCThreadState::talkWithDriver(bool)",
    "n:libbinder:android::IPCThreadState::getAndExecuteCommand()",
    "n:libbinder:android::IPCThreadState::joinThreadPool(bool)",
    "n:libbinder:android::PoolThread::threadLoop()",
    "n:libutils:android::Thread::_threadLoop(void*)",
    *_START,
]
LOOPER_IDLE = [
    "n:libc:__epoll_pwait",
    "n:libutils:android::Looper::pollInner(int)",
    "n:libutils:android::Looper::pollOnce(int, int*, int*, void**)",
    "n:libandroid_runtime:android::android_os_MessageQueue_nativePollOnce"
    "(_JNIEnv*, _jobject*, long, int)",
    "jn:android.os.MessageQueue.nativePollOnce",
    "j:android.os.MessageQueue.next",
    "j:android.os.Looper.loopOnce",
    "j:android.os.Looper.loop",
]
MAIN_BOTTOM = [
    "j:android.app.ActivityThread.main",
    "jn:java.lang.reflect.Method.invoke",
    "j:com.android.internal.os.RuntimeInit$MethodAndArgsCaller.run",
    "j:com.android.internal.os.ZygoteInit.main",
]
DISPATCH = [
    "j:android.os.Handler.dispatchMessage",
    "j:android.os.Looper.loopOnce",
    "j:android.os.Looper.loop",
]
MAIN_DISPATCH = DISPATCH + MAIN_BOTTOM
ACTIVITY_H = ["j:android.app.ActivityThread$H.handleMessage", *MAIN_DISPATCH]
HANDLER_THREAD = [*DISPATCH, "j:android.os.HandlerThread.run"]
SERVICE_THREAD = [*HANDLER_THREAD, "j:com.android.server.ServiceThread.run"]
POOL_BOTTOM = [
    "j:java.util.concurrent.ThreadPoolExecutor.runWorker",
    "j:java.util.concurrent.ThreadPoolExecutor$Worker.run",
    "j:java.lang.Thread.run",
]
CHOREOGRAPHER = [
    "j:android.view.Choreographer$CallbackRecord.run",
    "j:android.view.Choreographer.doCallbacks",
    "j:android.view.Choreographer.doFrame",
    "j:android.view.Choreographer$FrameDisplayEventReceiver.run",
    "j:android.os.Handler.handleCallback",
]
RESUME = [
    "j:android.app.Instrumentation.callActivityOnResume",
    "j:android.app.Activity.performResume",
    "j:android.app.ActivityThread.performResumeActivity",
    "j:android.app.ActivityThread.handleResumeActivity",
    "j:android.app.servertransaction.ResumeActivityItem.execute",
    "j:android.app.servertransaction.TransactionExecutor.executeLifecycleState",
    "j:android.app.servertransaction.TransactionExecutor.execute",
    *ACTIVITY_H,
]
BINDER_CLIENT = [
    "n:libc:__ioctl",
    "n:libc:ioctl",
    "n:libbinder:android::IPCThreadState::talkWithDriver(bool)",
    "n:libbinder:android::IPCThreadState::waitForResponse(android::Parcel*, int*)",
    "n:libbinder:android::IPCThreadState::transact"
    "(int, unsigned int, android::Parcel const&, android::Parcel*, unsigned int)",
    "n:libbinder:android::BpBinder::transact"
    "(unsigned int, android::Parcel const&, android::Parcel*, unsigned int)",
    "n:libandroid_runtime:android_os_BinderProxy_transact"
    "(_JNIEnv*, _jobject*, int, _jobject*, _jobject*, int)",
    "jn:android.os.BinderProxy.transactNative",
    "j:android.os.BinderProxy.transact",
]
BINDER_SERVE = ["j:android.os.Binder.execTransactInternal", "j:android.os.Binder.execTransact"]
FSYNC_KERNEL = [
    "k:__switch_to",
    "k:__schedule",
    "k:schedule",
    "k:jbd2_log_wait_commit",
    "k:ext4_sync_file",
    "k:vfs_fsync_range",
    "k:do_fsync",
    "k:__arm64_sys_fsync",
    "k:el0_svc_common",
]
FSYNC = [
    "n:libc:fsync",
    "n:libjavacore:Linux_fsync(_JNIEnv*, _jobject*, _jobject*)",
    "jn:libcore.io.Linux.fsync",
    "j:libcore.io.ForwardingOs.fsync",
    "j:java.io.FileDescriptor.sync",
]
GC_WAIT = [
    "n:libc:syscall",
    "n:libart:art::ConditionVariable::WaitHoldingLocks(art::Thread*)",
    "n:libart:art::gc::Heap::WaitForGcToCompleteLocked(art::gc::GcCause, art::Thread*)",
    "n:libart:art::gc::Heap::WaitForGcToComplete(art::gc::GcCause, art::Thread*)",
    "n:libart:art::gc::Heap::AllocateInternalWithGc(art::Thread*, art::gc::AllocatorType, bool, "
    "unsigned long, unsigned long*, unsigned long*, unsigned long*, "
    "art::ObjPtr<art::mirror::Class>*)",
]
GC_RUN = [
    "n:libart:art::gc::collector::ConcurrentCopying::MarkingPhase()",
    "n:libart:art::gc::collector::ConcurrentCopying::RunPhases()",
    "n:libart:art::gc::collector::GarbageCollector::Run(art::gc::GcCause, bool)",
    "n:libart:art::gc::Heap::CollectGarbageInternal"
    "(art::gc::collector::GcType, art::gc::GcCause, bool)",
    "n:libart:art::gc::Heap::ConcurrentGC(art::Thread*, art::gc::GcCause, bool)",
    "jn:dalvik.system.VMRuntime.runHeapTasks",
    "j:java.lang.Daemons$HeapTaskDaemon.runInternal",
    "j:java.lang.Daemons$Daemon.run",
    "j:java.lang.Thread.run",
]
RECLAIM_KERNEL = [  # "K:": kernel lines kept even in files without kernel stacks
    "K:__switch_to",
    "K:__schedule",
    "K:schedule",
    "K:schedule_timeout",
    "K:io_schedule_timeout",
    "K:shrink_node",
    "K:try_to_free_pages",
    "K:__alloc_pages_slowpath",
    "K:__alloc_pages_nodemask",
    "K:filemap_fault",
    "K:__do_fault",
    "K:handle_mm_fault",
    "K:do_page_fault",
    "K:do_mem_abort",
]
RECYCLER = [
    "j:androidx.recyclerview.widget.RecyclerView$Adapter.onBindViewHolder",
    "j:androidx.recyclerview.widget.RecyclerView$Adapter.bindViewHolder",
    "j:androidx.recyclerview.widget.RecyclerView$Recycler.tryBindViewHolderByDeadline",
    "j:androidx.recyclerview.widget.GapWorker.prefetchPositionWithDeadline",
    "j:androidx.recyclerview.widget.GapWorker.run",
    "j:android.os.Handler.handleCallback",
    *MAIN_DISPATCH,
]

_LIBS = {
    "libc": "/apex/com.android.runtime/lib64/bionic/libc.so",
    "libart": "/apex/com.android.art/lib64/libart.so",
    "libjavacore": "/apex/com.android.art/lib64/libjavacore.so",
    "libbinder": "/system/lib64/libbinder.so",
    "libutils": "/system/lib64/libutils.so",
    "libandroid_runtime": "/system/lib64/libandroid_runtime.so",
    "libhwui": "/system/lib64/libhwui.so",
    "libadbconnection": "/apex/com.android.art/lib64/libadbconnection.so",
    "libsurfaceflinger": "/system/lib64/libsurfaceflinger.so",
    "surfaceflinger": "/system/bin/surfaceflinger",
}
_CPU_TICKS = {"idle": (0, 9), "low": (11, 95), "mid": (110, 950), "high": (1100, 6000)}
_CPU_ORDER = ("idle", "low", "mid", "high")


@dataclass
class _T:
    """A thread to build: name, ART state, kernel state, CPU bucket, stack spec."""

    name: str
    state: str
    sched: str
    cpu: str
    stack: list[str]
    daemon: bool = False
    attached: bool = True  # False: a native thread written as ``"name" sysTid=N``


@dataclass
class _Scenario:
    app_threads: list[_T]  # main first
    ss_threads: list[_T]
    critical: list[tuple[str, str]]  # ("app" | "ss", thread name)
    wait_for_length: int
    lock_types: dict[str, str]
    deadlock: bool = False
    watchdog: str | None = None  # the watchdog line: then system_server comes first


@dataclass(frozen=True)
class _Ctx:
    """What every scenario builder draws on: the app, the file's random details, and a few
    per-file choices (lambda and anonymous-class numbers, the serving Binder thread)."""

    a: str  # the app package
    g: _Gen
    lam: str
    anon: str
    ss_binder: str
    fsync_k: list[str]  # fsync kernel frames, when this file has kernel stacks


OBJ = "java.lang.Object"


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


def _low_memory_gc_wait(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "WaitingForGcToComplete",
        "S",
        "mid",
        [
            *GC_WAIT,
            "jn:android.graphics.BitmapFactory.nativeDecodeAsset",
            "j:android.graphics.BitmapFactory.decodeStream",
            "j:android.graphics.drawable.Drawable.createFromResourceStream",
            "j:android.content.res.ResourcesImpl.loadDrawableForCookie",
            "j:android.content.res.ResourcesImpl.loadDrawable",
            "j:android.content.res.Resources.getDrawable",
            "j:android.widget.ImageView.resolveUri",
            "j:android.widget.ImageView.setImageResource",
            f"j:{c.a}.ui.FeedAdapter.onBindViewHolder",
            *RECYCLER,
        ],
    )
    heap = _T("HeapTaskDaemon", "Runnable", "R", "high", GC_RUN, daemon=True)
    return _Scenario([main, heap], [], [("app", "main")], 0, {})


def _low_memory_lock_gc(c: _Ctx) -> _Scenario:
    name = str(c.g.rng.choice(["glide-disk-cache-thread-0", "pool-4-thread-2"]))
    main = _T(
        "main",
        "Blocked",
        "S",
        "mid",
        [
            f"j:{c.a}.cache.ImageCache.get",
            "-wait:C",
            f"j:{c.a}.ui.AvatarView.bind",
            f"j:{c.a}.ui.FeedAdapter.onBindViewHolder",
            *RECYCLER,
        ],
    )
    worker = _T(
        name,
        "WaitingForGcToComplete",
        "S",
        "low",
        [
            *GC_WAIT,
            "j:java.util.Arrays.copyOf",
            "j:java.util.ArrayList.grow",
            "j:java.util.ArrayList.add",
            f"j:{c.a}.cache.ImageCache.put",
            "-lock:C",
            f"j:{c.a}.cache.ImageCache{c.anon}.run",
            *POOL_BOTTOM,
        ],
    )
    return _Scenario([main, worker], [], [("app", name)], 1, {"C": "java.util.LinkedHashMap"})


def _low_memory_lmk(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Native",
        "D",
        "mid",
        [
            *RECLAIM_KERNEL,
            "j:android.view.LayoutInflater.inflate",
            "j:android.view.LayoutInflater.inflate",
            f"j:{c.a}.ui.DetailActivity.onCreate",
            "j:android.app.Activity.performCreate",
            "j:android.app.Instrumentation.callActivityOnCreate",
            "j:android.app.ActivityThread.performLaunchActivity",
            "j:android.app.ActivityThread.handleLaunchActivity",
            *ACTIVITY_H,
        ],
    )
    return _Scenario([main], [], [("app", "main")], 0, {})


def _app_defect_busy_loop(c: _Ctx) -> _Scenario:
    depth = int(c.g.rng.integers(2, 7))
    main = _T(
        "main",
        "Runnable",
        "R",
        "high",
        [
            *[f"j:{c.a}.util.JsonParser.parseValue"] * depth,
            f"j:{c.a}.util.JsonParser.parseObject",
            f"j:{c.a}.util.JsonParser.parse",
            f"j:{c.a}.data.FeedRepository.load",
            f"j:{c.a}.ui.FeedFragment.onViewCreated",
            "j:androidx.fragment.app.Fragment.performViewCreated",
            "j:androidx.fragment.app.FragmentStateManager.createView",
            "j:androidx.fragment.app.FragmentStateManager.moveToExpectedState",
            "j:androidx.fragment.app.FragmentManager.executeOpsTogether",
            "j:androidx.fragment.app.FragmentManager.execPendingActions",
            f"j:androidx.fragment.app.FragmentManager{c.anon}.run",
            "j:android.os.Handler.handleCallback",
            *MAIN_DISPATCH,
        ],
    )
    return _Scenario([main], [], [("app", "main")], 0, {})


def _app_defect_network_main(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Native",
        "S",
        "mid",
        [
            "n:libc:recvfrom",
            "jn:java.net.SocketInputStream.socketRead0",
            "j:java.net.SocketInputStream.socketRead",
            "j:java.net.SocketInputStream.read",
            "j:com.android.org.conscrypt.ConscryptEngineSocket$SSLInputStream.readFromSocket",
            "j:com.android.org.conscrypt.ConscryptEngineSocket$SSLInputStream.read",
            "j:okio.InputStreamSource.read",
            "j:okio.RealBufferedSource.indexOf",
            "j:okhttp3.internal.http1.Http1ExchangeCodec.readResponseHeaders",
            "j:okhttp3.internal.connection.Exchange.readResponseHeaders",
            "j:okhttp3.internal.http.CallServerInterceptor.intercept",
            "j:okhttp3.internal.connection.RealCall.execute",
            f"j:{c.a}.api.ApiClient.fetchConfig",
            f"j:{c.a}.MainActivity.onCreate",
            "j:android.app.Activity.performCreate",
            "j:android.app.Instrumentation.callActivityOnCreate",
            "j:android.app.ActivityThread.performLaunchActivity",
            "j:android.app.ActivityThread.handleLaunchActivity",
            *ACTIVITY_H,
        ],
    )
    return _Scenario([main], [], [("app", "main")], 0, {})


def _app_defect_app_deadlock(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Blocked",
        "S",
        "mid",
        [
            f"j:{c.a}.account.AccountStore.current",
            "-wait:L1",
            f"j:{c.a}.ui.HomeActivity.refresh",
            "-lock:L2",
            f"j:{c.a}.ui.HomeActivity.onResume",
            *RESUME,
        ],
    )
    worker = _T(
        "SyncEngine",
        "Blocked",
        "S",
        "low",
        [
            f"j:{c.a}.ui.HomeActivity.onAccountChanged",
            "-wait:L2",
            f"j:{c.a}.account.AccountStore.update",
            "-lock:L1",
            f"j:{c.a}.sync.SyncEngine.commit",
            f"j:{c.a}.sync.SyncEngine{c.anon}.run",
            *POOL_BOTTOM,
        ],
    )
    types = {"L1": f"{c.a}.account.AccountStore", "L2": f"{c.a}.ui.HomeActivity"}
    critical = [("app", "main"), ("app", "SyncEngine")]
    return _Scenario([main, worker], [], critical, 2, types, deadlock=True)


_SCENARIOS: dict[tuple[str, str], Callable[[_Ctx], _Scenario]] = {
    ("wam", "queued_work"): _wam_queued_work,
    ("wam", "repo_fsync"): _wam_repo_fsync,
    ("wam", "binder_fsync"): _wam_binder_fsync,
    ("wam", "watchdog_fsync"): _wam_watchdog_fsync,
    ("lock_contention", "ams_lock"): _lock_contention_ams_lock,
    ("lock_contention", "wms_lock"): _lock_contention_wms_lock,
    ("lock_contention", "ss_deadlock"): _lock_contention_ss_deadlock,
    ("lock_contention", "watchdog_ams"): _lock_contention_watchdog_ams,
    ("low_memory", "gc_wait"): _low_memory_gc_wait,
    ("low_memory", "lock_gc"): _low_memory_lock_gc,
    ("low_memory", "lmk"): _low_memory_lmk,
    ("app_defect", "busy_loop"): _app_defect_busy_loop,
    ("app_defect", "network_main"): _app_defect_network_main,
    ("app_defect", "app_deadlock"): _app_defect_app_deadlock,
}


def _scenario(family: str, variant: str, app: str, g: _Gen) -> _Scenario:
    build = _SCENARIOS.get((family, variant))
    if build is None:
        raise UserError(f"unknown ANR family/variant {family}/{variant}")
    ctx = _Ctx(
        app,
        g,
        f"$$ExternalSyntheticLambda{int(g.rng.integers(0, 6))}",
        f"${int(g.rng.integers(1, 4))}",
        g.binder_name("ss"),
        FSYNC_KERNEL if g.kernel_stacks else [],
    )
    return build(ctx)


# -- noise threads ---------------------------------------------------------------------

_APP_NOISE: tuple[_T, ...] = (
    _T(
        "Signal Catcher",
        "Runnable",
        "R",
        "low",
        [
            "n:libart:art::DumpNativeStack(std::__1::basic_ostream<char, "
            "std::__1::char_traits<char> >&, int)",
            "n:libart:art::Thread::DumpStack(std::__1::basic_ostream<char, "
            "std::__1::char_traits<char> >&, bool, bool)",
            "n:libart:art::DumpCheckpoint::Run(art::Thread*)",
            "n:libart:art::ThreadList::Dump(std::__1::basic_ostream<char, "
            "std::__1::char_traits<char> >&, bool)",
            "n:libart:art::SignalCatcher::HandleSigQuit()",
            "n:libart:art::SignalCatcher::Run(void*)",
            *_START,
        ],
        daemon=True,
    ),
    _T(
        "ADB-JDWP Connection Control Thread",
        "WaitingInMainDebuggerLoop",
        "S",
        "idle",
        [
            "n:libc:__ppoll",
            "n:libc:poll",
            "n:libadbconnection:adbconnection::AdbConnectionState::RunPollLoop(art::Thread*)",
            "n:libadbconnection:adbconnection::CallbackFunction(void*)",
            *_START,
        ],
        daemon=True,
    ),
    _T(
        "ReferenceQueueDaemon",
        "Waiting",
        "S",
        "idle",
        [
            "jn:java.lang.Object.wait",
            "-on:RQ",
            "j:java.lang.Object.wait",
            "j:java.lang.Daemons$ReferenceQueueDaemon.runInternal",
            "j:java.lang.Daemons$Daemon.run",
            "j:java.lang.Thread.run",
        ],
        daemon=True,
    ),
    _T(
        "FinalizerDaemon",
        "Waiting",
        "S",
        "idle",
        [
            "jn:java.lang.Object.wait",
            "-on:FQ",
            "j:java.lang.Object.wait",
            "j:java.lang.ref.ReferenceQueue.remove",
            "j:java.lang.ref.ReferenceQueue.remove",
            "j:java.lang.Daemons$FinalizerDaemon.runInternal",
            "j:java.lang.Daemons$Daemon.run",
            "j:java.lang.Thread.run",
        ],
        daemon=True,
    ),
    _T(
        "FinalizerWatchdogDaemon",
        "Sleeping",
        "S",
        "idle",
        [
            "jn:java.lang.Thread.sleep",
            "-sleep:FW",
            "j:java.lang.Thread.sleep",
            "j:java.lang.Daemons$FinalizerWatchdogDaemon.sleepForNanos",
            "j:java.lang.Daemons$FinalizerWatchdogDaemon.runInternal",
            "j:java.lang.Daemons$Daemon.run",
            "j:java.lang.Thread.run",
        ],
        daemon=True,
    ),
    _T(
        "HeapTaskDaemon",
        "WaitingForTaskProcessor",
        "S",
        "low",
        [
            "n:libc:syscall",
            "n:libart:art::ConditionVariable::TimedWait(art::Thread*, long, int)",
            "n:libart:art::gc::TaskProcessor::GetTask(art::Thread*)",
            "n:libart:art::gc::TaskProcessor::RunAllTasks(art::Thread*)",
            "jn:dalvik.system.VMRuntime.runHeapTasks",
            "j:java.lang.Daemons$HeapTaskDaemon.runInternal",
            "j:java.lang.Daemons$Daemon.run",
            "j:java.lang.Thread.run",
        ],
        daemon=True,
    ),
    _T(
        "Jit thread pool",
        "Native",
        "S",
        "low",
        [
            "n:libc:syscall",
            "n:libart:art::ConditionVariable::WaitHoldingLocks(art::Thread*)",
            "n:libart:art::ThreadPool::GetTask(art::Thread*)",
            "n:libart:art::ThreadPoolWorker::Run()",
            "n:libart:art::ThreadPoolWorker::Callback(void*)",
            *_START,
        ],
        daemon=True,
    ),
    _T(
        "RenderThread",
        "Native",
        "S",
        "low",
        [
            "n:libc:__epoll_pwait",
            "n:libutils:android::Looper::pollInner(int)",
            "n:libutils:android::Looper::pollOnce(int, int*, int*, void**)",
            "n:libhwui:android::uirenderer::ThreadBase::waitForWork()",
            "n:libhwui:android::uirenderer::renderthread::RenderThread::threadLoop()",
            "n:libutils:android::Thread::_threadLoop(void*)",
            *_START,
        ],
    ),
    _T(
        "OkHttp ConnectionPool",
        "TimedWaiting",
        "S",
        "idle",
        [
            "jn:java.lang.Object.wait",
            "-on:OK",
            "j:java.lang.Object.wait",
            "j:okhttp3.ConnectionPool$1.run",
            *POOL_BOTTOM,
        ],
    ),
    _T(
        "pool-2-thread-3",
        "Waiting",
        "S",
        "idle",
        [
            "jn:sun.misc.Unsafe.park",
            "j:java.util.concurrent.locks.LockSupport.park",
            "j:java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await",
            "j:java.util.concurrent.LinkedBlockingQueue.take",
            "j:java.util.concurrent.ThreadPoolExecutor.getTask",
            *POOL_BOTTOM,
        ],
    ),
    _T(
        "AsyncTask #1",
        "Waiting",
        "S",
        "idle",
        [
            "jn:sun.misc.Unsafe.park",
            "j:java.util.concurrent.locks.LockSupport.park",
            "j:java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await",
            "j:java.util.concurrent.LinkedBlockingQueue.take",
            "j:java.util.concurrent.ThreadPoolExecutor.getTask",
            *POOL_BOTTOM,
        ],
    ),
    _T(
        "Profile Saver",
        "Native",
        "S",
        "idle",
        [
            "n:libc:syscall",
            "n:libart:art::ConditionVariable::TimedWait(art::Thread*, long, int)",
            "n:libart:art::ProfileSaver::Run()",
            "n:libart:art::ProfileSaver::RunProfileSaverThread(void*)",
            *_START,
        ],
        daemon=True,
    ),
    _T(
        "queued-work-looper",
        "Native",
        "S",
        "idle",
        [*LOOPER_IDLE, "j:android.os.HandlerThread.run"],
    ),
)
_SS_LOOPERS = (
    "android.bg",
    "android.io",
    "android.ui",
    "android.display",
    "android.anim",
    "android.fg",
    "ActivityManager",
    "PackageManager",
    "PowerManagerService",
    "batterystats-handler",
    "CpuTracker",
    "NetworkStats",
)
_SS_MAIN = [
    *LOOPER_IDLE,
    "j:com.android.server.SystemServer.run",
    "j:com.android.server.SystemServer.main",
    *MAIN_BOTTOM[1:],
]


class _Gen:
    """Random details of one file (ids, addresses, line numbers, libraries)."""

    def __init__(self, rng: np.random.Generator, kernel_stacks: bool, arm32: bool) -> None:
        self.rng = rng
        self.kernel_stacks = kernel_stacks
        self.libs = {k: v.replace("lib64", "lib") for k, v in _LIBS.items()} if arm32 else _LIBS
        self.ss_libs = _LIBS
        self.app_pid = int(rng.integers(2000, 32000))
        self.ss_pid = int(rng.integers(900, 1999))
        self.sf_pid = int(rng.integers(500, 899))
        self._binders: dict[str, itertools.count[int]] = {}
        self._addresses: set[str] = set()
        self._lines: dict[str, int] = {}

    def binder_name(self, proc: str) -> str:
        pid = self.ss_pid if proc == "ss" else self.app_pid if proc == "app" else self.sf_pid
        counter = self._binders.setdefault(proc, itertools.count(int(self.rng.integers(1, 4))))
        return f"Binder:{pid}_{next(counter):X}"

    def address(self) -> str:
        while True:
            text = f"0x{int(self.rng.integers(1 << 24, 1 << 32)):08x}"
            if text not in self._addresses:
                self._addresses.add(text)
                return text

    def line(self, function: str) -> int:
        if function not in self._lines:  # one build per file: a function keeps its line
            self._lines[function] = int(self.rng.integers(20, 4000))
        return self._lines[function]

    def frame(self, spec: str, libs: dict[str, str]) -> Frame:
        kind, _, rest = spec.partition(":")
        if kind == "j" or kind == "jn":
            cls = rest.rsplit(".", 1)[0]
            source = cls.rsplit(".", 1)[-1].split("$")[0]
            where = "Native method" if kind == "jn" else f"{source}.java:{self.line(rest)}"
            return Frame("java", rest, where)
        if kind == "n":
            lib, _, symbol = rest.partition(":")
            pc = f"{int(self.rng.integers(1 << 12, 1 << 36)):016x}"
            return Frame("native", f"{symbol}+{int(self.rng.integers(4, 600))}", libs[lib], pc)
        a = int(self.rng.integers(4, 0x400)) * 4
        return Frame("kernel", f"{rest}+0x{a:x}/0x{a + int(self.rng.integers(8, 0x200)) * 4:x}")


def _cpu(
    rng: np.random.Generator, bucket: str, noise: float
) -> tuple[int, int, tuple[int, int, int]]:
    if rng.random() < noise:  # a thread that also did something else earlier
        bucket = _CPU_ORDER[min(3, _CPU_ORDER.index(bucket) + 1)]
    lo, hi = _CPU_TICKS[bucket]
    ticks = int(rng.integers(lo, hi + 1))
    utm = int(rng.integers(0, ticks + 1))
    run_ns = ticks * 10_000_000 + int(rng.integers(0, 9_999_999))
    return utm, ticks - utm, (run_ns, int(rng.integers(0, run_ns // 4 + 2)), ticks * 3 + 1)


def _build_threads(
    g: _Gen,
    specs: Sequence[_T],
    pid: int,
    libs: dict[str, str],
    cgrp: str,
    cpu_noise: float,
    critical: set[str],
) -> list[ThreadDump]:
    rng = g.rng
    tids = rng.permutation(np.arange(2, len(specs) + 40))[: len(specs)]
    sys_offsets = rng.permutation(np.arange(1, 4 * len(specs) + 80))[: len(specs)]
    threads = []
    for i, spec in enumerate(specs):
        tid = 1 if spec.name == "main" else int(tids[i])
        sys_tid = pid if spec.name == "main" else pid + int(sys_offsets[i])
        noise = cpu_noise if spec.name in critical else 0.0
        utm, stm, schedstat = _cpu(rng, spec.cpu, noise)
        if not spec.attached:
            thread = ThreadDump(spec.name, None, "", sys_tid=sys_tid)
        else:
            thread = ThreadDump(
                spec.name,
                tid,
                spec.state,
                daemon=spec.daemon,
                prio=5 if rng.random() < 0.8 else int(rng.choice([1, 10])),
                sys_tid=sys_tid,
                nice=-10 if spec.name == "main" else int(rng.choice([0, -2, 10])),
                cgrp=cgrp,
                sched_state=spec.sched,
                schedstat=schedstat,
                utm=utm,
                stm=stm,
                core=int(rng.integers(0, 8)),
                hz=100,
            )
        for item in spec.stack:
            if item.startswith("-"):
                thread.locks.append(
                    LockOp(item, "", "", None, len(thread.frames))
                )  # resolved later
            elif item.startswith("k:") and not g.kernel_stacks:
                continue
            else:
                thread.frames.append(g.frame(item, libs))
        threads.append(thread)
    return threads


def _resolve_locks(g: _Gen, procs: list[list[ThreadDump]], types: dict[str, str]) -> None:
    """Turn symbolic lock specs into addresses and ``held by`` tids."""
    addresses: dict[str, str] = {}
    holders: dict[str, ThreadDump] = {}
    for thread in itertools.chain.from_iterable(procs):
        for lock in thread.locks:
            kind, _, symbol = lock.kind[1:].partition(":")
            addresses.setdefault(symbol, g.address())
            if kind == "lock":
                holders[symbol] = thread
    kinds = {
        "wait": "waiting_to_lock",
        "lock": "locked",
        "on": "waiting_on",
        "sleep": "sleeping_on",
    }
    for thread in itertools.chain.from_iterable(procs):
        for i, lock in enumerate(thread.locks):
            kind, _, symbol = lock.kind[1:].partition(":")
            held_by = None
            if kind == "wait" and g.rng.random() < 0.9:  # some dumps omit "held by"
                held_by = holders[symbol].tid
            type_name = types.get(symbol, _NOISE_LOCK_TYPES.get(symbol, "java.lang.Object"))
            thread.locks[i] = LockOp(
                kinds[kind], addresses[symbol], type_name, held_by, lock.after_frame
            )


_NOISE_LOCK_TYPES = {
    "RQ": "java.lang.Class<java.lang.ref.ReferenceQueue>",
    "FQ": "java.lang.Object",
    "FW": "java.lang.Daemons$FinalizerWatchdogDaemon",
    "OK": "okhttp3.ConnectionPool",
    "WD": "com.android.server.Watchdog",
}


def _dump_time(rng: np.random.Generator, old: bool) -> tuple[str, str]:
    """Two date texts a few ms apart (app dump, then services), new or old style."""
    day = np.datetime64("2017-01-01") + int(rng.integers(0, 8 * 365))
    second = int(rng.integers(0, 86400 - 10))
    hh, mm, ss = second // 3600, second // 60 % 60, second % 60
    base = f"{day} {hh:02d}:{mm:02d}:{ss:02d}"
    if old:
        return base, base
    ns = int(rng.integers(0, 900_000_000))
    tz = str(rng.choice(["+0800", "+0000", "-0500", "+0530", "+0100"]))
    return f"{base}.{ns:09d}{tz}", f"{base}.{ns + 37_000_000:09d}{tz}"


def synth_anr(
    rng: np.random.Generator,
    family: str = "wam",
    app: str = "com.example.app",
    *,
    variant: str | None = None,
    kernel_stacks: bool | None = None,
    old_date: bool | None = None,
    arm32: bool | None = None,
    surfaceflinger: bool | None = None,
    noise_threads: int | None = None,
    cpu_noise: float = 0.03,
) -> tuple[str, SynthTruth]:
    """One realistic ANR trace file of ``family`` (and ``variant``; random when None).

    Returns the file text and its :class:`SynthTruth`. ``None`` options are drawn at
    random: kernel stack lines (70 %), old-style dates (20 %), 32-bit app libraries
    (15 %), a ``surfaceflinger`` section (30 %), 3–12 noise threads per process.
    ``cpu_noise`` is the chance that a critical thread's CPU time falls one bucket higher.
    """
    if family not in FAMILY_VARIANTS:
        raise UserError(f"unknown ANR family {family!r} ({', '.join(FAMILY_VARIANTS)})")
    variants = FAMILY_VARIANTS[family]
    if variant is None:
        weights = np.array(VARIANT_WEIGHTS[family])
        variant = variants[int(rng.choice(len(variants), p=weights / weights.sum()))]
    elif variant not in variants:
        raise UserError(f"unknown variant {variant!r} of {family} ({', '.join(variants)})")
    draw = rng.random(4)
    g = _Gen(
        rng,
        bool(draw[0] < 0.7) if kernel_stacks is None else kernel_stacks,
        bool(draw[1] < 0.15) if arm32 is None else arm32,
    )
    old = bool(draw[2] < 0.2) if old_date is None else old_date
    with_sf = bool(draw[3] < 0.3) if surfaceflinger is None else surfaceflinger
    sc = _scenario(family, variant, app, g)
    watchdog = sc.watchdog is not None
    n_noise = int(rng.integers(3, 13)) if noise_threads is None else noise_threads

    def pick_noise(pool: Sequence[_T], taken: set[str], n: int) -> list[_T]:
        free = [t for t in pool if t.name not in taken]
        chosen = rng.permutation(len(free))[: min(n, len(free))]
        return [free[i] for i in sorted(chosen.tolist())]

    critical_names = {name for _, name in sc.critical}
    t_app, t_ss = _dump_time(rng, old)
    procs: list[tuple[str, ProcessDump]] = []
    if not watchdog:
        specs = list(sc.app_threads)
        taken = {t.name for t in specs}
        extra = pick_noise(_APP_NOISE, taken, n_noise)
        extra += [_T(g.binder_name("app"), "Native", "S", "idle", IDLE_BINDER) for _ in range(2)]
        order = rng.permutation(len(specs) - 1 + len(extra)).tolist()
        rest = specs[1:] + extra
        specs = [specs[0]] + [rest[i] for i in order]
        threads = _build_threads(g, specs, g.app_pid, g.libs, "top-app", cpu_noise, critical_names)
        procs.append(("app", ProcessDump(g.app_pid, t_app, app, len(threads), threads)))
    ss_specs = list(sc.ss_threads)
    taken = {t.name for t in ss_specs}
    if "main" not in taken:
        ss_specs.insert(0, _T("main", "Native", "S", "mid", _SS_MAIN))
    loopers = [
        _T(name, "Native", "S", "low", [*LOOPER_IDLE, *SERVICE_THREAD[3:]])
        for name in _SS_LOOPERS
        if name not in taken
    ]
    extra = pick_noise(loopers, taken, n_noise)
    extra += [
        _T(g.binder_name("ss"), "Native", "S", "idle", IDLE_BINDER)
        for _ in range(int(rng.integers(3, 9)))
    ]
    extra.append(
        _T(
            "watchdog",
            "TimedWaiting",
            "S",
            "low",
            [
                "jn:java.lang.Object.wait",
                "-on:WD",
                "j:java.lang.Object.wait",
                "j:com.android.server.Watchdog.run",
            ],
        )
    )
    head = ss_specs[:1]
    rest = ss_specs[1:] + extra
    ss_specs = head + [rest[i] for i in rng.permutation(len(rest)).tolist()]
    ss_threads = _build_threads(
        g, ss_specs, g.ss_pid, g.ss_libs, "foreground", cpu_noise, critical_names
    )
    procs.append(("ss", ProcessDump(g.ss_pid, t_ss, "system_server", len(ss_threads), ss_threads)))
    if with_sf:
        sf_specs = [
            _T(
                "surfaceflinger",
                "",
                "",
                "mid",
                [
                    "n:libc:__epoll_pwait",
                    "n:libutils:android::Looper::pollInner(int)",
                    "n:libutils:android::Looper::pollOnce(int, int*, int*, void**)",
                    "n:libsurfaceflinger:android::impl::MessageQueue::waitMessage()",
                    "n:libsurfaceflinger:android::SurfaceFlinger::run()",
                    "n:surfaceflinger:main",
                    "n:libc:__libc_init",
                ],
                attached=False,
            ),
            *[
                _T(g.binder_name("sf"), "", "", "idle", IDLE_BINDER, attached=False)
                for _ in range(2)
            ],
        ]
        sf_threads = _build_threads(g, sf_specs, g.sf_pid, g.ss_libs, "", 0.0, set())
        sf = ProcessDump(g.sf_pid, t_ss, "/system/bin/surfaceflinger", None, sf_threads)
        procs.append(("sf", sf))
    _resolve_locks(g, [p.threads for _, p in procs], sc.lock_types)
    anr = AnrFile("<synth>", [p for _, p in procs], watchdog=sc.watchdog, goodbye=watchdog)
    names = {"app": app, "ss": "system_server"}
    first = procs[0][1]
    truth = SynthTruth(
        family=family,
        variant=variant,
        app=first.name,
        pid=first.pid,
        blocked_thread="android.fg" if watchdog else "main",
        critical_threads=tuple((names[p], name) for p, name in sc.critical),
        deadlock=sc.deadlock,
        watchdog=watchdog,
        wait_for_length=sc.wait_for_length,
        anr=anr,
    )
    return format_anr(anr, rng), truth


# -- other containers and degraded dumps -----------------------------------------------

# The variants whose critical threads are all in the app: a tombstone holds only the app.
XCRASH_VARIANTS: dict[str, tuple[str, ...]] = {
    "wam": ("queued_work", "repo_fsync"),
    "low_memory": FAMILY_VARIANTS["low_memory"],
    "app_defect": FAMILY_VARIANTS["app_defect"],
}
_TIMEZONES = ("+0800", "+0000", "-0500", "+0530", "+0100")


def synth_xcrash_tombstone(
    rng: np.random.Generator,
    family: str = "wam",
    app: str = "com.example.app",
    *,
    variant: str | None = None,
    noise_threads: int | None = None,
) -> tuple[str, SynthTruth]:
    """The app process of a :func:`synth_anr` event, written as an xCrash ANR tombstone
    (:func:`~mqoe.analysis.anr.parse.format_xcrash`). The truth's ``anr`` holds that one
    process, its time to the millisecond with a UTC offset, as xCrash's ``Crash time``."""
    if family not in XCRASH_VARIANTS:
        raise UserError(
            f"no xCrash variant of {family!r}: a tombstone holds the app only "
            f"({', '.join(XCRASH_VARIANTS)})"
        )
    variants = XCRASH_VARIANTS[family]
    if variant is None:
        variant = variants[int(rng.integers(0, len(variants)))]
    elif variant not in variants:
        raise UserError(f"unknown xCrash variant {variant!r} of {family} ({', '.join(variants)})")
    _, truth = synth_anr(rng, family, app, variant=variant, noise_threads=noise_threads)
    proc = truth.anr.processes[0]
    tz = _TIMEZONES[int(rng.integers(0, len(_TIMEZONES)))]
    proc.time_text = f"{proc.time_text[:19]}.{int(rng.integers(0, 1000)):03d}{tz}"
    anr = AnrFile("<synth>", [proc], source="xcrash_tombstone")
    return format_xcrash(anr, rng), dataclasses.replace(truth, anr=anr)


# (state letter, /proc/…/wchan) of idle and busy app threads; "0": running on a CPU.
_WCHANS = (
    ("S", "futex_wait_queue_me"), ("S", "do_epoll_wait"), ("S", "binder_wait_for_work"),
    ("S", "do_sigtimedwait"), ("S", "pipe_read"), ("S", "inotify_read"),
    ("S", "__arm64_sys_nanosleep"), ("R", "0"), ("D", "jbd2_log_wait_commit"),
    ("D", "swap_readpage"),
)  # fmt: skip
# A frozen cached app: cgroup v2's freezer parks tasks in do_freezer_trap, v1 in
# __refrigerator (kernel/cgroup/freezer.c, kernel/freezer.c).
_FROZEN = (("S", "do_freezer_trap"), ("D", "__refrigerator"))


def _tids(rng: np.random.Generator, pid: int, n: int) -> list[int]:
    """``n`` thread ids of process ``pid``: the main thread's (= pid) first."""
    if n <= 0:
        return []
    others = rng.choice(np.arange(pid + 1, pid + 4 * n + 10), size=n - 1, replace=False)
    return [pid, *sorted(int(t) for t in others)]


def synth_waiting_channels(
    rng: np.random.Generator,
    n_threads: int = 30,
    app: str = "com.example.app",
    *,
    frozen: bool = False,
    with_state: bool | None = None,
) -> tuple[str, AnrFile]:
    """An ANR file whose stack dump failed (Android 14 layout): the ``Subject:`` line,
    ActivityManager's ``----- dumping pid: N at UPTIME`` line, debuggerd_client's error,
    then its fallback, the ``Waiting Channels`` of the app's ``n_threads`` threads (main
    first: sysTid = pid). ``frozen``: every thread parked by the cgroup freezer.
    ``with_state``: the ``state=`` column (Android 14+; random when None)."""
    pid = int(rng.integers(2000, 32000))
    time_text, _ = _dump_time(rng, old=False)
    keep_state = bool(rng.random() < 0.5) if with_state is None else with_state
    freezer = _FROZEN[int(rng.integers(0, len(_FROZEN)))]
    threads = []
    for tid in _tids(rng, pid, n_threads):
        state, wchan = freezer if frozen else _WCHANS[int(rng.integers(0, len(_WCHANS)))]
        threads.append(
            ThreadDump(
                f"sysTid={tid}",
                sys_tid=tid,
                sched_state=state if keep_state else None,
                wchan=wchan,
            )
        )
    proc = ProcessDump(pid, time_text, app, threads=threads, waiting_channels=True)
    subject = f"Input dispatching timed out ({app}/.MainActivity is not responding)"
    anr = AnrFile("<synth>", [proc], subject=subject)
    head, section, rest = format_anr(anr).partition("----- Waiting")
    uptime_ms = int(rng.integers(10**6, 10**9))
    failed = "libdebuggerd_client: unexpected registration response: 0\n\n"
    return head + f"----- dumping pid: {pid} at {uptime_ms}\n" + failed + section + rest, anr


_NATIVE_STACKS = (
    [s for s in LOOPER_IDLE if s.startswith("n:")] + _START,
    IDLE_BINDER,
    ["n:libc:syscall", "n:libc:__futex_wait_ex(void volatile*, bool, int, bool, timespec const*)",
     "n:libc:pthread_cond_wait", *_START],
)  # fmt: skip
_NATIVE_NAMES = ("RenderThread", "HeapTaskDaemon", "FinalizerDaemon", "Jit thread pool",
                 "Profile Saver", "hwuiTask0", "OkHttp TaskRunn", "Signal Catcher")  # fmt: skip


def synth_native_only(
    rng: np.random.Generator, n_threads: int = 8, app: str = "com.example.app"
) -> tuple[str, AnrFile]:
    """debuggerd's native-only backtrace of an app (what an ANR file holds when ART could
    not answer, e.g. stopped at a breakpoint): ``"comm" sysTid=N`` threads with ``#NN pc``
    frames and libunwindstack's NOTE lines, between two Waiting Channels twins of the
    same pid (skipped by the parser). Returns the text and the one process it holds."""
    g = _Gen(rng, kernel_stacks=False, arm32=False)
    pid = g.app_pid
    time_text, _ = _dump_time(rng, old=False)
    threads = []
    for i, tid in enumerate(_tids(rng, pid, max(1, n_threads))):
        # the kernel's comm is 15 bytes: the main thread shows the package's tail
        name = app[-15:] if i == 0 else _NATIVE_NAMES[(i - 1) % len(_NATIVE_NAMES)]
        stack = _NATIVE_STACKS[int(rng.integers(0, len(_NATIVE_STACKS)))]
        frames = [g.frame(spec, g.libs) for spec in stack]
        threads.append(ThreadDump(name, None, "", sys_tid=tid, frames=frames))
    proc = ProcessDump(pid, time_text, app, None, threads)
    twin = ProcessDump(
        pid,
        time_text,
        app,
        threads=[
            ThreadDump(f"sysTid={t.sys_tid}", sys_tid=t.sys_tid, wchan="futex_wait_queue_me")
            for t in threads
        ],
        waiting_channels=True,
    )
    wchan = format_anr(AnrFile("<synth>", [twin]))
    dump = format_anr(AnrFile("<synth>", [proc])).replace(
        f"Cmd line: {app}\n", f"Cmd line: {app}\nABI: 'arm64'\n", 1
    )
    note = (
        "  NOTE: Function names and BuildId information is missing for some frames due\n"
        "  NOTE: to unreadable libraries. For unwinds of apps, only shared libraries\n"
        "  NOTE: found under the lib/ directory are readable.\n"
    )
    first = f'"{threads[0].name}" sysTid={pid}\n'
    dump = dump.replace(first, first + note, 1)
    return wchan + "\n" + dump + "\n" + wchan, AnrFile("<synth>", [proc])


def app_names(n: int) -> list[str]:
    """``n`` package names: well-known apps first, then ``com.vendorNNN.app``."""
    return [KNOWN_APPS[i] if i < len(KNOWN_APPS) else f"com.vendor{i:03d}.app" for i in range(n)]


def _write_one(args: tuple[Path, int, int, str, str]) -> dict[str, object]:
    directory, seed, index, family, app = args
    rng = np.random.default_rng([seed, index])
    text, truth = synth_anr(rng, family, app)
    path = directory / f"anr_{index:06d}.txt"
    path.write_text(text, encoding="utf-8")
    return {
        "file": str(path),
        "app": truth.app,
        "family": truth.family,
        "variant": truth.variant,
        "critical_threads": ";".join(name for _, name in truth.critical_threads),
        "deadlock": truth.deadlock,
        "watchdog": truth.watchdog,
        "wait_for_length": truth.wait_for_length,
    }


def write_synth_dir(
    directory: str | Path,
    n_events: int,
    seed: int = 0,
    *,
    n_apps: int = 40,
    zipf_a: float = 1.2,
    family_weights: dict[str, float] | None = None,
    workers: int = 1,
) -> pd.DataFrame:
    """Write ``n_events`` ANR files (``anr_NNNNNN.txt``) into ``directory``; their truth.

    Apps follow a Zipf-like law: app of rank r is drawn with probability ∝ r^−zipf_a.
    Families are drawn with ``family_weights`` (default :data:`FAMILY_WEIGHTS`);
    watchdog variants make ``system_server`` the first process. Each file has its own
    random stream (``default_rng([seed, index])``), so the output does not depend on
    ``workers``. These are test inputs, written plainly (not atomically).
    """
    if n_events < 0 or n_apps < 1:
        raise UserError("n_events must be ≥ 0 and n_apps ≥ 1")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 1 << 30])
    p_app = np.arange(1, n_apps + 1, dtype=np.float64) ** -zipf_a
    apps = app_names(n_apps)
    app_idx = rng.choice(n_apps, size=n_events, p=p_app / p_app.sum())
    weights = family_weights or FAMILY_WEIGHTS
    fams = list(weights)
    p_fam = np.array([weights[f] for f in fams], dtype=np.float64)
    fam_idx = rng.choice(len(fams), size=n_events, p=p_fam / p_fam.sum())
    jobs = [(out, seed, i, fams[fam_idx[i]], apps[app_idx[i]]) for i in range(n_events)]
    if workers > 1 and n_events >= 64:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            rows = list(pool.map(_write_one, jobs, chunksize=256))
    else:
        rows = [_write_one(job) for job in jobs]
    return pd.DataFrame(rows)
