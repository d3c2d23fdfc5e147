"""A phone assembled from a device profile: the subsystems on one engine.

``phone.cpu`` (cores and scheduler), ``phone.processes`` (pids, oom_score_adj),
``phone.storage`` (the I/O path and mmcqd), ``phone.memory`` (pages, kswapd, zRAM,
refaults, vmpressure, PSI), ``phone.lmkd`` and ``phone.trims`` (low-memory killer and
onTrimMemory). Later subsystems (gpu, display, net on the phone) join here; workloads
reach them through these attributes and their small public methods.
"""

from __future__ import annotations

from mqoe.device.cpu import Cpu
from mqoe.device.lmk import Lmkd, TrimSignals
from mqoe.device.memory import Memory
from mqoe.device.process import Process, ProcessTable, sched_group
from mqoe.device.profiles import DeviceProfile
from mqoe.device.storage import Storage
from mqoe.engine import Environment


class Phone:
    """``Phone(profile, seed=1)``: an engine plus the modelled subsystems of one device."""

    def __init__(self, profile: DeviceProfile, seed: int = 0, *, trace: bool = False) -> None:
        self.profile = profile
        self.env = Environment(seed, trace=trace)
        self.cpu = Cpu(self.env, profile)
        self.processes = ProcessTable()
        self.storage = Storage(self.env, self.cpu, profile.storage)
        self.memory = Memory(self.env, self.cpu, self.storage, self.processes, profile.memory)
        self.lmkd = Lmkd(
            self.env, self.cpu, self.memory, self.processes, profile.lmk, profile.low_ram
        )
        self.trims = TrimSignals(self.env, self.processes, profile.lmk)
        self.processes.listeners.append(self._cgroup)
        # Framework-layer services that apps share (pieces of ActivityManager such as
        # mqoe.apps.background.ServiceRestarts), one per phone, keyed by class name.
        self.framework: dict[str, object] = {}

    def _cgroup(self, process: Process, event: str) -> None:
        """ActivityManager moves an app's threads to the cgroup of its importance when it
        starts, starts threads or changes importance (``sched_group``)."""
        if event == "kill":
            return
        group = sched_group(process.oom_score_adj)
        if group is None or (event == "adj" and group == process.sched_group):
            return
        process.sched_group = group
        for thread in process.threads:
            if thread.alive:
                self.cpu.set_group(thread, group)

    @property
    def now_ns(self) -> int:
        return self.env.now

    def run(self, duration_ns: int) -> None:
        """Advance the simulation by ``duration_ns`` and close the books."""
        self.env.run(self.env.now + duration_ns)
        self.finish()

    def finish(self) -> None:
        """Close per-thread accounting at the current time (after the last ``env.run``)."""
        self.cpu.finish()
