"""What a trace is parsed into (:class:`SystraceTrace`, :class:`ParseStats`) and the
parser's limits and windows (definitions: :mod:`mqoe.analysis.systrace`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.systrace.read import ContainerStats
from mqoe.metrics.sched import STATE_COLUMNS

MAX_SLICE_DEPTH = 1_000  # deeper B markers on one thread are counted, not kept
MAX_TREE_NODES = 20_000  # per frame slice tree; beyond, children are not collected
MAX_KEYS = 10_000  # distinct skipped-event names, counters, open async slices, names
MAX_TASKS = 100_000  # task columns remembered (Android's pid_max is 32768)
COMPOSE_WINDOW_NS = 50_000_000  # a composition later than this is not the frame's
MAX_OPEN_FRAME_NS = 60_000_000_000  # a frame open this long lost its end marker
SATURATED_FRAME_FRACTION = 0.5  # a frame is "LITTLE-saturated" for at least this share
THREAD_COLUMNS = (*STATE_COLUMNS, "other_ns")
UNKNOWN_COMM = "<...>"  # atrace's name for a task whose comm it did not know

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# -- results ----------------------------------------------------------------------------


@dataclass
class ParseStats(ContainerStats):
    """What the file held, and what the parser skipped or repaired in it."""

    lines: int = 0
    events: int = 0
    switches: int = 0  # sched_switch events
    wakeups: int = 0  # sched_wakeup / sched_waking / sched_wakeup_new events
    markers: int = 0  # trace-marker writes (tracing_mark_write or `0:`)
    slices: int = 0  # B markers
    counter_samples: int = 0  # C markers
    async_markers: int = 0  # S and F markers
    comment_lines: int = 0
    other_lines: int = 0  # not trace events (TRACE:, HTML, process dumps)
    skipped_events: dict[str, int] = field(default_factory=dict)  # by event name
    bad_lines: int = 0
    bad_examples: list[tuple[int, str]] = field(default_factory=list)
    overlong_lines: int = 0
    backwards_ts: int = 0
    unsupported_markers: int = 0
    unmatched_ends: int = 0
    unterminated_slices: int = 0
    too_deep_slices: int = 0
    truncated_trees: int = 0
    unassigned_drawframes: int = 0
    incomplete_frames: int = 0
    unmatched_async_finish: int = 0
    dropped_keys: int = 0
    preempted_by_idle: int = 0
    lost_events: int = 0  # "[LOST n EVENTS]": the kernel's ring buffer overflowed
    binary_lines: int = 0  # lines holding NUL bytes or undecodable bytes
    unseen_mapped_cpus: list[int] = field(default_factory=list)  # in the map, never switched
    unmapped_cpus: list[int] = field(default_factory=list)  # switched, not in the map

    @property
    def thread_states_known(self) -> bool:
        """Whether the trace has the scheduler events thread states are built from."""
        return self.switches > 0

    def contents(self) -> dict[str, int]:
        """What the trace holds, by kind of event."""
        return {
            "events": self.events,
            "sched_switch": self.switches,
            "sched_wakeup": self.wakeups,
            "trace_markers": self.markers,
            "slice_begins": self.slices,
            "counter_samples": self.counter_samples,
            "async_markers": self.async_markers,
            "other_events": sum(self.skipped_events.values()),
        }

    def warnings(self) -> list[str]:
        """One line per thing a user should know about, in plain words."""
        out = []
        if self.events and not self.switches:
            out.append("no sched_switch events: thread states, preemptions and CPU use are "
                       "unknown (capture with the 'sched' category to measure them)")  # fmt: skip
        if self.bad_lines:
            where = ", ".join(f"line {n}: {w}" for n, w in self.bad_examples[:3])
            out.append(f"{self.bad_lines} bad lines skipped ({where})")
        named = [
            ("overlong_lines", "lines over the length limit"),
            ("backwards_ts", "timestamps going backwards on a CPU"),
            ("unmatched_ends", "E markers without a B"),
            ("unterminated_slices", "slices still open at the end"),
            ("too_deep_slices", f"slices nested deeper than {MAX_SLICE_DEPTH}"),
            ("truncated_trees", "frame slice trees truncated"),
            ("unassigned_drawframes", "DrawFrame slices without a preceding doFrame"),
            ("incomplete_frames", "frames cut by the end of the trace or a lost E marker"),
            ("unmatched_async_finish", "F markers without an S"),
            ("dropped_keys", "counters/async/event names over the limit"),
            ("html_json_blocks", "JSON trace blocks skipped"),
        ]
        for key, text in named:
            value = getattr(self, key)
            if value:
                out.append(f"{value} {text}")
        if self.trailing_bytes:
            out.append(f"{self.trailing_bytes} bytes after the end of the compressed trace "
                       "were ignored")  # fmt: skip
        if self.lost_events:
            out.append(f"the kernel lost {self.lost_events} events (ring buffer overflow): "
                       "state times and frames near the gaps are approximate")  # fmt: skip
        if self.unseen_mapped_cpus:
            cpus = ",".join(map(str, self.unseen_mapped_cpus))
            out.append(f"CPUs {cpus} of the cluster map never ran a task in the trace "
                       "(offline?): LITTLE saturation treats them as unknown")  # fmt: skip
        if self.unmapped_cpus:
            cpus = ",".join(map(str, self.unmapped_cpus))
            out.append(f"CPUs {cpus} are not in the cluster map")
        return out


@dataclass
class SystraceTrace:
    """One parsed trace. Times are ftrace clock nanoseconds; tables are tidy DataFrames.

    * ``threads``: tid, thread, tgid (−1 unknown), process, the state times
      ``running_ns runnable_ns runnable_preempted_ns sleeping_ns blocked_io_ns other_ns``
      — the input of :func:`mqoe.metrics.sched.thread_states` — and ``states_known``
      (False: no sched event of the thread, or none in the trace; its zeros are not
      measurements).
    * ``preemptions``: time_ns, core, victim_tid, preemptor_tid, victim_wait_ns,
      preemptor_run_ns — the input of :func:`mqoe.metrics.sched.preemption_summary`.
    * ``frames``: one row per complete frame (see the module docstring).
    * ``critical_path``: frame, stage (main/render), depth, name, dur_ns, self_ns.
    * ``compositions``: SurfaceFlinger's outermost composition slices.
    * ``cpus``: per CPU, cluster, known_ns (since its first switch), busy_ns, switches.
    * ``counters``: per (pid, name) C markers: process, samples, min, max, last.
    * ``async_slices``: per (pid, name) S/F pairs: count, total_ns, max_ns.
    """

    source: str
    stats: ParseStats
    start_ns: int
    end_ns: int
    threads: pd.DataFrame
    preemptions: pd.DataFrame
    frames: pd.DataFrame
    critical_path: pd.DataFrame
    compositions: pd.DataFrame
    cpus: pd.DataFrame
    counters: pd.DataFrame
    async_slices: pd.DataFrame
    little_cpus: tuple[int, ...] = ()
    big_cpus: tuple[int, ...] = ()
    saturated_ns: int | None = None  # None: no cluster map (or no big cores)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def saturated_share(self) -> float:
        """Share of trace time with all LITTLE CPUs busy and a big CPU idle (NaN: n/a)."""
        if self.saturated_ns is None or self.duration_ns <= 0:
            return float("nan")
        return self.saturated_ns / self.duration_ns
