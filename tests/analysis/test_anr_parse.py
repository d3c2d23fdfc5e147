"""ANR trace parser: round trips, format variants, forgiven problems and errors, fuzzing."""

from __future__ import annotations

import gzip
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.anr import (
    AnrFile,
    Frame,
    LockOp,
    ProcessDump,
    ThreadDump,
    format_anr,
    parse_anr_file,
    parse_anr_text,
    parse_dump_time,
    summarize,
)
from mqoe.analysis.anr.parse import MAX_FRAMES_PER_THREAD
from mqoe.errors import InputFileError, UserError
from mqoe.generators.anr.degraded import (
    XCRASH_VARIANTS,
    synth_waiting_channels,
    synth_xcrash_tombstone,
)
from mqoe.generators.anr.event import synth_anr
from mqoe.generators.anr.scenarios import FAMILY_VARIANTS

# A hand-written file in Android's ANR trace format (`/data/anr/traces.txt`), with a "…" in
# place of one line number (kept as that frame's location).
ANR_EXAMPLE = """\
----- pid 4321 at 2024-03-18 14:02:11.123456789+0800 -----
Cmd line: com.example.app
DALVIK THREADS (2):
"main" prio=5 tid=1 Blocked
  | group="main" sCount=1 ucsCount=0 flags=1 obj=0x72a3f1f8 self=0xb400007b2c8a6be0
  | sysTid=4321 nice=-10 cgrp=top-app sched=0/0 handle=0x7c5f2a54f8
  | state=S schedstat=( 1234567890 23456789 1234 ) utm=110 stm=13 core=4 HZ=100
  at com.example.app.data.Repo.getCached(Repo.java:88)
  - waiting to lock <0x0b1c2d3e> (a java.lang.Object) held by thread 23
  at com.example.app.ui.MainActivity.onResume(MainActivity.java:57)
"SyncWorker" prio=5 tid=23 Native
  | sysTid=4388 nice=0 cgrp=top-app sched=0/0 handle=0x7a1c1fecb0
  | state=D schedstat=( 45678901 9876543 210 ) utm=3 stm=1 core=2 HZ=100
  native: #00 pc 00000000000a1f24  /apex/com.android.runtime/lib64/bionic/libc.so (fsync+8)
  at libcore.io.Linux.fsync(Native method)
  at java.io.FileDescriptor.sync(FileDescriptor.java:…)
  - locked <0x0b1c2d3e> (a java.lang.Object)
----- end 4321 -----
"""


def test_anr_example_parses_field_by_field() -> None:
    anr = parse_anr_text(ANR_EXAMPLE)
    assert len(anr.processes) == 1
    proc = anr.processes[0]
    assert (proc.pid, proc.cmd_line, proc.declared_threads, proc.truncated) == (
        4321,
        "com.example.app",
        2,
        False,
    )
    assert proc.time == datetime(
        2024, 3, 18, 14, 2, 11, 123456, tzinfo=timezone(timedelta(hours=8))
    )
    main, worker = proc.threads
    assert (main.name, main.tid, main.state, main.prio, main.daemon) == (
        "main",
        1,
        "Blocked",
        5,
        False,
    )
    assert (main.sys_tid, main.nice, main.cgrp, main.sched_state) == (4321, -10, "top-app", "S")
    assert main.schedstat == (1234567890, 23456789, 1234)
    assert (main.utm, main.stm, main.core, main.hz) == (110, 13, 4, 100)
    assert main.cpu_s == pytest.approx(1.23)
    assert main.frames == [
        Frame("java", "com.example.app.data.Repo.getCached", "Repo.java:88"),
        Frame("java", "com.example.app.ui.MainActivity.onResume", "MainActivity.java:57"),
    ]
    assert main.locks == [LockOp("waiting_to_lock", "0x0b1c2d3e", "java.lang.Object", 23, 1)]
    assert worker.frames[0] == Frame(
        "native",
        "fsync+8",
        "/apex/com.android.runtime/lib64/bionic/libc.so",
        "00000000000a1f24",
    )
    assert worker.frames[2] == Frame("java", "java.io.FileDescriptor.sync", "FileDescriptor.java:…")
    assert worker.locks == [LockOp("locked", "0x0b1c2d3e", "java.lang.Object", None, 3)]
    assert anr.stats.warnings() == {}


def test_dump_dates_new_and_old_styles() -> None:
    assert parse_dump_time("2024-03-18 14:02:11.123456789+0800") == datetime(
        2024, 3, 18, 14, 2, 11, 123456, tzinfo=timezone(timedelta(hours=8))
    )
    assert parse_dump_time("2017-01-05 10:11:12") == datetime(2017, 1, 5, 10, 11, 12)
    assert parse_dump_time("2017-13-05 10:11:12") is None
    assert parse_dump_time("yesterday") is None
    text = ANR_EXAMPLE.replace("2024-03-18 14:02:11.123456789+0800", "2017-13-45 99:00:00")
    anr = parse_anr_text(text)
    assert anr.processes[0].time is None and anr.stats.bad_dates == 1


def test_native_thread_build_ids_and_watchdog_lines() -> None:
    text = (
        "----- pid 900 at 2019-05-02 10:11:12 -----\n"
        "Cmd line: /system/bin/surfaceflinger\n\n"
        '"surfaceflinger" sysTid=900\n'
        "  #00 pc 000000000009b4c8  /system/lib64/libc.so (__epoll_pwait+8) (BuildId: 2a9e)\n"
        "  #01 pc 0000000000012b6c  /system/lib64/libutils.so (offset 0x1000) "
        "(android::Looper::pollOnce(int, int*, int*, void**)+60)\n"
        "  #02 pc 0000000000004f1c  /system/bin/surfaceflinger\n"
        "  kernel: [<ffffffc0000861a4>] __switch_to+0x70/0x7c\n"
        "  kernel: (couldn't read /proc/self/task/900/stack)\n\n"
        "----- end 900 -----\n"
        "*** WATCHDOG KILLING SYSTEM PROCESS: "
        "Blocked in handler on foreground thread (android.fg)\n"
        "*** GOODBYE!\n"
    )
    anr = parse_anr_text(text)
    thread = anr.processes[0].threads[0]
    assert (thread.tid, thread.sys_tid, thread.state) == (None, 900, "")
    assert [f.function for f in thread.frames] == [
        "__epoll_pwait+8",
        "android::Looper::pollOnce(int, int*, int*, void**)+60",
        "",
        "[<ffffffc0000861a4>] __switch_to+0x70/0x7c",
    ]
    assert thread.frames[2].location == "/system/bin/surfaceflinger"
    assert anr.watchdog == "Blocked in handler on foreground thread (android.fg)"
    assert anr.goodbye
    assert anr.stats.warnings() == {}


def test_daemon_header_held_by_tid_and_unknown_object() -> None:
    text = (
        "----- pid 7 at 2019-05-02 10:11:12 -----\n"
        '"HeapTaskDaemon" daemon prio=5 tid=7 WaitingForGcToComplete\n'
        "  - waiting to lock <0x00ab> (a java.lang.Class<com.x.Y>) held by tid=9 (Worker)\n"
        "  - waiting on an unknown object\n"
        "  - sleeping on <0x00cd> (a java.lang.Object)\n"
        "----- end 7 -----\n"
    )
    thread = parse_anr_text(text).processes[0].threads[0]
    assert thread.daemon and thread.state == "WaitingForGcToComplete"
    assert thread.locks == [
        LockOp("waiting_to_lock", "0x00ab", "java.lang.Class<com.x.Y>", 9, 0),
        LockOp("waiting_on", "", "", None, 0),
        LockOp("sleeping_on", "0x00cd", "java.lang.Object", None, 0),
    ]


def test_several_processes_and_skipped_sections() -> None:
    second = ANR_EXAMPLE.replace("4321", "1000").replace("com.example.app", "system_server")
    waiting = "----- Waiting Channels: pid 4321 at 2024-03-18 14:02:12 -----\nsysTid=4321 ep_poll\n"
    waiting += "----- end 4321 -----\n"
    anr = parse_anr_text(ANR_EXAMPLE + waiting + second)
    assert [p.name for p in anr.processes] == ["com.example.app", "system_server"]
    assert anr.stats.skipped_sections == 1
    assert anr.stats.warnings() == {"skipped_sections": 1}


def test_truncated_file_keeps_what_parsed_and_counts_it() -> None:
    cut = ANR_EXAMPLE[: ANR_EXAMPLE.index("  - locked")]
    anr = parse_anr_text(cut)
    proc = anr.processes[0]
    assert proc.truncated and anr.stats.truncated_sections == 1
    assert [t.name for t in proc.threads] == ["main", "SyncWorker"]
    assert len(proc.threads[1].frames) == 3


def test_unknown_lines_inside_threads_are_counted_not_fatal() -> None:
    text = ANR_EXAMPLE.replace(
        "  at com.example.app.ui", "  ??? garbage line\n  at com.example.app.ui"
    )
    anr = parse_anr_text(text)
    assert anr.stats.unknown_lines == 1
    assert len(anr.processes[0].threads[0].frames) == 2


def test_mismatched_end_and_thread_count_are_counted() -> None:
    text = ANR_EXAMPLE.replace("----- end 4321 -----", "----- end 99 -----")
    assert parse_anr_text(text).stats.mismatched_ends == 1
    text = ANR_EXAMPLE.replace("DALVIK THREADS (2):", "DALVIK THREADS (5):")
    assert parse_anr_text(text).stats.thread_count_mismatch == 1


def test_crlf_bom_and_gzip_read_the_same(tmp_path: Path) -> None:
    expected = parse_anr_text(ANR_EXAMPLE).processes
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(("\ufeff" + ANR_EXAMPLE).replace("\n", "\r\n").encode())
    assert parse_anr_file(crlf).processes == expected
    packed = tmp_path / "trace.gz"
    packed.write_bytes(gzip.compress(ANR_EXAMPLE.encode()))
    assert parse_anr_file(packed).processes == expected


def test_overlong_line_is_skipped_and_counted(tmp_path: Path) -> None:
    head, tail = ANR_EXAMPLE.split('"SyncWorker"')
    path = tmp_path / "long.txt"
    path.write_bytes(head.encode() + b"x" * 10_000_000 + b"\n" + ('"SyncWorker"' + tail).encode())
    anr = parse_anr_file(path)
    assert anr.stats.overlong_lines == 1
    assert [t.name for t in anr.processes[0].threads] == ["main", "SyncWorker"]
    assert anr.stats.lines == ANR_EXAMPLE.count("\n") + 1  # the long line counted as a line


def test_frames_per_thread_are_capped() -> None:
    frames = "".join(f"  at a.B.c{i}(B.java:{i})\n" for i in range(MAX_FRAMES_PER_THREAD + 10))
    text = f'----- pid 1 at 2019-05-02 10:11:12 -----\n"main" prio=5 tid=1 Runnable\n{frames}'
    anr = parse_anr_text(text + "----- end 1 -----\n")
    assert len(anr.processes[0].threads[0].frames) == MAX_FRAMES_PER_THREAD
    assert anr.stats.dropped_frames == 10


def test_file_without_process_section_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\nthis is not a trace\n")
    with pytest.raises(InputFileError, match="not an ANR trace file") as info:
        parse_anr_file(path)
    assert str(path) in str(info.value)


def test_binary_garbage_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "core.bin"
    path.write_bytes(np.random.default_rng(0).bytes(3 << 20))
    with pytest.raises(InputFileError, match="binary data") as info:
        parse_anr_file(path)
    assert str(path) in str(info.value)
    with pytest.raises(InputFileError, match="is a folder"):
        parse_anr_file(tmp_path)
    with pytest.raises(InputFileError, match="no such file"):
        parse_anr_file(tmp_path / "missing.txt")


# -- round trips -----------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    family=st.sampled_from(sorted(FAMILY_VARIANTS)),
    pick=st.integers(0, 3),
    kernel=st.booleans(),
    old=st.booleans(),
    arm32=st.booleans(),
    sf=st.booleans(),
)
def test_generated_files_round_trip(
    seed: int, family: str, pick: int, kernel: bool, old: bool, arm32: bool, sf: bool
) -> None:
    variant = FAMILY_VARIANTS[family][pick % len(FAMILY_VARIANTS[family])]
    text, truth = synth_anr(
        np.random.default_rng(seed),
        family,
        variant=variant,
        kernel_stacks=kernel,
        old_date=old,
        arm32=arm32,
        surfaceflinger=sf,
    )
    anr = parse_anr_text(text)
    assert anr.processes == truth.anr.processes
    assert (anr.watchdog, anr.goodbye) == (truth.anr.watchdog, truth.anr.goodbye)
    assert anr.stats.warnings() == {}
    assert all(p.time is not None for p in anr.processes)


_WORD = st.from_regex(r"[A-Za-z_$][\w$]{0,8}(\.[A-Za-z_$][\w$]{0,8}){0,3}", fullmatch=True)
_STATES = st.sampled_from(["Runnable", "Blocked", "Native", "Waiting", "TimedWaiting", "Sleeping"])
_SMALL = st.integers(0, 10**12)


@st.composite
def _frames(draw: st.DrawFn) -> Frame:
    kind = draw(st.sampled_from(["java", "native", "kernel"]))
    if kind == "java":
        where = draw(st.sampled_from(["Native method", "Unknown Source", "X.java:12", ""]))
        return Frame("java", draw(_WORD), where)
    if kind == "native":
        symbol = draw(st.from_regex(r"([\w:~<>*&]{1,20}(\+\d{1,4})?)?", fullmatch=True))
        path = "/" + draw(st.from_regex(r"[\w./-]{1,30}", fullmatch=True))
        return Frame("native", symbol, path, draw(st.from_regex(r"[0-9a-f]{16}", fullmatch=True)))
    return Frame(
        "kernel",
        draw(st.from_regex(r"[a-z_]{1,12}\+0x[0-9a-f]{1,3}/0x[0-9a-f]{3}", fullmatch=True)),
    )


@st.composite
def _threads(draw: st.DrawFn) -> ThreadDump:
    attached = draw(st.booleans())
    name = draw(st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=20))
    frames = draw(st.lists(_frames(), max_size=6))
    locks = [
        LockOp(
            draw(st.sampled_from(["waiting_to_lock", "locked", "waiting_on", "sleeping_on"])),
            draw(st.sampled_from(["", "0x0b1c2d3e", "0xabc"])),
            draw(st.from_regex(r"[\w.$<>]{1,20}", fullmatch=True)),
            draw(st.one_of(st.none(), st.integers(1, 200))),
            draw(st.integers(0, len(frames))),
        )
        for _ in range(draw(st.integers(0, 2)))
    ]
    locks = [lk._replace(type_name="") if not lk.address else lk for lk in locks]
    locks = [lk if lk.kind == "waiting_to_lock" else lk._replace(held_by=None) for lk in locks]
    locks.sort(key=lambda lk: lk.after_frame)
    if not attached:
        return ThreadDump(
            name, None, draw(_STATES), sys_tid=draw(_SMALL), frames=frames, locks=locks
        )
    return ThreadDump(
        name,
        draw(st.integers(1, 500)),
        draw(_STATES),
        daemon=draw(st.booleans()),
        prio=draw(st.one_of(st.none(), st.integers(1, 10))),
        sys_tid=draw(st.one_of(st.none(), _SMALL)),
        nice=draw(st.one_of(st.none(), st.integers(-20, 19))),
        cgrp=draw(st.one_of(st.none(), st.sampled_from(["top-app", "foreground", "system"]))),
        sched_state=draw(st.one_of(st.none(), st.sampled_from(list("RSDTZ")))),
        schedstat=draw(st.one_of(st.none(), st.tuples(_SMALL, _SMALL, _SMALL))),
        utm=draw(st.one_of(st.none(), _SMALL)),
        stm=draw(st.one_of(st.none(), _SMALL)),
        core=draw(st.one_of(st.none(), st.integers(0, 7))),
        hz=draw(st.one_of(st.none(), st.just(100))),
        frames=frames,
        locks=locks,
    )


@st.composite
def _anr_files(draw: st.DrawFn) -> AnrFile:
    procs = []
    n = draw(st.integers(1, 3))
    for i in range(n):
        threads = draw(st.lists(_threads(), max_size=4))
        stamp = draw(st.sampled_from(["2017-01-05 10:11:12", "2024-03-18 14:02:11.123456789+0800"]))
        procs.append(
            ProcessDump(
                draw(st.integers(1, 99999)),
                stamp,
                draw(st.one_of(st.none(), _WORD)),
                draw(st.one_of(st.none(), st.just(len(threads)))),
                threads,
                truncated=draw(st.booleans()) if i == n - 1 else False,
            )
        )
    watchdog = draw(st.one_of(st.none(), st.just("Blocked in handler on main thread (main)")))
    return AnrFile("<t>", procs, watchdog=watchdog, goodbye=draw(st.booleans()))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anr=_anr_files(), seed=st.one_of(st.none(), st.integers(0, 1000)))
def test_any_structure_round_trips_through_text(anr: AnrFile, seed: int | None) -> None:
    rng = None if seed is None else np.random.default_rng(seed)
    parsed = parse_anr_text(format_anr(anr, rng))
    assert parsed.processes == anr.processes
    assert (parsed.watchdog, parsed.goodbye) == (anr.watchdog, anr.goodbye)


# -- fuzzing ---------------------------------------------------------------------------


def _mutate(text: str, rng: np.random.Generator) -> bytes:
    lines = text.encode().split(b"\n")
    for _ in range(int(rng.integers(1, 8))):
        i = int(rng.integers(0, len(lines)))
        op = int(rng.integers(0, 7))
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[int(rng.integers(0, len(lines)))])
        elif op == 2:
            lines[i] = rng.bytes(int(rng.integers(0, 80)))
        elif op == 3 and lines[i]:
            j = int(rng.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + bytes([int(rng.integers(0, 256))]) + lines[i][j + 1 :]
        elif op == 4:
            lines = lines[:i]
        elif op == 5:
            lines[i] = lines[i].replace(b"thread", b"thread 99999999999999999999")
        else:
            lines[i] = lines[i][: int(rng.integers(0, len(lines[i]) + 1))]
        if not lines:
            lines = [b""]
    return b"\n".join(lines)


def _parse_or_user_error(path: Path) -> None:
    try:
        anr = parse_anr_file(path)
    except UserError:
        return
    summary = summarize(anr)  # the rest of the pipeline must cope with what parsed
    assert summary.family in ("wam", "lock_contention", "low_memory", "app_defect", "unknown")


def _fuzz(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    families = sorted(FAMILY_VARIANTS)
    text, _ = synth_anr(rng, families[seed % len(families)], noise_threads=2)
    path = tmp_path / f"fuzz{seed}.txt"
    data = _mutate(text, rng) if seed % 10 else rng.bytes(int(rng.integers(0, 3000)))
    path.write_bytes(data)
    _parse_or_user_error(path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(seed=st.integers(0, 2**31 - 1))
def test_fuzz_parses_or_raises_user_error(tmp_path: Path, seed: int) -> None:
    _fuzz(tmp_path, seed)


@pytest.mark.slow
def test_deep_fuzz_ten_thousand_inputs(tmp_path: Path) -> None:
    for seed in range(10_000):
        _fuzz(tmp_path, seed)


# -- format variants met in real files -------------------------------------------------


def test_state_is_the_word_after_tid_not_arts_trailing_notes() -> None:
    # ART's Thread::DumpState appends " (still starting up)" and " DisableFlipCount = N".
    text = ANR_EXAMPLE.replace(
        '"main" prio=5 tid=1 Blocked', '"main" prio=5 tid=1 Blocked (still starting up)'
    ).replace(
        '"SyncWorker" prio=5 tid=23 Native',
        '"SyncWorker" prio=5 tid=23 Native DisableFlipCount = 1',
    )
    threads = parse_anr_text(text).processes[0].threads
    assert [t.state for t in threads] == ["Blocked", "Native"]


def test_dalvik_threads_count_is_compared_with_attached_threads_only() -> None:
    # ART writes DALVIK THREADS (list size), then the "(not attached)" native threads.
    unattached = '"binder:4321_3" prio=5 (not attached)\n  | sysTid=4400 nice=0 cgrp=top-app\n\n'
    text = ANR_EXAMPLE.replace("----- end 4321 -----", "\n" + unattached + "----- end 4321 -----")
    anr = parse_anr_text(text)
    assert len(anr.processes[0].threads) == 3
    assert anr.stats.thread_count_mismatch == 0
    text = text.replace("DALVIK THREADS (2):", "DALVIK THREADS (3):")
    assert parse_anr_text(text).stats.thread_count_mismatch == 1


def test_art_and_debuggerd_remarks_are_not_unknown_lines() -> None:
    text = ANR_EXAMPLE.replace(
        "  at com.example.app.ui.MainActivity",
        "  (no managed stack frames)\n"
        "  native: (backtrace::Unwind failed for thread 4321: Thread has not responded)\n"
        "  NOTE: Function names and BuildId information is missing for some frames due\n"
        "  Unwind failed: tid = 4321: Error 3\n"
        "  at com.example.app.ui.MainActivity",
    )
    anr = parse_anr_text(text)
    assert anr.stats.warnings() == {}
    assert len(anr.processes[0].threads[0].frames) == 2


WCHAN_ONLY = """\
Subject: Input dispatching timed out (com.example.app/.Main is not responding)

----- dumping pid: 4321 at 313446151
libdebuggerd_client: unexpected registration response: 0

----- Waiting Channels: pid 4321 at 2024-11-13 19:48:09.980104540+0530 -----
Cmd line: com.example.app

sysTid=4321      state=S    do_freezer_trap
sysTid=4322      state=D    jbd2_log_wait_commit
sysTid=4323      futex_wait_queue_me
sysTid=4324      state=R    0

----- end 4321 -----
"""


def test_waiting_channels_only_dump_is_a_process_without_stacks() -> None:
    anr = parse_anr_text(WCHAN_ONLY)
    assert anr.subject is not None and anr.stacks_missing
    (proc,) = anr.processes
    assert (proc.pid, proc.name, proc.waiting_channels, proc.truncated) == (
        4321,
        "com.example.app",
        True,
        False,
    )
    got = [(t.name, t.sys_tid, t.sched_state, t.wchan) for t in proc.threads]
    assert got == [
        ("sysTid=4321", 4321, "S", "do_freezer_trap"),
        ("sysTid=4322", 4322, "D", "jbd2_log_wait_commit"),
        ("sysTid=4323", 4323, None, "futex_wait_queue_me"),
        ("sysTid=4324", 4324, "R", "0"),
    ]
    assert proc.threads_without_stack == 4 and anr.stats.warnings() == {}
    event = summarize(anr)
    assert event.stacks_missing and event.blocked_thread == "sysTid=4321"
    assert event.family == "unknown" and event.stack == ("wchan!do_freezer_trap",)


def test_waiting_channels_twin_of_a_dumped_process_is_skipped_wherever_it_is() -> None:
    wchan = WCHAN_ONLY.split("----- Waiting", 1)[1]
    before = "----- Waiting" + wchan + ANR_EXAMPLE
    after = ANR_EXAMPLE + "----- Waiting" + wchan
    for text in (before, after):
        anr = parse_anr_text(text)
        assert [p.waiting_channels for p in anr.processes] == [False]
        assert anr.processes == parse_anr_text(ANR_EXAMPLE).processes
        assert anr.stats.skipped_sections == 1 and not anr.stacks_missing


def test_threads_with_only_kernel_frames_have_no_stack() -> None:
    text = (
        "----- pid 7 at 2019-05-02 10:11:12 -----\nCmd line: com.example.app\n\n"
        '"main" prio=5 tid=1 Native\n  | sysTid=7 nice=0 cgrp=top-app\n'
        "  kernel: __switch_to+0x70/0x7c\n  kernel: f2fs_issue_flush+0x100/0x1a0\n\n"
        "----- end 7 -----\n"
    )
    anr = parse_anr_text(text)
    assert anr.stacks_missing and anr.processes[0].threads_without_stack == 1
    event = summarize(anr)
    assert event.stacks_missing and event.family == "wam"  # the kernel frames say so


XCRASH = """\
*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
Tombstone maker: 'xCrash 3.0.0'
Crash type: 'anr'
Start time: '2024-03-18T14:01:02.029+0800'
Crash time: '2024-03-18T14:02:11.123+0800'
App ID: 'com.example.app'
App version: '1.0'
ABI: 'arm64'
pid: 4321  >>> com.example.app <<<

--- --- --- --- --- --- --- --- --- --- --- --- --- --- --- ---
{body}
+++ +++ +++ +++ +++ +++ +++ +++ +++ +++ +++ +++ +++ +++ +++ +++

logcat:
--------- tail end of log main (/system/bin/logcat -b main -d -v threadtime -t 200 --pid 4321 *:D)
03-18 14:02:10.000  4321  4321 I art: "main" prio=5 tid=1 Runnable
03-18 14:02:10.001  4321  4321 I art:   at a.B.c(B.java:1)

open files:
    fd 0: /dev/null
    (number of FDs: 1)

memory info:
 System Summary (From: /proc/meminfo)
  MemTotal:        3855796 kB
-

foreground:
yes
"""


def _xcrash_body() -> str:
    lines = ANR_EXAMPLE.strip().split("\n")
    return "\n".join(lines[1:-1])  # without the "----- pid" and "----- end" lines


def test_xcrash_anr_tombstone_reads_its_thread_dump_only() -> None:
    anr = parse_anr_text(XCRASH.format(body=_xcrash_body()))
    assert anr.source == "xcrash_tombstone"
    plain = parse_anr_text(ANR_EXAMPLE.replace(".123456789+0800", ".123+0800"))
    assert anr.processes == plain.processes
    assert anr.stats.warnings() == {}


def test_xcrash_tombstone_without_cmd_line_takes_the_package_from_the_header() -> None:
    body = _xcrash_body().replace("Cmd line: com.example.app\n", "")
    text = XCRASH.format(body=body).replace(
        "pid: 4321  >>> com.example.app <<<", "pid: 4321, tid: 4321, name: main  >>> com.x.y <<<"
    )
    (proc,) = parse_anr_text(text).processes
    assert (proc.pid, proc.name, len(proc.threads)) == (4321, "com.x.y", 2)


def test_xcrash_tombstone_whose_dump_failed_is_an_event_without_stacks() -> None:
    # xc_trace.c writes this when it cannot find libart's symbols, then "+++ +++ +++"
    body = "Cmd line: com.example.app\nMode: ART DumpForSigQuit\nFailed to load symbols.\n"
    anr = parse_anr_text(XCRASH.format(body=body))
    assert anr.stacks_missing and anr.processes[0].threads == []
    event = summarize(anr)
    assert event.stacks_missing and event.family == "unknown" and event.blocked_thread == ""


def test_xcrash_tombstone_of_a_crash_is_refused_at_its_crash_type_line() -> None:
    text = XCRASH.format(body=_xcrash_body()).replace("Crash type: 'anr'", "Crash type: 'native'")
    with pytest.raises(InputFileError, match=r"<x>:3: .*'native'.*not an ANR") as info:
        parse_anr_text(text, name="<x>")
    assert info.value.line == 3


def test_debuggerd_crash_tombstone_is_refused_clearly() -> None:
    text = (
        "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n"
        "Build fingerprint: 'google/x/x:13/T/1:user/release-keys'\n"
        "pid: 1234, tid: 1250, name: RenderThread  >>> com.example.app <<<\n"
        "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0\n"
    )
    with pytest.raises(InputFileError, match="crash tombstone, not an ANR trace"):
        parse_anr_text(text)


def test_text_with_cr_line_ends_parses_like_lf() -> None:
    expected = parse_anr_text(ANR_EXAMPLE).processes
    for end in ("\r", "\r\n", "\r\r\n"):
        assert parse_anr_text(ANR_EXAMPLE.replace("\n", end)).processes == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), frozen=st.booleans(), n=st.integers(0, 40))
def test_generated_waiting_channels_dumps_round_trip(seed: int, frozen: bool, n: int) -> None:
    text, truth = synth_waiting_channels(np.random.default_rng(seed), n_threads=n, frozen=frozen)
    anr = parse_anr_text(text)
    assert anr.processes == truth.processes and anr.stacks_missing
    assert anr.stats.warnings() == {}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(sorted(XCRASH_VARIANTS)))
def test_generated_xcrash_tombstones_round_trip(seed: int, family: str) -> None:
    text, truth = synth_xcrash_tombstone(np.random.default_rng(seed), family)
    anr = parse_anr_text(text)
    assert anr.source == "xcrash_tombstone"
    assert anr.processes == truth.anr.processes
    assert anr.stats.warnings() == {}


def test_xcrash_tombstone_holding_a_copied_traces_section_reads_that_section() -> None:
    # xCrash's Java ANR handler (before Android 5) copies the app's section of
    # /data/anr/traces.txt, "----- pid" line included, between its separators.
    anr = parse_anr_text(XCRASH.format(body=ANR_EXAMPLE))
    assert anr.source == "xcrash_tombstone"
    assert anr.processes == parse_anr_text(ANR_EXAMPLE).processes  # its own date kept
    assert anr.stats.warnings() == {}
