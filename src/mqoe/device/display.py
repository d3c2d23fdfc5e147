"""The display pipeline below the apps: V-Sync, BufferQueues and SurfaceFlinger (as
in the responsiveness study, MobiCom 2020).

* **V-Sync** ticks at the panel rate (``profile.display.refresh_hz``): tick *k* is at
  ``k × period_ns``. Nothing is scheduled per tick; whoever waits for a V-Sync computes
  the next one (:meth:`Display.next_vsync`), so an idle screen costs no events.
* **BufferQueue** (one per app surface, :class:`BufferQueue`) with N buffers cycling
  FREE → DEQUEUED (the app draws into it) → QUEUED (ready for SurfaceFlinger) →
  ACQUIRED (latched, on screen) → FREE. With N = 3 (triple buffering, as in the study) the app
  holds two canvas buffers and SurfaceFlinger one; when every buffer is queued or held,
  ``dequeue`` blocks the app (back-pressure). SurfaceFlinger keeps the latched buffer
  on screen until it latches the next one; with a single buffer it hands it back as
  soon as it has composed it (the app then draws into the buffer being scanned out).
* **SurfaceFlinger** is its own thread (process ``surfaceflinger``). When a buffer is
  queued it wakes at the next V-Sync, latches the oldest queued buffer of each surface,
  composes the frame with the status and navigation bars (CPU work scaled by the
  panel's pixels), then releases the buffers the new ones replace. A composition that
  ends after the following V-Sync misses it (logged). Its **cpuset** is the profile's
  ``system-background`` group (``main_surfaceflinger.cpp``: ``set_cpuset_policy(0,
  SP_SYSTEM)``, "keeps us from unnecessarily using big cores"), the LITTLE cluster
  where the profile lists none;
  ``sf_cpuset="all"`` lets it use every core, and ``"big_when_little_saturated"`` (the
  responsiveness study's fix) widens its affinity to all cores at a V-Sync where every
  core of its own cpuset is busy and narrows it back otherwise — an affinity change the
  scheduler acts on, not a cost discount.
* **The app's buffer calls** (:meth:`BufferQueue.dequeue`, :meth:`BufferQueue.queue_buffer`):
  before Android 12 (BLAST) the BufferQueue lives in SurfaceFlinger, so each
  ``dequeueBuffer`` and ``queueBuffer`` is a Binder transaction served by one of
  SurfaceFlinger's four pool threads (:mod:`mqoe.device.binder`) on SurfaceFlinger's
  cores, at the caller's priority. Saturated LITTLE cores therefore hold up the app's
  RenderThread itself, and the cpuset fix widens the pool along with the main thread.
* **Buffers in reserve** (:meth:`BufferQueue.in_reserve`): a buffer queued before some
  time and still unlatched at a later V-Sync — what lets a slow frame go unseen
  (buffer-aware SR/FF). With a single buffer it cannot happen: a queued buffer is
  latched at the next V-Sync, since SurfaceFlinger is never composing while the app
  still has a buffer to queue (with two, only before the first one is on screen).
* **LITTLE saturation** is sampled every ``period / samples_per_vsync`` (whether every
  core of the LITTLE cluster runs a thread), so frame records can say whether their
  window was saturated (:meth:`Display.little_saturated_share`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

import numpy as np
import numpy.typing as npt

from mqoe.device.binder import BinderPool
from mqoe.device.cpu import Cpu, Fair, RealTime, SchedPolicy, Thread, ThreadState
from mqoe.device.profiles import DeviceProfile
from mqoe.engine import Environment, Event

if TYPE_CHECKING:  # pandas is imported when the table is built: a phone without a display
    import pandas as pd  # is built by runs that need no pandas (trace-abr)

SfCpuset = Literal["little", "all", "big_when_little_saturated"]
SF_CPUSETS: Final[tuple[str, ...]] = ("little", "all", "big_when_little_saturated")
# Android 12 moved the BufferQueue into the app (BLASTBufferQueue): from then on
# dequeueBuffer / queueBuffer no longer call into SurfaceFlinger.
BLAST_ANDROID: Final = 12

# The panel that profile.video.surfaceflinger_cycles_per_frame is quoted for (assumed:
# a full-HD 1080x1920 screen, the most common panel of the 2016-2018 phones profiled).
_REFERENCE_PANEL_PX: Final = 1080 * 1920


@dataclass(frozen=True, slots=True)
class DisplayConfig:
    """How the display pipeline is set up (defaults: stock Android of the responsiveness study's
    phones)."""

    buffers: int = 3  # triple buffering (responsiveness study); 1 and 2 are selectable
    sf_cpuset: SfCpuset = "little"  # system-background cpuset (main_surfaceflinger.cpp)
    # None: by Android version (:func:`surfaceflinger_policy`).
    sf_policy: SchedPolicy | None = None
    # SF CPU per composed frame on a full-HD panel, reference cycles; None: the profile's
    # video.surfaceflinger_cycles_per_frame. Scaled by the panel's pixels.
    sf_cycles_per_frame: float | None = None
    # LITTLE-saturation samples per V-Sync period (assumed: 2 resolves a 16.7 ms frame).
    samples_per_vsync: int = 2
    # SurfaceFlinger's Binder threads (main_surfaceflinger.cpp, Android 7-9:
    # ``ProcessState::self()->setThreadPoolMaxThreadCount(4)``).
    sf_binder_threads: int = 4
    # Server-side work of one dequeueBuffer or queueBuffer transaction, reference cycles
    # (assumed: ~35 µs on a 1.8 GHz A53: BufferQueueProducer's slot search or queue
    # bookkeeping under the BufferQueue's lock, the fence dup, the frame-available
    # callback). 0 with ``producer_binder`` off.
    bq_call_cycles: float = 60_000.0
    # Whether the app's dequeueBuffer / queueBuffer are Binder calls into SurfaceFlinger
    # (the BufferQueue lives there before Android 12's BLAST); None: by Android version.
    producer_binder: bool | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.buffers <= 8:
            raise ValueError(f"buffers must be in 1..8, got {self.buffers}")
        if self.sf_cpuset not in SF_CPUSETS:
            raise ValueError(f"sf_cpuset must be one of {', '.join(SF_CPUSETS)}")
        if self.sf_cycles_per_frame is not None and self.sf_cycles_per_frame < 0:
            raise ValueError("sf_cycles_per_frame must not be negative")
        if self.samples_per_vsync < 1:
            raise ValueError("samples_per_vsync must be at least 1")
        if self.sf_binder_threads < 1:
            raise ValueError("sf_binder_threads must be at least 1")
        if self.bq_call_cycles < 0:
            raise ValueError("bq_call_cycles must not be negative")


def android_major(profile: DeviceProfile) -> int:
    """The major Android release of a profile (``"7.0"`` → 7)."""
    return int(profile.android_version.split(".")[0])


def surfaceflinger_policy(profile: DeviceProfile) -> SchedPolicy:
    """SurfaceFlinger's main thread: SCHED_FIFO priority 2 from Android 8.0 (AOSP
    main_surfaceflinger.cpp, ``sched_setscheduler(0, SCHED_FIFO, {2})``); before that a
    fair thread at nice −8 (``PRIORITY_URGENT_DISPLAY``). The release boundary is an
    assumption from the AOSP history."""
    return RealTime(2) if android_major(profile) >= 8 else Fair(-8)


def group_cores(cpu: Cpu, group: str) -> tuple[int, ...]:
    """The cores of an Android cpuset group, the LITTLE cluster where the profile lists
    none (SurfaceFlinger's own is ``system-background``)."""
    return cpu.cpusets.get(group) or little_cores(cpu)


def little_cores(cpu: Cpu) -> tuple[int, ...]:
    """The LITTLE cluster: the one named ``little``, else the slowest (first on ties)."""
    if "little" in cpu.clusters:
        return cpu.clusters["little"]
    return min(cpu.clusters.values(), key=lambda cids: cpu.cores[cids[0]].rate)


def _runnable_ns(thread: Thread) -> int:
    return thread.state_ns[ThreadState.RUNNABLE] + thread.state_ns[ThreadState.RUNNABLE_PREEMPTED]


class BufferQueue:
    """One surface's buffers (see the module docstring). The app calls
    :meth:`try_dequeue` / :meth:`wait_dequeue` then :meth:`queue`; SurfaceFlinger latches."""

    def __init__(self, display: Display, name: str, buffers: int) -> None:
        if not 1 <= buffers <= 8:
            raise ValueError(f"buffers must be in 1..8, got {buffers}")
        self.display = display
        self.name = name
        self.buffers = buffers
        self._free = buffers
        self._queued: deque[int] = deque()  # queue times of QUEUED buffers, oldest first
        self._acquired = 0  # buffers SurfaceFlinger holds on screen (0 or 1)
        self._waiters: deque[Event] = deque()
        # Every buffer's queue and latch times (FIFO: the i-th latch takes the i-th queue).
        self._queue_log: list[int] = []
        self._latch_log: list[int] = []
        self.latches = 0

    # -- app side ---------------------------------------------------------------------
    def try_dequeue(self) -> bool:
        """Take a free buffer if there is one (the app then draws into it)."""
        if self._free and not self._waiters:
            self._free -= 1
            return True
        return False

    def wait_dequeue(self) -> Event:
        """Block until SurfaceFlinger releases a buffer; the event's value is the
        runnable (scheduling-delay) ns of the composition that released it."""
        event = Event(self.display.env)
        self._waiters.append(event)
        return event

    def dequeue(self, client: Thread) -> Generator[Event, object, int]:
        """The app's ``dequeueBuffer`` from ``client`` (``yield from`` it): a Binder call
        into SurfaceFlinger where the BufferQueue lives there, then a free buffer, waiting
        for one when none is; returns the scheduling delay of the composition that
        released the buffer waited for (0 without a wait)."""
        display = self.display
        if display.producer_binder:
            yield from display.sf_binder.call(client, display.config.bq_call_cycles)
        if self.try_dequeue():
            return 0
        value = yield self.wait_dequeue()
        return value if isinstance(value, int) else 0

    def queue_buffer(self, client: Thread) -> Generator[Event, object, None]:
        """The app's ``queueBuffer`` from ``client`` (``yield from`` it): a Binder call
        into SurfaceFlinger where the BufferQueue lives there, then :meth:`queue`."""
        display = self.display
        if display.producer_binder:
            yield from display.sf_binder.call(client, display.config.bq_call_cycles)
        self.queue()

    def queue(self) -> None:
        """The app queues its drawn buffer; SurfaceFlinger latches it at a V-Sync."""
        now = self.display.env.now
        self._queued.append(now)
        self._queue_log.append(now)
        self.display._invalidate()

    @property
    def queued(self) -> int:
        return len(self._queued)

    @property
    def free(self) -> int:
        return self._free

    @property
    def queue_times_ns(self) -> npt.NDArray[np.int64]:
        """When each buffer was queued, in order."""
        return np.asarray(self._queue_log, dtype=np.int64)

    @property
    def latch_times_ns(self) -> npt.NDArray[np.int64]:
        """When SurfaceFlinger latched each buffer (the i-th latch takes the i-th queued)."""
        return np.asarray(self._latch_log, dtype=np.int64)

    def in_reserve(self, since_ns: npt.ArrayLike, at_ns: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Per pair, whether a buffer queued before ``since`` was still waiting for
        SurfaceFlinger just before ``at`` (latched at ``at`` or later, or never): the app
        had a frame in reserve. Buffers are latched in queue order, so the first k
        latched are the first k queued."""
        since = np.asarray(since_ns, dtype=np.int64)
        at = np.asarray(at_ns, dtype=np.int64)
        queued = np.searchsorted(self.queue_times_ns, since, "left")
        latched = np.searchsorted(self.latch_times_ns, at, "left")
        return np.asarray(queued > latched, dtype=np.bool_)

    # -- SurfaceFlinger side ------------------------------------------------------------
    def _latch(self, vsync_ns: int) -> bool:
        if not self._queued or self._queued[0] > vsync_ns:
            return False
        self._queued.popleft()
        self._latch_log.append(self.display.env.now)
        self.latches += 1
        return True

    def _composed(self, sf_delay_ns: int) -> None:
        """After composition: the buffer the new one replaces goes back to the app."""
        if self.buffers == 1:
            self._release(sf_delay_ns)  # single buffer: copied out, handed straight back
            return
        if self._acquired:
            self._release(sf_delay_ns)
        self._acquired = 1

    def _release(self, sf_delay_ns: int) -> None:
        if self._waiters:
            self._waiters.popleft().succeed(sf_delay_ns)
        else:
            self._free += 1


class Display:
    """V-Sync, the surfaces' BufferQueues and SurfaceFlinger on one phone.

    ``Display(env, cpu, profile, config)``; apps create their surface with
    :meth:`create_surface`. Records: :meth:`compositions` (one row per composition).
    """

    def __init__(
        self, env: Environment, cpu: Cpu, profile: DeviceProfile, config: DisplayConfig
    ) -> None:
        self.env = env
        self.cpu = cpu
        self.config = config
        self.width_px = profile.display.width_px
        self.height_px = profile.display.height_px
        self.period_ns = round(1e9 / profile.display.refresh_hz)
        self.little = group_cores(cpu, "system-background")
        base = config.sf_cycles_per_frame
        if base is None:
            base = profile.video.surfaceflinger_cycles_per_frame
        self.sf_cycles = base * self.width_px * self.height_px / _REFERENCE_PANEL_PX
        policy = config.sf_policy or surfaceflinger_policy(profile)
        cpus = None if config.sf_cpuset == "all" else self.little
        self.sf_thread = cpu.thread("surfaceflinger", policy, process="surfaceflinger", cpus=cpus)
        self.sf_binder = BinderPool(env, cpu, "surfaceflinger", config.sf_binder_threads, cpus=cpus)
        self.producer_binder = (
            android_major(profile) < BLAST_ANDROID
            if config.producer_binder is None
            else config.producer_binder
        )
        self._widened = False
        self.surfaces: list[BufferQueue] = []
        self._wake: Event | None = None
        self._last_vsync = -1
        self._records: list[tuple[int, int, int, bool, int, int]] = []
        # Samples, one per sample_ns: bit 0 = every LITTLE core busy, bit 1 = at the same
        # time an online core outside the LITTLE cluster idle (the responsiveness study's
        # big.LITTLE case).
        self.sample_ns = max(1, self.period_ns // config.samples_per_vsync)
        self._samples = bytearray()
        env.schedule(0, self._sample)
        env.process(self._surfaceflinger(), "surfaceflinger")

    # -- public API -------------------------------------------------------------------
    def create_surface(self, name: str, buffers: int | None = None) -> BufferQueue:
        """A new app surface with ``buffers`` buffers (default: the config's)."""
        queue = BufferQueue(self, name, buffers or self.config.buffers)
        self.surfaces.append(queue)
        return queue

    def next_vsync(self, after_ns: int) -> int:
        """The first V-Sync strictly after ``after_ns``."""
        return (after_ns // self.period_ns + 1) * self.period_ns

    def little_busy(self) -> int:
        """LITTLE cores running a thread right now."""
        cores = self.cpu.cores
        return sum(1 for cid in self.little if cores[cid].current is not None)

    def little_saturated_share(
        self, start_ns: npt.ArrayLike, end_ns: npt.ArrayLike, *, big_idle: bool = False
    ) -> npt.NDArray[np.float64]:
        """Per window ``[start, end]``, the share of samples in it at which every LITTLE
        core was busy (``big_idle``: and another core idle); a window shorter than one
        sample uses the sample before it."""
        raw = np.frombuffer(bytes(self._samples), dtype=np.uint8).astype(np.int64)
        samples = (raw == 3).astype(np.int64) if big_idle else raw & 1
        start = np.asarray(start_ns, dtype=np.int64)
        end = np.asarray(end_ns, dtype=np.int64)
        if not len(samples):
            return np.zeros(start.shape, dtype=np.float64)
        last = len(samples) - 1
        first_i = np.minimum(-(-start // self.sample_ns), last)
        last_i = np.minimum(end // self.sample_ns, last)
        cumsum = np.concatenate(([0], np.cumsum(samples)))
        n = last_i - first_i + 1
        inside = (cumsum[last_i + 1] - cumsum[first_i]) / np.maximum(n, 1)
        before = samples[np.minimum(start // self.sample_ns, last)].astype(np.float64)
        return np.where(n > 0, inside, before).astype(np.float64)

    def compositions(self) -> pd.DataFrame:
        """One row per composition: V-Sync, end, LITTLE busy cores, whether SF's affinity
        was widened, its scheduling delay, and whether it missed the next V-Sync."""
        import pandas as pd

        columns = ["vsync_ns", "end_ns", "little_busy", "widened", "runnable_ns", "surfaces"]
        table = pd.DataFrame(self._records, columns=columns)
        table["missed_vsync"] = table["end_ns"] > table["vsync_ns"] + self.period_ns
        return table

    # -- SurfaceFlinger ---------------------------------------------------------------
    def _invalidate(self) -> None:
        wake = self._wake
        if wake is not None and not wake.triggered:
            wake.succeed()

    def _surfaceflinger(self) -> Generator[Event, object, None]:
        env, cpu, sf = self.env, self.cpu, self.sf_thread
        while True:
            if not any(s._queued for s in self.surfaces):
                self._wake = Event(env)
                yield self._wake
                self._wake = None
            vsync = self.next_vsync(max(env.now - 1, self._last_vsync))
            if vsync > env.now:
                yield env.timeout(vsync - env.now)
            self._last_vsync = vsync
            busy = self.little_busy()
            self._decide_cpuset(busy)
            latched = [s for s in self.surfaces if s._latch(vsync)]
            if not latched:
                continue
            runnable0 = _runnable_ns(sf)
            yield cpu.run(sf, self.sf_cycles)
            delay = _runnable_ns(sf) - runnable0
            for surface in latched:
                surface._composed(delay)
            self._records.append((vsync, env.now, busy, self._widened, delay, len(latched)))

    def _decide_cpuset(self, little_busy: int) -> None:
        """big_when_little_saturated: all cores while every LITTLE core is busy."""
        if self.config.sf_cpuset != "big_when_little_saturated":
            return
        widen = little_busy == len(self.little)
        if widen != self._widened:
            self._widened = widen
            cpus = None if widen else self.little
            self.cpu.set_affinity(self.sf_thread, cpus)
            self.sf_binder.set_affinity(cpus)

    def _sample(self, _: object) -> None:
        cores = self.cpu.cores
        busy = all(cores[cid].current is not None for cid in self.little)
        idle_big = busy and any(
            c.online and c.current is None for c in cores if c.cid not in self.little
        )
        self._samples.append(3 if idle_big else 1 if busy else 0)
        self.env.schedule(self.sample_ns, self._sample)
