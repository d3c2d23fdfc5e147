"""Run one scenario on one profile with one seed, and package the result as a RunRecord.

The runner owns simulated time: it advances the engine in slices so a caller can show
progress, and it reads the wall clock (models never do).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mqoe import __version__
from mqoe.device.no_device import NoDevice
from mqoe.engine import validate_seed
from mqoe.errors import UserError
from mqoe.params import CPU_KNOBS
from mqoe.results import ColumnTable, RunRecord, Tables
from mqoe.workloads import get_scenario
from mqoe.workloads.base import (
    NO_PROFILE,
    Scenario,
    Session,
    params_dict,
    parse_params,
    runs_on_a_phone,
    why_no_phone,
)
from mqoe.workloads.components import SLOTS as COMPONENT_SLOTS
from mqoe.workloads.components import describe
from mqoe.workloads.components import validate as validate_components

if TYPE_CHECKING:  # a scenario without a device imports no device model
    from mqoe.device.phone import Phone
    from mqoe.device.profiles import DeviceProfile

ProgressCallback = Callable[[float], None]
_SLICES = 50  # progress updates per run


def run_id_for(
    scenario: str, profile: DeviceProfile | None, seed: int, params: Mapping[str, object]
) -> str:
    """A stable id from the inputs: the same inputs overwrite the same stored run
    (``profile`` None for a scenario that models no phone: it has no part in the run)."""
    if profile is None:
        digest = _digest(
            {"scenario": scenario, "seed": seed, "params": params, "version": __version__}
        )
        return f"{scenario}-s{seed}-{digest}"
    digest = _digest(
        {
            "scenario": scenario,
            "profile": profile.model_dump(mode="json"),
            "seed": seed,
            "params": params,
            "version": __version__,
        }
    )
    return f"{scenario}-{profile.name}-s{seed}-{digest}"


def _digest(inputs: Mapping[str, object]) -> str:
    """12 hex digits of the SHA-256 of the inputs as canonical JSON."""
    payload = json.dumps(inputs, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def run_scenario(
    name: str,
    profile: DeviceProfile | None,
    seed: int = 0,
    overrides: Mapping[str, str] | None = None,
    *,
    trace: bool = False,
    on_progress: ProgressCallback | None = None,
    components: Mapping[str, object] | None = None,
) -> RunRecord:
    """Build, simulate and collect one run. Raises UserError for bad names or parameters.

    ``components`` gives policy objects for the scenario's slots (``{"abr": MyRule()}``,
    :mod:`mqoe.workloads.components`) instead of their parameter strings; the run id
    hashes each one's class and parameters. A scenario that models no phone
    (``device = False``: ``trace-abr``) takes no profile: one given is not used, and its
    record's profile is ``"none"``."""
    run = prepare_run(name, profile, seed, overrides, components)
    started = Started.now()
    phone, session = run.build(trace=trace)
    end_ns = session.duration_ns
    for k in range(1, _SLICES + 1):
        phone.env.run(end_ns * k // _SLICES)
        if on_progress is not None:
            on_progress(k / _SLICES)
    return run.package(phone, session, started)


@dataclass(frozen=True)
class Started:
    """When a run started: the record's UTC stamp, and the wall clock for its time."""

    utc: str
    wall_s: float

    @classmethod
    def now(cls) -> Started:
        return cls(datetime.now(UTC).isoformat(timespec="seconds"), time.perf_counter())


@dataclass(frozen=True)
class PreparedRun:
    """One run's inputs, checked: what :func:`run_scenario` builds, simulates and packages
    (warm starts, :mod:`mqoe.workloads.warm`, share the simulation of several)."""

    name: str
    scenario: Scenario
    profile: DeviceProfile | None  # with the run's CPU knobs applied; None without a phone
    seed: int
    params: Any
    knobs: Mapping[str, object]
    components: Mapping[str, object]
    described: Mapping[str, str]

    def build(self, *, trace: bool = False) -> tuple[Phone | NoDevice, Session]:
        phone: Phone | NoDevice
        if self.profile is None:
            phone = NoDevice(self.seed, self.components)
        else:
            from mqoe.device.phone import Phone

            phone = Phone(self.profile, self.seed, trace=trace, components=self.components)
        # A scenario that models no phone takes the NoDevice (Scenario types the phone).
        session = self.scenario.build(phone, self.params)  # type: ignore[arg-type]
        if phone.untaken_components:
            slot = phone.untaken_components[0]
            raise UserError(f"scenario {self.name!r} has no {slot!r} component slot")
        return phone, session

    def package(
        self,
        phone: Phone | NoDevice,
        session: Session,
        started: Started,
        shared_wall_s: float = 0.0,
    ) -> RunRecord:
        """The record of the run simulated on ``phone`` (until ``session``'s end), with
        the phone's CPU energy. ``shared_wall_s``: wall time spent before ``started`` on
        set-up shared with other runs (its share, counted in this run's wall time)."""
        end_ns = phone.env.now
        if isinstance(phone, NoDevice):
            output = session.collect()
            tables = Tables(output.tables)
            metrics = dict(output.metrics)
        else:
            phone.finish()
            output = session.collect()
            energy = phone.cpu.energy_table()
            tables = Tables({**output.tables, "energy": ColumnTable.from_records(energy)})
            energy_j = sum(row["energy_j"] for row in energy)
            power_mw = energy_j / (end_ns / 1e9) * 1e3 if end_ns else math.nan
            metrics = {**output.metrics, "energy_j": energy_j, "cpu_power_mw": power_mw}
        wall_time_s = time.perf_counter() - started.wall_s + shared_wall_s
        stored_params = params_dict(self.params) | dict(self.knobs)
        for slot in self.components:  # it replaced the parameter: its default did not run
            stored_params.pop(COMPONENT_SLOTS[slot].param, None)
        stored_params |= self.described
        return RunRecord(
            run_id=run_id_for(self.name, self.profile, self.seed, stored_params),
            scenario=self.name,
            profile=NO_PROFILE if self.profile is None else self.profile.name,
            seed=self.seed,
            params=stored_params,
            mqoe_version=__version__,
            started_utc=started.utc,
            wall_time_s=wall_time_s,
            sim_duration_s=end_ns / 1e9,
            metrics=metrics,
            tables=tables,
        )


def prepare_run(
    name: str,
    profile: DeviceProfile | None,
    seed: int = 0,
    overrides: Mapping[str, str] | None = None,
    components: Mapping[str, object] | None = None,
) -> PreparedRun:
    """Check a run's inputs (``UserError`` for bad names or parameters). ``profile`` is
    needed by a scenario that models a phone, and not used by one that models none."""
    scenario = get_scenario(name)
    seed = validate_seed(seed)
    given = validate_components(components or {}, overrides or {})
    # Described before the run: a rule's state after it must not change the run's id.
    described = {f"component.{slot}": describe(c) for slot, c in sorted(given.items())}
    knobs: Mapping[str, object] = {}
    if not runs_on_a_phone(scenario):
        profile = None
        refuse_cpu_knobs(name, overrides or {}, scenario, population=False)
    elif profile is None:
        raise UserError(f"scenario {name!r} runs on a phone: give it a profile")
    else:
        from mqoe.device.cpu.knobs import apply_cpu_knobs

        profile, knobs, overrides = apply_cpu_knobs(profile, overrides or {})
    params = parse_params(scenario.params_type, overrides or {}, name)
    return PreparedRun(name, scenario, profile, seed, params, knobs, given, described)


def run_population(
    name: str,
    seed: int = 0,
    overrides: Mapping[str, str] | None = None,
) -> RunRecord:
    """Run a population scenario (:mod:`mqoe.workloads.population`), packaged like a
    phone run; its ``profile`` is the scenario's name (it draws its own phones)."""
    from mqoe.workloads.population import get_population

    population = get_population(name)
    seed = validate_seed(seed)
    refuse_cpu_knobs(name, overrides or {}, population, population=True)
    params = parse_params(population.params_type, overrides or {}, name)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    wall_start = time.perf_counter()
    output = population.run(params, seed)
    wall_time_s = time.perf_counter() - wall_start
    stored_params = params_dict(params) | {"seed": seed}
    digest = _digest(
        {"scenario": name, "seed": seed, "params": stored_params, "version": __version__}
    )
    return RunRecord(
        run_id=f"{name}-s{seed}-{digest}",
        scenario=name,
        profile=name,
        seed=seed,
        params=stored_params,
        mqoe_version=__version__,
        started_utc=started,
        wall_time_s=wall_time_s,
        sim_duration_s=float(output.metrics.get("days", 0.0)) * 86_400.0,
        metrics=dict(output.metrics),
        tables=Tables(output.tables),
    )


def refuse_cpu_knobs(
    name: str, overrides: Mapping[str, str], scenario: object, population: bool
) -> None:
    """A one-line error for a CPU knob (``--set governor=…``) on a scenario without a
    phone of its own (:func:`~mqoe.workloads.base.why_no_phone` says why)."""
    knobs = sorted(set(overrides) & set(CPU_KNOBS))
    if not knobs:
        return
    hint = " (set it in the profiles instead)" if population else ""
    raise UserError(
        f"scenario {name!r} {why_no_phone(scenario, population)}; --set {knobs[0]} applies"
        f" to phone scenarios{hint}"
    )
