"""The trace-driven player's link and per-segment loop, compiled with the kernel.

:mod:`mqoe.workloads.trace_player` is the scenario and its documentation; this module
holds the two pieces that run once per segment, which a study repeats millions of times
(every trace × rule × buffer), so they are compiled (``mqoe.native``): the link's
"when does the last bit arrive" and the player's buffer bookkeeping. With a rule's
compiled fast path (:class:`~mqoe.policies.abr.rungs.BufferRung`) a segment is a few
hundred nanoseconds of C and no Python frame. Interpreted (no compiler,
``MQOE_PURE_PYTHON=1``) the same source gives the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mqoe.errors import UserError
from mqoe.policies.abr.base import Download
from mqoe.policies.abr.rungs import BufferRung, count_at_most, count_below

# decide(k, now, buffer, last) -> (index, kbps, bits): a rule asked with a full AbrState.
StateChoice = Callable[[int, float, float, "int | None"], tuple[int, float, int]]

# The per-segment columns (see trace_player.SEGMENT_TABLE_COLUMNS; the first is range(n)).
SessionColumns = tuple[
    range, list[int], list[float], list[int], list[float], list[float], list[float], list[float]
]


class TraceLink:
    """A looping piecewise-constant trace as cumulative arrays: bits carried by any time,
    and its inverse.

    ``bounds_s[i]`` is when step ``i`` starts within a period and ``cum_bits[i]`` the bits
    carried before it (``len(bps) + 1`` entries each); looping adds whole periods.
    """

    def __init__(
        self,
        bounds_s: list[float],
        cum_bits: list[float],
        bps: list[float],
        latency_s: list[float],
    ) -> None:
        self.bounds_s = bounds_s
        self.cum_bits = cum_bits
        self.bps = bps
        self.latency_s = latency_s
        self.period_s = bounds_s[-1]
        self.period_bits = cum_bits[-1]
        self.last = len(bps) - 1
        self.last_bound = len(cum_bits) - 1
        self.same_latency = len(set(latency_s)) == 1

    def __call__(self, start_s: float, size_bits: float) -> float:
        return self.end(start_s, size_bits)

    def end(self, start_s: float, size_bits: float) -> float:
        """When a request sent at ``start_s`` has its last bit: the trace's latency at
        ``start_s``, then ``size_bits`` through the trace."""
        period_s = self.period_s
        period_bits = self.period_bits
        bounds_s = self.bounds_s
        cum_bits = self.cum_bits
        last = self.last
        if self.same_latency:
            first_byte = start_s + self.latency_s[0]
        else:  # the latency of the trace step at start_s
            loops = math.floor(start_s / period_s)
            i = count_at_most(bounds_s, start_s - loops * period_s) - 1
            first_byte = start_s + self.latency_s[last if i >= last else i]
        # Bits carried by the first byte's time (i past the end: rounding put ``into``
        # on the period's end).
        loops = math.floor(first_byte / period_s)
        into = first_byte - loops * period_s
        i = count_at_most(bounds_s, into) - 1
        if i >= last:
            i = last
        bits = loops * period_bits + cum_bits[i] + self.bps[i] * (into - bounds_s[i]) + size_bits
        # The earliest time by which the trace has carried ``bits``.
        loops = math.ceil(bits / period_bits) - 1  # so 0 < rest ≤ period_bits
        rest = bits - loops * period_bits
        if rest <= 0.0:  # bits / period_bits rounded up past a whole number
            loops -= 1
            rest += period_bits
        j = count_below(cum_bits, rest)  # first boundary with cum ≥ rest; j ≥ 1
        if j >= self.last_bound:  # rounding pushed ``rest`` past the period
            j = self.last_bound
        i = j - 1  # cum_bits[i] < rest ≤ cum_bits[j], so bps[i] > 0
        return loops * period_s + bounds_s[i] + (rest - cum_bits[i]) / self.bps[i]


def play(
    link: TraceLink,
    rung: BufferRung | None,
    by_state: StateChoice | None,
    history: list[Download] | None,
    sizes: list[list[int]],
    rates: list[float],
    n: int,
    segment_s: float,
    buffer_max_s: float,
    startup_segments: int,
) -> SessionColumns:
    """Stream ``n`` segments, asking ``rung`` (buffer only) or else ``by_state`` for each,
    as :mod:`~mqoe.workloads.trace_player` describes; ``history``, which ``by_state``
    reads, grows by one :class:`Download` per segment (None with a rung)."""
    room = buffer_max_s - segment_s  # request only when the next segment fits
    n_rows = len(sizes)
    n_rungs = len(rates)
    reps: list[int] = []
    kbps: list[float] = []
    bits: list[int] = []
    starts: list[float] = []
    ends: list[float] = []
    stalls: list[float] = []
    buffers: list[float] = []
    now = 0.0
    buffer = 0.0
    playing = False
    last = -1
    for k in range(n):
        if buffer > room:
            now += buffer - room
            buffer = room
        if rung is not None:
            index = rung.pick(buffer, last)
            if index < 0 or index >= n_rungs:
                raise UserError(f"ABR rule chose representation {index}; the ladder has {n_rungs}")
            rate = rates[index]
            size = sizes[k % n_rows][index]
        else:
            assert by_state is not None
            index, rate, size = by_state(k, now, buffer, None if last < 0 else last)
        end = link.end(now, size)
        stall = 0.0
        if playing:
            buffer -= end - now
            if buffer < 0.0:
                stall = -buffer
                buffer = 0.0
        buffer += segment_s
        if not playing and k + 1 >= startup_segments:
            playing = True
        if history is not None:
            history.append(Download(k, index, rate, (size + 4) // 8, now, end))
        reps.append(index)
        kbps.append(rate)
        bits.append(size)
        starts.append(now)
        ends.append(end)
        stalls.append(stall)
        buffers.append(buffer)
        last = index
        now = end
    return range(n), reps, kbps, bits, starts, ends, stalls, buffers
