"""ActivityManager's app caching (GPU-buffer study): launches, the LRU cached-app list, importance.

An app the user leaves is paused and kept: it trims its memory to its background size
(anon and GPU buffers, :class:`~mqoe.apps.catalog.AppSpec`'s ``bg_*``) and enters the
head of the **cached-app list** (at most ``max_cached``, 8 in the GPU-buffer study; the tail beyond
is killed by ActivityManager itself). Each cached app's importance — its LRU distance —
becomes its oom_score_adj (900 for the most recent, +10 per position), which the
low-memory killer reads. Launching a cached app is a **resume** (restart its activity,
relayout, touch its working set, grow back to the foreground size); launching a killed
or never-run app is a **start** (zygote fork, read code and resources from storage,
allocate, initialise). Launch latency = time until the app has its foreground memory,
its GPU buffers usable (decompressed first if they were compressed) and its first frame's
CPU work done.

Every list change is handed to the GPU module's hook (:meth:`Gpu.set_cached`) when one is
installed. While in the foreground an app uses the CPU and its memory in 100 ms ticks
and issues one GPU operation per tick; apps marked ``bg_gpu_work`` keep issuing one a
second while cached (deferred under a compressing policy).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Final

from mqoe.apps.catalog import CONTENT_CLASSES, AppCatalog, AppSpec
from mqoe.device.cpu import Fair, Thread
from mqoe.device.gpu import Gpu, pages_of
from mqoe.device.phone import Phone
from mqoe.device.process import CACHED_APP_MIN_ADJ, FOREGROUND_APP_ADJ, Process
from mqoe.engine import Event, ms, seconds
from mqoe.engine import Process as EngineProcess
from mqoe.engine.rounding import round_half_even

MAX_CACHED: Final = 8  # GPU-buffer study: the framework keeps at most 8 cached apps
# ProcessList: consecutive cached slots 10 adj apart (Android 7+ scale)
_CACHED_ADJ_STEP: Final = 10
_TICK_NS: Final = ms(100)  # foreground use is simulated in 100 ms steps
_TICK_TOUCH_SHARE: Final = 0.02  # calibration: a tick of use touches 2% of the working set
_BG_GPU_PERIOD_NS: Final = seconds(1)  # a background app with GPU work issues an op each second
_BG_GPU_OP_MCYCLES: Final = 2.0  # calibration: the CPU side of one small GPU submission
_ALLOC_STEP_PAGES: Final = 256  # grow memory a MiB at a time (page faults, malloc arenas)


@dataclass(frozen=True, slots=True)
class Launch:
    """One launch: ``kind`` is ``start`` or ``resume``; latency until usable."""

    time_ns: int
    app: str
    kind: str
    latency_ns: int
    decompressed_pages: int


@dataclass(frozen=True, slots=True)
class AmKill:
    time_ns: int
    app: str
    reason: str


class RunningApp:
    """One process of a catalogue app: its main thread and memory sizes in pages."""

    def __init__(self, phone: Phone, spec: AppSpec, gpu: Gpu | None) -> None:
        self.phone = phone
        self.spec = spec
        self.gpu = gpu
        env = phone.env
        self.process: Process = phone.processes.spawn(spec.name, FOREGROUND_APP_ADJ, env.now)
        self.thread: Thread = phone.cpu.thread(spec.name, Fair(0), process=spec.name)
        phone.processes.add_threads(self.process, [self.thread])
        if gpu is not None:
            mix = spec.content
            gpu.register(self.process, [getattr(mix, c) for c in CONTENT_CLASSES])
        self._mode = "launch"
        self._loop: EngineProcess | None = None
        self._changed: Event | None = None  # the idle loop waits on this for a new mode
        self._idle: Event | None = None  # set while the main thread does a tick's work
        self.process.on_kill.append(lambda _: self._release())

    @property
    def alive(self) -> bool:
        return self.process.alive

    def trim(self, anon_mb: float, gpu_mb: float) -> None:
        """Free anon memory and GPU buffers above the given sizes (no waiting)."""
        memory, process = self.phone.memory, self.process
        have = process.anon_pages + process.anon_swapped
        anon_target = pages_of(anon_mb)
        if have > anon_target:
            memory.free(process, have - anon_target)
        gpu_target = pages_of(gpu_mb)
        if self.gpu is not None:
            if process.pid in self.gpu.apps:
                self.gpu.shrink(process, gpu_target)
        elif process.gpu_pages > gpu_target:
            memory.free(process, process.gpu_pages - gpu_target, "gpu")

    def grow(self, anon_mb: float, gpu_mb: float) -> Generator[Event, object, None]:
        """Grow (or trim) anon memory and GPU buffers to the given sizes."""
        self.trim(anon_mb, gpu_mb)
        memory, process, thread = self.phone.memory, self.process, self.thread
        anon_target = pages_of(anon_mb)
        while process.alive and process.anon_pages + process.anon_swapped < anon_target:
            step = min(_ALLOC_STEP_PAGES, anon_target - process.anon_pages - process.anon_swapped)
            yield from memory.allocate(process, thread, step)
        gpu_target = pages_of(gpu_mb)
        if self.gpu is not None:
            yield from self.gpu.resize(process, thread, gpu_target)
        elif gpu_target > process.gpu_pages:
            yield from memory.allocate(process, thread, gpu_target - process.gpu_pages, "gpu")

    # -- the main thread's life between launches ------------------------------------------
    def set_mode(self, mode: str) -> None:
        """``fg`` (used by the user), ``bg`` (cached), ``launch`` (a launch owns the main
        thread) or ``off`` (quiet). The loop picks the change up after its current work."""
        self._mode = mode
        if self._loop is None and self.process.alive:
            self._loop = self.phone.env.process(self._run(), self.spec.name)
        changed = self._changed
        if changed is not None and not changed.triggered:
            changed.succeed()

    def acquire(self) -> Generator[Event, object, None]:
        """A launch takes the main thread: wait for the tick in progress to finish."""
        self.set_mode("launch")
        while self._idle is not None and self.process.alive:
            yield self._idle

    def _run(self) -> Generator[Event, object, None]:
        env, cpu, memory = self.phone.env, self.phone.cpu, self.phone.memory
        process, thread, gpu = self.process, self.thread, self.gpu
        fg_work = self.spec.fg_mcycles_per_s * 1e6 * _TICK_NS / 1e9
        while process.alive:
            mode = self._mode
            if mode == "bg" and self.spec.bg_gpu_work:
                yield env.timeout(_BG_GPU_PERIOD_NS)
                if self._mode != "bg" or not process.alive:
                    continue
                if gpu is None or gpu.submit(process):
                    self._idle = env.event()
                    yield cpu.run(thread, _BG_GPU_OP_MCYCLES * 1e6)
                    self._release()
            elif mode == "fg":
                self._idle = env.event()
                yield cpu.run(thread, fg_work)
                file_pages = round_half_even(process.file_ws_pages * _TICK_TOUCH_SHARE)
                anon = round_half_even(
                    (process.anon_pages + process.anon_swapped) * _TICK_TOUCH_SHARE
                )
                yield from memory.touch(process, thread, file_pages, anon)
                if gpu is not None:
                    gpu.submit(process)
                self._release()
                yield env.timeout(_TICK_NS)
            else:
                self._changed = env.event()
                yield self._changed
                self._changed = None

    def work(self, cycles: float) -> Generator[Event, object, None]:
        """CPU work on the main thread (nothing once the process is dead)."""
        if self.process.alive:
            yield self.phone.cpu.run(self.thread, cycles)

    def _release(self) -> None:
        idle, self._idle = self._idle, None
        if idle is not None:
            idle.succeed()


class ActivityManager:
    """Launches apps of ``catalog`` and keeps the LRU cached-app list (MRU first)."""

    def __init__(
        self,
        phone: Phone,
        catalog: AppCatalog,
        *,
        max_cached: int = MAX_CACHED,
        gpu: Gpu | None = None,
    ) -> None:
        if max_cached < 0:
            raise ValueError(f"max_cached must not be negative, got {max_cached}")
        self.phone = phone
        self.catalog = catalog
        self.max_cached = max_cached
        self.gpu = gpu
        self.foreground: RunningApp | None = None
        self.cached: list[RunningApp] = []  # MRU first
        self.launches: list[Launch] = []
        self.am_kills: list[AmKill] = []
        self.lmk_killed: list[tuple[int, str]] = []  # (time, app) of cached/fg apps lmkd killed

    def launch(self, name: str) -> Generator[Event, object, Launch]:
        """The user opens app ``name``: resume it if cached, start it otherwise."""
        spec = self.catalog.get(name)
        env = self.phone.env
        t0 = env.now
        prev = self.foreground
        target = next((a for a in self.cached if a.spec.name == name and a.alive), None)
        if prev is not None and prev.spec.name == name and prev.alive:
            target = prev
        elif prev is not None and prev.alive:
            self._to_background(prev)
        if target is not None and target in self.cached:
            self.cached.remove(target)
        kind = "resume" if target is not None else "start"
        app = target or RunningApp(self.phone, spec, self.gpu)
        if kind == "start":
            app.process.on_kill.append(self._on_kill_of(app))
        self.foreground = app
        self.phone.processes.set_adj(app.process, FOREGROUND_APP_ADJ)
        self._trim_cached()
        self._rerank()
        yield from app.acquire()
        decompressed = 0
        if kind == "resume":
            decompressed = yield from self._resume(app)
        else:
            yield from self._start(app)
        launch = Launch(t0, name, kind, env.now - t0, decompressed)
        self.launches.append(launch)
        if app.alive and self.foreground is app:
            app.set_mode("fg")
        return launch

    def stop(self) -> None:
        """The user puts the phone down: every app's main thread goes quiet."""
        for app in [*self.cached, self.foreground]:
            if app is not None and app.alive:
                app.set_mode("off")

    # -- transitions ----------------------------------------------------------------------
    def _to_background(self, app: RunningApp) -> None:
        """Pause: trim to the background size (instant frees) and join the list head."""
        app.set_mode("bg")
        app.trim(app.spec.bg_uss_mb - app.spec.gpu_bg_mb, app.spec.gpu_bg_mb)
        self.cached.insert(0, app)

    def _resume(self, app: RunningApp) -> Generator[Event, object, int]:
        """Returns the GPU-buffer pages decompressed first."""
        spec, phone = app.spec, self.phone
        decompressed = 0
        if self.gpu is not None:  # decompress before the first GPU op
            decompressed = yield from self.gpu.foreground(app.process)
        yield from app.work(spec.resume_mcycles * 1e6)
        yield from phone.memory.touch(app.process, app.thread, pages_of(spec.resume_read_mb))
        yield from app.grow(spec.fg_uss_mb - spec.gpu_fg_mb, spec.gpu_fg_mb)
        return decompressed

    def _start(self, app: RunningApp) -> Generator[Event, object, None]:
        spec, phone = app.spec, self.phone
        memory, process, thread = phone.memory, app.process, app.thread
        # Code and resources: the file working set is read from storage as it is mapped.
        file_pages = pages_of(spec.file_mb)
        read_pages = pages_of(spec.start_read_mb)
        for start in range(0, file_pages, _ALLOC_STEP_PAGES):
            step = min(_ALLOC_STEP_PAGES, file_pages - start)
            yield from memory.allocate(process, thread, step, "file")
        if read_pages and process.alive:
            yield from phone.storage.read(thread, read_pages)
        yield from app.work(spec.start_mcycles * 1e6)
        yield from app.grow(spec.fg_uss_mb - spec.gpu_fg_mb, spec.gpu_fg_mb)

    def _trim_cached(self) -> None:
        """Over ``max_cached``: ActivityManager kills the least recently used."""
        self.cached = [a for a in self.cached if a.alive]
        while len(self.cached) > self.max_cached:
            victim = self.cached.pop()
            self.am_kills.append(AmKill(self.phone.env.now, victim.spec.name, "too many cached"))
            self._kill(victim)

    def _kill(self, app: RunningApp) -> None:
        phone = self.phone
        for thread in app.process.threads:
            phone.cpu.exit(thread)
        phone.processes.mark_killed(app.process, phone.env.now, "am: too many cached")
        delay = ms(phone.profile.lmk.kill_free_delay_ms)
        phone.env.schedule(delay, lambda _: phone.memory.release(app.process))

    def _on_kill_of(self, app: RunningApp) -> Callable[[Process], None]:
        return lambda _: self._lmk_killed(app)

    def _lmk_killed(self, app: RunningApp) -> None:
        if app.process.kill_reason.startswith("am:"):
            return
        self.lmk_killed.append((self.phone.env.now, app.spec.name))
        if app in self.cached:
            self.cached.remove(app)
            self._rerank()
        if self.foreground is app:
            self.foreground = None

    def _rerank(self) -> None:
        """Importance = LRU distance → oom_score_adj; tell the GPU hook."""
        processes = self.phone.processes
        for position, app in enumerate(self.cached):
            adj = CACHED_APP_MIN_ADJ + position * _CACHED_ADJ_STEP
            if app.process.oom_score_adj != adj:
                processes.set_adj(app.process, adj)
        if self.gpu is not None:
            fg = self.foreground.process if self.foreground is not None else None
            self.gpu.set_cached([a.process for a in self.cached], fg)
