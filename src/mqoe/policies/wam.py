"""Write-amplification mitigation (WAM) policies: when freed flash pages are discarded.

Flash GC copies every page it believes valid (see :mod:`mqoe.device.ftl`); a discard
tells it which pages a deleted file no longer needs. *When* to send discards is the
policy (the responsiveness study, MobiCom 2020), behind the :class:`WamPolicy` protocol's
small decision hooks; the :class:`Trimmer` (vold's fstrim, the mechanism) asks them and
issues the I/O:

* ``realtime`` — the default (``-o discard``): every delete queues its discards at once.
  Fresh blocks keep writes fast, but a large delete queues seconds of discards that any
  later ``fsync`` must wait for (ANR, or SNR when a system thread waits).
* ``lazy`` — batched: trim all free space at most once a day, when idle and charging
  (Android's idle maintenance, ~03:00). It cannot be interrupted (heavy I/O if the user
  picks up the phone) and, if killed, restarts from the head.
* ``practical`` — the fix: no real-time discards; count the deleted bytes S_d and, once
  S_d ≥ ``threshold_gb`` (6 GB, the study's value) and the screen is locked, trim the deleted
  pages in groups of 32 K pages (an ext4 block group); pause when the screen is unlocked,
  recording the group offset, and resume from there when it is locked again.

Choose one by name with :func:`make_wam_policy` (``"practical:threshold_gb=4"``); a
user's own policy is any object with these hooks. Simulated time 0 is 00:00 of day 0.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy.typing as npt

from mqoe.device.cpu import Fair, ThreadState
from mqoe.device.ftl import PAGE_BYTES
from mqoe.device.storage import Storage
from mqoe.engine import Event, seconds
from mqoe.params import make_component

GROUP_PAGES = 32768  # responsiveness study: trim in groups of 32 K pages (= an ext4 block group)
_GIB = 1 << 30
_DAY_NS = seconds(86400)
_HOUR_NS = seconds(3600)
TRIM_CHECK_INTERVAL_NS = seconds(60)  # assumed: how often the trimmer re-checks its policy
FSTRIM_NICE = 10  # assumed: vold's idle-maintenance work runs at background priority


class WamPolicy(Protocol):
    """When to discard freed pages. Hooks are asked by :class:`Trimmer`."""

    @property
    def name(self) -> str: ...

    @property
    def group_pages(self) -> int:
        """Pages (real, 4 KB) per batched-trim group: the pause/resume granularity."""
        ...

    def discard_on_delete(self) -> bool:
        """Discard a deleted file's pages at once (real-time WAM)?"""
        ...

    def should_trim(
        self, now_ns: int, deleted_bytes: int, screen_on: bool, charging: bool, last_trim_ns: int
    ) -> bool:
        """Start a batched-trim round now? ``deleted_bytes`` is S_d (freed, untrimmed);
        ``last_trim_ns`` the start of the last completed round (−1: never)."""
        ...

    def should_pause(self, screen_on: bool) -> bool:
        """Pause a running round (before its next group)?"""
        ...

    def offset_after_kill(self, offset_groups: int) -> int:
        """Where a killed round resumes: 0 restarts from the head."""
        ...

    def trims_all_free(self) -> bool:
        """Does a round trim every block group (an fstrim right after boot), or only the
        groups freed in since their last trim (ext4's WAS_TRIMMED; see
        :meth:`mqoe.device.storage.Storage.fitrim`)?"""
        ...


@dataclass(frozen=True)
class RealTime:
    """Discard at delete time (ext4/f2fs ``-o discard``); no batched trim."""

    group_pages: int = GROUP_PAGES
    name: str = dataclasses.field(default="realtime", init=False)

    def discard_on_delete(self) -> bool:
        return True

    def should_trim(
        self, now_ns: int, deleted_bytes: int, screen_on: bool, charging: bool, last_trim_ns: int
    ) -> bool:
        return False

    def should_pause(self, screen_on: bool) -> bool:
        return False

    def offset_after_kill(self, offset_groups: int) -> int:
        return 0

    def trims_all_free(self) -> bool:
        return False


@dataclass(frozen=True)
class Lazy:
    """Trim all free space at most once a day when idle (screen off) and charging."""

    start_hour: float = 3.0  # responsiveness study; Android's idle maintenance, ~03:00
    group_pages: int = GROUP_PAGES  # fstrim walks the file system group by group
    name: str = dataclasses.field(default="lazy", init=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.start_hour < 24.0:
            raise ValueError(f"start_hour must be in [0, 24), got {self.start_hour}")
        _check_group(self.group_pages)

    def discard_on_delete(self) -> bool:
        return False

    def should_trim(
        self, now_ns: int, deleted_bytes: int, screen_on: bool, charging: bool, last_trim_ns: int
    ) -> bool:
        if screen_on or not charging:
            return False
        start_ns = round(self.start_hour * _HOUR_NS)
        if now_ns < start_ns:
            return False
        # The most recent start_hour at or before now; one round per day after it.
        window_ns = start_ns + (now_ns - start_ns) // _DAY_NS * _DAY_NS
        return last_trim_ns < window_ns

    def should_pause(self, screen_on: bool) -> bool:
        return False  # uninterruptible (responsiveness study)

    def offset_after_kill(self, offset_groups: int) -> int:
        return 0  # responsiveness study: a killed lazy trim restarts from the beginning

    def trims_all_free(self) -> bool:
        # "Trim everything": vold's daily fstrim over the whole file system; ext4 still
        # skips the block groups with no free since their last trim (WAS_TRIMMED, kept
        # in memory until the next boot).
        return False


@dataclass(frozen=True)
class Practical:
    """Batched trim once S_d ≥ ``threshold_gb``, paused while the screen is unlocked."""

    threshold_gb: float = 6.0  # the study's: balances write speed against total trim time
    group_pages: int = GROUP_PAGES  # the study's page groups of 32 K pages
    name: str = dataclasses.field(default="practical", init=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.threshold_gb) and self.threshold_gb >= 0):
            raise ValueError(f"threshold_gb must be ≥ 0, got {self.threshold_gb}")
        _check_group(self.group_pages)

    def discard_on_delete(self) -> bool:
        return False  # the study's fix turns real-time discards off

    def should_trim(
        self, now_ns: int, deleted_bytes: int, screen_on: bool, charging: bool, last_trim_ns: int
    ) -> bool:
        return not screen_on and deleted_bytes > 0 and deleted_bytes >= self.threshold_gb * _GIB

    def should_pause(self, screen_on: bool) -> bool:
        return screen_on

    def offset_after_kill(self, offset_groups: int) -> int:
        return offset_groups  # the recorded offset survives

    def trims_all_free(self) -> bool:
        return False


def _check_group(group_pages: int) -> None:
    if group_pages < 1:
        raise ValueError(f"group_pages must be at least 1, got {group_pages}")


WAM_POLICIES: dict[str, type[Any]] = {"realtime": RealTime, "lazy": Lazy, "practical": Practical}


def make_wam_policy(spec: str) -> RealTime | Lazy | Practical:
    """``"name"`` or ``"name:key=value,…"`` → a policy; UserError for unknown names/keys."""
    policy: RealTime | Lazy | Practical = make_component(spec, WAM_POLICIES, "WAM policy")
    return policy


@dataclass(frozen=True, slots=True)
class TrimRound:
    """One run of the trim job: when, how far the round got (groups), pages discarded
    (model pages), how often it paused, and whether it was killed before the end (a
    round resumed after a kill is recorded again from the kill on)."""

    start_ns: int
    end_ns: int
    groups_done: int
    pages_trimmed: int
    pauses: int
    killed: bool


class Trimmer:
    """vold's trim service on one storage, driven by a :class:`WamPolicy`.

    The file system reports deletes through :meth:`delete`; the workload reports the
    screen (``set_screen``: on = unlocked, the user active) and the charger. A round
    walks the logical space in groups of ``policy.group_pages`` (FITRIM ranges), issuing
    one discard per non-empty group and waiting for it on the ``fstrim`` thread (in D
    state) before the next — so every group can be a pause point.
    """

    def __init__(
        self,
        storage: Storage,
        policy: WamPolicy,
        *,
        screen_on: bool = False,
        charging: bool = False,
        check_interval_ns: int = TRIM_CHECK_INTERVAL_NS,
    ) -> None:
        if check_interval_ns <= 0:
            raise ValueError("check_interval_ns must be positive")
        self.storage = storage
        self.policy = policy
        self.env = storage.env
        self.thread = storage.cpu.thread("fstrim", Fair(FSTRIM_NICE), process="vold")
        self.screen_on = screen_on
        self.charging = charging
        self.deleted_bytes = 0  # S_d: bytes freed and not yet discarded
        self.offset_groups = 0  # groups of the current round already trimmed
        self.in_round = False
        self.paused = False
        self.last_trim_ns = -1
        self.rounds: list[TrimRound] = []
        self.check_interval_ns = check_interval_ns
        self.group_model_pages = max(1, policy.group_pages // storage.scale)
        self.n_groups = math.ceil(storage.ftl.logical_pages / self.group_model_pages)
        self._signal: Event | None = None
        self._round_start_ns = 0
        self._round_pages = 0
        self._round_pauses = 0
        self._deleted_at_start = 0
        self._process = self.env.process(self._daemon(), "fstrim")
        self.env.schedule(check_interval_ns, self._tick)

    # -- inputs -------------------------------------------------------------------------
    def delete(self, lpns: npt.ArrayLike, size_bytes: int) -> Event | None:
        """A file of ``size_bytes`` on model pages ``lpns`` is deleted. Real-time WAM
        queues its discard (the event is returned); otherwise S_d grows."""
        discard = self.policy.discard_on_delete()
        pages = max(1, math.ceil(size_bytes / PAGE_BYTES))
        done = self.storage.release(lpns, discard=discard, pages=pages)
        if not discard:
            self.deleted_bytes += size_bytes
            self._poke()
        return done

    def set_screen(self, on: bool) -> None:
        """Screen unlocked (on) or locked (off)."""
        self.screen_on = on
        self._poke()

    def set_charging(self, on: bool) -> None:
        self.charging = on
        self._poke()

    def kill(self) -> None:
        """The trim job is killed mid-round; the policy says where the next one starts."""
        if not self.in_round:
            return
        self._process.stop()
        if self.thread.state == ThreadState.BLOCKED_IO:  # it was waiting for a group
            self.storage.cpu.set_io_wait(self.thread, False)
        self._record(killed=True)
        self.offset_groups = self.policy.offset_after_kill(self.offset_groups)
        if self.offset_groups == 0:
            self.in_round = False
        else:  # the next record describes the continued job only
            self._round_start_ns = self.env.now
            self._round_pages = 0
            self._round_pauses = 0
        self._signal = None
        self._process = self.env.process(self._daemon(), "fstrim")

    # -- the daemon ---------------------------------------------------------------------
    def _daemon(self) -> Generator[Event, object, None]:
        policy, storage, cpu = self.policy, self.storage, self.storage.cpu
        while True:
            if not self.in_round:
                now = self.env.now
                if not policy.should_trim(
                    now, self.deleted_bytes, self.screen_on, self.charging, self.last_trim_ns
                ):
                    yield self._wait()
                    continue
                self._begin_round()
            if policy.should_pause(self.screen_on):
                if not self.paused:
                    self.paused = True
                    self._round_pauses += 1
                yield self._wait()
                continue
            self.paused = False
            if self.offset_groups >= self.n_groups:
                self._end_round()
                continue
            size = self.group_model_pages
            done = storage.fitrim(self.offset_groups * size, size, policy.trims_all_free())
            if done is not None:
                cpu.set_io_wait(self.thread, True)
                trimmed = yield done  # a discard's event carries its model page count
                cpu.set_io_wait(self.thread, False)
                assert isinstance(trimmed, int)
                self._round_pages += trimmed
            self.offset_groups += 1

    def _begin_round(self) -> None:
        self.in_round = True
        self.offset_groups = 0
        self._round_start_ns = self.env.now
        self._round_pages = 0
        self._round_pauses = 0
        self._deleted_at_start = self.deleted_bytes

    def _end_round(self) -> None:
        self._record(killed=False)
        self.in_round = False
        self.offset_groups = 0
        self.last_trim_ns = self._round_start_ns
        self.deleted_bytes -= self._deleted_at_start

    def _record(self, killed: bool) -> None:
        self.rounds.append(
            TrimRound(
                self._round_start_ns,
                self.env.now,
                self.offset_groups,
                self._round_pages,
                self._round_pauses,
                killed,
            )
        )

    def _wait(self) -> Event:
        self._signal = Event(self.env)
        return self._signal

    def _poke(self) -> None:
        signal = self._signal
        if signal is not None and not signal.triggered:
            signal.succeed()

    def _tick(self, _: object) -> None:
        self._poke()
        self.env.schedule(self.check_interval_ns, self._tick)
