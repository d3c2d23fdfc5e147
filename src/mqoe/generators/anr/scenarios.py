"""The root-cause scenarios of the ANR generator: per family (those the Android
responsiveness study found, MobiCom 2020) and variant, the threads of the app and of
``system_server`` that make the event, which of them are critical, and the monitors they
wait on."""

from __future__ import annotations

from collections.abc import Callable

from mqoe.errors import UserError
from mqoe.generators.anr.families.app_defect import (
    _app_defect_app_deadlock,
    _app_defect_busy_loop,
    _app_defect_network_main,
)
from mqoe.generators.anr.families.lock_contention import (
    _lock_contention_ams_lock,
    _lock_contention_ss_deadlock,
    _lock_contention_watchdog_ams,
    _lock_contention_wms_lock,
)
from mqoe.generators.anr.families.low_memory import (
    _low_memory_gc_wait,
    _low_memory_lmk,
    _low_memory_lock_gc,
)
from mqoe.generators.anr.families.wam import (
    _wam_binder_fsync,
    _wam_queued_work,
    _wam_repo_fsync,
    _wam_watchdog_fsync,
)
from mqoe.generators.anr.scenario import _Ctx, _Scenario
from mqoe.generators.anr.threads import _Gen
from mqoe.generators.anr.vocabulary import FSYNC_KERNEL

FAMILY_VARIANTS: dict[str, tuple[str, ...]] = {
    "wam": ("queued_work", "repo_fsync", "binder_fsync", "watchdog_fsync"),
    "lock_contention": ("ams_lock", "wms_lock", "ss_deadlock", "watchdog_ams"),
    "low_memory": ("gc_wait", "lock_gc", "lmk"),
    "app_defect": ("busy_loop", "network_main", "app_deadlock"),
}
# How often each variant is drawn within its family (watchdog kills — SNRs — are rarer).
VARIANT_WEIGHTS: dict[str, tuple[float, ...]] = {
    "wam": (0.5, 0.2, 0.25, 0.05),
    "lock_contention": (0.4, 0.35, 0.1, 0.15),
    "low_memory": (0.5, 0.3, 0.2),
    "app_defect": (0.4, 0.4, 0.2),
}


_SCENARIOS: dict[tuple[str, str], Callable[[_Ctx], _Scenario]] = {
    ("wam", "queued_work"): _wam_queued_work,
    ("wam", "repo_fsync"): _wam_repo_fsync,
    ("wam", "binder_fsync"): _wam_binder_fsync,
    ("wam", "watchdog_fsync"): _wam_watchdog_fsync,
    ("lock_contention", "ams_lock"): _lock_contention_ams_lock,
    ("lock_contention", "wms_lock"): _lock_contention_wms_lock,
    ("lock_contention", "ss_deadlock"): _lock_contention_ss_deadlock,
    ("lock_contention", "watchdog_ams"): _lock_contention_watchdog_ams,
    ("low_memory", "gc_wait"): _low_memory_gc_wait,
    ("low_memory", "lock_gc"): _low_memory_lock_gc,
    ("low_memory", "lmk"): _low_memory_lmk,
    ("app_defect", "busy_loop"): _app_defect_busy_loop,
    ("app_defect", "network_main"): _app_defect_network_main,
    ("app_defect", "app_deadlock"): _app_defect_app_deadlock,
}


def _scenario(family: str, variant: str, app: str, g: _Gen) -> _Scenario:
    build = _SCENARIOS.get((family, variant))
    if build is None:
        raise UserError(f"unknown ANR family/variant {family}/{variant}")
    ctx = _Ctx(
        app,
        g,
        f"$$ExternalSyntheticLambda{int(g.rng.integers(0, 6))}",
        f"${int(g.rng.integers(1, 4))}",
        g.binder_name("ss"),
        FSYNC_KERNEL if g.kernel_stacks else [],
    )
    return build(ctx)
