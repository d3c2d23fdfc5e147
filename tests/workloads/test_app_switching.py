"""Scenario app-switching (GPU-buffer study): deterministic per seed, the launch draw follows the
category mix and never repeats the app in front, launch traces replay in order with
errors naming file and line, and VAN is indistinguishable from no GPU module at all."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mqoe.apps.catalog import CATEGORY_SHARES, load_catalog
from mqoe.errors import UserError
from mqoe.experiments.gpu_buffers import kitkat_profile
from mqoe.results import RunRecord
from mqoe.workloads.app_switching import AppSwitchingParams, draw_launches, read_trace
from mqoe.workloads.base import parse_params
from mqoe.workloads.runner import run_scenario

SHORT = {"launches": "8", "interaction_s": "2", "system": "false", "policy": "fair"}
MAPS, MAIL, GAME = "com.google.android.apps.maps", "com.google.android.gm", "com.rovio.angrybirds"


def run(seed: int, **overrides: str) -> RunRecord:
    return run_scenario("app-switching", kitkat_profile("1.5"), seed, SHORT | overrides)


def assert_same_metrics(a: Mapping[str, object], b: Mapping[str, object]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x):
            assert math.isnan(y), key
        else:
            assert x == y, (key, x, y)


def assert_same_tables(a: RunRecord, b: RunRecord) -> None:
    assert a.tables.keys() == b.tables.keys()
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True)


# -- determinism ----------------------------------------------------------------------
def test_same_seed_gives_identical_results_and_another_seed_another_user() -> None:
    first, again, other = run(3), run(3), run(4)
    assert first.metrics["completed"] is True and first.metrics["launches"] == 8
    assert_same_metrics(first.metrics, again.metrics)
    assert_same_tables(first, again)
    apps = list(first.tables["launches"]["app"])
    assert apps != list(other.tables["launches"]["app"])


def test_van_runs_exactly_as_without_the_gpu_module() -> None:
    profile = kitkat_profile("1.5")
    van = run_scenario("app-switching", profile, 2, {"policy": "van", "launches": "20"})
    none = run_scenario("app-switching", profile, 2, {"policy": "none", "launches": "20"})
    assert int(van.metrics["resumes"]) > 0  # something to compare: apps were cached and resumed
    assert_same_metrics(van.metrics, none.metrics)
    assert_same_tables(van, none)
    for key in ("deferred_gpu_ops", "compressed_mb_total", "saved_mb_max", "compress_cpu_s"):
        assert van.metrics[key] == 0


# -- the launch draw ------------------------------------------------------------------
def test_draw_never_repeats_the_app_in_front_and_follows_the_category_mix() -> None:
    catalog = load_catalog()
    n = 20_000
    params = AppSwitchingParams(launches=n, revisit=0.0)
    drawn = draw_launches(catalog, params, np.random.default_rng(11))
    apps = [app for _, app in drawn]
    assert len(apps) == n
    assert all(a != b for a, b in itertools.pairwise(apps))
    # With the app in front excluded, app i is drawn at the chain's stationary rate
    # w_i (1 − w_i) / Σ w_j (1 − w_j), a few % off w_i: test against that exactly, and
    # against the category shares loosely.
    weights = catalog.launch_weights()
    category = {a.name: a.category for a in catalog.apps}
    stationary = {a: w * (1 - w) for a, w in weights.items()}
    total = sum(stationary.values())
    counts = Counter(category[a] for a in apps)
    chi2 = 0.0
    for cat, share in CATEGORY_SHARES.items():
        expected = n * sum(p for a, p in stationary.items() if category[a] == cat) / total
        chi2 += (counts[cat] - expected) ** 2 / expected
        assert counts[cat] / n == pytest.approx(share, abs=0.012), cat
    assert chi2 < 24.3  # χ² with 7 degrees of freedom, p = 0.001


def reopened_share(apps: list[str], window: int = 3) -> float:
    """Share of launches whose app was one of the ``window`` launches before it."""
    hits = sum(app in apps[i - window : i] for i, app in enumerate(apps) if i >= window)
    return hits / (len(apps) - window)


def test_revisits_reopen_recent_apps_and_keep_the_category_mix() -> None:
    catalog = load_catalog()
    n = 20_000
    category = {a.name: a.category for a in catalog.apps}
    mixed = draw_launches(
        catalog, AppSwitchingParams(launches=n, revisit=0.5), np.random.default_rng(5)
    )
    fresh = draw_launches(
        catalog, AppSwitchingParams(launches=n, revisit=0.0), np.random.default_rng(5)
    )
    apps = [app for _, app in mixed]
    assert all(a != b for a, b in itertools.pairwise(apps))
    # Re-opens copy recent launches: far more launches return to one of the last three
    # apps than independent draws do.
    assert reopened_share(apps) > reopened_share([a for _, a in fresh]) + 0.1
    counts = Counter(category[a] for a in apps)
    for cat, share in CATEGORY_SHARES.items():
        assert counts[cat] / n == pytest.approx(share, abs=0.02), cat


def test_revisit_outside_zero_one_is_refused() -> None:
    with pytest.raises(ValueError, match="revisit"):
        AppSwitchingParams(revisit=1.5)


def test_interaction_times_have_the_requested_mean() -> None:
    params = AppSwitchingParams(launches=20_000, interaction_s=10.0, interaction_sigma=0.8)
    drawn = draw_launches(load_catalog(), params, np.random.default_rng(1))
    times = np.array([t for t, _ in drawn])
    assert times.min() > 0
    assert times.mean() == pytest.approx(10.0, rel=0.03)


# -- launch traces --------------------------------------------------------------------
def trace(tmp_path: Path, text: str) -> str:
    path = tmp_path / "launches.csv"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (f"0,{MAPS}\n", 1, "expected the header 'time_s,app'"),
        (f"time_s,app\n1.0,{MAPS},extra\n", 2, "expected 2 fields"),
        (f"time_s,app\n0,{MAPS}\nsoon,{MAIL}\n", 3, "time_s 'soon' is not a number"),
        (f"time_s,app\n0,{MAPS}\n\nsoon,{MAIL}\n", 4, "is not a number"),  # blank lines count
        (f"time_s,app\n5,{MAPS}\n3,{MAIL}\n", 3, "non-decreasing"),
        (f"time_s,app\n-1,{MAPS}\n", 2, "≥ 0"),
        ("time_s,app\nnan,com.whatsapp\n", 2, "finite"),
        ("time_s,app\n0,com.example.nope\n", 2, "app 'com.example.nope' is not in the catalogue"),
    ],
)
def test_bad_traces_name_file_and_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = trace(tmp_path, text)
    with pytest.raises(UserError) as info:
        read_trace(path, load_catalog())
    text_of = str(info.value)
    assert text_of.startswith(f"{path}:{line}: ")
    assert message in text_of and "\n" not in text_of


@pytest.mark.parametrize("text", ["time_s,app\n", "time_s,app\n\n\n", ""])
def test_an_empty_trace_is_an_error_naming_the_file(tmp_path: Path, text: str) -> None:
    path = trace(tmp_path, text)
    with pytest.raises(UserError, match="^" + path):
        read_trace(path, load_catalog())


def test_a_missing_trace_file_is_a_user_error(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.csv")
    with pytest.raises(UserError, match="cannot read the launch trace"):
        read_trace(path, load_catalog())


def test_a_trace_replays_in_order_and_on_time(tmp_path: Path) -> None:
    rows = [(0.0, MAPS), (0.5, MAIL), (0.5, GAME), (30.0, MAPS), (31.0, MAIL)]
    path = trace(tmp_path, "time_s,app\n" + "".join(f"{t},{a}\n" for t, a in rows))
    assert read_trace(path, load_catalog()) == rows
    record = run(1, trace=path)
    launches = record.tables["launches"]
    assert list(launches["app"]) == [a for _, a in rows]
    assert list(launches["kind"]) == ["start", "start", "start", "resume", "resume"]
    boot_s = launches["t_s"].iloc[0]  # the trace's time 0
    for (at_s, _), t_s in zip(rows, launches["t_s"], strict=True):
        assert t_s >= boot_s + at_s - 1e-9  # never early; later if the previous is slow
    ends = launches["t_s"] + launches["latency_ms"] / 1000
    assert (launches["t_s"].iloc[1:].to_numpy() >= ends.iloc[:-1].to_numpy() - 1e-9).all()
    assert record.metrics["completed"] is True


# -- parameters -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "overrides",
    [
        {"policy": "bogus"},
        {"policy": "fair:cap_step_mb=x"},
        {"launches": "0"},
        {"launches": "many"},
        {"max_cached": "-1"},
        {"interaction_s": "0"},
        {"colour": "blue"},
    ],
)
def test_bad_parameters_are_user_errors(overrides: dict[str, str]) -> None:
    with pytest.raises(UserError):
        parse_params(AppSwitchingParams, overrides, "app-switching")
    with pytest.raises(UserError):
        run_scenario("app-switching", kitkat_profile("1.5"), 1, overrides)
