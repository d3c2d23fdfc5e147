"""Synthetic systrace captures with ground truth: what :func:`synth_systrace`
scheduled is known exactly, so the parser's thread states, preemptions, frames and
causes can be checked against it; :func:`write_large_capture` repeats such a capture
into a big file for benchmarks; :func:`wrap_html` and :func:`wrap_linux_perf_data` put a
trace in the two generations of systrace HTML reports.

Modules: :mod:`.sim` (the scheduler simulation), :mod:`.trace` (one trace and its
truth), :mod:`.containers` (HTML reports), :mod:`.large` (big captures).
"""

from mqoe.generators.systrace.containers import wrap_html, wrap_linux_perf_data
from mqoe.generators.systrace.large import write_large_capture
from mqoe.generators.systrace.trace import SynthTruth, synth_systrace

__all__ = [
    "SynthTruth",
    "synth_systrace",
    "wrap_html",
    "wrap_linux_perf_data",
    "write_large_capture",
]
