"""Scalar random draws without numpy's per-call overhead, bit for bit numpy's.

``Generator.binomial(n, p)`` with scalar arguments first turns both into 0-d arrays
(to learn that they are scalars) and takes a lock: about 4,600 instructions a call,
where the draw itself is a few hundred. The memory model draws one binomial per reclaim
scan and per page touch (~300k in a 3-minute video session: 12% of its instructions).

:class:`Draws` wraps a Generator and draws from it. Built (``setup.py``), it is the C
type of ``mqoe.engine._draws``, which calls numpy's own C functions (``random_binomial``,
``random_exponential`` of numpy's npyrandom library) on the Generator's bit generator:
the same values, and the same stream state after them, as the Generator's methods.
Draws and the Generator's own methods can be mixed on one stream. Without a compiler
(or with ``MQOE_PURE_PYTHON=1``) the Python class below is used: it calls the
Generator's methods. ``tests/engine/test_draws.py`` checks the two against each other.
"""

from __future__ import annotations

from typing import cast

import numpy as np


class PyDraws:
    """Draws by the Generator's own methods (the reference, and the fallback)."""

    __slots__ = ("generator",)

    def __init__(self, generator: np.random.Generator) -> None:
        self.generator = generator

    def binomial(self, n: int, p: float) -> int:
        """``Generator.binomial(n, p)`` for a scalar ``n`` ≥ 0 and ``0 ≤ p ≤ 1``."""
        drawn: int = self.generator.binomial(n, p)
        return drawn

    def exponential(self, scale: float) -> float:
        """``Generator.exponential(scale)`` for a scalar ``scale`` ≥ 0."""
        drawn: float = self.generator.exponential(scale)
        return drawn


def _native() -> type[PyDraws] | None:
    try:
        from mqoe.engine._draws import Draws as NativeDraws
    except ImportError:  # not built: no compiler, or MQOE_PURE_PYTHON=1 at install
        return None
    return cast("type[PyDraws]", NativeDraws)  # the same methods (tests/engine/test_draws.py)


Draws: type[PyDraws] = _native() or PyDraws


def native() -> bool:
    """Whether :class:`Draws` is the compiled type."""
    return Draws is not PyDraws
