"""Big captures for the big-input benchmarks (:func:`write_large_capture`): generated
blocks repeated with shifted times, written at disk speed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from mqoe.generators.systrace.trace import synth_systrace
from mqoe.results.atomic import atomic_write

# -- a big capture for benchmarks ---------------------------------------------------------

_LARGE_BLOCK_S = 2.0  # one generated block; the file repeats blocks
_LARGE_TEMPLATES = 2  # distinct blocks, alternated
_SECONDS = re.compile(r"\] (?:\S{4,5} )?( *\d+)\.\d{6}: ")
_MARK_TID = re.compile(r"-(\d+)\s+(?:\([^)]*\)\s+)?\[\d+\].*?: tracing_mark_write: ([BE])")
_PLACEHOLDER = b"\x00"


def write_large_capture(path: Path, target_bytes: int, seed: int = 0) -> None:
    """Write an atrace text capture of about ``target_bytes`` (at least one block) to
    ``path``, fast (hundreds of MB/s): a few :func:`synth_systrace` blocks of
    ``_LARGE_BLOCK_S`` s, cut where no trace-marker slice is open, repeated with their
    timestamps shifted by whole seconds so every CPU's clock keeps going forward. The
    same threads go on from block to block (as in a long capture), and each block's
    frames are complete, so the parser sees one long, valid session."""
    blocks = [
        _template(np.random.default_rng(np.random.SeedSequence([seed, k])))
        for k in range(_LARGE_TEMPLATES)
    ]
    header = (
        b"TRACE:\n# tracer: nop\n#\n"
        b"#           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION\n"
        b"#              | |        |      |   ||||       |         |\n"
    )

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(header)
            written, second, k = len(header), 1_000, 0
            while k == 0 or written < target_bytes:
                groups, span_s = blocks[k % len(blocks)]
                for offset, chunk in groups:
                    data = chunk.replace(_PLACEHOLDER, b"%5d" % (second + offset))
                    f.write(data)
                    written += len(data)
                second += span_s
                k += 1

    atomic_write(path, write)


def _template(rng: np.random.Generator) -> tuple[list[tuple[int, bytes]], int]:
    """One block as (seconds offset, lines of that second with the seconds field left
    as a placeholder) groups, and its span in whole seconds."""
    text, _ = synth_systrace(rng, duration_s=_LARGE_BLOCK_S, atrace_header=False)
    lines = _balanced(line for line in text.splitlines(keepends=True) if line[:1] != "#")
    groups: list[tuple[int, bytes]] = []
    first = current = -1
    run: list[str] = []
    for line in lines:
        m = _SECONDS.search(line)
        if m is None:
            continue
        second = int(m.group(1))
        first = second if first < 0 else first
        if second != current and run:
            groups.append((current - first, "".join(run).encode()))
            run = []
        current = second
        run.append(line[: m.start(1)] + "\x00" + line[m.end(1) :])
    groups.append((current - first, "".join(run).encode()))
    return groups, current - first + 1


def _balanced(lines: Iterable[str]) -> list[str]:
    """The lines up to the last point where no thread has a B marker open."""
    kept: list[str] = []
    depth: dict[str, int] = {}
    open_slices = cut = 0
    for line in lines:
        kept.append(line)
        m = _MARK_TID.search(line)
        if m is not None:
            tid, kind = m.groups()
            if kind == "B":
                depth[tid] = depth.get(tid, 0) + 1
                open_slices += 1
            elif depth.get(tid, 0) > 0:
                depth[tid] -= 1
                open_slices -= 1
        if open_slices == 0:
            cut = len(kept)
    return kept[:cut]
