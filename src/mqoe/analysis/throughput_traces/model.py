"""The shapes every trace format is parsed into: a looped piecewise-constant
:class:`ThroughputTrace` and a Sabre-style :class:`VideoManifest`."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from mqoe.policies.abr.base import Representation

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
TraceFormat = Literal["auto", "sabre", "mahimahi", "text"]

MAHIMAHI_PACKET_BITS = 1500 * 8  # Mahimahi's delivery opportunity: one 1500-byte MTU packet
FORMATS = ("auto", "sabre", "mahimahi", "text")


def _frozen(values: object) -> FloatArray:
    array = np.array(values, dtype=np.float64).reshape(-1)
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class ThroughputTrace:
    """Piecewise-constant network capacity, played in order and looped.

    Segment ``i`` lasts ``duration_ms[i]`` (> 0) at ``bandwidth_kbps[i]`` (≥ 0, equal to
    bits per millisecond) with one-way request latency ``latency_ms[i]`` (≥ 0). A session
    longer than :attr:`period_ms` wraps around to the first segment.
    """

    name: str
    duration_ms: FloatArray
    bandwidth_kbps: FloatArray
    latency_ms: FloatArray

    def __post_init__(self) -> None:
        for field_name in ("duration_ms", "bandwidth_kbps", "latency_ms"):
            object.__setattr__(self, field_name, _frozen(getattr(self, field_name)))
        n = len(self.duration_ms)
        if n == 0:
            raise ValueError(f"trace {self.name!r} has no segments")
        if len(self.bandwidth_kbps) != n or len(self.latency_ms) != n:
            raise ValueError(f"trace {self.name!r}: the three arrays differ in length")
        arrays = (self.duration_ms, self.bandwidth_kbps, self.latency_ms)
        if not all(np.isfinite(a).all() for a in arrays):
            raise ValueError(f"trace {self.name!r} has a non-finite value")
        if (self.duration_ms <= 0).any():
            raise ValueError(f"trace {self.name!r} has a segment of duration ≤ 0")
        if (self.bandwidth_kbps < 0).any() or (self.latency_ms < 0).any():
            raise ValueError(f"trace {self.name!r} has a negative bandwidth or latency")

    @property
    def period_ms(self) -> float:
        """Length of one pass through the trace (it loops after this)."""
        return float(self.duration_ms.sum())

    @property
    def bits_per_period(self) -> float:
        """Bits the trace can deliver in one period (kbit/s × ms = bits)."""
        return float(np.dot(self.duration_ms, self.bandwidth_kbps))

    @property
    def mean_kbps(self) -> float:
        """Time-weighted mean bandwidth."""
        return self.bits_per_period / self.period_ms


@dataclass(frozen=True)
class VideoManifest:
    """A segmented video: segment duration, the ladder, and each segment's size per rung."""

    segment_s: float
    ladder: tuple[Representation, ...]
    segment_sizes_bits: IntArray  # [segment, ladder index]

    def __post_init__(self) -> None:
        sizes = np.array(self.segment_sizes_bits, dtype=np.int64)
        sizes.setflags(write=False)
        object.__setattr__(self, "segment_sizes_bits", sizes)
        if not self.segment_s > 0 or not math.isfinite(self.segment_s):
            raise ValueError("segment_s must be a positive number")
        if not self.ladder:
            raise ValueError("the ladder is empty")
        rates = [rep.bitrate_kbps for rep in self.ladder]
        if any(b <= a for a, b in itertools.pairwise(rates)) or rates[0] <= 0:
            raise ValueError("ladder bitrates must be positive and strictly ascending")
        if sizes.ndim != 2 or sizes.shape[0] == 0 or sizes.shape[1] != len(self.ladder):
            raise ValueError("segment_sizes_bits must be [segments, len(ladder)]")
        if (sizes <= 0).any():
            raise ValueError("segment sizes must be positive")

    @property
    def n_segments(self) -> int:
        return int(self.segment_sizes_bits.shape[0])

    @property
    def bitrates_kbps(self) -> tuple[float, ...]:
        return tuple(rep.bitrate_kbps for rep in self.ladder)

    @property
    def duration_s(self) -> float:
        return self.n_segments * self.segment_s
