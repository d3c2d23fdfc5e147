"""The phone's CPU: scheduler (:mod:`.sched`), operating points (:mod:`.opp`), load
tracking (:mod:`.pelt`), frequency governors (:mod:`.governors`), hotplug
(:mod:`.hotplug`), Android cgroups (:mod:`.cgroups`) and energy (:mod:`.energy`).

Models and apps use the names re-exported here; the submodules are the implementation.
"""

from mqoe.device.cpu.sched import Cpu
from mqoe.device.cpu.sched_types import (
    NICE_0_WEIGHT,
    NICE_TO_WEIGHT,
    Core,
    Fair,
    PreemptionLog,
    PreemptKind,
    RealTime,
    SchedPolicy,
    SchedSwitch,
    Thread,
    ThreadState,
    parse_cpuset,
)

__all__ = [
    "NICE_0_WEIGHT",
    "NICE_TO_WEIGHT",
    "Core",
    "Cpu",
    "Fair",
    "PreemptKind",
    "PreemptionLog",
    "RealTime",
    "SchedPolicy",
    "SchedSwitch",
    "Thread",
    "ThreadState",
    "parse_cpuset",
]
