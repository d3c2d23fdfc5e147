"""``dumpsys gfxinfo`` output pulled from real phones (spec 06, spec 04 §Rendering): the
per-frame ``framestats`` rows and the platform's summary lines, turned into slow (SR) and
frozen (FF) frame counts by the one definition in :mod:`mqoe.metrics.jank` — naive and
buffer-aware — plus a stage breakdown and the temporal clustering of slow frames.

Input accepted
--------------
Text as printed by ``adb shell dumpsys gfxinfo [<package>] [framestats]`` for one package
or for all processes; several dumps concatenated in one file are fine. Bytes are UTF-8
(invalid sequences are replaced and counted — only PROFILEDATA rows must be clean), line
ends LF, CRLF or old adb's CR CR LF; gzip-compressed files are read as well. Files are
streamed (bounded memory besides the frames kept); a line longer than
:data:`MAX_LINE_BYTES` is never held whole.

* ``** Graphics info for pid N [package] **`` starts a package section; everything up to
  the next such line belongs to it. Blocks or summary lines before any section belong to
  package ``(unknown)`` with pid −1 (counted: ``profiledata_outside_section``).
* Summary lines — ``Stats since: Nns``, ``Total frames rendered: N``, ``Janky frames: N
  (x.xx%)`` (also ``(legacy)``; ``nan%`` reads as NaN), ``50th|90th|95th|99th [gpu]
  percentile: Nms``, ``Number Missed Vsync|High input latency|Slow UI thread|Slow bitmap
  uploads|Slow issue draw commands|Frame deadline missed [(legacy)]: N``, ``[GPU]
  HISTOGRAM: 5ms=N …``. ``Stats since`` (or a repeated line) starts a new summary record;
  records before the section's first ``Window: name`` line have scope ``process``, later
  ones (Android 12+) the window's name. A malformed or unknown summary line is ignored and
  counted: these are the platform's own numbers, kept for comparison only.
* ``---PROFILEDATA---`` opens a block; its first non-blank line is the header — column names
  separated by commas — then one row of integers per frame, every field followed by a comma
  (the trailing comma may be missing), up to the next ``---PROFILEDATA---``. Columns are
  mapped **by header name** (:data:`COLUMNS`: the 14/16-column Android 6–11 layouts, the
  24-column Android 12–14 one, any order); the header must name ``Flags``,
  ``IntendedVsync`` and ``FrameCompleted``. Unknown columns are ignored (their names are
  counted in the warnings) and their values need not be integers. Blank lines in a block
  are ignored; a new header line inside a block starts a new layout. Several blocks per
  section (one per window, or one per repeated dump) are concatenated; exact duplicate
  frames (overlapping repeated dumps of one process) are kept once and counted.
* A block's window is the last ``<name> (visibility=N)`` or ``Window: <name>`` line before
  it in its section (empty if none).
* Everything else — caches, ``Profile data in ms:``, ``View hierarchy:``, headers — is
  ignored.

Errors (:class:`~mqoe.errors.InputFileError` with file and line): a row whose field count
differs from its header's; a non-integer or beyond-int64 value in a known column; a row
before any header; an unusable header (a required column missing, a duplicate or
non-identifier name); any other non-blank line inside a block; an over-long line inside a
block; a file with no gfxinfo content at all. With ``skip_bad_lines=True`` these lines are
skipped and counted (the rows under an unusable header with it), and a file without
content is skipped and listed. Forgiven and counted in every mode: a file that ends inside
a block (its complete rows are kept; an unterminated, incomplete last row is dropped), a
gzip stream cut short, a block closed by a new section instead of its marker, over-long
lines outside blocks.

Per-frame table (:attr:`GfxinfoReport.frames`)
----------------------------------------------
One row per frame: ``file, package, pid, window, block, line`` then the known columns
present in the input as ``snake_case`` (times in ns, CLOCK_MONOTONIC). A timestamp ≤ 0 is
"not set". ``OldestInputEvent`` = 9223372036854775807 means "no input" and reads as NA, as
does ``NewestInputEvent`` of such a frame. ``duration_ns = FrameCompleted −
IntendedVsync``. ``normal`` = ``Flags == 0`` and ``0 < IntendedVsync ≤ FrameCompleted``;
only normal frames count in SR/FF (flags: 1 window visibility changed, 2 RenderThread
animation, 4 surface canvas, 8 skipped). Normal-flag rows with impossible times are
counted (``invalid_timestamp_rows``). The stages partition ``duration_ns`` when every
timestamp is set:

==================  =======================================  ==============================
column              from → to                                what runs
==================  =======================================  ==============================
``vsync_delay_ns``  IntendedVsync → HandleInputStart          wait for the UI thread
``input_ns``        HandleInputStart → AnimationStart         input callbacks
``animation_ns``    AnimationStart → PerformTraversalsStart   animation callbacks
``traversal_ns``    PerformTraversalsStart → DrawStart        measure + layout
``draw_ns``         DrawStart → SyncQueued                    recording the display lists
``sync_wait_ns``    SyncQueued → SyncStart                    wait for the RenderThread
``sync_ns``         SyncStart → IssueDrawCommandsStart        sync, bitmap uploads
``issue_ns``        IssueDrawCommandsStart → SwapBuffers      GPU commands (incl. dequeue)
``swap_ns``         SwapBuffers → FrameCompleted              swap / queueBuffer
==================  =======================================  ==============================

``missed_vsync_ns`` = Vsync − IntendedVsync (the platform's own "missed vsync" signal) is
given besides. A stage is NA when one of its ends is absent or not set.

Buffer-aware SR/FF (spec 04 §Rendering)
---------------------------------------
A slow frame is a true drop only if the screen had nothing new to show at the V-Sync it
missed. Each normal frame is judged by the first rule its columns allow:

1. **present** — its ``DisplayPresentTime`` is set and an earlier frame (any flags) of the
   same process and window was presented before it (frames ordered by IntendedVsync):
   the frame is *hidden* when ``DisplayPresentTime − previous DisplayPresentTime ≤ 1.5 ×
   FrameInterval``, i.e. no refresh repeated the previous frame's content. FrameInterval
   is the row's value when in (0, 1 s], else 16.67 ms (60 Hz).
2. **dequeue** — its ``DequeueBufferDuration`` is known (≥ 0): the frame is *hidden* when
   ``duration_ns − DequeueBufferDuration ≤`` :data:`~mqoe.metrics.jank.SLOW_FRAME_NS`:
   it was slow only because every buffer was queued ahead of it (the queue held ready
   buffers). A long dequeue wait can also mean SurfaceFlinger stalled; that is a
   compositor drop, not the app's, and is not counted here.
3. otherwise it is *unjudged* and counts as visible (conservative).

``sr_aware`` / ``ff_aware`` are the slow / frozen frames not hidden
(:func:`~mqoe.metrics.jank.jank_counts` with ``ready_buffer`` = hidden); they are null for
a package none of whose frames could be judged. ``aware_rule`` says which rules were used.

Temporal clustering
-------------------
Per package (file, package, pid), over its normal frames in IntendedVsync order:
``sr_to_sr`` gaps go from each SR frame to the next SR frame, ``ff_to_sr`` from each FF
frame to the next SR frame (naive counts). ``gap_frames`` is the difference of the frames'
ranks (1 = adjacent), ``gap_ms`` start to start (IntendedVsync), ``gap_after_end_ms``
from the first frame's FrameCompleted to the next one's IntendedVsync (negative when the
frames overlapped in the pipeline). A dump holds only the recent frames, so gaps that span
two dumps include the unseen frames between them.
"""

from __future__ import annotations

import bisect
import io
import itertools
import math
import re
import warnings as _warnings
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.errors import InputFileError, UserError
from mqoe.metrics.jank import SLOW_FRAME_NS, frozen_mask, jank_counts, slow_mask

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
Progress = Callable[[float], None]

#: Every per-frame column of AOSP's FrameInfo (Android 6–14): header name → our column.
COLUMNS: dict[str, str] = {
    "Flags": "flags",
    "FrameTimelineVsyncId": "frame_timeline_vsync_id",
    "IntendedVsync": "intended_vsync_ns",
    "Vsync": "vsync_ns",
    "OldestInputEvent": "oldest_input_event_ns",
    "NewestInputEvent": "newest_input_event_ns",
    "InputEventId": "input_event_id",
    "HandleInputStart": "handle_input_start_ns",
    "AnimationStart": "animation_start_ns",
    "PerformTraversalsStart": "perform_traversals_start_ns",
    "DrawStart": "draw_start_ns",
    "FrameDeadline": "frame_deadline_ns",
    "FrameStartTime": "frame_start_time_ns",
    "FrameInterval": "frame_interval_ns",
    "WorkloadTarget": "workload_target_ns",
    "SyncQueued": "sync_queued_ns",
    "SyncStart": "sync_start_ns",
    "IssueDrawCommandsStart": "issue_draw_commands_start_ns",
    "SwapBuffers": "swap_buffers_ns",
    "FrameCompleted": "frame_completed_ns",
    "DequeueBufferDuration": "dequeue_buffer_duration_ns",
    "QueueBufferDuration": "queue_buffer_duration_ns",
    "GpuCompleted": "gpu_completed_ns",
    "SwapBuffersCompleted": "swap_buffers_completed_ns",
    "DisplayPresentTime": "display_present_time_ns",
    "CommandSubmissionCompleted": "command_submission_completed_ns",
}
REQUIRED_COLUMNS = ("Flags", "IntendedVsync", "FrameCompleted")
#: Android 8–11 (16 columns; Android 6–7 lack the last two).
LAYOUT_OLD = (
    "Flags", "IntendedVsync", "Vsync", "OldestInputEvent", "NewestInputEvent",
    "HandleInputStart", "AnimationStart", "PerformTraversalsStart", "DrawStart", "SyncQueued",
    "SyncStart", "IssueDrawCommandsStart", "SwapBuffers", "FrameCompleted",
    "DequeueBufferDuration", "QueueBufferDuration",
)  # fmt: skip
#: Android 14 (24 columns).
LAYOUT_NEW = (
    "Flags", "FrameTimelineVsyncId", "IntendedVsync", "Vsync", "InputEventId",
    "HandleInputStart", "AnimationStart", "PerformTraversalsStart", "DrawStart",
    "FrameDeadline", "FrameStartTime", "FrameInterval", "WorkloadTarget", "SyncQueued",
    "SyncStart", "IssueDrawCommandsStart", "SwapBuffers", "FrameCompleted",
    "DequeueBufferDuration", "QueueBufferDuration", "GpuCompleted", "SwapBuffersCompleted",
    "DisplayPresentTime", "CommandSubmissionCompleted",
)  # fmt: skip
#: Stage column → (start, end) timestamp columns; see the module docstring.
STAGES: dict[str, tuple[str, str]] = {
    "vsync_delay_ns": ("intended_vsync_ns", "handle_input_start_ns"),
    "input_ns": ("handle_input_start_ns", "animation_start_ns"),
    "animation_ns": ("animation_start_ns", "perform_traversals_start_ns"),
    "traversal_ns": ("perform_traversals_start_ns", "draw_start_ns"),
    "draw_ns": ("draw_start_ns", "sync_queued_ns"),
    "sync_wait_ns": ("sync_queued_ns", "sync_start_ns"),
    "sync_ns": ("sync_start_ns", "issue_draw_commands_start_ns"),
    "issue_ns": ("issue_draw_commands_start_ns", "swap_buffers_ns"),
    "swap_ns": ("swap_buffers_ns", "frame_completed_ns"),
}
#: The counters of the summary ("Number …: N" lines) → summary column.
COUNTERS: dict[str, str] = {
    "Missed Vsync": "missed_vsync",
    "High input latency": "high_input_latency",
    "Slow UI thread": "slow_ui_thread",
    "Slow bitmap uploads": "slow_bitmap_uploads",
    "Slow issue draw commands": "slow_issue_draw_commands",
    "Frame deadline missed": "frame_deadline_missed",
    "Frame deadline missed (legacy)": "frame_deadline_missed_legacy",
}
PERCENTILES = (50, 90, 95, 99)
SUMMARY_COLUMNS = (
    "stats_since_ns", "total_frames_rendered", "janky_frames", "janky_pct",
    "janky_legacy_frames", "janky_legacy_pct",
    *(f"p{p}_ms" for p in PERCENTILES), *COUNTERS.values(), *(f"gpu_p{p}_ms" for p in PERCENTILES),
)  # fmt: skip

MAX_LINE_BYTES = 1 << 20  # a framestats row is < 1 kB; anything this long is not gfxinfo
NO_INPUT = 9_223_372_036_854_775_807  # OldestInputEvent of a frame that handled no input
DEFAULT_FRAME_INTERVAL_NS = 16_666_667  # 60 Hz, when the row has no usable FrameInterval
_MAX_INTERVAL_NS = 1_000_000_000  # a FrameInterval above 1 s is not a display's
_MARKER = "---PROFILEDATA---"
_CHUNK_BYTES = 1 << 22
_BATCH_ROWS = 1 << 16
_FAST_MIN_ROWS = 512  # below this a batch goes row by row
_MAX_COLUMNS = 512
_MAX_EXAMPLES = 20  # skipped lines remembered individually (all are counted)
_ROW_START = frozenset(b"0123456789")  # not "-": the marker starts with it
_ROW_BYTES = b"0123456789-,\n"
_OVERLONG = b"\x00<over-long line>"  # stands for a line cut at MAX_LINE_BYTES (by identity)
_CR_NL = re.compile(rb"\r+\n")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_INT_TOKEN = re.compile(rb"\s*-?[0-9]{1,19}\s*")
_SECTION = re.compile(r"\*\* Graphics info for pid ([0-9]{1,10}) \[([^\]]{0,512})\] \*\*")
_VISIBILITY = re.compile(r"(\S.{0,1023}?) \(visibility=-?[0-9]{1,10}\)")
_SUMMARY = re.compile(
    r"(?P<key>Stats since|Total frames rendered|Janky frames(?: \(legacy\))?"
    r"|(?P<pct>[0-9]{1,3})th(?P<gpu> gpu)? percentile|Number (?P<counter>[A-Za-z][^:]{0,80})"
    r"|(?P<hist>(?:GPU )?HISTOGRAM)):[ \t]*(?P<value>.*)"
)
_NS = re.compile(r"([0-9]{1,19})ns")
_MS = re.compile(r"([0-9]{1,12})ms")
_COUNT = re.compile(r"[0-9]{1,19}")
_JANKY = re.compile(r"([0-9]{1,19}) \(\s*(-?nan|-?inf|[-+]?[0-9]{1,20}(?:[.,][0-9]{0,20})?)%\)")
_BUCKET = re.compile(r"([0-9]{1,12})ms=([0-9]{1,19})")

_OUT, _HEAD, _ROWS = 0, 1, 2
_RECORD_META = ("package", "pid", "scope", "section", "line")


# -- warnings ----------------------------------------------------------------------------------


@dataclass
class GfxinfoWarnings:
    """What was forgiven or skipped while reading; all counts (see the module docstring)."""

    skipped_lines: int = 0  # bad lines skipped with skip_bad_lines
    skipped_examples: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, what)
    files_without_content: list[str] = field(default_factory=list)  # skip_bad_lines only
    truncated_blocks: int = 0  # files that end inside a PROFILEDATA block
    truncated_rows: int = 0  # unterminated, incomplete last rows dropped
    truncated_gzip: int = 0  # gzip streams cut short
    unterminated_blocks: int = 0  # blocks closed by a new section instead of the marker
    overlong_lines: int = 0  # over-long lines outside blocks (ignored)
    invalid_utf8_lines: int = 0
    malformed_summary_lines: int = 0
    profiledata_outside_section: int = 0
    duplicate_rows: int = 0  # frames seen again in a later dump, kept once
    unknown_columns: Counter[str] = field(default_factory=Counter)  # header name → blocks

    def skip(self, path: str, line: int, what: str) -> None:
        self.skipped_lines += 1
        if len(self.skipped_examples) < _MAX_EXAMPLES:
            self.skipped_examples.append((path, line, what))

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able values."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name == "skipped_examples":
                value = [{"file": f, "line": n, "what": w} for f, n, w in value]
            elif isinstance(value, Counter):
                value = dict(sorted(value.items()))
            elif isinstance(value, list):
                value = list(value)
            out[name] = value
        return out


# -- reading rows ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Header:
    names: tuple[str, ...]
    line: int
    known: tuple[tuple[int, str], ...]  # (position, our column)

    @property
    def width(self) -> int:
        return len(self.names)


def _rows_fast(
    rows: list[bytes], header: _Header, min_rows: int = _FAST_MIN_ROWS
) -> dict[str, IntArray] | None:
    """The rows' known columns, or None if any row is not plain ``int,…,int,`` (slow path).

    The C CSV reader converts; the checks before it make sure that every row has exactly
    the header's field count, so that the reader cannot silently pad or cut a row.
    """
    width = header.width
    if len(rows) < min_rows:  # the CSV reader's fixed cost exceeds the row loop's
        return None
    for raw in rows:
        if raw.count(b",") != width or raw[-1:] != b",":
            return None
    blob = b"\n".join(rows)
    if blob.translate(None, _ROW_BYTES):
        return None
    positions = [i for i, _ in header.known]
    try:
        with _warnings.catch_warnings():
            _warnings.simplefilter("ignore")
            table = pd.read_csv(
                io.BytesIO(blob),
                header=None,
                names=list(range(width + 1)),
                usecols=positions,
                dtype=dict.fromkeys(positions, np.int64),
                index_col=False,
                engine="c",
                skip_blank_lines=False,
            )
    except Exception:  # any reader complaint: the slow path finds and names the bad row
        return None
    if len(table) != len(rows):
        return None
    return {name: table[i].to_numpy(dtype=np.int64) for i, name in header.known}


def _row_values(raw: bytes, header: _Header) -> list[int] | str:
    """One row's known values in ``header.known`` order, or what is wrong with it."""
    body = raw.rstrip()
    fields = (body[:-1] if body.endswith(b",") else body).split(b",")
    if len(fields) != header.width:
        return (
            f"expected {header.width} comma-separated fields as in the PROFILEDATA header "
            f"(line {header.line}), found {len(fields)}"
        )
    values: list[int] = []
    for i, _ in header.known:
        token = fields[i]
        number = int(token) if _INT_TOKEN.fullmatch(token) else None
        if number is None or not -(2**63) <= number < 2**63:
            text = token.decode("utf-8", "replace").strip()[:30]
            return f"{header.names[i]}: expected an integer (int64), found {text!r}"
        values.append(number)
    return values


def _rows_slow(
    rows: list[bytes], lines: list[int], header: _Header
) -> tuple[dict[str, IntArray], IntArray, list[tuple[int, str]]]:
    """Row by row: the good rows' columns and line numbers, and the bad rows."""
    good: list[list[int]] = []
    kept: list[int] = []
    bad: list[tuple[int, str]] = []
    for raw, line in zip(rows, lines, strict=True):
        values = _row_values(raw, header)
        if isinstance(values, str):
            bad.append((line, values))
        else:
            good.append(values)
            kept.append(line)
    grid = np.array(good, dtype=np.int64).reshape(len(good), len(header.known))
    columns = {name: grid[:, j].copy() for j, (_, name) in enumerate(header.known)}
    return columns, np.array(kept, dtype=np.int64), bad


@dataclass(frozen=True)
class _Chunk:
    section: int  # index into the file's sections
    window: str
    block: int
    columns: dict[str, IntArray]
    lines: IntArray


@dataclass
class _Section:
    package: str
    pid: int


class _FileParser:
    """A state machine over one file's lines: sections, summary lines, PROFILEDATA blocks."""

    def __init__(self, name: str, lenient: bool, warnings: GfxinfoWarnings) -> None:
        self.name = name
        self.lenient = lenient
        self.w = warnings
        self.line = 0
        self.state = _OUT
        self.seen = False  # any gfxinfo content at all
        self.sections: list[_Section] = []
        self.window = ""
        self.scope = "process"
        self.summary: dict[str, Any] | None = None
        self.summaries: list[dict[str, Any]] = []
        self.histograms: list[tuple[int, str, int, int]] = []  # summary, kind, bucket ms, count
        self.header: _Header | None = None
        self.block = -1
        self.batch: list[bytes] = []
        self.batch_lines: list[int] = []
        self.chunks: list[_Chunk] = []

    # -- driving ----------------------------------------------------------------------------

    def read(self, chunks: Iterable[bytes]) -> None:
        """Feed the whole file, chunk by chunk; over-long lines are cut, never held."""
        carry = b""
        skipping = False  # inside an over-long line: drop bytes up to its newline
        for chunk in chunks:
            if skipping:
                newline = chunk.find(b"\n")
                if newline < 0:
                    continue
                chunk = chunk[newline + 1 :]
                skipping = False
            buf = carry + chunk if carry else chunk
            if b"\r" in buf:
                buf = _CR_NL.sub(b"\n", buf)
            lines = buf.split(b"\n")
            carry = lines.pop()
            if len(carry) > MAX_LINE_BYTES:
                lines.append(_OVERLONG)
                carry, skipping = b"", True
            if lines and max(map(len, lines)) > MAX_LINE_BYTES:
                lines = [_OVERLONG if len(x) > MAX_LINE_BYTES else x for x in lines]
            self.feed(lines)
        self.finish(carry.rstrip(b"\r"))

    def feed(self, lines: Iterable[bytes]) -> None:
        """Process complete lines (without their newline)."""
        batch, batch_lines, row_start = self.batch, self.batch_lines, _ROW_START
        line = self.line
        for raw in lines:
            line += 1
            if self.state == _ROWS and raw and raw[0] in row_start:  # the hot path: a row
                batch.append(raw)
                batch_lines.append(line)
                if len(batch) >= _BATCH_ROWS:
                    self.line = line
                    self._flush()
                continue
            self.line = line
            self._other(raw)
        self.line = line

    def finish(self, tail: bytes) -> None:
        """End of file; ``tail`` is an unterminated last line (or empty)."""
        stripped = tail.strip()
        if tail:
            if self.state == _OUT or stripped == _MARKER.encode() or not stripped:
                self.feed([tail])
            else:
                self.line += 1
                complete = (
                    self.state == _ROWS
                    and self.header is not None
                    and tail is not _OVERLONG
                    and stripped[-1:] == b","
                    and stripped[:1] in (b"-", *(bytes([c]) for c in _ROW_START))
                    and not isinstance(_row_values(tail, self.header), str)
                )
                if complete:
                    self.batch.append(tail)
                    self.batch_lines.append(self.line)
                else:  # a row cut off mid-write
                    self.w.truncated_rows += 1
        if self.state != _OUT:
            self.w.truncated_blocks += 1
            self._flush()
            self.state = _OUT

    # -- lines ------------------------------------------------------------------------------

    def _bad(self, what: str, line: int | None = None) -> None:
        where = self.line if line is None else line
        if self.lenient:
            self.w.skip(self.name, where, what)
            return
        self._flush()  # an earlier bad row in the batch is the first error
        raise InputFileError(self.name, what, line=where)

    def _decode(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.w.invalid_utf8_lines += 1
            return raw.decode("utf-8", "replace")

    def _other(self, raw: bytes) -> None:
        if raw is _OVERLONG:
            if self.state == _OUT:
                self.w.overlong_lines += 1
            else:
                self._bad(f"a line longer than {MAX_LINE_BYTES} bytes inside a PROFILEDATA block")
            return
        text = self._decode(raw).strip()
        if not text:
            return
        if self.state == _OUT:
            self._outside(text)
        else:
            self._inside(text, raw)

    def _inside(self, text: str, raw: bytes) -> None:
        if text == _MARKER:
            self._flush()
            self.state, self.header = _OUT, None
            return
        first = text[0]
        is_row = first.isascii() and (first.isdigit() or first == "-")
        if self.state == _HEAD:
            if is_row:
                self._bad("a PROFILEDATA row before the header line (Flags,IntendedVsync,…)")
            elif text.startswith("** "):
                self.w.unterminated_blocks += 1
                self.state = _OUT
                self._outside(text)
            else:
                self._set_header(text)
            return
        if is_row:  # a row with leading white space: the slow path strips it
            self.batch.append(raw)
            self.batch_lines.append(self.line)
        elif text.startswith("Flags,"):
            self._flush()
            self._set_header(text)
        elif text.startswith("** "):
            self.w.unterminated_blocks += 1
            self._flush()
            self.state, self.header = _OUT, None
            self._outside(text)
        else:
            self._bad("expected a PROFILEDATA row of integers or the closing ---PROFILEDATA---")

    def _set_header(self, text: str) -> None:
        names = [name.strip() for name in text.split(",")]
        if len(names) > 1 and not names[-1]:
            names.pop()
        problem = None
        if len(names) > _MAX_COLUMNS:
            problem = f"a PROFILEDATA header with more than {_MAX_COLUMNS} columns"
        elif not all(_NAME.fullmatch(name) for name in names):
            problem = "expected the PROFILEDATA header line (column names: Flags,IntendedVsync,…)"
        elif len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            problem = f"PROFILEDATA header repeats column {', '.join(dup)}"
        else:
            missing = [name for name in REQUIRED_COLUMNS if name not in names]
            if missing:
                problem = f"PROFILEDATA header lacks column {', '.join(missing)}"
        self.state = _ROWS
        if problem is not None:
            self.header = None
            self._bad(problem)
            return
        for name in names:
            if name not in COLUMNS:
                self.w.unknown_columns[name] += 1
        known = tuple((i, COLUMNS[n]) for i, n in enumerate(names) if n in COLUMNS)
        self.header = _Header(tuple(names), self.line, known)

    def _flush(self) -> None:
        rows, lines = self.batch, self.batch_lines
        if not rows:
            return
        header = self.header
        if header is None:  # rows under an unusable header (lenient mode only)
            for line in lines:
                self.w.skip(self.name, line, "row under an unusable PROFILEDATA header")
            rows.clear()
            lines.clear()
            return
        columns = _rows_fast(rows, header)
        if columns is not None:
            kept = np.array(lines, dtype=np.int64)
        else:
            columns, kept, bad = _rows_slow(rows, lines, header)
            if bad and not self.lenient:
                rows.clear()
                lines.clear()
                raise InputFileError(self.name, bad[0][1], line=bad[0][0])
            for line, what in bad:
                self.w.skip(self.name, line, what)
        rows.clear()
        lines.clear()
        if len(kept):
            self.chunks.append(_Chunk(self._section(), self.window, self.block, columns, kept))

    def _section(self) -> int:
        if not self.sections:
            self.sections.append(_Section("(unknown)", -1))
            self.w.profiledata_outside_section += 1
        return len(self.sections) - 1

    def _outside(self, text: str) -> None:
        if text == _MARKER:
            self._section()
            self.seen = True
            self.block += 1
            self.state, self.header = _HEAD, None
            return
        if text.startswith("** "):
            match = _SECTION.fullmatch(text)
            if match is None:
                self.w.malformed_summary_lines += 1
                return
            self.seen = True
            self.sections.append(_Section(match.group(2), int(match.group(1))))
            self.window, self.scope, self.summary = "", "process", None
            return
        if text.startswith("Applications Graphics Acceleration Info"):
            self.seen = True
            return
        match = _SUMMARY.match(text)
        if match is not None:
            self._summary_line(match)
        elif text.startswith("Window: "):
            self.window = self.scope = text[8:].strip()[:1024]
            self.summary = None
        elif text.endswith(")"):
            visibility = _VISIBILITY.fullmatch(text)
            if visibility is not None:
                self.window = visibility.group(1)

    # -- summary lines -----------------------------------------------------------------------

    def _summary_line(self, match: re.Match[str]) -> None:
        value = match.group("value").strip()
        key = match.group("key")
        parsed: dict[str, Any] | None
        if match.group("hist") is not None:
            self._histogram("gpu" if key.startswith("GPU") else "cpu", value)
            return
        if match.group("pct") is not None:
            p, ms = int(match.group("pct")), _MS.fullmatch(value)
            prefix = "gpu_" if match.group("gpu") else ""
            ok = ms is not None and p in PERCENTILES
            parsed = {f"{prefix}p{p}_ms": int(ms.group(1))} if ok and ms is not None else None
        elif match.group("counter") is not None:
            column = COUNTERS.get(match.group("counter").strip())
            ok = column is not None and _COUNT.fullmatch(value) is not None
            parsed = {column: int(value)} if ok and column is not None else None
        elif key == "Stats since":
            ns = _NS.fullmatch(value)
            parsed = {"stats_since_ns": int(ns.group(1))} if ns is not None else None
        elif key == "Total frames rendered":
            ok = _COUNT.fullmatch(value) is not None
            parsed = {"total_frames_rendered": int(value)} if ok else None
        else:
            parsed = self._janky("janky_legacy" if "legacy" in key else "janky", value)
        if parsed is None:
            self.w.malformed_summary_lines += 1
            return
        record = self._record(next(iter(parsed)))
        record.update(parsed)

    @staticmethod
    def _janky(prefix: str, value: str) -> dict[str, Any] | None:
        match = _JANKY.fullmatch(value)
        if match is None:
            return None
        pct = float(match.group(2).replace(",", "."))
        return {f"{prefix}_frames": int(match.group(1)), f"{prefix}_pct": pct}

    def _histogram(self, kind: str, value: str) -> None:
        buckets = value.split()
        pairs = [_BUCKET.fullmatch(token) for token in buckets]
        if not buckets or any(pair is None for pair in pairs):
            self.w.malformed_summary_lines += 1
            return
        record = self._record(f"{kind}_histogram")
        record[f"{kind}_histogram"] = True
        index = len(self.summaries) - 1
        for pair in pairs:
            assert pair is not None
            count = int(pair.group(2))
            if count < 2**63:
                self.histograms.append((index, kind, int(pair.group(1)), count))

    def _record(self, key: str) -> dict[str, Any]:
        """The summary record a value goes to: a new one on ``Stats since`` or a repeat."""
        record = self.summary
        values = record is not None and len(record) > len(_RECORD_META)
        if record is None or key in record or (key == "stats_since_ns" and values):
            section = self._section()
            meta = self.sections[section]
            record = {
                "package": meta.package,
                "pid": meta.pid,
                "scope": self.scope,
                "section": section,
                "line": self.line,
            }
            self.summary = record
            self.summaries.append(record)
        return record


# -- the parsed data ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GfxinfoData:
    """What files held, as read (no metrics yet). All tables tidy, one row per observation.

    * ``frames`` — one row per PROFILEDATA row kept: ``file, package, pid, window, block,
      line`` and the known columns present in any block (:data:`COLUMNS` names; Flags,
      IntendedVsync and FrameCompleted are int64, the others nullable Int64).
    * ``sections`` — one row per (file, package, pid) seen, with its section count.
    * ``summaries`` — one row per summary record: ``file, package, pid, scope, line`` and
      :data:`SUMMARY_COLUMNS` (NA where the line was absent).
    * ``histograms`` — ``file, package, pid, scope, summary, kind (cpu|gpu), bucket_ms,
      frames``: the HISTOGRAM lines, ``summary`` indexing ``summaries`` rows.
    """

    frames: pd.DataFrame
    sections: pd.DataFrame
    summaries: pd.DataFrame
    histograms: pd.DataFrame
    warnings: GfxinfoWarnings


def read_gfxinfo(
    paths: str | Path | Sequence[str | Path],
    *,
    skip_bad_lines: bool = False,
    progress: Progress | None = None,
) -> GfxinfoData:
    """Read ``dumpsys gfxinfo`` files (plain or gzip). ``progress(fraction)`` is called as
    bytes are read. Raises :class:`~mqoe.errors.InputFileError` (see the module docstring)."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    if not items:
        raise UserError("no gfxinfo file given")
    files = [Path(p) for p in items]
    sizes = [_size(path) for path in files]
    total = sum(sizes) or 1
    warnings = GfxinfoWarnings()
    parsers: list[_FileParser] = []
    done = 0
    for path, size in zip(files, sizes, strict=True):

        def report(fraction: float, base: int = done, size: int = size) -> None:
            if progress is not None:
                progress(min(1.0, (base + fraction * size) / total))

        parser = _FileParser(str(path), skip_bad_lines, warnings)
        _read_file(path, size, parser, report)
        done += size
        if parser.seen:
            parsers.append(parser)
        elif skip_bad_lines:
            warnings.files_without_content.append(str(path))
        else:
            raise _no_content(path)
    if not parsers:
        raise (
            _no_content(files[0])
            if len(files) == 1
            else UserError("none of the files holds dumpsys gfxinfo output")
        )
    return _assemble(parsers, warnings)


def parse_gfxinfo_text(
    text: str, *, name: str = "<text>", skip_bad_lines: bool = False
) -> GfxinfoData:
    """:func:`read_gfxinfo` for text in memory (``name`` appears in errors and tables)."""
    warnings = GfxinfoWarnings()
    parser = _FileParser(name, skip_bad_lines, warnings)
    data = text.encode("utf-8", "surrogatepass")
    parser.read(data[i : i + _CHUNK_BYTES] for i in range(0, len(data), _CHUNK_BYTES))
    if not parser.seen:
        if not skip_bad_lines:
            raise _no_content(name)
        warnings.files_without_content.append(name)
    return _assemble([parser] if parser.seen else [], warnings)


def _no_content(path: str | Path) -> InputFileError:
    return InputFileError(
        path,
        "no dumpsys gfxinfo output found (expected '** Graphics info for pid N [package] **'"
        " sections or ---PROFILEDATA--- blocks)",
    )


def _size(path: Path) -> int:
    try:
        if path.is_dir():
            raise InputFileError(path, "is a directory, expected a dumpsys gfxinfo text file")
        return path.stat().st_size
    except FileNotFoundError:
        raise InputFileError(path, "no such file") from None
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None


def _read_file(path: Path, size: int, parser: _FileParser, progress: Progress) -> None:
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None
    with raw:
        chunks = _chunks(raw, path, size, progress)
        first = next(chunks, b"")
        if first[:2] == b"\x1f\x8b":  # gzip magic: dumps pulled off phones are often gzipped
            parser.read(_gunzip(itertools.chain([first], chunks), path, parser.w))
        else:
            parser.read(itertools.chain([first], chunks))


def _chunks(raw: BinaryIO, path: Path, size: int, progress: Progress) -> Iterator[bytes]:
    while True:
        try:
            chunk = raw.read(_CHUNK_BYTES)
            if chunk:
                progress(raw.tell() / size if size else 1.0)
        except OSError as exc:
            raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None
        if not chunk:
            return
        yield chunk


def _gunzip(chunks: Iterable[bytes], path: Path, warnings: GfxinfoWarnings) -> Iterator[bytes]:
    """Inflate gzip members in steps of at most ``_CHUNK_BYTES`` of output (a small file
    cannot balloon in memory); a stream cut short ends the data and is counted."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    fed = False  # the current member has received data
    for chunk in chunks:
        data, pending = chunk, False
        while data or pending:
            fed = fed or bool(data)
            try:
                out = inflater.decompress(data, _CHUNK_BYTES)
            except zlib.error as exc:
                raise InputFileError(path, f"corrupt gzip data: {exc}") from None
            if out:
                yield out
            if inflater.eof:  # the next member, unless what follows is NUL padding
                data, pending = inflater.unused_data.lstrip(b"\x00"), False
                inflater, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False
            else:
                data, pending = inflater.unconsumed_tail, len(out) == _CHUNK_BYTES
    if fed and not inflater.eof:
        warnings.truncated_gzip += 1


def _assemble(parsers: list[_FileParser], warnings: GfxinfoWarnings) -> GfxinfoData:
    frames = _frames(parsers)
    before = len(frames)
    if before:
        key = [c for c in ("file", "package", "pid", "flags", "intended_vsync_ns") if c in frames]
        key += [c for c in ("vsync_ns", "frame_completed_ns") if c in frames]
        frames = frames[~frames.duplicated(subset=key)].reset_index(drop=True)
        warnings.duplicate_rows += before - len(frames)
    sections = pd.DataFrame(
        [{"file": p.name, "package": s.package, "pid": s.pid} for p in parsers for s in p.sections],
        columns=["file", "package", "pid"],
    )
    sections = (
        sections.groupby(["file", "package", "pid"], sort=False)
        .size()
        .rename("sections")
        .reset_index()
    )
    summaries, histograms = _summary_tables(parsers)
    return GfxinfoData(frames, sections, summaries, histograms, warnings)


def _frames(parsers: list[_FileParser]) -> pd.DataFrame:
    chunks = [(p, c) for p in parsers for c in p.chunks]
    present = {name for _, c in chunks for name in c.columns}
    names = [c for c in COLUMNS.values() if c in present or c in _REQUIRED_OURS]
    n = sum(len(c.lines) for _, c in chunks)
    meta: dict[str, list[Any]] = {k: [] for k in ("file", "package", "pid", "window", "block")}
    for parser, chunk in chunks:
        section = parser.sections[chunk.section]
        for key, value in (
            ("file", parser.name),
            ("package", section.package),
            ("pid", section.pid),
            ("window", chunk.window),
            ("block", chunk.block),
        ):
            meta[key].append(value)
    counts = np.array([len(c.lines) for _, c in chunks], dtype=np.int64)
    data: dict[str, Any] = {}
    for key in ("file", "package", "window"):
        codes, uniques = pd.factorize(pd.Series(meta[key], dtype=object))
        data[key] = pd.Categorical.from_codes(
            np.repeat(codes, counts), categories=pd.Index(uniques, dtype=object)
        )
    data["pid"] = np.repeat(np.array(meta["pid"], dtype=np.int64), counts)
    data["block"] = np.repeat(np.array(meta["block"], dtype=np.int64), counts)
    data["line"] = _concat([c.lines for _, c in chunks])
    for name in names:
        parts = [c.columns.get(name) for _, c in chunks]
        values = _concat([p if p is not None else np.zeros(len(c.lines), np.int64)
                          for p, (_, c) in zip(parts, chunks, strict=True)])  # fmt: skip
        if name in _REQUIRED_OURS:
            data[name] = values
            continue
        missing = _concat_bool([np.zeros(len(p), np.bool_) if p is not None
                                else np.ones(len(c.lines), np.bool_)
                                for p, (_, c) in zip(parts, chunks, strict=True)])  # fmt: skip
        data[name] = (values, missing)
    if "oldest_input_event_ns" in data:
        values, missing = data["oldest_input_event_ns"]
        unused = values == NO_INPUT
        data["oldest_input_event_ns"] = (values, missing | unused)
        if "newest_input_event_ns" in data:
            newest, newest_missing = data["newest_input_event_ns"]
            data["newest_input_event_ns"] = (newest, newest_missing | unused)
    for name, value in list(data.items()):
        if isinstance(value, tuple):
            data[name] = pd.arrays.IntegerArray(value[0], value[1])
    frame = pd.DataFrame(data)
    assert len(frame) == n
    return frame


_REQUIRED_OURS = tuple(COLUMNS[name] for name in REQUIRED_COLUMNS)


def _concat(parts: list[IntArray]) -> IntArray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _concat_bool(parts: list[BoolArray]) -> BoolArray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.bool_)


def _summary_tables(parsers: list[_FileParser]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows: list[dict[str, Any]] = []
    hist: list[tuple[Any, ...]] = []
    for parser in parsers:
        offset = len(rows)
        for record in parser.summaries:
            row = {"file": parser.name}
            row.update({k: v for k, v in record.items() if not k.endswith("_histogram")})
            rows.append(row)
        for index, kind, bucket, count in parser.histograms:
            record = parser.summaries[index]
            hist.append(
                (parser.name, record["package"], record["pid"], record["scope"],
                 offset + index, kind, bucket, count)
            )  # fmt: skip
    columns: dict[str, Any] = {
        "file": pd.array([r["file"] for r in rows], dtype=object),
        "package": pd.array([r["package"] for r in rows], dtype=object),
        "pid": np.array([r["pid"] for r in rows], dtype=np.int64),
        "scope": pd.array([r["scope"] for r in rows], dtype=object),
        "line": np.array([r["line"] for r in rows], dtype=np.int64),
    }
    for column in SUMMARY_COLUMNS:
        values = [r.get(column) for r in rows]
        if column.endswith("_pct"):
            columns[column] = np.array([math.nan if v is None else v for v in values], np.float64)
        else:
            columns[column] = pd.array(values, dtype="Int64")
    names = ["file", "package", "pid", "scope", "summary", "kind", "bucket_ms", "frames"]
    histograms = pd.DataFrame(
        {
            name: np.array([h[i] for h in hist], dtype=np.int64)
            if name in ("pid", "summary", "bucket_ms", "frames")
            else pd.array([h[i] for h in hist], dtype=object)
            for i, name in enumerate(names)
        }
    )
    return pd.DataFrame(columns), histograms


# -- metrics -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GfxinfoReport:
    """SR/FF and clustering of what :func:`read_gfxinfo` read (see the module docstring).

    * ``frames`` — the per-frame table with ``duration_ns``, ``normal``, the stages,
      ``sr``, ``ff``, ``aware_rule`` (``present|dequeue|none``), ``hidden``, ``sr_aware``,
      ``ff_aware``.
    * ``packages`` — one row per (file, package, pid): counts and rates, the buffer-aware
      counts, duration percentiles from the rows, the summary lines as reported (the last
      process-scope record: ``reported_*``) and the gap summary.
    * ``gaps`` — one row per gap (``kind`` sr_to_sr | ff_to_sr).
    * ``gap_summary`` — per package and kind, and over all packages (``package`` = ``*``).
    """

    frames: pd.DataFrame
    packages: pd.DataFrame
    gaps: pd.DataFrame
    gap_summary: pd.DataFrame
    summaries: pd.DataFrame
    histograms: pd.DataFrame
    warnings: dict[str, Any]

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return {
            "packages": self.packages,
            "frames": self.frames,
            "gaps": self.gaps,
            "gap_summary": self.gap_summary,
            "summaries": self.summaries,
            "histograms": self.histograms,
        }

    def to_json(self) -> dict[str, Any]:
        """``{"packages": [...], "gaps": [...], "warnings": {...}}``; NaN/NA become null."""
        overall = self.gap_summary[self.gap_summary["package"] == "*"]
        return {
            "packages": _records(self.packages),
            "gaps": _records(overall.drop(columns=["file", "package", "pid"])),
            "warnings": self.warnings,
        }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {str(k): _plain(v) for k, v in row.items()}
        for row in frame.astype(object).to_dict(orient="records")
    ]


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value


def analyze(data: GfxinfoData) -> GfxinfoReport:
    """Per-frame metrics, per-package SR/FF (naive and buffer-aware), gaps."""
    frames = _frame_metrics(data.frames)
    gaps = _gaps(frames)
    gap_summary = _gap_summary(gaps)
    packages = _packages(data, frames, gap_summary)
    warnings = data.warnings.as_dict()
    warnings["invalid_timestamp_rows"] = int(
        ((frames["flags"] == 0) & ~frames["normal"]).sum() if len(frames) else 0
    )
    return GfxinfoReport(
        frames, packages, gaps, gap_summary, data.summaries, data.histograms, warnings
    )


def _set(frames: pd.DataFrame, name: str) -> tuple[IntArray, BoolArray]:
    """A timestamp column's values and where it is known and set (> 0)."""
    if name not in frames:
        return np.zeros(len(frames), np.int64), np.zeros(len(frames), np.bool_)
    values, known = _values(frames[name])
    return values, known & (values > 0)


def _values(column: pd.Series[Any]) -> tuple[IntArray, BoolArray]:
    """Values (NA as 0) and the known mask of an int64 or Int64 column."""
    array = column.array
    if isinstance(array, pd.arrays.IntegerArray):
        mask = np.asarray(array.isna(), dtype=np.bool_)
        return np.asarray(array.to_numpy(dtype=np.int64, na_value=0)), ~mask
    return column.to_numpy(dtype=np.int64), np.ones(len(column), np.bool_)


def _nullable(values: IntArray, known: BoolArray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(np.where(known, values, 0).astype(np.int64), ~known)


def _frame_metrics(raw: pd.DataFrame) -> pd.DataFrame:
    frames = raw.copy()
    n = len(frames)
    flags = frames["flags"].to_numpy(dtype=np.int64) if n else np.zeros(0, np.int64)
    start, start_set = _set(frames, "intended_vsync_ns")
    end, end_set = _set(frames, "frame_completed_ns")
    both = start_set & end_set  # two positive int64s: their difference cannot overflow
    duration = np.where(both, end - start, 0)
    normal = (flags == 0) & both & (duration >= 0)
    frames["duration_ns"] = _nullable(duration, both)
    frames["normal"] = normal
    vsync, vsync_set = _set(frames, "vsync_ns")
    frames["missed_vsync_ns"] = _nullable(vsync - start, vsync_set & start_set)
    for stage, (a, b) in STAGES.items():
        t0, ok0 = _set(frames, a)
        t1, ok1 = _set(frames, b)
        frames[stage] = _nullable(t1 - t0, ok0 & ok1)
    frames["sr"] = normal & slow_mask(duration)
    frames["ff"] = normal & frozen_mask(duration)
    rule, hidden = _buffer_rule(frames, duration, normal)
    frames["aware_rule"] = pd.Categorical.from_codes(
        rule, categories=pd.Index(["none", "present", "dequeue"], dtype=object)
    )
    frames["hidden"] = hidden
    frames["sr_aware"] = frames["sr"].to_numpy() & ~hidden
    frames["ff_aware"] = frames["ff"].to_numpy() & ~hidden
    return frames


def _group_codes(frames: pd.DataFrame, keys: Sequence[str]) -> IntArray:
    if not len(frames):
        return np.zeros(0, np.int64)
    codes = frames.groupby(list(keys), sort=False, observed=True).ngroup()
    return np.asarray(codes.to_numpy(), dtype=np.int64)


def _buffer_rule(
    frames: pd.DataFrame, duration: IntArray, normal: BoolArray
) -> tuple[npt.NDArray[np.int8], BoolArray]:
    """Per frame: the rule that judged it (0 none, 1 present, 2 dequeue) and whether it is
    hidden by a ready buffer (module docstring, "Buffer-aware SR/FF")."""
    n = len(frames)
    rule = np.zeros(n, np.int8)
    hidden = np.zeros(n, np.bool_)
    if not n:
        return rule, hidden
    present, present_set = _set(frames, "display_present_time_ns")
    by_present = np.zeros(n, np.bool_)
    gap = np.zeros(n, np.int64)
    if present_set.any():
        group = _group_codes(frames, ("file", "package", "pid", "window"))
        start, _ = _set(frames, "intended_vsync_ns")
        order = np.lexsort((frames["line"].to_numpy(np.int64), start, group))
        shown = order[present_set[order]]  # presented frames, per window in time order
        g, p = group[shown], present[shown]
        has_prev = np.zeros(len(shown), np.bool_)
        has_prev[1:] = (g[1:] == g[:-1]) & (p[1:] > p[:-1])
        step = np.zeros(len(shown), np.int64)
        step[1:] = p[1:] - p[:-1]
        by_present[shown[has_prev]] = True
        gap[shown[has_prev]] = step[has_prev]
    interval, interval_known = (
        _values(frames["frame_interval_ns"])
        if ("frame_interval_ns" in frames)
        else (np.zeros(n, np.int64), np.zeros(n, np.bool_))
    )
    usable = interval_known & (interval > 0) & (interval <= _MAX_INTERVAL_NS)
    interval = np.where(usable, interval, DEFAULT_FRAME_INTERVAL_NS)
    by_present &= normal
    hidden_present = by_present & (gap <= interval + interval // 2)
    if "dequeue_buffer_duration_ns" in frames:
        dequeue, dequeue_known = _values(frames["dequeue_buffer_duration_ns"])
        by_dequeue = normal & ~by_present & dequeue_known & (dequeue >= 0)
        # duration and dequeue are ≥ 0 here, so the difference cannot overflow
        hidden_dequeue = by_dequeue & (duration - np.where(by_dequeue, dequeue, 0) <= SLOW_FRAME_NS)
    else:
        by_dequeue = hidden_dequeue = np.zeros(n, np.bool_)
    rule[by_present] = 1
    rule[by_dequeue] = 2
    return rule, hidden_present | hidden_dequeue


def _package_order(frames: pd.DataFrame) -> tuple[IntArray, IntArray]:
    """Normal frames sorted by package then IntendedVsync: (row indices, package code)."""
    group = _group_codes(frames, ("file", "package", "pid"))
    start, _ = _set(frames, "intended_vsync_ns")
    normal = frames["normal"].to_numpy(np.bool_) if len(frames) else np.zeros(0, np.bool_)
    line = frames["line"].to_numpy(np.int64) if len(frames) else np.zeros(0, np.int64)
    order = np.lexsort((line, start, group))
    order = order[normal[order]]
    return order, group[order]


_GAP_COLUMNS = [
    "file", "package", "pid", "kind", "from_line", "to_line", "gap_frames", "gap_ms",
    "gap_after_end_ms",
]  # fmt: skip


def _gaps(frames: pd.DataFrame) -> pd.DataFrame:
    """SR→SR and FF→SR gaps (module docstring, "Temporal clustering")."""
    if not len(frames):
        return pd.DataFrame(columns=_GAP_COLUMNS)
    order, group = _package_order(frames)
    first = np.ones(len(order), np.bool_)
    first[1:] = group[1:] != group[:-1]
    rank = np.arange(len(order)) - np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    sr = frames["sr"].to_numpy(np.bool_)[order]
    ff = frames["ff"].to_numpy(np.bool_)[order]
    s = np.flatnonzero(sr)
    pieces = []
    # SR → next SR: consecutive SR positions in the same package
    same = group[s[1:]] == group[s[:-1]]
    pieces.append(("sr_to_sr", s[:-1][same], s[1:][same]))
    f = np.flatnonzero(ff)
    j = np.searchsorted(s, f, side="right")
    ok = j < len(s)
    ok[ok] = group[s[j[ok]]] == group[f[ok]]
    pieces.append(("ff_to_sr", f[ok], s[j[ok]]))
    start = frames["intended_vsync_ns"].to_numpy(np.int64)[order]
    end = frames["frame_completed_ns"].to_numpy(np.int64)[order]
    lines = frames["line"].to_numpy(np.int64)[order]
    parts = []
    for kind, a, b in pieces:
        rows = order[a]
        parts.append(
            pd.DataFrame(
                {
                    "file": frames["file"].to_numpy(dtype=object)[rows],
                    "package": frames["package"].to_numpy(dtype=object)[rows],
                    "pid": frames["pid"].to_numpy(np.int64)[rows],
                    "kind": kind,
                    "from_line": lines[a],
                    "to_line": lines[b],
                    "gap_frames": rank[b] - rank[a],
                    "gap_ms": (start[b] - start[a]) / 1e6,
                    "gap_after_end_ms": (start[b] - end[a]) / 1e6,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)[_GAP_COLUMNS]


_GAP_PCTS = (25, 50, 75, 90)


def _gap_stats(gaps: pd.DataFrame) -> dict[str, float]:
    frames = gaps["gap_frames"].to_numpy(np.float64)
    ms = gaps["gap_ms"].to_numpy(np.float64)
    out: dict[str, float] = {"n": float(len(gaps))}
    for p in _GAP_PCTS:
        out[f"frames_p{p}"] = float(np.percentile(frames, p)) if len(frames) else math.nan
    for p in _GAP_PCTS:
        out[f"ms_p{p}"] = float(np.percentile(ms, p)) if len(ms) else math.nan
    out["share_adjacent"] = float(np.mean(frames == 1)) if len(frames) else math.nan
    return out


def _gap_summary(gaps: pd.DataFrame) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for kind in ("sr_to_sr", "ff_to_sr"):
        of_kind = gaps[gaps["kind"] == kind]
        for (file, package, pid), part in of_kind.groupby(["file", "package", "pid"], sort=False):
            rows.append({"file": file, "package": package, "pid": pid, "kind": kind,
                         **_gap_stats(part)})  # fmt: skip
        rows.append({"file": "*", "package": "*", "pid": -1, "kind": kind, **_gap_stats(of_kind)})
    summary = pd.DataFrame(rows)
    summary["n"] = summary["n"].astype("int64")
    return summary


def _last_process_summary(summaries: pd.DataFrame) -> dict[tuple[str, str, int], dict[str, Any]]:
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    counts: Counter[tuple[str, str, int]] = Counter()
    process = summaries[summaries["scope"] == "process"]
    for row in process.astype(object).to_dict(orient="records"):
        key = (str(row["file"]), str(row["package"]), int(row["pid"]))
        counts[key] += 1
        out[key] = {f"reported_{c}": row[c] for c in SUMMARY_COLUMNS}
        out[key]["reported_records"] = counts[key]
    return out


def _packages(data: GfxinfoData, frames: pd.DataFrame, gap_summary: pd.DataFrame) -> pd.DataFrame:
    keys: dict[tuple[str, str, int], None] = {}
    sections = data.sections
    for file, package, pid in zip(
        sections["file"].tolist(),
        sections["package"].tolist(),
        sections["pid"].tolist(),
        strict=True,
    ):
        keys[(str(file), str(package), int(pid))] = None
    group = _group_codes(frames, ("file", "package", "pid"))
    index: dict[tuple[str, str, int], IntArray] = {}
    if len(frames):
        first = pd.DataFrame({"g": group, "i": np.arange(len(frames))}).groupby("g")["i"]
        files = frames["file"].to_numpy(dtype=object)
        packages = frames["package"].to_numpy(dtype=object)
        pids = frames["pid"].to_numpy(np.int64)
        for _, rows in first:
            i = rows.to_numpy(np.int64)
            key = (str(files[i[0]]), str(packages[i[0]]), int(pids[i[0]]))
            keys.setdefault(key)
            index[key] = i
    reported = _last_process_summary(data.summaries)
    gaps = {
        (str(r["file"]), str(r["package"]), int(r["pid"]), str(r["kind"])): r
        for r in gap_summary.to_dict(orient="records")
    }
    table = pd.DataFrame(
        [
            _package_row(key, frames, index.get(key, np.zeros(0, np.int64)), reported, gaps)
            for key in keys
        ]
    )
    if len(table):
        for column in ("sr_aware", "ff_aware", "reported_records"):
            table[column] = table[column].astype("Int64")
        for column in SUMMARY_COLUMNS:  # the dtypes of the summaries table (NA-aware)
            table[f"reported_{column}"] = table[f"reported_{column}"].astype(
                "float64" if column.endswith("_pct") else "Int64"
            )
    return table


def _package_row(
    key: tuple[str, str, int],
    frames: pd.DataFrame,
    rows: IntArray,
    reported: dict[tuple[str, str, int], dict[str, Any]],
    gaps: dict[tuple[str, str, int, str], dict[Any, Any]],
) -> dict[str, Any]:
    file, package, pid = key
    part = frames.iloc[rows]
    normal = part["normal"].to_numpy(np.bool_) if len(part) else np.zeros(0, np.bool_)
    duration, _ = _values(part["duration_ns"]) if len(part) else (np.zeros(0, np.int64), normal)
    duration = duration[normal]
    naive = jank_counts(duration)
    row: dict[str, Any] = {"package": package, "pid": pid, "file": file}
    row.update(naive)
    rule = part["aware_rule"].to_numpy(dtype=object)[normal] if len(part) else np.zeros(0, object)
    judged = rule != "none"
    if judged.any():
        hidden = part["hidden"].to_numpy(np.bool_)[normal]
        aware = jank_counts(duration, ready_buffer=hidden)
        row.update({"sr_aware": aware["sr"], "ff_aware": aware["ff"]})
        row.update({"sr_aware_pct": aware["sr_pct"], "ff_aware_pct": aware["ff_pct"]})
        used = sorted(set(rule[judged].tolist()))
        row["aware_rule"] = "+".join(used)
    else:
        row.update({"sr_aware": None, "ff_aware": None})
        row.update({"sr_aware_pct": math.nan, "ff_aware_pct": math.nan, "aware_rule": None})
    slow = slow_mask(duration) | frozen_mask(duration)
    row["aware_by_present"] = int((rule == "present").sum())
    row["aware_by_dequeue"] = int((rule == "dequeue").sum())
    row["aware_unjudged_slow"] = int((slow & ~judged).sum())
    row["rows"] = len(part)
    row["flagged_rows"] = int((part["flags"].to_numpy(np.int64) != 0).sum()) if len(part) else 0
    for p in PERCENTILES:
        value = float(np.percentile(duration, p)) / 1e6 if len(duration) else math.nan
        row[f"frame_p{p}_ms"] = value
    row.update(reported.get(key, {f"reported_{c}": None for c in SUMMARY_COLUMNS}))
    row.setdefault("reported_records", 0)
    for kind, short in (("sr_to_sr", "sr_sr"), ("ff_to_sr", "ff_sr")):
        stats = gaps.get((file, package, pid, kind), {})
        row[f"gap_{short}_n"] = int(stats.get("n", 0))
        for stat in ("frames_p50", "frames_p90", "ms_p50", "ms_p90"):
            row[f"gap_{short}_{stat}"] = stats.get(stat, math.nan)
    return row


# -- synthetic dumps ---------------------------------------------------------------------------

#: The HISTOGRAM buckets of AOSP's ProfileData (ms): 1 ms steps to 32, then 2, 4, 50.
HISTOGRAM_MS = (
    *range(5, 33), *range(34, 49, 2), *range(53, 134, 4), 150, *range(200, 5000, 50),
)  # fmt: skip


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
    layout: Literal["old", "new"] | Sequence[str] = "new",
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
    with Flags ≠ 0. ``layout`` is ``old`` (16 columns), ``new`` (24) or a list of header
    names (known ones, in any order); ``extra_columns`` unknown columns are added at random
    places. ``blocks`` splits the rows into that many PROFILEDATA blocks; ``idle_packages``
    get a section with no frames. Summary lines agree with the normal rows (percentiles by
    AOSP's histogram rule). The truth's aware counts follow the module's documented rule.
    """
    interval = round(1e9 / refresh_hz)
    names = LAYOUT_OLD if layout == "old" else LAYOUT_NEW if layout == "new" else tuple(layout)
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
        out += _synth_section(rng, truth, interval, names, blocks)
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
    rng: np.random.Generator, truth: SynthPackage, interval: int, names: Sequence[str], blocks: int
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
            columns = [truth.rows[name][a:b].tolist() for name in truth.header]
            out += [",".join(map(str, values)) + "," for values in zip(*columns, strict=True)]
            out.append(_MARKER)
            out.append("")
    out += [
        "View hierarchy:", "", f"  {root}", "  275 views, 271.73 kB of render nodes", "", "",
        "Total ViewRootImpl: 1", "Total attached Views: 275",
        "Total RenderNode: 271.73 kB (used) / 1.32 MB (capacity)", "", "",
    ]  # fmt: skip
    return out
