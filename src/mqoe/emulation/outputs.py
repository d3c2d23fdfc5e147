"""What ``mqoe testbed spiral`` writes: the simulator's series and metrics, and the
testbed's own health numbers (delay-line error and CPU, qdisc counters, idle RTT)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from mqoe.emulation.spiral import RealRun, metric_rows
from mqoe.results import atomic_write_text, write_metrics_csv
from mqoe.results.store import RunRecord

HEALTH = ("idle_rtt_ms", "delay_line_cpu_fraction", "delay_line_error_median_ms",
          "delay_line_error_p99_ms", "delay_line_error_max_ms")  # fmt: skip


def write_run(out_dir: Path, record: RunRecord, figure: str, real: RealRun | None) -> Path:
    """metrics.csv, segments.csv, timeseries.csv, run.json, summary.md and a figure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = write_metrics_csv(out_dir / "metrics.csv", metric_rows(record, figure))
    for name, table in record.tables.items():
        atomic_write_text(out_dir / f"{name}.csv", table.to_csv(index=False))
    info: dict[str, Any] = {
        "figure": figure,
        "params": dict(record.params),
        "metrics": {k: _json_number(v) for k, v in record.metrics.items()},
        "wall_time_s": record.wall_time_s,
    }
    if real is not None:
        info |= {"qdisc": real.qdisc, "delay_line": real.delay_line,
                 "receiver_applied": real.receiver_applied, "tcp_counters": real.tcp_counters,
                 "bottleneck": real.bottleneck}  # fmt: skip
    atomic_write_text(out_dir / "run.json", json.dumps(info, indent=1, default=str))
    atomic_write_text(out_dir / "summary.md", summary_markdown(record, figure))
    plot(record, figure, out_dir / figure)
    return path


def _json_number(value: object) -> object:
    return None if isinstance(value, float) and math.isnan(value) else value


def summary_markdown(record: RunRecord, figure: str) -> str:
    m = record.metrics
    lines = [f"# {figure}", "", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {_cell(v)} |" for k, v in m.items()]
    params = ", ".join(f"{k}={v}" for k, v in record.params.items())
    return "\n".join([*lines, "", f"Parameters: {params}", ""])


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.0f}"
    return str(value)


def plot(record: RunRecord, figure: str, stem: Path) -> list[Path]:
    """Chosen rate, video throughput (5-segment average) and the competitor's, over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mqoe.experiments.outputs import save_figure

    segments, series = record.tables["segments"], record.tables["timeseries"]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.step(segments["request_s"], segments["rate_kbps"], where="post", label="video rate")
    ax.plot(segments["done_s"], segments["throughput_kbps"].rolling(5, min_periods=1).mean(),
            lw=0.9, label="video throughput (5-seg. avg)")  # fmt: skip
    ax.plot(series["t_s"], series["competitor_kbps"].rolling(5, min_periods=1).mean(),
            lw=0.7, label="competitor throughput (5 s avg)")  # fmt: skip
    ax.axvline(float(str(record.params["competitor_start_s"])), color="grey", ls=":", lw=0.8)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("kbit/s")
    ax.set_ylim(0, 5500)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title(f"{figure}: buffer {record.params['buffer_kbit']} kbit, {record.params['mode']}")
    fig.tight_layout()
    paths = save_figure(fig, stem)
    plt.close(fig)
    return paths
