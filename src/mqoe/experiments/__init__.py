"""Reproductions of published works, one module per work.

Each is a :class:`~mqoe.experiments.reproduction.Reproduction`: it declares the runs its
figures need (a plan the sweep engine runs into ``OUT/results``, resumable, failures
recorded), the published values it is compared against (``published/<work>.toml``), and
writes ``metrics.csv`` (columns ``figure,profile,condition,metric,value,
unit``; see :mod:`mqoe.results.metrics_csv`) plus figures into its output directory.
The registry is explicit: a new work is one line in :data:`EXPERIMENTS`.
"""

from __future__ import annotations

from typing import Any

from mqoe.experiments.reproduction import Reproduction

Experiment = Reproduction[Any]


def _registry() -> dict[str, Experiment]:
    from mqoe.experiments.aging_glitching import AgingGlitching
    from mqoe.experiments.coal_not_diamonds import CoalNotDiamonds
    from mqoe.experiments.downward_spiral import DownwardSpiral
    from mqoe.experiments.gpu_buffers import GpuBuffers
    from mqoe.experiments.netpis import NetPis
    from mqoe.experiments.pressure_meets_network import PressureMeetsNetwork

    return {
        experiment.name: experiment
        for experiment in (
            DownwardSpiral(),
            CoalNotDiamonds(),
            GpuBuffers(),
            AgingGlitching(),
            NetPis(),
            PressureMeetsNetwork(),
        )
    }


EXPERIMENTS: dict[str, Experiment] = _registry()

__all__ = ["EXPERIMENTS", "Experiment"]
