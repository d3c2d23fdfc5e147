"""Big-input benchmarks: the analysers on a capture a user pulls after a long session.

A generated 1 GB systrace capture and a 500 MB ``dumpsys gfxinfo framestats`` dump are
analysed by the real command (``mqoe analyze … --json``, run through ``main``) in a child
process; the figures are its throughput (file MB per wall second) and its peak resident
memory (the child's VmHWM), which must not grow with the file.
The inputs live in a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MB = 1_000_000


@dataclass(frozen=True)
class BigInput:
    """One analyser on one generated input: its size and its peak-memory bound."""

    name: str  # figure prefix
    analyser: str  # `mqoe analyze NAME`
    size_bytes: int  # the generated file's size
    rss_bound_mb: float  # the bound on the command's peak RSS
    suffix: str


SYSTRACE = BigInput("systrace_1gb", "systrace", 1_000 * MB, 300.0, ".txt")
GFXINFO = BigInput("gfxinfo_500mb", "gfxinfo", 500 * MB, 300.0, ".txt")


def _writer(analyser: str) -> Callable[[Path, int, int], None]:
    if analyser == "systrace":
        from mqoe.generators.systrace import write_large_capture

        return write_large_capture
    from mqoe.generators.gfxinfo import write_large_dump

    return write_large_dump


# The command runs in this launcher, which then reports its own peak RSS. Not the
# child's ru_maxrss from wait4: Linux keeps the pre-exec high-water mark in it, which is
# the forking parent's size (a test session's 400+ MB) rather than the command's.
_LAUNCHER = """
import sys
from mqoe.cli.main import main
code = main(["analyze", sys.argv[1], sys.argv[2], "--json"])
sys.stdout.flush()
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("VmHWM:"):
            sys.stderr.write("mqoe-bench-vmhwm-kib " + line.split()[1] + chr(10))
sys.exit(code)
"""
_HWM_TAG = "mqoe-bench-vmhwm-kib "


def measure_big_input(spec: BigInput, scale: float = 1.0) -> dict[str, float]:
    """``{name_mb_per_s, name_peak_rss_mb}`` for the analyser on a generated file of
    ``scale × spec.size_bytes`` (``scale`` < 1 for a quick look; the bound is for 1).
    The peak is the command's VmHWM (Linux; elsewhere the child's ``ru_maxrss``)."""
    with tempfile.TemporaryDirectory(prefix="mqoe-bench-") as folder:
        path = Path(folder) / f"{spec.name}{spec.suffix}"
        _writer(spec.analyser)(path, int(spec.size_bytes * scale), 0)
        size = path.stat().st_size
        command = [sys.executable, "-c", _LAUNCHER, spec.analyser, str(path)]
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise RuntimeError(f"mqoe analyze {spec.analyser} failed: {stderr.strip()[-500:]}")
    peak_kib = float(usage.ru_maxrss)  # Linux: KiB
    for line in stderr.splitlines():
        if line.startswith(_HWM_TAG):
            peak_kib = float(line.removeprefix(_HWM_TAG))
    return {
        f"{spec.name}_mb_per_s": size / MB / elapsed,
        f"{spec.name}_peak_rss_mb": peak_kib * 1024 / MB,
    }


def big_input_figures(quick: bool = False) -> dict[str, float]:
    """Both big-input figures (at a fifth of the size when ``quick``)."""
    scale = 0.2 if quick else 1.0
    figures: dict[str, float] = {}
    for spec in (SYSTRACE, GFXINFO):
        figures.update(measure_big_input(spec, scale))
    return figures


def bound_lines(figures: dict[str, float]) -> list[str]:
    """One line per big input: its peak RSS against the bound, within or over."""
    lines = []
    for spec in (SYSTRACE, GFXINFO):
        rss = figures.get(f"{spec.name}_peak_rss_mb")
        if rss is None:
            continue
        verdict = "within" if rss <= spec.rss_bound_mb else "OVER"
        lines.append(
            f"{spec.analyser + ' peak RSS vs bound':36s} {rss:10.0f} MB "
            f"{verdict} {spec.rss_bound_mb:.0f} MB"
        )
    return lines
