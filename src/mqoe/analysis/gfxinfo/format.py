"""The vocabulary of ``dumpsys gfxinfo`` (AOSP frameworks/base, libs/hwui: ``FrameInfo``,
``JankTracker``, ``ProfileData``): column names, layouts, summary lines. The format itself
is described in :mod:`mqoe.analysis.gfxinfo`."""

from __future__ import annotations

#: Every per-frame column of AOSP's FrameInfo (Android 6–15): header name → our column.
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
#: Every newer column, values under their own names (24 columns).
LAYOUT_NEW = (
    "Flags", "FrameTimelineVsyncId", "IntendedVsync", "Vsync", "InputEventId",
    "HandleInputStart", "AnimationStart", "PerformTraversalsStart", "DrawStart",
    "FrameDeadline", "FrameStartTime", "FrameInterval", "WorkloadTarget", "SyncQueued",
    "SyncStart", "IssueDrawCommandsStart", "SwapBuffers", "FrameCompleted",
    "DequeueBufferDuration", "QueueBufferDuration", "GpuCompleted", "SwapBuffersCompleted",
    "DisplayPresentTime", "CommandSubmissionCompleted",
)  # fmt: skip
#: The header an Android 14 phone prints (23 columns). FrameInfoNames lists FrameInterval
#: before FrameStartTime while FrameInfoIndex stores FrameStartTime first, so each of the
#: two labels stands over the other's value (the reader tells them apart by value).
LAYOUT_ANDROID14 = (
    "Flags", "FrameTimelineVsyncId", "IntendedVsync", "Vsync", "InputEventId",
    "HandleInputStart", "AnimationStart", "PerformTraversalsStart", "DrawStart",
    "FrameDeadline", "FrameInterval", "FrameStartTime", "SyncQueued", "SyncStart",
    "IssueDrawCommandsStart", "SwapBuffers", "FrameCompleted", "DequeueBufferDuration",
    "QueueBufferDuration", "GpuCompleted", "SwapBuffersCompleted", "DisplayPresentTime",
    "CommandSubmissionCompleted",
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
#: The HISTOGRAM buckets of AOSP's ProfileData (ms): 1 ms steps to 32, then 2, 4, 50.
HISTOGRAM_MS = (
    *range(5, 33), *range(34, 49, 2), *range(53, 134, 4), 150, *range(200, 5000, 50),
)  # fmt: skip

MAX_LINE_CHARS = 1 << 20  # a framestats row is < 1 kB; anything this long is not gfxinfo
MAX_LINE_BYTES = MAX_LINE_CHARS  # the former name (lines are counted in characters)
NO_INPUT = 9_223_372_036_854_775_807  # OldestInputEvent of a frame that handled no input
DEFAULT_FRAME_INTERVAL_NS = 16_666_667  # 60 Hz, when the row has no usable FrameInterval
MAX_INTERVAL_NS = 1_000_000_000  # a FrameInterval above 1 s is not a display's
MARKER = "---PROFILEDATA---"
