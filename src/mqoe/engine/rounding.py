"""``round(x)`` of a float as compiled code can afford it: the same integer, exactly.

Compiled with mypyc, ``round(x)`` is a call of the builtin: it looks up
``float.__round__``, binds it, calls it (about 300 instructions). The packet path rounds
on every transmission and the memory and app models on every step, so they use
:func:`round_half_even`, two primitive operations for the same result: Python rounds
half to even, and so does this. ``x - floor(x)`` is exact for every float outside
(−1, 0) (Sterbenz's lemma); inside it, the rounded difference still lands on the same
side of one half, or on one half exactly only where ``round`` gives 0 as well
(``tests/engine/test_rounding.py`` checks this against ``round``).
"""

from __future__ import annotations

import math


def round_half_even(x: float) -> int:
    """``round(x)`` for a float ``x``: the nearest integer, ties to the even one.
    OverflowError for ±inf and ValueError for NaN, as ``round``."""
    below = math.floor(x)
    fraction = x - below
    if fraction > 0.5:
        return below + 1
    if fraction < 0.5:
        return below
    return below + (below & 1)
