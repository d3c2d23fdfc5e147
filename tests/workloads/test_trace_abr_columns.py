"""trace-abr keeps its table as columns: its run is the one the DataFrame path gave."""

from __future__ import annotations

import math
import struct

import pandas as pd
import pytest

from mqoe.device.phone import Phone
from mqoe.device.profiles import load_profile
from mqoe.generators.throughput_traces import synthetic_manifest
from mqoe.metrics.video_qoe import qoe_summary
from mqoe.policies.abr import make_rule
from mqoe.results import ColumnTable, Tables
from mqoe.workloads.runner import run_scenario
from mqoe.workloads.trace_player import (
    SYNTHETIC_LADDER_KBPS,
    SYNTHETIC_SEGMENT_S,
    simulate_session,
    synthetic_3g_trace,
)


def _bits(metrics: dict[str, float]) -> dict[str, bytes]:
    return {name: struct.pack("<d", value) for name, value in metrics.items()}


@pytest.mark.parametrize("rule", ["bba", "bola", "throughput", "conservative"])
@pytest.mark.parametrize("startup", [1, 3])
def test_trace_abr_run_matches_the_dataframe_path(rule: str, startup: int) -> None:
    profile, seed, session_s = load_profile("nokia-1"), 5, 240.0
    overrides = {"rule": rule, "session_s": str(session_s), "startup_segments": str(startup)}
    record = run_scenario("trace-abr", profile, seed, overrides)
    # The old path: the same trace (the run's "trace" stream) through simulate_session's
    # DataFrame and qoe_summary.
    trace = synthetic_3g_trace(Phone(profile, seed).env.rng("trace"), session_s)
    n = math.ceil(session_s / SYNTHETIC_SEGMENT_S)
    manifest = synthetic_manifest(SYNTHETIC_LADDER_KBPS, SYNTHETIC_SEGMENT_S, n)
    table = simulate_session(
        trace, manifest, make_rule(rule), session_s=session_s, startup_segments=startup
    )
    watch_s = float(table["download_end_s"].iloc[-1] + table["buffer_after_s"].iloc[-1])
    expected = qoe_summary(
        table, watch_s, min_bitrate_kbps=SYNTHETIC_LADDER_KBPS[0], startup_segments=startup
    )
    got = {name: record.metrics[name] for name in expected}
    assert _bits(got) == _bits(expected)  # type: ignore[arg-type]
    assert isinstance(record.tables, Tables)
    assert isinstance(record.tables.held("segments"), ColumnTable)
    pd.testing.assert_frame_equal(record.tables["segments"], table, check_exact=True)
    # It models no phone: no idle phone's energy beside the session, no profile in it.
    assert list(record.tables) == ["segments"]
    assert not {"energy_j", "cpu_power_mw"} & set(record.metrics)
    assert record.profile == "none" and record.run_id.startswith(f"trace-abr-s{seed}-")
