"""Scenario ui-bench: conformance, buffer-aware counts, the RUIR and cpuset fixes."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from mqoe.device.profiles import load_profile
from mqoe.errors import UserError
from mqoe.metrics.jank import jank_counts
from mqoe.results import RunRecord
from mqoe.workloads.conformance import check_scenario
from mqoe.workloads.runner import run_scenario


@cache
def _run(profile: str = "redmi-5", seed: int = 2, **params: str) -> RunRecord:
    return run_scenario("ui-bench", load_profile(profile), seed, params)


def test_ui_bench_conforms() -> None:
    check_scenario("ui-bench", load_profile("redmi-5"))


@pytest.mark.parametrize("buffers", ["1", "2", "3"])
def test_buffer_aware_counts_never_exceed_naive_and_match_with_one_buffer(buffers: str) -> None:
    m = _run(app="k9-mail", duration_s="12", buffers=buffers).metrics
    assert 0 <= m["sr"] <= m["naive_sr"] and 0 <= m["ff"] <= m["naive_ff"]
    assert m["hidden_slow_frames"] == m["naive_sr"] + m["naive_ff"] - m["sr"] - m["ff"]
    if buffers == "1":
        assert m["hidden_slow_frames"] == 0 and m["srff_pct"] == m["naive_srff_pct"]
    if buffers == "3":
        assert m["hidden_slow_frames"] > 0


def test_metrics_agree_with_the_frames_table() -> None:
    record = _run(app="gmail", duration_s="12")
    frames, m = record.tables["frames"], record.metrics
    aware = jank_counts(frames["duration_ns"], frames["ready_buffer"])
    assert (m["frames"], m["sr"], m["ff"]) == (len(frames), aware["sr"], aware["ff"])
    slow = record.tables["slow_frames"]
    assert len(slow) == m["sr"] + m["ff"]
    shares = [m["cause_ui_complex_share"], m["cause_io_binder_share"], m["cause_sched_delay_share"]]
    assert sum(shares) == pytest.approx(1.0)


def test_trimming_redundant_layers_cuts_draw_work_and_slow_frames() -> None:
    # At a fixed clock the render thread's running time measures its work (under the
    # phone's own governor a lighter load also runs at a lower clock).
    fixed = {"governor": "performance"}
    plain = _run(app="k9-mail", duration_s="20", **fixed)
    trimmed = _run(app="k9-mail", duration_s="20", trim_ruir="true", **fixed)
    assert trimmed.metrics["trimmed_layers"] > 0 == plain.metrics["trimmed_layers"]
    assert trimmed.metrics["mean_overdraw"] < plain.metrics["mean_overdraw"]
    draw = {
        name: r.tables["frames"]["render_running_ns"].mean()
        for name, r in (("plain", plain), ("trimmed", trimmed))
    }
    assert draw["trimmed"] < 0.7 * draw["plain"]
    assert trimmed.metrics["naive_sr"] < plain.metrics["naive_sr"]
    assert not trimmed.tables["frames"]["ruir"].any() and plain.tables["frames"]["ruir"].all()


def test_surfaceflinger_cpuset_choices_run() -> None:
    for mode in ("little", "all", "big_when_little_saturated"):
        comps = _run(app="facebook", duration_s="4", sf_cpuset=mode).tables["compositions"]
        assert len(comps) > 100
        if mode != "big_when_little_saturated":
            assert not comps["widened"].any()
        else:
            assert (comps["widened"] == (comps["little_busy"] == 4)).all()


def test_background_load_adds_threads_and_binder_traffic() -> None:
    quiet = _run(app="gmail", duration_s="6", background="false")
    busy = _run(app="gmail", duration_s="6")
    assert busy.metrics["binder_calls"] > quiet.metrics["binder_calls"]


def test_runs_are_deterministic_per_seed() -> None:
    a = _run(app="instagram", duration_s="4", seed=11).tables["frames"]
    b = run_scenario(
        "ui-bench", load_profile("redmi-5"), 11, {"app": "instagram", "duration_s": "4"}
    ).tables["frames"]
    c = _run(app="instagram", duration_s="4", seed=12).tables["frames"]
    assert a.equals(b)
    assert not np.array_equal(a["draw_cycles"].to_numpy(), c["draw_cycles"].to_numpy())


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"app": "snapchat"}, "unknown UI app"),
        ({"sf_cpuset": "big"}, "sf_cpuset"),
        ({"buffers": "0"}, "buffers"),
        ({"duration_s": "0"}, "duration_s"),
    ],
)
def test_bad_parameters_are_user_errors(params: dict[str, str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        run_scenario("ui-bench", load_profile("redmi-5"), 0, params)
