"""`mqoe analyze examples`: the synthetic inputs behind the README's analyser examples."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from mqoe.cli.analyze_examples import COMMANDS
from mqoe.cli.main import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("ex") / "samples"
    assert main(["analyze", "examples", str(target), "--anr-files", "60"]) == 0
    return target


def test_every_printed_command_runs_on_the_examples(
    examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    for template in COMMANDS:
        argv = shlex.split(template.format(d=examples))
        assert argv[:2] == ["mqoe", "analyze"]
        code, out, err = _run(capsys, *argv[1:])
        assert code == 0, (template, err)
        assert out.strip(), template


def test_examples_give_the_analysers_something_to_find(
    examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code, out, _ = _run(capsys, "analyze", "gfxinfo", str(examples / "gfxinfo/dump.txt"), "--json")
    packages = json.loads(out)["packages"]
    assert code == 0 and {p["package"] for p in packages} == {
        "com.example.mail",
        "com.example.news",
    }
    assert all(p["frames"] > 100 for p in packages)
    code, out, _ = _run(capsys, "analyze", "memlog", str(examples / "memlog"), "--json")
    summary = json.loads(out)["summary"]
    # The cleaning rule (> 10 interactive hours) keeps every example phone.
    assert code == 0 and summary["n_phones"] == summary["n_kept"] == 3
    code, out, _ = _run(capsys, "analyze", "anr", str(examples / "anr"), "--json")
    report = json.loads(out)
    assert code == 0 and len(report["events"]) == 60 and report["clusters"]
    assert len(list((examples / "anr").glob("anr_*.txt"))) == 60
    assert "Synthetic" in (examples / "README.md").read_text()


def test_bad_options_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["--seed", "-1"], ["--anr-files", "0"]):
        code, _, err = _run(capsys, "analyze", "examples", str(tmp_path / "x"), *argv)
        assert code == 2 and "Traceback" not in err and argv[0] in err
    code, _, err = _run(capsys, "analyze", "examples", str(tmp_path / "no" / "x"))
    assert code == 2 and "no such directory" in err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_directory_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "keep.txt").write_text("precious")
    code, _, err = _run(capsys, "analyze", "examples", str(target))
    assert code == 2 and "already exists" in err and "Traceback" not in err
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    assert (target / "keep.txt").read_text() == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no staging left behind


def test_same_seed_same_files(tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert main(["analyze", "examples", str(tmp_path / name), "--anr-files", "3"]) == 0
    a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert a == b and len(a) > 6
    for rel in a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
