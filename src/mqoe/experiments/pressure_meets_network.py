"""Study ``pressure-meets-network``: what memory pressure does to a video streamed over TCP.

No published work measured this; it joins two that did each half. The memory-pressure
study (Coal Not Diamonds, CoNEXT 2022) played video from a LAN that was never the
bottleneck; the downward-spiral study (Huang et al., IMC 2012) streamed over a shared
bottleneck on a host whose CPU and memory never mattered. Here the Nokia 1 of the first
streams over the Wi-Fi/TCP path of the second (scenario ``video-stream``), so the ABR
rule's choice sets what decoding and the source buffer cost under memory pressure, and
the phone's CPU, stalled by reclaim, processes the packets and reads the socket.

Grid: pressure state (normal / moderate / critical; quick: normal / critical) × network
(``fast``: a 50 Mbit/s access link alone; ``shared``: 8 Mbit/s with a competing bulk
download on another station; ``background``, full run only: the same download by a
background app on the phone itself) × ABR rule (``throughput``: the network-only rate rule;
``bba``: buffer-based; ``bba+memory-aware``: BBA capped one resolution step per trim
level, the memory-pressure study's proposal), over seeds. Outputs in OUT_DIR:
``metrics.csv`` (figure ``pressure-meets-network``; every metric as a mean over seeds,
crashes as the share of runs that crashed), ``pressure-meets-network.png`` (chosen
bitrate, frame drops and rebuffering per cell), ``summary.md`` and ``comparison.csv``
(the expectations each study's findings imply, checked on the simulated numbers, not
imposed), and the runs under ``results/``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mqoe.experiments.citations import CITATIONS
from mqoe.experiments.outputs import save_figure, write_outputs
from mqoe.experiments.reproduction import PlannedRun, Reproduction
from mqoe.metrics.units import unit_of
from mqoe.results import MetricRow
from mqoe.results.comparison import ComparisonRow
from mqoe.results.store import RunRecord

NAME = "pressure-meets-network"
PROFILE = "nokia-1"  # the memory-pressure study's low-end phone
PRESSURES = ("normal", "moderate", "critical")
QUICK_PRESSURES = ("normal", "critical")
NETWORKS: dict[str, dict[str, str]] = {
    "fast": {"bottleneck_mbps": "50", "competitor": "none"},
    "shared": {"bottleneck_mbps": "8", "competitor": "station"},
    # The competitor is a background app's download on the phone itself: its packets and
    # reads cost this phone's CPU, its queued data this phone's memory.
    "background": {"bottleneck_mbps": "8", "competitor": "phone"},
}
QUICK_NETWORKS = ("fast", "shared")
RULES: dict[str, dict[str, str]] = {
    "throughput": {"rule": "throughput"},
    "bba": {"rule": "bba"},
    "bba+memory-aware": {"rule": "bba", "adapt": "resolution"},
}
SEEDS = (1, 2)
QUICK_SEEDS = (1,)
# Per-cell means over seeds, in this order in metrics.csv and the summary.
METRICS = (
    "mean_bitrate_kbps",
    "frame_drop_pct",
    "rebuffer_s",
    "crash_pct",
    "segment_throughput_kbps",
    "sock_peak_kb",
    "softirq_cpu_s",
    "kswapd_cpu_s",
    "switch_count",
)


@dataclass(frozen=True)
class Cell:
    pressure: str
    network: str
    rule: str

    @property
    def condition(self) -> dict[str, str]:
        return {"pressure": self.pressure, "network": self.network, "rule": self.rule}

    def overrides(self, quick: bool) -> dict[str, str]:
        out = {"pressure": self.pressure} | NETWORKS[self.network] | RULES[self.rule]
        if quick:  # a shorter set-up and playback; the pressure state is still built
            out |= {"duration_s": "40", "setup_s": "30"}
        return out


def cells(quick: bool) -> list[Cell]:
    pressures = QUICK_PRESSURES if quick else PRESSURES
    networks = QUICK_NETWORKS if quick else tuple(NETWORKS)
    return [Cell(p, n, r) for p in pressures for n in networks for r in RULES]


def summary_table(results: list[tuple[Cell, RunRecord]]) -> pd.DataFrame:
    """One row per cell: each metric's mean over the cell's seeds (crashes: % of runs)."""
    rows: dict[Cell, list[dict[str, float]]] = {}
    for cell, record in results:
        m = record.metrics
        values = {k: _number(m.get(k)) for k in METRICS if k != "crash_pct"}
        values["crash_pct"] = 100.0 if m.get("crashed") else 0.0
        rows.setdefault(cell, []).append(values)
    table = []
    for cell, runs in rows.items():
        means = {k: sum(r[k] for r in runs) / len(runs) for k in METRICS}
        table.append({**cell.condition, "runs": len(runs), **means})
    return pd.DataFrame(table)


def _number(value: object) -> float:
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, int | float) else math.nan


def metric_rows(table: pd.DataFrame) -> list[MetricRow]:
    rows = []
    for row in table.itertuples(index=False):
        condition = {k: str(getattr(row, k)) for k in ("pressure", "network", "rule")}
        for metric in METRICS:
            value = float(getattr(row, metric))
            rows.append(MetricRow(NAME, PROFILE, condition, metric, value, unit_of(metric)))
    return rows


def _cell(table: pd.DataFrame, pressure: str, network: str, rule: str) -> pd.Series:
    hit = table[
        (table["pressure"] == pressure) & (table["network"] == network) & (table["rule"] == rule)
    ]
    return hit.iloc[0]


def shape_checks(table: pd.DataFrame) -> list[tuple[str, str, bool]]:
    """(source, expectation, met): what each study's findings imply for the joined set-up."""
    worst = table["pressure"].iloc[-1]  # critical (the grid's last pressure)
    coal, spiral = CITATIONS["coal-not-diamonds"].short, CITATIONS["downward-spiral"].short
    calm = _cell(table, "normal", "fast", "throughput")
    hit = _cell(table, worst, "fast", "throughput")
    bba = _cell(table, worst, "fast", "bba")
    aware = _cell(table, worst, "fast", "bba+memory-aware")
    alone = _cell(table, "normal", "fast", "throughput")
    shared = _cell(table, "normal", "shared", "throughput")
    return [
        (
            coal,
            f"{worst} pressure crashes or drops more of the network-only rule's high "
            f"bitrates on the fast network (runs crashed {calm['crash_pct']:.0f} → "
            f"{hit['crash_pct']:.0f} %, frames dropped {calm['frame_drop_pct']:.1f} → "
            f"{hit['frame_drop_pct']:.1f} %)",
            hit["crash_pct"] > calm["crash_pct"] or hit["frame_drop_pct"] > calm["frame_drop_pct"],
        ),
        (
            coal,
            f"the memory-aware cap under {worst} pressure: no more drops or crashes than "
            f"BBA alone (drops {aware['frame_drop_pct']:.2f} vs {bba['frame_drop_pct']:.2f} "
            f"%, crashes {aware['crash_pct']:.0f} vs {bba['crash_pct']:.0f} %), at a bitrate "
            f"no higher ({aware['mean_bitrate_kbps']:.0f} vs {bba['mean_bitrate_kbps']:.0f} "
            "kbit/s)",
            aware["frame_drop_pct"] <= bba["frame_drop_pct"]
            and aware["crash_pct"] <= bba["crash_pct"]
            and aware["mean_bitrate_kbps"] <= bba["mean_bitrate_kbps"],
        ),
        (
            spiral,
            "a competitor on the bottleneck lowers the throughput rule's bitrate "
            f"({alone['mean_bitrate_kbps']:.0f} alone → {shared['mean_bitrate_kbps']:.0f} "
            "kbit/s shared)",
            shared["mean_bitrate_kbps"] < alone["mean_bitrate_kbps"],
        ),
    ]


def _markdown_table(table: pd.DataFrame) -> str:
    columns = ["pressure", "network", "rule", "runs", *METRICS]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in table[columns].itertuples(index=False):
        cells_ = [v if isinstance(v, str) else f"{v:.3g}" for v in row]
        lines.append("| " + " | ".join(map(str, cells_)) + " |")
    return "\n".join(lines)


def summary_markdown(table: pd.DataFrame, quick: bool, seeds: int) -> str:
    checks = "\n".join(
        f"- [{'x' if ok else ' '}] {text} ({source})" for source, text, ok in shape_checks(table)
    )
    return (
        f"# {NAME}{' (quick)' if quick else ''}\n\n"
        f"Profile {PROFILE}, {seeds} seed(s) per cell; means over seeds, crashes as the "
        "share of runs that crashed. Networks: fast = a 50 Mbit/s access link alone; "
        "shared = 8 Mbit/s with a bulk download to another station; background = the "
        "same download by a background app on this phone. Rules: throughput "
        "(network-only), bba (buffer-based), bba+memory-aware (BBA capped one resolution "
        "step per trim level).\n\n"
        f"{_markdown_table(table)}\n\n"
        "## What each study's findings imply here\n\n"
        "No published work measured this set-up; these are the expectations the two "
        "studies' findings carry over, checked on the simulated numbers.\n\n"
        f"{checks}\n"
    )


def plot(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("mean_bitrate_kbps", "chosen bitrate (kbit/s)"),
        ("frame_drop_pct", "frames dropped (%)"),
        ("rebuffer_s", "rebuffering (s)"),
    )
    networks = list(dict.fromkeys(table["network"]))
    rules = list(RULES)
    pressures = list(dict.fromkeys(table["pressure"]))
    fig, axes = plt.subplots(len(networks), len(panels), figsize=(14, 3.4 * len(networks)))
    width = 0.8 / len(rules)
    for i, network in enumerate(networks):
        for j, (metric, label) in enumerate(panels):
            ax = axes[i][j]
            for k, rule in enumerate(rules):
                xs, ys, crashed = [], [], []
                for x, pressure in enumerate(pressures):
                    row = _cell(table, pressure, network, rule)
                    xs.append(x + (k - (len(rules) - 1) / 2) * width)
                    ys.append(float(row[metric]))
                    crashed.append(float(row["crash_pct"]) > 0)
                bars = ax.bar(xs, ys, width, label=rule, color=f"C{k}")
                for bar, hit in zip(bars, crashed, strict=True):
                    if hit:  # a run of this cell crashed: hatch it
                        bar.set_hatch("xx")
                        bar.set_edgecolor("black")
            ax.set_xticks(range(len(pressures)), pressures)
            ax.set_ylim(bottom=0, top=max(1.0, float(table[metric].max()) * 1.1))
            ax.set_title(f"{network} network: {label}", fontsize=10)
    axes[0][0].legend(fontsize=8, title="ABR rule (hatched: crashed)", title_fontsize=8)
    fig.suptitle(
        f"Memory pressure meets the network: {PROFILE} streaming over Wi-Fi/TCP "
        f"(set-ups of {CITATIONS['coal-not-diamonds'].short} and "
        f"{CITATIONS['downward-spiral'].short})"
    )
    fig.tight_layout()
    paths = save_figure(fig, out_dir / NAME)
    plt.close(fig)
    return paths


class PressureMeetsNetwork(Reproduction[Cell]):
    name = NAME
    title = (
        "Pressure meets network: memory pressure and a shared Wi-Fi/TCP bottleneck on one "
        "phone's video (mqoe's cross-resource study)"
    )

    def plan(self, quick: bool) -> list[PlannedRun[Cell]]:
        """Every cell × seed: one ``video-stream`` run each."""
        return [
            PlannedRun(cell, "video-stream", PROFILE, seed, cell.overrides(quick))
            for cell in cells(quick)
            for seed in (QUICK_SEEDS if quick else SEEDS)
        ]

    def write(self, results: list[tuple[Cell, RunRecord]], out_dir: Path, quick: bool) -> Path:
        table = summary_table(results)
        seeds = len(QUICK_SEEDS if quick else SEEDS)
        path = write_outputs(
            out_dir,
            metric_rows(table),
            ("summary.md", summary_markdown(table, quick, seeds)),
            [
                ComparisonRow.shape("expected", text, ok, source=source)
                for source, text, ok in shape_checks(table)
            ],
        )
        plot(table, out_dir)
        return path
