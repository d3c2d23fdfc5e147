"""mqoe against its peers, each measured in the same run as ours (so the ratio survives
a loaded machine): SimPy in interleaved rounds, ns-3 on the two-flow dumbbell (from the
optional ``.venv-bench``, ``make bench-env``), and the trace-driven loops of
``trace_peers.py`` (Pensieve's ``fixed_env``; written separately, skipped when absent).
"""

from __future__ import annotations

import importlib
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The optional bench environment: the main venv's packages plus ns-3 (make bench-env).
BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
NS3_SCRIPT = Path(__file__).with_name("ns3_dumbbell.py")
NS3_SKIPPED = "ns-3: skipped (make bench-env installs it)"
NS3_MISSING_EXIT = 3  # ns3_dumbbell.py's exit status when `from ns import ns` fails


def interleave(
    contenders: Mapping[str, Callable[[], float]], rounds: int
) -> dict[str, list[float]]:
    """Each contender's rate once per round, in order (A, B, A, B, …): a slow patch of
    a shared machine then hits both sides alike instead of one side's whole block."""
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, measure in contenders.items():
            rates[name].append(measure())
    return rates


def speedup(ours: list[float], theirs: list[float]) -> tuple[float, float]:
    """(ratio of the minima, ratio of the medians) of per-event time, theirs over ours,
    from event rates (per-event time = 1 / rate): > 1 means ours is faster."""
    ours_t = [1 / r for r in ours]
    theirs_t = [1 / r for r in theirs]
    return (
        min(theirs_t) / min(ours_t),
        statistics.median(theirs_t) / statistics.median(ours_t),
    )


def engine_vs_simpy(rounds: int = 7) -> dict[str, float]:
    """Our engine and SimPy on the same generator-process workload in interleaved rounds:
    the best rate of each and the two speedups (ours alone without SimPy)."""
    from speed import engine_process_events_per_second, simpy_process_events_per_second

    contenders: dict[str, Callable[[], float]] = {"ours": engine_process_events_per_second}
    if simpy_process_events_per_second(1, 1) is not None:

        def simpy_rate() -> float:
            rate = simpy_process_events_per_second()
            assert rate is not None  # SimPy was importable a moment ago
            return rate

        contenders["simpy"] = simpy_rate
    rates = interleave(contenders, rounds)
    figures = {"engine_process_events_per_s": max(rates["ours"])}
    if "simpy" in rates:
        by_min, by_median = speedup(rates["ours"], rates["simpy"])
        figures |= {
            "simpy_process_events_per_s": max(rates["simpy"]),
            "engine_vs_simpy_min": by_min,
            "engine_vs_simpy_median": by_median,
        }
    return figures


@dataclass(frozen=True)
class Dumbbell:
    """Two CUBIC bulk flows (servers b and c) through a router to one client over a
    bottleneck; the same on both simulators (``ns3_dumbbell.py`` reads it as JSON)."""

    rate_mbps: float = 5.0  # the spiral's bottleneck (IMC 2012 set-up)
    rtt_ms: float = 4.0  # base RTT, a quarter per hop and direction (the spiral's)
    queue_bytes: int = 15_000  # drop-tail, the spiral's 120 kbit
    access_mbps: float = 1000.0  # server → router links
    mss_bytes: int = 1460  # TcpConfig's default (1500-byte packets)
    buffer_bytes: int = 1 << 20  # socket buffers: TcpConfig's rcvbuf default
    sim_seconds: float = 120.0


def mqoe_dumbbell(spec: Dumbbell) -> dict[str, float]:
    """Simulated seconds per wall second of mqoe on ``spec`` (setup excluded, as on the
    ns-3 side) and the flows' goodput."""
    from mqoe.device.net import BulkFlow, Network, TcpConfig
    from mqoe.engine import Environment, ms, seconds

    env = Environment()
    net = Network(env)
    hop = ms(spec.rtt_ms / 4)
    for server in ("b", "c"):
        net.add_link(server, "router", spec.access_mbps * 1e6, hop, 1 << 24)
    net.add_link("router", "client", spec.rate_mbps * 1e6, hop, spec.queue_bytes,
                 reverse_queue_bytes=1 << 24)  # fmt: skip
    cfg = TcpConfig(congestion_control="cubic", mss_bytes=spec.mss_bytes,
                    rcvbuf_bytes=spec.buffer_bytes)  # fmt: skip
    flows = [BulkFlow(net, server, "client", cfg) for server in ("b", "c")]
    for flow in flows:
        flow.start()
    start = time.perf_counter()
    env.run(seconds(spec.sim_seconds))
    wall = time.perf_counter() - start
    goodput = sum(flow.bytes_received for flow in flows) * 8 / spec.sim_seconds / 1e6
    return {"sim_s_per_wall_s": spec.sim_seconds / wall, "goodput_mbps": goodput}


def ns3_dumbbell(spec: Dumbbell, python: Path = BENCH_PYTHON) -> dict[str, float] | None:
    """ns-3's figures on ``spec`` from ``ns3_dumbbell.py`` run by ``python``; None when
    that interpreter is missing or cannot import ns-3 (the caller prints NS3_SKIPPED)."""
    if not python.exists():
        return None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [str(python), str(NS3_SCRIPT), json.dumps(asdict(spec))],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode == NS3_MISSING_EXIT:
        return None
    if done.returncode != 0:
        raise RuntimeError(f"ns3_dumbbell.py failed: {done.stderr.strip()[-500:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def dumbbell_figures(spec: Dumbbell | None = None, python: Path = BENCH_PYTHON) -> dict[str, float]:
    """mqoe's dumbbell figures, and ns-3's and the ratio when ns-3 is available."""
    spec = spec or Dumbbell()
    ours = mqoe_dumbbell(spec)
    figures = {
        "dumbbell_mqoe_sim_s_per_wall_s": ours["sim_s_per_wall_s"],
        "dumbbell_mqoe_goodput_mbps": ours["goodput_mbps"],
    }
    theirs = ns3_dumbbell(spec, python)
    if theirs is not None:
        figures["dumbbell_ns3_sim_s_per_wall_s"] = theirs["sim_s_per_wall_s"]
        figures["dumbbell_ns3_goodput_mbps"] = theirs["goodput_mbps"]
        figures["dumbbell_vs_ns3"] = ours["sim_s_per_wall_s"] / theirs["sim_s_per_wall_s"]
    return figures


# BOLA's ABR decisions per wall second in the trace-driven mode before the trace-speed
# work (the figure, measured on this project's 2-core sandbox); its goal is 3×.
BOLA_DECISIONS_PER_S_BEFORE = 370_000.0


def trace_figures(quick: bool = False) -> dict[str, float]:
    """``trace_peers.figures`` (our fixed-quality loop, Pensieve's ``fixed_env`` loop, BOLA
    and BBA decisions) and the ratios the goals read; empty when it is not there yet."""
    try:
        module = importlib.import_module("trace_peers")
    except ImportError:
        return {}
    figures: dict[str, float] = dict(module.figures(quick=quick))
    ours = figures.get("trace_fixed_quality_media_s_per_wall_s")
    pensieve = figures.get("pensieve_fixed_env_media_s_per_wall_s")
    if ours and pensieve:
        figures["trace_fixed_quality_vs_pensieve"] = ours / pensieve
    bola = figures.get("trace_bola_decisions_per_s")
    if bola:
        figures["trace_bola_decisions_vs_before"] = bola / BOLA_DECISIONS_PER_S_BEFORE
    return figures
