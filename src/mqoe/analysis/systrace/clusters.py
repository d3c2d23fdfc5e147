"""CPU cluster maps (which CPUs are LITTLE, which big): from ``--clusters`` text or a
device profile."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mqoe.errors import UserError


def parse_clusters(spec: str) -> dict[int, str]:
    """``"0-3:little,4-7:big"`` → {cpu: cluster name}. Raises :class:`UserError`."""
    out: dict[int, str] = {}
    for item in spec.split(","):
        cpus, sep, name = item.strip().partition(":")
        name = name.strip()
        lo, dash, hi = cpus.strip().partition("-")
        try:
            first, last = int(lo), int(hi) if dash else int(lo)
        except ValueError:
            first = last = -1
        if not sep or not name or first < 0 or last < first or last > 4095:
            raise UserError(
                f"bad --clusters item {item.strip()!r}: expected CPUS:NAME with CPUS like "
                "'0-3' or '4' (e.g. '0-3:little,4-7:big')"
            )
        for cpu in range(first, last + 1):
            if cpu in out:
                raise UserError(f"--clusters: CPU {cpu} is in two clusters")
            out[cpu] = name
    return out


def clusters_from_profile(profile: Any) -> dict[int, str]:
    """CPU → cluster name of an mqoe device profile (clusters are listed LITTLE first
    and numbered in order, as the kernel does)."""
    out: dict[int, str] = {}
    for cluster in profile.cpu.clusters:
        for _ in range(cluster.cores):
            out[len(out)] = cluster.name
    return out


def cluster_roles(clusters: Mapping[int, str] | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(LITTLE CPUs, big CPUs): the cluster named ``little`` (any case), or else the
    cluster of the lowest-numbered CPU, is LITTLE; every other cluster is big."""
    if not clusters:
        return (), ()
    names = {n.lower() for n in clusters.values()}
    little_name = "little" if "little" in names else clusters[min(clusters)].lower()
    little = tuple(sorted(c for c, n in clusters.items() if n.lower() == little_name))
    big = tuple(sorted(c for c, n in clusters.items() if n.lower() != little_name))
    return little, big
