"""Run-level CPU knobs: ``--set governor=…`` / ``--set hotplug=…`` on any scenario.

They change the phone, not the workload: the profile is rewritten before the phone is
built (so a run's id, which hashes the profile, tells them apart) and the value is kept
with the run's parameters.

* ``governor=name`` or ``governor=name:key=value,…`` — every cluster's governor; on top
  of the profile's own tunables when it names the profile's governor, else on the
  governor's kernel defaults (``mqoe profiles show`` lists the profile's).
* ``hotplug=off`` — all cores stay online; ``hotplug=name:key=value,…`` — a hotplug
  policy on every cluster (on top of the profile's tunables for the same policy).
"""

from __future__ import annotations

from collections.abc import Mapping

from mqoe.device.cpu.governors import GOVERNORS, merged_tunables
from mqoe.device.cpu.hotplug import HOTPLUGS
from mqoe.device.profiles import DeviceProfile
from mqoe.device.profiles.schema import GovernorSpec, HotplugSpec
from mqoe.errors import UserError

CPU_KNOBS = ("governor", "hotplug")


def apply_cpu_knobs(
    profile: DeviceProfile, overrides: Mapping[str, str]
) -> tuple[DeviceProfile, dict[str, str], dict[str, str]]:
    """(profile with the knobs applied, the knobs used, the other overrides)."""
    knobs = {k: v for k, v in overrides.items() if k in CPU_KNOBS}
    rest = {k: v for k, v in overrides.items() if k not in CPU_KNOBS}
    cpu = profile.cpu
    clusters = [c.name for c in cpu.clusters]
    if "governor" in knobs:
        name, tunables = merged_tunables(
            cpu.governor.name, cpu.governor.clusters, knobs["governor"]
        )
        if "*" in tunables:
            tunables = {c: dict(tunables["*"]) for c in clusters}
        spec = GovernorSpec.model_validate({"name": name, "clusters": tunables}, strict=False)
        cpu = cpu.model_copy(update={"governor": spec})
        _check_builds(name, spec.clusters, "governor")
    if "hotplug" in knobs:
        text = knobs["hotplug"].strip()
        if text == "off":
            cpu = cpu.model_copy(update={"hotplug": None})
        else:
            name, _, rest_text = text.partition(":")
            name = name.strip()
            if name not in HOTPLUGS:
                raise UserError(f"unknown hotplug {name!r}; available: off, {', '.join(HOTPLUGS)}")
            base = cpu.hotplug.clusters if cpu.hotplug and cpu.hotplug.name == name else {}
            extra = _pairs(rest_text, "hotplug")
            tunables = {c: {**base.get(c, {}), **extra} for c in (base or clusters)}
            spec_h = HotplugSpec.model_validate({"name": name, "clusters": tunables}, strict=False)
            cpu = cpu.model_copy(update={"hotplug": spec_h})
    if cpu is not profile.cpu:
        profile = profile.model_copy(update={"cpu": cpu})
    return profile, knobs, rest


def check_cpu_knob(key: str, value: str) -> None:
    """A one-line UserError for a bad ``governor=`` / ``hotplug=`` value, before any run
    (the tunables a profile adds are checked when its phone is built)."""
    name, _, rest = value.strip().partition(":")
    name = name.strip()
    if key == "governor":
        if name not in GOVERNORS:
            raise UserError(f"--set governor: unknown governor {name!r}; available: "
                            f"{', '.join(sorted(GOVERNORS))}")  # fmt: skip
        from mqoe.device.cpu.governors import make_governor

        make_governor(name, _pairs(rest, "--set governor"), "--set governor")
    elif key == "hotplug" and name != "off":
        if name not in HOTPLUGS:
            raise UserError(f"--set hotplug: unknown hotplug {name!r}; available: off, "
                            f"{', '.join(sorted(HOTPLUGS))}")  # fmt: skip
        from mqoe.device.cpu.hotplug import make_hotplug

        make_hotplug(name, _pairs(rest, "--set hotplug"), "--set hotplug")


def _pairs(text: str, what: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in text.split(",") if text.strip() else ():
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UserError(f"{what}: expected key=value, got {item!r}")
        try:
            number = float(value)
            out[key.strip()] = int(number) if number.is_integer() and "." not in value else number
        except ValueError:
            out[key.strip()] = value.strip()
    return out


def _check_builds(name: str, tunables: Mapping[str, Mapping[str, object]], what: str) -> None:
    """Unknown tunables and bad values fail here, before any run starts."""
    from mqoe.device.cpu.governors import make_governor

    if name not in GOVERNORS:
        raise UserError(f"unknown {what} {name!r}; available: {', '.join(sorted(GOVERNORS))}")
    for cluster, values in tunables.items():
        make_governor(name, values, f"--set {what} (cluster {cluster})")
