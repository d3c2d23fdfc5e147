"""GPU buffers in shared memory and their compression in the background (the GPU-buffer
study, 2015).

A GPU cannot take page faults, so a driver maps all of a buffer's pages in the GPU's
IOMMU at once: an app's GPU buffers are resident as a whole (``memory.allocate(...,
"gpu")``), page by page in the memory model's accounting. :class:`Gpu` adds the scheme
of the GPU-buffer study on top:

* **Hook.** The framework tells the GPU module about its cached-app list
  (:meth:`Gpu.set_cached`): an app leaving the foreground becomes a *candidate* (S1) in
  the **compression pending list**, ordered by LRU distance — the head is the app nearest
  eviction. The call returns at once.
* **Compress daemon** (``kgsl-compress``, nice 19): while the list is non-empty and a
  core is idle it takes the head app and compresses the pages its policy allows
  (:class:`CompressionPolicy`), 4 KB at a time in batches of :data:`BATCH_PAGES`: each
  page's compressed size comes from the recorded LZ4 table (the real codec is not run
  during simulation), the objects go into a zsmalloc-like pool whose physical pages are
  taken from the memory model first, then the buffer pages are freed. S2 = partly,
  S3 = fully compressed.
* **Deferral.** A GPU operation issued by a background app (S1–S3) is not dispatched
  (:meth:`Gpu.submit` returns False): it waits for the foreground, so it never forces a
  decompression.
* **Resume.** When the app returns (S4), :meth:`Gpu.foreground` decompresses **all** its
  compressed pages before its first GPU operation, page by page — a page is allocated,
  filled and the pool object freed, so peak memory stays low — on the driver's kernel
  worker, while the app waits (resume latency). Then S0.

With the ``van`` policy (stock Android) nothing is compressed, no daemon runs and no
operation is deferred: the module only keeps books, so a run is identical to one
without it. The LZ4 CPU cost is the host time in the table × the profile's
``gpu.lz4_cycles_per_host_ns`` (reference cycles).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

import numpy as np

from mqoe.device.cpu import Cpu, Fair, Thread
from mqoe.device.gpu_content import CONTENT_CLASSES, Lz4Table
from mqoe.device.memory import Memory
from mqoe.device.process import Process
from mqoe.device.profiles import GpuSpec
from mqoe.device.zsmalloc import ZsPool
from mqoe.engine import Environment, Event, ms

BATCH_PAGES = 256  # pages per daemon / decompression step (1 MB): bounds the event count
POOL = "zsmalloc-gpu"  # the memory model's name for the compressed-buffer pool
_IDLE_POLL_NS = ms(50)  # the daemon looks for an idle core this often while busy
_MB_PAGES = 256


class GpuState(IntEnum):
    """The GPU-buffer study's app states."""

    S0 = 0  # foreground, buffers uncompressed
    S1 = 1  # background candidate (in the pending list, nothing compressed yet)
    S2 = 2  # partly compressed
    S3 = 3  # fully compressed
    S4 = 4  # foreground again, buffers still compressed (until the first GPU op)


class CompressionPolicy(Protocol):
    """How much of a cached app's GPU buffers the daemon may compress."""

    @property
    def name(self) -> str:
        """``van`` means: compress nothing, run no daemon, defer nothing."""
        ...

    def cap_pages(self, lru_position: int, buffer_pages: int) -> int:
        """Pages of an app at ``lru_position`` (0 = foreground, 1 = the most recently
        used cached app, …) that may be held compressed; ``buffer_pages`` is its total."""
        ...


@dataclass(eq=False)
class AppBuffers:
    """One process's GPU buffers: pages ``[0, compressed)`` are in the pool (their
    handles in ``handles``), pages ``[compressed, pages)`` are resident."""

    process: Process
    mix: np.ndarray  # probabilities over CONTENT_CLASSES
    content: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    handles: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    compressed: int = 0
    state: GpuState = GpuState.S0
    position: int = 0
    deferred_ops: int = 0
    generation: int = 0  # bumped by resumes and resizes: a batch begun before is stale

    @property
    def pages(self) -> int:
        return len(self.content)

    @property
    def resident(self) -> int:
        return self.pages - self.compressed


@dataclass(frozen=True, slots=True)
class Decompression:
    """One resume's decompression (for resume-latency attribution)."""

    time_ns: int
    pid: int
    pages: int
    duration_ns: int


class Gpu:
    """The GPU driver's buffer bookkeeping plus the GPU-buffer study's compression scheme.

    Public: ``register``, ``resize``, ``set_cached``, ``foreground``, ``submit``,
    counters and ``check``."""

    def __init__(
        self,
        env: Environment,
        cpu: Cpu,
        memory: Memory,
        spec: GpuSpec,
        policy: CompressionPolicy,
        table: Lz4Table,
    ) -> None:
        self.env = env
        self.cpu = cpu
        self.memory = memory
        self.spec = spec
        self.policy = policy
        self.table = table
        self.pool = ZsPool(merge_classes=True)  # as the kernel merges same-shape classes
        self.apps: dict[int, AppBuffers] = {}  # by pid
        self.pending: list[AppBuffers] = []  # head = nearest eviction
        self.compressing = policy.name != "van"
        self.decompressions: list[Decompression] = []
        self.compressed_pages_total = 0  # ever compressed (counter)
        self.deferred_ops = 0
        self.dispatched_ops = 0
        self.compress_cycles = 0.0
        self.decompress_cycles = 0.0
        self._reserved = 0  # pool pages taken from memory, not yet holding objects
        self._rng = env.rng("gpu-content")  # drawn even for van: page contents are data
        self._size_rng = env.rng("gpu-lz4") if self.compressing else None
        self._wake: Event | None = None
        self._decompressing: Event | None = None  # the worker is busy until this fires
        if self.compressing:
            self.daemon: Thread | None = cpu.thread("kgsl-compress", Fair(19), process="kernel")
            self.worker: Thread | None = cpu.thread("kgsl-decompress", Fair(0), process="kernel")
            env.process(self._daemon_loop(), "kgsl-compress")
        else:
            self.daemon = self.worker = None

    # -- levels -------------------------------------------------------------------------
    @property
    def compressed_pages(self) -> int:
        """Buffer pages held compressed now."""
        return sum(a.compressed for a in self.apps.values())

    @property
    def saved_pages(self) -> int:
        """Memory the scheme saves now: compressed buffer pages minus the pool holding them."""
        return self.compressed_pages - self.pool.pages

    def check(self) -> None:
        """Raise AssertionError unless pages and pool books agree."""
        self.pool.check()
        assert self.memory.kernel_pools.get(POOL, 0) == self.pool.pages + self._reserved
        assert self.pool.objects == self.compressed_pages
        for app in self.apps.values():
            assert 0 <= app.compressed <= app.pages
            assert len(app.handles) == app.compressed
            if app.process.alive:
                assert app.process.gpu_pages == app.resident, (app.process, app.resident)

    # -- buffers ------------------------------------------------------------------------
    def register(self, process: Process, mix: Sequence[float]) -> AppBuffers:
        """Track ``process``'s GPU buffers; ``mix`` = its content fractions over
        CONTENT_CLASSES (what its surfaces hold: zero pages, flat UI, text, …)."""
        probs = np.asarray(mix, dtype=float)
        if probs.shape != (len(CONTENT_CLASSES),) or abs(probs.sum() - 1) > 1e-6:
            raise ValueError(f"mix must be {len(CONTENT_CLASSES)} fractions summing to 1")
        app = AppBuffers(process, probs / probs.sum())
        self.apps[process.pid] = app
        process.on_kill.append(self._killed)
        return app

    def resize(
        self, process: Process, thread: Thread, pages: int
    ) -> Generator[Event, object, None]:
        """The app's buffers become ``pages`` pages: new buffers are allocated whole
        (superpages mapped at once), freed ones return. Only uncompressed apps resize:
        call :meth:`foreground` first."""
        app = self.apps[process.pid]
        app.generation += 1
        if app.compressed:
            raise RuntimeError(f"{process.name}: resize with compressed buffers (S{app.state})")
        grow = pages - app.pages
        if grow > 0:
            yield from self.memory.allocate(process, thread, grow, "gpu")
            got = process.gpu_pages - app.resident if process.alive else 0
            ids = self._rng.choice(len(CONTENT_CLASSES), size=got, p=app.mix)
            app.content = np.concatenate([app.content, ids.astype(np.int8)])
        elif grow < 0:
            self.shrink(process, pages)

    def shrink(self, process: Process, pages: int) -> None:
        """The app frees buffers down to ``pages`` pages (no waiting: frees only).
        Compressed buffers are left as they are (they shrink once decompressed)."""
        app = self.apps[process.pid]
        if app.compressed or pages >= app.pages:
            return
        app.generation += 1
        self.memory.free(process, app.pages - pages, "gpu")
        app.content = app.content[:pages]

    # -- the framework hook --------------------------------------------------------------
    def set_cached(self, cached: Sequence[Process], foreground: Process | None) -> None:
        """The cached-app list changed (MRU first). Background apps become candidates;
        the pending list is re-ordered by LRU distance (head = nearest eviction)."""
        if foreground is not None and foreground.pid in self.apps:
            self.apps[foreground.pid].position = 0
        for position, process in enumerate(cached, start=1):
            app = self.apps.get(process.pid)
            if app is None:
                continue
            app.position = position
            if app.state in (GpuState.S0, GpuState.S4):
                app.state = GpuState.S1 if not app.compressed else GpuState.S2
        if not self.compressing:
            return
        candidates = [
            a for a in self.apps.values()
            if a.process.alive and a.position > 0 and a.state in (GpuState.S1, GpuState.S2)
            and a.compressed < min(a.pages, self.policy.cap_pages(a.position, a.pages))
        ]  # fmt: skip
        candidates.sort(key=lambda a: (-a.position, a.process.pid))
        self.pending = candidates
        if candidates and self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def foreground(self, process: Process) -> Generator[Event, object, int]:
        """The app is in the foreground again; before its first GPU operation all its
        compressed pages are decompressed, page by page (S4 → S0). Returns the pages
        decompressed (0 if there were none or the app died first)."""
        app = self.apps.get(process.pid)
        if app is None:
            return 0
        app.position = 0
        app.generation += 1
        if app in self.pending:
            self.pending.remove(app)
        if not app.compressed:
            app.state = GpuState.S0
            return 0
        app.state = GpuState.S4
        # One driver worker: a second resume (a script's, not the user's) waits its turn.
        while self._decompressing is not None:
            yield self._decompressing
        self._decompressing = self.env.event()
        try:
            return (yield from self._decompress_all(app))
        finally:
            done, self._decompressing = self._decompressing, None
            done.succeed()

    def _decompress_all(self, app: AppBuffers) -> Generator[Event, object, int]:
        process, worker = app.process, self.worker
        assert worker is not None  # only a compressing policy leaves pages compressed
        start, pages = self.env.now, app.compressed
        table, factor = self.table, self.spec.lz4_cycles_per_host_ns
        while app.compressed and process.alive:
            n = min(BATCH_PAGES, app.compressed)
            lo = app.compressed - n
            yield from self.memory.allocate(process, worker, n, "gpu")
            if not process.alive:
                return 0
            cycles = table.decompress_ns(app.content[lo : app.compressed]) * factor
            self.decompress_cycles += cycles
            yield self.cpu.run(worker, cycles)
            if not process.alive:
                return 0
            released = self.pool.free(app.handles[lo:])
            self.memory.shrink_pool(POOL, released)
            app.handles = app.handles[:lo]
            app.compressed = lo
        app.state = GpuState.S0
        self.decompressions.append(Decompression(start, process.pid, pages, self.env.now - start))
        return pages if process.alive else 0

    def submit(self, process: Process) -> bool:
        """A GPU operation from ``process``: dispatched (True), or deferred (False) —
        from a background app under a compressing policy, or while its buffers are still
        being decompressed (S4: the first operation waits for all of them)."""
        app = self.apps.get(process.pid)
        if self.compressing and app is not None and (app.state != GpuState.S0 or app.compressed):
            app.deferred_ops += 1
            self.deferred_ops += 1
            return False
        self.dispatched_ops += 1
        return True

    # -- the compress daemon ---------------------------------------------------------------
    def _daemon_loop(self) -> Generator[Event, object, None]:
        daemon = self.daemon
        assert daemon is not None
        while True:
            if not self.pending:
                self._wake = Event(self.env)
                yield self._wake
                self._wake = None
                continue
            if self.cpu.busy_threads() >= len(self.cpu.cores):
                yield self.env.timeout(_IDLE_POLL_NS)  # runs when the system is idle
                continue
            app = self.pending[0]
            cap = min(app.pages, self.policy.cap_pages(app.position, app.pages))
            if app.compressed >= cap or not app.process.alive:
                self.pending.pop(0)
                if app.process.alive and app.compressed:
                    app.state = GpuState.S3 if app.compressed == app.pages else GpuState.S2
                continue
            yield from self._compress_batch(app, min(BATCH_PAGES, cap - app.compressed))

    def _compress_batch(self, app: AppBuffers, n: int) -> Generator[Event, object, None]:
        """Compress ``n`` pages (into a per-CPU buffer, as zram does), then take the pool
        pages they need from the memory model, store them and free the buffer pages."""
        daemon, pool = self.daemon, self.pool
        assert daemon is not None and self._size_rng is not None
        lo, generation = app.compressed, app.generation
        ids = app.content[lo : lo + n]
        sizes = self.table.sample_sizes(ids, self._size_rng)
        cycles = self.table.compress_ns(ids) * self.spec.lz4_cycles_per_host_ns
        self.compress_cycles += cycles
        yield self.cpu.run(daemon, cycles)

        def still_wanted() -> bool:  # the app may have been resumed or killed meanwhile
            return (
                app.process.alive
                and app.state in (GpuState.S1, GpuState.S2)
                and app.compressed == lo
                and app.generation == generation
            )

        # Other apps' frees may change what the pool lacks while the daemon waits for
        # memory, so ask again until the reservation covers it.
        while still_wanted():
            short = pool.pages_needed(sizes) - self._reserved
            if short <= 0:
                break
            yield from self.memory.grow_pool(POOL, daemon, short)
            self._reserved += short
        if still_wanted():
            before = pool.pages
            handles = pool.alloc(sizes)
            self._reserved -= pool.pages - before
            app.handles = np.concatenate([app.handles, handles])
            app.compressed = lo + n
            self.memory.free(app.process, n, "gpu")  # the buffer pages, once all stored
            self.compressed_pages_total += n
            app.state = GpuState.S3 if app.compressed == app.pages else GpuState.S2
        if self._reserved:
            self.memory.shrink_pool(POOL, self._reserved)
            self._reserved = 0

    def _killed(self, process: Process) -> None:
        """A killed app's compressed objects go back to the pool at once."""
        app = self.apps.pop(process.pid, None)
        if app is None:
            return
        if app in self.pending:
            self.pending.remove(app)
        if app.compressed:
            self.memory.shrink_pool(POOL, self.pool.free(app.handles))
            app.handles = app.handles[:0]
            app.compressed = 0


def pages_of(mb: float) -> int:
    """MiB → 4 KB pages."""
    return round(mb * _MB_PAGES)
