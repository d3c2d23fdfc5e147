"""``dumpsys gfxinfo <package> framestats`` output pulled from real phones: the
per-frame ``framestats`` rows and the platform's summary lines, turned into slow (SR) and
frozen (FF) frame counts by the one definition in :mod:`mqoe.metrics.jank` — naive and
buffer-aware — per window and per process, plus a stage breakdown and the temporal
clustering of slow frames. The code is in ``format`` (names), ``read`` (inputs),
``parse`` (the line state machine), ``rows`` (row conversion), ``summary`` (summary
lines), ``store`` (the compact per-frame store), ``data`` (what was read), ``metrics``
(per-frame rules), ``tables`` and ``report`` (the report); generated dumps come from
:mod:`mqoe.generators.gfxinfo`. This package is their public face.

Input accepted
--------------
Text as printed by ``adb shell dumpsys gfxinfo [<package>] [framestats]`` for one package
or for all processes; several dumps concatenated in one file are fine. Files are read
through :mod:`mqoe.analysis.textio`: UTF-8 (undecodable bytes are replaced and counted —
only PROFILEDATA rows must be clean), UTF-8 with a BOM, UTF-16 with or without a BOM
(Windows PowerShell's ``adb shell dumpsys gfxinfo … > f.txt`` writes UTF-16LE); line ends
LF, CRLF, CR or old adb's CR CR LF; gzip. Files are streamed: memory holds a bounded batch
of rows plus the compact per-frame columns (≈ 40 bytes a row) and the summaries' numbers;
a line longer than :data:`MAX_LINE_CHARS` is never held whole. A long capture (a dump
every few seconds, each with the 120 most recent frames, appended to one file) is read
the same way.

* ``** Graphics info for pid N [package] **`` starts a package section; everything up to
  the next such line belongs to it. Blocks or summary lines before any section belong to
  package ``(unknown)`` with pid −1 (counted: ``profiledata_outside_section``).
* Summary lines (AOSP ``JankTracker::dumpData``) — ``Stats since: Nns``, ``Total frames
  rendered: N``, ``Janky frames: N (x.xx%)`` (also ``(legacy)``; ``nan%`` reads as NaN),
  ``50th|90th|95th|99th [gpu] percentile: Nms``, ``Number Missed Vsync|High input
  latency|Slow UI thread|Slow bitmap uploads|Slow issue draw commands|Frame deadline
  missed [(legacy)]: N``, ``[GPU] HISTOGRAM: 5ms=N …``. ``Stats since`` (or a repeated
  line) starts a new summary record; records before the section's first ``Window: name``
  line have scope ``process`` (the process's global profile data, which counts every
  window's frames, including windows gone since), later ones (Android 12+) the window's
  name. A malformed or unknown summary line is ignored and counted: these are the
  platform's own numbers, kept for comparison only. Of a histogram only the buckets that
  hold frames are kept (AOSP prints every bucket).
* ``---PROFILEDATA---`` opens a block (only with ``framestats``); its first non-blank line
  is the header — column names separated by commas — then one row of integers per frame,
  every field followed by a comma (the trailing comma may be missing), up to the next
  ``---PROFILEDATA---``. Columns are mapped **by header name** (:data:`COLUMNS`: the
  14/16-column Android 6–11 layouts, the 22–24-column Android 12+ ones, any order); the
  header must name ``Flags``, ``IntendedVsync`` and ``FrameCompleted``. Unknown columns
  are ignored (their names are counted in the warnings) and their values need not be
  integers. Blank lines in a block are ignored; a new header line inside a block starts a
  new layout. Android 12–14 print the ``FrameInterval`` and ``FrameStartTime`` labels each
  over the other's value (:data:`LAYOUT_ANDROID14`): when the first row of a layout that
  has both values set has a "FrameInterval" over 1 s and a "FrameStartTime" in (0, 1 s],
  the two columns of every row under that layout are put back under their names.
* A block's window is the last ``<name> (visibility=N)`` or ``Window: <name>`` line before
  it in its section (empty if none); Android 10+ print one block per window
  (ViewRootImpl) of the process.
* A section without any ``---PROFILEDATA---`` block is a dump taken without
  ``framestats``: its summary is reported, its per-frame figures are unknown (NA, null in
  JSON, "unknown" in text) — never zero.
* Everything else — caches, ``Profile data in ms:``, ``View hierarchy:``, headers,
  comments — is ignored.

Errors (:class:`~mqoe.errors.InputFileError` with file and line): a row whose field count
differs from its header's; a non-integer or beyond-int64 value in a known column; a row
before any header; an unusable header (a required column missing, a duplicate or
non-identifier name); any other non-blank line inside a block; an over-long line inside a
block; a file with no gfxinfo content at all; an unreadable, missing or folder path.
With ``skip_bad_lines=True`` bad lines are skipped and counted (the rows under an
unusable header with them), and a file without content is skipped and listed. Forgiven
and counted in every mode: a file that ends inside a block (its complete rows are kept; an
unterminated, incomplete last row is dropped), a gzip stream cut short, a block closed by
a new section instead of its marker, over-long lines outside blocks. A frame that
overlapping dumps of one process both hold (the same row text, so the same times) is
kept once and counted (``duplicate_rows``).

Per-frame table (:attr:`GfxinfoReport.frames`)
----------------------------------------------
One row per frame: ``file, package, pid, window, block, line`` then the known columns
present in the input as ``snake_case`` (times in ns, CLOCK_MONOTONIC). A timestamp ≤ 0 is
"not set". ``OldestInputEvent`` = 9223372036854775807 means "no input" and reads as NA, as
does ``NewestInputEvent`` of such a frame. ``duration_ns = FrameCompleted −
IntendedVsync``. ``normal`` = ``Flags == 0`` and ``0 < IntendedVsync ≤ FrameCompleted``;
only normal frames count in SR/FF (flags: 1 window visibility changed, 2 RenderThread
animation, 4 surface canvas, 8 skipped). Normal-flag rows with impossible times are
counted (``invalid_timestamp_rows``). The table is rebuilt by reading the files again
(:meth:`GfxinfoReport.iter_frames` yields it in bounded pieces). The stages partition
``duration_ns`` when every timestamp is set:

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

Windows and processes
---------------------
``windows`` counts each window's normal frames. A process counts **one frame per vsync**:
Choreographer runs every ViewRootImpl of the UI thread in the same ``doFrame``, so frames
that windows drew for one vsync share IntendedVsync. The process frame of a vsync is the
normal frame that completed last (the vsync's content is complete only when its
latest-completing window is; the first in reading order on a tie), and its duration,
SR/FF and buffer-aware judgement are that frame's. ``shared_vsyncs`` counts the vsyncs
two or more windows drew; ``window_frames`` the frames before this merge. The dump's own
process summary counts every window's frame (and windows gone since), so it can exceed
both; it is reported beside (``reported_*``), as each window's summary is in ``windows``.

Buffer-aware SR/FF (triple buffering, as in the Android responsiveness study, MobiCom 2020)
-------------------------------------------------------------------------------------------
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
a window or process none of whose frames could be judged. ``aware_rule`` says which rules
were used.

Temporal clustering
-------------------
Per process (file, package, pid), over its process frames in IntendedVsync order:
``sr_to_sr`` gaps go from each SR frame to the next SR frame, ``ff_to_sr`` from each FF
frame to the next SR frame (naive counts). ``gap_frames`` is the difference of the frames'
ranks (1 = adjacent), ``gap_ms`` start to start (IntendedVsync), ``gap_after_end_ms``
from the first frame's FrameCompleted to the next one's IntendedVsync (negative when the
frames overlapped in the pipeline). A dump holds only the recent frames, so gaps that span
two dumps include the unseen frames between them.
"""

from mqoe.analysis.gfxinfo.data import GfxinfoData, parse_gfxinfo_text, read_gfxinfo
from mqoe.analysis.gfxinfo.format import (
    COLUMNS,
    COUNTERS,
    DEFAULT_FRAME_INTERVAL_NS,
    HISTOGRAM_MS,
    LAYOUT_ANDROID14,
    LAYOUT_NEW,
    LAYOUT_OLD,
    MAX_LINE_BYTES,
    MAX_LINE_CHARS,
    NO_INPUT,
    PERCENTILES,
    REQUIRED_COLUMNS,
    STAGES,
    SUMMARY_COLUMNS,
)
from mqoe.analysis.gfxinfo.read import GfxinfoWarnings
from mqoe.analysis.gfxinfo.report import GfxinfoReport, analyze
from mqoe.analysis.gfxinfo.store import FrameStore

__all__ = [
    "COLUMNS",
    "COUNTERS",
    "DEFAULT_FRAME_INTERVAL_NS",
    "HISTOGRAM_MS",
    "LAYOUT_ANDROID14",
    "LAYOUT_NEW",
    "LAYOUT_OLD",
    "MAX_LINE_BYTES",
    "MAX_LINE_CHARS",
    "NO_INPUT",
    "PERCENTILES",
    "REQUIRED_COLUMNS",
    "STAGES",
    "SUMMARY_COLUMNS",
    "FrameStore",
    "GfxinfoData",
    "GfxinfoReport",
    "GfxinfoWarnings",
    "analyze",
    "parse_gfxinfo_text",
    "read_gfxinfo",
]
