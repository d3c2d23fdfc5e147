"""A phone assembled from a device profile: the subsystems on one engine.

Later subsystems (memory, lmk, storage, gpu, display, net) join here; experiments and
workloads reach them through the phone's attributes and their small public methods.
"""

from __future__ import annotations

from mqoe.device.cpu import Cpu
from mqoe.device.profiles import DeviceProfile
from mqoe.engine import Environment


class Phone:
    """``Phone(profile, seed=1)``: an engine plus the modelled subsystems of one device."""

    def __init__(self, profile: DeviceProfile, seed: int = 0, *, trace: bool = False) -> None:
        self.profile = profile
        self.env = Environment(seed, trace=trace)
        self.cpu = Cpu(self.env, profile)

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
