"""**Synthetic** memory-signal logs and configuration files in the logger's format, for
tests and demos (:func:`synthesize_phone`, :func:`synthesize_config`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from mqoe.analysis.memlog.model import STATES, IntArray
from mqoe.errors import UserError

# -- synthetic logs ----------------------------------------------------------------------

#: Illustrative Markov chain for synthetic logs (rows sum to 1): not fitted to any data.
SYNTHETIC_TRANSITIONS: dict[str, dict[str, float]] = {
    "Normal": {"Moderate": 0.6, "Low": 0.25, "Critical": 0.15},
    "Moderate": {"Normal": 0.5, "Low": 0.35, "Critical": 0.15},
    "Low": {"Normal": 0.3, "Moderate": 0.3, "Critical": 0.4},
    "Critical": {"Normal": 0.2, "Moderate": 0.2, "Low": 0.6},
}
#: Mean dwell per state for synthetic logs, seconds (exponential): illustrative.
SYNTHETIC_DWELL_MEAN_S = {"Normal": 900.0, "Moderate": 60.0, "Low": 20.0, "Critical": 10.0}
_STATE_UTILISATION = (None, 0.80, 0.86, 0.92)  # Normal comes from normal_utilisation
_STATE_LEVEL = (0, 5, 10, 15)
_NORMAL_LEVELS = (0, 20, 40, 60, 80)


def _alternating(rng: np.random.Generator, end_ms: int, means_s: tuple[float, float]) -> IntArray:
    """Change times (ms) of an on/off process with exponential durations, starting 'on'."""
    times: list[int] = []
    t, on = 0, True
    while True:
        t += max(1, round(1000 * float(rng.exponential(means_s[0] if on else means_s[1]))))
        if t >= end_ms:
            return np.array(times, dtype=np.int64)
        times.append(t)
        on = not on


def _markov(
    rng: np.random.Generator,
    end_ms: int,
    transitions: Mapping[str, Mapping[str, float]],
    dwell_mean_s: Mapping[str, float],
) -> tuple[IntArray, IntArray]:
    """Entry times (ms, strictly increasing) and states of a chain started in Normal at 0."""
    times, states = [0], [0]
    while True:
        name = STATES[states[-1]]
        nxt = times[-1] + max(1, round(1000 * float(rng.exponential(dwell_mean_s[name]))))
        if nxt >= end_ms:
            return np.array(times[1:], dtype=np.int64), np.array(states[1:], dtype=np.int64)
        row = transitions[name]
        targets = [other for other in STATES if other != name and row.get(other, 0.0) > 0]
        if not targets:
            raise UserError(f"synthetic transitions: state {name} has no way out")
        weights = np.array([row[other] for other in targets], dtype=np.float64)
        pick = int(rng.choice(len(targets), p=weights / weights.sum()))
        states.append(STATES.index(targets[pick]))
        times.append(nxt)


def synthesize_phone(
    rng: np.random.Generator,
    hours: float,
    total_mem_bytes: int,
    *,
    start_ms: int = 1_600_000_000_000,
    api: int = 29,
    normal_utilisation: float = 0.6,
    screen_on_mean_s: float = 600.0,
    screen_off_mean_s: float = 1800.0,
    transitions: Mapping[str, Mapping[str, float]] | None = None,
    dwell_mean_s: Mapping[str, float] | None = None,
) -> str:
    """A **synthetic** logger file (``M D T B`` lines) for tests and demos.

    One ``M:`` line per second (every tenth second a ``D:`` line instead), starting at
    ``start_ms`` with up to 50 ms jitter; the screen alternates on/off with exponential
    durations (starting on, ``SCREEN_OFF``/``SCREEN_ON`` broadcasts at each change); the
    pressure state follows a Markov chain (default :data:`SYNTHETIC_TRANSITIONS`,
    :data:`SYNTHETIC_DWELL_MEAN_S`) with one ``T:`` line at each state entry (Normal
    entries use a random level among 0/20/40/60/80). Utilisation is
    ``normal_utilisation`` in Normal and 0.80/0.86/0.92 under pressure, ± 2 % noise;
    power save, battery low and music stay 0. Illustrative only: never a source of
    the memory-pressure study's facts (Coal Not Diamonds, CoNEXT 2022).
    """
    if not (math.isfinite(hours) and hours > 0):
        raise UserError(f"hours must be > 0, got {hours}")
    if total_mem_bytes <= 0:
        raise UserError(f"total_mem_bytes must be > 0, got {total_mem_bytes}")
    if not 0 < normal_utilisation < 1:
        raise UserError(f"normal_utilisation must be in (0, 1), got {normal_utilisation}")
    n = max(1, round(hours * 3600))
    offset_ms = np.arange(n, dtype=np.int64) * 1000 + rng.integers(0, 50, n)
    screen_ms = _alternating(rng, n * 1000, (screen_on_mean_s, screen_off_mean_s))
    screen = np.searchsorted(screen_ms, offset_ms, side="right") % 2 == 0
    entry_ms, entry_state = _markov(
        rng, n * 1000, transitions or SYNTHETIC_TRANSITIONS, dwell_mean_s or SYNTHETIC_DWELL_MEAN_S
    )
    normal_levels = rng.choice(_NORMAL_LEVELS, len(entry_state))
    levels = np.where(entry_state == 0, normal_levels, np.take(_STATE_LEVEL, entry_state))
    # the last entry at or before each sample; index 0 is the Normal before any entry
    k = np.searchsorted(entry_ms, offset_ms, side="right")
    state = np.concatenate(([0], entry_state))[k]
    last_level = np.concatenate(([0], levels))[k]
    mean_util = np.array([normal_utilisation, *_STATE_UTILISATION[1:]], dtype=np.float64)
    util = np.clip(mean_util[state] + rng.normal(0.0, 0.02, n), 0.02, 0.99)
    avail = np.round(total_mem_bytes * (1.0 - util)).astype(np.int64)
    services = ["-"] * n if api >= 26 else [str(v) for v in rng.integers(20, 60, n).tolist()]
    columns = (
        (start_ms + offset_ms).tolist(),
        services,
        avail.tolist(),
        last_level.tolist(),
        screen.astype(np.int64).tolist(),
    )
    lines = [
        f"{'M' if i % 10 else 'D'}:\t{t}\t{s}\t{a}\t{lv}\t{on}\t0\t0\t0"
        for i, (t, s, a, lv, on) in enumerate(zip(*columns, strict=True))
    ]
    for i in range(0, n, 10):
        meminfo = _synthetic_meminfo(int(avail[i]) // 1024, total_mem_bytes // 1024)
        lines[i] += "\t" + "\t".join(map(str, meminfo))
    events: list[tuple[int, str]] = []
    at = np.searchsorted(offset_ms, entry_ms, side="right") - 1  # the sample just before
    for t, lv, i in zip(
        entry_ms.tolist(), levels.tolist(), np.maximum(at, 0).tolist(), strict=True
    ):
        events.append((t, f"T:\t{start_ms + t}\t{lv}\t{avail[i]}\t{int(screen[i])}\t0\t0\t0"))
    for number, t in enumerate(screen_ms.tolist()):
        name = "SCREEN_OFF" if number % 2 == 0 else "SCREEN_ON"
        events.append((t, f"B:\t{start_ms + t}\t{name}"))
    times = np.concatenate((offset_ms, np.array([t for t, _ in events], dtype=np.int64)))
    every = lines + [line for _, line in events]
    return "\n".join(every[i] for i in np.argsort(times, kind="stable").tolist()) + "\n"


def _synthetic_meminfo(avail_kb: int, total_kb: int) -> list[int]:
    """Plausible /proc/meminfo values (kB) around an available-memory figure."""
    free, cached = avail_kb // 4, avail_kb // 2
    anon = max(total_kb - avail_kb - total_kb // 10, 0)
    swap_total = total_kb // 2
    return [
        free, avail_kb // 50, cached, avail_kb // 40, anon // 2 + cached // 2,
        anon // 2 + cached // 2, anon // 2, anon // 2, cached // 2, cached // 2, 256,
        swap_total, swap_total // 2, 64, 0, anon, cached // 4, 263061440, 65536, 0,
    ]  # fmt: skip


def synthesize_config(
    total_mem_bytes: int,
    *,
    unix_ms: int = 1_600_000_000_000,
    api: int = 29,
    n_cores: int = 8,
    manufacturer: str = "mqoe synthetic",
    threshold_bytes: int | None = None,
    is_low_ram_device: bool | None = None,
    age: str = "-",
    answers: tuple[str, str, str, str, str] = ("-", "-", "-", "-", "-"),
    q6_text: str = "synthetic phone",
) -> str:
    """A **synthetic** configuration file: one tab-separated ``C:`` line.

    ``threshold_bytes`` defaults to 1/8 of the memory, ``is_low_ram_device`` to
    ``total_mem_bytes ≤ 1 GiB`` (Android Go devices).
    """
    threshold = total_mem_bytes // 8 if threshold_bytes is None else threshold_bytes
    low_ram = total_mem_bytes <= 1 << 30 if is_low_ram_device is None else is_low_ram_device
    for text in (age, *answers, q6_text, manufacturer):
        if "\t" in text or "\n" in text:
            raise UserError(f"configuration text fields cannot hold tabs or newlines: {text!r}")
    fields = [
        str(unix_ms), age, *answers, q6_text, manufacturer, str(total_mem_bytes),
        str(threshold), "1" if low_ram else "0", str(n_cores), str(api),
    ]  # fmt: skip
    return "C:\t" + "\t".join(fields) + "\n"
