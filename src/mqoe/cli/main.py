"""The ``mqoe`` command line. Library code never prints; this module does (with Rich).

User mistakes (:class:`mqoe.errors.UserError`) become one line on stderr and exit code 2;
anything else is a bug and keeps its traceback. Output into a pipe whose reader has gone
(``mqoe … | head``) ends the command quietly with exit code 141, as for a Unix tool that
SIGPIPE killed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mqoe.cli.console import LazyProgress, check_output_file, err, one_line, out, print_frame
from mqoe.cli.console import jsonable as _jsonable
from mqoe.errors import UserError

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

EXIT_USER_ERROR = 2
# 128 + SIGPIPE (13): what a shell reports for a C tool killed by writing into a closed
# pipe (`seq 1e9 | head`), so `set -o pipefail` scripts treat mqoe like the others.
EXIT_BROKEN_PIPE = 141
EXIT_INTERRUPTED = 130  # 128 + SIGINT

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

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse swallows OSError when printing --help; let a closed pipe reach main().
        if message:
            (file or sys.stderr).write(message)


class _Version(argparse.Action):
    """``--version``: argparse's version action, but the version is read only when asked
    (reading it imports importlib.metadata, which every other command would pay for)."""

    def __init__(self, option_strings: Sequence[str], dest: str) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show program's version number and exit",  # argparse's own words
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        import mqoe

        formatter = parser._get_formatter()  # as argparse's version action prints it
        formatter.add_text(f"mqoe {mqoe.__version__}")
        parser._print_message(formatter.format_help(), sys.stdout)
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mqoe", description="mqoe: a virtual smartphone for QoE research")
    parser.add_argument("--version", action=_Version)
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
    rep.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs an interrupted or failed invocation stored in OUT/results",
    )
    rep.add_argument(
        "--workers", type=int, default=None, help="local processes (default: all cores)"
    )
    rep.add_argument(
        "--scheduler", default=None, metavar="tcp://HOST:PORT", help="run on a Dask scheduler"
    )
    rep.add_argument(
        "--cold",
        action="store_true",
        help=(
            "every run simulates its own set-up (default: runs that differ only after it share "
            "one: same results, less time)"
        ),
    )

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

    for name in PLUGIN_COMMANDS:
        module = _plugin(name)
        module.add_arguments(sub.add_parser(name, help=module.HELP))
    return parser


# -- profiles -------------------------------------------------------------------------
def _cmd_profiles(args: argparse.Namespace) -> int:
    from mqoe.device.profiles import core_ipc_factor, list_profiles, load_profile

    if args.action == "list":
        from rich.table import Table
        from rich.text import Text

        table = Table(title="device profiles", title_justify="left")
        for column in ("name", "model", "SoC", "CPU clusters", "RAM", "storage", "Android"):
            table.add_column(column)
        for p in list_profiles():
            clusters = " + ".join(
                f"{c.cores}x{c.core_type}@{c.max_freq_mhz / 1000:g}GHz" for c in p.cpu.clusters
            )
            cells = (
                p.name,
                p.display_name,
                p.soc,
                clusters,
                f"{p.memory.ram_mb / 1024:g} GB",
                f"{p.storage.capacity_gb} GB {p.storage.type}",
                p.android_version,
            )
            table.add_row(*map(Text, cells))
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
        "cpu_platform": _cpu_platform(profile),
    }
    if args.json:
        out.print_json(data=data)
    else:
        out.print(_render_mapping(data), markup=False)  # a user's file: its text is text
    return 0


def _cpu_platform(profile: Any) -> dict[str, Any]:
    """Per cluster: the OPPs the phone uses (its SoC table up to its top clock), their
    voltages, each OPP's power and where that comes from; and the SoC table's sources."""
    from mqoe.device.cpu import Cpu
    from mqoe.device.profiles import load_soc
    from mqoe.engine import Environment

    cpu = Cpu(Environment(0), profile)
    clusters: dict[str, Any] = {}
    for name, policy in cpu.policies.items():
        table = cpu.power[name]
        clusters[name] = {
            "opp_khz": list(policy.opp.khz),
            "opp_uv": list(policy.opp.uv) or "not sourced",
            "transition_latency_ns": policy.latency_ns,
            "core_power_mw": [round(p, 2) for p in table.core_busy_mw] if table else "none",
            "cluster_power_mw": [round(p, 2) for p in table.cluster_busy_mw] if table else "none",
            "power_source": table.source if table else "no energy model: energy is NaN",
        }
    soc = profile.cpu.soc
    sources = load_soc(soc.id).sources if soc is not None else {"opp": "none: one step"}
    return {"clusters": clusters, "soc_sources": sources}


def _render_mapping(data: Any, indent: int = 0) -> str:
    pad = "  " * indent
    lines = []
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, list) and not any(isinstance(v, dict | list) for v in value):
                lines.append(f"{pad}{key}: [{', '.join(map(str, value))}]")  # one line
            elif isinstance(value, dict | list):
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
    from mqoe.engine.streams import MAX_SEED

    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if not 0 <= seed <= MAX_SEED:
        raise UserError(f"--seed {text}: expected a non-negative integer up to {MAX_SEED}")
    return seed


def _cmd_run(args: argparse.Namespace) -> int:
    from mqoe.workloads.base import parse_assignments, parse_params, why_no_phone

    if args.list or not args.scenario:
        if not args.list:
            raise UserError("mqoe run: name a scenario (mqoe run --list shows them)")
        from mqoe.workloads import SCENARIOS
        from mqoe.workloads.population import POPULATIONS

        return _list_scenarios({**SCENARIOS, **POPULATIONS})
    # Everything a user can get wrong is checked before the results folder is touched
    # and before anything is simulated: seed, scenario, parameters, profile, then --out.
    seed = _parse_seed(args.seed)
    overrides = parse_assignments(args.assignments)
    entry, population = _registered(args.scenario)
    parse_params(entry.params_type, overrides, args.scenario)
    no_phone = why_no_phone(entry, population)
    if no_phone and (args.profile is not None or args.trace):
        raise UserError(
            f"mqoe run {args.scenario}: it {no_phone}; --profile and --trace do not apply"
        )
    if args.profile is not None and not args.profile.strip():
        raise UserError("--profile '': empty; name a profile (mqoe profiles list) or a .toml file")
    from mqoe.results import ResultsStore, default_results_dir, ensure_output_dir
    from mqoe.workloads.runner import refuse_cpu_knobs, run_population, run_scenario

    profile = None
    if no_phone:
        refuse_cpu_knobs(args.scenario, overrides, entry, population)
    else:
        from mqoe.device.profiles import load_profile

        profile = load_profile(args.profile or "nokia-1")
    store = ResultsStore(ensure_output_dir(*_results_dir(args.out, default_results_dir())))
    if population:
        progress = LazyProgress(f"{args.scenario}")
        try:
            record = run_population(args.scenario, seed, overrides)
        finally:
            progress.close()
    else:
        where = f" on {profile.name}" if profile is not None else ""
        progress = LazyProgress(f"{args.scenario}{where}")
        try:
            record = run_scenario(
                args.scenario, profile, seed, overrides, trace=args.trace, on_progress=progress
            )
        finally:
            progress.close()
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
            name: _records(record.tables, name)
            for name in record.tables
            if name != "frames" and _rows(record.tables, name) <= _SHOWN_ROWS
        },
        "stored_tables": {name: _rows(record.tables, name) for name in record.tables},
        "results_dir": str(store.root),
    }
    if args.json:
        print(json.dumps(summary, indent=2, allow_nan=False, default=str))
        return 0
    _print_run(record, store.root)
    return 0


def _rows(tables: Mapping[str, Any], name: str) -> int:
    """A table's row count, without making a DataFrame of a column table."""
    from mqoe.results.tables import held_table

    return len(held_table(tables, name))


def _records(tables: Mapping[str, Any], name: str) -> list[dict[str, Any]]:
    """A table's rows for the JSON summary: as pandas' ``to_json`` gives them (NaN as
    null, floats to 10 decimals), without pandas for a column table."""
    from mqoe.results.tables import ColumnTable, held_table

    held = held_table(tables, name)
    if not isinstance(held, ColumnTable):
        rows: list[dict[str, Any]] = json.loads(held.to_json(orient="records"))
        return rows
    return [{k: _json_value(v) for k, v in row.items()} for row in held.to_arrow().to_pylist()]


def _json_value(value: object) -> object:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 10)
    return value


_SHOWN_ROWS = 40  # tables up to this size are printed; larger ones only stored


def _registered(name: str) -> tuple[Any, bool]:
    """The scenario or population scenario called ``name``, and whether it is a
    population (whose module, the fleet model, is imported only for one)."""
    from mqoe.workloads import SCENARIOS

    if name in SCENARIOS:
        return SCENARIOS[name], False
    from mqoe.workloads.population import POPULATIONS

    if name in POPULATIONS:
        return POPULATIONS[name], True
    known = ", ".join(sorted({*SCENARIOS, *POPULATIONS}))
    raise UserError(f"unknown scenario {name!r}; available: {known}")


def _results_dir(given: Path | None, default: Path) -> tuple[Path, str]:
    """The results folder and how to name it in errors: the option, or where the default
    came from."""
    if given is not None:
        return given, "--out"
    return default, "$MQOE_RESULTS" if os.environ.get("MQOE_RESULTS") else "results folder"


def _list_scenarios(scenarios: dict[str, Any]) -> int:
    import dataclasses

    from rich.markup import escape

    for name, scenario in sorted(scenarios.items()):
        out.print(f"[bold]{escape(name)}[/bold]: {escape(scenario.summary)}")
        for field in dataclasses.fields(scenario.params_type):
            out.print(f"    {field.name} = {field.default!r}", markup=False)
    return 0


def _print_run(record: Any, root: Path) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from mqoe.workloads.base import NO_PROFILE

    # A population's record names itself as the profile; a run without a phone, none.
    phone = record.profile not in (record.scenario, NO_PROFILE)
    where = f" on {escape(record.profile)}" if phone else ""
    out.print(
        f"[bold]{escape(record.scenario)}[/bold]{where}, seed {record.seed}: "
        f"{record.sim_duration_s:g} s simulated in {record.wall_time_s:.2f} s"
    )
    metrics = Table(show_header=True, title="metrics", title_justify="left")
    metrics.add_column("metric")
    metrics.add_column("value", justify="right")
    for key, value in record.metrics.items():
        metrics.add_row(Text(key), Text(f"{value:.4g}" if isinstance(value, float) else str(value)))
    out.print(metrics)
    for name, frame in record.tables.items():
        if name == "frames" or frame.empty:
            continue
        if len(frame) > _SHOWN_ROWS:
            out.print(
                f"{name}: {len(frame)} rows (stored; query them with mqoe results query)",
                markup=False,
            )
            continue
        table = Table(title=Text(name), title_justify="left")
        shown = [c for c in frame.columns if not c.endswith("_ns")]
        for column in shown:
            table.add_column(Text(str(column)))
        for row in frame[shown].itertuples(index=False):
            table.add_row(*(Text(f"{v:.4g}" if isinstance(v, float) else str(v)) for v in row))
        out.print(table)
    out.print(f"stored as {record.run_id} in {root}", markup=False)


# -- reproduce ------------------------------------------------------------------------
def _cmd_reproduce(args: argparse.Namespace) -> int:
    if args.work and not args.list and args.scheduler is None:
        from mqoe.sweep.pool import prestart_local

        prestart_local(args.workers)  # their start-up overlaps the imports below
    from rich.markup import escape

    from mqoe.experiments import EXPERIMENTS

    if args.list or not args.work:
        if not args.list:
            raise UserError("mqoe reproduce: name a work (mqoe reproduce --list shows them)")
        if not EXPERIMENTS:
            out.print("no reproductions are registered yet")
        for name, experiment in sorted(EXPERIMENTS.items()):
            out.print(f"[bold]{escape(name)}[/bold]: {escape(experiment.title)}")
        return 0
    names = sorted(EXPERIMENTS) if args.work == "all" else [args.work]
    if args.work == "all" and not names:
        raise UserError("no reproductions are registered yet (mqoe reproduce --list)")
    for name in names:
        if name not in EXPERIMENTS:
            known = ", ".join(sorted(EXPERIMENTS)) or "none yet"
            raise UserError(f"unknown work {name!r}; available: {known}")
    from mqoe.cli.cmd_sweep import Bar
    from mqoe.experiments.reproduction import reproduce_works
    from mqoe.results import ensure_output_dir
    from mqoe.sweep import Backend

    if args.workers is not None and args.scheduler:
        raise UserError("mqoe reproduce: --workers is for local processes; Dask sizes its own")
    backend = Backend(workers=args.workers, scheduler=args.scheduler, warm=not args.cold)
    ensure_output_dir(args.out, "--out")  # before minutes of simulation, not after
    # One work writes into OUT itself; `all` gives each work its own folder. All the
    # works' runs share the workers; each work's outputs are written as its runs end.
    works = [
        (EXPERIMENTS[name], args.out / name if args.work == "all" else args.out) for name in names
    ]
    bar = Bar(args.work)

    def written(name: str, path: Path) -> None:
        out.print(f"{name}: wrote {path} and figures in {path.parent}", markup=False)

    try:
        reproduce_works(
            works,
            quick=args.quick,
            backend=backend,
            resume=args.resume,
            on_progress=bar,
            on_written=written,
        )
    except KeyboardInterrupt:
        bar.close()
        where = works[0][1] / "results" if len(works) == 1 else args.out / "*" / "results"
        err.print(
            f"mqoe: interrupted; finished runs are stored in {where}; continue with --resume",
            markup=False,
        )
        return 130
    finally:
        bar.close()
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

        check_output_file(args.path, "results export")
        written = export(store.root, args.what, args.path)
        out.print(f"wrote {written}", markup=False)
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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "profiles": _cmd_profiles,
    "run": _cmd_run,
    "reproduce": _cmd_reproduce,
    "results": _cmd_results,
    "analyze": _cmd_analyze,
    "calibrate": _cmd_calibrate,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code:
    0, 1 for a failed check, 2 for a user error, 130 on Ctrl-C, 141 on a closed pipe."""
    try:
        try:
            return _dispatch(argv)
        finally:
            # Flush inside the guard: with little output the closed pipe shows only here,
            # and otherwise at interpreter exit as "Exception ignored … BrokenPipeError".
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE


def _dispatch(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command in PLUGIN_COMMANDS:
            result: int = _plugin(args.command).run(args)
            return result
        return COMMANDS[args.command](args)
    except UserError as exc:
        _print_error(f"mqoe: error: {exc}")
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        _print_error("mqoe: interrupted")
        return EXIT_INTERRUPTED


def _print_error(message: str) -> None:
    """One line on stderr, the text as given: not through Rich, whose markup and emoji
    codes would turn ``[red]`` into colour and ``file.toml:100:`` into an emoji."""
    sys.stderr.write(one_line(message) + "\n")
    sys.stderr.flush()


def _discard_stdout() -> None:
    """Point stdout at /dev/null (Python's advice for SIGPIPE): what is still buffered is
    then dropped silently when the interpreter flushes at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (embedded, captured)
        pass


if __name__ == "__main__":
    raise SystemExit(main())
