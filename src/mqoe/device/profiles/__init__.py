"""Device profiles: the shipped catalogue (``catalog/*.toml``) and users' own files.

>>> from mqoe.device.profiles import load_profile
>>> load_profile("nokia-1").cpu.n_cores
4
"""

from __future__ import annotations

from mqoe.device.profiles.cpu_schema import ClusterSpec, CpuSpec, SchedSpec, SocCluster, SocSpec
from mqoe.device.profiles.loader import (
    catalog_names,
    core_ipc_factor,
    list_profiles,
    load_profile,
    load_profile_file,
    load_soc,
)
from mqoe.device.profiles.schema import (
    DeviceProfile,
    DisplaySpec,
    GpuSpec,
    LmkSpec,
    MemorySpec,
    StorageSpec,
    VideoSpec,
)

__all__ = [
    "ClusterSpec",
    "CpuSpec",
    "DeviceProfile",
    "DisplaySpec",
    "GpuSpec",
    "LmkSpec",
    "MemorySpec",
    "SchedSpec",
    "SocCluster",
    "SocSpec",
    "StorageSpec",
    "VideoSpec",
    "catalog_names",
    "core_ipc_factor",
    "list_profiles",
    "load_profile",
    "load_profile_file",
    "load_soc",
]
