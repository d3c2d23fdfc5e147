"""Memory-aware adaptation (the memory-pressure study, CoNEXT 2022): lower the encoded
frame rate and/or resolution on ``onTrimMemory`` signals, and recover once the signals
stop.

:class:`MemoryAware` is an ABR rule (the protocol of :mod:`mqoe.policies.abr.base`) that
returns a *cap*: combine it with a network rule through
:class:`~mqoe.policies.abr.rules.MostConservative` (``"throughput+memory-aware"``), as a
player stacks caps on its throughput rule.

Steps: the candidate caps of a dimension are the configured levels below the ladder's best
in that dimension (its highest fps, its tallest rung) and not below its worst, so every
cap is one some rung satisfies and a frame-rate policy never changes the resolution.
RUNNING_MODERATE caps one step down, RUNNING_LOW two, RUNNING_CRITICAL (and any higher
level) at the lowest candidate; a ladder with nothing below its best is not capped in
that dimension.

The rule is a pure function of the state, so recovery is read from the time of the most
recent trim signal (``state.last_trim_s``): ``quiet_s`` after it the cap is lifted at
once (Android sends no "pressure is over" signal; a trim level of 0 in the state also
lifts it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from mqoe.device.lmk import TRIM_RUNNING_CRITICAL, TRIM_RUNNING_LOW, TRIM_RUNNING_MODERATE
from mqoe.policies.abr.base import AbrState, Decision, Representation

# Resolution steps (the memory-pressure study's ladder: 240p…1440p).
HEIGHT_LEVELS_PX = (1440, 1080, 720, 480, 360, 240)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryAware:
    """Cap the frame rate (``step="fps"``), the resolution (``"resolution"``) or both, one
    step per trim level, for ``quiet_s`` after the latest trim signal.

    The decision is the highest ladder index whose rung satisfies every active cap (a rung
    without an ``fps`` or ``height_px`` is not limited in that dimension); if no rung
    does, the lowest rung. Without an active trim signal: the top index (no restriction).
    Reads the time of the latest signal from ``state.last_trim_s`` (seconds, None = no
    time known: a signalled level then stays in force).
    """

    name: ClassVar[str] = "memory-aware"

    step: Literal["fps", "resolution", "both"] = "fps"  # the study's frame-rate adaptation
    quiet_s: float = 30.0  # calibration: no trim for this long = pressure over
    fps_levels: tuple[float, ...] = (60.0, 48.0, 30.0, 24.0)  # the study's 24/30/48/60 fps
    height_levels: tuple[int, ...] = HEIGHT_LEVELS_PX  # the study's resolution ladder

    def __post_init__(self) -> None:
        if self.step not in ("fps", "resolution", "both"):
            raise ValueError(f"step must be 'fps', 'resolution' or 'both', got {self.step!r}")
        if not (math.isfinite(self.quiet_s) and self.quiet_s >= 0):
            raise ValueError(f"quiet_s must be a non-negative number, got {self.quiet_s!r}")
        for label, levels in (
            ("fps_levels", self.fps_levels),
            ("height_levels", self.height_levels),
        ):
            if not levels or any(not level > 0 for level in levels):
                raise ValueError(f"{label} must be a non-empty list of positive values")

    def steps(self, state: AbrState) -> int | None:
        """Steps down in force: 1 moderate, 2 low, None = the lowest; 0 = no cap."""
        level = state.trim_level
        if level < TRIM_RUNNING_MODERATE:
            return 0
        last_trim_s = state.last_trim_s
        if last_trim_s is not None and state.now_s - last_trim_s >= self.quiet_s:
            return 0
        if level >= TRIM_RUNNING_CRITICAL:
            return None
        return 2 if level >= TRIM_RUNNING_LOW else 1

    def choose(self, state: AbrState) -> Decision:
        ladder = state.ladder
        top = len(ladder) - 1
        steps = self.steps(state)
        if steps == 0:
            return Decision(top)
        max_fps = max_height = math.inf
        if self.step in ("fps", "both"):
            max_fps = _cap(self.fps_levels, [rep.fps for rep in ladder], steps)
        if self.step in ("resolution", "both"):
            max_height = _cap(self.height_levels, [rep.height_px for rep in ladder], steps)
        for index in range(top, -1, -1):
            rep = ladder[index]
            if _fits(rep, max_fps, max_height):
                return Decision(index)
        return Decision(0)


def _cap(levels: Sequence[float], offered: Sequence[float | None], steps: int | None) -> float:
    """The cap ``steps`` levels below the best the ladder offers (None: the lowest level),
    among the levels in [worst offered, best offered); infinity when the ladder says nothing
    about this dimension or no level lies in that range."""
    known = [value for value in offered if value is not None]
    if not known:
        return math.inf
    best, worst = max(known), min(known)
    below = sorted((level for level in levels if worst <= level < best), reverse=True)
    if not below:
        return math.inf
    if steps is None:
        return below[-1]
    return below[min(steps, len(below)) - 1]


def _fits(rep: Representation, max_fps: float, max_height: float) -> bool:
    fps_ok = rep.fps is None or rep.fps <= max_fps
    height_ok = rep.height_px is None or rep.height_px <= max_height
    return fps_ok and height_ok
