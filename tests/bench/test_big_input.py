"""The big-input benchmark's harness works end to end (tiny files: no timing asserted)."""

from __future__ import annotations

from big_input import GFXINFO, SYSTRACE, bound_lines, measure_big_input


def test_big_input_figures_come_from_the_real_command_on_generated_files() -> None:
    figures: dict[str, float] = {}
    for spec in (SYSTRACE, GFXINFO):
        figures.update(measure_big_input(spec, scale=0.002))  # 2 MB and 1 MB
    assert set(figures) == {
        "systrace_1gb_mb_per_s", "systrace_1gb_peak_rss_mb",
        "gfxinfo_500mb_mb_per_s", "gfxinfo_500mb_peak_rss_mb",
    }  # fmt: skip
    assert all(value > 0 for value in figures.values())
    # A Python process with pandas loaded is tens of MB; a misread ru_maxrss unit is not.
    assert 20 < figures["systrace_1gb_peak_rss_mb"] < 2_000
    lines = bound_lines(figures)
    assert len(lines) == 2 and all("within 300 MB" in line for line in lines)


def test_bound_lines_say_when_a_figure_is_over_its_bound() -> None:
    (line,) = bound_lines({"gfxinfo_500mb_peak_rss_mb": 301.0})
    assert "OVER 300 MB" in line
