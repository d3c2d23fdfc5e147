"""Per-configuration statistics over seeds, and the ``metrics.csv`` rows they make.

:class:`Aggregate` is what every figure, check and table of the reproduction reads;
:func:`metric_rows` turns it into one row per figure × condition × metric.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from mqoe.experiments.coal_not_diamonds.plan import (
    COMPOSITOR_THREAD,
    DURATION_S,
    KSWAPD,
    MMCQD,
    VIDEO_PROCESS,
    Config,
    Plan,
    Results,
)
from mqoe.results import MetricRow
from mqoe.results.store import RunRecord


class Aggregate:
    """Per-configuration statistics over seeds (what every figure reads)."""

    def __init__(self, results: Results) -> None:
        self._records: dict[Config, list[RunRecord]] = defaultdict(list)
        for run, record in results:
            self._records[run.config].append(record)

    def has(self, config: Config) -> bool:
        return config in self._records

    def mean(self, config: Config, metric: str) -> float:
        values = [_number(r.metrics.get(metric, math.nan)) for r in self._records[config]]
        return float(np.mean(values)) if values else math.nan

    def crash_pct(self, config: Config, before_s: float = math.inf) -> float:
        """% of seeds whose player crashed (at a crash_time_s below ``before_s``)."""
        records = self._records[config]
        crashed = [
            bool(r.metrics["crashed"]) and _number(r.metrics.get("crash_time_s")) < before_s
            for r in records
        ]
        return 100.0 * sum(crashed) / len(records)

    @property
    def duration_s(self) -> float:
        """The playback length of the runs (s)."""
        for records in self._records.values():
            return _number(records[0].params.get("duration_s", DURATION_S))
        return float(DURATION_S)

    def records(self, config: Config) -> list[RunRecord]:
        """The runs of ``config`` (none if the plan did not run it)."""
        return list(self._records.get(config, ()))

    def traced(self, config: Config) -> list[RunRecord]:
        """The sessions the thread and preemption tables read: those that played to the
        end (the study's tables describe whole sessions), or all if every one crashed."""
        records = self._records[config]
        whole = [r for r in records if not r.metrics.get("crashed")]
        return whole or records

    def video_threads(self, config: Config, column: str) -> float:
        """``column`` summed over the video threads, mean over uncrashed seeds (s)."""
        sums = []
        for record in self.traced(config):
            table = record.tables["thread_states"]
            video = (table["process"] == VIDEO_PROCESS) | (table["thread"] == COMPOSITOR_THREAD)
            sums.append(float(table.loc[video, column].sum()))
        return float(np.mean(sums))

    def preemptor(self, config: Config, thread: str, column: str) -> float:
        """A column of the video threads' preemption summary for preemptor ``thread``
        (0 if it never preempted a video thread)."""
        values = []
        for record in self.traced(config):
            table = record.tables["video_preemptions"]
            row = table.loc[table["preemptor"] == thread, column]
            values.append(float(row.iloc[0]) if len(row) else 0.0)
        return float(np.mean(values))

    def thread(self, config: Config, thread: str, measure: str) -> float:
        """``running_s``, ``<state>_share_pct`` or ``busiest_rank`` of one thread."""
        values = []
        for record in self.traced(config):
            table = record.tables["thread_states"]
            row = table.loc[table["thread"] == thread]
            if row.empty:
                values.append(math.nan)
            elif measure == "busiest_rank":
                busier = table["running_s"] > float(row["running_s"].iloc[0])
                values.append(float(busier.sum() + 1))
            elif measure.endswith("_share_pct"):
                columns = [c for c in table.columns if c.endswith("_s")]
                total = float(row[columns].sum(axis=1).iloc[0])
                part = float(row[measure.removesuffix("_share_pct") + "_s"].iloc[0])
                values.append(100.0 * part / total if total > 0 else math.nan)
            else:
                values.append(float(row[measure].iloc[0]))
        return float(np.mean(values))


def _number(value: object) -> float:
    if isinstance(value, bool | int | float | np.number):
        return float(value)
    return math.nan


def metric_rows(results: Results, quick: bool) -> list[MetricRow]:
    """Every figure's numbers as metrics.csv rows (one per figure × condition × metric)."""
    plan, agg = Plan.for_mode(quick), Aggregate(results)
    rows: list[MetricRow] = []

    def add(
        figure: str, c: Config, condition: dict[str, str], metric: str, value: float, unit: str
    ) -> None:
        rows.append(MetricRow(figure, c.profile, condition, metric, value, unit))

    for c in plan.grid():
        cond = {"state": c.state, "fps": str(c.fps), "resolution": c.resolution}
        add("drop-grid", c, cond, "frame_drop_pct", agg.mean(c, "frame_drop_pct"), "%")
        add("drop-grid", c, cond, "crash_pct", agg.crash_pct(c), "%")
        add("drop-grid", c, cond, "rendered_fps", agg.mean(c, "rendered_fps"), "fps")
    for c in plan.pss():
        cond = {"fps": str(c.fps), "resolution": c.resolution}
        add("pss", c, cond, "pss_mb", agg.mean(c, "pss_mb"), "MB")
    for c in plan.threads():
        for column in ("running_s", "runnable_s", "runnable_preempted_s"):
            add("thread-states", c, {"state": c.state}, column, agg.video_threads(c, column), "s")
    for c in plan.threads():
        cond = {"state": c.state, "thread": MMCQD}
        add("preemptions", c, cond, "preemptions", agg.preemptor(c, MMCQD, "preemptions"), "count")
        add(
            "preemptions",
            c,
            cond,
            "run_after_preempt_s",
            agg.preemptor(c, MMCQD, "total_preemptor_run_s"),
            "s",
        )
        add(
            "preemptions",
            c,
            cond,
            "wait_for_cpu_s",
            agg.preemptor(c, MMCQD, "total_victim_wait_s"),
            "s",
        )
        add("preemptions", c, cond, "running_s", agg.thread(c, MMCQD, "running_s"), "s")
        cond = {"state": c.state, "thread": KSWAPD}
        for measure, unit in (
            ("running_s", "s"),
            ("running_share_pct", "%"),
            ("sleeping_share_pct", "%"),
            ("busiest_rank", "rank"),
        ):
            add("preemptions", c, cond, measure, agg.thread(c, KSWAPD, measure), unit)
    for c in plan.organic():
        cond = {"apps": str(c.apps)}
        add("organic", c, cond, "frame_drop_pct", agg.mean(c, "frame_drop_pct"), "%")
        add("organic", c, cond, "kills", agg.mean(c, "kills"), "processes")
        add(
            "organic", c, cond, "kills_during_video", agg.mean(c, "kills_during_video"), "processes"
        )
        add("organic", c, cond, "crash_pct", agg.crash_pct(c), "%")
    for c in plan.fps_switch():
        cond = {"fps": str(c.fps), "resolution": c.resolution}
        add("fps-switch", c, cond, "rendered_fps", agg.mean(c, "rendered_fps"), "fps")
        add("fps-switch", c, cond, "frame_drop_pct", agg.mean(c, "frame_drop_pct"), "%")
    for c in plan.genres():
        cond = {"genre": c.genre, "state": c.state, "fps": str(c.fps), "resolution": c.resolution}
        add("genres", c, cond, "frame_drop_pct", agg.mean(c, "frame_drop_pct"), "%")
        add("genres", c, cond, "crash_pct", agg.crash_pct(c), "%")
    return rows
