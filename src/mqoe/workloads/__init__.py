"""Workloads: scenario builders that wire apps and policies onto a phone for one run.

The registry is explicit (no import-time magic): a new scenario is one line here.
"""

from __future__ import annotations

from mqoe.errors import UserError
from mqoe.workloads.app_switching import AppSwitching
from mqoe.workloads.base import Scenario, ScenarioOutput, Session, parse_params
from mqoe.workloads.flash_aging import FlashAging
from mqoe.workloads.frame_deadlines import FrameDeadlines
from mqoe.workloads.netpis import NetPisScenario
from mqoe.workloads.spiral import Spiral
from mqoe.workloads.trace_player import TraceAbr
from mqoe.workloads.ui_bench import UiBench
from mqoe.workloads.video import Video
from mqoe.workloads.video_stream import VideoStream

SCENARIOS: dict[str, Scenario] = {
    scenario.name: scenario
    for scenario in (
        AppSwitching(),
        FlashAging(),
        FrameDeadlines(),
        NetPisScenario(),
        Spiral(),
        TraceAbr(),
        UiBench(),
        Video(),
        VideoStream(),
    )
}


def get_scenario(name: str) -> Scenario:
    if name not in SCENARIOS:
        raise UserError(f"unknown scenario {name!r}; available: {', '.join(sorted(SCENARIOS))}")
    return SCENARIOS[name]


__all__ = ["SCENARIOS", "Scenario", "ScenarioOutput", "Session", "get_scenario", "parse_params"]
