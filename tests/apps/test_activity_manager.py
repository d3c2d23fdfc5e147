"""ActivityManager's app caching (GPU-buffer study): starts vs resumes, the LRU cached-app list and
its length limit, importance as oom_score_adj, lmkd kills, and, with the GPU module,
decompression of a resumed app's buffers before its first GPU operation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mqoe.apps.activity_manager import ActivityManager, Launch
from mqoe.apps.catalog import REQUIRED_SOURCES, AppCatalog, AppSpec
from mqoe.device.gpu import Gpu, GpuState, pages_of
from mqoe.device.gpu_content import load_table
from mqoe.device.phone import Phone
from mqoe.device.process import CACHED_APP_MIN_ADJ, FOREGROUND_APP_ADJ, Process
from mqoe.engine import seconds
from mqoe.policies.gpu_compression import Fair, Full
from tests.conftest import make_profile


def spec(
    name: str, *, gpu_bg_mb: float = 8.0, bg_gpu_work: bool = False, **sizes: float
) -> AppSpec:
    """A small app: 48 MB in front (16 MB GPU buffers), 24 MB cached (``gpu_bg_mb``)."""
    fields: dict[str, Any] = {
        "name": name,
        "label": name,
        "category": "communication",
        "fg_uss_mb": 48.0,
        "bg_uss_mb": 24.0,
        "gpu_fg_mb": 16.0,
        "gpu_bg_mb": gpu_bg_mb,
        "file_mb": 4.0,
        "bg_gpu_work": bg_gpu_work,
        "start_mcycles": 300.0,
        "start_read_mb": 1.0,
        "resume_mcycles": 60.0,
        "resume_read_mb": 0.5,
        "fg_mcycles_per_s": 50.0,
        "content": {"zero": 0.5, "flat": 0.2, "text": 0.2, "photo": 0.1, "noise": 0.0},
        "sources": {key: "test fixture" for key in REQUIRED_SOURCES},
    }
    return AppSpec.model_validate(fields | sizes)


NAMES = tuple(f"com.test.app{i}" for i in range(6))
SMALL = AppCatalog(tuple(spec(n) for n in NAMES), "test")


def phone_with(
    catalog: AppCatalog = SMALL,
    *,
    policy: Any = None,
    max_cached: int = 8,
    ram_mb: int = 1024,
    lmk: dict[str, Any] | None = None,
) -> tuple[Phone, ActivityManager]:
    memory = {"ram_mb": ram_mb, "reserved_mb": 0}
    phone = Phone(make_profile([(2, 1000.0, 1.0)], memory=memory, lmk=lmk), 1)
    gpu = None
    if policy is not None:
        gpu = Gpu(phone.env, phone.cpu, phone.memory, phone.profile.gpu, policy, load_table())
    return phone, ActivityManager(phone, catalog, max_cached=max_cached, gpu=gpu)


def launch(phone: Phone, am: ActivityManager, name: str, then_s: float = 1.0) -> Launch:
    """Launch ``name``, wait for it, then let the user look at it for ``then_s``."""
    done = phone.env.process(am.launch(name))
    end = phone.env.now + seconds(60)
    while not done.processed:
        assert phone.env.now < end, f"launch of {name} did not finish"
        phone.env.run(phone.env.now + seconds(0.05))
    phone.env.run(phone.env.now + seconds(then_s))
    result: Launch = done.value
    return result


def cached_names(am: ActivityManager) -> list[str]:
    return [a.spec.name for a in am.cached]


def process_of(am: ActivityManager, name: str) -> Process:
    apps = [a for a in [am.foreground, *am.cached] if a is not None and a.spec.name == name]
    assert len(apps) == 1, name
    return apps[0].process


# -- starts, resumes and the cached list ------------------------------------------------
def test_first_launch_starts_a_relaunch_resumes_and_a_killed_app_starts_again() -> None:
    phone, am = phone_with()
    a, b, c = NAMES[:3]
    kinds = [launch(phone, am, n).kind for n in (a, b, a, c)]
    assert kinds == ["start", "start", "resume", "start"]
    assert cached_names(am) == [a, b]
    victim = process_of(am, b)
    phone.lmkd.kill(victim, "minfree 49152 KB")
    assert cached_names(am) == [a]
    assert am.lmk_killed == [(phone.env.now, b)]
    assert launch(phone, am, b).kind == "start"
    assert process_of(am, b) is not victim
    assert launch(phone, am, b).kind == "resume"  # relaunching the app in front
    phone.memory.check()


def test_a_resume_is_faster_than_a_start() -> None:
    phone, am = phone_with()
    a, b = NAMES[:2]
    first = launch(phone, am, a)
    launch(phone, am, b)
    again = launch(phone, am, a)
    assert (first.kind, again.kind) == ("start", "resume")
    assert again.latency_ns < first.latency_ns / 2


def test_cached_list_is_lru_capped_at_max_cached_with_adj_by_position() -> None:
    """A random launch sequence against a reference LRU model: same cached list, same
    ActivityManager kills (the LRU tail), same kinds; adj 900 + 10 × position."""
    max_cached = 3
    phone, am = phone_with(max_cached=max_cached)
    rng = np.random.default_rng(5)
    ref: list[str] = []  # MRU first
    fg: str | None = None
    expected_kills: list[str] = []
    for _ in range(24):
        name = NAMES[int(rng.integers(len(NAMES)))]
        kind = "resume" if name == fg or name in ref else "start"
        if fg is not None and fg != name:
            ref.insert(0, fg)
        ref = [n for n in ref if n != name]
        expected_kills += ref[max_cached:]
        ref, fg = ref[:max_cached], name

        result = launch(phone, am, name, then_s=0.3)
        assert (result.app, result.kind) == (name, kind)
        assert cached_names(am) == ref
        assert len(am.cached) <= max_cached
        assert [k.app for k in am.am_kills] == expected_kills
        assert am.foreground is not None and am.foreground.spec.name == name
        assert am.foreground.process.oom_score_adj == FOREGROUND_APP_ADJ
        adjs = [x.process.oom_score_adj for x in am.cached]
        assert adjs == [CACHED_APP_MIN_ADJ + 10 * k for k in range(len(am.cached))]
        assert all(x.alive for x in am.cached)
    assert expected_kills  # the sequence did overflow the list
    assert am.lmk_killed == [] and phone.lmkd.kills == []  # AM's own kills are not lmkd's
    phone.memory.check()


def test_max_cached_zero_kills_every_app_that_leaves() -> None:
    phone, am = phone_with(max_cached=0)
    kinds = [launch(phone, am, n).kind for n in (NAMES[0], NAMES[1], NAMES[0])]
    assert kinds == ["start", "start", "start"]
    assert am.cached == []
    assert [k.app for k in am.am_kills] == [NAMES[0], NAMES[1]]


def test_lmkd_kill_of_a_cached_app_reranks_the_rest_and_tells_the_gpu() -> None:
    phone, am = phone_with(policy=Full())
    for name in NAMES[:4]:
        launch(phone, am, name)
    assert cached_names(am) == [NAMES[2], NAMES[1], NAMES[0]]
    victim = process_of(am, NAMES[1])
    phone.lmkd.kill(victim, "minfree 49152 KB")
    assert cached_names(am) == [NAMES[2], NAMES[0]]
    assert [x.process.oom_score_adj for x in am.cached] == [900, 910]
    assert am.gpu is not None and victim.pid not in am.gpu.apps
    assert [am.gpu.apps[x.process.pid].position for x in am.cached] == [1, 2]
    assert launch(phone, am, NAMES[1]).kind == "start"


def test_lmkd_kill_of_the_foreground_app_leaves_no_foreground() -> None:
    phone, am = phone_with()
    launch(phone, am, NAMES[0])
    launch(phone, am, NAMES[1])
    phone.lmkd.kill(process_of(am, NAMES[1]), "vmpressure critical")
    assert am.foreground is None and cached_names(am) == [NAMES[0]]
    assert launch(phone, am, NAMES[0]).kind == "resume"
    assert launch(phone, am, NAMES[1]).kind == "start"


def test_under_real_memory_pressure_lmkd_kills_from_the_cached_tail() -> None:
    """Big apps on a small phone with the minfree killer: every app lmkd kills leaves the
    list, the cached list stays consistent, and a killed app's next launch is a start."""
    big = AppCatalog(
        tuple(spec(n, fg_uss_mb=150.0, bg_uss_mb=120.0, gpu_fg_mb=60.0) for n in NAMES), "big"
    )
    phone, am = phone_with(big, ram_mb=640, lmk={"mode": "minfree"})
    for name in NAMES:
        launch(phone, am, name)
        alive = {x.spec.name for x in am.cached}
        assert not alive & {n for _, n in am.lmk_killed}
        adjs = [x.process.oom_score_adj for x in am.cached]
        assert adjs == [CACHED_APP_MIN_ADJ + 10 * k for k in range(len(am.cached))]
    killed = [n for _, n in am.lmk_killed]
    assert killed and killed[0] == NAMES[0]  # the least recently used went first
    assert all(k.oom_score_adj >= CACHED_APP_MIN_ADJ for k in phone.lmkd.kills)
    assert launch(phone, am, killed[0]).kind == "start"
    phone.memory.check()


# -- with the GPU module: resume decompresses before the first GPU operation ------------
def test_resume_decompresses_everything_before_the_first_gpu_operation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog = AppCatalog(
        (spec("com.test.game", gpu_bg_mb=12.0, bg_gpu_work=True), spec("com.test.mail")), "t"
    )
    phone, am = phone_with(catalog, policy=Full())
    gpu = am.gpu
    assert gpu is not None
    ops: list[tuple[int, int, GpuState, bool]] = []  # pid, compressed, state, dispatched
    submit = gpu.submit

    def observed(process: Process) -> bool:
        app = gpu.apps[process.pid]
        compressed, state = app.compressed, app.state
        dispatched = submit(process)
        ops.append((process.pid, compressed, state, dispatched))
        return dispatched

    monkeypatch.setattr(gpu, "submit", observed)
    launch(phone, am, "com.test.game")
    game = process_of(am, "com.test.game")
    launch(phone, am, "com.test.mail", then_s=5.0)  # the game is cached and compressed
    buffers = gpu.apps[game.pid]
    states = [buffers.state]
    held = buffers.compressed
    assert held == pages_of(12.0) and game.gpu_pages == 0
    assert buffers.deferred_ops > 0  # its background timer's GPU work waited
    ops_before = len(ops)

    result = launch(phone, am, "com.test.game", then_s=0.0)
    assert result.kind == "resume"
    states.append(buffers.state)
    assert states == [GpuState.S3, GpuState.S0]
    assert buffers.compressed == 0
    assert result.decompressed_pages == held
    assert gpu.decompressions[-1].pid == game.pid
    assert gpu.decompressions[-1].duration_ns <= result.latency_ns
    phone.env.run(phone.env.now + seconds(1))  # the game is used: its GPU work runs
    game_ops = [op for op in ops[ops_before:] if op[0] == game.pid]
    assert any(dispatched for *_, dispatched in game_ops)
    for _, compressed, state, dispatched in ops:
        if dispatched:
            assert compressed == 0 and state == GpuState.S0
    gpu.check()
    phone.memory.check()


def _resume_after_compression(policy: Any) -> tuple[Launch, int]:
    """Launch a game with 120 MB of background buffers, switch to an app with none,
    wait for the daemon, come back: (the resume, pages compressed just before it)."""
    catalog = AppCatalog(
        (
            spec("com.test.game", fg_uss_mb=160.0, bg_uss_mb=140.0, gpu_fg_mb=130.0,
                 gpu_bg_mb=120.0),
            spec("com.test.mail", gpu_bg_mb=0.0),
        ),
        "t",
    )  # fmt: skip
    phone, am = phone_with(catalog, policy=policy)
    launch(phone, am, "com.test.game")
    launch(phone, am, "com.test.mail", then_s=10.0)
    gpu = am.gpu
    assert gpu is not None
    held = gpu.compressed_pages
    return launch(phone, am, "com.test.game", then_s=0.0), held


def test_resume_latency_grows_with_the_amount_compressed() -> None:
    policies = [Fair(0.0, 0.0), Fair(25.0, 25.0), Fair(100.0, 100.0), Full()]
    runs = [_resume_after_compression(p) for p in policies]
    held = [h for _, h in runs]
    assert held == [0, pages_of(25), pages_of(100), pages_of(120)]
    assert [r.decompressed_pages for r, _ in runs] == held
    assert all(r.kind == "resume" for r, _ in runs)
    latencies = [r.latency_ns for r, _ in runs]
    assert latencies == sorted(set(latencies)), latencies  # strictly increasing
