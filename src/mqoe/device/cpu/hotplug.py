"""Core hotplug: cores taken off- and on-line by load, as low-end phones' kernels do.

* ``mtk_hps`` — MediaTek's hotplug strategy (drivers/misc/mediatek/base/power/<soc>/
  mt_hotplug_strategy_algo.c): every ``interval_ms`` the summed busy percentage of the
  online cores (``cur_loads``) is compared with the online count: above
  ``up_threshold × online`` on average over ``up_times`` samples a core comes on-line;
  below ``down_threshold × (online − 1)`` on average over ``down_times`` samples one
  goes off-line. Rush boost: a sample above ``rush_boost_threshold × online`` for
  ``rush_boost_times`` samples brings on as many cores as the load needs at once.
* ``core_ctl`` — Qualcomm's (kernel/sched/core_ctl.c): per cluster, every scheduler
  window (20 ms) each online core is busy when its busy share crosses ``busy_up_thres``
  (and stays busy until it falls below ``busy_down_thres``); the cluster needs as many
  cores as are busy (one more while more than ``task_thres`` threads are runnable),
  within ``min_cpus``…``max_cpus``. Needing more brings cores on at once; needing fewer
  takes one off after ``offline_delay_ms``. (core_ctl isolates rather than unplugs on
  4.9+ kernels; for the scheduler the effect is the same.)

A hotplug policy plugs in behind :class:`Hotplug` and the :data:`HOTPLUGS` registry.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from mqoe.engine import Timer
from mqoe.errors import UserError
from mqoe.params import build_component

if TYPE_CHECKING:
    from mqoe.device.cpu.sched import Cpu
    from mqoe.device.cpu.sched_types import Core


class Hotplug(Protocol):
    """``start`` once; ``on_busy`` when a core of its idle cores starts running (the
    sampling timer stops once the cores idle at their minimum count, as a deferrable
    timer would: a phone idle for a day costs no events)."""

    name: ClassVar[str]

    def start(self, cpu: Cpu, cores: list[Core]) -> None: ...

    def on_busy(self) -> None: ...


def _per_cpu(value: object, n: int, what: str) -> list[float]:
    """A threshold given once or per CPU (``"60 60 60 60"``, as sysfs takes it)."""
    tokens = str(value).split()
    try:
        numbers = [float(t) for t in tokens]
    except ValueError:
        raise ValueError(f"{what} {value!r}: expected numbers") from None
    if len(numbers) == 1:
        return numbers * n
    if len(numbers) != n:
        raise ValueError(f"{what} {value!r}: expected 1 or {n} values")
    return numbers


class _Sampler:
    """Each core's busy share over the last interval."""

    interval_ns: int = 20_000_000
    min_cpus: int = 1
    max_cpus: int = 0
    enabled: bool = True

    def __init__(self) -> None:
        self.cpu: Cpu | None = None
        self.cores: list[Core] = []
        self._busy: dict[int, int] = {}
        self._t = 0
        self._timer: Timer | None = None

    def _attach(self, cpu: Cpu, cores: list[Core], lowest: int) -> None:
        """Take the cluster's cores; ``max_cpus`` 0 means all of them."""
        self.cpu, self.cores = cpu, cores
        self.max_cpus = self.max_cpus or len(cores)
        if not lowest <= self.min_cpus <= self.max_cpus <= len(cores):
            raise ValueError(f"min_cpus/max_cpus must satisfy {lowest} ≤ min ≤ max ≤ {len(cores)}")

    def _arm(self) -> None:
        assert self.cpu is not None
        self._timer = self.cpu.env.schedule(self.interval_ns, self._tick)

    def _rearm(self, load: float) -> None:
        """Sample on, unless the cores idled through the sample at their minimum."""
        idle = load == 0 and all(c.current is None for c in self.cores)
        if idle and sum(c.online for c in self.cores) <= max(self.min_cpus, 1):
            self._timer = None
        else:
            self._arm()

    def on_busy(self) -> None:
        if self._timer is None and self.cpu is not None and self.enabled:
            self._open()
            self._arm()

    def _tick(self, _: object) -> None:
        raise NotImplementedError

    def _open(self) -> None:
        assert self.cpu is not None
        self._t = self.cpu.env.now
        self._busy = {core.cid: self.cpu.core_busy_ns(core) for core in self.cores}

    def _loads(self) -> dict[int, float]:
        assert self.cpu is not None
        wall = self.cpu.env.now - self._t
        out = {}
        for core in self.cores:
            busy = self.cpu.core_busy_ns(core) - self._busy[core.cid]
            out[core.cid] = 100.0 * busy / wall if wall > 0 and core.online else 0.0
        return out


class MtkHps(_Sampler):
    """MediaTek hps for one cluster; see the module docstring."""

    name: ClassVar[str] = "mtk_hps"

    def __init__(
        self,
        up_threshold: float = 95,
        up_times: int = 1,
        down_threshold: float = 85,
        down_times: int = 1,
        interval_ms: float = 40,
        rush_boost_enabled: int = 0,
        rush_boost_threshold: float = 98,
        rush_boost_times: int = 1,
        min_cpus: int = 1,
        max_cpus: int = 0,
        input_boost_enabled: int = 0,
        input_boost_cpu_num: int = 0,
        tlp_times: int = 0,
    ) -> None:
        super().__init__()
        if not 0 < up_threshold <= 100 or not 0 <= down_threshold <= 100:
            raise ValueError("up_threshold and down_threshold are percentages")
        if min(up_times, down_times, rush_boost_times) < 1:
            raise ValueError("up_times, down_times and rush_boost_times must be ≥ 1")
        if not 1 <= interval_ms <= 10_000:
            raise ValueError(f"interval_ms must be within 1..10000, got {interval_ms}")
        self.up_threshold, self.up_times = float(up_threshold), int(up_times)
        self.down_threshold, self.down_times = float(down_threshold), int(down_times)
        self.interval_ns = int(interval_ms * 1e6)
        self.rush = bool(rush_boost_enabled)
        self.rush_threshold, self.rush_times = float(rush_boost_threshold), int(rush_boost_times)
        self.min_cpus, self.max_cpus = int(min_cpus), int(max_cpus)
        self._history: deque[float] = deque(maxlen=max(self.up_times, self.down_times))
        self._rush_count = 0

    def start(self, cpu: Cpu, cores: list[Core]) -> None:
        self._attach(cpu, cores, lowest=1)
        self._open()
        self._arm()

    def _tick(self, _: object) -> None:
        cpu = self.cpu
        assert cpu is not None
        load = sum(self._loads().values())
        self._open()
        online = [c for c in self.cores if c.online]
        n = len(online)
        self._history.append(load)
        target = n
        if self.rush and load > self.rush_threshold * n:
            self._rush_count += 1
            if self._rush_count >= self.rush_times:
                target = max(n + 1, -(-int(load) // int(self.up_threshold)))
                self._rush_count = 0
        else:
            self._rush_count = 0
        if target == n and len(self._history) >= self.up_times:
            recent = list(self._history)[-self.up_times :]
            if sum(recent) / len(recent) > self.up_threshold * n:
                target = n + 1
        if target == n and n > 1 and len(self._history) >= self.down_times:
            recent = list(self._history)[-self.down_times :]
            if sum(recent) / len(recent) < self.down_threshold * (n - 1):
                target = n - 1
        target = min(max(target, self.min_cpus), self.max_cpus)
        if target != n:
            self._history.clear()
            cpu.set_online_count(self.cores, target)
        self._rearm(load)


class CoreCtl(_Sampler):
    """Qualcomm core_ctl for one cluster; see the module docstring."""

    name: ClassVar[str] = "core_ctl"

    def __init__(
        self,
        min_cpus: int = 1,
        max_cpus: int = 0,
        busy_up_thres: object = 60,
        busy_down_thres: object = 30,
        offline_delay_ms: float = 100,
        task_thres: int = 4,
        is_big_cluster: int = 0,
        not_preferred: object = 0,
        enable: int = 1,
        window_ms: float = 20,
    ) -> None:
        super().__init__()
        self.min_cpus, self.max_cpus = int(min_cpus), int(max_cpus)
        self._up_raw, self._down_raw = busy_up_thres, busy_down_thres
        if not 0 <= offline_delay_ms <= 600_000:
            raise ValueError(f"offline_delay_ms must be within 0..600000, got {offline_delay_ms}")
        self.offline_delay_ns = int(offline_delay_ms * 1e6)
        self.task_thres = int(task_thres)
        self.window_ns = int(window_ms * 1e6)
        self.enabled = bool(enable)
        self._is_busy: dict[int, bool] = {}
        self._need_less_since: int | None = None

    def start(self, cpu: Cpu, cores: list[Core]) -> None:
        self._attach(cpu, cores, lowest=0)
        self.up = _per_cpu(self._up_raw, len(cores), "busy_up_thres")
        self.down = _per_cpu(self._down_raw, len(cores), "busy_down_thres")
        self._is_busy = {core.cid: False for core in cores}
        self.interval_ns = self.window_ns
        if self.enabled:
            self._open()
            self._arm()

    def _tick(self, _: object) -> None:
        cpu = self.cpu
        assert cpu is not None
        loads = self._loads()
        self._open()
        for k, core in enumerate(self.cores):
            load = loads[core.cid]
            if load >= self.up[k]:
                self._is_busy[core.cid] = True
            elif load < self.down[k]:
                self._is_busy[core.cid] = False
        need = sum(self._is_busy[c.cid] for c in self.cores if c.online)
        if cpu.runnable_on(self.cores) > self.task_thres:
            need += 1
        need = min(max(need, self.min_cpus, 1), self.max_cpus)
        online = sum(c.online for c in self.cores)
        now = cpu.env.now
        if need > online:
            self._need_less_since = None
            cpu.set_online_count(self.cores, need)
        elif need < online:
            if self._need_less_since is None:
                self._need_less_since = now
            elif now - self._need_less_since >= self.offline_delay_ns:
                cpu.set_online_count(self.cores, online - 1)
                self._need_less_since = now
        else:
            self._need_less_since = None
        self._rearm(sum(loads.values()))


HOTPLUGS: Final[dict[str, type[Any]]] = {"mtk_hps": MtkHps, "core_ctl": CoreCtl}


def make_hotplug(name: str, tunables: Mapping[str, Any], where: str) -> Hotplug:
    """``HOTPLUGS[name](**tunables)`` with one-line errors naming ``where``."""
    try:
        hotplug: Hotplug = build_component(name, HOTPLUGS, tunables, "hotplug")
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None
    return hotplug
