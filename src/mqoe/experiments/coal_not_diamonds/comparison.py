"""The reproduction's ``comparison.md`` and ``comparison.csv``: the checks of
:mod:`~mqoe.experiments.coal_not_diamonds.checks` and
:mod:`~mqoe.experiments.coal_not_diamonds.nokia1` in sections, one per figure, with
notes on the runs.
"""

from __future__ import annotations

import math

from mqoe.experiments.coal_not_diamonds.aggregate import Aggregate, _number
from mqoe.experiments.coal_not_diamonds.checks import (
    Check,
    crash_checks,
    drop_checks,
    preemption_checks,
    pss_checks,
    shape_checks,
    thread_checks,
)
from mqoe.experiments.coal_not_diamonds.nokia1 import nokia1_real_checks, nokia1_top_checks
from mqoe.experiments.coal_not_diamonds.plan import (
    COMPOSITOR_THREAD,
    DURATION_S,
    QUICK_DURATION_S,
    VIDEO_PROCESS,
    Plan,
    Results,
)
from mqoe.results.comparison import ComparisonRow


def comparison_sections(results: Results, quick: bool) -> list[tuple[str, list[Check]]]:
    plan, agg = Plan.for_mode(quick), Aggregate(results)
    return [
        ("drop-grid: Nokia 1 frame drop rate", drop_checks(agg)),
        ("drop-grid: Nokia 1 crash rate (% of runs)", crash_checks(agg)),
        ("nokia1-real: the Nokia 1's 30 cells against its real runs", nokia1_real_checks(agg)),
        (
            "nokia1-real: kswapd, iowait, zRAM and time to crash on the Nokia 1",
            nokia1_top_checks(agg),
        ),
        ("thread-states: video threads, Nokia 1 480p60", thread_checks(agg, plan)),
        ("preemptions: mmcqd and kswapd, Nokia 1 480p60", preemption_checks(agg, plan)),
        ("pss: video client memory", pss_checks(agg, plan)),
        ("organic, fps-switch, genres and drop-grid shapes", shape_checks(agg, plan)),
    ]


def comparison_rows(results: Results, quick: bool) -> list[ComparisonRow]:
    """The checks of :func:`comparison_sections` as ``comparison.csv`` rows."""
    return [
        ComparisonRow.numeric(title, c.what, c.published, c.simulated,
                              tolerance=c.tolerance, met=c.met, source=c.source)
        for title, checks in comparison_sections(results, quick)
        for c in checks
    ]  # fmt: skip


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3g}"  # small times stay visible


def _verdict(met: bool | None) -> str:
    return "reference" if met is None else ("met" if met else "**not met**")


def comparison_markdown(results: Results, quick: bool) -> str:
    """Coal Not Diamonds' published values beside the simulated ones, per figure."""
    plan = Plan.for_mode(quick)
    sections = comparison_sections(results, quick)
    checked = [c for _, checks in sections for c in checks if c.met is not None]
    met = sum(bool(c.met) for c in checked)
    lines = [
        f"# coal-not-diamonds: published vs simulated{' (quick)' if quick else ''}",
        "",
        f"Profiles {', '.join(plan.profiles)}; seeds per configuration "
        f"{', '.join(f'{p} {n}' for p, n in plan.seeds_by_profile)} "
        f"({plan.genre_seeds} for genres); "
        f"{QUICK_DURATION_S if quick else DURATION_S} s sessions. Published values are "
        "the CoNEXT 2022 study's; the calibration is partial — the documentation's "
        "coal-not-diamonds page (docs/reproductions/coal-not-diamonds.md) says which rows "
        "are *not met* and why. Difference = simulated − published. Rows marked "
        "*reference* have no tolerance; for ratios the checked row is moderate/normal.",
        "",
        f"**{met} of {len(checked)} checked rows met.**",
    ]
    if quick:
        lines += [
            "",
            "Quick mode: one seed, 30 s sessions, nokia-1 only — not a calibration verdict.",
        ]
    for title, checks in sections:
        lines += ["", f"## {title}", ""]
        if not checks:
            lines.append("Not run in this mode.")
            continue
        lines += [
            "| what | published | simulated | difference | tolerance | verdict | source |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {c.what} | {_fmt(c.published)} | {_fmt(c.simulated)} | {_fmt(c.difference)} "
            f"| {c.tolerance} | {_verdict(c.met)} | {c.source} |"
            for c in checks
        ]
    lines += ["", "## Notes on the runs", "", *run_notes(results, quick), ""]
    return "\n".join(lines)


def run_notes(results: Results, quick: bool) -> list[str]:
    """Facts about the runs a reader needs to trust (or distrust) the tables above."""
    duration = QUICK_DURATION_S if quick else DURATION_S
    crashed = [r for _, r in results if bool(r.metrics.get("crashed", False))]
    late = [r for r in crashed if _number(r.metrics.get("crash_time_s")) >= duration]
    missed = [r for _, r in results if r.metrics.get("pressure_reached") is False]
    wall = sum(r.wall_time_s for _, r in results)
    return [
        f"- {len(results)} sessions, {wall:.0f} CPU-seconds of simulation.",
        f"- {len(crashed)} sessions crashed; {len(late)} of them only at or after the end "
        f"of the {duration} s of playback (crash_pct counts a run that crashed during playback).",
        f"- {len(missed)} sessions started before the generator reached its target state.",
        f"- Video threads = threads of the player process (`{VIDEO_PROCESS}`) plus "
        f"`{COMPOSITOR_THREAD}`. mmcqd preemption numbers count only preemptions of video "
        "threads (the scenario's `video_preemptions` table). Thread-state and "
        "preemption tables average the sessions that played to the end (all of them "
        "if every one crashed): the study's tables describe whole sessions.",
    ]
