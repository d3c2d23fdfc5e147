"""cpufreq governors: who sets each cluster's clock, from what, how often.

One :class:`FreqPolicy` per cluster (the kernel's ``struct cpufreq_policy``) holds the
OPP table, the current step and the limits; its governor asks for steps through
:meth:`FreqPolicy.request` and the change lands after the driver's transition latency.
Governors plug in behind :class:`Governor` and the :data:`GOVERNORS` registry; a
profile names one per phone with per-cluster tunables under the kernel's sysfs names
and units (µs, kHz, %), and ``--set governor=name:key=value,…`` swaps it for a run.

* ``performance`` / ``powersave``: the top / bottom step, fixed.
* ``schedutil`` (kernel/sched/cpufreq_schedutil.c): on every utilisation update — a
  wake-up on the cluster, and each scheduler tick (``CONFIG_HZ``) while a CPU is busy —
  ``next_freq = 1.25 × max_freq × util / capacity`` of the busiest CPU, its PELT
  utilisation boosted by schedtune/uclamp, resolved to the lowest step at or above it;
  a raise waits ``up_rate_limit_us`` and a drop ``down_rate_limit_us`` since the last
  change (Android's split of mainline's ``rate_limit_us``). Qualcomm's ``hispeed_load``
  / ``hispeed_freq``: a CPU above ``hispeed_load`` % of its capacity asks at least
  ``hispeed_freq``.
* ``interactive`` (drivers/cpufreq/cpufreq_interactive.c, Android 3.x–4.9 kernels):
  every ``timer_rate`` µs the busy share of the last window at the current clock gives
  ``loadadjfreq``; at or above ``go_hispeed_load`` % it jumps to ``hispeed_freq`` (and
  above it only after ``above_hispeed_delay``), else it picks the lowest step whose
  ``target_loads`` entry the load meets (``choose_freq``); it never drops within
  ``min_sample_time`` of the last raise.
* ``ondemand`` (drivers/cpufreq/cpufreq_ondemand.c, 4.x): every ``sampling_rate`` µs,
  a load above ``up_threshold`` % goes to the top step (and stays for
  ``sampling_down_factor`` samples), else ``min + load × (max − min) / 100``.

Windowed governors' timers are deferrable as the kernel's are: they stop when the whole
cluster idles through a window at its bottom step and restart on the next wake-up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from mqoe.device.cpu import governor_core
from mqoe.device.cpu.opp import OppTable
from mqoe.engine import Timer
from mqoe.errors import UserError
from mqoe.params import build_component

if TYPE_CHECKING:
    from mqoe.device.cpu.hotplug import Hotplug
    from mqoe.device.cpu.sched import Cpu
    from mqoe.device.cpu.sched_types import Core


class FreqPolicy:
    """One cluster's cpufreq policy: OPPs, current step, limits, its governor."""

    def __init__(
        self, cpu: Cpu, name: str, cores: list[Core], opp: OppTable, latency_ns: int
    ) -> None:
        self.cpu = cpu
        self.name = name
        self.cores = cores
        self.opp = opp
        self.cur_khz = opp.max_khz
        self.min_khz = opp.min_khz
        self.max_khz = opp.max_khz
        self.latency_ns = latency_ns
        self.governor: Governor = Performance()
        self.hotplug: Hotplug | None = None  # the hotplug policy sampling these cores
        self.n_busy = 0  # cores of the cluster running a thread
        self.active_opp_ns = [0] * len(opp.khz)  # time with any core busy, per OPP
        self.acct_t = 0  # active time accounted up to here
        self.last_change_ns = 0
        self.changes = 0
        self._target = self.cur_khz
        self._pending: Timer | None = None
        self.wants_enqueue = False  # the governor reacts to wake-ups (schedutil)

    @property
    def now(self) -> int:
        return self.cpu.env.now

    def schedule(self, delay_ns: int, callback: Callable[[Any], None]) -> Timer:
        return self.cpu.env.schedule(max(1, delay_ns), callback)

    def util(self, core: Core) -> float:
        """The CPU's PELT utilisation now (capacity units), boosted by its threads'
        schedtune / uclamp settings, as schedutil reads it."""
        return self.cpu.core_util(core, boosted=True)

    def busy_ns(self, core: Core) -> int:
        """The CPU's cumulative busy time up to now (for windowed load)."""
        self.cpu._account(core)  # as cpu.core_busy_ns, a call less: read per CPU per sample
        return core._busy_total

    def request(self, khz: float) -> None:
        """Ask for a step (resolved with RELATION_L within the limits); it lands after
        the transition latency. A newer request replaces a pending one."""
        target = self.opp.clamp(khz, self.min_khz, self.max_khz)
        if target == self._target:
            return
        self._target = target
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        if self.latency_ns <= 0:
            self._apply(target)
        else:
            self._pending = self.cpu.env.schedule(self.latency_ns, self._apply, target)

    def _apply(self, khz: int) -> None:
        self._pending = None
        if khz != self.cur_khz:
            self.cpu._set_freq(self, khz)
            self.last_change_ns = self.now
            self.changes += 1

    @property
    def target_khz(self) -> int:
        return self._target

    def set_min(self, khz: int) -> None:
        """``scaling_min_freq`` changes (a perf lock taken or released): the floor is
        the first step at or above ``khz`` (at most the top one); a clock below a raised
        floor goes up to it now (cpufreq's governor LIMITS event), a lowered floor lets
        the governor come down at its next decision."""
        floor = min(self.opp.at_least(khz), self.max_khz)
        if floor == self.min_khz:
            return
        self.min_khz = floor
        if self._target < floor:
            self.request(floor)
        self.governor.on_limits(self)


class Governor(Protocol):
    """A cluster's frequency policy. ``start`` once; ``on_busy`` when a core of an idle
    cluster starts running (restart deferrable timers); ``on_enqueue`` on every wake-up
    onto the cluster, only if ``policy.wants_enqueue``; ``on_limits`` after the policy's
    limits changed (the clock already within them)."""

    name: ClassVar[str]

    def start(self, policy: FreqPolicy) -> None: ...

    def on_busy(self, policy: FreqPolicy) -> None: ...

    def on_enqueue(self, policy: FreqPolicy, core: Core) -> None: ...

    def on_limits(self, policy: FreqPolicy) -> None: ...


class _Fixed:
    name: ClassVar[str] = ""

    def start(self, policy: FreqPolicy) -> None:
        raise NotImplementedError

    def on_busy(self, policy: FreqPolicy) -> None:
        pass

    def on_enqueue(self, policy: FreqPolicy, core: Core) -> None:
        pass

    def on_limits(self, policy: FreqPolicy) -> None:
        self.start(policy)  # the top / bottom step of the new limits


class Performance(_Fixed):
    name = "performance"

    def start(self, policy: FreqPolicy) -> None:
        policy.request(policy.max_khz)


class Powersave(_Fixed):
    name = "powersave"

    def start(self, policy: FreqPolicy) -> None:
        policy.request(policy.min_khz)


def _us(value: float, what: str) -> int:
    if not 0 <= value <= 10_000_000:
        raise ValueError(f"{what} must be within 0..10,000,000 µs, got {value}")
    return int(value * 1000)


def _pct(value: float, what: str) -> float:
    if not 0 < value <= 100:
        raise ValueError(f"{what} must be a percentage in (0, 100], got {value}")
    return float(value)


class Schedutil:
    """schedutil; see the module docstring. Tick = ``1 / CONFIG_HZ`` of the profile."""

    name: ClassVar[str] = "schedutil"

    def __init__(
        self,
        up_rate_limit_us: float = -1,
        down_rate_limit_us: float = -1,
        rate_limit_us: float = -1,
        hispeed_load: float = 0,
        hispeed_freq: int = 0,
        pl: int = 0,
        iowait_boost_enable: int = 0,
    ) -> None:
        # Unset limits: mainline's default, the transition delay (1000 × the driver's
        # latency, at most 10 ms; 1 ms when the driver gives none), set at start.
        self._up = up_rate_limit_us if up_rate_limit_us >= 0 else rate_limit_us
        self._down = down_rate_limit_us if down_rate_limit_us >= 0 else rate_limit_us
        for value, what in ((self._up, "up_rate_limit_us"), (self._down, "down_rate_limit_us")):
            if value >= 0:
                _us(value, what)
        if hispeed_load and not 0 < hispeed_load <= 100:
            raise ValueError(f"hispeed_load must be a percentage, got {hispeed_load}")
        self.hispeed_load = float(hispeed_load)
        self.hispeed_freq = int(hispeed_freq)
        self.up_ns = 0
        self.down_ns = 0
        self._tick: Timer | None = None
        self._policy: FreqPolicy | None = None

    def start(self, policy: FreqPolicy) -> None:
        self._policy = policy
        # cpufreq_policy_transition_delay_us(): LATENCY_MULTIPLIER (1000) × the
        # driver's latency in µs, at most 10 ms; 1 ms (the multiplier) without one.
        default_us = min(policy.latency_ns // 1000 * 1000, 10_000) or 1000
        self.up_ns = _us(self._up if self._up >= 0 else default_us, "up_rate_limit_us")
        self.down_ns = _us(self._down if self._down >= 0 else default_us, "down_rate_limit_us")
        policy.wants_enqueue = True
        policy.cpu.track_util = True  # schedutil reads PELT
        self.tick_ns = 1_000_000_000 // policy.cpu.hz
        self._update(policy)

    def next_freq(self, policy: FreqPolicy) -> float:
        """1.25 × max × util / capacity of the policy's busiest CPU (get_next_freq)."""
        best = 0.0
        for core in policy.cores:
            if not core.online:
                continue
            util = policy.util(core)
            if self.hispeed_load and util >= core.cap_orig * self.hispeed_load / 100:
                util = max(util, self.hispeed_freq * core.cap_orig / policy.opp.max_khz)
            best = max(best, util / core.cap_orig)
        return 1.25 * policy.opp.max_khz * best

    def _update(self, policy: FreqPolicy) -> None:
        target = policy.opp.clamp(self.next_freq(policy), policy.min_khz, policy.max_khz)
        current = policy.target_khz
        if target == current:
            return
        since = policy.now - policy.last_change_ns
        if since < (self.up_ns if target > current else self.down_ns):
            return
        policy.request(target)

    def on_enqueue(self, policy: FreqPolicy, core: Core) -> None:
        self._update(policy)

    def on_limits(self, policy: FreqPolicy) -> None:
        # sugov_limits: the next update ignores the rate limit (need_freq_update).
        target = policy.opp.clamp(self.next_freq(policy), policy.min_khz, policy.max_khz)
        policy.request(target)

    def on_busy(self, policy: FreqPolicy) -> None:
        if self._tick is None:
            self._tick = policy.schedule(self.tick_ns, self._on_tick)

    def _on_tick(self, _: object) -> None:
        policy = self._policy
        assert policy is not None
        self._tick = None
        self._update(policy)
        if policy.n_busy:  # NO_HZ: an idle CPU takes no ticks
            self._tick = policy.schedule(self.tick_ns, self._on_tick)


def _parse_pairs(text: str | float, what: str) -> list[tuple[int, float]]:
    """``"85 1500000:90 1800000:95"`` (value, then freq:value from that freq up) →
    [(0, 85), (1500000, 90), (1800000, 95)], as interactive's target_loads and
    above_hispeed_delay take them."""
    tokens = str(text).replace(":", " ").split()
    try:
        numbers = [float(t) for t in tokens]
    except ValueError:
        raise ValueError(f"{what} {text!r}: expected 'V F:V …' numbers") from None
    if len(numbers) % 2 != 1:
        raise ValueError(f"{what} {text!r}: expected a value, then freq:value pairs")
    pairs = [(0, numbers[0])]
    for k in range(1, len(numbers), 2):
        freq = int(numbers[k])
        if freq <= pairs[-1][0]:
            raise ValueError(f"{what} {text!r}: frequencies must ascend")
        pairs.append((freq, numbers[k + 1]))
    return pairs


class _Windowed:
    """Shared by interactive and ondemand: a deferrable sampling timer and each CPU's
    busy share over the last window."""

    period_ns: int = 20_000_000

    def __init__(self) -> None:
        self._policy: FreqPolicy | None = None
        self._timer: Timer | None = None
        self._busy: list[int] = []  # each CPU's busy time at the window's start
        self._window_start = 0

    def start(self, policy: FreqPolicy) -> None:
        self._policy = policy
        self._open_window(policy)
        self._arm(policy, self.period_ns)

    def _arm(self, policy: FreqPolicy, period_ns: int) -> None:
        self._timer = policy.schedule(period_ns, self._on_timer)

    @staticmethod
    def _read_busy(policy: FreqPolicy) -> list[int]:
        """The CPUs' cumulative busy times now, in ``policy.cores`` order: as
        ``policy.busy_ns`` gives them, read without accounting (a running core has
        been busy since its last accounting; an idle or offline one adds nothing)."""
        return governor_core.read_busy(policy.cores, policy.cpu.env.now)

    def _open_window(self, policy: FreqPolicy, busy: list[int] | None = None) -> None:
        """A new window from now; ``busy``: the CPUs' busy times now, if already read."""
        self._window_start = policy.cpu.env.now
        self._busy = self._read_busy(policy) if busy is None else busy

    def _window_load(self, policy: FreqPolicy) -> tuple[float, list[int]]:
        """The busiest online CPU's busy share of the window (0–100), and the CPUs'
        busy times now (read once: the next window starts from them)."""
        return governor_core.window_load(
            policy.cores, self._busy, self._window_start, policy.cpu.env.now
        )

    def on_busy(self, policy: FreqPolicy) -> None:
        if self._timer is None:
            self._open_window(policy)
            self._arm(policy, self.period_ns)

    def on_enqueue(self, policy: FreqPolicy, core: Core) -> None:
        pass

    def on_limits(self, policy: FreqPolicy) -> None:
        # A lowered floor is acted on at the next sample: restart a stopped timer.
        if self._timer is None:
            self._open_window(policy)
            self._arm(policy, self.period_ns)

    def _on_timer(self, _: object) -> None:
        policy = self._policy
        assert policy is not None
        self._timer = None
        # Busy times are read once: the closing window's load and the next window's
        # start are the same instant (a clock change in _sample moves no busy time).
        load, busy = self._window_load(policy)
        self._sample(policy, load)
        self._open_window(policy, busy)
        if policy.n_busy or load > 0 or policy._target > policy.min_khz:
            self._arm(policy, self._next_period(policy))

    def _next_period(self, policy: FreqPolicy) -> int:
        return self.period_ns

    def _sample(self, policy: FreqPolicy, load: float) -> None:
        raise NotImplementedError


class Interactive(_Windowed):
    """interactive; see the module docstring. Defaults are the kernel's
    (cpufreq_interactive.c: go_hispeed_load 99, target_loads 90, min_sample_time
    80 ms, timer_rate 20 ms, above_hispeed_delay 20 ms, hispeed_freq = max). Boost
    pulses, ``timer_slack``, ``io_is_busy`` and Qualcomm's scheduler-load extensions
    (``use_sched_load``, ``use_migration_notif``, ``max_freq_hysteresis``, …) are
    accepted as init scripts write them but not modelled."""

    name: ClassVar[str] = "interactive"

    def __init__(
        self,
        hispeed_freq: int = 0,
        go_hispeed_load: float = 99,
        target_loads: str = "90",
        above_hispeed_delay: str = "20000",
        timer_rate: float = 20000,
        min_sample_time: float = 80000,
        timer_slack: float = 80000,
        boost: int = 0,
        boostpulse_duration: float = 80000,
        io_is_busy: int = 0,
        use_sched_load: int = 0,
        sampling_down_factor: float = 0,
        use_migration_notif: int = 0,
        max_freq_hysteresis: float = 0,
        align_windows: int = 0,
        ignore_hispeed_on_notif: int = 0,
        fast_ramp_down: int = 0,
        enable_prediction: int = 0,
    ) -> None:
        super().__init__()
        self.hispeed_freq = int(hispeed_freq)
        self.go_hispeed_load = _pct(go_hispeed_load, "go_hispeed_load")
        self.target_loads = _parse_pairs(target_loads, "target_loads")
        self.above_hispeed_delay = [
            (f, float(_us(v, "above_hispeed_delay")))
            for f, v in _parse_pairs(above_hispeed_delay, "above_hispeed_delay")
        ]
        self.period_ns = _us(timer_rate, "timer_rate") or 20_000_000
        self.min_sample_ns = _us(min_sample_time, "min_sample_time")
        self.boosted = bool(boost)
        self._floor_khz = 0
        self._floor_validate = 0
        self._hispeed_validate = 0

    def start(self, policy: FreqPolicy) -> None:
        if not self.hispeed_freq:
            self.hispeed_freq = policy.max_khz
        self._floor_khz = policy.cur_khz
        super().start(policy)

    def choose_freq(self, policy: FreqPolicy, loadadjfreq: float) -> int:
        """The kernel's choose_freq: the lowest step whose target load the load at that
        step meets, found by the same bracketing iteration."""
        return governor_core.choose_freq(policy.opp, policy._target, self.target_loads, loadadjfreq)

    def _sample(self, policy: FreqPolicy, load: float) -> None:
        now = policy.cpu.env.now
        target = policy._target
        loadadjfreq = load * policy.cur_khz
        cpu_load = loadadjfreq / target if target else 0.0
        if cpu_load >= self.go_hispeed_load or self.boosted:
            if target < self.hispeed_freq:
                new = self.hispeed_freq
            else:
                new = max(self.choose_freq(policy, loadadjfreq), self.hispeed_freq)
        else:
            new = self.choose_freq(policy, loadadjfreq)
            if new > self.hispeed_freq and target < self.hispeed_freq:
                new = self.hispeed_freq
        new = policy.opp.clamp(new, policy.min_khz, policy.max_khz)
        rising = target >= self.hispeed_freq and new > target  # only then is the delay read
        if rising and now - self._hispeed_validate < governor_core.lookup(
            self.above_hispeed_delay, target
        ):
            return
        self._hispeed_validate = now
        if new < self._floor_khz and now - self._floor_validate < self.min_sample_ns:
            return
        if not self.boosted or new > self.hispeed_freq:
            self._floor_khz = new
            self._floor_validate = now
        policy.request(new)


class Ondemand(_Windowed):
    """ondemand; see the module docstring. Defaults are the kernel's (up_threshold 80,
    sampling_down_factor 1, sampling_rate 20 ms here: the kernel derives it from the
    transition latency). Qualcomm's extra tunables (``down_differential*``,
    ``up_threshold_multi_core``, ``optimal_freq``, ``sync_freq``,
    ``up_threshold_any_cpu_load``) and ``io_is_busy`` are accepted as init scripts write
    them but not modelled."""

    name: ClassVar[str] = "ondemand"

    def __init__(
        self,
        sampling_rate: float = 20000,
        up_threshold: float = 80,
        sampling_down_factor: int = 1,
        powersave_bias: int = 0,
        io_is_busy: int = 0,
        down_differential: float = 10,
        down_differential_multi_core: float = 0,
        up_threshold_multi_core: float = 0,
        optimal_freq: int = 0,
        sync_freq: int = 0,
        up_threshold_any_cpu_load: float = 0,
    ) -> None:
        super().__init__()
        self.period_ns = _us(sampling_rate, "sampling_rate") or 20_000_000
        self.up_threshold = _pct(up_threshold, "up_threshold")
        if not 1 <= sampling_down_factor <= 100_000:
            raise ValueError(f"sampling_down_factor must be ≥ 1, got {sampling_down_factor}")
        self.down_factor = int(sampling_down_factor)

    def _next_period(self, policy: FreqPolicy) -> int:
        at_max = policy.target_khz == policy.max_khz
        return self.period_ns * (self.down_factor if at_max else 1)

    def _sample(self, policy: FreqPolicy, load: float) -> None:
        if load > self.up_threshold:
            policy.request(policy.max_khz)
            return
        low, high = policy.opp.min_khz, policy.opp.max_khz
        policy.request(low + load * (high - low) / 100)


GOVERNORS: Final[dict[str, type[Any]]] = {
    "performance": Performance,
    "powersave": Powersave,
    "schedutil": Schedutil,
    "interactive": Interactive,
    "ondemand": Ondemand,
}


def make_governor(name: str, tunables: Mapping[str, object], where: str) -> Governor:
    """``GOVERNORS[name](**tunables)`` with one-line errors naming ``where``."""
    try:
        governor: Governor = build_component(name, GOVERNORS, tunables, "governor")
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None
    return governor
