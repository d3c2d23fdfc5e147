"""``mqoe calibrate lz4``: measure LZ4 on synthetic GPU-buffer contents (GPU-buffer study)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from mqoe.cli.console import out
from mqoe.errors import UserError

if TYPE_CHECKING:
    from mqoe.device.gpu_content import Lz4Table

HELP = "measure LZ4 ratio and host speed on synthetic GPU buffers (GPU-buffer compression)"
DESCRIPTION = """\
Compress synthetic GPU-buffer pages (4 KiB of RGBA pixels: zero, flat UI, text, photo,
noise) with the real lz4 library, page by page as zram does, and record per class the
stored-size quantiles and this host's compress/decompress speed (MB/s of uncompressed
data, 1 MB = 10^6 bytes). The table is written as JSON.

Simulations never run the codec: they read the packaged table
(mqoe/device/profiles/lz4_table.json, made with this command's defaults). A device
profile turns the table's host time into phone CPU work with a documented factor,
gpu.lz4_cycles_per_host_ns (reference cycles per host nanosecond), fitted so 100 MB
decompresses in ~575 ms on the Nexus 5 as in the GPU-buffer compression paper; if you use
your own table, refit that factor for it.
"""

# An illustrative buffer mix for the summary line, mostly zero pages as the paper found;
# its LZ4 ratio lands near the paper's 25.4 % mean. Not a measurement.
TYPICAL_MIX = {"zero": 0.45, "flat": 0.25, "text": 0.10, "photo": 0.15, "noise": 0.05}
MAX_PAGES = 1 << 15  # 128 MiB of pages per class: far more than any quantile needs
HINT_BYTES = 100 * 10**6  # the paper's FAIR cap: ~100 MB took 575 ms on its phone


def _count(flag: str, text: str, minimum: int, maximum: int | None = None) -> int:
    """``text`` as an integer in minimum..maximum, else a one-line UserError."""
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        what = "a positive" if minimum > 0 else "a non-negative"
        raise UserError(f"{flag} {text!r}: expected {what} integer")
    if maximum is not None and value > maximum:
        raise UserError(f"{flag} {text!r}: at most {maximum}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pages", default="2048", help="pages per class (2048)")
    parser.add_argument("--seed", default="0", help="content seed, a non-negative integer (0)")
    parser.add_argument("--repeats", default="3", help="timed passes, the best kept (3)")
    parser.add_argument(
        "--out", type=Path, default=Path("lz4-table.json"), help="JSON table (lz4-table.json)"
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing --out file")


def run(args: argparse.Namespace) -> int:
    from mqoe.device.gpu_content import calibrate, save_table

    pages = _count("--pages", args.pages, 1, MAX_PAGES)
    seed = _count("--seed", args.seed, 0)
    repeats = _count("--repeats", args.repeats, 1)
    path: Path = args.out
    _check_destination(path, args.force)
    table = calibrate(pages, seed, repeats)
    save_table(table, path)
    _print_table(table)
    out.print(_mix_hint(table), markup=False)
    out.print(f"{table.host}; {table.lz4_version}", markup=False)
    out.print(f"wrote {path}", markup=False)
    return 0


def _check_destination(path: Path, force: bool) -> None:
    if path.is_dir():
        raise UserError(f"--out {path}: is a directory; name a file")
    if path.exists() and not force:
        raise UserError(f"--out {path}: file exists; pass --force to overwrite it")
    if not path.parent.is_dir():
        raise UserError(f"--out {path}: directory {path.parent} does not exist")
    from mqoe.results import ensure_output_dir

    ensure_output_dir(path.parent, "--out")  # exists, but can a file be made there?


def _print_table(table: Lz4Table) -> None:
    import numpy as np
    from rich.table import Table

    from mqoe.device.gpu_content import N_QUANTILES

    probs = np.linspace(0, 1, N_QUANTILES)
    rich_table = Table(
        title=f"LZ4 on {table.pages_per_class} pages per class (seed {table.seed})",
        title_justify="left",
        caption="stored bytes per 4096-byte page; MB/s of uncompressed data, 1 MB = 1e6 B",
        caption_justify="left",
    )
    for column in ("class", "ratio %", "p50 B", "p90 B", "compress MB/s", "decompress MB/s"):
        rich_table.add_column(column, justify="left" if column == "class" else "right")
    for name, stats in table.classes.items():
        p50, p90 = np.interp([0.5, 0.9], probs, stats.size_quantiles)
        rich_table.add_row(
            name,
            f"{100 * stats.ratio:.1f}",
            f"{p50:.0f}",
            f"{p90:.0f}",
            f"{stats.compress_mb_s:,.0f}",
            f"{stats.decompress_mb_s:,.0f}",
        )
    out.print(rich_table)


def _mix_hint(table: Lz4Table) -> str:
    import numpy as np

    from mqoe.device.gpu_content import CONTENT_CLASSES, PAGE_BYTES

    pages = round(HINT_BYTES / PAGE_BYTES)
    counts = [round(TYPICAL_MIX[name] * pages) for name in CONTENT_CLASSES]
    ids = np.repeat(np.arange(len(CONTENT_CLASSES)), counts)
    ratio = sum(TYPICAL_MIX[name] * table.classes[name].ratio for name in CONTENT_CLASSES)
    mix = ", ".join(f"{100 * TYPICAL_MIX[name]:g}% {name}" for name in CONTENT_CLASSES)
    ms = table.decompress_ns(ids) / 1e6
    return (
        f"100 MB of a typical mix ({mix}; LZ4 ratio {100 * ratio:.1f}%) would decompress "
        f"in {ms:.1f} ms on this host (the paper's Nexus 5: ~575 ms)"
    )
