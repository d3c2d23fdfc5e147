"""The memory-pressure sources of the Coal Not Diamonds study (CoNEXT 2022): cached
background apps and the pressure generator.

* :class:`CachedApp` — an app the user opened before and left. Its process sits at a
  cached oom_score_adj (900–999) holding anonymous memory and a file working set; it
  does nothing else (optionally a rare wake-up that touches its pages). lmkd kills these
  first, and their number drives ActivityManager's trim signals.
* :func:`boot_background` — the cached processes a phone has after boot and normal use;
  :func:`open_apps` — the study's *organic* pressure: N ordinary apps opened before the
  video (8 gave Moderate on the 1 GB phone).
* :class:`PressureGenerator` — the study's generator: a service at nice −17 that allocates
  touched anonymous memory in 5 MiB chunks until the trim signal it waits for arrives,
  then holds that memory (touching it now and then so it stays resident).

Whenever apps are added, every cached process gets a fresh, distinct oom_score_adj in
LRU order (the newest 900, older ones higher), as ActivityManager re-ranks its LRU list
when an app is opened (a simplification of ProcessList's cached-adj slots).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

import numpy as np

from mqoe.device.cpu import Fair, Thread
from mqoe.device.lmk import (
    TRIM_NONE,
    TRIM_RUNNING_CRITICAL,
    TRIM_RUNNING_LOW,
    TRIM_RUNNING_MODERATE,
)
from mqoe.device.phone import Phone
from mqoe.device.process import (
    CACHED_APP_MAX_ADJ,
    CACHED_APP_MIN_ADJ,
    PERCEPTIBLE_APP_ADJ,
    Process,
)
from mqoe.engine import Event, ms, seconds
from mqoe.engine import Process as EngineProcess
from mqoe.engine.rounding import round_half_even

MB_PAGES: Final = 256  # 4 KB pages per MiB

# PressureGenerator targets: the onTrimMemory level it allocates until (the study's states).
TARGET_LEVELS: Final = {
    "normal": TRIM_NONE,
    "moderate": TRIM_RUNNING_MODERATE,
    "low": TRIM_RUNNING_LOW,
    "critical": TRIM_RUNNING_CRITICAL,
}

# Android 10 ProcessList: consecutive cached slots are CACHED_APP_IMPORTANCE_LEVELS × 2 = 10
# adj apart; with more processes than slots the step shrinks so every process keeps a
# distinct adj (ActivityManager would share slots instead).
_CACHED_ADJ_STEP: Final = 10
# An app's memory grows a page fault / malloc arena at a time, not in one request; 1 MiB
# steps keep allocation incremental (a single huge request would wait for all its pages
# to be free at once) without an event per page.
_ALLOC_STEP_PAGES: Final = MB_PAGES


@dataclass(frozen=True, slots=True)
class AppCatalogue:
    """Names and size ranges (MiB, uniform) from which background apps are drawn."""

    names: tuple[str, ...]
    anon_mb: tuple[float, float]  # (low, high) resident anonymous memory
    file_mb: tuple[float, float]  # (low, high) file-backed working set (code, resources)
    # Apps whose process hosts a started (sticky) service or a provider other apps keep
    # asking for: ActivityManager restarts it after lmkd kills it (ServiceRestarts).
    sticky: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError("a catalogue needs at least one app name")
        for label, (low, high) in (("anon_mb", self.anon_mb), ("file_mb", self.file_mb)):
            if not 0 <= low <= high:
                raise ValueError(f"{label} must be a range 0 ≤ low ≤ high, got {(low, high)}")
        if not self.sticky <= set(self.names):
            raise ValueError(
                f"sticky apps not in the catalogue: {sorted(self.sticky - set(self.names))}"
            )


# Calibration constants, not published values: the cached/empty processes of a freshly
# booted, lightly used Go phone are system and GMS helpers and small apps; their PSS in
# `dumpsys meminfo` is mostly 5–30 MB. (The always-running system processes are
# separate: mqoe.apps.system.)
BOOT_APPS: Final = AppCatalogue(
    names=(
        "com.android.providers.calendar",
        "com.android.deskclock",
        "com.google.android.gms.unstable",
        "com.android.settings",
        "com.android.documentsui",
        "com.google.android.partnersetup",
        "com.android.printspooler",
        "com.android.externalstorage",
        "com.google.android.configupdater",
        "com.android.messaging",
        "com.android.dialer",
        "com.google.android.apps.photosgo",
    ),
    anon_mb=(6.0, 25.0),
    file_mb=(5.0, 18.0),
    # Sync adapters, alarms, push and provider hosts: started services or providers that
    # the system and GMS keep binding to (calibration: which of these restart is a guess
    # from their manifests — SyncService, AlarmService, GCM receivers, ContentProviders).
    sticky=frozenset(
        {
            "com.android.providers.calendar",
            "com.android.deskclock",
            "com.google.android.gms.unstable",
            "com.android.messaging",
            "com.google.android.configupdater",
            "com.google.android.partnersetup",
        }
    ),
)

# Calibration constants: ordinary user apps (browser, messaging, social, maps) are larger
# than the boot-time helpers — Go-edition apps keep PSS around 50–120 MB while used; once
# cached they hold most of it. Not yet fitted to the memory-pressure study's "8 apps gave
# Moderate on the Nokia 1": that also depends on the system processes' baseline, which a
# scenario adds.
USER_APPS: Final = AppCatalogue(
    names=(
        "com.android.chrome",
        "com.whatsapp",
        "com.facebook.lite",
        "com.google.android.apps.mapslite",
        "com.google.android.gm.lite",
        "com.instagram.lite",
        "com.google.android.apps.youtube.mango",
        "com.spotify.lite",
        "com.twitter.android.lite",
        "com.google.android.apps.searchlite",
        "com.android.camera2",
        "com.google.android.apps.nbu.files",
    ),
    anon_mb=(30.0, 70.0),
    file_mb=(15.0, 40.0),
    # Messaging, social and music apps keep push/sync/playback services (calibration).
    sticky=frozenset(
        {
            "com.whatsapp",
            "com.facebook.lite",
            "com.google.android.gm.lite",
            "com.spotify.lite",
        }
    ),
)


class CachedApp:
    """An app opened before and left: a cached process holding anon and file pages.

    Its thread allocates ``anon_mb`` of anonymous memory and a ``file_mb`` file working
    set through the memory model (``ready`` fires when both are in), then the app idles.
    With ``wake_interval_s`` it wakes that often (a job, an alarm) and touches
    ``wake_touch_fraction`` of its pages — evicted ones fault back in. A kill by lmkd
    stops it for good.
    """

    def __init__(
        self,
        phone: Phone,
        name: str,
        *,
        anon_mb: float,
        file_mb: float,
        adj: int = CACHED_APP_MIN_ADJ,
        wake_interval_s: float | None = None,
        wake_touch_fraction: float = 0.05,  # calibration: a job touches a little state
    ) -> None:
        if anon_mb < 0 or file_mb < 0:
            raise ValueError("anon_mb and file_mb must not be negative")
        if wake_interval_s is not None and not wake_interval_s > 0:
            raise ValueError(f"wake_interval_s must be positive, got {wake_interval_s}")
        if not 0 <= wake_touch_fraction <= 1:
            raise ValueError(f"wake_touch_fraction must be in 0..1, got {wake_touch_fraction}")
        self.phone = phone
        self.name = name
        self.anon_pages = round(anon_mb * MB_PAGES)
        self.file_pages = round(file_mb * MB_PAGES)
        self.wake_interval_s = wake_interval_s
        self.wake_touch_fraction = wake_touch_fraction
        env = phone.env
        self.process: Process = phone.processes.spawn(name, adj, env.now)
        self.thread: Thread = phone.cpu.thread(name, Fair(0), process=name)
        phone.processes.add_threads(self.process, [self.thread])
        self.ready: Event = env.event()  # memory allocated (or the app died first)
        self.wakeups = 0
        self.process.on_kill.append(self._on_kill)
        self._proc: EngineProcess = env.process(self._run(), name)

    @property
    def alive(self) -> bool:
        return self.process.alive

    def _on_kill(self, _: Process) -> None:
        self._proc.stop()
        if not self.ready.triggered:
            self.ready.succeed(False)

    def _run(self) -> Generator[Event, object, None]:
        memory, process, thread = self.phone.memory, self.process, self.thread
        for total, kind in ((self.file_pages, "file"), (self.anon_pages, "anon")):
            for start in range(0, total, _ALLOC_STEP_PAGES):
                step = min(_ALLOC_STEP_PAGES, total - start)
                yield from memory.allocate(process, thread, step, kind)
        if not self.ready.triggered:
            self.ready.succeed(True)
        if self.wake_interval_s is None:
            return
        period = seconds(self.wake_interval_s)
        while True:
            yield self.phone.env.timeout(period)
            share = self.wake_touch_fraction
            file_pages = round_half_even(process.file_ws_pages * share)
            anon_pages = round_half_even((process.anon_pages + process.anon_swapped) * share)
            yield from memory.touch(process, thread, file_pages, anon_pages)
            self.wakeups += 1


def boot_background(
    phone: Phone, n: int, rng: np.random.Generator, catalogue: AppCatalogue = BOOT_APPS
) -> list[CachedApp]:
    """The ``n`` cached processes of a phone after boot and normal use (memory-pressure study).

    Sizes are drawn uniformly from ``catalogue``'s ranges; names cycle through its list
    in a random order. Returns the apps newest first (lowest adj first).
    """
    return _launch(phone, n, rng, catalogue)


def open_apps(
    phone: Phone, n: int, rng: np.random.Generator, catalogue: AppCatalogue = USER_APPS
) -> list[CachedApp]:
    """Organic pressure (memory-pressure study): the user opens ``n`` ordinary apps, one
    after another, before the video; each ends up cached, more recent than what was cached
    before.

    The launches themselves (their CPU and storage reads) are not modelled: the apps
    start at the current instant holding their memory. Returns them newest first.
    """
    return _launch(phone, n, rng, catalogue)


def _launch(
    phone: Phone, n: int, rng: np.random.Generator, catalogue: AppCatalogue
) -> list[CachedApp]:
    if n < 0:
        raise ValueError(f"n must not be negative, got {n}")
    names = catalogue.names
    order = rng.permutation(len(names))
    apps: list[CachedApp] = []
    for i in range(n):
        base = names[int(order[i % len(names)])]
        name = base if i < len(names) else f"{base}:{i // len(names)}"  # own name per copy
        app = CachedApp(
            phone,
            name,
            anon_mb=float(rng.uniform(*catalogue.anon_mb)),
            file_mb=float(rng.uniform(*catalogue.file_mb)),
        )
        if base in catalogue.sticky:
            ServiceRestarts.of(phone).watch(app)
        apps.append(app)
    newest_first = apps[::-1]  # opened in list order: the last one is the most recent
    rank_cached(phone, [app.process for app in newest_first])
    return newest_first


def rank_cached(phone: Phone, newest: Sequence[Process] = ()) -> None:
    """Give every alive cached process a distinct adj in LRU order: ``newest`` first (in
    the given order), then the others as they were ranked (lower adj = more recent)."""
    fresh = set(map(id, newest))
    others = sorted(
        (p for p in phone.processes.alive if p.cached and id(p) not in fresh),
        key=lambda p: (p.oom_score_adj, -p.pid),
    )
    ranked = [p for p in newest if p.alive] + others
    if not ranked:
        return
    span = CACHED_APP_MAX_ADJ - CACHED_APP_MIN_ADJ
    step = min(_CACHED_ADJ_STEP, span // max(1, len(ranked) - 1))
    if step == 0:
        raise ValueError(f"{len(ranked)} cached processes do not fit distinct adj 900–999")
    for rank, process in enumerate(ranked):
        adj = CACHED_APP_MIN_ADJ + rank * step
        if process.oom_score_adj != adj:
            phone.processes.set_adj(process, adj)


class PressureGenerator:
    """The memory-pressure study's pressure generator: allocate until the target trim level, hold.

    A service process at ``adj`` (perceptible) with one thread at nice ``nice`` allocates
    ``chunk_mb`` of anonymous memory every ``interval_ms`` and touches it (first-touch
    page faults cost ``fault_cycles_per_page`` on its thread), until the trim level it
    hears on ``phone.trims.listeners`` reaches ``target`` (``"normal"`` allocates
    nothing). Then it holds: every ``hold_touch_s`` it touches all its memory, so swapped
    pages come back and its memory stays resident (None: it never touches it again and
    kswapd may swap it out). It does not resume allocating if the level later falls.
    Call ``phone.trims.arm()`` first, or no trim ever arrives.

    ``reached_ns`` is when the target level arrived (-1 before); ``done`` fires once
    allocation has stopped — at the target (value True; a chunk in flight when the signal
    arrives completes first) or when lmkd kills the generator first (value False);
    ``allocated_pages`` never changes after ``done``.
    """

    def __init__(
        self,
        phone: Phone,
        target: str,
        *,
        chunk_mb: float = 5.0,  # the study's 5 MiB chunks
        interval_ms: float = 50.0,  # calibration: the study does not give the pace
        hold_touch_s: float | None = None,  # the study's "holds it": None = never used again
        fault_cycles_per_page: float = 1_500.0,  # calibration: fault + zeroing ≈ 1.5 µs/A53 GHz
        adj: int = PERCEPTIBLE_APP_ADJ,  # a started service the user knows of
        nice: int = -17,  # the study's generator service runs at nice −17
        name: str = "memory-pressure",
        zram_ratio: float = 0.0,  # its data's compressibility (0: the profile's ratio)
    ) -> None:
        if target not in TARGET_LEVELS:
            raise ValueError(f"target must be one of {', '.join(TARGET_LEVELS)}, got {target!r}")
        if not chunk_mb > 0 or not interval_ms >= 0:
            raise ValueError("chunk_mb must be positive and interval_ms not negative")
        if hold_touch_s is not None and not hold_touch_s > 0:
            raise ValueError(f"hold_touch_s must be positive (or None), got {hold_touch_s}")
        self.phone = phone
        self.target = target
        self.target_level = TARGET_LEVELS[target]
        self.chunk_pages = round(chunk_mb * MB_PAGES)
        self.interval_ns = ms(interval_ms)
        self.hold_touch_ns = None if hold_touch_s is None else seconds(hold_touch_s)
        self.fault_cycles_per_page = fault_cycles_per_page
        env = phone.env
        self.process: Process = phone.processes.spawn(name, adj, env.now)
        self.process.zram_ratio = zram_ratio
        self.thread: Thread = phone.cpu.thread(name, Fair(nice), process=name)
        phone.processes.add_threads(self.process, [self.thread])
        self.allocated_pages = 0
        self.reached_ns = -1
        self.killed_ns = -1
        self.done: Event = env.event()
        self._allocating = False
        phone.trims.listeners.append(self._on_trim)
        self.process.on_kill.append(self._on_kill)
        self._on_trim(phone.trims.level)  # "normal" (or an already reached level) at once
        self._proc: EngineProcess = env.process(self._run(), name)

    @property
    def reached(self) -> bool:
        return self.reached_ns >= 0

    def _on_trim(self, level: int) -> None:
        if self.reached or level < self.target_level or not self.process.alive:
            return
        self.reached_ns = self.phone.env.now
        if not self._allocating:
            self._finish(True)

    def _on_kill(self, _: Process) -> None:
        self.killed_ns = self.phone.env.now
        self._proc.stop()
        self._finish(False)

    def _finish(self, reached: bool) -> None:
        if not self.done.triggered:
            self.done.succeed(reached)

    def _run(self) -> Generator[Event, object, None]:
        env, cpu, memory = self.phone.env, self.phone.cpu, self.phone.memory
        process, thread, chunk = self.process, self.thread, self.chunk_pages
        while not self.reached:
            self._allocating = True
            yield from memory.allocate(process, thread, chunk)
            self.allocated_pages += chunk
            yield cpu.run(thread, chunk * self.fault_cycles_per_page)
            yield from memory.touch(process, thread, 0, anon_pages=chunk)
            self._allocating = False
            if self.reached:
                break
            yield env.timeout(self.interval_ns)
        self._finish(True)
        hold_touch_ns = self.hold_touch_ns
        if not self.allocated_pages or hold_touch_ns is None:
            return  # "normal" holds nothing; or the memory is held without being used
        while True:
            yield env.timeout(hold_touch_ns)
            yield from memory.touch(
                process, thread, 0, anon_pages=process.anon_pages + process.anon_swapped
            )


class ServiceRestarts:
    """ActivityManager's restart of killed processes that host a started service
    (ActiveServices.scheduleServiceRestartLocked, Android 10): the first restart comes
    SERVICE_RESTART_DURATION (1 s) after the kill; a service killed again within
    SERVICE_RESET_RUN_DURATION (60 s) of its restart waits SERVICE_RESTART_DURATION_FACTOR
    (4) times longer each time; restarts of different services are spaced at least
    SERVICE_MIN_RESTART_TIME_BETWEEN (10 s) apart. A restart is a new process (zygote
    fork) that loads its code and state again through the memory model, then becomes
    the newest cached process. On a phone short of memory this is the kill–restart
    churn that keeps reclaim and storage reads going after lmkd has killed.
    """

    RESTART_NS: ClassVar[int] = seconds(1)
    RESET_RUN_NS: ClassVar[int] = seconds(60)
    FACTOR: ClassVar[int] = 4
    MIN_BETWEEN_NS: ClassVar[int] = seconds(10)

    def __init__(self, phone: Phone) -> None:
        self.phone = phone
        self.restarted: list[tuple[int, CachedApp]] = []  # (time ns, the new app)
        self._next_free_ns = 0  # no restart before this (MIN_BETWEEN after the last)
        self._delay_ns: dict[str, int] = {}  # per service name: its current backoff
        self._restarted_ns: dict[str, int] = {}

    @classmethod
    def of(cls, phone: Phone) -> ServiceRestarts:
        """The phone's one restart scheduler (ActivityManager has one)."""
        existing = phone.framework.get(cls.__name__)
        if isinstance(existing, ServiceRestarts):
            return existing
        created = cls(phone)
        phone.framework[cls.__name__] = created
        return created

    def watch(self, app: CachedApp) -> None:
        app.process.on_kill.append(lambda _: self._killed(app))

    def _killed(self, app: CachedApp) -> None:
        now = self.phone.env.now
        name = app.name
        delay = self._delay_ns.get(name, self.RESTART_NS)
        if now - self._restarted_ns.get(name, -self.RESET_RUN_NS) < self.RESET_RUN_NS:
            delay *= self.FACTOR  # died again soon after its restart: back off
        else:
            delay = self.RESTART_NS
        self._delay_ns[name] = delay
        at = max(now + delay, self._next_free_ns)
        self._next_free_ns = at + self.MIN_BETWEEN_NS
        sizes = (app.anon_pages / MB_PAGES, app.file_pages / MB_PAGES)
        self.phone.env.schedule(at - now, lambda _: self._restart(name, *sizes))

    def _restart(self, name: str, anon_mb: float, file_mb: float) -> None:
        self._restarted_ns[name] = self.phone.env.now
        app = CachedApp(self.phone, name, anon_mb=anon_mb, file_mb=file_mb)
        self.restarted.append((self.phone.env.now, app))
        rank_cached(self.phone, [app.process])
        self.watch(app)
