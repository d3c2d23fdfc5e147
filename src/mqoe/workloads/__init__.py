"""Workloads: scenario builders that wire apps and policies onto a phone for one run.

The registry is explicit (no import-time magic): a new scenario is one line here, its
name and where its class lives (``"module:Class"``). A scenario's module is imported the
first time that scenario is looked up, so a run of one scenario does not import the
others (their apps, device models and tables).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping

from mqoe.errors import UserError
from mqoe.workloads.base import Scenario, ScenarioOutput, Session, parse_params


class ScenarioRegistry(MutableMapping[str, Scenario]):
    """Scenario name → scenario, in registration order. An entry given as
    ``"module:Class"`` becomes ``Class()`` when first looked up (iterating the names
    imports nothing); setting an entry to a scenario object replaces it, as in a dict."""

    def __init__(self, entries: Mapping[str, str]) -> None:
        self._entries: dict[str, Scenario | str] = dict(entries)

    def __getitem__(self, name: str) -> Scenario:
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            entry = getattr(importlib.import_module(module), attribute)()
            if entry.name != name:
                raise RuntimeError(f"{entry!r} is registered as {name!r} but named {entry.name!r}")
            self._entries[name] = entry
        return entry

    def __setitem__(self, name: str, scenario: Scenario) -> None:
        self._entries[name] = scenario

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __contains__(self, name: object) -> bool:  # Mapping's own would look it up
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"ScenarioRegistry({list(self._entries)!r})"


SCENARIOS: ScenarioRegistry = ScenarioRegistry(
    {
        "app-switching": "mqoe.workloads.app_switching:AppSwitching",
        "flash-aging": "mqoe.workloads.flash_aging:FlashAging",
        "frame-deadlines": "mqoe.workloads.frame_deadlines:FrameDeadlines",
        "netpis": "mqoe.workloads.netpis:NetPisScenario",
        "spiral": "mqoe.workloads.spiral:Spiral",
        "trace-abr": "mqoe.workloads.trace_player:TraceAbr",
        "ui-bench": "mqoe.workloads.ui_bench:UiBench",
        "video": "mqoe.workloads.video:Video",
        "video-stream": "mqoe.workloads.video_stream:VideoStream",
    }
)


def get_scenario(name: str) -> Scenario:
    if name not in SCENARIOS:
        raise UserError(f"unknown scenario {name!r}; available: {', '.join(sorted(SCENARIOS))}")
    return SCENARIOS[name]


__all__ = [
    "SCENARIOS",
    "Scenario",
    "ScenarioOutput",
    "ScenarioRegistry",
    "Session",
    "get_scenario",
    "parse_params",
]
