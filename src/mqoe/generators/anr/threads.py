"""Turning thread templates into :class:`~mqoe.analysis.anr.model.ThreadDump` values:
the random details of one file (pids, tids, addresses, pcs, line numbers, CPU times,
dates) and the symbolic locks resolved to addresses and ``held by`` tids."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from mqoe.analysis.anr.model import Frame, LockOp, ThreadDump
from mqoe.generators.anr.vocabulary import _LIBS, _T

_CPU_TICKS = {"idle": (0, 9), "low": (11, 95), "mid": (110, 950), "high": (1100, 6000)}
_CPU_ORDER = ("idle", "low", "mid", "high")


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
