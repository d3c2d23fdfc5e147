"""The other inputs the ANR analyser reads: an event's app process as an xCrash ANR
tombstone, a dump whose stack dump failed (waiting channels only, optionally of a frozen
process) and debuggerd's native-only backtrace of an app."""

from __future__ import annotations

import dataclasses

import numpy as np

from mqoe.analysis.anr.model import AnrFile, ProcessDump, ThreadDump
from mqoe.analysis.anr.render import format_anr, format_xcrash
from mqoe.errors import UserError
from mqoe.generators.anr.event import SynthTruth, synth_anr
from mqoe.generators.anr.scenarios import FAMILY_VARIANTS
from mqoe.generators.anr.threads import _dump_time, _Gen
from mqoe.generators.anr.vocabulary import _NATIVE_NAMES, _NATIVE_STACKS

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
    (:func:`~mqoe.analysis.anr.render.format_xcrash`). The truth's ``anr`` holds that one
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
