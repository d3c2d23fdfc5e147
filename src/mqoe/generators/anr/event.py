"""One synthetic ANR event (:func:`synth_anr`): a scenario with noise threads, rendered
in Android's ANR trace format (``/data/anr/traces.txt``), and its ground truth
(:class:`SynthTruth`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mqoe.analysis.anr.model import AnrFile, ProcessDump
from mqoe.analysis.anr.render import format_anr
from mqoe.errors import UserError
from mqoe.generators.anr.scenarios import FAMILY_VARIANTS, VARIANT_WEIGHTS, _scenario
from mqoe.generators.anr.threads import _build_threads, _dump_time, _Gen, _resolve_locks
from mqoe.generators.anr.vocabulary import (
    _APP_NOISE,
    _SS_LOOPERS,
    _SS_MAIN,
    _T,
    IDLE_BINDER,
    LOOPER_IDLE,
    SERVICE_THREAD,
)

# Share of families in a generated fleet: WAM dominates, as in the study's findings.
FAMILY_WEIGHTS: dict[str, float] = {
    "wam": 0.45,
    "lock_contention": 0.2,
    "low_memory": 0.15,
    "app_defect": 0.2,
}


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
