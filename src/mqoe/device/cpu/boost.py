"""Interaction boost: what a phone's power HAL does when the user touches the screen.

Android's framework sends ``POWER_HINT_INTERACTION`` on user activity (a touch; on
Qualcomm's framework a fling also sends the scroller's duration with its scroll-boost
hint). The vendor power HAL answers with a perf lock for that long: on the Snapdragon
phones, each cluster's ``scaling_min_freq`` raised to the scroll boost's floor
(``VENDOR_HINT_SCROLL_BOOST`` in the perf HAL's ``perfboostsconfig.xml``), for at least
``kMinInteractiveDuration`` and at most ``kMaxInteractiveDuration`` ms
(LineageOS ``hardware/qcom/power`` ``power-<soc>.c``: ``process_interaction_hint``); a
hint the running lock already covers is dropped, a longer one extends it. When the lock
is released the floors fall back and the governor brings the clock down at its own pace.

Without it, UI work that arrives in bursts runs on a clock the governor has not raised
yet (an ``interactive`` timer_rate of 20 ms is more than a frame).

The same perf lock may request a scheduler boost (the ``SCHEDBOOST`` resource,
``/proc/sys/kernel/sched_boost``; the SDM660, MSM8998 and SDM845 scroll boosts ask for 2,
conservative): while it holds, the top-app and foreground threads (the stune groups with
``sched_boost_no_override``) wake on the big cluster and nothing else is pulled up
(:meth:`Cpu.set_sched_boost`). The launch boost is not modelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqoe.device.profiles.cpu_schema import InteractionBoostSpec
from mqoe.engine import Timer

if TYPE_CHECKING:
    from mqoe.device.cpu.governors import FreqPolicy
    from mqoe.device.cpu.sched import Cpu


class InteractionBoost:
    """One phone's interaction perf lock: ``hint(duration_ns)`` takes or extends it."""

    def __init__(self, cpu: Cpu, spec: InteractionBoostSpec) -> None:
        self.cpu = cpu
        self.spec = spec
        self._floors: list[tuple[FreqPolicy, int]] = [
            (policy, spec.min_freq_mhz[name] * 1000)
            for name, policy in cpu.policies.items()
            if name in spec.min_freq_mhz
        ]
        self._saved: list[int] = []  # the floors the lock replaced, restored on release
        self._boost_groups = frozenset(spec.sched_boost_no_override)
        self._min_ns = spec.min_duration_ms * 1_000_000
        self._max_ns = spec.max_duration_ms * 1_000_000
        self.until_ns = 0  # the running lock's end (0: none yet)
        self.hints = 0  # hints that took or extended the lock
        self.boosted_ns = 0  # total time under the lock
        self._since = 0
        self._release: Timer | None = None

    @property
    def active(self) -> bool:
        return self._release is not None

    def hint(self, duration_ns: int = 0) -> None:
        """POWER_HINT_INTERACTION lasting ``duration_ns`` (0: a touch, the minimum)."""
        now = self.cpu.env.now
        end = now + min(max(duration_ns, self._min_ns), self._max_ns)
        if self.active and end <= self.until_ns:
            return  # the running lock covers it
        self.hints += 1
        self.until_ns = end
        if self._release is not None:
            self._release.cancel()
        else:
            self._since = now
            self._saved = [policy.min_khz for policy, _ in self._floors]
            for policy, floor in self._floors:
                policy.set_min(max(floor, policy.min_khz))
            if self.spec.sched_boost:
                self.cpu.set_sched_boost(self.spec.sched_boost, self._boost_groups)
        self._release = self.cpu.env.schedule(end - now, self._on_release)

    def _on_release(self, _: object) -> None:
        self._release = None
        self.boosted_ns += self.cpu.env.now - self._since
        for (policy, _), base in zip(self._floors, self._saved, strict=True):
            policy.set_min(base)
        if self.spec.sched_boost:
            self.cpu.set_sched_boost(0)

    def boosted_total_ns(self) -> int:
        """Time under the lock so far (the running one counted up to now)."""
        running = self.cpu.env.now - self._since if self.active else 0
        return self.boosted_ns + running
