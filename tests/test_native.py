"""The compiled kernel (mypyc) gives exactly the interpreted kernel's results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mqoe
from mqoe import native

# Short runs through every compiled module: the packet path on a wired bottleneck (spiral)
# and on shared Wi-Fi (netpis); the scheduler, reclaim and the recency LRU under memory
# pressure (video) on one cluster, on big.LITTLE with schedutil (PELT, capacity-aware
# placement) and under HMP placement; the zsmalloc pool of compressed GPU buffers
# (app-switching); generator processes on the kernel; the trace-driven player under
# fast-path rules and history rules, on a trace whose latency varies (a ladder of ints);
# the governors' constructor parameters.
_RUNS = """
import json, sys
import numpy as np
from mqoe.analysis.throughput_traces import ThroughputTrace
from mqoe.device.profiles import load_profile
from mqoe.engine import Environment
from mqoe.generators.throughput_traces import synthetic_manifest
from mqoe.policies.abr import make_rule
from mqoe.workloads.runner import run_scenario
from mqoe.workloads.trace_player import session_columns

out = {}
for name, overrides in (
    ("spiral", {"duration_s": "40", "competitor_start_s": "15"}),
    ("netpis", {"duration_s": "8", "video_s": "6", "variant": "netpis"}),
    ("app-switching",
     {"launches": "4", "policy": "full", "interaction_s": "2", "system": "false"}),
):
    record = run_scenario(name, load_profile("nexus-5"), 3, overrides)
    out[name] = {k: repr(v) for k, v in sorted(record.metrics.items())}
video = {"resolution": "480p", "fps": "60", "pressure": "moderate", "duration_s": "5",
         "setup_s": "20"}
for phone in ("nokia-1", "mi-8-pro", "mi-a2"):
    record = run_scenario("video", load_profile(phone), 1, video)
    out["video " + phone] = {k: repr(v) for k, v in sorted(record.metrics.items())}
env = Environment(5)
order = []
def proc(i):
    for step in range(50):
        yield env.timeout((i * 7919 + step * 104729) % 1000)
        order.append((env.now, i))
for i in range(20):
    env.process(proc(i))
env.run()
out["processes"] = repr(order)
rng = np.random.default_rng(4)
trace = ThroughputTrace("varying", rng.uniform(200, 3000, 90), rng.lognormal(7, 0.8, 90),
                        rng.uniform(20, 200, 90))
manifest = synthetic_manifest([235, 375, 560, 750, 1050, 1400, 1750], 4.0, 40)
for rule in ("bba", "bola", "fixed:representation=3", "throughput",
             "conservative:mode=continuous", "exoplayer"):
    columns = session_columns(trace, manifest, make_rule(rule), buffer_max_s=30.0,
                              session_s=400.0, startup_segments=2)
    out["trace-abr " + rule] = repr(columns)
# What `--set governor=…` and a profile's tunables may set, and as which types: read from
# the compiled classes' text signatures, from the annotations when interpreted.
from mqoe.device.cpu.governors import GOVERNORS
from mqoe.params import constructor_parameters
out["governor parameters"] = repr({name: {k: v.__name__ for k, v in
                                          constructor_parameters(cls).items()}
                                   for name, cls in GOVERNORS.items()})
json.dump(out, sys.stdout)
"""


def _run(pythonpath: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run(
        [sys.executable, "-c", _RUNS], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_compiled_and_interpreted_kernels_give_identical_results(tmp_path: Path) -> None:
    if not native.compiled():
        pytest.skip("built without mypyc: the kernel runs interpreted only")
    package = Path(mqoe.__file__).parent
    shutil.copytree(package, tmp_path / "mqoe", ignore=shutil.ignore_patterns("*.so"))
    interpreted = _run(tmp_path)
    compiled = _run(package.parent)
    assert interpreted == compiled
    videos = {"video nokia-1", "video mi-8-pro", "video mi-a2"}
    traces = {f"trace-abr {rule}" for rule in ("bba", "bola", "fixed:representation=3",
              "throughput", "conservative:mode=continuous", "exoplayer")}  # fmt: skip
    assert set(interpreted) == {"spiral", "netpis", "app-switching", "processes", *videos,
                                *traces, "governor parameters"}  # fmt: skip
    assert "'go_hispeed_load': 'float'" in str(compiled["governor parameters"])


def test_a_compiled_module_older_than_its_source_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extension = tmp_path / "kernel.cpython-311-x86_64-linux-gnu.so"
    source = tmp_path / "kernel.py"
    extension.write_bytes(b"")
    source.write_text("")
    os.utime(extension, (1_000, 1_000))
    os.utime(source, (2_000, 2_000))
    monkeypatch.setattr(
        native, "_origin", lambda m: extension if m == "mqoe.engine.kernel" else None
    )
    assert native.compiled() == ["mqoe.engine.kernel"]
    assert native.stale() == ["mqoe.engine.kernel"]
    os.utime(extension, (3_000, 3_000))
    assert native.stale() == []


def test_a_rebuilt_group_library_makes_an_untouched_shim_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild in place rewrites the group's library but may leave a module's shim."""
    shim = tmp_path / "kernel.cpython-311-x86_64-linux-gnu.so"
    group = tmp_path / "mqoe_native__mypyc.cpython-311-x86_64-linux-gnu.so"
    source = tmp_path / "kernel.py"
    for path, stamp in ((shim, 1_000), (source, 2_000), (group, 1_500)):
        path.write_bytes(b"")
        os.utime(path, (stamp, stamp))
    files = {"mqoe.engine.kernel": shim, "mqoe_native__mypyc": group}
    monkeypatch.setattr(native, "_origin", files.get)
    assert native.stale() == ["mqoe.engine.kernel"]
    os.utime(group, (3_000, 3_000))
    assert native.stale() == []


def test_every_compiled_module_exists_as_source() -> None:
    root = Path(mqoe.__file__).parent.parent
    for module in native.COMPILED:
        assert (root / Path(*module.split("."))).with_suffix(".py").is_file(), module
