"""GPU-buffer compression policies (the GPU-buffer study, 2015): how much of a cached app
the daemon compresses.

Each policy answers one question, :meth:`cap_pages` — how many of an app's buffer pages
may be held compressed at its LRU position — behind the protocol
:class:`mqoe.device.gpu.CompressionPolicy`. Choose one by name with
:func:`make_compression_policy` (``"fair:cap_step_mb=25,cap_max_mb=150"``); a user's own
policy is any object with ``name`` and ``cap_pages``.

* ``van`` — stock Android: nothing is compressed (the GPU module keeps books only).
* ``full`` — every background app's buffers, all of them.
* ``fair`` — a cap growing linearly with LRU distance: 0 for the foreground app,
  ``cap_step_mb`` more per position from the MRU end, never above ``cap_max_mb`` (the
  GPU-buffer study: 12.5 MB and 100 MB; 100 MB ≈ what decompresses in the 575 ms users
  tolerate).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from mqoe.params import make_component

_MB_PAGES = 256


@dataclass(frozen=True)
class Van:
    name: str = dataclasses.field(default="van", init=False)

    def cap_pages(self, lru_position: int, buffer_pages: int) -> int:
        return 0


@dataclass(frozen=True)
class Full:
    name: str = dataclasses.field(default="full", init=False)

    def cap_pages(self, lru_position: int, buffer_pages: int) -> int:
        return buffer_pages if lru_position > 0 else 0


@dataclass(frozen=True)
class Fair:
    cap_step_mb: float = 12.5  # GPU-buffer study: +12.5 MB per LRU position from MRU
    cap_max_mb: float = 100.0  # GPU-buffer study: ≈ 575 ms of decompression on the Nexus 5
    name: str = dataclasses.field(default="fair", init=False)

    def __post_init__(self) -> None:
        for value in (self.cap_step_mb, self.cap_max_mb):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError("cap_step_mb and cap_max_mb must not be negative (and be finite)")

    def cap_pages(self, lru_position: int, buffer_pages: int) -> int:
        cap_mb = min(self.cap_max_mb, self.cap_step_mb * max(0, lru_position))
        return min(buffer_pages, int(cap_mb * _MB_PAGES))


COMPRESSION_POLICIES: dict[str, type[Any]] = {"van": Van, "full": Full, "fair": Fair}


def make_compression_policy(spec: str) -> Van | Full | Fair:
    """``"name"`` or ``"name:key=value,…"`` → a policy; UserError for unknown names/keys."""
    policy: Van | Full | Fair = make_component(spec, COMPRESSION_POLICIES, "compression policy")
    return policy
