"""Conformance checks every registered policy must pass, and any policy of your own can.

``check_policy(kind, policy)`` — ``policy`` a registered name (``"bba"``) or an object —
raises :class:`PolicyConformanceError` (with one line saying what broke) unless the
policy

* **keeps its protocol**: it has the kind's methods, and its answers have the types and
  ranges the callers rely on (a ladder index on the ladder, a cap between 0 and the
  app's pages and 0 for the foreground app, a positive group size, …);
* **is deterministic**: two fresh instances fed the same seeded inputs answer the same
  (policies may learn from history, so each instance sees the same history; an object
  you pass is one instance, so for it this part is yours: pass its registered name, or
  check two instances' answers yourself);
* **reads no wall clock**: the module that defines it imports neither ``time`` nor
  ``datetime``, and no call to the ``time`` module's clocks happens while it decides
  (a model's only clock is the simulated one it is given).

The kinds (:data:`POLICY_KINDS`): ``abr`` (:data:`mqoe.policies.abr.ABR_RULES`), ``wam``
(:data:`mqoe.policies.wam.WAM_POLICIES`), ``gpu-compression``
(:data:`mqoe.policies.gpu_compression.COMPRESSION_POLICIES`) and ``netpis``
(:data:`mqoe.policies.netpis.VARIANTS`). CI runs every registered one
(``tests/policies/test_policy_conformance.py``), as :func:`mqoe.workloads.conformance.
check_scenario` does for scenarios.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from mqoe.policies.abr import (
    ABR_RULES,
    AbrState,
    Decision,
    Download,
    Representation,
    as_rule,
    make_rule,
)
from mqoe.policies.gpu_compression import COMPRESSION_POLICIES, make_compression_policy
from mqoe.policies.netpis import VARIANTS, Allocator, SocketObservation, SocketSettings
from mqoe.policies.wam import WAM_POLICIES, make_wam_policy

_SEED = 20240607
_STEPS = 300
_CLOCKS = ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter",
           "perf_counter_ns", "process_time", "process_time_ns", "thread_time")  # fmt: skip


class PolicyConformanceError(AssertionError):
    pass


@dataclass(frozen=True)
class PolicyKind:
    """A kind of policy: its registry, how to build one by name, and a driver that
    feeds an instance ``_STEPS`` seeded inputs and returns its answers (raising
    :class:`PolicyConformanceError` for an answer out of the protocol)."""

    names: Callable[[], Sequence[str]]
    build: Callable[[str], object]
    drive: Callable[[object, random.Random], list[object]]


def check_policy(kind: str, policy: str | object) -> None:
    """Raise :class:`PolicyConformanceError` unless ``policy`` (a registered name of
    ``kind``, or an object) keeps the kind's protocol, is deterministic and reads no
    wall clock."""
    spec = POLICY_KINDS.get(kind)
    if spec is None:
        raise ValueError(f"unknown policy kind {kind!r}; kinds: {', '.join(POLICY_KINDS)}")
    label = policy if isinstance(policy, str) else type(policy).__qualname__

    def fresh() -> object:
        return spec.build(policy) if isinstance(policy, str) else policy

    first = fresh()
    with _no_wall_clock(f"{kind} {label}"):
        answers = spec.drive(first, random.Random(_SEED))
        again = spec.drive(fresh(), random.Random(_SEED)) if isinstance(policy, str) else answers
    if answers != again:
        step = next(i for i, (a, b) in enumerate(zip(answers, again, strict=True)) if a != b)
        raise PolicyConformanceError(
            f"{kind} {label}: two fresh instances answered step {step} differently "
            f"({answers[step]!r} vs {again[step]!r})"
        )
    _no_clock_imports(first, f"{kind} {label}")


def registered(kind: str) -> list[str]:
    """The registered names of ``kind``."""
    return list(POLICY_KINDS[kind].names())


# -- wall clock ------------------------------------------------------------------------
def _no_clock_imports(policy: object, label: str) -> None:
    # An instance's __module__ is its class's; a plain function (an ABR rule may be one)
    # has its own.
    module = sys.modules.get(getattr(policy, "__module__", None) or type(policy).__module__)
    if module is None or inspect.isbuiltin(policy):
        return
    with contextlib.suppress(OSError, TypeError):
        tree = ast.parse(inspect.getsource(module))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[0]]
            if {"time", "datetime"} & set(names):
                raise PolicyConformanceError(
                    f"{label}: its module {module.__name__} imports {names[0]} "
                    "(a policy's only clock is the simulated time it is given)"
                )


@contextlib.contextmanager
def _no_wall_clock(label: str) -> Iterator[None]:
    saved = {name: getattr(time, name) for name in _CLOCKS}

    def refuse(*_: object) -> float:
        raise PolicyConformanceError(f"{label}: read the wall clock while deciding")

    for name in _CLOCKS:
        setattr(time, name, refuse)
    try:
        yield
    finally:
        for name, clock in saved.items():
            setattr(time, name, clock)


# -- drivers ---------------------------------------------------------------------------
_LADDER = tuple(
    Representation(kbps, height, 30)
    for kbps, height in (
        (235, 240),
        (375, 360),
        (750, 480),
        (1750, 720),
        (3000, 1080),
        (5800, 1440),
    )
)


def _drive_abr(policy: object, rng: random.Random) -> list[object]:
    try:
        rule = as_rule(policy)  # a rule object, or a plain function of the state
    except TypeError as exc:
        raise PolicyConformanceError(f"abr: {exc}") from None
    downloads: list[Download] = []
    answers: list[object] = []
    buffer_s, now_s, last = 0.0, 0.0, None
    frame_stats: dict[int, tuple[int, int]] = {}
    for step in range(_STEPS):
        state = AbrState(
            now_s=now_s, ladder=_LADDER, segment_s=4.0, buffer_s=buffer_s,
            buffer_max_s=60.0, downloads=tuple(downloads), last=last,
            trim_level=rng.choice((0, 0, 0, 5, 10, 15)), frame_stats=dict(frame_stats),
        )  # fmt: skip
        decision = rule.choose(state)
        if isinstance(decision, int):  # a plain function's index
            decision = Decision(decision)
        if not isinstance(decision, Decision) or not 0 <= decision.representation < len(_LADDER):
            raise PolicyConformanceError(
                f"abr {getattr(rule, 'name', rule)!r}: step {step} chose {decision!r}, "
                f"not a Decision on the ladder 0..{len(_LADDER) - 1}"
            )
        if decision.rate_kbps is not None and not decision.rate_kbps > 0:
            raise PolicyConformanceError(f"abr: step {step} asked for {decision.rate_kbps} kbit/s")
        answers.append((decision.representation, decision.rate_kbps))
        rate = decision.effective_kbps(_LADDER)
        throughput = rng.uniform(200.0, 8000.0)
        took = 4.0 * rate / throughput
        downloads.append(Download(step, decision.representation, rate,
                                  round(rate * 500), now_s, now_s + took))  # fmt: skip
        now_s += took
        buffer_s = min(60.0, max(0.0, buffer_s - took) + 4.0)
        last = decision.representation
        dropped, total = frame_stats.get(last, (0, 0))
        frame_stats[last] = (dropped + rng.randrange(0, 20), total + 120)
    return answers


def _drive_wam(policy: object, rng: random.Random) -> list[object]:
    hooks = ("discard_on_delete", "should_trim", "should_pause", "offset_after_kill",
             "trims_all_free")  # fmt: skip
    missing = [h for h in hooks if not callable(getattr(policy, h, None))]
    if missing or not isinstance(getattr(policy, "name", None), str):
        raise PolicyConformanceError(f"wam {policy!r}: lacks {', '.join(missing) or 'a name'}")
    p: Any = policy
    if not (isinstance(p.group_pages, int) and p.group_pages > 0):
        raise PolicyConformanceError(f"wam {p.name}: group_pages {p.group_pages!r} ≤ 0")
    answers: list[object] = [p.discard_on_delete(), p.trims_all_free()]
    now, last = 0, -1
    for step in range(_STEPS):
        now += rng.randrange(1, 6 * 3600) * 10**9
        deleted = rng.randrange(0, 20 << 30)
        screen, charging = rng.random() < 0.3, rng.random() < 0.4
        trim = p.should_trim(now, deleted, screen, charging, last)
        pause = p.should_pause(screen)
        offset = p.offset_after_kill(step % 7)
        if not (isinstance(trim, bool) and isinstance(pause, bool)):
            raise PolicyConformanceError(f"wam {p.name}: step {step}: hooks must answer bools")
        if not (isinstance(offset, int) and 0 <= offset <= step % 7):
            raise PolicyConformanceError(
                f"wam {p.name}: a killed round at group {step % 7} resumes at {offset!r}"
            )
        last = now if trim else last
        answers.append((trim, pause, offset))
    return answers


def _drive_gpu(policy: object, rng: random.Random) -> list[object]:
    cap = getattr(policy, "cap_pages", None)
    if not callable(cap) or not isinstance(getattr(policy, "name", None), str):
        raise PolicyConformanceError(f"gpu-compression {policy!r}: needs name and cap_pages")
    answers: list[object] = []
    for _ in range(_STEPS):
        position, pages = rng.randrange(0, 20), rng.randrange(0, 200_000)
        pages_capped = cap(position, pages)
        if not (isinstance(pages_capped, int) and 0 <= pages_capped <= pages):
            raise PolicyConformanceError(
                f"gpu-compression {policy.name}: cap {pages_capped!r} outside 0..{pages}"  # type: ignore[attr-defined]
            )
        if position == 0 and pages_capped:
            raise PolicyConformanceError(
                f"gpu-compression {policy.name}: compresses the foreground app"  # type: ignore[attr-defined]
            )
        answers.append(pages_capped)
    return answers


def _drive_netpis(allocator: object, rng: random.Random) -> list[object]:
    decide = getattr(allocator, "decide", None)
    if not callable(decide):
        raise PolicyConformanceError(f"netpis {allocator!r}: has no decide(observation)")
    answers: list[object] = []
    for step in range(_STEPS):
        rcvbuf = rng.randrange(4096, 4 << 20)
        obs = SocketObservation(
            need_bytes=rng.randrange(0, 4 << 20), rcvbuf_bytes=rcvbuf,
            window_clamp_bytes=rng.choice((None, rng.randrange(4096, 4 << 20))),
            committed_bytes=rng.randrange(0, rcvbuf + 1), foreground=rng.random() < 0.4,
            foreground_exists=rng.random() < 0.7, exempt=rng.random() < 0.1,
            process_max_need_bytes=rng.randrange(0, 4 << 20),
            own_rcvbuf_bytes=rng.choice((None, 1 << 20)),
        )  # fmt: skip
        settings = decide(obs)
        if not isinstance(settings, SocketSettings) or settings.rcvbuf_bytes <= 0:
            raise PolicyConformanceError(f"netpis: step {step} decided {settings!r}")
        if settings.window_clamp_bytes is not None and settings.window_clamp_bytes <= 0:
            raise PolicyConformanceError(f"netpis: step {step} clamps the window to ≤ 0")
        answers.append(settings)
    return answers


POLICY_KINDS: dict[str, PolicyKind] = {
    "abr": PolicyKind(lambda: sorted(ABR_RULES), make_rule, _drive_abr),
    "wam": PolicyKind(lambda: sorted(WAM_POLICIES), make_wam_policy, _drive_wam),
    "gpu-compression": PolicyKind(
        lambda: sorted(COMPRESSION_POLICIES), make_compression_policy, _drive_gpu
    ),
    "netpis": PolicyKind(lambda: list(VARIANTS), Allocator, _drive_netpis),
}
