"""``mqoe analyze examples DIR``: one synthetic input per analyser, to try them on.

Writes files in the exact formats the analysers read — made by the same generators the
tests use (``synth_*``), so every README example runs on a fresh install before any
phone is at hand. A ``README.md`` in ``DIR`` says they are synthetic (the analysers
skip ``*.md``); they never stand in for real data. The directory is built next to
``DIR`` and renamed into place, so an existing ``DIR`` is never touched and an
interrupted run leaves nothing half-written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mqoe.cli.console import out
from mqoe.errors import UserError

HELP = "write one synthetic input per analyser (gfxinfo, systrace, layout, memlog, anr, pcap)"

# What a user runs on each example (printed at the end, mirrored in the README).
COMMANDS = (
    "mqoe analyze gfxinfo {d}/gfxinfo/dump.txt",
    "mqoe analyze systrace {d}/systrace/trace.txt --clusters 0-1:little,2-3:big",
    "mqoe analyze layout {d}/layout/window_dump.xml",
    "mqoe analyze memlog {d}/memlog/",
    "mqoe analyze anr {d}/anr/",
    "mqoe analyze pcap {d}/pcap/isolation.pcap --port 443",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, help="directory to create (must not exist)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--anr-files", type=int, default=200, metavar="N", help="ANR dumps to write (200)"
    )


def write_examples(directory: Path, seed: int = 0, anr_files: int = 200) -> None:
    """Fill ``directory`` (existing, empty) with one synthetic input per analyser."""
    import numpy as np

    from mqoe.analysis.layout import layout_to_xml
    from mqoe.generators.anr import write_synth_dir
    from mqoe.generators.gfxinfo import synth_gfxinfo
    from mqoe.generators.layout import synth_layout
    from mqoe.generators.memlog import synthesize_config, synthesize_phone
    from mqoe.generators.pcap import synth_pcap
    from mqoe.generators.systrace import synth_systrace

    def rng(stream: int) -> np.random.Generator:
        return np.random.default_rng([seed, stream])

    def write(relative: str, text: str) -> None:
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    write(
        "README.md",
        "# Synthetic examples written by `mqoe analyze examples`\n\n"
        f"Made by mqoe's test generators (seed {seed}), in the real file formats; not data\n"
        "from any phone. Try:\n\n" + "".join(f"    {c.format(d='.')}\n" for c in COMMANDS),
    )
    gfx, _ = synth_gfxinfo(rng(1), packages=("com.example.mail", "com.example.news"))
    write("gfxinfo/dump.txt", gfx)
    trace, _ = synth_systrace(rng(2), duration_s=2.0, n_cpus=4, n_little=2)
    write("systrace/trace.txt", trace)
    write("layout/window_dump.xml", layout_to_xml(synth_layout(rng(3)), package="com.example.mail"))
    # 60 logged hours hold the > 10 interactive hours the analyser's cleaning rule keeps.
    for k, mem_gib in enumerate((1, 2, 4), start=1):
        name = f"phone{k:02d}"
        total = mem_gib << 30
        write(f"memlog/{name}/{name}.log", synthesize_phone(rng(10 + k), 60.0, total))
        write(f"memlog/{name}/{name}.conf", synthesize_config(total))
    write_synth_dir(directory / "anr", anr_files, seed)
    (directory / "pcap").mkdir()
    synth_pcap(directory / "pcap" / "isolation.pcap", seed=seed)


def run(args: argparse.Namespace) -> int:
    import shutil  # here, not at the top: `mqoe --help` imports this module
    import tempfile

    target: Path = args.dir
    if target.exists() or target.is_symlink():
        raise UserError(f"{target}: already exists; give a new directory (nothing was written)")
    if args.seed < 0:
        raise UserError(f"--seed must not be negative, got {args.seed}")
    if args.anr_files < 1:
        raise UserError(f"--anr-files must be at least 1, got {args.anr_files}")
    parent = target.parent
    if not parent.is_dir():
        raise UserError(f"{parent}: no such directory")
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
    except OSError as exc:
        raise UserError(f"{parent}: cannot write here ({exc.strerror})") from None
    try:
        write_examples(staging, args.seed, args.anr_files)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise UserError(
            f"{target}: could not write the examples ({exc}); nothing was kept"
        ) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    out.print(f"wrote synthetic examples to {target}/ — try:", markup=False)
    for command in COMMANDS:
        out.print("  " + command.format(d=target), markup=False)
    return 0
