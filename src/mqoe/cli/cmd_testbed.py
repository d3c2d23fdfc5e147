"""``mqoe testbed …``: the spiral over the Linux TCP stack in network namespaces (issue 9).

``spiral`` runs one case on real sockets (root, Linux) — or with ``--simulate`` the
simulator on the same parameters — and writes metrics.csv (figure ``spiral-real`` /
``spiral-sim``), segments.csv, timeseries.csv, run.json, summary.md and a figure.
``bulk`` runs bulk flows alone on the bottleneck; ``cleanup`` removes what dead runs
left behind (ours only); ``check`` says whether this machine can run the testbed. Every
command first removes what dead runs of any kind left (namespaces, veths, processes,
run folders), never what a live run owns.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "real-TCP testbed (network namespaces, tbf, TUN delay): spiral, bulk, cleanup, check"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    spiral = sub.add_parser("spiral", help="the spiral scenario on real TCP (or --simulate)")
    spiral.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                        help="spiral parameters, as for `mqoe run spiral`")  # fmt: skip
    spiral.add_argument("--quick", action="store_true",
                        help="a 40 s time-scaled schedule (competitor at 20 s)")  # fmt: skip
    spiral.add_argument("--simulate", action="store_true",
                        help="run the simulator instead, same parameters and outputs")  # fmt: skip
    spiral.add_argument("--receiver", default="",
                        help='receiver rule for the client\'s sockets, e.g. '
                             '"fixed:window_clamp_bytes=4096,quickack=true"; '
                             '"netpis:variant=both" rules the competitor too')  # fmt: skip
    spiral.add_argument("--burst-bytes", type=int, default=0,
                        help="tbf bucket depth (default ~2 packets, 3028 bytes)")  # fmt: skip
    spiral.add_argument("--out", type=Path, required=True, help="output folder")
    bulk = sub.add_parser("bulk", help="bulk cubic flows alone on the bottleneck (or --simulate)")
    bulk.add_argument("--flows", type=int, default=1)
    bulk.add_argument("--buffer-kbit", type=float, default=120.0)
    bulk.add_argument("--link-mbps", type=float, default=5.0)
    bulk.add_argument("--rtt-ms", type=float, default=4.0)
    bulk.add_argument("--duration-s", type=float, default=20.0)
    bulk.add_argument("--burst-bytes", type=int, default=0, help="tbf bucket (default 3028)")
    bulk.add_argument("--simulate", action="store_true", help="the packet-level model instead")
    cleanup = sub.add_parser("cleanup", help="remove leftovers of crashed testbed runs")
    cleanup.add_argument("--all", action="store_true",
                         help="also remove what testbed runs still alive own")  # fmt: skip
    sub.add_parser("check", help="can this machine run the testbed?")


def run(args: argparse.Namespace) -> int:
    import signal

    from mqoe.cli.console import err, out
    from mqoe.emulation.topology import cleanup, require_testbed, unavailable_reason

    if args.action == "cleanup":
        require_testbed()
        removed = cleanup(include_live=args.all)
        out.print(
            f"removed {len(removed)}: {', '.join(removed)}" if removed else "nothing to remove"
        )
        return 0
    why = unavailable_reason()
    if not why:  # where the testbed cannot run, no run of ours can have left anything
        stale = cleanup()
        if stale:
            err.print(f"removed leftovers of dead testbed runs: {', '.join(stale)}")
    if args.action == "check":
        out.print(f"testbed unavailable: {why}" if why else "testbed available")
        return 0 if not why else 1
    signal.signal(signal.SIGTERM, _interrupt)  # `kill PID` tears the testbed down like Ctrl-C
    if args.action == "bulk":
        return _bulk(args)

    from mqoe.emulation.outputs import HEALTH, write_run
    from mqoe.emulation.spiral import run_real, run_simulated
    from mqoe.workloads.base import parse_assignments

    overrides = parse_assignments(args.set)
    if args.simulate:
        record = run_simulated(overrides, args.quick)
        path = write_run(args.out, record, "spiral-sim", None)
    else:
        if args.receiver:
            from mqoe.emulation.receiver import make_receiver_rule

            make_receiver_rule(args.receiver)  # a bad spec fails before the testbed is built
        real = run_real(overrides, args.quick, receiver=args.receiver, burst_bytes=args.burst_bytes,
                        log=lambda text: err.print(text))  # fmt: skip
        record = real.record
        path = write_run(args.out, record, "spiral-real", real)
        health = ", ".join(f"{k}={record.metrics[k]:.3g}" for k in HEALTH)
        err.print(f"testbed: {health}; bottleneck {real.qdisc}")
    m = record.metrics
    out.print(
        f"rate alone {m['rate_alone_kbps']:.0f} kbit/s, competing {m['rate_competing_kbps']:.0f}"
        f" (min {m['rate_competing_min_kbps']:.0f}); video tput competing "
        f"{m['video_tput_competing_kbps']:.0f}, competitor {m['competitor_tput_kbps']:.0f}, "
        f"fair share {m['fair_share_kbps']:.0f} kbit/s → {path}"
    )
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _bulk(args: argparse.Namespace) -> int:
    from mqoe.cli.console import out
    from mqoe.emulation.bulk import run_bulk, simulate_bulk
    from mqoe.emulation.topology import BottleneckSpec
    from mqoe.errors import UserError

    # 4 s at least: goodput is averaged over whole seconds after 2 s of slow start and
    # before the last (partial) second, so 3 s would leave nothing to measure.
    if not 1 <= args.flows <= 8 or not 4 <= args.duration_s <= 600 or args.buffer_kbit <= 0:
        raise UserError("need 1–8 flows, 4–600 s and a positive buffer")
    spec = BottleneckSpec(args.link_mbps, round(args.buffer_kbit * 125))
    if args.burst_bytes:
        spec = BottleneckSpec(args.link_mbps, spec.limit_bytes, args.burst_bytes)
    if args.simulate:
        result = simulate_bulk(spec, args.flows, duration_s=args.duration_s, rtt_ms=args.rtt_ms)
    else:
        result = run_bulk(spec, [""] * args.flows, duration_s=args.duration_s, rtt_ms=args.rtt_ms)
    rates = ", ".join(f"{g:.0f}" for g in result.goodput_kbps)
    out.print(f"goodput kbit/s: {rates} (total {sum(result.goodput_kbps):.0f})")
    out.print(f"bottleneck: {result.qdisc}")
    out.print(f"TCP counters: {result.counters}")
    if result.delay_line:
        out.print(f"delay line: {result.delay_line}")
    return 0
