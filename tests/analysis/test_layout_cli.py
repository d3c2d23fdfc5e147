"""``mqoe analyze layout`` end to end: output folders checked before the dump is read, a
dump that cannot say its screen, user text printed literally, endless and unreadable
inputs."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mqoe.analysis.layout.write import layout_to_json, layout_to_xml
from mqoe.cli.main import main
from mqoe.generators.layout import synth_layout
from tests.unprivileged import one_line_errors_as_nobody, world_dir


def _dump(folder: Path, name: str = "dump.xml") -> Path:
    path = folder / name
    path.write_text(layout_to_xml(synth_layout(np.random.default_rng(0), (270, 480), items=4)))
    return path


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], *names: str) -> str:
    assert main(argv) == 2
    message = capsys.readouterr().err.strip()
    assert "\n" not in message, message
    assert message.startswith("mqoe: error: "), message
    for name in names:
        assert name in message, message
    return message


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_output_folders_are_checked_before_the_dump_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    broken = tmp_path / "broken.xml"
    broken.write_text("<hierarchy><node")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    message = _one_line_error(
        capsys, ["analyze", "layout", str(broken), option, str(blocker)], option, str(blocker)
    )
    assert "malformed" not in message  # the dump was never parsed
    assert blocker.read_text() == "x"


def test_a_dialog_only_dump_asks_for_the_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dialog = tmp_path / "dialog.xml"
    dialog.write_text('<hierarchy rotation="0"><node class="android.widget.Button" text="OK" '
                      'bounds="[100,900][500,1000]"/></hierarchy>')  # fmt: skip
    out = tmp_path / "csv"
    message = _one_line_error(
        capsys, ["analyze", "layout", str(dialog), "--csv", str(out)], str(dialog), "--screen"
    )
    assert "100" not in message.split("--screen")[-1]  # no guess offered as the answer
    assert not list(out.glob("*.csv"))
    assert main(["analyze", "layout", str(dialog), "--screen", "1080x1920"]) == 0
    assert "1080x1920" in capsys.readouterr().out


def test_file_names_and_values_from_the_dump_are_printed_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An opaque card hidden under an opaque cover: a redundant layer, listed with its
    # class and resource id, both of which Rich would take for markup.
    document = {
        "class": "android.widget.FrameLayout",
        "bounds": [0, 0, 100, 100],
        "children": [
            {"class": "x.[bold]Card", "resource-id": "[red]id/card[/red]",
             "bounds": [0, 0, 50, 50], "background": True, "opaque": True},
            {"class": "Cover", "bounds": [0, 0, 100, 100], "background": True, "opaque": True},
        ],
    }  # fmt: skip
    path = tmp_path / "[bold green]dump.json"
    path.write_text(json.dumps(document))
    assert main(["analyze", "layout", str(path)]) == 0
    out = capsys.readouterr().out
    assert "[bold green]dump.json" in out
    assert "[red]id/card[/red]" in out
    assert "x.[bold]Card" in out


def test_csv_and_plot_are_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "h$\\frac{$.json"  # not matplotlib mathtext in the title
    path.write_text(layout_to_json(synth_layout(np.random.default_rng(1), (90, 160), items=3)))
    argv = ["analyze", "layout", str(path), "--csv", str(tmp_path / "t"), "--plot",
            str(tmp_path / "p")]  # fmt: skip
    assert main(argv) == 0
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == [
        "draw_counts.csv", "levels.csv", "nodes.csv"
    ]  # fmt: skip
    assert (tmp_path / "p" / "overdraw.png").read_bytes().startswith(b"\x89PNG")


# -- big and endless inputs -----------------------------------------------------------


def test_an_endless_input_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    # /dev/zero has size 0 to stat() and never ends: reading "the whole file" must stop at
    # the size limit. Run in a child whose address space is capped at 1 GiB, so a reader
    # that keeps going fails fast instead of exhausting the machine.
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    script = (
        "from mqoe.analysis.layout import read\n"
        "from mqoe.analysis.layout.parse import load_layout\n"
        "from mqoe.errors import InputFileError\n"
        "read.MAX_FILE_BYTES = 4096\n"
        "try:\n"
        "    load_layout('/dev/zero')\n"
        "except InputFileError as error:\n"
        "    print(error)\n"
    )

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
        preexec_fn=cap, check=False, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.startswith("/dev/zero: ")
    assert "4,096" in result.stdout


def test_gzip_compressed_dumps_are_read(tmp_path: Path) -> None:
    import gzip

    from mqoe.analysis.layout.parse import load_layout

    plain = _dump(tmp_path)
    packed = tmp_path / "dump.xml.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert load_layout(packed).nodes == load_layout(plain).nodes


# -- unreadable paths, as a user that cannot read them ---------------------------------


def _as_nobody_one_line(runs: list[list[str]]) -> list[str]:
    return one_line_errors_as_nobody([["analyze", "layout", *r] for r in runs])


def test_unreadable_inputs_are_one_line_naming_the_path(tmp_path: Path) -> None:
    with world_dir() as world:
        source = _dump(tmp_path)
        locked = world / "locked"
        locked.mkdir()
        shutil.copy(source, locked / "inside.xml")
        (locked / "inside.xml").chmod(0o644)
        secret = world / "secret.xml"
        shutil.copy(source, secret)
        secret.chmod(0o000)
        folder = world / "a-folder"
        folder.mkdir()
        locked.chmod(0o000)
        paths = [locked / "inside.xml", secret, folder, locked]
        messages = _as_nobody_one_line([[str(p)] for p in paths])
        for path, message in zip(paths, messages, strict=True):
            assert message.startswith(f"mqoe: error: {path}: "), message
        assert "permission denied" in messages[0].lower()
        assert "permission denied" in messages[1].lower()
        assert "folder" in messages[2] and "folder" in messages[3]


def test_unwritable_output_folders_are_one_line_naming_the_option(tmp_path: Path) -> None:
    with world_dir() as world:
        readable = world / "dump.xml"
        shutil.copy(_dump(tmp_path), readable)
        readable.chmod(0o644)
        locked = world / "locked"
        locked.mkdir()
        locked.chmod(0o000)
        target = locked / "out"
        options = ["--csv", "--plot"]
        messages = _as_nobody_one_line([[str(readable), o, str(target)] for o in options])
        for option, message in zip(options, messages, strict=True):
            assert f"{option} {target}: cannot write there" in message, message
