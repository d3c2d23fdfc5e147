"""Wait-for graphs, critical threads and root-cause families: hand cases and the
generator's ground truth."""

from __future__ import annotations

import numpy as np
import pytest

from mqoe.analysis.anr import WaitForGraph, blocked_thread, parse_anr_text, summarize
from mqoe.generators.anr.event import synth_anr
from mqoe.generators.anr.scenarios import FAMILY_VARIANTS

IDLE_BINDER = [
    "native: #00 pc 0000000000049ec8  /system/lib64/libc.so (__ioctl+4)",
    "native: #01 pc 0000000000052a14  /system/lib64/libbinder.so "
    "(android::IPCThreadState::talkWithDriver(bool)+260)",
    "native: #02 pc 0000000000052bd4  /system/lib64/libbinder.so "
    "(android::IPCThreadState::getAndExecuteCommand()+24)",
    "native: #03 pc 0000000000053360  /system/lib64/libbinder.so "
    "(android::IPCThreadState::joinThreadPool(bool)+64)",
]
CLIENT = [
    "native: #00 pc 0000000000049ec8  /system/lib64/libc.so (__ioctl+4)",
    "native: #01 pc 0000000000052a14  /system/lib64/libbinder.so "
    "(android::IPCThreadState::talkWithDriver(bool)+260)",
    "at android.os.BinderProxy.transactNative(Native method)",
    "at android.os.BinderProxy.transact(BinderProxy.java:540)",
    "at android.app.IActivityManager$Stub$Proxy.getRunningAppProcesses(IActivityManager.java:7)",
    "at com.app.Main.onResume(Main.java:3)",
]


def _thread(name: str, tid: int | None, state: str, lines: list[str]) -> str:
    head = f'"{name}" prio=5 tid={tid} {state}' if tid is not None else f'"{name}" sysTid=77'
    return "\n".join([head, *("  " + line for line in lines)]) + "\n\n"


def _proc(pid: int, name: str, threads: list[str]) -> str:
    body = "".join(threads)
    head = f"----- pid {pid} at 2024-03-18 14:02:11 -----\nCmd line: {name}\n\n"
    return f"{head}{body}----- end {pid} -----\n"


def _critical(text: str) -> tuple[list[str], bool, int]:
    anr = parse_anr_text(text)
    graph = WaitForGraph(anr)
    walk = graph.walk(blocked_thread(anr))
    names = [f"{graph.process(n).name}/{graph.thread(n).name}" for n in walk.critical]
    return names, walk.cycle, walk.length


def test_lock_chain_follows_held_by_to_the_end() -> None:
    text = _proc(
        10,
        "com.app",
        [
            _thread(
                "main",
                1,
                "Blocked",
                ["at a.A.f(A.java:1)", "- waiting to lock <0x01> (a X) held by thread 5"],
            ),
            _thread(
                "B",
                5,
                "Blocked",
                [
                    "at a.B.g(B.java:1)",
                    "- waiting to lock <0x02> (a X) held by thread 9",
                    "- locked <0x01> (a X)",
                ],
            ),
            _thread("C", 9, "Runnable", ["at a.C.h(C.java:1)", "- locked <0x02> (a X)"]),
        ],
    )
    assert _critical(text) == (["com.app/C"], False, 2)


def test_lock_without_held_by_is_matched_by_address() -> None:
    text = _proc(
        10,
        "com.app",
        [
            _thread("main", 1, "Blocked", ["at a.A.f(A.java:1)", "- waiting to lock <0x0a> (a X)"]),
            _thread("other", 3, "Runnable", ["at a.B.g(B.java:1)", "- locked <0x0b> (a X)"]),
            _thread("owner", 4, "Native", ["at a.C.h(C.java:1)", "- locked <0x0a> (a X)"]),
        ],
    )
    assert _critical(text) == (["com.app/owner"], False, 1)


def test_unresolved_holder_and_object_wait_make_the_thread_critical() -> None:
    text = _proc(
        10,
        "com.app",
        [
            _thread(
                "main",
                1,
                "Blocked",
                ["at a.A.f(A.java:1)", "- waiting to lock <0x0a> (a X) held by thread 99"],
            ),
        ],
    )
    assert _critical(text) == (["com.app/main"], False, 0)
    text = _proc(
        10,
        "com.app",
        [
            _thread(
                "main",
                1,
                "Waiting",
                ["at java.lang.Object.wait(Native method)", "- waiting on <0x0a> (a X)"],
            ),
            _thread("owner", 4, "Runnable", ["at a.C.h(C.java:1)", "- locked <0x0a> (a X)"]),
        ],
    )
    assert _critical(text) == (["com.app/main"], False, 0)


def test_binder_hop_to_the_busy_binder_thread_of_another_process() -> None:
    app = _proc(20, "com.app", [_thread("main", 1, "Native", CLIENT)])
    server = _proc(
        30,
        "system_server",
        [
            _thread(
                "main", 1, "Native", ["at android.os.MessageQueue.nativePollOnce(Native method)"]
            ),
            _thread("Binder:30_1", 10, "Native", IDLE_BINDER),
            _thread(
                "Binder:30_2",
                11,
                "Blocked",
                [
                    "at com.android.server.am.AMS.getRunningAppProcesses(A.java:1)",
                    "- waiting to lock <0x0c> (a com.android.server.am.AMS) held by thread 12",
                    "at android.os.Binder.execTransact(Binder.java:1)",
                ],
            ),
            _thread(
                "android.display",
                12,
                "Runnable",
                [
                    "at com.android.server.am.ActivityManagerService.updateOomAdjLocked(A.java:2)",
                    "- locked <0x0c> (a com.android.server.am.AMS)",
                ],
            ),
        ],
    )
    assert _critical(app + server) == (["system_server/android.display"], False, 2)
    summary = summarize(parse_anr_text(app + server))
    assert summary.family == "lock_contention"
    assert summary.path == ("main -binder-> system_server/Binder:30_2 -lock-> android.display")


def test_binder_client_without_a_busy_server_is_critical() -> None:
    app = _proc(20, "com.app", [_thread("main", 1, "Native", CLIENT)])
    server = _proc(30, "system_server", [_thread("Binder:30_1", 10, "Native", IDLE_BINDER)])
    assert _critical(app + server) == (["com.app/main"], False, 0)


def test_idle_binder_pool_threads_are_not_clients() -> None:
    text = _proc(20, "com.app", [_thread("Binder:20_1", None, "", IDLE_BINDER)]) + _proc(
        30,
        "system_server",
        [_thread("Binder:30_2", 11, "Runnable", ["at android.os.Binder.execTransact(B.java:1)"])],
    )
    anr = parse_anr_text(text)
    assert WaitForGraph(anr).successor((0, 0)) is None


def test_deadlock_cycle_reports_every_member() -> None:
    text = _proc(
        10,
        "com.app",
        [
            _thread(
                "main",
                1,
                "Blocked",
                ["at a.A.f(A.java:1)", "- waiting to lock <0x01> (a X) held by thread 5"],
            ),
            _thread(
                "P",
                5,
                "Blocked",
                [
                    "at a.P.f(P.java:1)",
                    "- waiting to lock <0x02> (a X) held by thread 6",
                    "- locked <0x01> (a X)",
                ],
            ),
            _thread(
                "Q",
                6,
                "Blocked",
                [
                    "at a.Q.f(Q.java:1)",
                    "- waiting to lock <0x01> (a X) held by thread 5",
                    "- locked <0x02> (a X)",
                ],
            ),
        ],
    )
    names, cycle, length = _critical(text)
    assert (names, cycle, length) == (["com.app/P", "com.app/Q"], True, 3)
    summary = summarize(parse_anr_text(text))
    assert summary.deadlock and summary.family == "app_defect"
    assert "deadlock=yes" in summary.features.generic


def test_watchdog_line_names_the_blocked_thread() -> None:
    text = (
        _proc(
            30,
            "system_server",
            [
                _thread(
                    "main",
                    1,
                    "Native",
                    ["at android.os.MessageQueue.nativePollOnce(Native method)"],
                ),
                _thread(
                    "android.fg",
                    7,
                    "Blocked",
                    [
                        "at com.android.server.am.ActivityManagerService.monitor(A.java:1)",
                        "- waiting to lock <0x0c> (a X) held by thread 8",
                    ],
                ),
                _thread(
                    "ActivityManager",
                    8,
                    "Runnable",
                    ["at com.android.server.am.X.y(X.java:1)", "- locked <0x0c> (a X)"],
                ),
            ],
        )
        + "*** WATCHDOG KILLING SYSTEM PROCESS: Blocked in monitor X on "
        + "foreground thread (android.fg)\n"
    )
    anr = parse_anr_text(text)
    node = blocked_thread(anr)
    assert node is not None and anr.processes[0].threads[node[1]].name == "android.fg"
    summary = summarize(anr)
    assert summary.critical_threads == ("ActivityManager",)
    assert summary.family == "lock_contention" and summary.watchdog


def test_anr_example_is_a_wam_event() -> None:
    from tests.analysis.test_anr_parse import ANR_EXAMPLE

    summary = summarize(parse_anr_text(ANR_EXAMPLE))
    assert summary.critical_threads == ("SyncWorker",)
    assert summary.family == "wam"
    assert summary.path == "main -lock-> SyncWorker"
    assert "sched=D" in summary.features.generic and "isa=arm64" in summary.features.generic


@pytest.mark.parametrize(
    ("state", "frame", "family"),
    [
        ("WaitingForGcToComplete", "at a.B.c(B.java:1)", "low_memory"),
        ("Native", "kernel: try_to_free_pages+0x1/0x2", "low_memory"),
        ("Native", "kernel: jbd2_log_wait_commit+0x1/0x2", "wam"),
        ("Runnable", "at com.app.Parser.loop(Parser.java:9)", "app_defect"),
    ],
)
def test_family_rules_on_the_critical_stack(state: str, frame: str, family: str) -> None:
    text = _proc(10, "com.app", [_thread("main", 1, state, [frame])])
    assert summarize(parse_anr_text(text)).family == family


@pytest.mark.parametrize(
    ("family", "variant"),
    [(f, v) for f, variants in sorted(FAMILY_VARIANTS.items()) for v in variants],
)
def test_pipeline_recovers_the_generators_truth(family: str, variant: str) -> None:
    for seed in range(3):
        rng = np.random.default_rng([seed, len(variant)])
        text, truth = synth_anr(rng, family, "com.example.app", variant=variant)
        summary = summarize(parse_anr_text(text))
        assert summary.family == truth.family
        assert summary.process == truth.app and summary.pid == truth.pid
        assert summary.blocked_thread == truth.blocked_thread
        assert tuple(zip(summary.critical_processes, summary.critical_threads, strict=True)) == (
            truth.critical_threads
        )
        assert summary.deadlock == truth.deadlock
        assert summary.wait_for_length == truth.wait_for_length
