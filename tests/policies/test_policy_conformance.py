"""check_policy over every registered policy (CI), and the checks failing where they should."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from mqoe.policies.abr import AbrState, Decision
from mqoe.policies.conformance import (
    POLICY_KINDS,
    PolicyConformanceError,
    check_policy,
    registered,
)

EVERY = [(kind, name) for kind in POLICY_KINDS for name in registered(kind)]


def test_every_kind_has_registered_policies() -> None:
    assert {kind for kind, _ in EVERY} == {"abr", "wam", "gpu-compression", "netpis"}
    assert len(EVERY) >= 15


@pytest.mark.parametrize(("kind", "name"), EVERY, ids=[f"{k}:{n}" for k, n in EVERY])
def test_every_registered_policy_conforms(kind: str, name: str) -> None:
    check_policy(kind, name)


@dataclass
class OffTheLadder:
    def choose(self, state: AbrState) -> Decision:
        return Decision(len(state.ladder))


class Clocked:
    def choose(self, state: AbrState) -> Decision:
        return Decision(int(time.monotonic()) % 2)


@dataclass(frozen=True)
class CompressesForeground:
    name: str = "greedy"

    def cap_pages(self, lru_position: int, buffer_pages: int) -> int:
        return buffer_pages


@dataclass(frozen=True)
class NoHooks:
    name: str = "half"
    group_pages: int = 32768

    def discard_on_delete(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("kind", "policy", "message"),
    [
        ("abr", OffTheLadder(), "not a Decision on the ladder"),
        ("abr", object(), "needs choose"),
        ("gpu-compression", CompressesForeground(), "compresses the foreground app"),
        ("wam", NoHooks(), "lacks should_trim"),
    ],
)
def test_a_policy_out_of_its_protocol_is_refused(kind: str, policy: object, message: str) -> None:
    with pytest.raises(PolicyConformanceError, match=message):
        check_policy(kind, policy)


def test_a_policy_whose_module_imports_a_clock_is_refused() -> None:
    @dataclass
    class Lowest:  # keeps its protocol, but this test module imports time
        def choose(self, state: AbrState) -> Decision:
            return Decision(0)

    with pytest.raises(PolicyConformanceError, match=r"its module .* imports time"):
        check_policy("abr", Lowest())


def test_a_wall_clock_call_while_deciding_is_refused() -> None:
    with pytest.raises(PolicyConformanceError, match="read the wall clock while deciding"):
        check_policy("abr", Clocked())


def test_a_nondeterministic_registered_policy_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    import mqoe.policies.conformance as conformance

    kind = conformance.POLICY_KINDS["gpu-compression"]
    noisy = random.Random()  # unseeded: a different draw each instance

    @dataclass(frozen=True)
    class Noisy:
        name: str = "noisy"

        def cap_pages(self, lru_position: int, buffer_pages: int) -> int:
            return 0 if lru_position == 0 else noisy.randrange(0, buffer_pages + 1)

    noisy_kind = conformance.PolicyKind(kind.names, lambda name: Noisy(), kind.drive)
    monkeypatch.setitem(conformance.POLICY_KINDS, "gpu-compression", noisy_kind)
    with pytest.raises(PolicyConformanceError, match="two fresh instances answered"):
        check_policy("gpu-compression", "fair")


def test_an_unknown_kind_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown policy kind"):
        check_policy("tcp", "cubic")


def test_a_plain_function_rule_is_checked_in_its_own_module() -> None:
    def lowest(state: AbrState) -> int:
        return 0

    # This module imports time: the function is refused like a class defined here.
    with pytest.raises(PolicyConformanceError, match=r"its module .* imports time"):
        check_policy("abr", lowest)
