"""The plan of the Aging or Glitching? (MobiCom 2020) reproduction's runs.

The phone models and benchmark apps of the study, the UI-benchmark cells
(:class:`UiCell`), the flash-aging runs (WAM policies and the S_d sweep), the fleets,
and :class:`Results`, the records of a plan's runs by kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqoe.results.store import RunRecord

MODELS = (
    "redmi-5", "mi-a1", "mi-max-2", "mi-max-3", "redmi-note-5-pro",  # low end (the study's tiers)
    "mi-a2", "mi-8-lite", "redmi-note-7", "redmi-pro-2", "mi-note-3",  # middle
    "mi-6", "mi-mix-2s", "mi-8-pro", "mi-mix-3", "black-shark",  # high end
)  # fmt: skip
LOW_END = MODELS[:5]
BENCH_APPS = (
    "chrome", "clash-of-clans", "facebook", "gmail", "instagram",
    "messenger", "spotify", "subway-surf", "whatsapp", "youtube",
)  # fmt: skip
RUIR_APPS = ("k9-mail", "feeder", "markor", "amaze", "conversations")
RUIR_MODEL = "mi-a2"  # a middle-tier phone for the before/after
SF_CPUSETS = ("little", "big_when_little_saturated")
SEED = 1
FLEET = {"full": {"phones": "30000", "days": "21"},
         "quick": {"phones": "2000", "days": "21"}}  # fmt: skip
WAM_FLEET = ("realtime", "practical")
FLASH_MODEL = "mi-a2"  # a middle-tier phone with 64 GB of eMMC (the study's model 6)
# The write-speed figure on each storage type the fleet has: eMMC (the sweep's phone)
# and UFS 2.1 (a high-end phone with 128 GB).
FLASH_MODELS = (FLASH_MODEL, "mi-8-pro")
WAM_POLICIES = ("realtime", "lazy", "practical")
SD_THRESHOLDS_GB = {"full": (1, 2, 3, 4, 6, 8, 10, 12), "quick": (1, 6, 12)}
FLASH_DAYS = {"full": "21", "quick": "7"}  # the study's three weeks; a week in quick mode
# The daily storage benchmark before the night's trim (03:00), after it, and at midday:
# its figures are the day's average (and spread) over the three.
BENCH_HOURS = "2.5,5,12"


@dataclass(frozen=True)
class UiCell:
    figure: str  # which figure the run feeds (srff, ruir, sf-cpuset)
    model: str
    app: str
    overrides: tuple[tuple[str, str], ...] = ()


def ui_cells() -> list[UiCell]:
    cells = [UiCell("srff", m, a) for m in MODELS for a in BENCH_APPS]
    cells += [
        UiCell("ruir", RUIR_MODEL, a, (("trim_ruir", trim),))
        for a in RUIR_APPS
        for trim in ("false", "true")
    ]
    cells += [
        UiCell("sf-cpuset", m, a, (("sf_cpuset", cpuset),))
        for m in LOW_END
        for a in BENCH_APPS
        for cpuset in SF_CPUSETS
        if cpuset != "little"  # the "little" runs are the srff runs themselves
    ]
    return cells


def _ui_overrides(cell: UiCell, quick: bool) -> dict[str, str]:
    overrides = {"app": cell.app, **dict(cell.overrides)}
    if quick:
        overrides["duration_s"] = "10"
    return overrides


def flash_specs(quick: bool) -> list[tuple[str, str]]:
    """(model, WAM policy spec) of the flash-aging runs: the three policies on each of
    :data:`FLASH_MODELS`, then the S_d sweep on :data:`FLASH_MODEL` (practical at its
    default 6 GB is the sweep's 6 GB point too)."""
    sweep = SD_THRESHOLDS_GB["quick" if quick else "full"]
    runs = [(model, wam) for model in FLASH_MODELS for wam in WAM_POLICIES]
    return runs + [(FLASH_MODEL, f"practical:threshold_gb={gb}") for gb in sweep if gb != 6]


# A planned run's key: ("ui", UiCell), ("fleet", WAM spec) or ("flash", (model, WAM spec)).
Key = tuple[str, object]


@dataclass
class Results:
    ui: list[tuple[UiCell, RunRecord]]
    fleet: dict[str, RunRecord]
    flash: dict[tuple[str, str], RunRecord] = field(default_factory=dict)  # (model, spec)

    @classmethod
    def from_pairs(cls, pairs: list[tuple[Key, RunRecord]]) -> Results:
        out = cls([], {}, {})
        for (kind, what), record in pairs:
            if kind == "ui":
                out.ui.append((what, record))  # type: ignore[arg-type]
            elif kind == "fleet":
                out.fleet[what] = record  # type: ignore[index]
            else:
                out.flash[what] = record  # type: ignore[index]
        return out

    def pairs(self) -> list[tuple[Key, RunRecord]]:
        return [
            *((("flash", spec), r) for spec, r in self.flash.items()),
            *((("fleet", wam), r) for wam, r in self.fleet.items()),
            *((("ui", cell), r) for cell, r in self.ui),
        ]
