"""The phone is the composition root: every subsystem is built by ``Phone``, none by a
workload, an app or a reproduction."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mqoe.device.display import DisplayConfig
from mqoe.device.phone import Phone
from mqoe.policies.gpu_compression import make_compression_policy
from mqoe.workloads.app_switching import AppSwitching, AppSwitchingParams
from mqoe.workloads.ui_bench import UiBench, UiBenchParams
from tests.conftest import make_profile

SRC = Path(__file__).resolve().parents[2] / "src" / "mqoe"
# What Phone builds (mqoe.device.phone): constructing one elsewhere bypasses its wiring.
SUBSYSTEMS = frozenset({"Environment", "Cpu", "ProcessTable", "Storage", "Memory", "Lmkd",
                        "TrimSignals", "Gpu", "Display", "Network"})  # fmt: skip
PACKAGES = ("workloads", "apps", "experiments")


def constructions(path: Path) -> list[tuple[int, str]]:
    """(line, class) of every call in ``path`` that constructs a subsystem, through
    ``from … import X as Y`` aliases and ``module.X(…)`` alike."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    alias = {a.asname or a.name: a.name for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) for a in node.names}  # fmt: skip
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = alias.get(func.id, func.id) if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else None)  # fmt: skip
        if name in SUBSYSTEMS:
            found.append((node.lineno, name))
    return found


def test_no_workload_app_or_reproduction_constructs_a_subsystem() -> None:
    files = sorted(p for package in PACKAGES for p in (SRC / package).rglob("*.py"))
    assert len(files) > 20
    offenders = [f"{path.relative_to(SRC)}:{line}: {name}(…)"
                 for path in files for line, name in constructions(path)]  # fmt: skip
    assert offenders == []


def test_the_check_finds_a_construction_through_an_alias_or_a_module(tmp_path: Path) -> None:
    source = tmp_path / "w.py"
    source.write_text(
        "from mqoe.device.net import Network as Net\n"
        "import mqoe.device.gpu as g\n"
        "def build(env, cpu):\n"
        "    net = Net(env)\n"
        "    gpu = g.Gpu(env, cpu)\n"
        "    return phone.attach_display(), Thing(env)\n"
    )
    assert constructions(source) == [(4, "Network"), (5, "Gpu")]


def test_the_phone_builds_its_gpu_display_and_network_once() -> None:
    phone = Phone(make_profile([(2, 1000.0, 1.0)]), 1)
    assert phone.gpu is None and phone.display is None
    assert phone.net is phone.net and phone.net.env is phone.env
    gpu = phone.attach_gpu(make_compression_policy("van"))
    assert phone.gpu is gpu and gpu.memory is phone.memory and gpu.cpu is phone.cpu
    display = phone.attach_display(DisplayConfig(buffers=2))
    assert phone.display is display and display.cpu is phone.cpu
    assert display.config.buffers == 2
    with pytest.raises(RuntimeError, match="already"):
        phone.attach_gpu(make_compression_policy("van"))
    with pytest.raises(RuntimeError, match="already"):
        phone.attach_display()


def test_scenarios_attach_what_they_configure_to_their_phone() -> None:
    profile = make_profile([(2, 1000.0, 1.0)])
    phone = Phone(profile, 1)
    UiBench().build(phone, UiBenchParams(app="gmail", buffers=2, duration_s=1.0))
    assert phone.display is not None and phone.display.config.buffers == 2
    assert phone.display.surfaces  # the app's surface is on the phone's display
    phone = Phone(profile, 1)
    AppSwitching().build(phone, AppSwitchingParams(policy="van", launches=2))
    assert phone.gpu is not None and phone.gpu.policy.name == "van"
