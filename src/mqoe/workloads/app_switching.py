"""Scenario ``app-switching``: a user launching apps for ~100 minutes (GPU-buffer study).

The phone boots its system processes; then the user launches ``launches`` apps from the
catalogue one after another — each app drawn with its category's share of launches
(the GPU-buffer study's field-study mix, split equally among the category's apps; never the app
already in front) — and uses each for an interaction time drawn from a lognormal with
mean ``interaction_s`` (256 × 23.4 s ≈ 100 min). Or the launches replay a trace
(``trace=launches.csv``: ``time_s,app`` rows; a launch waits for the previous one).

ActivityManager keeps at most ``max_cached`` apps cached; the low-memory killer kills
from the cached list when memory runs short; ``policy`` chooses the GPU-buffer
compression (``van`` | ``full`` | ``fair[:cap_step_mb=…,cap_max_mb=…]``, or ``none``:
no GPU module at all, for checking that ``van`` changes nothing). Resumes, starts,
kills, launch latency, memory saved and CPU time come out of the mechanisms.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from mqoe.apps.activity_manager import ActivityManager
from mqoe.apps.catalog import AppCatalog, load_catalog
from mqoe.apps.system import boot_system
from mqoe.device.gpu import Gpu
from mqoe.device.phone import Phone
from mqoe.engine import Event, seconds
from mqoe.errors import UserError
from mqoe.policies.gpu_compression import make_compression_policy
from mqoe.workloads.base import ScenarioOutput, Session

_SAMPLE_NS = seconds(1)
_BOOT_S = 5.0  # system processes settle before the first launch
_SLACK_S = 600.0  # simulated time after the last planned interaction, for slow launches
_SLACK_SHARE = 0.5  # …or this share of the planned time, if more
_SYSTEM_PROCESSES = ("kernel", "lmkd")  # threads counted as system CPU time
# The system services' CPU in 10× longer, rarer bursts (same mean CPU and memory use):
# a 100-minute run does not resolve their millisecond wake-ups, and they dominated its cost.
_SYSTEM_BURST_SCALE = 10.0
_REVISIT_DEPTH = 32  # a re-open copies one of the last 32 launches…
_REVISIT_WEIGHTS = 1.0 / np.arange(1, _REVISIT_DEPTH + 1)  # …the k-th most recent with weight 1/k


@dataclass(frozen=True)
class AppSwitchingParams:
    launches: int = 256  # GPU-buffer study: 256 launches of 22 apps
    interaction_s: float = 23.4  # mean use per launch: 256 launches ≈ 100 min (GPU-buffer study)
    interaction_sigma: float = 1.0  # lognormal sigma (calibration: heavy-tailed sessions)
    policy: str = "van"  # van | full | fair[:cap_step_mb=12.5,cap_max_mb=100] | none
    max_cached: int = 8  # GPU-buffer study: at most 8 cached apps
    catalog: str = ""  # extra app TOML files, ';'-separated (added to the packaged 22)
    trace: str = ""  # a launch trace CSV (time_s,app) to replay instead of the draw
    system: bool = True  # the phone's own processes (system_server, SystemUI, …)
    # Share of launches that re-open a recently used app (copy the k-th most recent
    # launch of another app, weight 1/k) instead of a fresh draw from the category mix;
    # copying earlier draws keeps each category's share of launches. 0: independent draws. Assumed:
    # about half — field studies of phone use find most launches return to a small set
    # of recently used apps (app revisitation; e.g. Jones et al., UbiComp 2015).
    revisit: float = 0.5

    def __post_init__(self) -> None:
        if self.launches < 1 or self.max_cached < 0:
            raise ValueError("launches must be ≥ 1 and max_cached ≥ 0")
        if not 0.0 <= self.revisit <= 1.0:
            raise ValueError("revisit must be in [0, 1]")
        if not (self.interaction_s > 0 and self.interaction_sigma >= 0):
            raise ValueError("interaction_s must be positive and interaction_sigma ≥ 0")
        if self.policy != "none":
            make_compression_policy(self.policy)  # a bad name or parameter fails here


def read_trace(path: str, catalog: AppCatalog) -> list[tuple[float, str]]:
    """A launch trace: CSV with a ``time_s,app`` header, times non-decreasing, apps in
    the catalogue. Errors name the file and line."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise UserError(f"{path}: cannot read the launch trace ({exc.strerror})") from None
    if not rows or [c.strip() for c in rows[0]] != ["time_s", "app"]:
        raise UserError(f"{path}:1: expected the header 'time_s,app'")
    known = {a.name for a in catalog.apps}
    out: list[tuple[float, str]] = []
    for line, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 2:
            raise UserError(f"{path}:{line}: expected 2 fields (time_s,app), got {len(row)}")
        try:
            t = float(row[0])
        except ValueError:
            raise UserError(f"{path}:{line}: time_s {row[0]!r} is not a number") from None
        if not math.isfinite(t) or t < 0 or (out and t < out[-1][0]):
            raise UserError(f"{path}:{line}: time_s must be finite, ≥ 0 and non-decreasing")
        app = row[1].strip()
        if app not in known:
            raise UserError(f"{path}:{line}: app {app!r} is not in the catalogue")
        out.append((t, app))
    if not out:
        raise UserError(f"{path}: the launch trace has no launches")
    return out


def draw_launches(
    catalog: AppCatalog, params: AppSwitchingParams, rng: np.random.Generator
) -> list[tuple[float, str]]:
    """(interaction seconds after the launch, app) per launch, by the category mix."""
    weights = catalog.launch_weights()
    names = sorted(weights)
    p = np.array([weights[n] for n in names])
    sigma = params.interaction_sigma
    mu = math.log(params.interaction_s) - sigma * sigma / 2  # lognormal with that mean
    out: list[tuple[float, str]] = []
    history: list[str] = []  # launched apps, oldest first
    for _ in range(params.launches):
        previous = history[-1] if history else ""
        # Re-open: copy the launch k back (weight 1/k, the app in front excluded), so the
        # copied app is itself a draw from the mix and the category shares hold.
        earlier = [a for a in history[-_REVISIT_DEPTH:] if a != previous][::-1]
        if earlier and rng.random() < params.revisit:
            w = _REVISIT_WEIGHTS[: len(earlier)]
            app = earlier[int(rng.choice(len(earlier), p=w / w.sum()))]
        else:
            q = np.where(np.array(names) == previous, 0.0, p)
            if q.sum() <= 0:  # a one-app catalogue: the same app again
                q = p
            app = names[int(rng.choice(len(names), p=q / q.sum()))]
        out.append((float(rng.lognormal(mu, sigma)), app))
        history.append(app)
    return out


class AppSwitching:
    name = "app-switching"
    summary = "256 app launches over ~100 min with GPU-buffer compression (Nexus 5 study, 2015)"
    params_type = AppSwitchingParams
    quick: Mapping[str, str] = MappingProxyType({"launches": "12", "interaction_s": "5"})

    def build(self, phone: Phone, params: AppSwitchingParams) -> Session:
        env = phone.env
        extra = [p for p in params.catalog.split(";") if p.strip()]
        catalog = load_catalog(extra=extra)
        gpu = None
        if params.policy != "none":
            gpu = phone.attach_gpu(make_compression_policy(params.policy))
        if params.system:
            boot_system(phone, burst_scale=_SYSTEM_BURST_SCALE)
        am = ActivityManager(phone, catalog, max_cached=params.max_cached, gpu=gpu)
        if params.trace:
            plan = read_trace(params.trace, catalog)
            total_s = plan[-1][0] + params.interaction_s
        else:
            drawn = draw_launches(catalog, params, env.rng("launches"))
            total_s = sum(t for t, _ in drawn)
        state: dict[str, float] = {}
        samples: list[tuple[float, int, float, float, float]] = []

        def driver() -> Generator[Event, object, None]:
            yield env.timeout(seconds(_BOOT_S))
            phone.trims.arm()
            state["start_ns"] = env.now
            if params.trace:
                for at_s, app in plan:
                    wait = seconds(_BOOT_S + at_s) - env.now
                    if wait > 0:
                        yield env.timeout(wait)
                    yield from am.launch(app)
                yield env.timeout(seconds(params.interaction_s))
            else:
                for interaction_s, app in drawn:
                    yield from am.launch(app)
                    yield env.timeout(seconds(interaction_s))
            state["end_ns"] = env.now
            am.stop()  # the rest of the run (slack for slow launches) stays cheap

        def sampler() -> Generator[Event, object, None]:
            memory = phone.memory
            while "end_ns" not in state:
                yield env.timeout(_SAMPLE_NS)
                if "start_ns" not in state:
                    continue
                saved = gpu.saved_pages / 256 if gpu is not None else 0.0
                pool = gpu.pool.pages / 256 if gpu is not None else 0.0
                cached = sum(1 for a in am.cached if a.alive)
                t = (env.now - state["start_ns"]) / 1e9
                samples.append((t, cached, saved, pool, memory.free_pages / 256))

        env.process(driver(), "user")
        env.process(sampler(), "sampler")
        duration_ns = seconds(_BOOT_S + total_s + max(_SLACK_S, _SLACK_SHARE * total_s))

        def collect() -> ScenarioOutput:
            return _collect(phone, am, gpu, state, samples)

        return Session(duration_ns, collect)


def _collect(
    phone: Phone,
    am: ActivityManager,
    gpu: Gpu | None,
    state: dict[str, float],
    samples: list[tuple[float, int, float, float, float]],
) -> ScenarioOutput:
    launches = pd.DataFrame(
        [
            (x.time_ns / 1e9, x.app, x.kind, x.latency_ns / 1e6, x.decompressed_pages / 256)
            for x in am.launches
        ],
        columns=["t_s", "app", "kind", "latency_ms", "decompressed_mb"],
    )
    series = pd.DataFrame(samples, columns=["t_s", "cached_apps", "saved_mb", "pool_mb", "free_mb"])
    threads = pd.DataFrame(phone.cpu.thread_table())
    system = threads["process"].isin(_SYSTEM_PROCESSES)
    start = state.get("start_ns", 0.0)
    end = state.get("end_ns", float(phone.env.now))
    wall_s = (end - start) / 1e9
    running_s = threads["running_ns"] / 1e9
    cores = len(phone.cpu.cores)
    resumes = launches.loc[launches["kind"] == "resume", "latency_ms"]
    starts = launches.loc[launches["kind"] == "start", "latency_ms"]
    lmk = phone.lmkd.kills
    metrics: dict[str, float | int | bool | str] = {
        "launches": len(launches),
        "completed": "end_ns" in state,
        "resumes": len(resumes),
        "starts": len(starts),
        "lmk_kills": len(lmk),
        "lmk_app_kills": len(am.lmk_killed),
        "am_kills": len(am.am_kills),
        "cached_apps_mean": float(series["cached_apps"].mean()) if len(series) else 0.0,
        "saved_mb_median": float(series["saved_mb"].median()) if len(series) else 0.0,
        "saved_mb_max": float(series["saved_mb"].max()) if len(series) else 0.0,
        "resume_ms_mean": _stat(resumes, "mean"),
        "resume_ms_std": _stat(resumes, "std"),
        "resume_ms_max": _stat(resumes, "max"),
        "start_ms_mean": _stat(starts, "mean"),
        "start_ms_std": _stat(starts, "std"),
        "cpu_user_s": float(running_s[~system].sum()),
        "cpu_system_s": float(running_s[system].sum()),
        "cpu_idle_s": max(0.0, cores * phone.env.now / 1e9 - float(running_s.sum())),
        "session_s": wall_s,
        "compress_cpu_s": _thread_s(threads, "kgsl-compress"),
        "decompress_cpu_s": _thread_s(threads, "kgsl-decompress"),
        "deferred_gpu_ops": gpu.deferred_ops if gpu is not None else 0,
        "compressed_mb_total": gpu.compressed_pages_total / 256 if gpu is not None else 0.0,
    }
    per_app = (
        launches.groupby(["app", "kind"])["latency_ms"]
        .agg(["count", "mean", "std"]).reset_index()
        .rename(columns={"mean": "latency_ms_mean", "std": "latency_ms_std"})
    )  # fmt: skip
    return ScenarioOutput(
        metrics=metrics,
        tables={"launches": launches, "samples": series, "per_app": per_app},
    )


def _stat(values: pd.Series, how: str) -> float:
    if len(values) == 0 or (how == "std" and len(values) < 2):
        return math.nan
    return float(getattr(values, how)())


def _thread_s(threads: pd.DataFrame, name: str) -> float:
    rows = threads.loc[threads["thread"] == name, "running_ns"]
    return float(rows.sum()) / 1e9
