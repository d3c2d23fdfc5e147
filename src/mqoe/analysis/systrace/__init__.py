"""ftrace / atrace / systrace text (the kernel's ftrace text format, as atrace and systrace
write it): thread states, preemptions, frames, critical paths and the causes of slow
frames, from files pulled from real phones.

The parser streams the file once and feeds the same input tables as simulated runs to
:mod:`mqoe.metrics.sched` and :mod:`mqoe.metrics.jank`, so real and simulated numbers
mean the same thing. Memory does not grow with the lines: per thread and per CPU it
keeps running totals; per frame one row of numbers (a frame's causes are computed when
it is complete, from the state history of its threads, which is then dropped up to the
oldest frame still open). Realistic traces with ground truth, and big ones, come from
:mod:`mqoe.generators.systrace`.

Modules: :mod:`.read` (containers), :mod:`.model` (the parsed trace, limits),
:mod:`.state`, :mod:`.sched` and :mod:`.frames` (the parser's state and events),
:mod:`.tables` (the finished tables), :mod:`.parse` (the line loop, entry points),
:mod:`.clusters` (CPU cluster maps), :mod:`.report` (what the CLI prints).

File format accepted
--------------------
Containers (plain, gzip, ``atrace -z``, both generations of systrace HTML report, a
JS-escaped text; any encoding and line end :mod:`mqoe.analysis.textio` reads) are
found by :mod:`mqoe.analysis.systrace.read`. An event line is::

    <task>-<tid> [(<tgid>|-----)] [<cpu>] [<irq-flags>] <seconds>.<fraction>: <event>: <fields>

* ``task`` may hold spaces and dashes (``Binder:1234_2-1250``, ``Jit thread pool-2310``:
  the tid is the digits after the *last* dash that is followed by the CPU column);
  ``<...>`` is atrace's "name unknown" (the kernel's saved_cmdlines had no entry): such a
  thread is named from the ``comm`` fields of its sched events, else from any line that
  names its tid, else stays ``<...>``. A thread's tgid comes from the tgid column of any
  of its lines, else from the pid of its trace markers. The tgid column and the 4- or
  5-character irq-flags column are optional; the fraction has 1–9 digits (µs in
  practice; read as ns).
* ``sched_switch: prev_comm= prev_pid= prev_prio= prev_state= ==> next_comm= next_pid=
  next_prio=``. ``prev_state`` R / R+ → Runnable (Preempted); S → Sleeping; D (D|K, …)
  → Blocked on I/O; X / x / Z → exited (no further accounting); anything else (I, T,
  t, P, W, …) → ``other_ns``.
* ``sched_wakeup`` / ``sched_waking`` / ``sched_wakeup_new``: ``comm= pid= prio=``, then
  optional ``success=`` and ``target_cpu=``.
* Trace markers: ``tracing_mark_write: <payload>``, or ``0: <payload>`` as older kernels
  (Android 4.x) print the same write to ``trace_marker``. Payloads: ``B|pid|name``,
  ``E|pid`` or ``E`` (name after ``E|pid|`` ignored), ``S|pid|name|cookie``,
  ``F|pid|name|cookie``, ``C|pid|name|value`` (a counter track; fields after the value
  are ignored). Other payloads (``I|…``, ``trace_event_clock_sync: …``, free text) are
  counted, not read.
* Any other event is skipped and counted per name. Blank lines, ``#`` comments and
  lines that do not look like events (``TRACE:``, HTML) are ignored and counted.

Errors: a line that looks like an event (``<task>-<tid> … [<cpu>]``) but does not parse,
a known event or marker with malformed fields, or a line over ``MAX_LINE_CHARS`` is an
:class:`~mqoe.errors.InputFileError` naming ``file:line``; with ``skip_bad_lines`` it is
skipped and counted (:attr:`ParseStats.bad_lines`). A file with no event at all is an
error. Timestamps that go backwards on a CPU are counted (``backwards_ts``); durations
are never negative (a thread's clock is clamped to its last change).

Definitions
-----------
* **Thread states** (as Perfetto): a thread's state is known from its first sched event
  (switched in or out, woken) to the end of the trace; Runnable = woken, waiting for a
  CPU; Runnable (Preempted) = switched out with prev_state R/R+ until it runs again. A
  trace without ``sched_switch`` events has no thread states (a warning says so; no
  zeros are reported as measured), nor has a thread seen only in trace markers.
* **Preemption** = one switch with prev_state R/R+ to another thread (not idle):
  ``victim_wait_ns`` until the victim runs again, ``preemptor_run_ns`` until the next
  switch on that CPU (−1 when the trace ends first).
* **Frames**, per process (a marker's pid is its process), by Android release:

  ==============  ==========================  ==========================================
  release         a frame starts with          it ends at
  ==============  ==========================  ==========================================
  5.0 and later   an outermost                 the end of the first outermost
                  ``Choreographer#doFrame``    ``DrawFrame`` (``DrawFrames`` on 12+) of
                  on the main thread           the process that begins after the frame's
                  (``… <vsync id>`` on 12+)    start and before its next frame's start
                                               (RenderThread draws); the doFrame's end if
                                               no such DrawFrame comes
  4.1 – 4.4       an outermost                 the end of the doFrame: the main thread
                  ``Choreographer#doFrame``    draws and swaps inside it (doFrame ›
                                               performTraversals › draw › eglSwapBuffers)
  no doFrame      an outermost                 the end of performTraversals (it holds draw
  traced          ``performTraversals``, in    › eglSwapBuffers), or of a DrawFrame
                  a process with no doFrame    following it, as above
                  anywhere in the trace
  ==============  ==========================  ==========================================

  Duration = start → end. SR/FF by :mod:`mqoe.metrics.jank` (naive: no buffer state in
  the trace). ``vsync_id`` = the number after ``Choreographer#doFrame`` (−1 without).
  Composition = the first outermost SurfaceFlinger ``onMessageReceived``/``composite``/
  ``handleMessageRefresh`` slice starting within ``COMPOSE_WINDOW_NS`` after the frame.
  A frame still open ``MAX_OPEN_FRAME_NS`` after its start (a lost E marker) is given up
  and counted with the incomplete frames.
* **Critical path**: from the frame's root slice (then the DrawFrame) down, the longest
  child at each level, with its self time (duration minus its children's).
* **Per-frame causes** over the frame's main thread and RenderThread during the frame:
  ``sched_delay`` = Runnable + Runnable (Preempted) time, ``io`` = Blocked-on-I/O time,
  ``binder`` = per thread the larger of its ``binder transaction``/``binder reply``
  slices and its waits on a ``Binder:*`` thread (it woke that thread — ``sched_waking``
  context, or ``sched_wakeup`` when the trace has no waking events — and was next woken
  by it). Without ``sched_switch`` events ``sched_delay`` and ``io`` are unknown (NaN).
* **Counter tracks**: per (pid, name) of ``C`` markers: samples, min, max, last value.
* **LITTLE saturation**: given a CPU → cluster map, the time when every LITTLE CPU runs
  a task while some big CPU is idle. A CPU's state is unknown before its first
  sched_switch; an unknown LITTLE CPU is not busy, an unknown big CPU is not idle.
"""

from mqoe.analysis.systrace.clusters import cluster_roles, clusters_from_profile, parse_clusters
from mqoe.analysis.systrace.model import (
    COMPOSE_WINDOW_NS,
    THREAD_COLUMNS,
    ParseStats,
    SystraceTrace,
)
from mqoe.analysis.systrace.parse import load_systrace, parse_systrace_lines, parse_systrace_text
from mqoe.analysis.systrace.read import MAX_LINE_CHARS
from mqoe.analysis.systrace.report import (
    CAUSES,
    SystraceReport,
    analyze,
    frame_summary,
    saturation_summary,
    select_threads,
    slow_frame_correlation,
)

__all__ = [
    "CAUSES",
    "COMPOSE_WINDOW_NS",
    "MAX_LINE_CHARS",
    "THREAD_COLUMNS",
    "ParseStats",
    "SystraceReport",
    "SystraceTrace",
    "analyze",
    "cluster_roles",
    "clusters_from_profile",
    "frame_summary",
    "load_systrace",
    "parse_clusters",
    "parse_systrace_lines",
    "parse_systrace_text",
    "saturation_summary",
    "select_threads",
    "slow_frame_correlation",
]
