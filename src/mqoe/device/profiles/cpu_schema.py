"""The ``[cpu]`` section of a device profile — clusters, CFS tunables, the cpufreq
governor, hotplug, boosts, HMP placement, cpusets and power_profile.xml currents — and
the SoC and core-type tables it refers to (``socs/<id>.toml``, ``core_types.toml``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Annotated, Literal

from pydantic import Field, PlainValidator, field_validator, model_validator

from mqoe.device.profiles.base import _Model

# Linux CFS tunables scale with log2 of the CPU count (kernel/sched/fair.c,
# SCHED_TUNABLESCALING_LOG, capped at 8 CPUs): base values below, times (1 + ilog2(n)).
_BASE_LATENCY_NS = 6_000_000  # sysctl_sched_latency base, kernel/sched/fair.c
_BASE_MIN_GRANULARITY_NS = 750_000  # sysctl_sched_min_granularity base
_BASE_WAKEUP_GRANULARITY_NS = 1_000_000  # sysctl_sched_wakeup_granularity base


class ClusterSpec(_Model):
    """A cluster of identical cores sharing one clock (big.LITTLE has several)."""

    name: str = Field(min_length=1)
    cores: int = Field(ge=1, le=16)
    core_type: str = Field(min_length=1)
    max_freq_mhz: float = Field(gt=0, le=5000)
    # Reference cycles retired per clock (Cortex-A53 = 1.0); None → core-type table.
    ipc_factor: float | None = Field(default=None, gt=0, le=10)


class SchedSpec(_Model):
    """CFS tunables; None means the kernel default for this core count."""

    # The kernel's sysctl limits (kernel/sched/core.c: min_sched_granularity_ns = 100 µs,
    # max_sched_granularity_ns = 1 s, min_wakeup_granularity_ns = 0).
    latency_ns: int | None = Field(default=None, ge=100_000, le=1_000_000_000)
    min_granularity_ns: int | None = Field(default=None, ge=100_000, le=1_000_000_000)
    wakeup_granularity_ns: int | None = Field(default=None, ge=0, le=1_000_000_000)
    # RT throttling: /proc/sys/kernel/sched_rt_runtime_us (-1 = off) per
    # sched_rt_period_us; the kernel's defaults (kernel/sched/core.c) leave fair threads 5%.
    rt_runtime_us: int = Field(default=950_000, ge=-1, le=10_000_000)
    rt_period_us: int = Field(default=1_000_000, ge=1_000, le=10_000_000)

    @model_validator(mode="after")
    def _runtime_within_period(self) -> SchedSpec:
        if self.rt_runtime_us > self.rt_period_us:
            raise ValueError(
                f"rt_runtime_us ({self.rt_runtime_us}) must not exceed "
                f"rt_period_us ({self.rt_period_us})"
            )
        return self


class _BoundedTunable:
    """A sysfs value as an init script writes it: a finite number within ±``le``, a
    string (lists such as target_loads) or a flag. One check, one message."""

    def __init__(self, le: float) -> None:
        self.le = le

    def __call__(self, value: object) -> int | float | str | bool:
        if isinstance(value, bool | str):
            return value
        if isinstance(value, int | float) and math.isfinite(value) and abs(value) <= self.le:
            return value
        raise ValueError(f"expected a number within ±{self.le:g}, a string or a flag")

    def __repr__(self) -> str:
        return f"BoundedTunable(le={self.le:g})"


# 10^12 is far above any kHz, µs or percentage a governor or hotplug policy takes.
Tunable = Annotated[int | float | str | bool, PlainValidator(_BoundedTunable(1e12))]
Tunables = dict[str, Tunable]
# Tables whose validation errors carry a "clusters" level that is not a TOML key (see
# _per_cluster: [cpu.governor.little] validates as governor.clusters.little).
PER_CLUSTER_TABLES = frozenset({"governor", "hotplug", "power_profile"})


def _per_cluster(data: object) -> object:
    """``[x] name = …`` plus ``[x.<cluster>]`` tables → ``{name, clusters: {…}}``."""
    if isinstance(data, dict) and "clusters" not in data:
        data = dict(data)
        head = {k: data.pop(k) for k in list(data) if not isinstance(data[k], dict)}
        return {**head, "clusters": data}
    return data


class _PerClusterTables(_Model):
    """``[x]`` with scalar keys plus one ``[x.<cluster>]`` table per cluster."""

    @model_validator(mode="before")
    @classmethod
    def _gather(cls, data: object) -> object:
        return _per_cluster(data)


class GovernorSpec(_PerClusterTables):
    """The cpufreq governor (``scaling_governor``) and each cluster's tunables, with the
    kernel's sysfs names and units, as the phone's init scripts write them."""

    name: str = Field(default="performance", min_length=1)
    clusters: dict[str, Tunables] = Field(default_factory=dict, strict=False)


class HotplugSpec(_PerClusterTables):
    """Cores on-/off-lined by load (MediaTek ``hps``, Qualcomm ``core_ctl``), per cluster."""

    name: str = Field(min_length=1)
    clusters: dict[str, Tunables] = Field(default_factory=dict, strict=False)


class BoostSpec(_Model):
    """The top-app group's boost: ``schedtune.boost`` (Android 8–10) or ``uclamp.min``
    (11+), in percent, and ``prefer_idle`` (idle CPUs first at wake-up)."""

    kind: Literal["schedtune", "uclamp"]
    top_app: int = Field(default=0, ge=0, le=100)
    prefer_idle: bool = False
    foreground: int = Field(default=0, ge=0, le=100)


class InteractionBoostSpec(_Model):
    """The vendor power HAL's answer to ``POWER_HINT_INTERACTION`` (a touch; a fling, with
    its duration): each named cluster's ``scaling_min_freq`` raised to ``min_freq_mhz``
    (the perf HAL's scroll-boost perf lock, resolved to the next step up) for the hint's
    duration, at least ``min_duration_ms`` and at most ``max_duration_ms`` (the HAL's
    kMinInteractiveDuration / kMaxInteractiveDuration); a hint the running boost already
    covers is dropped. ``sched_boost`` is the scheduler boost the same perf lock requests
    (``/proc/sys/kernel/sched_boost``: 0 none, 1 full throttle — every thread placed on
    the biggest cluster —, 2 conservative — only threads of the stune groups with
    ``schedtune.sched_boost_no_override``, ``sched_boost_no_override``)."""

    min_freq_mhz: dict[str, Annotated[int, Field(gt=0, le=10_000)]] = Field(strict=False)
    min_duration_ms: int = Field(default=500, ge=0, le=10_000)
    max_duration_ms: int = Field(default=5000, ge=1, le=60_000)
    # Msm kernels' boost types (kernel/sched/boost.c); 3 (restrained: frequency
    # aggregation only) is not modelled and rejected.
    sched_boost: Literal[0, 1, 2] = 0
    sched_boost_no_override: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _bounded(self) -> InteractionBoostSpec:
        if not self.min_freq_mhz:
            raise ValueError("min_freq_mhz must name at least one cluster")
        _check_groups(self.sched_boost_no_override, "sched_boost_no_override")
        if self.sched_boost == 2 and not self.sched_boost_no_override:
            raise ValueError(
                "sched_boost = 2 (conservative) boosts only the groups in "
                "sched_boost_no_override; name at least one"
            )
        if self.min_duration_ms > self.max_duration_ms:
            raise ValueError(
                f"min_duration_ms ({self.min_duration_ms}) must not exceed "
                f"max_duration_ms ({self.max_duration_ms})"
            )
        return self


class HmpSpec(_Model):
    """Qualcomm's HMP scheduler (msm-3.18 / msm-4.4 ``select_best_cpu``): a waking task
    goes to the least-power cluster it fits (its load under ``upmigrate`` % of the
    cluster's capacity, ``downmigrate`` % when it comes from a bigger one), onto a CPU
    there that has not crossed the spill thresholds (``spill_nr_run`` runnable threads
    with it, or ``spill_load`` % of the CPU's capacity), even when cores of a bigger
    cluster idle. With ``restrict_cluster_spill`` an idle core of a costlier cluster
    pulls from a cheaper one only when that one is overloaded (every CPU past the spill
    thresholds on average) or holds a task too big for it (bail_inter_cluster_balance).
    The /proc/sys/kernel/sched_* values an init script writes; defaults are the
    kernel's (kernel/sched/fair.c: 80, 60, 10, 100, 15, 0)."""

    upmigrate: int = Field(default=80, ge=1, le=100)
    downmigrate: int = Field(default=60, ge=1, le=100)
    spill_nr_run: int = Field(default=10, ge=1, le=64)
    spill_load: int = Field(default=100, ge=1, le=100)
    # Tasks with a nice above this always fit the LITTLE cluster (never up-migrate).
    upmigrate_min_nice: int = Field(default=15, ge=-20, le=19)
    restrict_cluster_spill: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> HmpSpec:
        if self.downmigrate > self.upmigrate:
            raise ValueError(
                f"downmigrate ({self.downmigrate}) must not exceed upmigrate ({self.upmigrate})"
            )
        return self


class ClusterPower(_Model):
    """One cluster's rows of Android's power_profile.xml (mA)."""

    speeds_khz: Annotated[
        tuple[Annotated[int, Field(gt=0, le=10_000_000)], ...], Field(min_length=1, strict=False)
    ]
    core_ma: Annotated[
        tuple[Annotated[float, Field(ge=0, le=10_000)], ...], Field(min_length=1, strict=False)
    ]
    cluster_ma: float | None = Field(default=None, ge=0, le=10_000)
    # Old files (Android ≤ 6: cpu.speeds / cpu.active) give the whole CPU's current at
    # each speed, not one core's: drawn while any core of the cluster is busy.
    whole_cpu: bool = False

    @model_validator(mode="after")
    def _aligned(self) -> ClusterPower:
        if len(self.speeds_khz) != len(self.core_ma):
            raise ValueError(
                f"{len(self.core_ma)} core_ma values for {len(self.speeds_khz)} speeds_khz"
            )
        return self


class PowerProfileSpec(_PerClusterTables):
    """Android's per-device ``power_profile.xml`` CPU rows (BatteryStats' currents)."""

    suspend_ma: float | None = Field(default=None, ge=0, le=10_000)
    idle_ma: float | None = Field(default=None, ge=0, le=10_000)
    active_ma: float | None = Field(default=None, ge=0, le=10_000)
    # Currents become power at the battery's nominal voltage (Li-ion cells: 3.7–3.85 V).
    battery_voltage_v: float = Field(default=3.8, gt=0, le=10)
    clusters: dict[str, ClusterPower] = Field(default_factory=dict, strict=False)


class SocRef(_Model):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")


# Android's cpuset groups (/dev/cpuset/<group>/cpus).
CPUSET_GROUPS = ("top-app", "foreground", "background", "system-background", "restricted")


def _check_groups(groups: Iterable[str], what: str) -> None:
    unknown = sorted(set(groups) - set(CPUSET_GROUPS))
    if unknown:
        raise ValueError(f"{what} names unknown group(s) {unknown}; known: {list(CPUSET_GROUPS)}")


class CpuSpec(_Model):
    # TOML gives arrays as lists; let them become a tuple.
    clusters: Annotated[tuple[ClusterSpec, ...], Field(min_length=1, strict=False)]
    sched: SchedSpec = SchedSpec()
    soc: SocRef | None = None  # the SoC's OPP / energy tables (profiles/socs/<id>.toml)
    governor: GovernorSpec = GovernorSpec()
    hotplug: HotplugSpec | None = None
    cpusets: dict[str, str] = Field(default_factory=dict, strict=False)
    boost: BoostSpec | None = None
    hmp: HmpSpec | None = None  # HMP task placement (older Snapdragon kernels)
    interaction_boost: InteractionBoostSpec | None = None  # touch / fling clock floors
    power_profile: PowerProfileSpec | None = None
    # CONFIG_HZ: the scheduler tick, when schedutil re-reads a busy CPU's utilisation.
    hz: int = Field(default=250, ge=24, le=1000)

    @field_validator("cpusets")
    @classmethod
    def _known_groups(cls, cpusets: dict[str, str]) -> dict[str, str]:
        _check_groups(cpusets, "[cpu.cpusets]")
        return cpusets

    @property
    def n_cores(self) -> int:
        return sum(c.cores for c in self.clusters)

    @property
    def _scale(self) -> int:
        return 1 + (min(self.n_cores, 8).bit_length() - 1)

    @property
    def sched_latency_ns(self) -> int:
        return self.sched.latency_ns or _BASE_LATENCY_NS * self._scale

    @property
    def sched_min_granularity_ns(self) -> int:
        return self.sched.min_granularity_ns or _BASE_MIN_GRANULARITY_NS * self._scale

    @property
    def sched_wakeup_granularity_ns(self) -> int:
        if self.sched.wakeup_granularity_ns is not None:
            return self.sched.wakeup_granularity_ns
        return _BASE_WAKEUP_GRANULARITY_NS * self._scale

    @model_validator(mode="after")
    def _unique_cluster_names(self) -> CpuSpec:
        names = [c.name for c in self.clusters]
        if len(set(names)) != len(names):
            raise ValueError(f"cluster names must be unique, got {names}")
        boost = self.interaction_boost
        named: dict[str, Mapping[str, object]] = {
            "governor": self.governor.clusters,
            "hotplug": self.hotplug.clusters if self.hotplug is not None else {},
            "power_profile": self.power_profile.clusters if self.power_profile is not None else {},
            "interaction_boost": boost.min_freq_mhz if boost is not None else {},
        }
        for what, clusters in named.items():
            extra = sorted(set(clusters) - set(names))
            if extra:
                raise ValueError(f"[cpu.{what}] names cluster(s) {extra}; clusters: {names}")
        return self


class SocCluster(_Model):
    """One cluster of a SoC: its cpufreq table, voltages and energy model (sourced)."""

    name: str = Field(min_length=1)
    core_type: str = Field(min_length=1)
    cores: int = Field(ge=1, le=16)
    first_cpu: int = Field(default=0, ge=0, le=63)
    transition_latency_us: float | None = Field(default=None, ge=0, le=100_000)
    opp_khz: Annotated[tuple[int, ...], Field(min_length=1, strict=False)]
    opp_uv: Annotated[tuple[int, ...], Field(strict=False)] | None = None
    em_khz: Annotated[tuple[int, ...], Field(strict=False)] | None = None
    busy_mw: Annotated[tuple[float, ...], Field(strict=False)] | None = None
    idle_mw: Annotated[tuple[float, ...], Field(strict=False)] | None = None
    idle_states: Annotated[tuple[str, ...], Field(strict=False)] | None = None
    cluster_busy_mw: Annotated[tuple[float, ...], Field(strict=False)] | None = None
    cluster_idle_mw: Annotated[tuple[float, ...], Field(strict=False)] | None = None
    busy_cost: Annotated[tuple[float, ...], Field(strict=False)] | None = None
    idle_cost: Annotated[tuple[float, ...], Field(strict=False)] | None = None
    cluster_busy_cost: Annotated[tuple[float, ...], Field(strict=False)] | None = None
    cluster_idle_cost: Annotated[tuple[float, ...], Field(strict=False)] | None = None
    dynamic_power_coefficient: float | None = Field(default=None, gt=0, le=10_000)
    capacity_dmips_mhz: int | None = Field(default=None, gt=0, le=10_000)

    @model_validator(mode="after")
    def _aligned(self) -> SocCluster:
        n = len(self.opp_khz)
        if list(self.opp_khz) != sorted(set(self.opp_khz)):
            raise ValueError("opp_khz must ascend strictly")
        if self.opp_uv is not None and len(self.opp_uv) != n:
            raise ValueError(f"{len(self.opp_uv)} opp_uv values for {n} opp_khz")
        points = len(self.em_khz) if self.em_khz is not None else n
        for key in ("busy_mw", "cluster_busy_mw", "busy_cost", "cluster_busy_cost"):
            values = getattr(self, key)
            if values is not None and len(values) != points:
                raise ValueError(f"{len(values)} {key} values for {points} points")
        return self


class SocSpec(_Model):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str = Field(min_length=1)
    kernel: str = ""
    clusters: Annotated[tuple[SocCluster, ...], Field(min_length=1, strict=False)]
    sources: dict[str, str]


class CoreType(_Model):
    """Per-clock speed of a CPU micro-architecture, relative to a Cortex-A53."""

    ipc_factor: float = Field(gt=0, le=10)
    source: str = Field(min_length=1)
