"""End-to-end CLI behaviour: what a new user types, and what they see when they err."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mqoe.cli.main import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_profiles_list_shows_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "profiles", "list")
    assert code == 0
    for name in ("nokia-1", "nexus-5", "nexus-6p", "galaxy-nexus", "redmi-5", "black-shark"):
        assert name in out


def test_profiles_show_json_has_the_derived_scheduler_tunables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "profiles", "show", "nokia-1", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["memory"]["ram_mb"] == 1024
    assert data["derived"]["sched_latency_ns"] == 18_000_000


def test_run_json_summary_and_query_the_stored_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_dir = str(tmp_path / "res")
    code, out, _ = _run(
        capsys, "run", "frame-deadlines", "--profile", "nokia-1", "--seed", "4",
        "--set", "hogs=4", "duration_s=2", "--set", "rt_burst_mcycles=2",
        "--out", out_dir, "--json",
    )  # fmt: skip
    assert code == 0
    summary = json.loads(out)
    assert 0.0 <= summary["missed_deadline_rate"] <= 1.0
    assert summary["params"]["hogs"] == 4  # several pairs after one --set
    assert summary["params"]["rt_burst_mcycles"] == 2.0  # and a repeated --set
    assert {"thread_states", "preemption_summary"} <= set(summary["tables"])
    code, out, _ = _run(
        capsys, "results", "query", "--results", out_dir, "--format", "json",
        "select count(*) as n, max(missed_deadline_rate) as r from runs",
    )  # fmt: skip
    assert code == 0
    rows = json.loads(out)
    assert rows[0]["n"] == 1
    assert rows[0]["r"] == pytest.approx(summary["missed_deadline_rate"])


def test_run_prints_readable_tables_without_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _run(
        capsys, "run", "frame-deadlines", "--set", "duration_s=1", "--out", str(tmp_path)
    )
    assert code == 0
    assert "missed_deadline_rate" in out
    assert "thread_states" in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["run", "no-such-scenario"], "unknown scenario"),
        (["run", "frame-deadlines", "--profile", "iphone"], "unknown profile"),
        (["run", "frame-deadlines", "--seed", "-3"], "seed"),
        (["run", "frame-deadlines", "--seed", "x"], "seed"),
        (["run", "frame-deadlines", "--set", "hogs"], "expected key=value"),
        (["run", "frame-deadlines", "--set", "hogz=1"], "no parameter 'hogz'"),
        (["run", "frame-deadlines", "--set", "fps=fast"], "expected a number"),
        (["reproduce", "no-such-work"], "unknown work"),
        (["reproduce", "downward-spiral", "--workers", "0"], "workers must be at least 1"),
        (["reproduce", "netpis", "--workers", "2", "--scheduler", "tcp://h:1"], "--workers is"),
        (["profiles", "show", "missing.toml"], "missing.toml"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    fragment: str,
) -> None:
    monkeypatch.chdir(tmp_path)  # never write results into the source tree
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert fragment in err
    assert err.startswith("mqoe: error: ")
    assert "Traceback" not in err


def test_querying_an_empty_results_dir_is_a_user_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _run(capsys, "results", "query", "--results", str(tmp_path), "select 1")
    assert code == 2
    assert "no runs" in err


def test_bad_sql_is_a_user_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _run(capsys, "run", "frame-deadlines", "--set", "duration_s=0.5", "--out", str(tmp_path))
    code, _, err = _run(capsys, "results", "query", "--results", str(tmp_path), "selec nothing")
    assert code == 2
    assert "query failed" in err


def test_reproduce_list_works_before_any_work_is_registered(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "reproduce", "--list")
    assert code == 0
    assert out.strip()


def test_the_installed_command_runs_and_stores_into_the_default_dir(tmp_path: Path) -> None:
    """As a new user would: `mqoe run …` then `mqoe results query …` in one folder."""
    exe = Path(sys.executable).with_name("mqoe")
    env = {k: v for k, v in os.environ.items() if k != "MQOE_RESULTS"}
    run = subprocess.run(
        [str(exe), "run", "frame-deadlines", "--profile", "nokia-1", "--set", "hogs=4",
         "duration_s=1", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert 0 <= json.loads(run.stdout)["missed_deadline_rate"] <= 1
    query = subprocess.run(
        [str(exe), "results", "query", "select count(*) as n from runs", "--format", "csv"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert query.returncode == 0, query.stderr
    assert query.stdout.splitlines() == ["n", "1"]
    bad = subprocess.run(
        [str(exe), "run", "frame-deadlines", "--set", "hogs=x"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_analyze_memlog_summarises_a_fleet(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import numpy as np

    from mqoe.generators.memlog import synthesize_config, synthesize_phone

    rng = np.random.default_rng(3)
    for i in range(2):
        folder = tmp_path / f"phone{i}"
        folder.mkdir()
        (folder / "phone.log").write_text(synthesize_phone(rng, 40.0, 2 * 1024**3))
        (folder / "phone.conf").write_text(synthesize_config(2 * 1024**3))
    out_dir = tmp_path / "tables"
    code, out, _ = _run(capsys, "analyze", "memlog", str(tmp_path / "phone0"),
                        str(tmp_path / "phone1"), "--json", "--out", str(out_dir))  # fmt: skip
    assert code == 0
    summary = json.loads(out)["summary"]
    assert summary["n_phones"] == 2
    assert 0.0 <= summary["median_of_median_utilisation"] <= 1.0
    assert (out_dir / "comparison.csv").exists()
    code, _, err = _run(capsys, "analyze", "memlog", str(tmp_path / "missing"))
    assert code == 2 and "missing" in err


def test_run_fleet_draws_its_own_phones_and_stores_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ("run", "fleet", "--set", "phones=60", "days=2", "--seed", "3", "--json")
    code, out, _ = _run(capsys, *argv, "--out", str(tmp_path))
    data = json.loads(out)
    assert code == 0
    assert data["scenario"] == "fleet" and data["seed"] == 3
    assert data["params"]["phones"] == 60 and data["params"]["seed"] == 3
    assert data["stored_tables"]["phones"] == 60
    assert data["anr_per_phone"] >= 0
    code, out, _ = _run(capsys, *argv, "--out", str(tmp_path))  # same inputs, same numbers
    assert json.loads(out)["anr_per_phone"] == data["anr_per_phone"]
    code, out, _ = _run(
        capsys, "results", "query", "--results", str(tmp_path), "select scenario from runs"
    )
    assert code == 0 and "fleet" in out


def test_run_fleet_refuses_a_profile(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "run", "fleet", "--profile", "mi-6", "--out", str(tmp_path))
    assert code == 2
    assert "draws its own phones" in err


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (("--profile", "mi-6"), "it models no phone; --profile and --trace do not apply"),
        (("--trace",), "it models no phone; --profile and --trace do not apply"),
        (("--set", "governor=performance"), "--set governor applies to phone scenarios"),
    ],
)
def test_the_trace_mode_refuses_what_only_a_phone_takes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: tuple[str, ...], words: str
) -> None:
    out = tmp_path / "out"
    code, _, err = _run(capsys, "run", "trace-abr", *extra, "--out", str(out))
    assert code == 2 and err.count("\n") == 1
    assert words in err
    assert not out.exists()


def test_a_trace_mode_run_is_stored_without_a_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ("run", "trace-abr", "--set", "session_s=40", "--seed", "4", "--json")
    code, out, _ = _run(capsys, *argv, "--out", str(tmp_path))
    data = json.loads(out)
    assert code == 0 and data["profile"] == "none"
    assert data["run_id"].startswith("trace-abr-s4-")
    assert "energy_j" not in data and set(data["stored_tables"]) == {"segments"}
    code, out, _ = _run(
        capsys, "results", "query", "--results", str(tmp_path), "select profile from runs"
    )
    assert code == 0 and "none" in out
