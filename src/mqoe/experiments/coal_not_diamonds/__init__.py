"""Reproduction ``coal-not-diamonds`` of Coal Not Diamonds (CoNEXT 2022): video QoE
under memory pressure.

Every run is one ``video`` session (fixed quality, dash.js-like browser player, 120 s of
playback after the pressure generator reached its start state). The runs are
deduplicated across figures: one configuration feeds every figure that needs it.

Figures (``metrics.csv`` rows, condition keys in brackets):

* ``drop-grid`` — nokia-1, nexus-5, nexus-6p × ``state`` normal/moderate/critical ×
  ``fps`` 30/60 × ``resolution`` 240p…1080p: ``frame_drop_pct`` (mean over seeds),
  ``crash_pct`` (% of seeds that crashed), ``rendered_fps`` (mean).
* ``pss`` — nexus-5 at normal state, ``resolution`` × ``fps``: ``pss_mb`` (mean).
* ``thread-states`` — nokia-1 480p60, ``state`` normal vs moderate: ``running_s``,
  ``runnable_s``, ``runnable_preempted_s`` summed over the video threads (the player
  host's threads plus SurfaceFlinger), mean over seeds.
* ``preemptions`` — the same runs, ``thread=mmcqd``: ``preemptions``,
  ``run_after_preempt_s``, ``wait_for_cpu_s`` and ``running_s``; ``thread=kswapd0``:
  ``running_s``, ``running_share_pct``, ``sleeping_share_pct``, ``busiest_rank``.
* ``organic`` — nokia-1 480p60 with ``apps`` 0 vs 8 background apps (no generator):
  ``frame_drop_pct``, ``kills``, ``kills_during_video``, ``crash_pct``.
* ``fps-switch`` — nokia-1 at normal state, ``resolution`` 240p…1080p × encoded ``fps``
  24/48/60: ``rendered_fps``, ``frame_drop_pct``.
* ``genres`` — nexus-5, five ``genre`` × ``fps`` 30/60 × ``state`` normal/moderate at
  ``resolution`` 720p and 1080p: ``frame_drop_pct``, ``crash_pct``.

* ``nokia1-real`` — every Nokia 1 cell against the phone's real runs (the study's
  per-run logs): ``nokia1-real.csv`` (real and simulated drop and crash rates, time to
  crash, whether the cell matches) and two sections of ``comparison.md`` (the cells and
  their score; kswapd, iowait, zRAM fill and Critical's time to crash against the
  phone's ``top``). The rule is :mod:`mqoe.experiments.nokia1_real`'s.

Outputs in OUT_DIR: ``metrics.csv``, ``<figure>.png`` and ``<figure>.svg`` per figure,
``comparison.md`` (the study's published values beside the simulated ones, with the
reproduction's tolerances, marked met / not met) and a results store under ``results/``.

Time budget (2 cores, 10 minutes for the full reproduction), measured: one 120 s
session costs 0.1–0.5 s at normal state but 1–18 s under pressure (reclaim and refault
I/O are simulated event by event; moderate/critical at 720p–1080p on the Nexus phones
are the slowest). The drop grid runs ``SEEDS`` = 5 seeds on every phone (the study used
5 on the Nokia 1 and 10 on the Nexus phones; 10 does not fit the budget). The genre study
runs ``GENRE_SEEDS`` = 2 seeds at 720p/1080p and normal/moderate only: its published
claim is a shape, and its travel cells reuse the grid's seeds. Measured on 2 cores:
7 min 17 s for the full reproduction (569 sessions, 849 CPU-seconds of simulation;
5 min 18 s with 3 seeds on the Nexus phones), 15 s for ``--quick`` (57 sessions).
``--quick``: nokia-1 only, one seed, resolutions 480p/720p/1080p, 30 s sessions after at
most 20 s of setup; the pss and genre figures then use nokia-1 as well.

The published values (:data:`PUBLISHED`, read from ``published/coal-not-diamonds.toml``)
are reported beside the simulated ones and never feed a simulated value.

Modules: ``plan`` (configurations, seeds, which runs each figure uses), ``aggregate``
(per-configuration statistics, ``metrics.csv`` rows), ``checks`` (published values and
shapes against the simulated ones), ``nokia1`` (the Nokia 1's real runs),
``comparison`` (``comparison.md`` and ``comparison.csv``) and ``figures``; this module
holds the :class:`CoalNotDiamonds` reproduction and re-exports what other code uses.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mqoe.experiments.coal_not_diamonds.aggregate import Aggregate, metric_rows
from mqoe.experiments.coal_not_diamonds.checks import PUBLISHED, Check, shape_checks
from mqoe.experiments.coal_not_diamonds.comparison import (
    _fmt,
    comparison_markdown,
    comparison_rows,
    comparison_sections,
)
from mqoe.experiments.coal_not_diamonds.figures import plot
from mqoe.experiments.coal_not_diamonds.nokia1 import (
    nokia1_real_csv,
    nokia1_scores,
    nokia1_top_checks,
)
from mqoe.experiments.coal_not_diamonds.plan import Config, Plan, Results, Run
from mqoe.experiments.outputs import write_outputs
from mqoe.experiments.reproduction import PlannedRun, Reproduction
from mqoe.results.atomic import atomic_write_text

__all__ = [
    "PUBLISHED",
    "Aggregate",
    "Check",
    "CoalNotDiamonds",
    "Config",
    "Plan",
    "Results",
    "Run",
    "_fmt",
    "comparison_markdown",
    "comparison_rows",
    "comparison_sections",
    "expected_runs",
    "metric_rows",
    "nokia1_real_csv",
    "nokia1_scores",
    "nokia1_top_checks",
    "plot",
    "shape_checks",
]


class CoalNotDiamonds(Reproduction[Run]):
    name = "coal-not-diamonds"
    title = "Coal Not Diamonds: memory pressure and mobile video QoE (CoNEXT 2022)"

    def plan(self, quick: bool) -> list[PlannedRun[Run]]:
        """Every distinct configuration × seed of the figures: one ``video`` run each,
        the (likely) slowest first so the cores finish together."""
        return [
            PlannedRun(run, "video", run.config.profile, run.seed, run.overrides(quick))
            for run in Plan.for_mode(quick).runs()
        ]

    def write(self, results: Results, out_dir: Path, quick: bool) -> Path:
        path = write_outputs(
            out_dir,
            metric_rows(results, quick),
            ("comparison.md", comparison_markdown(results, quick)),
            comparison_rows(results, quick),
        )
        atomic_write_text(out_dir / "nokia1-real.csv", nokia1_real_csv(results))
        plot(results, quick, out_dir)
        return path


def expected_runs(quick: bool) -> Iterable[Run]:
    """The runs the plan makes (for tests and for budgeting)."""
    return Plan.for_mode(quick).runs()
