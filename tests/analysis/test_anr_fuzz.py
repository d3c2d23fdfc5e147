"""The shared mutation fuzzer on the pipeline ``mqoe analyze anr`` runs (parse, summarise,
cluster, report): mutants of every input variant the analyser reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mqoe.analysis.anr import analyze, load_events
from mqoe.generators.anr.degraded import (
    synth_native_only,
    synth_waiting_channels,
    synth_xcrash_tombstone,
)
from mqoe.generators.anr.event import synth_anr
from tests.fuzzing import DEEP_INPUTS, QUICK_INPUTS, fuzz


def _seeds() -> list[bytes]:
    rng = np.random.default_rng(2024)
    texts = [
        synth_anr(rng, "wam", noise_threads=2)[0],
        synth_anr(rng, "lock_contention", variant="watchdog_ams", noise_threads=2)[0],
        synth_anr(rng, "low_memory", noise_threads=2, kernel_stacks=True)[0],
        synth_xcrash_tombstone(rng, noise_threads=2)[0],
        synth_waiting_channels(rng, n_threads=12)[0],
        synth_waiting_channels(rng, n_threads=6, frozen=True)[0],
        synth_native_only(rng, n_threads=4)[0],
    ]
    return [t.encode("utf-8") for t in texts]


def _pipeline(path: Path) -> None:
    """What ``mqoe analyze anr FILE`` does, minus the printing."""
    loaded = load_events([path], workers=1)
    report = analyze(loaded.events, threshold=0.95, method="fast", k=3)
    assert len(report.tables["events"]) == 1 == report.tables["clusters"]["size_events"].sum()


def test_fuzz_quick(tmp_path: Path) -> None:
    counts = fuzz(_pipeline, _seeds(), tmp_path, QUICK_INPUTS, seed=1)
    assert counts["accepted"] > 0 and counts["user_errors"] > 0


@pytest.mark.slow
def test_fuzz_deep(tmp_path: Path) -> None:
    counts = fuzz(_pipeline, _seeds(), tmp_path, DEEP_INPUTS, seed=2)
    assert counts["accepted"] > 0 and counts["user_errors"] > 0
