"""Policy objects for a run's slots: run_scenario(..., components={"abr": MyRule()})."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mqoe.device.profiles import load_profile
from mqoe.errors import UserError
from mqoe.policies.abr import BBA, AbrState, Decision, Fixed, MostConservative
from mqoe.workloads.components import describe
from mqoe.workloads.runner import run_scenario

QUICK = {"session_s": "60"}


@dataclass
class Lowest:
    """Always the ladder's bottom rung; ``rung`` to pick another."""

    rung: int = 0

    def choose(self, state: AbrState) -> Decision:
        return Decision(min(self.rung, len(state.ladder) - 1))


def run(components: dict[str, object], **overrides: str) -> dict[str, object]:
    record = run_scenario("trace-abr", load_profile("nokia-1"), 3, QUICK | overrides,
                          components=components)  # fmt: skip
    return {"metrics": record.metrics, "params": record.params, "run_id": record.run_id}


def test_a_rule_object_replaces_the_rule_parameter_and_is_recorded() -> None:
    low, default = run({"abr": Lowest()}), run({})
    assert low["metrics"]["mean_bitrate_kbps"] < default["metrics"]["mean_bitrate_kbps"]
    assert low["params"]["component.abr"] == f'{__name__}.Lowest{{"rung": 0}}'
    assert "component.abr" not in default["params"] and default["params"]["rule"] == "bba"
    assert "rule" not in low["params"]  # replaced: the default rule did not run
    # The built-in rule as an object gives the same run as its name.
    named = run_scenario("trace-abr", load_profile("nokia-1"), 3, QUICK | {"rule": "bba"})
    as_object = run({"abr": BBA()})
    assert as_object["metrics"] == named.metrics


def test_the_run_id_hashes_the_components_class_and_parameters() -> None:
    first, again, other = run({"abr": Lowest(0)}), run({"abr": Lowest(0)}), run({"abr": Lowest(2)})
    assert first["run_id"] == again["run_id"] != other["run_id"]
    assert first["metrics"] == again["metrics"]
    assert other["metrics"]["mean_bitrate_kbps"] > first["metrics"]["mean_bitrate_kbps"]


def test_a_plain_function_is_a_rule_and_two_functions_are_two_components() -> None:
    def bottom(state: AbrState) -> int:
        return 0

    def top(state: AbrState) -> int:
        return len(state.ladder) - 1

    assert describe(bottom) != describe(top)
    assert describe(bottom).startswith(f"{__name__}.")
    low, high = run({"abr": bottom}), run({"abr": top})
    assert low["metrics"]["mean_bitrate_kbps"] < high["metrics"]["mean_bitrate_kbps"]


class Tuned:
    def __init__(self, gain: float, inner: object = None) -> None:
        self.gain = gain
        self._history: list[float] = []  # private state is not a parameter
        self.inner = inner  # a rule inside is described by its own class and parameters

    def choose(self, state: AbrState) -> Decision:
        self._history.append(state.buffer_s)
        self.gain += 0.0
        return Decision(0)


def test_an_objects_parameters_are_its_public_attributes_rules_inside_included() -> None:
    assert describe(Tuned(0.5)) == f'{__name__}.Tuned{{"gain": 0.5, "inner": null}}'
    one, two = describe(Tuned(0.5, Lowest(1))), describe(Tuned(0.5, Lowest(2)))
    assert one != two and f'"class": "{__name__}.Lowest", "rung": 1' in one
    combined = [describe(MostConservative([BBA(), Fixed(representation=r)])) for r in (0, 1)]
    assert combined[0] != combined[1]


def test_the_run_id_is_taken_before_the_run_changes_the_rule() -> None:
    rule = Tuned(0.5)
    first = run({"abr": rule})
    assert rule._history  # the run used it
    assert run({"abr": Tuned(0.5)})["run_id"] == first["run_id"]


@pytest.mark.parametrize(
    ("components", "overrides", "message"),
    [
        ({"abr": Lowest()}, {"rule": "bba"}, "set one, not both"),
        ({"abrr": Lowest()}, {}, "unknown component slot 'abrr'"),
        ({"abr": Lowest}, {}, "not the class"),
        ({"abr": 42}, {}, "component 'abr'"),
    ],
)
def test_bad_components_are_one_line_user_errors(
    components: dict[str, object], overrides: dict[str, str], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        run(components, **overrides)


def test_a_scenario_without_the_slot_refuses_the_component() -> None:
    with pytest.raises(UserError, match="has no 'abr' component slot"):
        run_scenario("frame-deadlines", load_profile("nokia-1"), 1, {"duration_s": "1"},
                     components={"abr": Lowest()})  # fmt: skip


def test_spiral_and_video_take_the_abr_component() -> None:
    spiral = run_scenario("spiral", load_profile("nokia-1"), 1,
                          {"duration_s": "30", "competitor_start_s": "60"},
                          components={"abr": Lowest()})  # fmt: skip
    assert spiral.params["component.abr"].endswith('Lowest{"rung": 0}')
    video = run_scenario("video", load_profile("nokia-1"), 1,
                         {"duration_s": "5", "setup_s": "5", "system": "false"},
                         components={"abr": Lowest()})  # fmt: skip
    assert "component.abr" in video.params
