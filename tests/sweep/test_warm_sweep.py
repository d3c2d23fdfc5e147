"""A sweep stores the same results with warm starts (the default) as with ``--cold``,
in this process and in a process pool."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mqoe.cli.main import main
from mqoe.results.api import load_runs, load_table

SPEC = """\
[sweep]
name = "warm"
scenario = "video"
profiles = ["nokia-1"]
seeds = [1]

[fixed]
pressure = "normal"  # a short set-up: the mechanism, not its saving
boot_cached = 4
setup_s = 20
duration_s = 2

[grid]
resolution = ["480p", "720p"]
fps = [30, 60]
"""
CLOCK = ["wall_time_s", "started_utc", "sweep_id"]  # the wall clock, and nothing else


def stored(out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    runs = load_runs(out).drop(columns=CLOCK).sort_values("run_id").reset_index(drop=True)
    frames = load_table(out, "frames").sort_values(["run_id", "index"]).reset_index(drop=True)
    return runs, frames


@pytest.mark.parametrize("workers", ["1", "2"])
def test_warm_and_cold_sweeps_store_the_same_runs(tmp_path: Path, workers: str) -> None:
    # workers=2: a pool of two, each running a unit of two runs sharing their set-up
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC, encoding="utf-8")
    warm, cold = tmp_path / "warm", tmp_path / "cold"
    assert main(["sweep", str(spec), "--out", str(warm), "--workers", workers]) == 0
    assert main(["sweep", str(spec), "--out", str(cold), "--workers", "1", "--cold"]) == 0
    (warm_runs, warm_frames), (cold_runs, cold_frames) = stored(warm), stored(cold)
    assert len(warm_runs) == 4 and warm_runs["frames_due"].nunique() > 1
    pd.testing.assert_frame_equal(warm_runs, cold_runs)
    pd.testing.assert_frame_equal(warm_frames, cold_frames)
