"""Regenerate the golden ``--quick`` metrics of every reproduction (``make goldens``).

Run it deliberately, after a change meant to move results; commit the new files with a
message that says which metrics moved and why. ``make test`` compares against them
(tests/golden/test_goldens.py).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from mqoe.experiments import EXPERIMENTS

GOLDEN = Path(__file__).resolve().parent


def golden_path(work: str) -> Path:
    return GOLDEN / f"{work}.metrics.csv"


def main(works: list[str]) -> int:
    unknown = [w for w in works if w not in EXPERIMENTS]
    if unknown:
        print(f"unknown work {unknown[0]!r}; available: {', '.join(sorted(EXPERIMENTS))}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        for work in works or sorted(EXPERIMENTS):
            metrics = EXPERIMENTS[work].reproduce(Path(tmp) / work, quick=True)
            shutil.copyfile(metrics, golden_path(work))
            print(f"{work}: wrote {golden_path(work).relative_to(Path.cwd())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
