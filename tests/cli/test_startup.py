"""What a command line process imports: only what its command uses.

Each check runs in a fresh interpreter (this test process has imported everything
already) and looks at ``sys.modules`` when the command has finished. Start-up *times*
are measured in ``bench/``, not here; an import list is what a test can hold steady.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Libraries a command should import only when it uses them (each costs 0.05-0.4 s).
HEAVY = frozenset({"pandas", "pyarrow", "duckdb", "matplotlib", "dask", "distributed"})

# Runs ARGV through mqoe's command line, then prints the modules it left imported.
_DRIVER = """
import json, sys
from mqoe.cli.main import main
try:
    code = main(json.loads(sys.argv[1]))
except SystemExit as exit:  # --help ends in argparse's exit
    code = exit.code
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + " CODE " + str(code) + "\\n")
"""


def _modules_after(*argv: str) -> tuple[set[str], str]:
    """The modules imported by ``mqoe ARGV`` (which must succeed), and its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(list(argv))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    marker = done.stderr.rpartition("\nMODULES ")[2]
    modules, _, code = marker.partition(" CODE ")
    assert code.strip() == "0", done.stderr
    return set(json.loads(modules)), done.stdout


def _imported(code: str) -> set[str]:
    """The modules imported by running ``code`` in a fresh interpreter, beyond what the
    interpreter itself starts with."""
    driver = (
        "import sys, json; before = set(sys.modules)\n"
        f"{code}\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", driver], capture_output=True, text=True, timeout=300, check=True
    )
    imported: set[str] = set(json.loads(done.stdout.splitlines()[-1]))
    return imported


def _heavy(modules: set[str]) -> list[str]:
    return sorted({name.split(".")[0] for name in modules} & HEAVY)


def test_importing_the_command_line_imports_no_heavy_library() -> None:
    assert _heavy(_imported("import mqoe.cli.main")) == []


def test_importing_mqoe_does_not_read_its_version_until_asked() -> None:
    assert "importlib.metadata" not in _imported("import mqoe")
    asked = _imported("import mqoe; assert mqoe.__version__ and isinstance(mqoe.__version__, str)")
    assert "importlib.metadata" in asked


def test_version_is_the_installed_packages() -> None:
    from importlib.metadata import PackageNotFoundError, version

    import mqoe

    try:
        expected = version("mqoe")
    except PackageNotFoundError:
        expected = "0.0.0+unknown"
    assert mqoe.__version__ == expected
    done = subprocess.run(
        [sys.executable, "-m", "mqoe", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout == f"mqoe {expected}\n"


def test_help_imports_no_heavy_library_and_no_scenario() -> None:
    modules, out = _modules_after("--help")
    assert "run one scenario" in out
    assert _heavy(modules) == []
    assert not {m for m in modules if m.startswith("mqoe.workloads")}
    assert "mqoe.device.profiles" not in modules


@pytest.mark.parametrize("extra", [(), ("--set", "rule=bola")])
def test_a_trace_mode_run_imports_only_its_own_scenario_and_no_query_engine(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    modules, out = _modules_after("run", "trace-abr", "--json", "--out", str(tmp_path), *extra)
    assert json.loads(out)["scenario"] == "trace-abr"
    # Its tables are columns stored as Parquet by pyarrow: no pandas anywhere.
    assert _heavy(modules) == ["pyarrow"]
    others = {
        "mqoe.workloads.app_switching",
        "mqoe.workloads.flash_aging",
        "mqoe.workloads.frame_deadlines",
        "mqoe.workloads.netpis",
        "mqoe.workloads.spiral",
        "mqoe.workloads.ui_bench",
        "mqoe.workloads.video",
        "mqoe.workloads.video_stream",
        "mqoe.workloads.fleet",  # the population scenario's model
    }
    assert "mqoe.workloads.trace_player" in modules
    assert modules & others == set()
    # It models no phone: no profile is loaded (pydantic's schema) and no device imported.
    assert {m for m in modules if m.split(".")[0] == "pydantic"} == set()
    assert {m for m in modules if m.startswith("mqoe.device.")} == {"mqoe.device.no_device"}


def test_a_trace_mode_run_imports_no_pandas(tmp_path: Path) -> None:
    modules, _ = _modules_after("run", "trace-abr", "--json", "--out", str(tmp_path))
    assert _heavy(modules) == ["pyarrow"]


def test_a_trace_mode_run_and_its_storing_import_no_pandas(tmp_path: Path) -> None:
    imported = _imported(
        "from mqoe.device.profiles import load_profile\n"
        "from mqoe.results import ResultsStore\n"
        "from mqoe.workloads.runner import run_scenario\n"
        "record = run_scenario('trace-abr', load_profile('nokia-1'), 0, {'rule': 'bola'})\n"
        f"ResultsStore({str(tmp_path)!r}).write(record)"
    )
    assert _heavy(imported) == ["pyarrow"]
    assert "mqoe.device.display" not in imported  # the phone builds no display for it


def test_the_registry_lists_names_without_importing_scenarios() -> None:
    listed = _imported(
        "from mqoe.workloads import SCENARIOS\n"
        "assert 'trace-abr' in SCENARIOS and len(list(SCENARIOS)) == len(SCENARIOS)"
    )
    assert "mqoe.workloads.trace_player" not in listed
    assert _heavy(listed) == []


def test_every_registered_scenario_is_named_as_registered() -> None:
    from mqoe.workloads import SCENARIOS

    for name in SCENARIOS:
        assert SCENARIOS[name].name == name
        assert SCENARIOS[name] is SCENARIOS[name]  # built once


def test_run_list_still_lists_every_scenario_and_the_population() -> None:
    from mqoe.workloads import SCENARIOS

    _, out = _modules_after("run", "--list")
    for name in [*SCENARIOS, "fleet"]:
        assert f"{name}:" in out
