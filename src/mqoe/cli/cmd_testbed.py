"""``mqoe testbed …``: the spiral over the Linux TCP stack in network namespaces (issue 9).

``spiral`` runs one case on real sockets (root, Linux) — or with ``--simulate`` the
simulator on the same parameters — and writes metrics.csv (figure ``spiral-real`` /
``spiral-sim``), segments.csv, timeseries.csv, run.json, summary.md and a figure.
``cleanup`` removes namespaces and veths that crashed runs left behind (ours only);
``check`` says whether this machine can run the testbed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "real-TCP testbed (network namespaces, tbf, TUN delay): spiral, cleanup, check"


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
                             '"fixed:window_clamp_bytes=4096,quickack=true"')  # fmt: skip
    spiral.add_argument("--out", type=Path, required=True, help="output folder")
    cleanup = sub.add_parser("cleanup", help="remove leftovers of crashed testbed runs")
    cleanup.add_argument("--all", action="store_true",
                         help="also remove namespaces of testbed runs still alive")  # fmt: skip
    sub.add_parser("check", help="can this machine run the testbed?")


def run(args: argparse.Namespace) -> int:
    from mqoe.cli.console import err, out

    if args.action == "cleanup":
        from mqoe.emulation.topology import cleanup, require_testbed

        require_testbed()
        removed = cleanup(include_live=args.all)
        out.print(
            f"removed {len(removed)}: {', '.join(removed)}" if removed else "nothing to remove"
        )
        return 0
    if args.action == "check":
        from mqoe.emulation.topology import unavailable_reason

        why = unavailable_reason()
        out.print(f"testbed unavailable: {why}" if why else "testbed available")
        return 0 if not why else 1
    import signal

    signal.signal(signal.SIGTERM, _interrupt)  # `kill PID` tears the testbed down like Ctrl-C
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
        real = run_real(overrides, args.quick, receiver=args.receiver,
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
