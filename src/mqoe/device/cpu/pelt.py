"""Per-entity load tracking (PELT, kernel/sched/pelt.c), in continuous time.

The kernel sums a task's running time in 1 ms periods, each older period weighted by
y with y³² = ½: a geometric average with a 32 ms half-life, scaled to 1024
(``SCHED_CAPACITY_SCALE``). It is *frequency- and capacity-invariant*: a period
running at half the maximum clock on a CPU of capacity 512 adds a quarter of what a
period at full speed on the biggest CPU adds (``cap_scale(freq)``, ``cap_scale(cpu)``
in ``accumulate_sum``). Here the same average is kept in continuous time (the limit of
1 ms periods): after ``elapsed`` ns at level ``L``,
``util ← util × 2^(−elapsed / 32 ms) + L × (1 − 2^(−elapsed / 32 ms))``,
with ``L`` = the CPU's current capacity (0 when not running).

A CPU's utilisation is the sum of its attached tasks' (``cfs_rq->avg.util_avg``): a
task that migrates takes its utilisation with it (``detach/attach_entity_load_avg``);
a sleeping task's stays, decaying, on the CPU it last ran on (blocked utilisation).
"""

from __future__ import annotations

from typing import Final

HALFLIFE_NS: Final = 32_000_000  # y^32 = 1/2 with 1 ms periods (LOAD_AVG_PERIOD)
SCALE: Final = 1024.0  # SCHED_CAPACITY_SCALE


def decay(elapsed_ns: float) -> float:
    """The weight left on the past after ``elapsed_ns``: 2^(−elapsed / half-life)."""
    weight: float = 0.5 ** (elapsed_ns / HALFLIFE_NS)
    return weight


def accrue(util: float, elapsed_ns: float, level: float) -> float:
    """``util`` after ``elapsed_ns`` more at ``level`` (capacity units, 0 when idle)."""
    d: float = 0.5 ** (elapsed_ns / HALFLIFE_NS)
    return util * d + level * (1.0 - d)
