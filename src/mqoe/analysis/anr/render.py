"""Rendering an :class:`~mqoe.analysis.anr.model.AnrFile` back to text, in the exact
format ART writes (:func:`format_anr`) or as an xCrash ANR tombstone
(:func:`format_xcrash`): the inverse of the parser, for round trips and generators."""

from __future__ import annotations

import numpy as np

from mqoe.analysis.anr.model import LOCK_TEXT, AnrFile, LockOp, ProcessDump, ThreadDump
from mqoe.analysis.anr.parse import _WATCHDOG

# -- rendering -------------------------------------------------------------------------


def format_anr(anr: AnrFile, rng: np.random.Generator | None = None) -> str:
    """The text of ``anr`` in the ANR trace format; :func:`parse_anr_text` reads it back.

    With ``rng``, the lines the parser does not keep (``obj=``, ``self=``, ``handle=``
    addresses, build lines) are filled with random values, as on a phone. Processes with
    ``waiting_channels`` are written as debuggerd's ``----- Waiting Channels`` sections.
    """
    out: list[str] = []
    if anr.subject is not None:
        out += [f"Subject: {anr.subject}", ""]
    for proc in anr.processes:
        if proc.waiting_channels:
            out += _wchan_lines(proc)
            continue
        out.append(f"----- pid {proc.pid} at {proc.time_text} -----")
        out += _dump_lines(proc, rng)
        if not proc.truncated:
            out += [f"----- end {proc.pid} -----", ""]
    if anr.watchdog is not None:
        out.append(f"{_WATCHDOG} {anr.watchdog}")
    if anr.goodbye:
        out.append("*** GOODBYE!")
    return "\n".join(out) + "\n"


def format_xcrash(anr: AnrFile, rng: np.random.Generator | None = None) -> str:
    """``anr``'s first process as an xCrash ANR tombstone (header, ART thread dump between
    ``--- --- ---`` and ``+++ +++ +++``, then logcat, open files and memory info that are
    not part of the dump); :func:`parse_anr_text` reads the process back. Its
    ``time_text`` must be ``YYYY-MM-DD HH:MM:SS[.mmm][+ZZZZ]``: it becomes the ISO
    ``Crash time`` xCrash writes."""
    if not anr.processes:
        raise ValueError("an xCrash tombstone holds one process")
    proc = anr.processes[0]
    name = proc.name
    when = proc.time_text.replace(" ", "T", 1)
    head = "*** " * 15 + "***"
    out = [
        head,
        "Tombstone maker: 'xCrash 2.4.9'",
        "Crash type: 'anr'",
        f"Start time: '{when}'",
        f"Crash time: '{when}'",
        f"App ID: '{name}'",
        "App version: '1.0'",
        "Rooted: 'No'",
        "API level: '29'",
        "ABI: 'arm64'",
        f"pid: {proc.pid}  >>> {name} <<<",
        "",
        "--- " * 15 + "---",
        *_dump_lines(proc, rng),
        "+++ " * 15 + "+++",
        "",
        "logcat:",
        f"--------- tail end of log main (logcat -b main -d -v threadtime --pid {proc.pid})",
        f'01-01 00:00:00.000 {proc.pid} {proc.pid} I art: "main" prio=5 tid=1 Runnable',
        f"01-01 00:00:00.001 {proc.pid} {proc.pid} I art:   at a.B.c(B.java:1)",
        f"01-01 00:00:00.002 {proc.pid} {proc.pid} I art: ----- pid 1 at 2019-01-01 00:00:00 -----",
        "",
        "open files:",
        "    fd 0: /dev/null",
        "    (number of FDs: 1)",
        "",
        "memory info:",
        " System Summary (From: /proc/meminfo)",
        "  MemTotal:        3855796 kB",
        "-",
        "",
    ]
    return "\n".join(out) + "\n"


def _dump_lines(proc: ProcessDump, rng: np.random.Generator | None) -> list[str]:
    """A process dump's lines after its ``----- pid`` line, up to its threads' end."""
    out: list[str] = []
    if proc.cmd_line is not None:
        out.append(f"Cmd line: {proc.cmd_line}")
    if rng is not None:
        out += [
            "Build fingerprint: 'mqoe/synth/phone:9/PKQ1.180904.001/V10.2.2.0:user/release'",
            "ABI: 'arm64'",
            "Build type: optimized",
            f"Zygote loaded classes={int(rng.integers(4000, 9000))} post zygote classes=512",
        ]
    out.append("")
    if proc.declared_threads is not None:
        out.append(f"DALVIK THREADS ({proc.declared_threads}):")
    for thread in proc.threads:
        out += _thread_lines(thread, rng)
        out.append("")
    return out


def _wchan_lines(proc: ProcessDump) -> list[str]:
    """debuggerd_client's ``get_wchan_data`` layout (``state=`` since Android 14)."""
    out = [f"----- Waiting Channels: pid {proc.pid} at {proc.time_text} -----"]
    if proc.cmd_line is not None:
        out.append(f"Cmd line: {proc.cmd_line}")
    out.append("")
    for t in proc.threads:
        line = f"sysTid={t.sys_tid:<10d}"
        if t.sched_state is not None:
            line += f"state={t.sched_state}    "
        out.append((line + (t.wchan or "")).rstrip())
    out.append("")
    if not proc.truncated:
        out += [f"----- end {proc.pid} -----", ""]
    return out


def _hex(rng: np.random.Generator | None, digits: int) -> str:
    value = 0 if rng is None else int(rng.integers(0, 1 << (4 * digits - 1)))
    return f"0x{value:0{digits}x}"


def _thread_lines(t: ThreadDump, rng: np.random.Generator | None) -> list[str]:
    head = f'"{t.name}"' + (" daemon" if t.daemon else "")
    head += f" prio={t.prio}" if t.prio is not None else ""
    if t.tid is not None:
        head += f" tid={t.tid}"
    elif t.sys_tid is not None:
        head += f" sysTid={t.sys_tid}"
    head += f" {t.state}" if t.state else ""
    lines = [head]
    if t.tid is not None:
        lines.append(
            f'  | group="main" sCount=1 ucsCount=0 flags=1 obj={_hex(rng, 8)} self={_hex(rng, 16)}'
        )
    second = [f"sysTid={t.sys_tid}" if t.sys_tid is not None and t.tid is not None else ""]
    second += [f"nice={t.nice}" if t.nice is not None else ""]
    second += [f"cgrp={t.cgrp}" if t.cgrp is not None else ""]
    if any(second):
        lines.append(
            "  | " + " ".join(p for p in second if p) + f" sched=0/0 handle={_hex(rng, 10)}"
        )
    third = [f"state={t.sched_state}" if t.sched_state is not None else ""]
    if t.schedstat is not None:
        third.append("schedstat=( {} {} {} )".format(*t.schedstat))
    for key, value in (("utm", t.utm), ("stm", t.stm), ("core", t.core), ("HZ", t.hz)):
        third.append(f"{key}={value}" if value is not None else "")
    if any(third):
        lines.append("  | " + " ".join(p for p in third if p))
    locks = sorted(t.locks, key=lambda lock: lock.after_frame)
    k = 0
    native = 0
    for i in range(len(t.frames) + 1):
        while k < len(locks) and locks[k].after_frame <= i:
            lines.append("  " + _lock_line(locks[k]))
            k += 1
        if i == len(t.frames):
            break
        frame = t.frames[i]
        if frame.kind == "java":
            lines.append(f"  at {frame.function}({frame.location})")
        elif frame.kind == "native":
            symbol = f" ({frame.function})" if frame.function else ""
            prefix = "native: " if t.tid is not None else ""
            lines.append(f"  {prefix}#{native:02d} pc {frame.pc}  {frame.location}{symbol}")
            native += 1
        else:
            lines.append(f"  kernel: {frame.function}")
    return lines


def _lock_line(lock: LockOp) -> str:
    target = f"<{lock.address}> (a {lock.type_name})" if lock.address else "an unknown object"
    held = f" held by thread {lock.held_by}" if lock.held_by is not None else ""
    return f"- {LOCK_TEXT[lock.kind]} {target}{held}"
