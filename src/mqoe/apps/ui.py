"""UI apps on the rendering pipeline: view hierarchies, overdraw and scripted interactions
(the responsiveness study's rendering mechanisms, MobiCom 2020).

An app is a **main thread** (input, animation, measure and layout — and whatever the app
does synchronously there: Binder calls, storage reads), a **RenderThread** (draws the
frame into a buffer of the app's :class:`~mqoe.device.display.BufferQueue`) and a few
worker threads (image decoding). Frames follow Android's Choreographer and hwui:

* A frame is requested (by an animation, a scroll, a new screen) and runs on the main
  thread at the first V-Sync after the request — its **intended V-Sync**. While an
  animation runs, each frame requests the next one when it starts, so a main thread
  that is late makes the following frames late too (Choreographer's "skipped frames").
* When the main thread is done it **syncs** with the RenderThread, which must have
  finished the previous frame (hwui's ``syncFrameState``), then hands the frame over
  and is free for the next V-Sync.
* The RenderThread dequeues a free buffer — blocking while every buffer is queued or
  held by SurfaceFlinger (back-pressure) — draws, and queues it.
* A frame's **duration** is ``queue − intended V-Sync`` (gfxinfo's ``FrameCompleted −
  IntendedVsync``). Its record also carries the stages, the Binder / I/O waits, the two
  threads' Running and Runnable time (``state_ns`` deltas over each stage), whether
  LITTLE cores were saturated, and **ready_buffer**: a buffer the app had queued before
  the frame began was still waiting for SurfaceFlinger at the V-Sync the frame missed —
  the app had a frame in reserve, so the slow frame was hidden (buffer-aware SR/FF,
  :mod:`mqoe.metrics.jank`). With a single buffer the app can never hold one in
  reserve (SurfaceFlinger latches any queued buffer at the next V-Sync before the app
  can queue another), so buffer-aware and naive counts agree.

Work is never looked up: measure/layout costs cycles per view measured, inflation and
binding cycles per view created or bound, drawing cycles per megapixel *painted* —
counting every layer the painter's algorithm draws, including those an opaque layer
above hides (overdraw, :mod:`mqoe.analysis.layout`'s exact count) — plus cycles per
drawing layer (:mod:`mqoe.apps.ui_costs`); images the workers decode are uploaded as
textures by the next frame's RenderThread. :meth:`ViewHierarchy.trim_redundant_layers`
(:mod:`mqoe.apps.view_hierarchy`) is the RUIR fix: layers that opaque layers above cover
completely stop painting.

Apps are TOML data (``apps/catalog/ui_apps.toml``, :func:`load_ui_apps` in
:mod:`mqoe.apps.ui_catalog`): a view hierarchy, an interaction script and where the app
does I/O and Binder calls. This module is the app itself: its threads and the frame
pipeline above.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

from mqoe.apps.ui_catalog import (
    CATALOGUE,
    Action,
    Rect,
    StepSpec,
    UiAppSpec,
    ViewSpec,
    load_ui_apps,
    ui_app,
)
from mqoe.apps.ui_costs import RenderCosts, draw_cycles
from mqoe.apps.view_hierarchy import ViewHierarchy
from mqoe.device.binder import BinderPool
from mqoe.device.cpu import Fair, SchedPolicy, Thread, ThreadState
from mqoe.device.display import BufferQueue, Display, android_major
from mqoe.device.phone import Phone
from mqoe.engine import Event
from mqoe.engine.rounding import round_half_even

# A frame window is LITTLE-saturated when every LITTLE core was busy for at least half
# of it (the same rule as the systrace analyser, mqoe.analysis.systrace).
SATURATED_FRAME_FRACTION: Final = 0.5
_JITTER_BLOCK: Final = 512  # lognormal multipliers drawn per numpy call


def thread_policies(android: int) -> tuple[SchedPolicy, SchedPolicy]:
    """(main, RenderThread) policies of the top app. Android 8+: ActivityManager boosts
    both to nice −10 (``TOP_APP_PRIORITY_BOOST``); before, the main thread ran at the
    default nice 0 and hwui's RenderThread at −4 (``PRIORITY_DISPLAY``)."""
    return (Fair(-10), Fair(-10)) if android >= 8 else (Fair(0), Fair(-4))


# -- services an app uses ---------------------------------------------------------------


class BinderService(BinderPool):
    """system_server's Binder thread pool (see :class:`mqoe.device.binder.BinderPool`)."""

    def __init__(self, phone: Phone, threads: int = 4, costs: RenderCosts | None = None) -> None:
        # threads: assumed concurrently busy binder threads (system_server's pool allows 31)
        self.phone = phone
        self.costs = costs or RenderCosts()
        super().__init__(
            phone.env, phone.cpu, "system_server", threads,
            transaction_cycles=self.costs.binder_transaction_cycles,
        )  # fmt: skip


class _Workers:
    """An image loader's thread pool (Glide-like): jobs read from the disk cache and
    decode. Requests for rows scrolled off-screen are cancelled (oldest first) once more
    than ``cap`` wait, as image loaders do when a view is recycled."""

    def __init__(self, threads: list[Thread], phone: Phone, cap: int) -> None:
        self.phone = phone
        self.cap = max(1, cap)
        self._jobs: deque[tuple[int, float, float]] = deque()
        self.decoded_mpx = 0.0  # decoded since the app last took them (to upload)
        self._idle: list[Event] = []
        self.done = 0
        self.cancelled = 0
        for thread in threads:
            phone.env.process(self._work(thread), thread.name)
        self.enabled = bool(threads)

    def submit(self, pages: int, cycles: float, mpx: float) -> None:
        if not self.enabled:
            return
        self._jobs.append((pages, cycles, mpx))
        if len(self._jobs) > self.cap:
            self._jobs.popleft()
            self.cancelled += 1
        if self._idle:
            self._idle.pop().succeed()

    def _work(self, thread: Thread) -> Generator[Event, object, None]:
        env, cpu, storage = self.phone.env, self.phone.cpu, self.phone.storage
        while True:
            if not self._jobs:
                wake = Event(env)
                self._idle.append(wake)
                yield wake
                continue
            pages, cycles, mpx = self._jobs.popleft()
            if pages:
                yield from storage.read(thread, pages)
            yield cpu.run(thread, cycles)
            self.decoded_mpx += mpx
            self.done += 1

    def take_decoded(self) -> float:
        """Megapixels decoded since the last call (bitmaps the next frame uploads)."""
        mpx, self.decoded_mpx = self.decoded_mpx, 0.0
        return mpx


class _Jitter:
    """Mean-one lognormal multipliers, drawn in blocks (one numpy call per block)."""

    def __init__(self, rng: np.random.Generator, sigma: float) -> None:
        self.rng = rng
        self.sigma = sigma
        self._block: list[float] = []

    def __call__(self) -> float:
        if self.sigma <= 0:
            return 1.0
        if not self._block:
            s = self.sigma
            self._block = self.rng.lognormal(-s * s / 2, s, _JITTER_BLOCK).tolist()[::-1]
        return self._block.pop()


# -- the app ----------------------------------------------------------------------------

FRAME_COLUMNS: Final = (
    "app",
    "frame",
    "action",
    "intended_vsync_ns",
    "main_start_ns",
    "main_end_ns",
    "sync_wait_ns",
    "draw_start_ns",
    "dequeue_wait_ns",
    "queue_ns",
    "main_cycles",
    "draw_cycles",
    "binder_ns",
    "io_ns",
    "main_running_ns",
    "main_runnable_ns",
    "render_running_ns",
    "render_runnable_ns",
    "sf_delay_ns",
)
_RUNNING: Final = ThreadState.RUNNING
_RUNNABLE: Final = ThreadState.RUNNABLE
_PREEMPTED: Final = ThreadState.RUNNABLE_PREEMPTED


@dataclass(frozen=True, slots=True)
class _FrameWork:
    action: str
    main_cycles: float
    draw_cycles: float
    io_pages: int = 0
    binder_calls: int = 0
    binder_cycles: float = 0.0
    interval: int = 1  # V-Syncs between frames of this animation


@dataclass(frozen=True, slots=True)
class _MainStage:
    """A frame the main thread has handed to the RenderThread (ns, reference cycles)."""

    action: str
    intended_ns: int
    start_ns: int
    end_ns: int
    sync_wait_ns: int
    main_cycles: float
    draw_cycles: float
    binder_ns: int
    io_ns: int
    running_ns: int
    runnable_ns: int


class UiApp:
    """One app in the foreground, running its script from ``start_ns`` until ``end_ns``.

    ``trim``: apply :meth:`ViewHierarchy.trim_redundant_layers` first (the RUIR fix).
    Frame records: :meth:`frames`."""

    def __init__(
        self,
        phone: Phone,
        display: Display,
        spec: UiAppSpec,
        *,
        binder: BinderService,
        end_ns: int,
        start_ns: int = 0,
        trim: bool = False,
        buffers: int | None = None,
        costs: RenderCosts | None = None,
    ) -> None:
        self.phone = phone
        self.display = display
        self.spec = spec
        self.binder = binder
        self.costs = costs or RenderCosts()
        self.end_ns = end_ns
        screen = (display.width_px, display.height_px)
        self.original = ViewHierarchy.from_specs(spec.views, screen)
        self.hierarchy, self.trimmed_layers = (
            self.original.trim_redundant_layers() if trim else (self.original, 0)
        )
        self.ruir = self.hierarchy.redundant_layers > 0
        main_policy, render_policy = thread_policies(android_major(phone.profile))
        self.main = self._thread("main", main_policy)
        self.render = self._thread("RenderThread", render_policy)
        self.surface: BufferQueue = display.create_surface(spec.package, buffers)
        self._items = self.hierarchy.copies(spec.list_item) if spec.list_item else []
        self.item_nodes = self.hierarchy.subtree_size(self._items[0]) if self._items else 0
        # THREAD_PRIORITY_BACKGROUND (nice 10), as image loaders run their decoders
        self._workers = _Workers(
            [self._thread(f"worker:{k + 1}", Fair(10)) for k in range(spec.workers)],
            phone,
            len(self._items) + 2,
        )
        self._jitter = _Jitter(phone.env.rng("ui:" + spec.key), self.costs.frame_cost_sigma)
        self.draw_cycles = draw_cycles(self.hierarchy, self.costs)
        self._screen_mpx = screen[0] * screen[1] / 1e6
        self._inflated_items = 0
        self._records: list[tuple[Any, ...]] = []
        self._request_ns = start_ns
        self._pending: _MainStage | None = None
        self._render_busy = False
        self._render_wake: Event | None = None
        self._render_idle: Event | None = None
        phone.env.process(self._main(start_ns), spec.key + ":main")
        phone.env.process(self._render_loop(), spec.key + ":RenderThread")

    def _thread(self, name: str, policy: SchedPolicy) -> Thread:
        """A thread of the app's process, in the ``top-app`` cgroup as ActivityManager
        puts the resumed activity's process (its cpuset, boost and sched_boost group)."""
        cpu = self.phone.cpu
        thread = cpu.thread(name, policy, process=self.spec.package)
        cpu.set_group(thread, "top-app")
        return thread

    # -- results ------------------------------------------------------------------------
    def frames(self) -> pd.DataFrame:
        """One row per frame queued (columns :data:`FRAME_COLUMNS` plus ``duration_ns``,
        ``little_busy_share``, ``little_saturated``, ``big_idle_little_saturated``,
        ``ready_buffer``, ``ruir``)."""
        # Built column by column, one numpy array each: a table from the rows, converted
        # column by column, costs several times more (the same table).
        records = self._records
        rows = zip(*records, strict=True) if records else ((),) * len(FRAME_COLUMNS)
        columns: dict[str, Any] = {}
        for name, values in zip(FRAME_COLUMNS, rows, strict=True):
            if name in ("app", "action"):  # strings (none: an object column, as pandas')
                columns[name] = list(values) if records else np.array([], dtype=object)
            else:
                integer = name == "frame" or name.endswith("_ns")
                columns[name] = np.array(values, dtype=np.int64 if integer else float)
        start, end = columns["intended_vsync_ns"], columns["queue_ns"]
        columns["duration_ns"] = end - start
        share = self.display.little_saturated_share(start, end)
        columns["little_busy_share"] = share
        columns["little_saturated"] = share >= SATURATED_FRAME_FRACTION
        idle_big = self.display.little_saturated_share(start, end, big_idle=True)
        columns["big_idle_little_saturated"] = idle_big >= SATURATED_FRAME_FRACTION
        # The V-Sync a frame missed is the one after its intended V-Sync; the slow frame
        # was hidden if a buffer the app had queued before the frame began was still
        # there for SurfaceFlinger to show at that V-Sync (a frame in reserve).
        due = start + self.display.period_ns
        columns["ready_buffer"] = (end > due) & self.surface.in_reserve(start, due)
        columns["ruir"] = np.full(len(start), self.ruir, dtype=np.bool_)
        return pd.DataFrame(columns)

    # -- main thread --------------------------------------------------------------------
    def _main(self, start_ns: int) -> Generator[Event, object, None]:
        env = self.phone.env
        if start_ns > env.now:
            yield env.timeout(start_ns - env.now)
        while env.now < self.end_ns:
            for step in self.spec.script:
                if env.now >= self.end_ns:
                    return
                yield from self._step(step)

    def _step(self, step: StepSpec) -> Generator[Event, object, None]:
        env = self.phone.env
        self._request_ns = env.now
        until = min(self.end_ns, env.now + round_half_even(step.duration_ms * 1e6))
        if step.action != "idle":
            # The user touches the screen: POWER_HINT_INTERACTION. A fling carries the
            # scroller's duration (Qualcomm's scroll boost); a tap (open, back, starting
            # media or a game) the minimum; a game's touches go on (see _steady).
            self.phone.cpu.interaction_hint(until - env.now if step.action == "fling" else 0)
        if step.action == "idle":
            yield env.timeout(max(0, until - env.now))
        elif step.action == "fling":
            yield from self._fling(step, until)
        elif step.action in ("open", "back"):
            yield from self._open(step)
        else:
            yield from self._steady(step, until)

    def _fling(self, step: StepSpec, until: int) -> Generator[Event, object, None]:
        """Scroll a list: every frame lays out the visible rows and binds the rows that
        scrolled into view by then (inflating view holders until the pool is warm);
        their images go to the workers; a cursor-backed list reads from storage on the
        main thread (``row_io_pages``)."""
        c, spec, env = self.costs, self.spec, self.phone.env
        period = self.display.period_ns
        start, span = env.now, max(1.0, step.duration_ms * 1e6)
        relayout = self._relayout_nodes(step)
        pool = len(self._items) + 2  # view holders RecyclerView keeps (visible + cache)
        decode = spec.image_mpx * c.decode_cycles_per_mpixel
        shown = 0
        io_due = 0.0
        while env.now < until:
            # Rows in view by the coming V-Sync: the position follows a decelerating
            # fling (ease-out, 1 − (1 − t)²: the initial speed is twice the mean, as an
            # OverScroller fling slows down under friction).
            t = min(1.0, (env.now + period - start) / span)
            target = min(step.items, int(step.items * (1.0 - (1.0 - t) ** 2)))
            new, shown = target - shown, target
            main = (
                c.frame_base_cycles + step.main_mcycles * 1e6 + relayout * c.layout_cycles_per_node
            )
            for _ in range(new):
                if self._inflated_items < pool:
                    self._inflated_items += 1
                    main += self.item_nodes * c.inflate_cycles_per_node
                main += self.item_nodes * c.bind_cycles_per_node
                if decode > 0:
                    self._workers.submit(spec.image_io_pages, decode, spec.image_mpx)
            io_due += new * spec.row_io_pages
            pages = int(io_due)
            io_due -= pages
            yield from self._frame(_FrameWork("fling", main, self._draw(step), pages))

    def _open(self, step: StepSpec) -> Generator[Event, object, None]:
        """A new screen (or back to the previous one): one heavy frame — the app's data
        loads (Binder, storage on the main thread), views inflate, everything is laid
        out — then the transition animation's frames (``relayout`` of the views each)."""
        c, env = self.costs, self.phone.env
        nodes = self.hierarchy.node_count
        main = (
            c.frame_base_cycles
            + step.main_mcycles * 1e6
            + step.inflate_nodes * c.inflate_cycles_per_node
            + nodes * c.layout_cycles_per_node
        )
        draw = self._draw(step)
        binder = step.binder_mcycles * 1e6
        work = _FrameWork(step.action, main, draw, step.io_pages, step.binder_calls, binder)
        yield from self._frame(work)
        until = min(self.end_ns, env.now + round_half_even(step.anim_ms * 1e6))
        relayout = self._relayout_nodes(step)
        main = c.frame_base_cycles + relayout * c.layout_cycles_per_node
        while env.now < until:
            yield from self._frame(_FrameWork(step.action, main, draw))

    def _steady(self, step: StepSpec, until: int) -> Generator[Event, object, None]:
        """Media or a game: frames at ``fps``; a decoder thread decodes each media frame."""
        c = self.costs
        interval = max(1, round_half_even(1e9 / step.fps / self.display.period_ns))
        relayout = self._relayout_nodes(step)
        if step.decode_mcycles > 0:
            self.phone.env.process(self._decoder(step, until), self.spec.key + ":decoder")
        main = c.frame_base_cycles + step.main_mcycles * 1e6 + relayout * c.layout_cycles_per_node
        game = step.action == "game"
        while self.phone.env.now < until:
            if game:  # the player keeps touching: each frame's input renews the hint
                self.phone.cpu.interaction_hint()
            work = _FrameWork(step.action, main, self._draw(step), interval=interval)
            yield from self._frame(work)

    def _decoder(self, step: StepSpec, until: int) -> Generator[Event, object, None]:
        env, cpu = self.phone.env, self.phone.cpu
        # THREAD_PRIORITY_VIDEO (nice -10, android.os.Process), as media codec callbacks run
        thread = self._thread("decoder", Fair(-10))
        gap = round_half_even(1e9 / (step.decode_fps or step.fps))
        next_ns = env.now
        while env.now < until:
            yield cpu.run(thread, step.decode_mcycles * 1e6 * self._jitter())
            next_ns += gap
            if next_ns > env.now:
                yield env.timeout(next_ns - env.now)
            else:
                next_ns = env.now  # behind: decode the next frame at once
        cpu.exit(thread)

    def _relayout_nodes(self, step: StepSpec) -> float:
        """Views measured and laid out per frame: ``relayout`` × all views if given;
        else a fling lays out the visible rows, a game none (its views are static), and
        other animations a twentieth of the views (assumed: a transition or a progress
        bar invalidates a small part of the tree)."""
        if step.relayout is not None:
            return step.relayout * self.hierarchy.node_count
        if step.action == "fling" and self._items:
            return float(len(self._items) * self.item_nodes)
        if step.action == "game":
            return 0.0
        return 0.05 * self.hierarchy.node_count

    def _draw(self, step: StepSpec) -> float:
        c = self.costs
        scene = step.scene_overdraw * self._screen_mpx * c.draw_cycles_per_mpixel
        return self.draw_cycles + scene + step.render_mcycles * 1e6

    def _frame(self, work: _FrameWork) -> Generator[Event, object, None]:
        """One frame's main-thread part (see the module docstring)."""
        env, cpu, main = self.phone.env, self.phone.cpu, self.main
        period = self.display.period_ns
        intended = self.display.next_vsync(self._request_ns)
        if intended >= self.end_ns:
            yield env.timeout(max(0, self.end_ns - env.now))
            return
        if intended > env.now:
            yield env.timeout(intended - env.now)
        start = env.now
        # The animation asks for its next frame now (Choreographer's one-shot request).
        self._request_ns = max(start, intended + (work.interval - 1) * period)
        states = main.state_ns
        running0, runnable0 = states[_RUNNING], states[_RUNNABLE] + states[_PREEMPTED]
        io_ns = binder_ns = 0
        if work.io_pages:
            yield from self.phone.storage.read(main, work.io_pages)
            io_ns = env.now - start
        for _ in range(work.binder_calls):
            t0 = env.now
            yield from self.binder.call(main, work.binder_cycles)
            binder_ns += env.now - t0
        main_cycles = work.main_cycles * self._jitter()
        yield cpu.run(main, main_cycles)
        main_end = env.now
        running = states[_RUNNING] - running0
        runnable = states[_RUNNABLE] + states[_PREEMPTED] - runnable0
        if self._render_busy:  # syncFrameState: the RenderThread must be done
            self._render_idle = Event(env)
            yield self._render_idle
        # Bitmaps decoded since the last frame are uploaded as textures by this one.
        upload = self._workers.take_decoded() * self.costs.upload_cycles_per_mpixel
        draw_cycles = work.draw_cycles * self._jitter() + upload
        self._pending = _MainStage(
            work.action, intended, start, main_end, env.now - main_end, main_cycles,
            draw_cycles, binder_ns, io_ns, running, runnable,
        )  # fmt: skip
        self._render_busy = True
        wake = self._render_wake
        if wake is not None:
            self._render_wake = None
            wake.succeed()

    # -- RenderThread -------------------------------------------------------------------
    def _render_loop(self) -> Generator[Event, object, None]:
        env, cpu, render, surface = self.phone.env, self.phone.cpu, self.render, self.surface
        states = render.state_ns
        while True:
            if self._pending is None:
                self._render_wake = Event(env)
                yield self._render_wake
                continue
            frame, self._pending = self._pending, None
            t0 = env.now
            sf_delay = yield from surface.dequeue(render)
            draw_start = env.now
            running0, runnable0 = states[_RUNNING], states[_RUNNABLE] + states[_PREEMPTED]
            yield cpu.run(render, frame.draw_cycles)
            yield from surface.queue_buffer(render)
            self._records.append(
                (
                    self.spec.key, len(self._records), frame.action, frame.intended_ns,
                    frame.start_ns, frame.end_ns, frame.sync_wait_ns, draw_start,
                    draw_start - t0, env.now, frame.main_cycles, frame.draw_cycles,
                    frame.binder_ns, frame.io_ns, frame.running_ns, frame.runnable_ns,
                    states[_RUNNING] - running0,
                    states[_RUNNABLE] + states[_PREEMPTED] - runnable0, sf_delay,
                )
            )  # fmt: skip
            self._render_busy = False
            idle = self._render_idle
            if idle is not None:
                self._render_idle = None
                idle.succeed()


__all__ = [
    "CATALOGUE",
    "FRAME_COLUMNS",
    "SATURATED_FRAME_FRACTION",
    "Action",
    "BinderService",
    "Rect",
    "RenderCosts",
    "StepSpec",
    "UiApp",
    "UiAppSpec",
    "ViewHierarchy",
    "ViewSpec",
    "draw_cycles",
    "load_ui_apps",
    "thread_policies",
    "ui_app",
]
