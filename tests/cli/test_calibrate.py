"""``mqoe calibrate lz4`` end to end, in process."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqoe.cli.main import main
from mqoe.device.gpu_content import CONTENT_CLASSES, load_table

SMALL = ("calibrate", "lz4", "--pages", "64", "--repeats", "1")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_calibrate_writes_a_table_that_loads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "table.json"
    code, out, _ = _run(capsys, *SMALL, "--seed", "3", "--out", str(path))
    assert code == 0
    table = load_table(path)
    assert tuple(table.classes) == CONTENT_CLASSES
    assert (table.pages_per_class, table.seed) == (64, 3)
    for name in CONTENT_CLASSES:
        assert name in out
    assert "decompress MB/s" in out
    assert "100 MB of a typical mix" in out and "ms on this host" in out


def test_calibrate_writes_lz4_table_json_in_the_current_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, _ = _run(capsys, *SMALL)
    assert code == 0
    assert load_table(tmp_path / "lz4-table.json").pages_per_class == 64


def test_existing_file_is_kept_unless_forced(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "table.json"
    path.write_bytes(b"precious")
    code, _, err = _run(capsys, *SMALL, "--out", str(path))
    assert code == 2
    assert "--force" in err and "Traceback" not in err
    assert path.read_bytes() == b"precious"
    code, _, _ = _run(capsys, *SMALL, "--out", str(path), "--force")
    assert code == 0
    assert load_table(path).pages_per_class == 64


def test_missing_output_directory_is_a_user_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _run(capsys, *SMALL, "--out", str(tmp_path / "no" / "table.json"))
    assert code == 2
    assert err.startswith("mqoe: error: ") and "does not exist" in " ".join(err.split())
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    ("flag", "value", "fragment"),
    [
        ("--pages", "0", "positive integer"),
        ("--pages", "many", "positive integer"),
        ("--pages", "-5", "positive integer"),
        ("--pages", "100000000", "at most"),
        ("--repeats", "0", "positive integer"),
        ("--repeats", "1.5", "positive integer"),
        ("--seed", "-1", "non-negative integer"),
        ("--seed", "x", "non-negative integer"),
    ],
)
def test_bad_numbers_are_one_line_errors_with_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    flag: str,
    value: str,
    fragment: str,
) -> None:
    path = tmp_path / "table.json"
    code, _, err = _run(capsys, "calibrate", "lz4", flag, value, "--out", str(path))
    assert code == 2
    assert err.startswith(f"mqoe: error: {flag} ")
    assert fragment in err
    assert err.count("\n") == 1
    assert not path.exists()


def test_calibrate_needs_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "calibrate")
    assert code == 2
    assert "required" in err
