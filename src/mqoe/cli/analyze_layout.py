"""``mqoe analyze layout``: view-hierarchy overdraw (redundant UI rendering, as in the
Android responsiveness study, MobiCom 2020)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from mqoe.cli.console import LazyProgress, err, jsonable, out, print_frame

if TYPE_CHECKING:
    from mqoe.analysis.layout import LayoutReport

HELP = (
    "view-hierarchy dump (uiautomator, Appium or Selendroid XML; JSON): node count, depth, "
    "GPU overdraw"
)

_SCREEN = re.compile(r"\s*(\d{1,7})\s*[x×X]\s*(\d{1,7})\s*")


def _screen(text: str) -> tuple[int, int]:
    match = _SCREEN.fullmatch(text)
    if match is None or 0 in (width := int(match.group(1)), height := int(match.group(2))):
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, got {text!r}")
    return width, height


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", type=Path, help="uiautomator dump, Appium/Selendroid page source, or JSON"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--csv", type=Path, default=None, metavar="DIR", help="write CSV tables")
    parser.add_argument("--plot", type=Path, default=None, metavar="DIR", help="write PNG plots")
    parser.add_argument(
        "--screen",
        type=_screen,
        default=None,
        metavar="WxH",
        help="screen size in px (default: the size the dump declares, or its full-window roots)",
    )


def run(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from mqoe.analysis.layout import analyze_layout, load_layout
    from mqoe.results import ensure_output_dir, write_output

    for option, folder in (("--csv", args.csv), ("--plot", args.plot)):
        if folder is not None:  # before any work: a bad folder costs nothing to find out
            ensure_output_dir(folder, option)
    progress = LazyProgress(f"reading {args.file.name}")
    try:
        layout = load_layout(args.file, progress=progress)
    finally:
        progress.close()
    report = analyze_layout(layout, args.screen)
    if args.csv is not None:
        for name, frame in report.tables.items():
            write_output(args.csv / f"{name}.csv", frame.to_csv(index=False).encode("utf-8"))
    if args.plot is not None:
        _plot(report, args.plot)
    if args.json:
        payload = {
            "summary": {k: jsonable(v) for k, v in report.summary().items()},
            "levels": report.levels().to_dict(orient="records"),
            "redundant_layers": _records(report.redundant_layers()),
            "nodes": _records(report.nodes()),
        }
        print(json.dumps(payload, indent=2, default=str))
        return 0
    summary = report.summary()
    out.print(
        f"[bold]{escape(layout.name)}[/bold] ({summary['format']}): {summary['nodes']} nodes, "
        f"depth {summary['depth']}, {summary['drawing_layers']} drawing layers, "
        f"screen {summary['screen_w_px']}x{summary['screen_h_px']} px "
        f"({summary['screen_source']})"
    )
    out.print(
        f"mean overdraw {summary['mean_overdraw']:.3g} paints/px (1.0 is ideal), "
        f"max {summary['max_draws']}; hidden paints {summary['hidden_draws_px']} px"
    )
    print_frame(report.levels(), "table")
    redundant = report.redundant_layers()
    if summary["redundant_layers"] is None:
        err.print("hidden pixels not computed: the hierarchy is too large for it")
    elif len(redundant):
        out.print(f"[bold]candidate redundant layers[/bold] ({len(redundant)}, first 20)")
        columns = ["node", "depth", "class", "resource_id", "area_px", "hidden_share"]
        print_frame(redundant[columns].head(20), "table")
    if layout.skipped:
        err.print(f"note: {layout.skipped} elements without bounds (toast messages) skipped")
    if layout.guessed:
        err.print(
            f"note: {layout.guessed} of {len(layout.nodes)} nodes carry no drawing flag; "
            "whether they draw is guessed from their class (a heuristic)"
        )
    for label, folder in (("tables", args.csv), ("plots", args.plot)):
        if folder is not None:
            out.print(f"{label} written to {escape(str(folder))}")
    return 0


def _records(frame: object) -> list[dict[str, object]]:
    import pandas as pd

    assert isinstance(frame, pd.DataFrame)
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return [{str(k): jsonable(v) for k, v in row.items()} for row in records]


def _plot(report: LayoutReport, folder: Path) -> None:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch

    from mqoe.analysis.layout import LEVELS
    from mqoe.results import write_output

    counts = report.stats.pixel_counts()
    level = np.minimum(counts, len(LEVELS) - 1)
    colours = [colour for _, _, colour in LEVELS]
    width, height = report.stats.screen
    aspect = height / max(width, 1)
    fig, ax = plt.subplots(figsize=(6.4, min(12.0, max(3.0, 3.4 * aspect + 1.2))))
    try:
        ax.imshow(
            level,
            cmap=ListedColormap(colours),
            norm=BoundaryNorm(np.arange(len(LEVELS) + 1) - 0.5, len(LEVELS)),
            extent=(0, width, height, 0),
            interpolation="nearest",
        )
        # a "$" in a file name would start matplotlib's mathtext
        title = Path(report.layout.name).name.replace("$", r"\$")
        ax.set_title(f"GPU overdraw: {title}", fontsize=9)
        ax.set_xlabel("x (px)")
        ax.set_ylabel("y (px)")
        shares = report.stats.level_shares
        handles = [
            Patch(facecolor=c, edgecolor="black", label=f"{n} ({shares[n]:.0%})")
            for n, _, c in LEVELS
        ]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    write_output(folder / "overdraw.png", buffer.getvalue())
