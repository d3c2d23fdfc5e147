"""Discrete-event kernel: clock, event heap, processes, random streams, trace recorder.

Knows nothing about phones. Time is an integer number of nanoseconds (:mod:`units`).
"""

from mqoe.engine.kernel import NORMAL, URGENT, Deadline, DelayLine, Environment, Fifo, Timer
from mqoe.engine.process import Event, Process
from mqoe.engine.streams import RandomStreams, validate_seed
from mqoe.engine.trace import Recorder
from mqoe.engine.units import NS_PER_MS, NS_PER_S, NS_PER_US, ms, seconds, to_ms, to_s, us

__all__ = [
    "NORMAL",
    "NS_PER_MS",
    "NS_PER_S",
    "NS_PER_US",
    "URGENT",
    "Deadline",
    "DelayLine",
    "Environment",
    "Event",
    "Fifo",
    "Process",
    "RandomStreams",
    "Recorder",
    "Timer",
    "ms",
    "seconds",
    "to_ms",
    "to_s",
    "us",
    "validate_seed",
]
