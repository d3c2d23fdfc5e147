"""Operating performance points: a cluster's frequency steps (and voltages).

As the kernel's cpufreq frequency table (``cpufreq_frequency_table``): ascending kHz,
one table per cluster (policy). A governor's request is resolved to a step with the
kernel's relations: ``CPUFREQ_RELATION_L`` (lowest step at or above the target; what
schedutil and interactive use) and ``CPUFREQ_RELATION_H`` (highest at or below).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class OppTable:
    """A cluster's steps: ``khz`` ascending, ``uv`` the voltage at each (or empty)."""

    khz: tuple[int, ...]
    uv: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.khz:
            raise ValueError("an OPP table needs at least one frequency")
        if any(b <= a for a, b in zip(self.khz, self.khz[1:], strict=False)):
            raise ValueError(f"OPP frequencies must ascend strictly: {list(self.khz)}")
        if self.khz[0] <= 0:
            raise ValueError("OPP frequencies must be positive")
        if self.uv and len(self.uv) != len(self.khz):
            raise ValueError(f"{len(self.uv)} voltages for {len(self.khz)} frequencies")

    @classmethod
    def capped(cls, khz: Sequence[int], uv: Sequence[int], max_khz: float) -> OppTable:
        """The steps at or below ``max_khz`` (a phone's top clock may sit below its SoC's
        top bin); 1% slack because spec sheets round (2.26 GHz for 2265.6 MHz)."""
        keep = [i for i, f in enumerate(khz) if f <= max_khz * 1.01]
        if not keep:
            raise ValueError(f"no OPP at or below {max_khz:g} kHz (lowest {min(khz)})")
        return cls(tuple(khz[i] for i in keep), tuple(uv[i] for i in keep) if uv else ())

    @property
    def min_khz(self) -> int:
        return self.khz[0]

    @property
    def max_khz(self) -> int:
        return self.khz[-1]

    def index(self, khz: int) -> int:
        """The step's position (``khz`` must be a step)."""
        i = bisect.bisect_left(self.khz, khz)
        if i == len(self.khz) or self.khz[i] != khz:
            raise ValueError(f"{khz} kHz is not an OPP of {list(self.khz)}")
        return i

    def at_least(self, khz: float) -> int:
        """CPUFREQ_RELATION_L: the lowest step ≥ ``khz`` (the top step if none)."""
        steps = self.khz
        i = bisect.bisect_left(steps, khz)
        return steps[i] if i < len(steps) else steps[-1]

    def at_most(self, khz: float) -> int:
        """CPUFREQ_RELATION_H: the highest step ≤ ``khz`` (the bottom step if none)."""
        i = bisect.bisect_right(self.khz, khz)
        return self.khz[max(i - 1, 0)]

    def clamp(self, khz: float, low: int, high: int) -> int:
        """RELATION_L, then kept within the policy's [``low``, ``high``] steps."""
        step = self.at_least(khz)
        if step < low:
            step = low
        return high if step > high else step


def uniform(max_khz: int, steps: int = 1) -> OppTable:
    """A table for a cluster with no sourced OPPs: ``steps`` evenly spaced up to max."""
    return OppTable(tuple(max_khz * (k + 1) // steps for k in range(steps)))
