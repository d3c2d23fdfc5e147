"""Shared fixtures: small hand-made profiles so expected values can be computed by hand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mqoe.device.phone import Phone
from mqoe.device.process import Process
from mqoe.device.profiles import DeviceProfile

_SOURCES = {k: "test fixture" for k in ("android", "cpu", "memory", "storage", "display")}


def make_profile(
    clusters: list[tuple[int, float, float]],
    memory: dict[str, Any] | None = None,
    lmk: dict[str, Any] | None = None,
    low_ram: bool = False,
    **sched: int,
) -> DeviceProfile:
    """clusters: (cores, max_freq_mhz, ipc_factor) per cluster, LITTLE first."""
    data: dict[str, Any] = {
        "name": "test-phone",
        "display_name": "Test phone",
        "soc": "test",
        "android_version": "10",
        "cpu": {
            "clusters": [
                {
                    "name": f"c{i}",
                    "cores": n,
                    "core_type": "test",
                    "max_freq_mhz": mhz,
                    "ipc_factor": ipc,
                }
                for i, (n, mhz, ipc) in enumerate(clusters)
            ],
            "sched": sched,
        },
        "memory": {"ram_mb": 1024, **(memory or {})},
        "lmk": lmk or {},
        "low_ram": low_ram,
        "storage": {"type": "emmc", "capacity_gb": 8},
        "display": {"width_px": 480, "height_px": 854},
        "sources": _SOURCES,
    }
    return DeviceProfile.model_validate(data)


def app(p: Phone, name: str, adj: int) -> tuple[Process, Any]:
    """A process named ``name`` at ``adj`` with one thread of the same name."""
    process = p.processes.spawn(name, adj, p.env.now)
    thread = p.cpu.thread(name, process=name)
    process.threads.append(thread)
    return process, thread


@pytest.fixture
def phone_factory() -> Callable[..., Phone]:
    def factory(
        clusters: list[tuple[int, float, float]], seed: int = 0, trace: bool = False, **sched: int
    ) -> Phone:
        return Phone(make_profile(clusters, **sched), seed, trace=trace)

    return factory


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test stale compiled modules: Python would import the old build."""
    from mqoe.native import stale

    if old := stale():
        pytest.exit(
            f"compiled modules older than their source: {', '.join(old)}; rebuild them "
            "with `make venv` (or `pip install --no-deps --no-build-isolation -e .`)",
            returncode=2,
        )
