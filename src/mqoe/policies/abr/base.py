"""The one ABR protocol every player in mqoe uses (DASH player, spiral client, trace mode).

A rule sees an :class:`AbrState` (ladder, buffer, download history, device signals) and
returns a :class:`Decision`: the next representation, and optionally a continuous rate
(a byte-range request of ``rate × segment duration``). Rules combine by taking the most
conservative decision, as players do. A user's rule is any object with
``choose(state) -> Decision``, or a plain function wrapped by :func:`as_rule`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast, runtime_checkable

from mqoe.errors import UserError


@dataclass(frozen=True, slots=True)
class Representation:
    """One rung of the ladder (ladders are sorted by ascending bitrate)."""

    bitrate_kbps: float
    height_px: int | None = None  # 240, 360, 480, 720, 1080, 1440 …
    fps: float | None = None


@dataclass(frozen=True, slots=True)
class Download:
    """One finished segment download, as the player measured it."""

    segment: int
    representation: int  # ladder index of what was requested
    rate_kbps: float  # the requested rate (the ladder rate, or a continuous rate)
    size_bytes: int
    start_s: float  # request sent
    end_s: float  # last byte received

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def throughput_kbps(self) -> float:
        """Bytes over download time, as players estimate (8 bits/byte, 1000 bits/kbit)."""
        return self.size_bytes * 8 / 1000 / max(self.duration_s, 1e-9)


@dataclass(frozen=True)
class AbrState:
    now_s: float
    ladder: Sequence[Representation]
    segment_s: float  # media duration of one segment
    buffer_s: float  # media buffered ahead of the playhead
    buffer_max_s: float
    downloads: Sequence[Download]  # history, oldest first
    last: int | None = None  # ladder index of the previous decision (None at start)
    trim_level: int = 0  # latest onTrimMemory level (ComponentCallbacks2), 0 = none
    last_trim_s: float | None = None  # when the latest non-zero trim arrived
    # Frames shown/dropped so far, per ladder index: {index: (dropped, total)}.
    frame_stats: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    # Share of the time since the previous decision that some task stalled on memory
    # (PSI memory "some", /proc/pressure/memory), % — 0 where no phone is modelled.
    memory_stall_pct: float = 0.0


@dataclass(frozen=True, slots=True)
class Decision:
    """The next request: a ladder index, and a continuous rate when not on the ladder."""

    representation: int
    rate_kbps: float | None = None

    def effective_kbps(self, ladder: Sequence[Representation]) -> float:
        """The rate the request asks for (what "most conservative" compares)."""
        if self.rate_kbps is not None:
            return self.rate_kbps
        return ladder[self.representation].bitrate_kbps


@runtime_checkable
class AbrRule(Protocol):
    """Anything with ``choose(state) -> Decision`` is a rule."""

    def choose(self, state: AbrState) -> Decision: ...


# A rung as a function of (buffer_s, last): see :func:`buffer_choice`.
BufferChoice = Callable[[float, int | None], int]


def buffer_choice(
    rule: AbrRule, ladder: Sequence[Representation], segment_s: float, buffer_max_s: float
) -> BufferChoice | None:
    """A rule's fast path for one session, or None: its rung from (buffer_s, last) alone.

    A rule may define ``buffer_choice(ladder, segment_s, buffer_max_s)`` returning a
    function ``f(buffer_s, last) -> index`` (or None) such that ``choose(state)`` equals
    ``Decision(f(state.buffer_s, state.last))`` for every state with that ladder, segment
    and buffer cap and no device signals (trim, frame stats, memory stall) — whatever
    the clock or the history. Players without device signals (the trace mode) then skip
    building an :class:`AbrState` and a :class:`Download` per segment. The fast path is
    ignored when a subclass overrides ``choose`` below the class that defined it.
    """
    kind = type(rule)
    method = getattr(rule, "buffer_choice", None)
    if method is None or _owner(kind, "choose") is not _owner(kind, "buffer_choice"):
        return None
    plan: BufferChoice | None = method(ladder, segment_s, buffer_max_s)
    return plan


def _owner(kind: type, name: str) -> type | None:
    """The class in ``kind``'s MRO whose body defines ``name``."""
    for klass in kind.__mro__:
        if name in klass.__dict__:
            return klass
    return None


class FunctionRule:
    """A plain function ``state -> Decision | int`` used as a rule (see :func:`as_rule`)."""

    def __init__(self, fn: Callable[[AbrState], Decision | int], name: str = "") -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "user-rule")

    def choose(self, state: AbrState) -> Decision:
        out = self.fn(state)
        return out if isinstance(out, Decision) else Decision(int(out))


def as_rule(rule: object) -> AbrRule:
    """Accept a rule object or a plain function of the state; return a rule object
    (TypeError for anything else)."""
    if isinstance(rule, type):
        raise TypeError(f"pass a rule instance, e.g. {rule.__name__}(), not the class")
    if getattr(rule, "choose", None) is not None:  # isinstance(rule, AbrRule), ~20× cheaper
        return cast(AbrRule, rule)
    if callable(rule):
        return FunctionRule(cast(Callable[[AbrState], Decision | int], rule))
    raise TypeError(f"an ABR rule needs choose(state) or must be callable, got {rule!r}")


def checked(decision: Decision, ladder: Sequence[Representation], rule: object) -> Decision:
    """A player's guard: a decision must name a rung and a positive rate (else UserError)."""
    if not 0 <= decision.representation < len(ladder):
        raise UserError(
            f"ABR rule {getattr(rule, 'name', rule)!r} chose representation "
            f"{decision.representation}; the ladder has 0..{len(ladder) - 1}"
        )
    if decision.rate_kbps is not None and not decision.rate_kbps > 0:
        raise UserError(
            f"ABR rule {getattr(rule, 'name', rule)!r} asked for "
            f"{decision.rate_kbps} kbit/s; a rate must be positive"
        )
    return decision


def highest_at_most(ladder: Sequence[Representation], rate_kbps: float) -> int:
    """Index of the highest representation whose bitrate ≤ rate (0 if none fits)."""
    best = 0
    for index, rep in enumerate(ladder):
        if rep.bitrate_kbps <= rate_kbps:
            best = index
    return best
