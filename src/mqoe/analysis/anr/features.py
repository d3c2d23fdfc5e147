"""Stack normalisation, feature vectors and similarity (steps 2–3 of the root-cause pipeline
of the Android responsiveness study, "Aging or Glitching?", MobiCom 2020).

**Normalisation.** Every frame string goes through :data:`NORMALISATION_RULES`, an
*ordered* list of regular expressions (offsets before argument lists, lambdas before
anonymous-class numbers, …), repeated until nothing changes, so that
``normalise(normalise(x)) == normalise(x)``. What it removes: source locations and line
numbers, native/kernel offsets, BuildIds, raw addresses and other hex, kernel ``[<…>]``
addresses, lambda and synthetic-class suffixes (``$$ExternalSyntheticLambda3``,
``$$Lambda$12/0x…``, ``lambda$onCreate$0``), anonymous-class and accessor numbers
(``$1``, ``access$000``), ids after ``_``/``:`` (``Binder:1234_5``) and the digits of
obfuscated one- or two-letter identifiers (``a.b.c3`` → ``a.b.c#``).

**Features** of an event describe its critical thread(s):

* generic ``F_p`` — a *set* with exactly one ``kind=value`` item per kind of
  :data:`GENERIC_KINDS`: ``cpu`` (bucket of the critical thread's CPU time from
  utm+stm, else schedstat: ``idle`` < 0.1 s ≤ ``low`` < 1 s ≤ ``mid`` < 10 s ≤ ``high``,
  or ``unknown``), ``mem`` (``lmk`` when kernel frames show direct reclaim / the
  low-memory killer, else ``gc`` when a critical thread waits for or runs the GC or any
  thread of the app is ``WaitingForGcToComplete``, else ``normal``), ``isa`` (``arm64``,
  ``arm``, ``x86_64``, ``x86`` from the app's native library paths, or ``unknown``),
  ``state`` (ART state of the first critical thread, Dalvik names mapped to ART ones),
  ``sched`` (its kernel state letter), ``watchdog`` and ``deadlock`` (``yes``/``no``),
  ``where`` (``app`` when the first critical thread is in the app process, else
  ``system``).
* specific ``F_c`` — a *term-count vector* over the kinds of :data:`SPECIFIC_KINDS`:
  ``java:<fn>`` (normalised Java frames) and ``native:<symbol>``, ``lib:<library>``
  (basename of each native frame's library), ``kernel:<fn>`` (kernel frames, and the wait
  channel of a thread that has no frames: a Waiting Channels dump), ``proc:<name>`` (each
  process on the wait-for path), ``locks=<n>`` (lock lines of the critical threads,
  capped at 5) and ``waitfor=<n>`` (wait-for length, capped at 5). At most
  :data:`MAX_STACK_FRAMES` frames per critical thread are used, from the top.

**Similarity** of events *x* and *y*::

    sim = (|F_p| * Jaccard(P_x, P_y) + |F_c| * cosine(C_x, C_y)) / (|F_p| + |F_c|)

where the weights are the **cardinalities of the feature families**, i.e. the number of
feature kinds in each: ``|F_p| = len(GENERIC_KINDS) = 8`` and
``|F_c| = len(SPECIFIC_KINDS) = 6``. They are constants (not per-event counts), so the
similarity is symmetric and the clustering bounds are simple. Jaccard of two empty sets
and cosine of two zero vectors are 1; cosine of a zero and a non-zero vector is 0.
Identical features have similarity exactly 1.0 (cosine is computed as an integer dot
product over the square root of an integer product).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mqoe.analysis.anr.graph import CriticalPath, WaitForGraph
from mqoe.analysis.anr.model import AnrFile, Frame, ThreadDump

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

GENERIC_KINDS = ("cpu", "mem", "isa", "state", "sched", "watchdog", "deadlock", "where")
SPECIFIC_KINDS = ("function", "library", "kernel", "process", "locks", "waitfor")
W_GENERIC = float(len(GENERIC_KINDS))  # |F_p|
W_SPECIFIC = float(len(SPECIFIC_KINDS))  # |F_c|
MAX_STACK_FRAMES = 64

NORMALISATION_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"\s*\(BuildId: [^)]*\)", ""),  # build ids change with every build
        (r"^\[<[0-9a-fA-F]+>\]\s*", ""),  # old kernel stack address prefix
        (r"(?:\+(?:0x)?[0-9a-fA-F]+(?:/(?:0x)?[0-9a-fA-F]+)?)+$", ""),  # +8, +0x88/0xa0
        (r"\(.*\)$", ""),  # (File.java:88), (Native method), C++ argument lists
        (r"\$\$ExternalSynthetic[A-Za-z]*\d*", "$$Lambda"),  # D8/R8 desugared lambdas
        (r"\$\$Lambda(?:\$[^.]*)?", "$$Lambda"),  # $$Lambda$12/0x0000000801234
        (r"\blambda\$(\w+?)\$\d+", r"lambda$\1"),  # lambda$onCreate$0
        (r"\baccess\$\d+", "access$N"),  # synthetic accessors
        (r"\$\d+(?=[.$]|$)", "$N"),  # anonymous classes: Foo$1.run
        (r"0x[0-9a-fA-F]+", "0x?"),  # addresses
        (r"\b[0-9a-fA-F]{8,}\b", "?"),  # bare hex (pcs, hashes)
        (r"(?<=[_:])\d+", "N"),  # thread/process ids: Binder:1234_5
        (r"(?<=\.)([a-zA-Z]{1,2})\d{1,3}(?=[.$]|$)", r"\1#"),  # obfuscated a.b.c3
        (r"\s+", " "),
    )
)
_MAX_PASSES = 8


@functools.lru_cache(maxsize=1 << 16)
def normalise_frame(text: str) -> str:
    """``text`` with the ordered :data:`NORMALISATION_RULES` applied until stable."""
    for _ in range(_MAX_PASSES):
        before = text
        for pattern, replacement in NORMALISATION_RULES:
            text = pattern.sub(replacement, text)
        text = text.strip()
        if text == before:
            break
    return text


@functools.lru_cache(maxsize=1 << 14)
def normalise_library(path: str) -> str:
    """The library's file name, normalised (``/data/app/~~x==/a-1/lib/arm64/libfoo.so`` →
    ``libfoo.so``)."""
    name = path.rstrip("/").rsplit("/", 1)[-1].rsplit("!", 1)[-1]
    return normalise_frame(name)


_HEX = frozenset("0123456789abcdefABCDEFx/")


def _cut_offset(text: str) -> str:
    """``text`` without a trailing ``+8`` / ``+0x88/0xa0``: what the offset rule removes,
    done first so the cached normalisation sees few distinct strings."""
    head, plus, tail = text.rpartition("+")
    return head if plus and tail and head and _HEX.issuperset(tail) else text


def _java(frame: Frame) -> str:
    # The source location is what the ``\(.*\)$`` rule strips; leaving it out before
    # normalising gives the same result and lets the cache hit across builds.
    return normalise_frame(frame.function)


def frame_terms(frame: Frame) -> list[str]:
    """The specific-feature terms of one frame."""
    if frame.kind == "java":
        return ["java:" + _java(frame)]
    if frame.kind == "native":
        terms = ["lib:" + normalise_library(frame.location)]
        if frame.function:
            terms.append("native:" + normalise_frame(_cut_offset(frame.function)))
        return terms
    return ["kernel:" + normalise_frame(_cut_offset(frame.function))]


def frame_label(frame: Frame) -> str:
    """One normalised line of a representative stack."""
    if frame.kind == "java":
        return _java(frame)
    if frame.kind == "native":
        symbol = normalise_frame(_cut_offset(frame.function)) if frame.function else "?"
        return f"{normalise_library(frame.location)}!{symbol}"
    return "kernel!" + normalise_frame(_cut_offset(frame.function))


def wait_channel(thread: ThreadDump) -> str | None:
    """The kernel function a thread without frames sleeps in, from a Waiting Channels
    section (None when it has frames, no channel, or ``0``: it was running)."""
    wchan = thread.wchan
    return wchan if wchan and wchan != "0" and not thread.frames else None


def stack_functions(threads: Iterable[ThreadDump]) -> list[str]:
    """What the root-cause rules read of ``threads``: the functions of their top
    :data:`MAX_STACK_FRAMES` frames, or a frameless thread's wait channel."""
    functions: list[str] = []
    for thread in threads:
        functions.extend(f.function for f in thread.frames[:MAX_STACK_FRAMES])
        wchan = wait_channel(thread)
        if wchan is not None:
            functions.append(wchan)
    return functions


def stack_labels(thread: ThreadDump) -> list[str]:
    """The normalised lines of a thread's representative stack (``wchan!fn`` for a
    thread known only by its wait channel)."""
    labels = [frame_label(f) for f in thread.frames[:MAX_STACK_FRAMES]]
    wchan = wait_channel(thread)
    if wchan is not None:
        labels.append("wchan!" + normalise_frame(_cut_offset(wchan)))
    return labels


@dataclass(frozen=True)
class Features:
    """Generic items (a set) and specific term counts (sorted by term, counts ≥ 1)."""

    generic: frozenset[str]
    specific: tuple[tuple[str, int], ...]

    @staticmethod
    def make(generic: Iterable[str], specific: Counter[str] | dict[str, int]) -> Features:
        return Features(
            frozenset(generic), tuple(sorted((t, int(c)) for t, c in specific.items() if c > 0))
        )


_DALVIK_STATES = {
    "MONITOR": "Blocked",
    "WAIT": "Waiting",
    "TIMED_WAIT": "TimedWaiting",
    "NATIVE": "Native",
    "RUNNABLE": "Runnable",
    "RUNNING": "Runnable",
    "SUSPENDED": "Suspended",
    "SLEEPING": "Sleeping",
    "VMWAIT": "WaitingForGcToComplete",
    "ZOMBIE": "Terminated",
    "INITIALIZING": "Starting",
    "STARTING": "Starting",
}
KNOWN_STATES = frozenset(
    [
        "Runnable", "Sleeping", "TimedWaiting", "Waiting", "Blocked", "Native", "Suspended",
        "Starting", "Terminated", "WaitingForGcToComplete", "WaitingPerformingGc",
        "WaitingForCheckPointsToRun", "WaitingForDebuggerSend", "WaitingForDebuggerToAttach",
        "WaitingInMainDebuggerLoop", "WaitingForSignalCatcherOutput",
        "WaitingInMainSignalCatcherLoop", "WaitingForJniOnLoad", "WaitingForTaskProcessor",
        "WaitingForMethodTracingStart", "WaitingForVisitObjects",
        "WaitingForGetObjectsAllocated", "WaitingWeakGcRootRead", "WaitingForGcThreadFlip",
        "NativeForAbort", "WaitingForDeoptimization", "WaitingForGcRoots",
    ]
)  # fmt: skip
_SCHED_LETTERS = frozenset("RSDTtXZPIKWN")
_GC = re.compile(r"art::gc::|WaitForGcToComplete|CollectGarbage|ConcurrentCopying|TrimHeap")
_LMK = re.compile(
    r"lowmemorykiller|lowmem_|\blmk|try_to_free_pages|__alloc_pages_slowpath|shrink_node"
)


def normalise_state(state: str) -> str:
    """ART thread state of a header (Dalvik names mapped), ``other`` when unknown."""
    state = _DALVIK_STATES.get(state, state)
    return state if state in KNOWN_STATES else ("unknown" if not state else "other")


def cpu_bucket(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 0.1:
        return "idle"
    if seconds < 1.0:
        return "low"
    return "mid" if seconds < 10.0 else "high"


def _isa(anr: AnrFile) -> str:
    app = anr.app
    for thread in app.threads if app is not None else ():
        for frame in thread.frames:
            if frame.kind != "native":
                continue
            path = frame.location
            if "x86_64" in path:
                return "x86_64"
            if "lib64" in path or "arm64" in path:
                return "arm64"
            if "x86" in path:
                return "x86"
            if "/lib/" in path or "/arm/" in path:
                return "arm"
    return "unknown"


def _memory(anr: AnrFile, critical: list[ThreadDump]) -> str:
    frames = stack_functions(critical)
    if any(_LMK.search(f) for f in frames):
        return "lmk"
    if any(_GC.search(f) for f in frames) or any(t.name == "HeapTaskDaemon" for t in critical):
        return "gc"
    app = anr.app
    threads = app.threads if app is not None else []
    gc_wait = "WaitingForGcToComplete"
    if any(normalise_state(t.state) == gc_wait for t in threads + critical):
        return "gc"
    return "normal"


def event_features(graph: WaitForGraph, walk: CriticalPath) -> Features:
    """The feature vector of one event (see the module docstring)."""
    anr = graph.anr
    critical = [graph.thread(node) for node in walk.critical]
    first = critical[0] if critical else None
    sched = (first.sched_state or "") if first is not None else ""
    generic = (
        "cpu=" + cpu_bucket(max((s for t in critical if (s := t.cpu_s) is not None), default=None)),
        "mem=" + _memory(anr, critical),
        "isa=" + _isa(anr),
        "state=" + (normalise_state(first.state) if first is not None else "unknown"),
        "sched=" + (sched if sched in _SCHED_LETTERS else ("unknown" if not sched else "other")),
        "watchdog=" + ("yes" if anr.watchdog else "no"),
        "deadlock=" + ("yes" if walk.cycle else "no"),
        "where=" + ("app" if walk.critical and walk.critical[0][0] == 0 else "system"),
    )
    specific: Counter[str] = Counter()
    locks = 0
    for thread in critical:
        for frame in thread.frames[:MAX_STACK_FRAMES]:
            specific.update(frame_terms(frame))
        wchan = wait_channel(thread)
        if wchan is not None:
            specific["kernel:" + normalise_frame(_cut_offset(wchan))] += 1
        locks += len(thread.locks)
    for p in dict.fromkeys(node[0] for node in walk.path):
        specific["proc:" + normalise_frame(anr.processes[p].name)] += 1
    specific[f"locks={min(locks, 5)}"] += 1
    specific[f"waitfor={min(walk.length, 5)}"] += 1
    return Features.make(generic, specific)


# -- similarity ------------------------------------------------------------------------


def combine(
    inter: IntArray, union: IntArray, dot: FloatArray, n2a: IntArray, n2b: IntArray
) -> FloatArray:
    """Similarity from integer ingredients: the one formula both clusterings use.

    ``inter``/``union`` are generic-set sizes, ``dot`` the (integer-valued) dot product of
    the specific count vectors and ``n2a``/``n2b`` their squared norms.
    """
    jaccard = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
    prod = n2a.astype(np.float64) * n2b.astype(np.float64)
    both_zero = (n2a == 0) & (n2b == 0)
    cosine = np.where(prod > 0, dot / np.sqrt(np.where(prod > 0, prod, 1.0)), both_zero * 1.0)
    result: FloatArray = (W_GENERIC * jaccard + W_SPECIFIC * cosine) / (W_GENERIC + W_SPECIFIC)
    return result


def similarity(a: Features, b: Features) -> float:
    """Similarity of two events' features, in [0, 1] (see the module docstring)."""
    inter = len(a.generic & b.generic)
    union = len(a.generic | b.generic)
    counts = dict(a.specific)
    dot = sum(counts.get(term, 0) * c for term, c in b.specific)
    n2a = sum(c * c for _, c in a.specific)
    n2b = sum(c * c for _, c in b.specific)
    value = combine(
        np.array([inter]),
        np.array([union]),
        np.array([float(dot)]),
        np.array([n2a]),
        np.array([n2b]),
    )
    return float(value[0])


def required_bounds(threshold: float) -> tuple[float, float]:
    """(least Jaccard, least cosine) a pair can have and still reach ``threshold``."""
    total = threshold * (W_GENERIC + W_SPECIFIC)
    return (total - W_SPECIFIC) / W_GENERIC, (total - W_GENERIC) / W_SPECIFIC
