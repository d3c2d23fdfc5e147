"""The ``mqoe`` command line. Library code never prints; this module does (with Rich).

User mistakes (:class:`mqoe.errors.UserError`) become one line on stderr and exit code 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.table import Table

from mqoe import __version__
from mqoe.cli.console import LazyProgress, err, out, print_frame
from mqoe.cli.console import jsonable as _jsonable
from mqoe.errors import UserError

EXIT_USER_ERROR = 2

# `mqoe analyze NAME`: each analyser is a module mqoe.cli.analyze_NAME with HELP,
# add_arguments(parser) and run(args) -> exit code (heavy imports inside run()).
ANALYSERS = ("memlog", "gfxinfo", "layout", "systrace", "pcap", "anr", "examples")


# Top-level commands that live in their own module mqoe.cli.cmd_NAME, with HELP,
# add_arguments(parser) and run(args) -> exit code (heavy imports inside run()).
PLUGIN_COMMANDS: tuple[str, ...] = ("sweep", "report", "testbed", "compare")


def _analyser(name: str) -> ModuleType:
    return importlib.import_module(f"mqoe.cli.analyze_{name}")


def _plugin(name: str) -> ModuleType:
    return importlib.import_module(f"mqoe.cli.cmd_{name}")


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors go through the same one-line error path (exit 2)."""

    def error(self, message: str) -> Any:
        raise UserError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mqoe", description="mqoe: a virtual smartphone for QoE research")
    parser.add_argument("--version", action="version", version=f"mqoe {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    profiles = sub.add_parser("profiles", help="list or show device profiles")
    psub = profiles.add_subparsers(dest="action", required=True, parser_class=_Parser)
    psub.add_parser("list", help="the shipped profiles")
    show = psub.add_parser("show", help="one profile in full (name or path to a .toml)")
    show.add_argument("name")
    show.add_argument("--json", action="store_true", help="print JSON")

    run = sub.add_parser("run", help="run one scenario and store its result")
    run.add_argument("scenario", nargs="?", help="scenario name (see --list)")
    run.add_argument("--list", action="store_true", help="list scenarios and their parameters")
    run.add_argument("--profile", default=None, help="profile name or .toml path (default nokia-1)")
    run.add_argument("--seed", default="0", help="run seed (non-negative integer)")
    run.add_argument(
        "--set",
        dest="assignments",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="scenario parameter(s); repeatable, several pairs may follow one --set",
    )
    run.add_argument("--out", type=Path, default=None, help="results directory")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    run.add_argument("--trace", action="store_true", help="record a scheduler trace")

    rep = sub.add_parser("reproduce", help="reproduce a published work's key figures")
    rep.add_argument("work", nargs="?", help="work name (see --list), or 'all'")
    rep.add_argument("--list", action="store_true", help="list the reproducible works")
    rep.add_argument("--quick", action="store_true", help="a short version (minutes)")
    rep.add_argument("--out", type=Path, default=Path("reproductions"), help="output directory")

    res = sub.add_parser("results", help="query stored results with SQL (DuckDB)")
    rsub = res.add_subparsers(dest="action", required=True, parser_class=_Parser)
    query = rsub.add_parser(
        "query",
        help='e.g. mqoe results query "select * from runs"; views: runs (single and sweep '
        "runs), failures, sweeps, one per table",
    )
    query.add_argument("sql")
    query.add_argument("--results", type=Path, default=None, help="results directory")
    query.add_argument("--format", choices=("table", "csv", "json"), default="table")
    listing = rsub.add_parser("list", help="stored runs, newest first")
    listing.add_argument("--results", type=Path, default=None, help="results directory")
    listing.add_argument("--sweep", default=None, help="only this sweep's runs")
    export = rsub.add_parser("export", help="write a view or a query to CSV or Parquet")
    export.add_argument("what", help='a view (runs, failures, sweeps, a table) or "select …"')
    export.add_argument("path", type=Path, help="output file, .csv or .parquet")
    export.add_argument("--results", type=Path, default=None, help="results directory")

    analyze = sub.add_parser("analyze", help="analyse real data pulled from phones")
    asub = analyze.add_subparsers(dest="format", required=True, parser_class=_Parser)
    for name in ANALYSERS:
        module = _analyser(name)
        module.add_arguments(asub.add_parser(name, help=module.HELP))

    from mqoe.cli import calibrate

    cal = sub.add_parser("calibrate", help="measure host figures the simulator's tables use")
    csub = cal.add_subparsers(dest="target", required=True, parser_class=_Parser)
    calibrate.add_arguments(
        csub.add_parser(
            "lz4",
            help=calibrate.HELP,
            description=calibrate.DESCRIPTION,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    )

    bench = sub.add_parser("bench", help="run the benchmarks and print speed figures")
    bench.add_argument("--quick", action="store_true", help="shorter measurements")
    for name in PLUGIN_COMMANDS:
        module = _plugin(name)
        module.add_arguments(sub.add_parser(name, help=module.HELP))
    return parser


# -- profiles -------------------------------------------------------------------------
def _cmd_profiles(args: argparse.Namespace) -> int:
    from mqoe.device.profiles import core_ipc_factor, list_profiles, load_profile

    if args.action == "list":
        table = Table(title="device profiles", title_justify="left")
        for column in ("name", "model", "SoC", "CPU clusters", "RAM", "storage", "Android"):
            table.add_column(column)
        for p in list_profiles():
            clusters = " + ".join(
                f"{c.cores}x{c.core_type}@{c.max_freq_mhz / 1000:g}GHz" for c in p.cpu.clusters
            )
            table.add_row(
                p.name,
                p.display_name,
                p.soc,
                clusters,
                f"{p.memory.ram_mb / 1024:g} GB",
                f"{p.storage.capacity_gb} GB {p.storage.type}",
                p.android_version,
            )
        out.print(table)
        return 0
    profile = load_profile(args.name)
    data = profile.model_dump(mode="json")
    data["derived"] = {
        "n_cores": profile.cpu.n_cores,
        "sched_latency_ns": profile.cpu.sched_latency_ns,
        "sched_min_granularity_ns": profile.cpu.sched_min_granularity_ns,
        "sched_wakeup_granularity_ns": profile.cpu.sched_wakeup_granularity_ns,
        "cluster_ipc_factor": {c.name: core_ipc_factor(c) for c in profile.cpu.clusters},
    }
    if args.json:
        out.print_json(data=data)
    else:
        out.print(_render_mapping(data))
    return 0


def _render_mapping(data: Any, indent: int = 0) -> str:
    pad = "  " * indent
    lines = []
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, dict | list):
                lines.append(f"{pad}{key}:")
                lines.append(_render_mapping(value, indent + 1))
            else:
                lines.append(f"{pad}{key}: {value}")
    elif isinstance(data, list):
        for item in data:
            lines.append(f"{pad}-")
            lines.append(_render_mapping(item, indent + 1))
    else:
        lines.append(f"{pad}{data}")
    return "\n".join(lines)


# -- run ------------------------------------------------------------------------------
def _parse_seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UserError(f"--seed {text!r}: expected a non-negative integer") from None


def _cmd_run(args: argparse.Namespace) -> int:
    from mqoe.device.profiles import load_profile
    from mqoe.results import ResultsStore, default_results_dir
    from mqoe.workloads import SCENARIOS
    from mqoe.workloads.base import parse_assignments
    from mqoe.workloads.population import POPULATIONS
    from mqoe.workloads.runner import run_population, run_scenario

    if args.list or not args.scenario:
        if not args.list:
            raise UserError("mqoe run: name a scenario (mqoe run --list shows them)")
        return _list_scenarios({**SCENARIOS, **POPULATIONS})
    seed = _parse_seed(args.seed)
    overrides = parse_assignments(args.assignments)
    if args.scenario in POPULATIONS:
        if args.profile is not None or args.trace:
            raise UserError(
                f"mqoe run {args.scenario}: it draws its own phones; "
                "--profile and --trace do not apply"
            )
        progress = LazyProgress(f"{args.scenario}")
        try:
            record = run_population(args.scenario, seed, overrides)
        finally:
            progress.close()
    else:
        profile = load_profile(args.profile or "nokia-1")
        progress = LazyProgress(f"{args.scenario} on {profile.name}")
        try:
            record = run_scenario(
                args.scenario, profile, seed, overrides, trace=args.trace, on_progress=progress
            )
        finally:
            progress.close()
    store = ResultsStore(args.out if args.out is not None else default_results_dir())
    store.write(record)
    summary = {
        "run_id": record.run_id,
        "scenario": record.scenario,
        "profile": record.profile,
        "seed": record.seed,
        "params": dict(record.params),
        "wall_time_s": round(record.wall_time_s, 4),
        "sim_duration_s": record.sim_duration_s,
        **{k: _jsonable(v) for k, v in record.metrics.items()},
        "tables": {
            name: json.loads(frame.to_json(orient="records"))
            for name, frame in record.tables.items()
            if name != "frames" and len(frame) <= _SHOWN_ROWS
        },
        "stored_tables": {name: len(frame) for name, frame in record.tables.items()},
        "results_dir": str(store.root),
    }
    if args.json:
        print(json.dumps(summary, indent=2, allow_nan=False, default=str))
        return 0
    _print_run(record, store.root)
    return 0


_SHOWN_ROWS = 40  # tables up to this size are printed; larger ones only stored


def _list_scenarios(scenarios: dict[str, Any]) -> int:
    import dataclasses

    for name, scenario in sorted(scenarios.items()):
        out.print(f"[bold]{name}[/bold]: {scenario.summary}")
        for field in dataclasses.fields(scenario.params_type):
            out.print(f"    {field.name} = {field.default!r}")
    return 0


def _print_run(record: Any, root: Path) -> None:
    out.print(
        f"[bold]{record.scenario}[/bold] on {record.profile}, seed {record.seed}: "
        f"{record.sim_duration_s:g} s simulated in {record.wall_time_s:.2f} s"
    )
    metrics = Table(show_header=True, title="metrics", title_justify="left")
    metrics.add_column("metric")
    metrics.add_column("value", justify="right")
    for key, value in record.metrics.items():
        metrics.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    out.print(metrics)
    for name, frame in record.tables.items():
        if name == "frames" or frame.empty:
            continue
        if len(frame) > _SHOWN_ROWS:
            out.print(f"{name}: {len(frame)} rows (stored; query them with mqoe results query)")
            continue
        table = Table(title=name, title_justify="left")
        shown = [c for c in frame.columns if not c.endswith("_ns")]
        for column in shown:
            table.add_column(str(column))
        for row in frame[shown].itertuples(index=False):
            table.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
        out.print(table)
    out.print(f"stored as {record.run_id} in {root}")


# -- reproduce ------------------------------------------------------------------------
def _cmd_reproduce(args: argparse.Namespace) -> int:
    from mqoe.experiments import EXPERIMENTS

    if args.list or not args.work:
        if not args.list:
            raise UserError("mqoe reproduce: name a work (mqoe reproduce --list shows them)")
        if not EXPERIMENTS:
            out.print("no reproductions are registered yet")
        for name, experiment in sorted(EXPERIMENTS.items()):
            out.print(f"[bold]{name}[/bold]: {experiment.title}")
        return 0
    names = sorted(EXPERIMENTS) if args.work == "all" else [args.work]
    if args.work == "all" and not names:
        raise UserError("no reproductions are registered yet (mqoe reproduce --list)")
    for name in names:
        if name not in EXPERIMENTS:
            known = ", ".join(sorted(EXPERIMENTS)) or "none yet"
            raise UserError(f"unknown work {name!r}; available: {known}")
    for name in names:
        # One work writes into OUT itself; `all` gives each work its own folder.
        target = args.out / name if args.work == "all" else args.out
        path = EXPERIMENTS[name].reproduce(target, quick=args.quick)
        out.print(f"{name}: wrote {path} and figures in {path.parent}")
    return 0


# -- results --------------------------------------------------------------------------
def _cmd_results(args: argparse.Namespace) -> int:
    from mqoe.results import ResultsStore, default_results_dir

    store = ResultsStore(args.results if args.results is not None else default_results_dir())
    if args.action == "list":
        where = ""
        if args.sweep is not None:
            where = "where sweep = '{}' ".format(args.sweep.replace("'", "''"))
        frame = store.query(
            "select run_id, scenario, profile, seed, started_utc, wall_time_s from runs "
            f"{where}order by started_utc desc, run_id"
        )
        print_frame(frame, "table")
        return 0
    if args.action == "export":
        from mqoe.results.api import export

        written = export(store.root, args.what, args.path)
        out.print(f"wrote {written}")
        return 0
    print_frame(store.query(args.sql), args.format)
    return 0


# -- analyze --------------------------------------------------------------------------
def _cmd_analyze(args: argparse.Namespace) -> int:
    result: int = _analyser(args.format).run(args)
    return result


# -- calibrate ------------------------------------------------------------------------
def _cmd_calibrate(args: argparse.Namespace) -> int:
    from mqoe.cli import calibrate

    result: int = calibrate.run(args)
    return result


# -- bench ----------------------------------------------------------------------------
def _cmd_bench(args: argparse.Namespace) -> int:
    from mqoe.bench import run_all

    for line in run_all(quick=args.quick):
        out.print(line)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "profiles": _cmd_profiles,
    "run": _cmd_run,
    "reproduce": _cmd_reproduce,
    "results": _cmd_results,
    "analyze": _cmd_analyze,
    "calibrate": _cmd_calibrate,
    "bench": _cmd_bench,
}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command in PLUGIN_COMMANDS:
            result: int = _plugin(args.command).run(args)
            return result
        return COMMANDS[args.command](args)
    except UserError as exc:
        err.print(f"mqoe: error: {exc}", markup=False)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        err.print("mqoe: interrupted")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
