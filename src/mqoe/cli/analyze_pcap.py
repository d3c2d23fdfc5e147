"""``mqoe analyze pcap``: TCP sequence-number growth per flow, the measure NetPIS (2015) was
judged by."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqoe.cli.console import LazyProgress, jsonable, out, print_frame
from mqoe.errors import UserError

if TYPE_CHECKING:
    from mqoe.analysis.pcap import PcapReport

HELP = "packet capture (pcap/pcapng): bytes received per TCP flow over time"

_PLOTTED_FLOWS = 8  # the largest flows; more lines make the figure unreadable


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0..65535, got {text!r}")
    return value


def _bin_ms(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e9:
        raise argparse.ArgumentTypeError(f"expected a bin width > 0 ms, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="pcap or pcapng capture (may be gzipped)")
    parser.add_argument(
        "--json", action="store_true", help="print summary and flows as JSON (series: --csv)"
    )
    parser.add_argument("--csv", type=Path, default=None, metavar="DIR", help="write CSV tables")
    parser.add_argument("--plot", type=Path, default=None, metavar="DIR", help="write PNG plots")
    parser.add_argument("--bin-ms", type=_bin_ms, default=100.0, help="time-series bin (ms)")
    parser.add_argument("--port", type=_port, default=None, help="keep TCP packets of this port")


def run(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from mqoe.analysis.pcap import read_capture
    from mqoe.results import ensure_output_dir, write_output

    outputs = [(o, f) for o, f in (("--csv", args.csv), ("--plot", args.plot)) if f is not None]
    for option, folder in outputs:  # before any work: a bad folder costs nothing to find out
        ensure_output_dir(folder, option)
    progress = LazyProgress(f"reading {args.file.name}")
    try:
        report = read_capture(args.file, bin_ms=args.bin_ms, port=args.port, progress=progress)
    finally:
        progress.close()
    if outputs and report.flows.empty:
        raise UserError(_nothing_to_write(report, args.port, [o for o, _ in outputs]))
    if args.csv is not None:
        for name, frame in report.tables.items():
            write_output(args.csv / f"{name}.csv", frame.to_csv(index=False).encode("utf-8"))
    if args.plot is not None:
        _plot(report, args.plot)
    summary = report.summary()
    if args.json:
        flows = report.flows.astype(object).where(report.flows.notna(), None)
        payload = {
            "summary": {k: jsonable(v) for k, v in summary.items()},
            "flows": [
                {str(k): jsonable(v) for k, v in row.items()}
                for row in flows.to_dict(orient="records")
            ],
        }
        print(json.dumps(payload, indent=2, default=str))
        return 0
    links = ", ".join(str(k) for k in summary["link_types"]) or "none"
    out.print(
        f"[bold]{escape(report.name)}[/bold] ({summary['format']}, link types {links}): "
        f"{summary['records']} packets, {summary['tcp_segments']} TCP segments used, "
        f"{summary['flows']} flows with data"
    )
    columns = [
        "flow", "label", "first_s", "last_s", "bytes_received", "retransmitted_bytes",
        "missed_bytes", "mean_throughput_mbps",
    ]  # fmt: skip
    if len(report.flows):
        print_frame(report.flows[columns], "table")
    if report.stats.skipped:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(report.stats.skipped.items()))
        out.print(f"skipped {report.stats.n_skipped} packets: {reasons}")
    if report.stats.payload_truncated:
        out.print(
            f"{report.stats.payload_truncated} packets cut by the snap length: "
            "payload lengths taken from their IP headers"
        )
    for label, folder in (("tables", args.csv), ("plots", args.plot)):
        if folder is not None:
            out.print(f"{label} written to {escape(str(folder))}")
    return 0


def _nothing_to_write(report: PcapReport, port: int | None, options: list[str]) -> str:
    """Why a capture left no flow to tabulate or plot, in one line."""
    stats = report.stats
    kept = f" with --port {port}" if port is not None else ""
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(stats.skipped.items())) or "none"
    return (
        f"{report.name}: no TCP flow carried data{kept} ({stats.records} packets, "
        f"{stats.tcp_segments} TCP segments used; skipped: {skipped}): nothing to write for "
        + " or ".join(options)
    )


def _plot(report: PcapReport, folder: Path) -> None:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mqoe.results import write_output

    flows = report.flows.nlargest(_PLOTTED_FLOWS, "bytes_received")
    fig, ax = plt.subplots(figsize=(7, 4))
    try:
        for row in flows.itertuples(index=False):
            series = report.series[report.series["flow"] == row.flow]
            t: list[Any] = [row.first_s, *series["t_s"]]
            received: list[Any] = [0, *(series["bytes_received"] / 1e6)]
            ax.step(t, received, where="post", label=f"{row.flow}: {row.label}")
        ax.set_xlabel("time since the first packet (s)")
        ax.set_ylabel("bytes received (MB, sequence-number growth)")
        # a "$" in a file name would start matplotlib's mathtext
        title = Path(report.name).name.replace("$", r"\$")
        ax.set_title(f"TCP sequence-number growth: {title}", fontsize=9)
        ax.grid(alpha=0.3)
        if len(flows):
            ax.legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=120)
    finally:
        plt.close(fig)
    write_output(folder / "seq_growth.png", buffer.getvalue())
