"""The benchmarks live in bench/ (run as scripts, ``python bench/run.py``): their modules
import each other as top-level modules, so the tests see bench/ on the path too."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
