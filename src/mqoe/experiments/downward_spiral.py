"""Reproduction ``downward-spiral`` (Huang et al., IMC 2012): video rate vs a competing flow.

Cases: bottleneck buffers 120 / 75 / 20 kbit × rate selection discrete /
continuous-0.7 / continuous-1.0, plus BBA and BOLA with the 120 kbit buffer. Each case is
one ``spiral`` run (800 s, competitor from 400 s). Outputs in OUT_DIR: ``metrics.csv``
(figure ``spiral``), ``spiral.png`` (one panel per case: chosen rate, video throughput
as a 5-sample moving average, competitor throughput), ``spiral-summary.png``,
``summary.md`` (the table and the expected-shape checks) and a results store under
``results/`` (all tables, queryable with ``mqoe results query --results OUT/results``).

No published measurement is copied: the study gives the setup and the shape — a fair
share of the bottleneck would sustain the top rate (``TOP_RATE_KBPS``, from
``published/downward-spiral.toml``); with a 120 kbit buffer the discrete client
collapses; smaller buffers and continuous rates recover; BBA avoids the collapse. Those
shape statements are checked and reported, not imposed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mqoe.experiments import published
from mqoe.experiments.citations import CITATIONS
from mqoe.experiments.outputs import write_outputs
from mqoe.experiments.reproduction import PlannedRun, Reproduction
from mqoe.metrics.units import unit_of
from mqoe.results import MetricRow
from mqoe.results.comparison import ComparisonRow
from mqoe.results.store import RunRecord
from mqoe.workloads.spiral import SPIRAL_METRICS, TESTBED_ONLY

PROFILE = "nexus-5"  # the client phone; spiral is network-bound (its CPU is not modelled)
SEED = 1
# The study's top rung, which the client's fair share of the bottleneck sustains.
TOP_RATE_KBPS = published.load("downward-spiral")["top_rate_kbps"].value
# The spiral's metrics in metrics.csv, in order (units: mqoe.metrics.units).
METRICS = tuple(m for m in SPIRAL_METRICS if m not in TESTBED_ONLY)


@dataclass(frozen=True)
class Case:
    buffer_kbit: int
    mode: str  # discrete | continuous-0.7 | continuous-1.0 | bba | bola

    @property
    def label(self) -> str:
        return f"{self.buffer_kbit} kbit, {self.mode}"

    def overrides(self, quick: bool) -> dict[str, str]:
        out = {"buffer_kbit": str(self.buffer_kbit)}
        if self.mode.startswith("continuous-"):
            out |= {"mode": "continuous", "c": self.mode.removeprefix("continuous-")}
        else:
            out["mode"] = self.mode
        if quick:  # half as long; the spiral still has 140 s to develop after settling
            out |= {"duration_s": "400", "competitor_start_s": "200"}
        return out


CASES = (
    *(
        Case(buffer, mode)
        for buffer in (120, 75, 20)
        for mode in ("discrete", "continuous-0.7", "continuous-1.0")
    ),
    Case(120, "bba"),
    Case(120, "bola"),
)


def metric_rows(results: list[tuple[Case, RunRecord]]) -> list[MetricRow]:
    rows = []
    for case, record in results:
        condition = {"buffer_kbit": str(case.buffer_kbit), "mode": case.mode}
        for metric in METRICS:
            unit = unit_of(metric)
            value = record.metrics.get(metric, math.nan)
            assert isinstance(value, int | float)
            rows.append(MetricRow("spiral", PROFILE, condition, metric, float(value), unit))
    return rows


def shape_checks(results: list[tuple[Case, RunRecord]]) -> list[tuple[str, bool]]:
    """The study's qualitative claims, evaluated on the simulated numbers."""
    rate = {(c.buffer_kbit, c.mode): float(r.metrics["rate_competing_kbps"]) for c, r in results}
    spiral = rate[(120, "discrete")]
    return [
        (
            f"120 kbit discrete collapses well below {TOP_RATE_KBPS:.0f} kbit/s "
            f"(< 75%: {spiral:.0f})",
            spiral < 0.75 * TOP_RATE_KBPS,
        ),
        (
            "continuous-1.0 recovers at 120 kbit (rate above discrete's): "
            f"{rate[(120, 'continuous-1.0')]:.0f} > {spiral:.0f}",
            rate[(120, "continuous-1.0")] > spiral,
        ),
        (
            "a smaller buffer (75 kbit) recovers discrete: "
            f"{rate[(75, 'discrete')]:.0f} > {spiral:.0f}",
            rate[(75, "discrete")] > spiral,
        ),
        (
            "20 kbit with continuous-1.0 beats 120 kbit discrete: "
            f"{rate[(20, 'continuous-1.0')]:.0f} > {spiral:.0f}",
            rate[(20, "continuous-1.0")] > spiral,
        ),
        (
            f"BBA avoids the collapse (≥ 90% of the top rate): {rate[(120, 'bba')]:.0f}",
            rate[(120, "bba")] >= 0.9 * TOP_RATE_KBPS,
        ),
    ]


def plot(results: list[tuple[Case, RunRecord]], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = 3
    rows = math.ceil(len(results) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(15, 3.2 * rows), sharex=True, sharey=True)
    for ax, (case, record) in zip(axes.flat, results, strict=False):
        segments = record.tables["segments"]
        series = record.tables["timeseries"]
        ax.step(segments["request_s"], segments["rate_kbps"], where="post", color="C0",
                label="video rate")  # fmt: skip
        ax.plot(segments["done_s"], segments["throughput_kbps"].rolling(5, min_periods=1).mean(),
                color="C1", lw=0.9, label="video throughput (5-seg. avg)")  # fmt: skip
        ax.plot(series["t_s"], series["competitor_kbps"].rolling(5, min_periods=1).mean(),
                color="C2", lw=0.7, alpha=0.9, label="competitor throughput (5 s avg)")  # fmt: skip
        ax.axhline(TOP_RATE_KBPS, color="grey", ls=":", lw=0.8)
        ax.set_title(case.label, fontsize=10)
        ax.set_ylim(0, 5500)
    for ax in axes.flat[len(results) :]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    for ax in axes[:, 0]:
        ax.set_ylabel("kbit/s")
    axes.flat[0].legend(fontsize=7, loc="upper right")
    fig.suptitle(
        "Downward spiral: video rate and throughput vs a competing flow (Huang et al., IMC 2012)"
    )
    # Fixed margins for the shared axes (tight_layout measured every tick label of the
    # 12 panels: a second of the reproduction's ~11 s).
    fig.subplots_adjust(left=0.05, right=0.99, bottom=0.3 / rows, top=1 - 0.3 / rows,
                        wspace=0.04, hspace=0.25)  # fmt: skip
    panels = out_dir / "spiral.png"
    _save(fig, panels)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 3.5))
    labels = [case.label for case, _ in results]
    ax.bar(labels, [float(r.metrics["rate_competing_kbps"]) for _, r in results],
           color="C0")  # fmt: skip
    ax.axhline(TOP_RATE_KBPS, color="grey", ls=":", label="top rate (fair share sustains it)")
    ax.set_ylabel("mean rate while competing (kbit/s)")
    ax.tick_params(axis="x", rotation=60, labelsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    summary = out_dir / "spiral-summary.png"
    _save(fig, summary)
    plt.close(fig)
    return [panels, summary]


def _save(fig: object, path: Path) -> None:
    from mqoe.results import atomic_write

    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))  # type: ignore[attr-defined]


def _markdown_table(frame: pd.DataFrame) -> str:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.0f}" if abs(value) >= 10 else f"{value:.3f}"
        return str(value)

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |"]
    lines.append("|" + "---|" * len(frame.columns))
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines)


def summary_markdown(results: list[tuple[Case, RunRecord]], quick: bool) -> str:
    table = pd.DataFrame(
        [
            {"case": case.label, **{k: record.metrics.get(k) for k in METRICS}}
            for case, record in results
        ]
    )
    checks = "\n".join(f"- [{'x' if ok else ' '}] {text}" for text, ok in shape_checks(results))
    return (
        f"# downward-spiral{' (quick)' if quick else ''}\n\n"
        f"Profile {PROFILE}, seed {SEED}. Rates in kbit/s, averaged after a 60 s settling "
        "time in each phase.\n\n"
        f"{_markdown_table(table)}\n\n## The study's shape\n\n{checks}\n"
    )


class DownwardSpiral(Reproduction[Case]):
    name = "downward-spiral"
    title = (
        "Confused, Timid, and Unstable: video rate collapse under a competing TCP flow "
        "(IMC 2012, CS244)"
    )

    def plan(self, quick: bool) -> list[PlannedRun[Case]]:
        """One ``spiral`` run per case."""
        return [PlannedRun(case, "spiral", PROFILE, SEED, case.overrides(quick)) for case in CASES]

    def write(self, results: list[tuple[Case, RunRecord]], out_dir: Path, quick: bool) -> Path:
        path = write_outputs(
            out_dir,
            metric_rows(results),
            ("summary.md", summary_markdown(results, quick)),
            [
                ComparisonRow.shape("shape", text, ok, source=CITATIONS["downward-spiral"].short)
                for text, ok in shape_checks(results)
            ],
        )
        plot(results, out_dir)
        return path
