"""ABR rules: how a video player picks the next representation (the memory-pressure
and downward-spiral studies).

One protocol (:mod:`mqoe.policies.abr.base`) and the rules players use
(:mod:`mqoe.policies.abr.rules`), chosen by name from :data:`ABR_RULES` with
:func:`make_rule` (``"bba:reservoir_s=20"``, ``"throughput+dropped-frames"``). A user's
rule is any object with ``choose(state) -> Decision`` or a plain function (:func:`as_rule`).
"""

from __future__ import annotations

from mqoe.policies.abr.base import (
    AbrRule,
    AbrState,
    BufferChoice,
    Decision,
    Download,
    FunctionRule,
    Representation,
    as_rule,
    buffer_choice,
    highest_at_most,
)
from mqoe.policies.abr.rules import (
    ABR_RULES,
    BBA,
    Bola,
    ConservativeThroughput,
    DroppedFrames,
    ExoPlayerLike,
    Fixed,
    MostConservative,
    Throughput,
    make_rule,
)

__all__ = [
    "ABR_RULES",
    "BBA",
    "AbrRule",
    "AbrState",
    "Bola",
    "BufferChoice",
    "ConservativeThroughput",
    "Decision",
    "Download",
    "DroppedFrames",
    "ExoPlayerLike",
    "Fixed",
    "FunctionRule",
    "MostConservative",
    "Representation",
    "Throughput",
    "as_rule",
    "buffer_choice",
    "highest_at_most",
    "make_rule",
]
