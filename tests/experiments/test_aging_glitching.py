"""The aging-glitching reproduction on a handful of real runs (the full one is `make demo`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mqoe.device.profiles import load_profile
from mqoe.experiments import EXPERIMENTS
from mqoe.experiments.aging_glitching import (
    FLASH_MODEL,
    LOW_END,
    RUIR_APPS,
    RUIR_MODEL,
    AgingGlitching,
    Results,
    UiCell,
    _ui_overrides,
    sd_knee,
    ui_cells,
)
from mqoe.results.comparison import read_comparison_csv
from mqoe.workloads.runner import run_population, run_scenario


def small_results(quick: bool) -> Results:
    cells = [
        UiCell("srff", LOW_END[0], "gmail"),
        UiCell("srff", "black-shark", "subway-surf"),
        UiCell("ruir", RUIR_MODEL, RUIR_APPS[0], (("trim_ruir", "false"),)),
        UiCell("ruir", RUIR_MODEL, RUIR_APPS[0], (("trim_ruir", "true"),)),
        UiCell("sf-cpuset", LOW_END[0], "gmail", (("sf_cpuset", "big_when_little_saturated"),)),
    ]
    ui = [
        (c, run_scenario("ui-bench", load_profile(c.model), 1, _ui_overrides(c, True)))
        for c in cells
    ]
    fleet = {
        wam: run_population("fleet", 1, {"phones": "80", "days": "3", "wam": wam})
        for wam in ("realtime", "practical")
    }
    runs = [
        (FLASH_MODEL, spec)
        for spec in ("realtime", "lazy", "practical", "practical:threshold_gb=0.5")
    ]
    runs += [("mi-8-pro", spec) for spec in ("realtime", "lazy", "practical")]
    flash = {
        (model, spec): run_scenario("flash-aging", load_profile(model), 1,
                                    {"wam": spec, "days": "2", "warmup_days": "0"})
        for model, spec in runs
    }  # fmt: skip
    return Results(ui, fleet, flash)


def test_every_figure_lands_in_metrics_csv_with_its_condition_keys(tmp_path: Path) -> None:
    runner = AgingGlitching(runner=lambda quick: small_results(quick).pairs())
    path = runner.reproduce(tmp_path, quick=True)
    metrics = pd.read_csv(path, keep_default_na=False)
    figures = set(metrics["figure"])
    assert {"srff-model", "srff-app", "ruir", "sf-cpuset", "anr-snr", "root-causes",
            "write-speed", "sd-threshold"} <= figures  # fmt: skip
    speed = metrics[metrics["figure"] == "write-speed"]
    assert set(speed["condition"]) == {f"policy={policy};storage={storage}"
                                       for storage in ("emmc", "ufs")
                                       for policy in ("realtime", "lazy", "practical")}  # fmt: skip
    assert set(speed["profile"]) == {FLASH_MODEL, "mi-8-pro"}
    assert {"random_mbps", "sequential_mbps", "own_write_mbps"} <= set(speed["metric"])
    sweep = metrics[metrics["figure"] == "sd-threshold"]
    assert set(sweep["condition"]) == {"threshold_gb=0.5", "threshold_gb=6"}
    assert {"trim_duration_s", "sequential_mbps"} <= set(sweep["metric"])
    checks = read_comparison_csv(tmp_path / "comparison.csv")
    assert {c.section for c in checks} >= {"write-speed", "sd-threshold", "anr-snr"}
    copies = [c for c in checks if "GC copies least" in c.what]
    assert {c.what.split(":")[0] for c in copies} == {"emmc", "ufs"}
    assert all(c.simulated.count(" / ") == 2 for c in copies)
    own = [c for c in checks if "the phone's own writes" in c.what]
    assert {c.what.split(":")[0] for c in own} == {"emmc", "ufs"}
    assert all(c.simulated.endswith(" MB/s") and c.verdict in ("met", "not met") for c in own)
    assert (tmp_path / "write-speed.png").exists() and (tmp_path / "sd-threshold.svg").exists()
    anr = metrics[metrics["figure"] == "anr-snr"]
    assert set(anr["condition"]) == {"policy=realtime", "policy=practical"}
    assert set(anr["metric"]) == {
        "anr_per_phone", "snr_per_phone", "phones_without_anr_pct", "wam_anr_share_pct",
    }  # fmt: skip
    ruir = metrics[metrics["figure"] == "ruir"]
    assert set(ruir["condition"]) == {f"app={RUIR_APPS[0]};trim=before",
                                      f"app={RUIR_APPS[0]};trim=after"}  # fmt: skip
    models = set(metrics.loc[metrics["figure"] == "srff-model", "profile"])
    assert models == {LOW_END[0], "black-shark"}
    text = (tmp_path / "comparison.md").read_text()
    assert "published" in text and "Fleet, practical WAM" in text and "write-speed" in text
    assert (tmp_path / "ruir.png").exists() and (tmp_path / "srff-model-app.svg").exists()


def test_the_full_grid_covers_15_models_10_apps_and_the_low_end_cpuset() -> None:
    cells = ui_cells()
    srff = [c for c in cells if c.figure == "srff"]
    assert len({c.model for c in srff}) == 15 and len({c.app for c in srff}) == 10
    assert {c.model for c in cells if c.figure == "sf-cpuset"} == set(LOW_END)
    assert "aging-glitching" in EXPERIMENTS


def test_the_s_d_knee_is_the_corner_of_the_trade_off_or_none() -> None:
    gbs = ["1", "2", "4", "8"]
    # Trim time falls steeply up to 2 GB, then barely; WA rises evenly: the corner is 2.
    trim = dict(zip(gbs, [400.0, 150.0, 120.0, 100.0], strict=True))
    wa = dict(zip(gbs, [1.30, 1.32, 1.34, 1.36], strict=True))
    assert sd_knee(trim, wa) == 2.0
    line = dict(zip(gbs, [400.0, 300.0, 200.0, 100.0], strict=True))
    assert sd_knee(line, wa) is None  # a straight trade-off has no knee
    assert sd_knee(dict(list(trim.items())[:2]), wa) is None  # too few points
    assert sd_knee(trim, dict.fromkeys(gbs, 1.3)) is None  # a flat axis
