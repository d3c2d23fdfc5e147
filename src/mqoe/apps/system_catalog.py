"""The system services' catalogue (``apps/catalog/system.toml``): one
:class:`ServiceSpec` per always-running process, checked as it is read (errors name the
entry). Kept apart from :mod:`mqoe.apps.system`, which is compiled: a compiled
dataclass checks its field types in its constructor, before the checks here could name
the entry and the key.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources

CATALOGUE = "system.toml"


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    name: str
    adj: int
    anon_mb: float
    file_mb: float
    threads: int
    mcycles_per_s: float  # mean CPU, reference Mcycles per second (all threads)
    burst_mcycles: float  # mean CPU burst per wake-up
    touch_per_s: float  # share of its pages used per second
    nice: int = 0
    code_mb: float = 0.0  # file pages mapped executable (libraries, .oat code)
    # zygote's preloaded image: its file pages are mapped by every Java process
    # (Memory.set_preload). Booted only where the LRU model keeps shared mappings.
    preload: bool = False

    def __post_init__(self) -> None:
        for name, kinds in _TYPES.items():
            value = getattr(self, name)
            if isinstance(value, bool) != (kinds == (bool,)) or not isinstance(value, kinds):
                expected = " or ".join(k.__name__ for k in kinds)
                raise ValueError(f"{name} must be {expected}, got {value!r}")
        if not -20 <= self.nice <= 19:
            raise ValueError(f"nice must be in -20..19, got {self.nice}")
        if min(self.anon_mb, self.file_mb, self.code_mb) < 0 or self.threads < 1:
            raise ValueError("anon_mb, file_mb and code_mb must not be negative; threads ≥ 1")
        if not (self.mcycles_per_s > 0 and self.burst_mcycles > 0):
            raise ValueError("mcycles_per_s and burst_mcycles must be positive")
        if not 0 <= self.touch_per_s <= 1:
            raise ValueError("touch_per_s must be in 0..1")

    @property
    def wake_gap_s(self) -> float:
        """Mean gap between one thread's wake-ups."""
        return self.burst_mcycles * self.threads / self.mcycles_per_s


_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,), "adj": (int,), "anon_mb": (int, float), "file_mb": (int, float),
    "threads": (int,), "mcycles_per_s": (int, float), "burst_mcycles": (int, float),
    "touch_per_s": (int, float), "nice": (int,), "code_mb": (int, float), "preload": (bool,),
}  # fmt: skip


def load_catalogue(table: str, text: str | None = None) -> tuple[ServiceSpec, ...]:
    """The ``go`` or ``full`` service table (``text``: a catalogue to parse instead)."""
    if text is None:
        return _packaged(table)
    return _parse(table, text, "catalogue text")


@cache
def _packaged(table: str) -> tuple[ServiceSpec, ...]:
    """The packaged catalogue's table, parsed once per process (every phone boots it)."""
    text = resources.files("mqoe.apps").joinpath("catalog", CATALOGUE).read_text()
    return _parse(table, text, CATALOGUE)


def _parse(table: str, text: str, source: str) -> tuple[ServiceSpec, ...]:
    data = tomllib.loads(text)
    entries = data.get(table)
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{source}: expected an array of tables [[{table}]]")
    known = {f.name for f in fields(ServiceSpec)}
    specs: list[ServiceSpec] = []
    for i, entry in enumerate(entries):
        where = f"{source}: [[{table}]] #{i + 1}"
        unknown = set(entry) - known
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        try:
            spec = ServiceSpec(**entry)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        if any(s.name == spec.name for s in specs):
            raise ValueError(f"{where}: duplicate name {spec.name!r}")
        specs.append(spec)
    return tuple(specs)
