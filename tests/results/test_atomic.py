"""Atomic writes: the destination holds the old bytes or the new ones, never a mix."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pandas as pd
import pytest

from mqoe.results import (
    atomic_write,
    atomic_write_bytes,
    atomic_write_parquet,
    atomic_write_text,
)

OLD = b"old contents\n" * 100
NEW = b"new contents, longer than the old ones\n" * 1000


def test_atomic_write_bytes_replaces_content_and_creates_parents(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "file.bin"
    atomic_write_bytes(target, OLD)
    returned = atomic_write_bytes(target, NEW)
    assert returned == target
    assert target.read_bytes() == NEW
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.bin"]


def test_atomic_write_text_writes_utf8_without_newline_translation(tmp_path: Path) -> None:
    target = tmp_path / "t.csv"
    atomic_write_text(target, "é,x\r\ny\n")
    assert target.read_bytes() == "é,x\r\ny\n".encode()


def test_atomic_write_parquet_round_trips_and_drops_index(tmp_path: Path) -> None:
    target = tmp_path / "t.parquet"
    df = pd.DataFrame({"x": [1, 2], "label": ["a", "b"]}, index=[10, 20])
    atomic_write_parquet(target, df)
    back = pd.read_parquet(target)
    assert list(back.columns) == ["x", "label"]
    assert back["x"].tolist() == [1, 2]
    assert back.index.tolist() == [0, 1]


def test_temp_file_is_hidden_in_same_dir_and_not_matching_suffix(tmp_path: Path) -> None:
    target = tmp_path / "run.parquet"
    seen: list[Path] = []

    def write(tmp: Path) -> None:
        seen.append(tmp)
        tmp.write_bytes(NEW)
        assert list(tmp_path.glob("*.parquet")) == []

    atomic_write(target, write)
    (tmp,) = seen
    assert tmp.parent == tmp_path
    assert tmp.name.startswith(f".run.parquet.tmp-{os.getpid()}-")
    assert not tmp.exists()


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_exception_in_writer_keeps_old_file_and_removes_temp(
    tmp_path: Path, error: BaseException
) -> None:
    target = tmp_path / "file.bin"
    target.write_bytes(OLD)

    def write(tmp: Path) -> None:
        tmp.write_bytes(NEW[: len(NEW) // 2])
        raise error

    with pytest.raises(type(error)):
        atomic_write(target, write)
    assert target.read_bytes() == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["file.bin"]


def _write_half_then_die(target: str) -> None:
    def write(tmp: Path) -> None:
        with tmp.open("wb") as handle:
            handle.write(NEW[: len(NEW) // 2])
            handle.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    atomic_write(target, write)


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork and SIGKILL"
)
def test_killed_write_leaves_old_file(tmp_path: Path) -> None:
    target = tmp_path / "run.parquet"
    target.write_bytes(OLD)
    child = multiprocessing.get_context("fork").Process(
        target=_write_half_then_die, args=(str(target),)
    )
    child.start()
    child.join(timeout=60)
    assert child.exitcode == -signal.SIGKILL
    assert target.read_bytes() == OLD
    assert list(tmp_path.glob("*.parquet")) == [target]
    # The killed writer's temporary file is left behind, but hidden and unmatched.
    leftovers = [p for p in tmp_path.iterdir() if p != target]
    assert len(leftovers) == 1
    assert leftovers[0].name.startswith(".run.parquet.tmp-")
    assert leftovers[0].read_bytes() == NEW[: len(NEW) // 2]


def test_ensure_output_dir_names_the_option_for_a_file_and_an_unwritable_place(
    tmp_path: Path,
) -> None:
    from mqoe.errors import UserError
    from mqoe.results import ensure_output_dir

    afile = tmp_path / "taken"
    afile.write_text("")
    with pytest.raises(UserError, match=r"^--csv .*taken: is a file, expected a folder$"):
        ensure_output_dir(afile, "--csv")
    with pytest.raises(UserError, match=r"^--plot .*taken/sub: cannot write there"):
        ensure_output_dir(afile / "sub", "--plot")
    assert ensure_output_dir(tmp_path / "new" / "deep") == tmp_path / "new" / "deep"
    assert not list((tmp_path / "new" / "deep").iterdir())  # the write probe is gone


def test_ensure_output_dir_inside_an_unreadable_folder_is_one_line() -> None:
    from tests.unprivileged import run_python_as_nobody, world_dir

    with world_dir() as root:
        locked = root / "locked"
        locked.mkdir()
        locked.chmod(0o000)
        script = (
            "from mqoe.results import ensure_output_dir\n"
            "from mqoe.errors import UserError\n"
            "try:\n"
            f"    ensure_output_dir({str(locked / 'out')!r}, '--out')\n"
            "except UserError as exc:\n"
            "    print(exc)\n"
        )
        result = run_python_as_nobody(script)
        assert result.returncode == 0, result.stderr
        assert (
            result.stdout.strip()
            == f"--out {locked / 'out'}: cannot write there (Permission denied)"
        )
