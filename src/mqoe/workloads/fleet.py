"""The fleet simulation (responsiveness study, MobiCom 2020): ANR/SNR over tens of
thousands of phones for weeks.

``run_fleet(FleetParams(phones=30_000, days=21, wam="realtime"))`` draws phones from
the responsiveness study's 15 profiles, gives each an owner (:mod:`mqoe.workloads.fleet_usage`) and
lets ANRs and SNRs emerge from four blocking mechanisms, each a queue or a hold that a
thread waits behind, judged by Android's timeouts (AOSP defaults):

* **WAM** — under real-time WAM every deletion queues discard work (bytes ÷ the flash's
  discard throughput) in a FIFO drained at that rate; an ``fsync`` waits for the
  backlog queued before it (the study's quasi-async dependency). Lazy WAM instead runs one
  uninterruptible trim a night (idle + charging, ~03:00) that fsyncs queue behind;
  practical WAM trims when the deleted bytes S_d reach ``threshold_gb``, in page groups,
  only while the screen is locked, so an fsync waits at most for the group in flight.
* **Lock contention** — a system_server thread holds a hot lock for long (heavy-tailed
  hold times; longer with more processes to iterate and a slower CPU); the foreground
  app's Binder calls, broadcast receivers and watched system threads wait behind it.
* **Low memory** — when the apps a user keeps exceed what the RAM holds, GC pauses
  (allocation stalls behind reclaim) grow; a long one blocks input handling.
* **App defects** — a few apps hang their main thread now and then (heavy-tailed).

Waiters are the foreground app's main thread (ANR when a pending input waits ≥ 5 s),
broadcast receivers (≥ 10 s foreground, ≥ 60 s background) and the system_server
threads the Watchdog checks every 30 s (SNR when a check waits ≥ 60 s; the framework
restarts, killing the apps). Only blocks long enough to matter are generated (exact
thinning of Poisson processes), so a fleet costs seconds, not hours.

Where the parts live: the owners and their days in :mod:`~mqoe.workloads.fleet_usage`,
the mechanism constants in :mod:`~mqoe.workloads.fleet_constants`, WAM's discard queue
and trims in :mod:`~mqoe.workloads.fleet_wam`, the other three mechanisms in
:mod:`~mqoe.workloads.fleet_blockers`, the waiters and the system's reactions in
:mod:`~mqoe.workloads.fleet_waiters`; this module holds the parameters, one block of
phones, the process pool over blocks and the tidy results.

Randomness: phones are simulated in blocks of ``BLOCK_PHONES``; each block has its own
named streams from ``(seed, block)``, and the usage streams do not depend on the WAM
policy, so the same seed gives the same phones and days under every policy, for any
number of workers, and ``phones=N`` gives the first N phones of any larger fleet.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.engine import RandomStreams, validate_seed
from mqoe.errors import UserError
from mqoe.metrics.zipf import ZipfFit, fit_zipf
from mqoe.policies.wam import Practical, WamPolicy, make_wam_policy
from mqoe.workloads.fleet_blockers import _defect_stalls, _gc_stalls, _lock_holds
from mqoe.workloads.fleet_constants import FleetConstants
from mqoe.workloads.fleet_usage import (
    DAY_S,
    GB,
    HOUR_S,
    Deletions,
    FloatArray,
    Hardware,
    Timeline,
    Users,
    build_timeline,
    draw_deletions,
    draw_users,
    study_hardware,
)
from mqoe.workloads.fleet_waiters import (
    _BROADCAST,
    _INPUT,
    _LOCK,
    _SNR,
    _WAM,
    CAUSES,
    KINDS,
    SYSTEM_APP,
    _Candidates,
    _resolve,
    _Segments,
    _waiter_rates,
    _waiters,
)
from mqoe.workloads.fleet_wam import (
    FLEET_WAM,
    PAGE_BYTES,
    DiscardCost,
    FleetWam,
    _Trims,
    discard_backlog,
    discard_cost,
    fsync_waits,
)

__all__ = [
    "BLOCK_PHONES",
    "CAUSES",
    "FLEET_WAM",
    "KINDS",
    "PAGE_BYTES",
    "SYSTEM_APP",
    "DiscardCost",
    "FleetConstants",
    "FleetParams",
    "FleetResult",
    "FleetWam",
    "WamPolicy",
    "discard_backlog",
    "discard_cost",
    "fsync_waits",
    "run_fleet",
]

BLOCK_PHONES = 500  # the unit of seeding and of work handed to a worker


@dataclass(frozen=True)
class FleetParams:
    """What to simulate. ``wam`` is a WAM policy spec of :mod:`mqoe.policies.wam`
    (``"practical:threshold_gb=4"``); ``threshold_gb`` and ``group_pages`` set
    practical WAM's knobs when the spec does not."""

    phones: int = 30_000  # the study: 30,000+ opt-in phones
    days: int = 21  # the study: three weeks
    seed: int = 0
    wam: str = "realtime"  # real-time WAM: the default the study found (MobiCom 2020)
    threshold_gb: float = 6.0  # practical WAM: S_d that triggers a batched trim (the study's)
    group_pages: int = 32_768  # practical WAM: pages per trim group (the study: 32 K)
    workers: int = 1  # processes sharing the blocks (results do not depend on it)
    # Android per phone: the profile's (the study's table), one version for all, or "mix":
    # 7, 8, 9 with equal odds whatever the model (separates version from hardware).
    android: Literal["profile", "mix", "7", "8", "9"] = "profile"

    def __post_init__(self) -> None:
        validate_seed(self.seed)
        if self.phones < 1 or self.days < 1 or self.workers < 1:
            raise UserError("fleet: phones, days and workers must be at least 1")
        if not (self.threshold_gb > 0 and math.isfinite(self.threshold_gb)):
            raise UserError(f"fleet: threshold_gb={self.threshold_gb}: expected a positive size")
        if self.group_pages < 1:
            raise UserError(f"fleet: group_pages={self.group_pages}: expected at least 1")
        if self.android not in ("profile", "mix", "7", "8", "9"):
            raise UserError(f"fleet: android={self.android}: expected profile, mix, 7, 8 or 9")
        self.policy()  # the WAM spec is valid and has a vectorised form (UserError if not)

    def policy(self) -> WamPolicy:
        """The WAM policy object ``wam`` names, practical WAM's knobs from ``threshold_gb``
        and ``group_pages`` unless its spec sets them (setting both ways is refused)."""
        try:
            policy = make_wam_policy(self.wam)
        except (UserError, ValueError, TypeError) as exc:
            raise UserError(f"fleet: wam={self.wam!r}: {exc}") from None
        if type(policy) not in FLEET_WAM:
            names = ", ".join(t.__name__ for t in FLEET_WAM)
            raise UserError(f"fleet: wam={self.wam!r}: no vectorised form (the fleet has {names})")
        knobs = {"threshold_gb": self.threshold_gb, "group_pages": self.group_pages}
        changed = {k: v for k, v in knobs.items() if v != _FLEET_DEFAULTS[k]}
        if isinstance(policy, Practical):
            if ":" in self.wam and changed:
                raise UserError(f"fleet: set {next(iter(changed))} in wam={self.wam!r} or as a "
                                "parameter, not both")  # fmt: skip
            if ":" not in self.wam:
                policy = dataclasses.replace(policy, **knobs)  # type: ignore[arg-type]
        return policy


# The knobs' defaults, to tell a value the user set from one left alone.
_FLEET_DEFAULTS = {f.name: f.default for f in dataclasses.fields(FleetParams)}


# -- one block -------------------------------------------------------------------------


@dataclass(frozen=True)
class _BlockResult:
    phones: pd.DataFrame
    events: pd.DataFrame
    trims: pd.DataFrame


def _simulate_block(args: tuple[FleetParams, FleetConstants, int]) -> _BlockResult:
    """One block of ``BLOCK_PHONES`` phones (the last block of a fleet is simulated whole
    and cut, so a phone's draws never depend on the fleet size)."""
    params, c, block = args
    streams = RandomStreams(params.seed)

    def rng(name: str) -> np.random.Generator:
        return streams(f"fleet/{block}/{name}")

    hardware = study_hardware()
    span_s = (params.days + 2) * DAY_S
    users = draw_users(BLOCK_PHONES, hardware, c.usage, rng("users"), params.android)
    timeline = build_timeline(users, params.days, c.usage, rng("sessions"), span_s)
    deletions = draw_deletions(users, timeline, c.usage, rng("deletions"))
    cost = discard_cost(users.ufs, users.fill, c)
    trims, wam_segments = _wam_segments(params, timeline, deletions, cost, c)
    holds = _lock_holds(users, timeline, c, rng("locks"))
    wam_rates, lock_rates = _waiter_rates(users, c)
    wam = _waiters(wam_segments, _WAM, wam_rates, users, timeline, c, rng("wam-waiters"), 0, False)
    first_hold = len(wam_segments.t0)
    lock = _waiters(
        holds, _LOCK, lock_rates, users, timeline, c, rng("lock-waiters"), first_hold, True
    )
    gc = _gc_stalls(users, timeline, c, rng("gc"))
    defects = _defect_stalls(timeline, params.seed, c, rng("defects"))
    events = _resolve(_Candidates.concat([wam, lock, gc, defects]), c)
    realtime_s = np.bincount(
        deletions.phone,
        cost.realtime_s(deletions.phone, deletions.bytes, deletions.files),
        BLOCK_PHONES,
    ).astype(np.float64)
    n = min(BLOCK_PHONES, params.phones - block * BLOCK_PHONES)
    return _block_tables(
        params,
        block,
        n,
        users,
        timeline,
        deletions,
        cost.batched_bytes_s,
        realtime_s,
        trims,
        events,
        hardware,
    )


def _wam_segments(
    params: FleetParams,
    timeline: Timeline,
    deletions: Deletions,
    cost: DiscardCost,
    c: FleetConstants,
) -> tuple[_Trims, _Segments]:
    """The policy's batched trims (none under real-time WAM) and what fsyncs wait behind."""
    policy = params.policy()
    return FLEET_WAM[type(policy)](policy, timeline, deletions, cost, c)


def _block_tables(
    params: FleetParams,
    block: int,
    n: int,
    users: Users,
    timeline: Timeline,
    deletions: Deletions,
    rate: FloatArray,
    realtime_s: FloatArray,
    trims: _Trims,
    events: _Candidates,
    hardware: Hardware,
) -> _BlockResult:
    first_id = block * BLOCK_PHONES
    origin = timeline.phone_start(np.arange(BLOCK_PHONES))
    ev_keep = events.phone < n
    ev = events.where(ev_keep)
    app_names = np.array([f"app-{i + 1:03d}" for i in range(users.app_cdf.shape[1])] + [SYSTEM_APP])
    events_df = pd.DataFrame(
        {
            "phone_id": ev.phone + first_id,
            "t_s": ev.fire - origin[ev.phone],
            "kind": np.array(KINDS)[ev.kind],
            "app": app_names[ev.app],
            "cause": np.array(CAUSES)[ev.cause],
            "wait_s": ev.wait,
        }
    )
    counts = {}
    for kind_name, kinds in (("anr", (_INPUT, _BROADCAST)), ("snr", (_SNR,))):
        is_kind = np.isin(ev.kind, kinds)
        counts[kind_name] = np.bincount(ev.phone[is_kind], minlength=BLOCK_PHONES)[:n]
        for cause, name in enumerate(CAUSES):
            sel = is_kind & (ev.cause == cause)
            counts[f"{kind_name}_{name}"] = np.bincount(ev.phone[sel], minlength=BLOCK_PHONES)[:n]
    on_s = np.bincount(timeline.phone, timeline.end - timeline.start, BLOCK_PHONES)[:n]
    sessions = np.bincount(timeline.phone, minlength=BLOCK_PHONES)[:n]
    deleted = np.bincount(deletions.phone, deletions.bytes, BLOCK_PHONES)[:n]
    trim_keep = trims.phone < n
    model = users.model[:n]
    phones_df = pd.DataFrame(
        {
            "phone_id": np.arange(n) + first_id,
            "model": np.array(hardware.names)[model],
            "tier": np.array(hardware.tiers)[model],
            "android": users.android[:n],
            "ram_gb": users.ram_mb[:n] / 1024.0,
            "storage": np.where(users.ufs[:n], "ufs", "emmc"),
            "capacity_gb": users.capacity_gb[:n],
            "cpu_speed": users.cpu_speed[:n],
            "fill_pct": 100.0 * users.fill[:n],
            "trim_mb_s": rate[:n] / 1e6,
            "deleted_gb_per_day": deleted / GB / params.days,
            "sessions_per_day": sessions / params.days,
            "screen_on_h_per_day": on_s / HOUR_S / params.days,
            "recent_apps": users.recent_apps[:n],
            "anr": counts["anr"],
            "snr": counts["snr"],
            **{k: v for k, v in counts.items() if k not in ("anr", "snr")},
            "trims": np.bincount(trims.phone[trim_keep], minlength=BLOCK_PHONES)[:n],
            "trim_s": np.bincount(trims.phone[trim_keep], trims.busy_s[trim_keep], BLOCK_PHONES)[
                :n
            ],
            "realtime_discard_s": realtime_s[:n] if params.policy().discard_on_delete() else 0.0,
        }
    )
    tp = trims.phone[trim_keep]
    trims_df = pd.DataFrame(
        {
            "phone_id": tp + first_id,
            "start_s": trims.start[trim_keep] - origin[tp],
            "end_s": trims.end[trim_keep] - origin[tp],
            "gb": trims.bytes[trim_keep] / GB,
            "busy_s": trims.busy_s[trim_keep],
            "completed": trims.completed[trim_keep],
        }
    )
    return _BlockResult(phones_df, events_df.sort_values(["phone_id", "t_s"]), trims_df)


# -- the fleet -------------------------------------------------------------------------


@dataclass(frozen=True)
class FleetResult:
    """Tidy outputs of a fleet run: one row per phone, per ANR/SNR, per batched trim."""

    params: FleetParams
    phones: pd.DataFrame  # phone_id, model, tier, android, ram_gb, storage, anr, snr, …
    events: pd.DataFrame  # phone_id, t_s, kind, app, cause, wait_s
    trims: pd.DataFrame  # phone_id, start_s, end_s, gb, busy_s, completed

    def per_app(self) -> pd.DataFrame:
        """ANRs per app (most first): app, anr, and the share of each cause."""
        anr = self.events[self.events["kind"] != "snr"]
        table = anr.groupby(["app", "cause"]).size().unstack("cause", fill_value=0)
        table = table.reindex(columns=list(CAUSES), fill_value=0)
        table.insert(0, "anr", table.sum(axis=1))
        return table.sort_values("anr", ascending=False, kind="stable").reset_index()

    def breakdown(self, by: str = "model") -> pd.DataFrame:
        """Per ``model`` / ``tier`` / ``android`` / ``storage``: phones, ANR and SNR per
        phone, share of phones without either, and the WAM-caused shares."""
        if by not in self.phones.columns:
            raise UserError(f"fleet breakdown: no column {by!r} in the phones table")
        grouped = self.phones.groupby(by, sort=True)
        return pd.DataFrame(
            {
                "phones": grouped.size(),
                "anr_per_phone": grouped["anr"].mean(),
                "snr_per_phone": grouped["snr"].mean(),
                "phones_without_anr_pct": grouped["anr"].apply(lambda s: 100.0 * (s == 0).mean()),
                "phones_without_snr_pct": grouped["snr"].apply(lambda s: 100.0 * (s == 0).mean()),
                "anr_wam_per_phone": grouped["anr_wam"].mean(),
                "snr_wam_per_phone": grouped["snr_wam"].mean(),
            }
        ).reset_index()

    def anr_snr_gaps_s(self) -> FloatArray:
        """Gaps (s) between consecutive events of one phone where an ANR meets an SNR."""
        ev = self.events.sort_values(["phone_id", "t_s"], kind="stable")
        phone = ev["phone_id"].to_numpy()
        t = ev["t_s"].to_numpy(np.float64)
        snr = (ev["kind"] == "snr").to_numpy()
        pair = (phone[1:] == phone[:-1]) & (snr[1:] != snr[:-1])
        gaps: FloatArray = (t[1:] - t[:-1])[pair]
        return gaps

    def zipf(self) -> ZipfFit:
        """Zipf fit of ANRs per app: log count = −a log rank + b (least squares, R²)."""
        return fit_zipf(self.per_app()["anr"].to_numpy())

    def summary(self) -> dict[str, float]:
        """Population statistics comparable with the responsiveness study's population figures."""
        ph, ev = self.phones, self.events
        anr, snr = ph["anr"].to_numpy(), ph["snr"].to_numpy()
        gaps = self.anr_snr_gaps_s()
        anr_total, snr_total = int(anr.sum()), int(snr.sum())
        window_s = 10 * DAY_S
        windows = int(self.params.days * DAY_S // window_s)
        every = np.ones(len(ph), bool)
        for w in range(windows):
            inside = ev[(ev["t_s"] >= w * window_s) & (ev["t_s"] < (w + 1) * window_s)]
            every &= ph["phone_id"].isin(inside["phone_id"]).to_numpy()
        zipf = self.zipf()
        return {
            "phones": float(len(ph)),
            "days": float(self.params.days),
            "anr_per_phone": float(anr.mean()),
            "snr_per_phone": float(snr.mean()),
            "phones_without_anr_pct": 100.0 * float((anr == 0).mean()),
            "phones_without_snr_pct": 100.0 * float((snr == 0).mean()),
            "max_anr_per_phone": float(anr.max()),
            "max_snr_per_phone": float(snr.max()),
            "anr_snr_corr": _corr(anr, snr),
            "median_anr_snr_gap_days": float(np.median(gaps)) / DAY_S if len(gaps) else math.nan,
            "phones_event_every_10_days_pct": 100.0 * float(every.mean()) if windows else math.nan,
            "wam_anr_share_pct": 100.0 * float(ph["anr_wam"].sum()) / max(anr_total, 1),
            "wam_snr_share_pct": 100.0 * float(ph["snr_wam"].sum()) / max(snr_total, 1),
            **{
                f"{name}_anr_share_pct": 100.0 * float(ph[f"anr_{name}"].sum()) / max(anr_total, 1)
                for name in CAUSES[1:]
            },
            "lock_snr_share_pct": 100.0 * float(ph["snr_lock"].sum()) / max(snr_total, 1),
            "trims_per_phone": float(ph["trims"].mean()),
            "trim_s_per_phone": float(ph["trim_s"].mean()),
            "zipf_a": zipf.a,
            "zipf_r2": zipf.r2,
        }


def _corr(x: npt.NDArray[np.int64], y: npt.NDArray[np.int64]) -> float:
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def _blocks(params: FleetParams, c: FleetConstants) -> Iterator[_BlockResult]:
    n_blocks = -(-params.phones // BLOCK_PHONES)
    jobs = [(params, c, b) for b in range(n_blocks)]
    workers = min(params.workers, n_blocks)
    if workers == 1:
        yield from map(_simulate_block, jobs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_simulate_block, jobs)


def run_fleet(params: FleetParams, constants: FleetConstants | None = None) -> FleetResult:
    """Simulate ``params.phones`` phones for ``params.days`` days under one WAM policy.

    Blocks of ``BLOCK_PHONES`` phones are simulated independently (over
    ``params.workers`` processes) from per-block seeds; results are concatenated in block
    order, so they do not depend on the number of workers."""
    c = constants or FleetConstants()
    parts = list(_blocks(params, c))
    return FleetResult(
        params,
        pd.concat([p.phones for p in parts], ignore_index=True),
        pd.concat([p.events for p in parts], ignore_index=True),
        pd.concat([p.trims for p in parts], ignore_index=True),
    )
