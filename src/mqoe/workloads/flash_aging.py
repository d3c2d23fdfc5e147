"""Scenario ``flash-aging``: days of file churn under a WAM policy, with a daily storage
benchmark (the responsiveness study's write-speed and S_d-threshold figures, MobiCom 2020).

A phone whose flash starts ``fill`` full — aged by a file history of the churn's own kinds
(the files lie end to end and ``fill`` of them survive, :meth:`Storage.age`; the flash
then rewritten twice over at random in the surviving data) — is
used for ``days`` days: apps create and delete files (:class:`~mqoe.apps.file_churn.
FileChurn`, ``churn_gb_per_day`` written and, in the steady state, deleted per day), the
user unlocks the phone in sessions during waking hours and charges it on most nights
(the fleet's usage constants, :class:`~mqoe.workloads.fleet_usage.UsageConstants`), and
every delete goes through the :class:`~mqoe.policies.wam.Trimmer` of the chosen WAM
policy (``wam``, any spec such as ``practical:threshold_gb=4``). Every day at each of
``bench_hours`` (local times, e.g. ``"5,12,2.5"``: after the night's trim, midday, and
before the next) a storage benchmark app measures random (4 KB) and sequential (512 KB)
write speed on a copy of the flash as it is then (the device is not changed).

Nothing decides the speeds but the FTL: pages a deleted file held stay valid to the
flash until they are discarded, so garbage collection copies them, and write
amplification (and the time a write pays for it) grows with the untrimmed backlog.
Real-time WAM discards at once, lazy WAM once a night when charging, practical WAM when
the backlog S_d reaches its threshold — so the policies' write speeds, the number of
discards, and the time the trim job spends waiting on its discards all emerge.

Metrics: ``random_mbps`` / ``sequential_mbps`` (the day's average: means over every
benchmark from day ``warmup_days`` on; ``*_final`` the last one's; ``*_spread`` the
fastest time of day's mean less the slowest's, 0 with one time), ``trim_busy_s`` (the
batched trim job's time in D state waiting for its discards: the total batched-trim
duration),
``trimmed_gb`` and ``trim_s_per_gb`` (what the rounds discarded, and the time per GB),
``own_write_mbps`` (the phone's own writes — the churn's files — in MB per second of
device time, GC included, from day ``warmup_days`` on: what the long-run write
amplification costs the phone, where the benchmark sees one moment),
``trim_rounds``, ``discard_busy_s`` (device time of every discard, real-time ones
included), ``untrimmed_gb_mean`` (at benchmark times), ``write_amplification``,
``written_gb``, ``deleted_gb``. Tables: ``bench`` (one row per benchmark: day and hour),
``trim_rounds``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import pandas as pd

from mqoe.apps.file_churn import (
    APP_FILES,
    CACHE_FILES,
    MEDIA_FILES,
    FileChurn,
    FileChurnParams,
    history_pages,
)
from mqoe.device.cpu import ThreadState
from mqoe.device.ftl import PAGE_BYTES
from mqoe.device.phone import Phone
from mqoe.engine import Event, seconds
from mqoe.errors import UserError
from mqoe.policies.wam import Trimmer, make_wam_policy
from mqoe.workloads.base import ScenarioOutput, Session
from mqoe.workloads.fleet_usage import UsageConstants

_DAY_S = 86_400.0
_HOUR_S = 3_600.0
_GIB = float(1 << 30)
_MB = float(1 << 20)
_KINDS = (CACHE_FILES, MEDIA_FILES, APP_FILES)
# Bytes per hour the default churn kinds write (rate × mean size), to scale them.
_BASE_BYTES_PER_HOUR = sum(k.creates_per_hour * k.mean_size_kb * 1024 for k in _KINDS)


@dataclass(frozen=True)
class FlashAgingParams:
    days: float = 21.0  # the responsiveness study's crowd-sourcing ran three weeks
    wam: str = "realtime"  # realtime | lazy | practical[:threshold_gb=…] (mqoe.policies.wam)
    fill: float = 0.6  # share of the flash in use at the start (the fleet's mean, Beta(6, 4))
    # assumed: deleted (and, in the steady state, written) GB a day — the fleet's mean
    # for a 64 GB phone (median 0.5 GB with a heavy tail across users, fleet_usage).
    churn_gb_per_day: float = 1.5
    charge_prob: float = 0.8  # assumed: the fleet's Beta(8, 2) mean — charges most nights
    # When the benchmark runs each day (local hours, comma-separated: "5,12,2.5" runs it
    # after the night's trim, at midday and before the next trim).
    bench_hours: str = "12"
    bench_mb: float = 64.0  # assumed: a storage benchmark app's test file
    warmup_days: float = 2.0  # benchmarks before this are left out of the means

    def __post_init__(self) -> None:
        if not (self.days > 0 and 0 <= self.warmup_days < self.days):
            raise ValueError("days must be positive and warmup_days in [0, days)")
        if not 0.0 <= self.fill < 0.95:
            raise ValueError(f"fill must be in [0, 0.95), got {self.fill}")
        if not (self.churn_gb_per_day >= 0 and 0 <= self.charge_prob <= 1):
            raise ValueError("churn_gb_per_day must be ≥ 0 and charge_prob in [0, 1]")
        if not self.bench_mb > 0:
            raise ValueError("bench_mb must be positive")
        self.hours  # noqa: B018 (validates bench_hours)

    @property
    def hours(self) -> tuple[float, ...]:
        """``bench_hours`` as sorted, distinct hours in [0, 24)."""
        try:
            hours = sorted({float(h) for h in self.bench_hours.split(",")})
        except ValueError:
            raise ValueError(
                f"bench_hours must be hours separated by commas, got {self.bench_hours!r}"
            ) from None
        if not hours or not all(0 <= h < 24 for h in hours):
            raise ValueError(f"bench_hours must be in [0, 24), got {self.bench_hours!r}")
        return tuple(hours)


def churn_params(churn_gb_per_day: float) -> FileChurnParams:
    """The default file kinds (caches, media, apps) with creation rates scaled so they
    write ``churn_gb_per_day`` GiB a day."""
    factor = churn_gb_per_day * _GIB / 24.0 / _BASE_BYTES_PER_HOUR
    kinds = tuple(dataclasses.replace(k, creates_per_hour=k.creates_per_hour * factor)
                  for k in _KINDS)  # fmt: skip
    return FileChurnParams(kinds=kinds)


class _User:
    """Screen sessions during waking hours and overnight charging, on the trimmer."""

    def __init__(self, phone: Phone, trimmer: Trimmer, params: FlashAgingParams) -> None:
        self.phone, self.trimmer, self.params = phone, trimmer, params
        self.usage = UsageConstants()
        self.rng = phone.env.rng("flash-aging:user")
        phone.env.process(self._days(), "user")

    def _days(self) -> Generator[Event, object, None]:
        env, usage, rng = self.phone.env, self.usage, self.rng
        day = 0
        while True:
            day_start = day * _DAY_S
            wake = day_start + usage.wake_h * _HOUR_S
            sleep = day_start + usage.sleep_h * _HOUR_S
            yield from self._until(wake)
            self.trimmer.set_charging(False)  # unplugged at wake-up
            mean_gap = (sleep - wake) / usage.sessions_per_day
            while True:
                gap = rng.exponential(mean_gap)
                length = min(usage.session_max_s,
                             usage.session_median_s * math.exp(usage.session_sigma *
                                                               rng.standard_normal()))  # fmt: skip
                start = env.now / 1e9 + gap
                if start + length >= sleep:
                    break
                yield from self._until(start)
                self.trimmer.set_screen(True)
                yield from self._until(start + length)
                self.trimmer.set_screen(False)
            yield from self._until(sleep + usage.plug_after_bed_s)
            if rng.random() < self.params.charge_prob:
                self.trimmer.set_charging(True)
            day += 1

    def _until(self, t_s: float) -> Generator[Event, object, None]:
        delay = round(t_s * 1e9) - self.phone.env.now
        if delay > 0:
            yield self.phone.env.timeout(delay)


class FlashAging:
    name = "flash-aging"
    summary = "days of file churn under a WAM policy: daily write speed, trims (Aging or Glitching)"
    params_type = FlashAgingParams
    quick: Mapping[str, str] = MappingProxyType({"days": "2", "warmup_days": "0"})

    def build(self, phone: Phone, params: FlashAgingParams) -> Session:
        try:
            policy = make_wam_policy(params.wam)
        except (ValueError, TypeError) as exc:
            raise UserError(f"flash-aging: wam={params.wam!r}: {exc}") from None
        storage = phone.storage
        churn_kinds = churn_params(params.churn_gb_per_day)
        rng = phone.env.rng("flash-aging:age")
        total = storage.ftl.logical_pages * storage.scale
        history, kinds = history_pages(churn_kinds, rng, total)
        storage.age(params.fill, rng, file_pages=history, file_goals=kinds)
        trimmer = Trimmer(storage, policy)
        churn = FileChurn(phone, trimmer, churn_kinds)
        _User(phone, trimmer, params)
        bench_rows: list[dict[str, float]] = []
        bench_rng = phone.env.rng("flash-aging:bench")
        scale_gb = storage.scale * PAGE_BYTES / _GIB

        def bench(when: object) -> None:
            assert isinstance(when, tuple)
            day, hour = when
            free_mb = storage.free_pages * PAGE_BYTES / _MB
            if params.bench_mb > free_mb:  # the test file must fit, as on a phone
                raise UserError(
                    f"flash-aging: bench_mb={params.bench_mb:g}: the phone has only "
                    f"{free_mb:.0f} MB free on day {day} (lower bench_mb or fill)"
                )
            bench_rows.append(
                {
                    "day": float(day),
                    "hour": hour,
                    "random_mbps": storage.write_speed("random", bench_rng, params.bench_mb),
                    "sequential_mbps": storage.write_speed(
                        "sequential", bench_rng, params.bench_mb
                    ),
                    "untrimmed_gb": storage.untrimmed_pages * scale_gb,
                    "free_gb": storage.free_pages * PAGE_BYTES / _GIB,
                    "deleted_gb": trimmer.deleted_bytes / _GIB,
                }
            )

        # The phone's own writes are counted from the end of the warm-up, as the
        # benchmarks are.
        own_writes = {"pages": 0, "ns": 0}

        def warmed_up(_: object) -> None:
            own_writes["pages"], own_writes["ns"] = (
                storage.flash_write_pages,
                storage.flash_write_ns,
            )

        duration_ns = seconds(params.days * _DAY_S)
        phone.env.schedule(seconds(params.warmup_days * _DAY_S), warmed_up, None)
        day = 0
        while seconds(day * _DAY_S) < duration_ns:
            for hour in params.hours:
                at = seconds(day * _DAY_S + hour * _HOUR_S)
                if at < duration_ns:
                    phone.env.schedule(at, bench, (day, hour))
            day += 1

        def collect() -> ScenarioOutput:
            return _collect(phone, trimmer, churn, params, bench_rows, own_writes)

        return Session(duration_ns, collect)


def _collect(
    phone: Phone,
    trimmer: Trimmer,
    churn: FileChurn,
    params: FlashAgingParams,
    bench_rows: list[dict[str, float]],
    own_writes: Mapping[str, int],
) -> ScenarioOutput:
    storage = phone.storage
    own_pages = storage.flash_write_pages - own_writes["pages"]
    own_s = (storage.flash_write_ns - own_writes["ns"]) / 1e9
    table = pd.DataFrame(bench_rows, columns=["day", "hour", "random_mbps", "sequential_mbps",
                                              "untrimmed_gb", "free_gb", "deleted_gb"])  # fmt: skip
    steady = table[table["day"] >= params.warmup_days]
    by_hour = steady.groupby("hour")[["random_mbps", "sequential_mbps"]].mean()
    rounds = pd.DataFrame(
        [dataclasses.asdict(r) for r in trimmer.rounds],
        columns=["start_ns", "end_ns", "groups_done", "pages_trimmed", "pauses", "killed"],
    )
    trim_busy_s = trimmer.thread.state_ns[ThreadState.BLOCKED_IO] / 1e9
    trimmed_gb = float(rounds["pages_trimmed"].sum()) * storage.scale * PAGE_BYTES / _GIB
    timing = storage.timing
    discard_busy_us = storage.discards * timing.discard_us + (
        storage.pages_discarded * timing.discard_page_us
    )

    def mean(column: str) -> float:
        return float(steady[column].mean()) if len(steady) else math.nan

    def last(column: str) -> float:
        return float(table[column].iloc[-1]) if len(table) else math.nan

    def spread(column: str) -> float:
        return float(by_hour[column].max() - by_hour[column].min()) if len(steady) else math.nan

    metrics: dict[str, float | int] = {
        "random_mbps": mean("random_mbps"),
        "sequential_mbps": mean("sequential_mbps"),
        "random_mbps_final": last("random_mbps"),
        "sequential_mbps_final": last("sequential_mbps"),
        "random_mbps_spread": spread("random_mbps"),
        "sequential_mbps_spread": spread("sequential_mbps"),
        "own_write_mbps": own_pages * PAGE_BYTES / _MB / own_s if own_s > 0 else math.nan,
        "untrimmed_gb_mean": mean("untrimmed_gb"),
        "trim_busy_s": trim_busy_s,
        "trimmed_gb": trimmed_gb,
        "trim_s_per_gb": trim_busy_s / trimmed_gb if trimmed_gb > 0 else math.nan,
        "trim_rounds": len(rounds),
        "trim_pauses": int(rounds["pauses"].sum()) if len(rounds) else 0,
        "discards": storage.discards,
        "discard_busy_s": discard_busy_us / 1e6,
        "write_amplification": storage.ftl.write_amplification,
        "written_gb": churn.bytes_written / _GIB,
        "deleted_gb": churn.bytes_deleted / _GIB,
        "failed_creates": churn.failed_creates,
        "benchmarks": len(table),
    }
    return ScenarioOutput(metrics=metrics, tables={"bench": table, "trim_rounds": rounds})
