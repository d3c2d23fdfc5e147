"""Run-level CPU knobs: ``--set governor=…`` / ``hotplug=…`` / ``interaction_boost=off``
on any scenario.

They change the phone, not the workload: the profile is rewritten before the phone is
built (so a run's id, which hashes the profile, tells them apart) and the value is kept
with the run's parameters.

* ``governor=name`` or ``governor=name:key=value,…`` — every cluster's governor; on top
  of the profile's own tunables when it names the profile's governor, else on the
  governor's kernel defaults (``mqoe profiles show`` lists the profile's).
* ``hotplug=off`` — all cores stay online; ``hotplug=name:key=value,…`` — a hotplug
  policy on every cluster (on top of the profile's tunables for the same policy).
* ``interaction_boost=off`` — touches and flings raise no clock floors and take no
  scheduler boost (the profile's ``[cpu.interaction_boost]`` dropped); ``floors-only``
  keeps the floors without the ``sched_boost``; ``on`` keeps the profile's.
"""

from __future__ import annotations

from collections.abc import Mapping

from mqoe.device.cpu.governors import GOVERNORS, make_governor
from mqoe.device.cpu.hotplug import HOTPLUGS, make_hotplug
from mqoe.device.profiles import DeviceProfile
from mqoe.device.profiles.cpu_schema import GovernorSpec, HotplugSpec
from mqoe.errors import UserError
from mqoe.params import CPU_KNOBS

__all__ = ["BOOST_CHOICES", "CPU_KNOBS", "apply_cpu_knobs", "check_cpu_knob"]
BOOST_CHOICES = ("on", "off", "floors-only")


def apply_cpu_knobs(
    profile: DeviceProfile, overrides: Mapping[str, str]
) -> tuple[DeviceProfile, dict[str, str], dict[str, str]]:
    """(profile with the knobs applied, the knobs used, the other overrides)."""
    knobs = {k: v for k, v in overrides.items() if k in CPU_KNOBS}
    rest = {k: v for k, v in overrides.items() if k not in CPU_KNOBS}
    cpu = profile.cpu
    clusters = [c.name for c in cpu.clusters]
    if "governor" in knobs:
        name, extra = _parse("governor", knobs["governor"])
        tunables = _overlay(cpu.governor, name, extra, clusters)
        for cluster, values in tunables.items():
            make_governor(name, values, f"--set governor (cluster {cluster})")
        spec = GovernorSpec.model_validate({"name": name, "clusters": tunables}, strict=False)
        cpu = cpu.model_copy(update={"governor": spec})
    if "hotplug" in knobs:
        name, extra = _parse("hotplug", knobs["hotplug"])
        if name == "off":
            cpu = cpu.model_copy(update={"hotplug": None})
        else:
            tunables = _overlay(cpu.hotplug, name, extra, clusters)
            spec_h = HotplugSpec.model_validate({"name": name, "clusters": tunables}, strict=False)
            cpu = cpu.model_copy(update={"hotplug": spec_h})
    if "interaction_boost" in knobs:
        _check_boost(knobs["interaction_boost"])
        choice = knobs["interaction_boost"].strip()
        if choice == "off":
            cpu = cpu.model_copy(update={"interaction_boost": None})
        elif choice == "floors-only" and cpu.interaction_boost is not None:
            floors = cpu.interaction_boost.model_copy(update={"sched_boost": 0})
            cpu = cpu.model_copy(update={"interaction_boost": floors})
    if cpu is not profile.cpu:
        profile = profile.model_copy(update={"cpu": cpu})
    return profile, knobs, rest


def check_cpu_knob(key: str, value: str) -> None:
    """A one-line UserError for a bad ``governor=`` / ``hotplug=`` value, before any run
    (the tunables a profile adds are checked when its phone is built)."""
    if key == "interaction_boost":
        _check_boost(value)
        return
    name, extra = _parse(key, value)
    if key == "governor":
        make_governor(name, extra, "--set governor")
    elif name != "off":
        make_hotplug(name, extra, "--set hotplug")


def _check_boost(value: str) -> None:
    if value.strip() not in BOOST_CHOICES:
        raise UserError(
            f"--set interaction_boost: expected {', '.join(BOOST_CHOICES)}, got {value!r}"
        )


def _parse(key: str, value: str) -> tuple[str, dict[str, object]]:
    """``name`` or ``name:key=value,…`` → (name, typed values); the name must exist."""
    name, _, text = value.strip().partition(":")
    name = name.strip()
    known = GOVERNORS if key == "governor" else {"off": None, **HOTPLUGS}
    if name not in known:
        raise UserError(f"--set {key}: unknown {key} {name!r}; available: "
                        f"{', '.join(sorted(known))}")  # fmt: skip
    out: dict[str, object] = {}
    for item in text.split(",") if text.strip() else ():
        field, eq, raw = item.partition("=")
        if not eq or not field.strip():
            raise UserError(f"--set {key}: expected key=value, got {item!r}")
        out[field.strip()] = _typed(raw.strip())
    return name, out


def _typed(text: str) -> object:
    """A sysfs-style value: an int, a float, else the string (``"85 1500000:90"``)."""
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() and "." not in text else number


def _overlay(
    spec: GovernorSpec | HotplugSpec | None,
    name: str,
    extra: Mapping[str, object],
    clusters: list[str],
) -> dict[str, dict[str, object]]:
    """Every cluster's tunables: the profile's when ``spec`` names the same policy (and
    only its clusters, for hotplug), else the kernel defaults; ``extra`` on top."""
    same = spec is not None and spec.name == name
    base: Mapping[str, Mapping[str, object]] = spec.clusters if spec is not None and same else {}
    keep = list(base) if isinstance(spec, HotplugSpec) and base else clusters
    return {c: {**base.get(c, {}), **extra} for c in keep}
