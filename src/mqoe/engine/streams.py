"""Named random streams derived from one run seed.

Each name maps to its own ``numpy.random.Generator`` seeded by
``SeedSequence(seed, spawn_key=sha256(name))``; so adding a new consumer (a new name)
never shifts the draws of existing ones, and no model touches global random state.
"""

from __future__ import annotations

import hashlib

import numpy as np

from mqoe.errors import UserError

MAX_SEED = 2**63 - 1


def _spawn_key(name: str) -> tuple[int, ...]:
    digest = hashlib.sha256(name.encode("utf-8")).digest()[:16]
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def validate_seed(seed: object) -> int:
    """Accept a non-negative integer seed (not a bool); reject anything else with a UserError."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise UserError(f"seed must be a non-negative integer, got {seed!r}")
    value = int(seed)
    if not 0 <= value <= MAX_SEED:
        raise UserError(f"seed must be between 0 and {MAX_SEED}, got {value}")
    return value


class RandomStreams:
    """``streams("kswapd")`` → the same Generator object for the whole run."""

    __slots__ = ("_cache", "seed")

    def __init__(self, seed: object) -> None:
        self.seed = validate_seed(seed)
        self._cache: dict[str, np.random.Generator] = {}

    def __call__(self, name: str) -> np.random.Generator:
        generator = self._cache.get(name)
        if generator is None:
            sequence = np.random.SeedSequence(self.seed, spawn_key=_spawn_key(name))
            generator = np.random.Generator(np.random.PCG64(sequence))
            self._cache[name] = generator
        return generator

    @property
    def names(self) -> list[str]:
        return sorted(self._cache)
