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
from datetime import UTC, datetime

from mqoe import __version__
from mqoe.device.cpu.knobs import CPU_KNOBS, apply_cpu_knobs
from mqoe.device.phone import Phone
from mqoe.device.profiles import DeviceProfile
from mqoe.engine import validate_seed
from mqoe.errors import UserError
from mqoe.results import ColumnTable, RunRecord, Tables
from mqoe.workloads import get_scenario
from mqoe.workloads.base import params_dict, parse_params
from mqoe.workloads.components import SLOTS as COMPONENT_SLOTS
from mqoe.workloads.components import describe
from mqoe.workloads.components import validate as validate_components

ProgressCallback = Callable[[float], None]
_SLICES = 50  # progress updates per run


def run_id_for(
    scenario: str, profile: DeviceProfile, seed: int, params: Mapping[str, object]
) -> str:
    """A stable id from the inputs: the same inputs overwrite the same stored run."""
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
    profile: DeviceProfile,
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
    hashes each one's class and parameters."""
    scenario = get_scenario(name)
    seed = validate_seed(seed)
    given = validate_components(components or {}, overrides or {})
    # Described before the run: a rule's state after it must not change the run's id.
    described = {f"component.{slot}": describe(c) for slot, c in sorted(given.items())}
    profile, knobs, overrides = apply_cpu_knobs(profile, overrides or {})
    params = parse_params(scenario.params_type, overrides, name)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    wall_start = time.perf_counter()
    phone = Phone(profile, seed, trace=trace, components=given)
    session = scenario.build(phone, params)
    if phone.untaken_components:
        slot = phone.untaken_components[0]
        raise UserError(f"scenario {name!r} has no {slot!r} component slot")
    end_ns = session.duration_ns
    for k in range(1, _SLICES + 1):
        phone.env.run(end_ns * k // _SLICES)
        if on_progress is not None:
            on_progress(k / _SLICES)
    phone.finish()
    output = session.collect()
    energy = phone.cpu.energy_table()
    tables = Tables({**output.tables, "energy": ColumnTable.from_records(energy)})
    energy_j = sum(row["energy_j"] for row in energy)
    metrics = {**output.metrics, "energy_j": energy_j,
               "cpu_power_mw": energy_j / (end_ns / 1e9) * 1e3 if end_ns else math.nan}  # fmt: skip
    wall_time_s = time.perf_counter() - wall_start
    stored_params = params_dict(params) | knobs
    for slot in given:  # the component replaced the parameter: its default did not run
        stored_params.pop(COMPONENT_SLOTS[slot].param, None)
    stored_params |= described
    return RunRecord(
        run_id=run_id_for(name, profile, seed, stored_params),
        scenario=name,
        profile=profile.name,
        seed=seed,
        params=stored_params,
        mqoe_version=__version__,
        started_utc=started,
        wall_time_s=wall_time_s,
        sim_duration_s=end_ns / 1e9,
        metrics=metrics,
        tables=tables,
    )


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
    knobs = sorted(set(overrides or {}) & set(CPU_KNOBS))
    if knobs:
        raise UserError(
            f"scenario {name!r} draws its own phones; --set {knobs[0]} applies to phone "
            "scenarios (set it in the profiles instead)"
        )
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
