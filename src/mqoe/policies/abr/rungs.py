"""Buffer-only fast paths of the ABR rules, as compiled objects.

A rule whose choice depends only on the buffer and the previous rung (BBA, BOLA, fixed)
hands a player a :class:`BufferRung` for one session (``rule.buffer_choice(ladder,
segment_s, buffer_max_s)``, see :func:`~mqoe.policies.abr.base.buffer_choice`). The
trace-driven loop asks it once per segment, millions of times in a study, so these
classes are compiled with the kernel (``mqoe.native``): the loop then calls
:meth:`BufferRung.pick` directly in C, with no Python frame per decision. Each class
repeats its rule's arithmetic in the same order, so every choice has the same bits
(``tests/policies/test_abr_rules.py`` checks them against ``choose``).

A rung is also a plain callable ``rung(buffer_s, last) -> index`` (``last`` None at the
start), which is the public :data:`~mqoe.policies.abr.base.BufferChoice` contract; a
user's rule may return any such function, and :func:`as_rung` wraps it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

NO_PREVIOUS: Final = -1  # ``last`` before the first decision (None to callers)


class BufferRung:
    """A rung as a function of (buffer_s, last) for one session."""

    def pick(self, buffer_s: float, last: int) -> int:
        """The rung for ``buffer_s`` seconds of buffer after rung ``last``
        (:data:`NO_PREVIOUS` before the first decision)."""
        raise NotImplementedError

    def __call__(self, buffer_s: float, last: int | None) -> int:
        return self.pick(buffer_s, NO_PREVIOUS if last is None else last)


class CallableRung(BufferRung):
    """A user's ``f(buffer_s, last) -> index`` behind the same interface."""

    def __init__(self, choose: Callable[[float, int | None], int]) -> None:
        self._choose = choose

    def pick(self, buffer_s: float, last: int) -> int:
        return self._choose(buffer_s, None if last == NO_PREVIOUS else last)


def as_rung(choice: Callable[[float, int | None], int]) -> BufferRung:
    """``choice`` itself when it is a :class:`BufferRung`, else wrapped."""
    if isinstance(choice, BufferRung):
        return choice
    return CallableRung(choice)


class FixedRung(BufferRung):
    """Always ``index``."""

    def __init__(self, index: int) -> None:
        self.index = index

    def pick(self, buffer_s: float, last: int) -> int:
        return self.index


class BbaRung(BufferRung):
    """BBA-0's rate map with hysteresis (Huang et al. 2014, Algorithm 1) for one ladder
    whose rates strictly ascend: ``f(B)`` from the reservoir and cushion bounds, then the
    highest rung below ``f`` (up) or the lowest above it (down) by bisection.

    ``plus[i]``/``minus[i]`` are the next higher / lower rate than rung ``i``'s
    (R+ and R−; the top / bottom rate at the ends).
    """

    def __init__(
        self,
        rates: list[float],
        plus: list[float],
        minus: list[float],
        reservoir_end_s: float,
        cushion_end_s: float,
    ) -> None:
        self.rates = rates
        self.plus = plus
        self.minus = minus
        self.top = len(rates) - 1
        self.reservoir_end_s = reservoir_end_s
        self.cushion_end_s = cushion_end_s
        self.r_min = rates[0]
        self.span_kbps = rates[-1] - rates[0]
        self.width_s = cushion_end_s - reservoir_end_s

    def pick(self, buffer_s: float, last: int) -> int:
        if buffer_s <= self.reservoir_end_s:
            return 0
        if buffer_s >= self.cushion_end_s:
            return self.top
        f_kbps = self.r_min + self.span_kbps * (buffer_s - self.reservoir_end_s) / self.width_s
        top = self.top
        previous = 0 if last < 0 else min(last, top)
        if f_kbps >= self.plus[previous]:  # the highest rung below f, if above the previous
            return max(previous, count_below(self.rates, f_kbps) - 1)
        if f_kbps <= self.minus[previous]:  # the lowest rung above f, if below the previous
            above = count_at_most(self.rates, f_kbps)
            return previous if above > top else min(above, previous)
        return previous


class BolaRung(BufferRung):
    """BOLA-BASIC's argmax (Spiteri et al. 2016) for one session: ``utility[m]`` is
    ``V·(v_m + γp)`` and ``size[m]`` the rung's rate (ties → the lower rung)."""

    def __init__(self, utility: list[float], size: list[float], segment_s: float) -> None:
        self.utility = utility
        self.size = size
        self.segment_s = segment_s

    def pick(self, buffer_s: float, last: int) -> int:
        q = buffer_s / self.segment_s
        utility = self.utility
        size = self.size
        best = 0
        best_score = -math.inf
        for index in range(len(size)):
            score = (utility[index] - q) / size[index]
            if score > best_score:
                best = index
                best_score = score
        return best


def count_below(rates: list[float], value: float) -> int:
    """How many ``rates`` (ascending) are < ``value``: ``bisect.bisect_left`` compiled."""
    low = 0
    high = len(rates)
    while low < high:
        middle = (low + high) // 2
        if rates[middle] < value:
            low = middle + 1
        else:
            high = middle
    return low


def count_at_most(rates: list[float], value: float) -> int:
    """How many ``rates`` (ascending) are ≤ ``value``: ``bisect.bisect_right`` compiled."""
    low = 0
    high = len(rates)
    while low < high:
        middle = (low + high) // 2
        if value < rates[middle]:
            high = middle
        else:
            low = middle + 1
    return low
