"""Simulated time is an integer number of nanoseconds; these helpers convert at the edges."""

from __future__ import annotations

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000


def us(value: float) -> int:
    """Microseconds → integer nanoseconds."""
    return round(value * NS_PER_US)


def ms(value: float) -> int:
    """Milliseconds → integer nanoseconds."""
    return round(value * NS_PER_MS)


def seconds(value: float) -> int:
    """Seconds → integer nanoseconds."""
    return round(value * NS_PER_S)


def to_ms(ns: int) -> float:
    """Integer nanoseconds → milliseconds."""
    return ns / NS_PER_MS


def to_s(ns: int) -> float:
    """Integer nanoseconds → seconds."""
    return ns / NS_PER_S
