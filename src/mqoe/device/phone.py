"""A phone assembled from a device profile: the subsystems on one engine.

``phone.cpu`` (cores and scheduler), ``phone.processes`` (pids, oom_score_adj),
``phone.storage`` (the I/O path and mmcqd), ``phone.memory`` (pages, kswapd, zRAM,
refaults, vmpressure, PSI), ``phone.lmkd`` and ``phone.trims`` (low-memory killer and
onTrimMemory), ``phone.net`` (the network the phone is a host of) and, once a workload
attaches it, ``phone.stack`` (the phone's receive path on that network:
:meth:`Phone.attach_network`). The subsystems a
workload configures are built here too, on its request, with the phone's own parts:
:meth:`Phone.attach_gpu` (the GPU driver's buffers under a compression policy) and
:meth:`Phone.attach_display` (V-Sync, BufferQueues and SurfaceFlinger). Workloads
reach every subsystem through these attributes and their small public methods; none
constructs one (``tests/workloads/test_composition.py`` checks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mqoe.device.cpu import Cpu
from mqoe.device.lmk import Lmkd, TrimSignals
from mqoe.device.memory import Memory
from mqoe.device.process import Process, ProcessTable, sched_group
from mqoe.device.profiles import DeviceProfile
from mqoe.device.storage import Storage
from mqoe.engine import Environment

if TYPE_CHECKING:  # imported by the attach_* methods: a phone without them needs none
    from mqoe.device.display import Display, DisplayConfig
    from mqoe.device.gpu import CompressionPolicy, Gpu
    from mqoe.device.net import NetStack, NetStackSpec, Network, WifiMedium


class Phone:
    """``Phone(profile, seed=1)``: an engine plus the modelled subsystems of one device."""

    def __init__(
        self,
        profile: DeviceProfile,
        seed: int = 0,
        *,
        trace: bool = False,
        components: Mapping[str, object] | None = None,
    ) -> None:
        self.profile = profile
        # Policy objects for the scenario's slots (mqoe.workloads.components), taken once.
        self._components = dict(components or {})
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
        # Built when a workload asks (attach_gpu / attach_display / net): a scenario
        # without them runs no GPU daemon, V-Sync or SurfaceFlinger.
        self.gpu: Gpu | None = None
        self.display: Display | None = None
        self._net: Network | None = None
        self.stack: NetStack | None = None
        self.wifi: WifiMedium | None = None

    def take_component(self, slot: str) -> object | None:
        """The policy object given for ``slot`` (``run_scenario(..., components=…)``),
        or None; a scenario takes each of its slots once, when it builds."""
        return self._components.pop(slot, None)

    @property
    def untaken_components(self) -> tuple[str, ...]:
        """Slots given a component that no part of the scenario took."""
        return tuple(sorted(self._components))

    @property
    def net(self) -> Network:
        """The network the phone is a host of; workloads add its links and other hosts."""
        if self._net is None:
            from mqoe.device.net import Network

            self._net = Network(self.env)
        return self._net

    def attach_network(self, host: str = "phone", spec: NetStackSpec | None = None) -> NetStack:
        """Make host ``host`` of :attr:`net` this phone: its packets are processed in
        softirq on its CPU, its sockets' queued data is charged to its memory, and its
        apps read their sockets on their own threads (:mod:`mqoe.device.net.stack`).
        Connections to ``host`` then need an owning process and thread. Once per phone;
        without it, the network's hosts cost the phone nothing."""
        if self.stack is not None:
            raise RuntimeError("this phone's network stack is attached already")
        from mqoe.device.net import NetStack

        self.stack = NetStack(self.env, self.cpu, self.memory, host, spec)
        self.net.stacks[host] = self.stack
        return self.stack

    def attach_wifi(
        self,
        ap: str,
        stations: Sequence[str],
        *,
        phy_mbps: float,
        queue_bytes: int,
        contention: str = "dcf",
    ) -> WifiMedium:
        """The Wi-Fi channel the phone is on: access point ``ap`` and ``stations`` (the
        phone's host among them) on one 802.11 medium of ``phy_mbps``, every transmit
        queue ``queue_bytes`` (:mod:`mqoe.device.net.wifi`). ``contention`` "dcf" draws
        random backoffs (and collisions) from the run's seed; "fair" takes turns."""
        if self.wifi is not None:
            raise RuntimeError("this phone's Wi-Fi is attached already")
        if contention not in ("dcf", "fair"):
            raise ValueError("contention must be dcf or fair")
        import random

        from mqoe.device.net import WifiMedium

        rng = None
        if contention == "dcf":  # DCF's backoff draws: the run's seed decides them
            rng = random.Random(int(self.env.rng("wifi").integers(1 << 62)))
        self.wifi = WifiMedium(self.env, phy_mbps * 1e6, rng=rng)
        self.net.add_wifi(
            self.wifi,
            ap,
            list(stations),
            ap_queue_bytes=queue_bytes,
            station_queue_bytes=queue_bytes,
        )
        return self.wifi

    def attach_gpu(self, policy: CompressionPolicy) -> Gpu:
        """The GPU driver's buffer bookkeeping with ``policy`` compressing cached apps'
        buffers (:mod:`mqoe.policies.gpu_compression`); once per phone. Without it,
        apps' GPU buffers are not modelled (``phone.gpu`` is None)."""
        if self.gpu is not None:
            raise RuntimeError("this phone's GPU driver is attached already")
        from mqoe.device.gpu import Gpu
        from mqoe.device.gpu_content import load_table

        self.gpu = Gpu(self.env, self.cpu, self.memory, self.profile.gpu, policy, load_table())
        return self.gpu

    def attach_display(self, config: DisplayConfig | None = None) -> Display:
        """The display pipeline (V-Sync, BufferQueues, SurfaceFlinger) configured by
        ``config`` (buffers, SurfaceFlinger's cpuset, …; default: the phone's own); once
        per phone."""
        if self.display is not None:
            raise RuntimeError("this phone's display is attached already")
        from mqoe.device.display import Display, DisplayConfig

        self.display = Display(self.env, self.cpu, self.profile, config or DisplayConfig())
        return self.display

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
