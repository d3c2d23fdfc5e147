"""CPU energy: power per operating point and idle state, integrated over a run.

A cluster's power table comes from, in order of preference:

1. the SoC's energy model (``busy_mw`` / ``idle_mw`` per core, ``cluster_busy_mw`` /
   ``cluster_idle_mw`` per cluster, in ``profiles/socs/<soc>.toml``);
2. the phone's own ``power_profile.xml`` (Android BatteryStats: mA per core at each
   speed and per active cluster, times the battery's nominal voltage);
3. the kernel's simple energy model from the devicetree's
   ``dynamic-power-coefficient`` (drivers/opp/of.c: P[mW] = dpc × V[mV]² × f[MHz] / 10⁹)
   when the SoC table has voltages.

A step the table does not list takes the nearest listed point at or above it. Energy
= Σ over cores of (time busy at each step × that step's core power + time idle × the
shallowest idle state's power) + Σ over clusters of (time with any core busy × the
cluster's power at the step + time all idle × its idle power). Off-line cores draw
nothing. Idle states are not chosen by residency (cpuidle's menu governor): idle time
is charged at the shallowest state, an upper bound. A cluster with no source has no
table, and a run's energy is then reported as missing, never as zero.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from mqoe.device.cpu.opp import OppTable
from mqoe.device.profiles.cpu_schema import ClusterPower, SocCluster


@dataclass(frozen=True)
class PowerTable:
    """One cluster's power at each OPP of its table (mW)."""

    core_busy_mw: tuple[float, ...]  # per core, per OPP
    core_idle_mw: float
    cluster_busy_mw: tuple[float, ...]  # per cluster, per OPP (0 when not modelled)
    cluster_idle_mw: float
    source: str  # "soc energy model" | "power_profile.xml" | "dynamic-power-coefficient"


def _aligned(
    points_khz: Sequence[int], values: Sequence[float], opp: OppTable
) -> tuple[float, ...]:
    """Each OPP's value: that of the nearest point at or above it (the top one above all)."""
    out = []
    for khz in opp.khz:
        i = min(bisect.bisect_left(points_khz, khz), len(points_khz) - 1)
        out.append(float(values[i]))
    return tuple(out)


def power_table(
    opp: OppTable,
    soc: SocCluster | None,
    power: ClusterPower | None,
    battery_voltage_v: float,
) -> PowerTable | None:
    """The cluster's table from the best available source (see the module docstring)."""
    if soc is not None and soc.busy_mw is not None:
        points = soc.em_khz if soc.em_khz is not None else soc.opp_khz
        zero = (0.0,) * len(opp.khz)
        cluster = soc.cluster_busy_mw
        return PowerTable(
            _aligned(points, soc.busy_mw, opp),
            float(soc.idle_mw[0]) if soc.idle_mw else 0.0,
            _aligned(points, cluster, opp) if cluster is not None else zero,
            float(soc.cluster_idle_mw[0]) if soc.cluster_idle_mw else 0.0,
            "soc energy model",
        )
    if power is not None:
        order = sorted(range(len(power.speeds_khz)), key=lambda i: power.speeds_khz[i])
        speeds = [power.speeds_khz[i] for i in order]
        core = [power.core_ma[i] * battery_voltage_v for i in order]
        cluster_mw = (power.cluster_ma or 0.0) * battery_voltage_v
        per_opp = _aligned(speeds, core, opp)
        if power.whole_cpu:  # the old format's current is the whole CPU's, not a core's
            return PowerTable((0.0,) * len(opp.khz), 0.0, per_opp, 0.0, "power_profile.xml")
        return PowerTable(per_opp, 0.0, (cluster_mw,) * len(opp.khz), 0.0, "power_profile.xml")
    if soc is not None and soc.dynamic_power_coefficient and opp.uv:
        dpc = soc.dynamic_power_coefficient
        busy = tuple(
            dpc * (uv / 1000) ** 2 * (khz / 1000) / 1e9
            for khz, uv in zip(opp.khz, opp.uv, strict=True)
        )
        return PowerTable(busy, 0.0, (0.0,) * len(opp.khz), 0.0, "dynamic-power-coefficient")
    return None
