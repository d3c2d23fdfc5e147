"""The windowed governors' per-sample arithmetic, compiled with mypyc.

Every ``timer_rate`` (20 ms) each cluster's interactive or ondemand governor reads its
CPUs' busy times and, for interactive, walks ``choose_freq``'s bracketing over the OPP
table. Those loops run hundreds of thousands of times in an hour-long run; here they are
plain functions over the compiled scheduler's ``Core`` objects and the OPP table, so
the governor classes (:mod:`mqoe.device.cpu.governors`) stay interpreted: a user's
governor still plugs in, or subclasses one of ours, as before.
"""

from __future__ import annotations

from mqoe.device.cpu.opp import OppTable
from mqoe.device.cpu.sched_types import Core


def read_busy(cores: list[Core], now: int) -> list[int]:
    """The CPUs' cumulative busy times at ``now``, in order: a running core has been
    busy since its last accounting; an idle or offline one adds nothing."""
    busy: list[int] = []
    for core in cores:
        total = core._busy_total
        if core.current is not None:
            total += now - core._acct_t
        busy.append(total)
    return busy


def window_load(
    cores: list[Core], start_busy: list[int], window_start: int, now: int
) -> tuple[float, list[int]]:
    """The busiest online CPU's busy share (0–100) of the window since ``window_start``
    (``start_busy``: the CPUs' busy times then), and the CPUs' busy times now."""
    if len(cores) != len(start_busy):
        raise ValueError(f"{len(start_busy)} busy times for {len(cores)} CPUs")
    busy = read_busy(cores, now)
    best = 0
    for i, core in enumerate(cores):
        ran = busy[i] - start_busy[i]
        if ran > best and core.online:
            best = ran
    wall = now - window_start
    if wall <= 0:
        return 0.0, busy
    return min(100.0, 100.0 * best / wall), busy


def lookup(pairs: list[tuple[int, float]], khz: int) -> float:
    """The value of the last ``(freq, value)`` pair whose freq is at most ``khz``
    (interactive's target_loads and above_hispeed_delay)."""
    value = pairs[0][1]
    for freq, v in pairs:
        if khz >= freq:
            value = v
    return value


def choose_freq(
    opp: OppTable, start_khz: int, loads: list[tuple[int, float]], loadadjfreq: float
) -> int:
    """The interactive governor's choose_freq from the current target ``start_khz``:
    the lowest step whose target load the load at that step meets, found by the
    kernel's bracketing iteration."""
    freq = start_khz
    flat = len(loads) == 1  # one target load: no lookup
    flat_load = loads[0][1]
    freqmin = 0
    freqmax = 1 << 40
    while True:
        prevfreq = freq
        tl = flat_load if flat else lookup(loads, freq)
        freq = opp.at_least(loadadjfreq / tl)
        if freq > prevfreq:
            freqmin = prevfreq
            if freq >= freqmax:
                freq = opp.at_most(freqmax - 1)
                if freq == freqmin:
                    freq = freqmax
                    break
        elif freq < prevfreq:
            freqmax = prevfreq
            if freq <= freqmin:
                freq = opp.at_least(freqmin + 1)
                if freq == freqmax:
                    break
        if freq == prevfreq:
            break
    return min(freq, opp.max_khz)
