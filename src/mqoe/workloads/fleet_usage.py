"""The fleet's usage model (responsiveness study, MobiCom 2020): who owns which phone and
how they use it.

Everything here is vectorised over a *block* of phones. Each phone lives on its own
stretch of a block-wide "global" time axis (``phone × SPAN + t``, ``t`` in seconds since
midnight of day 0), so one sorted array and one ``searchsorted`` serve every phone of
the block, and a phone's queues can never spill into the next phone's.

A user's day: wake up, ~60 screen-on sessions spread uniformly over the waking hours
(heavy-tailed lengths), one foreground app per session drawn from the user's own app
preferences (a Zipf-like popularity law times a personal affinity), a few pick-ups at
night, charging overnight on most nights; file churn (deleted bytes per day, heavy-tailed
across users) in a dozen deletion bursts — by the foreground app during sessions, by
background work at any hour, by app updates at night.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mqoe.device.profiles import core_ipc_factor, load_profile

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

DAY_S = 86_400.0
HOUR_S = 3_600.0
GB = 1e9  # deleted data is counted in decimal GB, as the study quotes S_d thresholds

# The fifteen phones of the responsiveness study, in its table's order (model 1 … 15).
STUDY_MODELS = (
    "redmi-5",
    "mi-a1",
    "mi-max-2",
    "mi-max-3",
    "redmi-note-5-pro",
    "mi-a2",
    "mi-8-lite",
    "redmi-note-7",
    "redmi-pro-2",
    "mi-note-3",
    "mi-6",
    "mi-mix-2s",
    "mi-8-pro",
    "mi-mix-3",
    "black-shark",
)
# The study: models 1–5 count as low-end, 6–10 middle, 11–15 high-end (the profiles' own
# ``tier`` field follows the SoC instead and calls the Mi Max 3 "low" too).
STUDY_TIERS = ("low",) * 5 + ("mid",) * 5 + ("high",) * 5
_REFERENCE_MODEL = "redmi-5"  # cpu_speed = 1.0: eight Cortex-A53 at 1.8 GHz


@dataclass(frozen=True)
class Hardware:
    """Per-model arrays (index = model) read from the device profiles."""

    names: tuple[str, ...]
    display_names: tuple[str, ...]
    tiers: tuple[str, ...]
    android: IntArray  # major version from the profile (7, 8, 9)
    ram_mb: FloatArray
    ufs: BoolArray  # storage type: UFS (else eMMC)
    capacity_gb: FloatArray
    cpu_speed: FloatArray  # fastest core's clock × IPC, relative to the Redmi 5
    display_mpx: FloatArray  # screen megapixels (app bitmaps scale with them)


def _fastest_core(name: str) -> float:
    profile = load_profile(name)
    return max(c.max_freq_mhz * core_ipc_factor(c) for c in profile.cpu.clusters)


def study_hardware() -> Hardware:
    """The responsiveness study's 15 phone models from the shipped profiles."""
    profiles = [load_profile(name) for name in STUDY_MODELS]
    reference = _fastest_core(_REFERENCE_MODEL)
    return Hardware(
        names=STUDY_MODELS,
        display_names=tuple(p.display_name for p in profiles),
        tiers=STUDY_TIERS,
        android=np.array([int(p.android_version.split(".")[0]) for p in profiles], np.int64),
        ram_mb=np.array([p.memory.ram_mb for p in profiles], np.float64),
        ufs=np.array([p.storage.type == "ufs" for p in profiles]),
        capacity_gb=np.array([p.storage.capacity_gb for p in profiles], np.float64),
        cpu_speed=np.array([_fastest_core(p.name) / reference for p in profiles]),
        display_mpx=np.array(
            [p.display.width_px * p.display.height_px / 1e6 for p in profiles], np.float64
        ),
    )


@dataclass(frozen=True)
class UsageConstants:
    """How people use their phones. Behavioural constants are assumptions (named as such);
    the spreads across users are what make half the fleet see no ANR at all."""

    # -- screen-on sessions -------------------------------------------------------------
    sessions_per_day: float = 60.0  # assumed: phone-usage studies report ~50–80 unlocks/day
    sessions_per_day_sigma: float = 0.45  # assumed: lognormal spread across users
    session_day_sigma: float = 0.25  # assumed: day-to-day spread of one user's sessions
    session_median_s: float = 45.0  # assumed: most sessions are short checks
    session_sigma: float = 1.3  # assumed: heavy-tailed session lengths (mean ≈ 2 min)
    session_user_sigma: float = 0.4  # assumed: some users read/watch longer
    session_max_s: float = 3.0 * HOUR_S  # a film or a game, not longer
    wake_h: float = 7.0  # assumed: local wake-up time
    sleep_h: float = 23.5  # assumed: local bedtime
    user_clock_sigma_h: float = 0.8  # assumed: early birds and night owls
    day_clock_sigma_h: float = 0.5  # assumed: day-to-day jitter
    night_pickups: float = 0.4  # assumed: short checks per night (the alarm, a message)
    night_pickup_median_s: float = 30.0  # assumed
    # -- charging -----------------------------------------------------------------------
    charge_night_alpha: float = 8.0  # assumed: Beta(8, 2) → most users charge overnight
    charge_night_beta: float = 2.0
    plug_after_bed_s: float = 900.0  # assumed: plugged in ~15 min after the last use
    # -- apps ----------------------------------------------------------------------------
    apps: int = 300  # mqoe's design: an app population of a few hundred apps
    zipf_s: float = 1.0  # assumed: app launch popularity ~ rank^-1 (Zipf-like)
    affinity_sigma: float = 2.0  # assumed: lognormal personal taste around popularity
    recent_apps_median: float = 14.0  # assumed: apps a user keeps around in a day
    recent_apps_sigma: float = 0.45  # assumed
    # -- storage and file churn ----------------------------------------------------------
    fill_alpha: float = 6.0  # assumed: Beta(6, 4) → phones ~60% full on average
    fill_beta: float = 4.0
    churn_median_gb: float = 0.25  # assumed: median deleted GB/day on a 32 GB phone
    churn_capacity_exponent: float = 1.0  # assumed: bigger flash, bigger media and games
    churn_sigma: float = 1.5  # assumed: heavy-tailed across users (video-heavy users …)
    churn_day_sigma: float = 0.8  # assumed: day-to-day spread (mean-preserving)
    churn_max_capacity_share: float = 0.25  # assumed: at most a quarter of the flash a day
    deletions_per_day: float = 12.0  # assumed: deletion bursts per day
    deletion_size_sigma: float = 1.2  # assumed: lognormal split of a day's bytes
    # Files per burst: bytes over a mean file size drawn per burst, from thumbnail and
    # cache directories (tens of KB per file) to videos and APKs (hundreds of MB).
    deletion_file_median_mb: float = 10.0  # assumed: by the user's app (photos, videos)
    background_file_median_mb: float = 3.0  # assumed: by background work (caches, sync)
    deletion_file_sigma: float = 1.5  # assumed
    deletion_on_share: float = 0.55  # assumed: by the foreground app (gallery, cleaners)
    deletion_night_share: float = 0.15  # assumed: app updates while idle overnight
    # the rest: background work (sync, caches) at any hour


@dataclass(frozen=True)
class Users:
    """Per-phone arrays of one block: the hardware and its owner's habits."""

    model: IntArray
    android: IntArray
    ram_mb: FloatArray
    ufs: BoolArray
    capacity_gb: FloatArray
    cpu_speed: FloatArray
    display_mpx: FloatArray
    fill: FloatArray  # share of the flash in use
    churn_gb_per_day: FloatArray  # the user's mean deleted GB/day
    recent_apps: FloatArray  # apps the user would keep in memory
    sessions_per_day: FloatArray
    session_median_s: FloatArray
    wake_h: FloatArray
    sleep_h: FloatArray
    charge_prob: FloatArray
    app_cdf: FloatArray  # [phones, apps] cumulative launch preference per user

    @property
    def n(self) -> int:
        return len(self.model)


def draw_users(
    n: int,
    hardware: Hardware,
    usage: UsageConstants,
    rng: np.random.Generator,
    android: str = "profile",
) -> Users:
    """Draw ``n`` owners: a model uniformly among the 15 (assumed: the study gives no
    sales mix), Android from the profile (``"profile"``), uniformly 7/8/9 (``"mix"``) or one
    version for all (``"7"``…), and their habits."""
    model = rng.integers(0, len(hardware.names), n)
    mixed = rng.integers(7, 10, n)  # drawn always: the other draws do not depend on the mode
    if android == "profile":
        version = hardware.android[model]
    elif android == "mix":
        version = mixed
    else:
        version = np.full(n, int(android))
    capacity = hardware.capacity_gb[model]
    churn_median = usage.churn_median_gb * (capacity / 32.0) ** usage.churn_capacity_exponent
    churn = churn_median * np.exp(usage.churn_sigma * rng.standard_normal(n))
    churn = np.minimum(churn, usage.churn_max_capacity_share * capacity)
    ranks = np.arange(1, usage.apps + 1, dtype=np.float64)
    popularity = ranks**-usage.zipf_s
    taste = np.exp(usage.affinity_sigma * rng.standard_normal((n, usage.apps)))
    weights = popularity * taste
    cdf = np.cumsum(weights, axis=1)
    cdf /= cdf[:, -1:]
    recent = usage.recent_apps_median * np.exp(usage.recent_apps_sigma * rng.standard_normal(n))
    spd = usage.sessions_per_day * np.exp(usage.sessions_per_day_sigma * rng.standard_normal(n))
    median_s = usage.session_median_s * np.exp(usage.session_user_sigma * rng.standard_normal(n))
    return Users(
        model=model,
        android=version.astype(np.int64),
        ram_mb=hardware.ram_mb[model],
        ufs=hardware.ufs[model],
        capacity_gb=capacity,
        cpu_speed=hardware.cpu_speed[model],
        display_mpx=hardware.display_mpx[model],
        fill=np.clip(rng.beta(usage.fill_alpha, usage.fill_beta, n), 0.05, 0.97),
        churn_gb_per_day=churn,
        recent_apps=np.maximum(recent, 1.0),
        sessions_per_day=spd,
        session_median_s=median_s,
        wake_h=usage.wake_h + usage.user_clock_sigma_h * rng.standard_normal(n),
        sleep_h=usage.sleep_h + usage.user_clock_sigma_h * rng.standard_normal(n),
        charge_prob=rng.beta(usage.charge_night_alpha, usage.charge_night_beta, n),
        app_cdf=cdf,
    )


def pick_apps(users: Users, phone: IntArray, rng: np.random.Generator) -> IntArray:
    """One app per entry of ``phone``, drawn from that user's launch preferences.

    The per-user CDF rows are laid end to end (row r spans (r, r + 1]) so one
    ``searchsorted`` draws for every phone at once."""
    n_apps = users.app_cdf.shape[1]
    flat = (users.app_cdf + np.arange(users.n)[:, None]).ravel()
    query = phone + rng.random(len(phone))
    index = np.searchsorted(flat, query, side="right")
    apps: IntArray = np.minimum(index - phone * n_apps, n_apps - 1).astype(np.int64)
    return apps


def _segment_exclusive_cumsum(values: FloatArray, segment: IntArray, n_segments: int) -> FloatArray:
    """Within each segment (entries grouped, segments in order): the sum of the earlier
    entries of the same segment."""
    exclusive = np.cumsum(values) - values
    first = np.zeros(n_segments, np.int64)
    counts = np.bincount(segment, minlength=n_segments)
    first[1:] = np.cumsum(counts)[:-1]
    base = np.zeros(n_segments)
    has = counts > 0
    base[has] = exclusive[first[has]]
    result: FloatArray = exclusive - base[segment]
    return result


@dataclass
class Timeline:
    """Screen-on sessions of a block of phones on the global time axis (sorted, disjoint).

    ``on_time(g)``/``from_on_time(x)`` map between global time and the cumulative time
    the screen has been on (used to place screen-on activity uniformly), and
    ``off_time``/``from_off_time`` the same for locked time (a practical-WAM trim
    progresses only while locked)."""

    span_s: float  # global time per phone
    days: int
    start: FloatArray  # global s
    end: FloatArray
    phone: IntArray
    app: IntArray
    wake: FloatArray  # [phones, days + 1] global wake-up times
    sleep: FloatArray  # [phones, days] global bedtimes
    charging: BoolArray  # [phones, days]: charged during the night after day d
    on_before: FloatArray = field(init=False)  # cumulative on-time before each session
    on_after: FloatArray = field(init=False)

    def __post_init__(self) -> None:
        duration = self.end - self.start
        self.on_after = np.cumsum(duration)
        self.on_before = self.on_after - duration

    @property
    def n_phones(self) -> int:
        return int(self.wake.shape[0])

    def phone_start(self, phone: IntArray | int) -> FloatArray:
        """Global time of midnight of day 0 of ``phone``."""
        return np.asarray(phone, np.float64) * self.span_s

    def phone_end(self, phone: IntArray | int) -> FloatArray:
        """Global end of ``phone``'s simulated period."""
        return self.phone_start(phone) + self.days * DAY_S

    def on_time(self, g: FloatArray) -> FloatArray:
        """Cumulative screen-on seconds of the block up to global time ``g``."""
        if len(self.start) == 0:
            return np.zeros(np.shape(g))
        i = np.searchsorted(self.start, g, side="right") - 1
        safe = np.maximum(i, 0)
        inside = np.clip(g - self.start[safe], 0.0, self.end[safe] - self.start[safe])
        return np.where(i >= 0, self.on_before[safe] + inside, 0.0)

    def from_on_time(self, x: FloatArray) -> FloatArray:
        """The global time at which the cumulative on-time reaches ``x`` (inf if never)."""
        if len(self.start) == 0:
            return np.full(np.shape(x), np.inf)
        i = np.searchsorted(self.on_after, x, side="left")
        safe = np.minimum(i, len(self.start) - 1)
        g = self.start[safe] + (x - self.on_before[safe])
        return np.where(i < len(self.start), g, np.inf)

    def off_time(self, g: FloatArray) -> FloatArray:
        """Cumulative locked seconds of the block up to global time ``g``."""
        return g - self.on_time(g)

    def from_off_time(self, y: FloatArray) -> FloatArray:
        """The global time at which the cumulative locked time reaches ``y``."""
        locked_before = self.start - self.on_before  # locked time at each session start
        i = np.searchsorted(locked_before, y, side="left")
        total_on = self.on_after[-1] if len(self.on_after) else 0.0
        before = np.where(
            i < len(self.start), self.on_before[np.minimum(i, len(self.start) - 1)], total_on
        )
        result: FloatArray = y + before
        return result

    def session_at(self, g: FloatArray) -> IntArray:
        """Index of the session the screen is on in at ``g``, or -1 when locked."""
        if len(self.start) == 0:
            return np.full(np.shape(g), -1, np.int64)
        i = np.searchsorted(self.start, g, side="right") - 1
        safe = np.maximum(i, 0)
        inside = (i >= 0) & (g < self.end[safe])
        return np.where(inside, i, -1).astype(np.int64)

    def next_locked(self, g: FloatArray) -> FloatArray:
        """``g`` if the screen is locked then, else the end of the session it is in."""
        i = self.session_at(g)
        return np.where(i >= 0, self.end[np.maximum(i, 0)], g)


def build_timeline(
    users: Users, days: int, usage: UsageConstants, rng: np.random.Generator, span_s: float
) -> Timeline:
    """Screen-on sessions for every phone and day: uniform spacing (exponential gaps
    normalised to the free time) of lognormal sessions over the waking window, plus a few
    pick-ups in the night window; apps drawn per session."""
    n = users.n
    day0 = np.arange(days + 1, dtype=np.float64) * DAY_S
    jitter_w = usage.day_clock_sigma_h * rng.standard_normal((n, days + 1))
    jitter_s = usage.day_clock_sigma_h * rng.standard_normal((n, days))
    base = np.arange(n, dtype=np.float64)[:, None] * span_s
    wake = base + day0[None, :] + HOUR_S * np.clip(users.wake_h[:, None] + jitter_w, 4.0, 11.0)
    sleep_h = np.clip(users.sleep_h[:, None] + jitter_s, 20.0, 26.5)
    sleep = base + day0[None, :days] + HOUR_S * sleep_h
    # Windows per (phone, day, part): part 0 = waking hours, 1 = the night after.
    win_start = np.stack([wake[:, :days], sleep], axis=2).ravel()
    win_end = np.stack([sleep, wake[:, 1:]], axis=2).ravel()
    n_seg = n * days * 2
    seg_phone = np.repeat(np.arange(n), days * 2)
    is_night = np.tile(np.array([False, True]), n * days)
    day_mean = users.sessions_per_day[seg_phone] * np.exp(
        usage.session_day_sigma * rng.standard_normal(n_seg)
    )
    counts = rng.poisson(np.where(is_night, usage.night_pickups, day_mean))
    seg = np.repeat(np.arange(n_seg), counts)
    mu = np.where(
        is_night, np.log(usage.night_pickup_median_s), np.log(users.session_median_s[seg_phone])
    )
    sigma = np.where(is_night, 0.8, usage.session_sigma)
    duration = np.exp(mu[seg] + sigma[seg] * rng.standard_normal(len(seg)))
    duration = np.minimum(duration, usage.session_max_s)
    window = win_end - win_start
    busy = np.bincount(seg, duration, n_seg)
    squeeze = np.minimum(1.0, 0.8 * window / np.maximum(busy, 1e-9))
    duration *= squeeze[seg]
    free = window - busy * squeeze
    gaps = rng.exponential(1.0, len(seg))
    trailing = rng.exponential(1.0, n_seg)
    gaps *= (free / (np.bincount(seg, gaps, n_seg) + trailing))[seg]
    start = win_start[seg] + _segment_exclusive_cumsum(gaps + duration, seg, n_seg) + gaps
    end = start + duration
    phone = seg_phone[seg]
    period_end = base[:, 0] + days * DAY_S
    keep = start < period_end[phone]
    start, end, phone = start[keep], np.minimum(end[keep], period_end[phone[keep]]), phone[keep]
    app = pick_apps(users, phone, rng)
    charging = rng.random((n, days)) < users.charge_prob[:, None]
    return Timeline(span_s, days, start, end, phone, app, wake, sleep, charging)


@dataclass(frozen=True)
class Deletions:
    """Deletion bursts of a block, sorted by global time."""

    phone: IntArray
    t: FloatArray  # global s
    bytes: FloatArray
    files: FloatArray  # files deleted in the burst (each at least one freed extent)
    cum_bytes: FloatArray  # block-wide running total, including this burst

    def bytes_before(self, g: FloatArray) -> FloatArray:
        """Block-wide cumulative deleted bytes of bursts at or before global time ``g``."""
        i = np.searchsorted(self.t, g, side="right") - 1
        return np.where(i >= 0, self.cum_bytes[np.maximum(i, 0)], 0.0)


def draw_deletions(
    users: Users, timeline: Timeline, usage: UsageConstants, rng: np.random.Generator
) -> Deletions:
    """File churn: each day's deleted bytes (the user's mean × a mean-one lognormal),
    split over ~``deletions_per_day`` bursts with lognormal shares, placed during screen-on
    time (the foreground app), at any hour (background work) or in the night window (app
    updates while idle)."""
    n, days = users.n, timeline.days
    n_pd = n * days
    pd_phone = np.repeat(np.arange(n), days)
    pd_day = np.tile(np.arange(days), n)
    sigma = usage.churn_day_sigma
    daily = users.churn_gb_per_day[pd_phone] * np.exp(
        sigma * rng.standard_normal(n_pd) - sigma**2 / 2
    )
    daily = np.minimum(daily, usage.churn_max_capacity_share * users.capacity_gb[pd_phone]) * GB
    counts = 1 + rng.poisson(usage.deletions_per_day - 1, n_pd)
    pd = np.repeat(np.arange(n_pd), counts)
    share = np.exp(usage.deletion_size_sigma * rng.standard_normal(len(pd)))
    size = daily[pd] * share / np.bincount(pd, share, n_pd)[pd]
    phone, day = pd_phone[pd], pd_day[pd]
    day_start = timeline.phone_start(phone) + day * DAY_S
    u = rng.random(len(pd))
    where = rng.random(len(pd))
    anytime = day_start + u * DAY_S
    night_start = timeline.sleep[phone, day]
    night = night_start + u * (timeline.wake[phone, day + 1] - night_start)
    on0 = timeline.on_time(day_start)
    on1 = timeline.on_time(day_start + DAY_S)
    on = timeline.from_on_time(on0 + u * (on1 - on0))
    is_on = (where < usage.deletion_on_share) & (on1 > on0)
    is_night = where >= 1.0 - usage.deletion_night_share
    t = np.where(is_on, on, np.where(is_night, night, anytime))
    file_median_mb = np.where(is_on, usage.deletion_file_median_mb, usage.background_file_median_mb)
    file_mb = file_median_mb * np.exp(usage.deletion_file_sigma * rng.standard_normal(len(pd)))
    files = np.maximum(1.0, np.round(size / (file_mb * 1e6)))
    keep = t < timeline.phone_end(phone)
    order = np.argsort(t[keep], kind="stable")
    t, size, phone = t[keep][order], size[keep][order], phone[keep][order]
    files = files[keep][order]
    return Deletions(phone, t, size, files, np.cumsum(size))
