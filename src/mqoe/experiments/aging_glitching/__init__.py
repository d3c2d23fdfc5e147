"""Reproduction ``aging-glitching`` of Aging or Glitching? (MobiCom 2020): slow/frozen
frames, ANR and SNR.

Figures (``metrics.csv``, figure = the name):

* ``srff-model`` — the ``ui-bench`` scenario for the ten benchmark apps on each of the
  15 phone models (with the phone's background load): buffer-aware ``srff_pct``,
  ``sr_pct``, ``ff_pct`` per model (mean over apps);
* ``srff-app`` — the same runs per app (condition ``app``, mean over models);
* ``frame-time`` — the pooled slow frames: share of SR under 32 ms, share of FF;
* ``ruir`` — the five open-source apps on a mid-range phone before and after trimming
  their redundant layers (condition ``app``, ``trim`` = ``before``/``after``);
* ``sf-cpuset`` — the five low-end models with SurfaceFlinger on LITTLE only and with
  big cores allowed when LITTLE ones are saturated (condition ``sf_cpuset``);
* ``write-speed`` — the ``flash-aging`` scenario (three weeks of file churn on a
  mid-range eMMC phone and a high-end UFS one, condition ``storage``) under real-time /
  lazy / practical WAM: the storage benchmark, run
  each day before the night's trim, after it and at midday (``BENCH_HOURS``) —
  ``random_mbps`` / ``sequential_mbps`` (the day's average) and ``*_spread`` (its
  fastest time of day less its slowest) — ``write_amplification``, and the time the WAM
  spent discarding (``discard_busy_s``);
* ``sd-threshold`` — practical WAM with S_d thresholds of 1…12 GB: write speed,
  ``write_amplification`` and the total batched-trim duration (``trim_duration_s``);
* ``anr-snr`` — the fleet (``mqoe run fleet``) under real-time and practical WAM;
* ``root-causes`` — the cause shares of simulated slow frames and of fleet ANRs.

``comparison.md`` sets the simulated numbers beside the study's published facts (read
from ``published/aging-glitching.toml``); those facts are only printed, never used to
produce a simulated number.

Modules: ``plan`` (models, apps, the runs and their :class:`Results`), ``tables``
(``metrics.csv`` rows), ``comparison`` (the published facts beside the simulated
numbers) and ``figures``; this module holds the :class:`AgingGlitching` reproduction
and re-exports what other code uses.
"""

from __future__ import annotations

from pathlib import Path

from mqoe.experiments.aging_glitching.comparison import (
    PUBLISHED,
    comparison_markdown,
    comparison_rows,
    sd_knee,
)
from mqoe.experiments.aging_glitching.figures import plot, plot_flash
from mqoe.experiments.aging_glitching.plan import (
    BENCH_HOURS,
    FLASH_DAYS,
    FLASH_MODEL,
    FLASH_MODELS,
    FLEET,
    LOW_END,
    MODELS,
    RUIR_APPS,
    RUIR_MODEL,
    SEED,
    WAM_FLEET,
    Key,
    Results,
    UiCell,
    _ui_overrides,
    flash_specs,
    ui_cells,
)
from mqoe.experiments.aging_glitching.tables import metric_rows
from mqoe.experiments.outputs import write_outputs
from mqoe.experiments.reproduction import PlannedRun, Reproduction
from mqoe.results.store import RunRecord

__all__ = [
    "BENCH_HOURS",
    "FLASH_MODEL",
    "FLASH_MODELS",
    "LOW_END",
    "MODELS",
    "PUBLISHED",
    "RUIR_APPS",
    "RUIR_MODEL",
    "AgingGlitching",
    "Key",
    "Results",
    "UiCell",
    "_ui_overrides",
    "comparison_markdown",
    "comparison_rows",
    "flash_specs",
    "metric_rows",
    "plot",
    "plot_flash",
    "sd_knee",
    "ui_cells",
]


class AgingGlitching(Reproduction[Key]):
    name = "aging-glitching"
    title = "Aging or Glitching? Slow/frozen frames, ANR, SNR and WAM (MobiCom 2020)"

    def plan(self, quick: bool) -> list[PlannedRun[Key]]:
        """The flash-aging runs (longest) first, then the two fleets, then the UI
        benchmarks, so the short runs fill the cores behind the long ones."""
        days = FLASH_DAYS["quick" if quick else "full"]
        size = FLEET["quick" if quick else "full"]
        runs: list[PlannedRun[Key]] = []
        for model, wam in flash_specs(quick):
            params = {"wam": wam, "days": days, "bench_hours": BENCH_HOURS}
            runs.append(PlannedRun(("flash", (model, wam)), "flash-aging", model, SEED, params))
        for wam in WAM_FLEET:
            runs.append(PlannedRun(("fleet", wam), "fleet", None, SEED, {**size, "wam": wam}))
        for cell in ui_cells():
            overrides = _ui_overrides(cell, quick)
            runs.append(PlannedRun(("ui", cell), "ui-bench", cell.model, SEED, overrides))
        return runs

    def write(self, pairs: list[tuple[Key, RunRecord]], out_dir: Path, quick: bool) -> Path:
        results = Results.from_pairs(pairs)
        rows = metric_rows(results)
        path = write_outputs(
            out_dir,
            rows,
            ("comparison.md", comparison_markdown(rows, quick)),
            comparison_rows(rows),
        )
        plot(results, out_dir)
        return path
