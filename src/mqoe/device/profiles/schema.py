"""The device-profile schema: what a phone is made of, validated at the file boundary.

Profiles are TOML data (``catalog/*.toml``); every number has a source named in the
profile's ``[sources]`` table. Subsystems not built yet add their own optional sections.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Linux CFS tunables scale with log2 of the CPU count (kernel/sched/fair.c,
# SCHED_TUNABLESCALING_LOG, capped at 8 CPUs): base values below, times (1 + ilog2(n)).
_BASE_LATENCY_NS = 6_000_000  # sysctl_sched_latency base, kernel/sched/fair.c
_BASE_MIN_GRANULARITY_NS = 750_000  # sysctl_sched_min_granularity base
_BASE_WAKEUP_GRANULARITY_NS = 1_000_000  # sysctl_sched_wakeup_granularity base

REQUIRED_SOURCES = ("android", "cpu", "memory", "storage", "display")


class _Model(BaseModel):
    # strict: `cores = true` or `cores = "4"` is an error, not a silent conversion.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


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

    latency_ns: int | None = Field(default=None, gt=0)
    min_granularity_ns: int | None = Field(default=None, gt=0)
    wakeup_granularity_ns: int | None = Field(default=None, ge=0)


class CpuSpec(_Model):
    # TOML gives arrays as lists; let them become a tuple.
    clusters: Annotated[tuple[ClusterSpec, ...], Field(min_length=1, strict=False)]
    sched: SchedSpec = SchedSpec()

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
        return self


class MemorySpec(_Model):
    ram_mb: int = Field(ge=256, le=65536)


class StorageSpec(_Model):
    type: Literal["emmc", "ufs"]
    capacity_gb: int = Field(ge=1, le=4096)


class DisplaySpec(_Model):
    width_px: int = Field(ge=1)
    height_px: int = Field(ge=1)
    refresh_hz: float = Field(default=60.0, gt=0, le=240)


class DeviceProfile(_Model):
    """One phone model. ``name`` is the catalogue key (``mqoe run … --profile NAME``)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    display_name: str = Field(min_length=1)
    description: str = ""
    soc: str = Field(min_length=1)
    android_version: str = Field(pattern=r"^\d+(\.\d+)*$")
    low_ram: bool = False  # ro.config.low_ram (Android Go)
    tier: Literal["entry", "low", "mid", "high"] | None = None
    cpu: CpuSpec
    memory: MemorySpec
    storage: StorageSpec
    display: DisplaySpec
    # Where the numbers come from, per section (REQUIRED_SOURCES at least).
    sources: dict[str, str]

    @field_validator("sources")
    @classmethod
    def _sources_cover_sections(cls, sources: dict[str, str]) -> dict[str, str]:
        missing = [k for k in REQUIRED_SOURCES if not sources.get(k, "").strip()]
        if missing:
            raise ValueError(f"[sources] must name a source for: {', '.join(missing)}")
        return sources


class CoreType(_Model):
    """Per-clock speed of a CPU micro-architecture, relative to a Cortex-A53."""

    ipc_factor: float = Field(gt=0, le=10)
    source: str = Field(min_length=1)
