"""Synthetic ``dumpsys gfxinfo … framestats`` dumps with their ground truth (for tests,
examples and benchmarks), and :func:`write_large_dump` for big-input measurements."""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mqoe.analysis.gfxinfo.format import (
    COLUMNS,
    COUNTERS,
    DEFAULT_FRAME_INTERVAL_NS,
    HISTOGRAM_MS,
    LAYOUT_ANDROID14,
    LAYOUT_NEW,
    LAYOUT_OLD,
    MARKER,
    NO_INPUT,
    PERCENTILES,
)
from mqoe.metrics.jank import SLOW_FRAME_NS

IntArray = npt.NDArray[np.int64]
_MARKER = MARKER
#: Android 12–14 print each of these labels over the other's value (mqoe.analysis.gfxinfo.format).
_AOSP_LABEL = {"FrameInterval": "FrameStartTime", "FrameStartTime": "FrameInterval"}


@dataclass(frozen=True)
class SynthPackage:
    """Ground truth of one synthetic package section."""

    package: str
    pid: int
    header: tuple[str, ...]  # column names as written (known and unknown)
    rows: dict[str, IntArray]  # header name → values of every row in file order
    summary: dict[str, Any]  # SUMMARY_COLUMNS as written (process scope)
    histogram: dict[int, int]  # bucket ms → frames
    frames: int  # normal frames
    sr: int
    ff: int
    sr_aware: int | None
    ff_aware: int | None
    sr_to_sr_frames: tuple[int, ...]  # gaps in frames, in order
    ff_to_sr_frames: tuple[int, ...]


@dataclass(frozen=True)
class SynthTruth:
    packages: tuple[SynthPackage, ...]


def synth_gfxinfo(
    rng: np.random.Generator,
    packages: Sequence[str] = ("com.example.mail",),
    frames: int = 300,
    layout: Literal["old", "new", "android14"] | Sequence[str] = "new",
    *,
    refresh_hz: float = 60.0,
    slow_rate: float = 0.04,
    frozen_rate: float = 0.004,
    flagged: int = 3,
    blocks: int = 1,
    extra_columns: int = 0,
    idle_packages: Sequence[str] = (),
) -> tuple[str, SynthTruth]:
    """A realistic ``dumpsys gfxinfo … framestats`` dump and the truth it was made from.

    Each package renders ``frames`` rows: bursts of frames paced by V-Sync (mostly 5–14 ms,
    a ``slow_rate`` share slow at 17–600 ms, ``frozen_rate`` frozen at 0.7–1.8 s, slow
    frames more likely right after a frozen one), a UI thread and a RenderThread in a
    pipeline, triple buffering with SurfaceFlinger presenting one buffer per V-Sync (and
    stalling now and then, which blocks the app in dequeueBuffer), and ``flagged`` rows
    with Flags ≠ 0. ``layout`` is ``old`` (16 columns), ``new`` (24), ``android14`` (23, as
    an Android 14 phone prints them: FrameInterval and FrameStartTime each under the other's
    label) or a list of header names (known ones, in any order, each over its own values);
    ``extra_columns`` unknown columns are added at random
    places. ``blocks`` splits the rows into that many PROFILEDATA blocks; ``idle_packages``
    get a section with no frames. Summary lines agree with the normal rows (percentiles by
    AOSP's histogram rule). The truth's aware counts follow the module's documented rule.
    """
    interval = round(1e9 / refresh_hz)
    layouts = {"old": LAYOUT_OLD, "new": LAYOUT_NEW, "android14": LAYOUT_ANDROID14}
    names = layouts[layout] if isinstance(layout, str) else tuple(layout)
    swapped = layout == "android14"
    for name in names:
        if name not in COLUMNS:
            raise ValueError(f"unknown column {name!r}")
    header = list(names)
    for k in range(extra_columns):
        header.insert(int(rng.integers(0, len(header) + 1)), f"VendorExtra{k}")
    out = [
        "Applications Graphics Acceleration Info:",
        f"Uptime: {int(rng.integers(10**6, 10**8))} Realtime: {int(rng.integers(10**8, 10**9))}",
        "",
    ]
    truths = []
    pids = rng.choice(
        np.arange(1000, 32000), size=len(packages) + len(idle_packages), replace=False
    )
    for i, package in enumerate(packages):
        pid = int(pids[i])
        rows = _synth_rows(rng, frames, interval, slow_rate, frozen_rate, flagged)
        for name in header:
            if name.startswith("VendorExtra"):
                rows[name] = rng.integers(-(10**6), 10**12, size=frames)
        truth = _synth_truth(package, pid, tuple(header), rows, interval, names)
        truths.append(truth)
        out += _synth_section(rng, truth, interval, names, blocks, swapped)
    for j, package in enumerate(idle_packages):
        empty = {name: np.zeros(0, np.int64) for name in (*COLUMNS, *header)}
        truth = _synth_truth(package, int(pids[len(packages) + j]), tuple(header), empty,
                             interval, names)  # fmt: skip
        truths.append(truth)
        out += _synth_section(rng, truth, interval, names, 0)
    return "\n".join(out) + "\n", SynthTruth(tuple(truths))


def _synth_rows(
    rng: np.random.Generator,
    n: int,
    interval: int,
    slow_rate: float,
    frozen_rate: float,
    flagged: int,
) -> dict[str, IntArray]:
    """Simulate the UI thread → RenderThread → BufferQueue → SurfaceFlinger pipeline."""
    u = rng.integers
    base = int(u(10**12, 10**13)) // interval * interval  # CLOCK_MONOTONIC ns, on the V-Sync grid
    stage = {  # ns, per frame: uniform draws (stage typical ranges of a mid-range phone)
        "delay": u(50_000, 600_000, n), "input": u(20_000, 400_000, n),
        "anim": u(50_000, 800_000, n), "trav": u(800_000, 4_000_000, n),
        "draw": u(400_000, 2_500_000, n), "wait": u(20_000, 200_000, n),
        "sync": u(150_000, 900_000, n), "issue": u(800_000, 3_500_000, n),
        "swap": u(200_000, 1_500_000, n), "dequeue": u(20_000, 300_000, n),
        "queue": u(50_000, 500_000, n), "gpu": u(200_000, 3_000_000, n),
    }  # fmt: skip
    draws = rng.random((n, 6))
    slow_extra = 17_000_000 + np.minimum(rng.exponential(30e6, n), 580e6).astype(np.int64)
    frozen_extra = u(700_000_000, 1_800_000_000, n)
    idle = u(200_000_000, 2_000_000_000, n)
    flag_at = set(rng.choice(n, size=min(flagged, n), replace=False).tolist()) if n else set()
    if flagged and n:
        flag_at.add(0)  # a window's first frame is flagged (visibility changed)
        while len(flag_at) > min(flagged, n):
            flag_at.remove(max(flag_at))
    cols: dict[str, list[int]] = {name: [] for name in COLUMNS}
    ui_free = base
    rt_free = 0
    presents: list[int] = []
    last_latch = base - interval
    after_frozen = 0
    vsync_id = int(u(10**5, 10**6))
    for i in range(n):
        if draws[i, 0] < 0.01:  # the user pauses between interactions
            ui_free += int(idle[i])
        k = -(-(ui_free - base) // interval)
        intended = base + k * interval
        delay = int(stage["delay"][i])
        if draws[i, 1] < 0.005:  # the main thread was busy when the V-Sync came
            delay += int(u(interval, 4 * interval))
        handle = intended + delay
        vsync = intended + (delay // interval) * interval
        extra = [0, 0, 0, 0]  # traversal, draw, sync, issue
        slow_p = slow_rate * (6 if after_frozen else 1)
        if draws[i, 2] < frozen_rate:
            extra[0] = int(frozen_extra[i])
            after_frozen = 10
        elif draws[i, 2] < frozen_rate + slow_p:
            where = draws[i, 3]
            slot = 0 if where < 0.45 else 1 if where < 0.65 else 2 if where < 0.75 else 3
            extra[slot] = int(slow_extra[i])
        else:
            after_frozen = max(0, after_frozen - 1)
        anim = handle + int(stage["input"][i])
        trav = anim + int(stage["anim"][i])
        draw = trav + int(stage["trav"][i]) + extra[0]
        queued = draw + int(stage["draw"][i]) + extra[1]
        sync_start = max(queued + int(stage["wait"][i]), rt_free)
        issue = sync_start + int(stage["sync"][i]) + extra[2]
        # triple buffering: a free buffer once frame i-2 is on screen (frees frame i-3's)
        free_at = presents[i - 2] if i >= 2 else 0
        wait = max(0, free_at - issue)
        dequeue = int(stage["dequeue"][i]) + wait
        swap = issue + int(stage["issue"][i]) + extra[3] + wait
        done = swap + int(stage["swap"][i])
        rt_free = done
        ui_free = issue  # the UI thread is released once the RenderThread has synced
        if wait and draws[i, 5] < 0.3:  # a stuffed queue drains when the app skips a V-Sync
            ui_free += interval
        # SurfaceFlinger latches one buffer per V-Sync; the display shows it one V-Sync later
        ready = max(done, last_latch + interval)
        stall = interval * int(u(1, 4)) if draws[i, 4] < 0.003 else 0  # SurfaceFlinger late
        last_latch = base + -(-(ready - base) // interval) * interval + stall
        present = last_latch + interval
        presents.append(present)
        has_input = draws[i, 3] < 0.2
        oldest = intended - int(u(500_000, 8_000_000)) if has_input else NO_INPUT
        row = {
            "Flags": int(rng.choice([1, 2, 4])) if i in flag_at else 0,
            "FrameTimelineVsyncId": vsync_id + k,
            "IntendedVsync": intended, "Vsync": vsync,
            "OldestInputEvent": oldest,
            "NewestInputEvent": oldest + int(u(0, 400_000)) if has_input else 0,
            "InputEventId": int(u(1, 2**31)) if has_input else 0,
            "HandleInputStart": handle, "AnimationStart": anim,
            "PerformTraversalsStart": trav, "DrawStart": draw,
            "FrameDeadline": intended + interval, "FrameStartTime": handle - int(u(5_000, 50_000)),
            "FrameInterval": interval, "WorkloadTarget": interval,
            "SyncQueued": queued, "SyncStart": sync_start, "IssueDrawCommandsStart": issue,
            "SwapBuffers": swap, "FrameCompleted": done,
            "DequeueBufferDuration": dequeue, "QueueBufferDuration": int(stage["queue"][i]),
            "GpuCompleted": done + int(stage["gpu"][i]),
            "SwapBuffersCompleted": swap + int(stage["swap"][i]) // 2,
            "DisplayPresentTime": present, "CommandSubmissionCompleted": swap,
        }  # fmt: skip
        for name, value in row.items():
            cols[name].append(value)
    if n:
        cols["DisplayPresentTime"][-1] = -1  # the last frame's fence had not signalled yet
    return {name: np.array(values, dtype=np.int64) for name, values in cols.items()}


def _aosp_percentile(histogram: dict[int, int], p: int) -> int:
    """ProfileData::findPercentile: walk down from the slowest bucket."""
    total = sum(histogram.values())
    remaining = total - p * total // 100
    for bucket in sorted(histogram, reverse=True):
        remaining -= histogram[bucket]
        if remaining <= 0:
            return bucket
    return 0


def _synth_truth(
    package: str,
    pid: int,
    header: tuple[str, ...],
    rows: dict[str, IntArray],
    interval: int,
    names: Sequence[str],
) -> SynthPackage:
    """Count everything with plain loops, independently of the vectorised analysis."""
    r = {name: values.tolist() for name, values in rows.items()}
    n = len(r["Flags"])
    start, done = r["IntendedVsync"], r["FrameCompleted"]
    durations = [done[i] - start[i] for i in range(n)]
    normal = [r["Flags"][i] == 0 for i in range(n)]
    sr = [normal[i] and SLOW_FRAME_NS < durations[i] <= 700_000_000 for i in range(n)]
    ff = [normal[i] and durations[i] > 700_000_000 for i in range(n)]
    rule_interval = interval if "FrameInterval" in names else DEFAULT_FRAME_INTERVAL_NS
    hidden = [False] * n
    judged = [False] * n
    previous: int | None = None
    for i in range(n):
        present = r["DisplayPresentTime"][i] if "DisplayPresentTime" in names else 0
        if present > 0 and previous is not None and present > previous and normal[i]:
            judged[i] = True
            hidden[i] = present - previous <= rule_interval * 3 // 2
        elif "DequeueBufferDuration" in names and normal[i]:
            judged[i] = True
            hidden[i] = durations[i] - r["DequeueBufferDuration"][i] <= SLOW_FRAME_NS
        if present > 0:
            previous = present
    aware = any(judged)
    ranks = [i for i in range(n) if normal[i]]
    sr_pos = [k for k, i in enumerate(ranks) if sr[i]]
    ff_pos = [k for k, i in enumerate(ranks) if ff[i]]
    sr_sr = tuple(b - a for a, b in itertools.pairwise(sr_pos))
    ff_sr = []
    for f in ff_pos:
        j = bisect.bisect_right(sr_pos, f)
        if j < len(sr_pos):
            ff_sr.append(sr_pos[j] - f)
    kept = [durations[i] for i in ranks]
    histogram = dict.fromkeys(HISTOGRAM_MS, 0)
    for d in kept:  # the bucket is the first edge ≥ the frame time in ms
        j = bisect.bisect_left(HISTOGRAM_MS, d / 1e6)
        histogram[HISTOGRAM_MS[min(j, len(HISTOGRAM_MS) - 1)]] += 1
    janky = sum(d > interval for d in kept)

    def count(first: str, second: str, threshold: int) -> int:
        a, b = r[first], r[second]
        return sum(1 for i in ranks if b[i] - a[i] > threshold)

    slow_ui = count("Vsync", "SyncStart", interval // 2)
    slow_sync = count("SyncStart", "IssueDrawCommandsStart", interval // 5)
    slow_rt = count("IssueDrawCommandsStart", "FrameCompleted", interval * 3 // 4)
    missed = count("IntendedVsync", "Vsync", interval - 1)
    legacy = sum(
        1
        for i in ranks
        if r["Vsync"][i] - start[i] >= interval
        or r["SyncStart"][i] - r["Vsync"][i] > interval // 2
        or r["IssueDrawCommandsStart"][i] - r["SyncStart"][i] > interval // 5
        or done[i] - r["IssueDrawCommandsStart"][i] > interval * 3 // 4
    )
    summary: dict[str, Any] = {
        "stats_since_ns": start[0] - 5 * interval if n else 1_000_000_000,
        "total_frames_rendered": len(kept),
        "janky_frames": janky,
        "janky_pct": round(100.0 * janky / len(kept), 2) if kept else math.nan,
        **{f"p{p}_ms": _aosp_percentile(histogram, p) for p in PERCENTILES},
        "missed_vsync": missed,
        "high_input_latency": 0,
        "slow_ui_thread": slow_ui,
        "slow_bitmap_uploads": slow_sync,
        "slow_issue_draw_commands": slow_rt,
        "frame_deadline_missed": janky,
    }
    if "FrameTimelineVsyncId" in names:  # Android 12+ also prints the legacy counts
        summary["janky_legacy_frames"] = legacy
        summary["janky_legacy_pct"] = round(100.0 * legacy / len(kept), 2) if kept else math.nan
        summary["frame_deadline_missed_legacy"] = legacy
        for p in PERCENTILES:
            summary[f"gpu_p{p}_ms"] = 1 + p // 25
    sr_aware = sum(1 for i in range(n) if sr[i] and not hidden[i]) if aware else None
    ff_aware = sum(1 for i in range(n) if ff[i] and not hidden[i]) if aware else None
    return SynthPackage(
        package, pid, header, rows, summary, histogram, len(kept), sum(sr), sum(ff),
        sr_aware, ff_aware, sr_sr, tuple(ff_sr),
    )  # fmt: skip


def _synth_summary_lines(truth: SynthPackage) -> list[str]:
    s = truth.summary

    def pct(value: float) -> str:
        return "nan" if math.isnan(value) else f"{value:.2f}"

    lines = [
        f"Stats since: {s['stats_since_ns']}ns",
        f"Total frames rendered: {s['total_frames_rendered']}",
        f"Janky frames: {s['janky_frames']} ({pct(s['janky_pct'])}%)",
    ]
    if "janky_legacy_frames" in s:
        lines.append(f"Janky frames (legacy): {s['janky_legacy_frames']} "
                     f"({pct(s['janky_legacy_pct'])}%)")  # fmt: skip
    lines += [f"{p}th percentile: {s[f'p{p}_ms']}ms" for p in PERCENTILES]
    for label, column in COUNTERS.items():
        if column in s:
            lines.append(f"Number {label}: {s[column]}")
    lines.append("HISTOGRAM: " + " ".join(f"{b}ms={c}" for b, c in truth.histogram.items()))
    if "gpu_p50_ms" in s:
        lines += [f"{p}th gpu percentile: {s[f'gpu_p{p}_ms']}ms" for p in PERCENTILES]
        lines.append("GPU HISTOGRAM: " + " ".join(f"{b}ms=0" for b in range(1, 26)))
    return lines


def _synth_section(
    rng: np.random.Generator,
    truth: SynthPackage,
    interval: int,
    names: Sequence[str],
    blocks: int,
    swapped: bool = False,
) -> list[str]:
    new = "FrameTimelineVsyncId" in names
    activity = f"{truth.package}/{truth.package}.MainActivity"
    root = f"{activity}/android.view.ViewRootImpl@{int(rng.integers(16**6, 16**7)):x}"
    summary = _synth_summary_lines(truth)
    out = [f"** Graphics info for pid {truth.pid} [{truth.package}] **", "", *summary]
    if new:
        out += [
            "Font Cache (CPU):", "  Size: 337.89 kB ", "  Glyph Count: 61 ", "CPU Caches:",
            "GPU Caches:", "  Other:", "    Buffer Object: 48.00 KB (1 entry)", "  Image:",
            "    Texture: 4.01 MB (9 entries)", "Other Caches:",
            "                         Current / Maximum",
            "  VectorDrawableAtlas    0.00 kB /   0.00 KB (entries = 0)",
            "  Layers Total           0.00 KB (numLayers = 0)",
            "Total GPU memory usage:", "  8408064 bytes, 8.02 MB (4.05 MB is purgeable)", "",
            "Pipeline=Skia (OpenGL)", "",
        ]  # fmt: skip
    else:
        out += [
            "Caches:", "Current memory usage / total memory usage (bytes):",
            "  TextureCache          3475508 / 75497472",
            "  Layers total          0 (numLayers = 0)",
            "Other:", "  FboCache                    0 / 0", "Total memory usage:",
            "  3548620 bytes, 3.38 MB", "", "Pipeline=FrameBuilder", "",
        ]  # fmt: skip
    out += ["Layout Cache Info:", "  Usage: 0/0 entries", "  Hit ratio: 0/0 (nan)", ""]
    n = len(truth.rows["Flags"])
    if blocks > 0:
        out += ["Profile data in ms:", "", f"\t{root} (visibility=0)"]
        if new:
            out += [f"Window: {activity}", *summary]
        cuts = np.linspace(0, n, blocks + 1).astype(int)
        for a, b in itertools.pairwise(cuts.tolist()):
            out += [_MARKER, ",".join(truth.header) + ","]
            source = [_AOSP_LABEL.get(name, name) if swapped else name for name in truth.header]
            columns = [truth.rows[name][a:b].tolist() for name in source]
            out += [",".join(map(str, values)) + "," for values in zip(*columns, strict=True)]
            out.append(_MARKER)
            out.append("")
    out += [
        "View hierarchy:", "", f"  {root}", "  275 views, 271.73 kB of render nodes", "", "",
        "Total ViewRootImpl: 1", "Total attached Views: 275",
        "Total RenderNode: 271.73 kB (used) / 1.32 MB (capacity)", "", "",
    ]  # fmt: skip
    return out


# -- big inputs --------------------------------------------------------------------------------

_TIMESTAMP = re.compile(rb"(?<![0-9])[0-9]{13,16}(?![0-9])")  # CLOCK_MONOTONIC ns of a phone
_FRAMES_PER_DUMP = 120  # framestats prints the most recent 120 frames (AOSP FrameInfo ring)
_FIRST_UPTIME_NS = 245_000 * 10**9  # the first dump's uptime, ≈ 2.8 days as in real captures


def write_large_dump(path: Path, target_bytes: int, seed: int = 0) -> None:
    """Write a realistic capture of about ``target_bytes`` to ``path``, at disk speed: what
    a long test session leaves when ``adb shell dumpsys gfxinfo <pkg> framestats`` runs
    periodically (every 10 s here) against one app and is appended to one file (Android
    14 layout; each dump holds the 120 most recent frames, its summaries and histograms).

    One dump is generated by :func:`synth_gfxinfo`; its timestamps are rewritten as a
    prefix followed by their offset from the dump's first one, zero-padded, so each later
    dump is the same bytes with the next prefix (no frame repeats), joined at C speed.
    """
    rng = np.random.default_rng(seed)
    text, _ = synth_gfxinfo(rng, ("com.example.feed",), _FRAMES_PER_DUMP, "android14")
    head, _, rest = text.encode().partition(b"** Graphics info")
    section = b"** Graphics info" + rest
    stamps = [int(m.group()) for m in _TIMESTAMP.finditer(section)]
    origin = min(stamps)
    digits = len(str(max(stamps) - origin))  # 10**digits ns > the dump's span
    spacing = 10**digits

    def offset(match: re.Match[bytes]) -> bytes:
        return b"\x00" + b"%0*d" % (digits, int(match.group()) - origin)

    parts = _TIMESTAMP.sub(offset, section).split(b"\x00")
    first = _FIRST_UPTIME_NS // spacing
    copies = max(1, round((target_bytes - len(head)) / len((b"%d" % first).join(parts))))
    with Path(path).open("wb") as out:
        out.write(head)
        for k in range(copies):
            out.write((b"%d" % (first + k)).join(parts))
