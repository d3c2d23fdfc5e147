"""The modules mqoe compiles with mypyc, and whether each runs compiled and current.

The packet path and the event kernel run millions of times per simulated minute; built
with mypyc (``setup.py``, at ``make``/``pip install``) they run several times faster
from the same Python source, which stays the reference: without a C compiler, or with
``MQOE_PURE_PYTHON=1`` at install, the same modules run interpreted and give identical
results (docs/decisions/0004-compiled-kernel.md).

A compiled module is a ``.so`` beside its ``.py`` and Python prefers it, so editing the
source of one without rebuilding would run the old code: :func:`stale` names such
modules and the test suite refuses to start with any.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

# The hot kernel: the event heap, its trace recorder and exact float rounding, processes;
# links, Wi-Fi and TCP's packet path; the CPU scheduler (Cpu and its trait modules,
# threads and cores), OPP tables, governors and hotplug; memory, reclaim, the LRU models,
# lmkd and the zsmalloc pool; storage, file space and the FTL; Binder and the display;
# the apps' loops (system services, background and UI apps, the video player, the
# activity manager, file churn); NetPIS's allocator; and the trace-driven player's
# per-segment loop with the ABR rules' fast paths. Decision 0004 says what each needed.
COMPILED = (
    "mqoe.engine.kernel",
    "mqoe.engine.process",
    "mqoe.engine.rounding",
    "mqoe.engine.trace",
    "mqoe.device.net.link",
    "mqoe.device.net.wifi",
    "mqoe.device.net.tcp",
    "mqoe.device.net.tcp_cc",
    "mqoe.device.net.tcp_config",
    "mqoe.device.net.tcp_receiver",
    "mqoe.device.cpu.sched",
    "mqoe.device.cpu.sched_types",
    "mqoe.device.cpu.switch",
    "mqoe.device.cpu.placement",
    "mqoe.device.cpu.accounting",
    "mqoe.device.cpu.balance",
    "mqoe.device.cpu.rt_throttle",
    "mqoe.device.cpu.pelt",
    "mqoe.device.lru_model",
    "mqoe.device.lru_recency",
    "mqoe.device.memory",
    "mqoe.device.memory_reclaim",
    "mqoe.device.memory_pressure",
    "mqoe.device.zsmalloc",
    "mqoe.device.cpu.opp",
    "mqoe.device.cpu.governor_core",
    "mqoe.device.cpu.governors",
    "mqoe.device.cpu.hotplug",
    "mqoe.device.lmk",
    "mqoe.device.binder",
    "mqoe.device.display",
    "mqoe.apps.background",
    "mqoe.apps.activity_manager",
    "mqoe.apps.ui",
    "mqoe.device.ftl",
    "mqoe.device.file_space",
    "mqoe.device.storage",
    "mqoe.apps.file_churn",
    "mqoe.policies.netpis",
    "mqoe.device.net.network",
    "mqoe.device.process",
    "mqoe.apps.system",
    "mqoe.apps.video",
    "mqoe.policies.abr.rungs",
    "mqoe.workloads.trace_loop",
)


def _origin(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    return Path(spec.origin) if spec is not None and spec.origin else None


def _extensions() -> dict[str, Path]:
    """Each module of :data:`COMPILED` that imports as a compiled extension here → its file."""
    found = {}
    for module in COMPILED:
        path = _origin(module)
        if path is not None and path.suffix == ".so":
            found[module] = path
    return found


def compiled() -> list[str]:
    """The modules of :data:`COMPILED` that import as compiled extensions here."""
    return list(_extensions())


def stale() -> list[str]:
    """Compiled modules whose Python source changed after they were built. The code of
    every module lives in the group's library (``mqoe_native__mypyc``); a rebuild in
    place may leave a module's own small shim untouched, so the newer of the two counts."""
    group = _origin("mqoe_native__mypyc")
    group_built = group.stat().st_mtime if group is not None and group.exists() else 0.0
    found = []
    for module, extension in _extensions().items():
        source = extension.with_name(module.rsplit(".", 1)[1] + ".py")
        built = max(extension.stat().st_mtime, group_built)
        if source.exists() and source.stat().st_mtime > built:
            found.append(module)
    return found
