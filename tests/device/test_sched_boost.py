"""sched_boost, as Qualcomm's perf locks take it with the interaction boost: boosted
threads fit only the big cluster, and under HMP nothing else is pulled up."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mqoe.device.cpu import Thread
from mqoe.device.cpu.knobs import apply_cpu_knobs
from mqoe.device.phone import Phone
from mqoe.device.profiles import DeviceProfile, load_profile
from mqoe.engine import ms
from mqoe.errors import UserError
from mqoe.workloads.runner import run_scenario
from tests.conftest import make_profile

HMP = {"upmigrate": 90, "downmigrate": 80, "spill_nr_run": 3, "restrict_cluster_spill": True}
BOOST = {
    "min_freq_mhz": {"c0": 500},
    "min_duration_ms": 100,
    "max_duration_ms": 1000,
    "sched_boost": 2,
    "sched_boost_no_override": ["top-app", "foreground"],
}
CPUSETS = {"top-app": "0-3", "foreground": "0-3", "background": "0", "system-background": "0-1"}


def _profile(hmp: bool = True, boost: dict[str, object] | None = None,
             clusters: list[tuple[int, float, float]] | None = None,
             restrict: bool = True) -> DeviceProfile:  # fmt: skip
    # Two LITTLE cores at 1 GHz, two big at 2 GHz (capacity 512 vs 1024).
    base = make_profile(clusters or [(2, 1000.0, 1.0), (2, 2000.0, 1.0)])
    cpu = {**base.cpu.model_dump(), "cpusets": CPUSETS,
           "interaction_boost": {**BOOST, **(boost or {})}}  # fmt: skip
    if hmp:
        cpu["hmp"] = {**HMP, "restrict_cluster_spill": restrict}
    return base.model_copy(update={"cpu": base.cpu.model_validate(cpu, strict=False)})


def _spin(phone: Phone, thread: Thread) -> None:
    phone.cpu.run(thread, 1e15)  # runnable from now on


def _core(thread: Thread) -> int:
    assert thread._core is not None, thread
    return thread._core.cid


def _top_app(phone: Phone, name: str) -> Thread:
    thread = phone.cpu.thread(name)
    phone.cpu.set_group(thread, "top-app")
    return thread


def test_conservative_boost_puts_top_app_on_big_and_keeps_the_rest_on_little() -> None:
    # Without restrict_cluster_spill an idle big core would pull a waiting LITTLE thread;
    # under the boost only the boost keeps it there.
    phone = Phone(_profile(restrict=False), 0)
    cpu = phone.cpu
    ui = _top_app(phone, "ui")
    _spin(phone, ui)
    phone.run(ms(1))
    assert _core(ui) in (0, 1)  # HMP: a new small thread fits the LITTLE cluster
    cpu.interaction_hint()  # the perf lock: sched_boost 2 for 100 ms
    assert cpu.sched_boost == 2
    assert _core(ui) in (2, 3)  # the kick moved the running boosted thread up at once
    render = _top_app(phone, "render")
    sf = cpu.thread("surfaceflinger")  # the root stune group: not boosted
    bg = cpu.thread("bg")
    cpu.set_group(bg, "system-background")
    for t in (render, sf, bg):
        _spin(phone, t)
    phone.run(ms(1))
    assert _core(render) in (2, 3)
    assert _core(sf) in (0, 1) and _core(bg) in (0, 1)
    # A third LITTLE thread waits on a busy LITTLE core: a big core that frees up may
    # not pull it while the boost holds (can_migrate_task).
    extra = cpu.thread("extra")
    _spin(phone, extra)
    phone.run(ms(1))
    cpu.exit(render)
    phone.run(ms(5))
    assert _core(extra) in (0, 1) and cpu.cores[_core(ui) ^ 1].current is None
    cpu.check_invariants()
    phone.run(ms(100))  # the lock is released
    assert cpu.sched_boost == 0
    late = _top_app(phone, "late")
    _spin(phone, late)
    phone.run(ms(1))
    assert _core(late) in (0, 1, 2, 3)  # normal placement again: checked by invariants
    cpu.check_invariants()


def test_full_throttle_boosts_every_thread_and_a_homogeneous_phone_ignores_it() -> None:
    phone = Phone(_profile(boost={"sched_boost": 1, "sched_boost_no_override": []}), 0)
    cpu = phone.cpu
    cpu.interaction_hint()
    a, b = cpu.thread("a"), cpu.thread("b")  # root group
    for t in (a, b):
        _spin(phone, t)
    phone.run(ms(1))
    assert {_core(a), _core(b)} == {2, 3}
    cpu.check_invariants()
    flat = Phone(_profile(clusters=[(4, 1000.0, 1.0)]), 0)
    flat.cpu.interaction_hint()
    assert flat.cpu.sched_boost == 0  # equal clusters: nothing to place on


def test_eas_placement_honours_the_boost_too() -> None:
    phone = Phone(_profile(hmp=False), 0)
    cpu = phone.cpu
    little = cpu.thread("little-bound", cpus=[0, 1])
    ui = _top_app(phone, "ui")
    cpu.interaction_hint()
    for t in (little, ui):
        _spin(phone, t)
    phone.run(ms(1))
    assert _core(ui) in (2, 3) and _core(little) in (0, 1)
    cpu.set_sched_boost(0)
    with pytest.raises(ValueError, match="0, 1 or 2"):
        cpu.set_sched_boost(3)


def test_the_boost_fields_are_checked() -> None:
    with pytest.raises(ValidationError, match="name at least one"):
        _profile(boost={"sched_boost_no_override": []})
    with pytest.raises(ValidationError, match="unknown group"):
        _profile(boost={"sched_boost_no_override": ["top_app"]})
    with pytest.raises(ValidationError):
        _profile(boost={"sched_boost": 3})  # restrained boost: not modelled


def test_the_floors_only_knob_drops_the_sched_boost_and_keeps_the_floors() -> None:
    profile = load_profile("mi-max-3")
    boost = profile.cpu.interaction_boost
    assert boost is not None and boost.sched_boost == 2
    floors, _, _ = apply_cpu_knobs(profile, {"interaction_boost": "floors-only"})
    kept = floors.cpu.interaction_boost
    assert kept is not None and kept.sched_boost == 0
    assert kept.min_freq_mhz == boost.min_freq_mhz
    with pytest.raises(UserError, match="floors-only"):
        apply_cpu_knobs(profile, {"interaction_boost": "half"})


def test_on_an_sdm636_phone_the_boost_moves_a_fling_onto_the_gold_cores() -> None:
    """Mi Max 3, Facebook: with the sched_boost its scroll perf lock asks for, the app's
    main thread and RenderThread run on the big cluster during flings; without it HMP
    keeps them on the LITTLE one and more frames are slow."""
    runs = {}
    for knob in ("on", "floors-only"):
        profile, _, _ = apply_cpu_knobs(load_profile("mi-max-3"), {"interaction_boost": knob})
        runs[knob] = run_scenario("ui-bench", profile, 1, {"app": "facebook", "duration_s": "6"})
    on, off = runs["on"].metrics, runs["floors-only"].metrics
    assert on["srff_pct"] < off["srff_pct"]
    energy = {k: r.tables["energy"].set_index("cluster") for k, r in runs.items()}
    assert energy["on"].loc["big", "busy_s"] > energy["floors-only"].loc["big", "busy_s"]
