"""``mqoe analyze pcap`` end to end: outputs with nothing to write, output folders checked
before the capture is read, user text printed literally, unreadable paths."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mqoe.cli.main import main
from mqoe.generators.pcap import synth_pcap
from tests.unprivileged import one_line_errors_as_nobody, world_dir


def _capture(folder: Path, name: str = "c.pcap", **kw: object) -> Path:
    path = folder / name
    synth_pcap(path, fg_bytes=5000, bg_bytes=7000, **kw)  # type: ignore[arg-type]
    return path


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], *names: str) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    message = captured.err.strip()
    assert "\n" not in message, message
    assert message.startswith("mqoe: error: "), message
    for name in names:
        assert name in message, message
    return message


@pytest.mark.parametrize("option", ["--plot", "--csv"])
def test_a_port_filter_that_leaves_no_flow_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    path = _capture(tmp_path)
    out = tmp_path / "out"
    message = _one_line_error(
        capsys, ["analyze", "pcap", str(path), "--port", "1", option, str(out)], str(path)
    )
    assert "--port 1" in message and option in message
    assert "other_port" in message  # why nothing is left
    assert not any(out.glob("*")) if out.exists() else True


def test_a_capture_without_tcp_data_is_one_line_for_plot_and_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header_only = tmp_path / "empty.pcap"
    header_only.write_bytes(bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000"))
    argv = ["analyze", "pcap", str(header_only), "--csv", str(tmp_path / "t"),
            "--plot", str(tmp_path / "p")]  # fmt: skip
    message = _one_line_error(capsys, argv, str(header_only))
    assert "no TCP flow" in message
    assert not list((tmp_path / "t").glob("*.csv"))
    assert not list((tmp_path / "p").glob("*.png"))


def test_without_outputs_an_empty_result_is_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _capture(tmp_path)
    assert main(["analyze", "pcap", str(path), "--port", "1"]) == 0
    assert "0 flows with data" in capsys.readouterr().out


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_output_folders_are_checked_before_the_capture_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    not_a_capture = tmp_path / "notes.txt"
    not_a_capture.write_text("hello")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    message = _one_line_error(
        capsys, ["analyze", "pcap", str(not_a_capture), option, str(blocker)], option, str(blocker)
    )
    assert "not a pcap" not in message  # the capture was never opened
    assert blocker.read_text() == "x"


def test_file_names_and_addresses_are_printed_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Rich would take "[red]" and "[fd00::23]" (an IPv6 label) for markup tags.
    path = _capture(tmp_path, "[bold red]capture.pcap", ipv6=True)
    assert main(["analyze", "pcap", str(path)]) == 0
    out = capsys.readouterr().out
    assert "[bold red]capture.pcap" in out
    assert "[fd00::23]:40001" in out and "[fd00::23]:40002" in out


def test_csv_and_plot_written_when_there_are_flows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _capture(tmp_path, "c$\\frac{$.pcap")  # not matplotlib mathtext in the title
    argv = ["analyze", "pcap", str(path), "--csv", str(tmp_path / "t"), "--plot",
            str(tmp_path / "p"), "--port", "443"]  # fmt: skip
    assert main(argv) == 0
    assert (tmp_path / "t" / "flows.csv").read_text().count("\n") == 2  # header + 1 flow
    assert (tmp_path / "p" / "seq_growth.png").read_bytes().startswith(b"\x89PNG")


# -- unreadable paths, as a user that cannot read them ---------------------------------


def _as_nobody_one_line(runs: list[list[str]]) -> list[str]:
    return one_line_errors_as_nobody([["analyze", "pcap", *r] for r in runs])


def test_unreadable_inputs_are_one_line_naming_the_path(tmp_path: Path) -> None:
    with world_dir() as world:
        source = _capture(tmp_path)
        locked = world / "locked"
        locked.mkdir()
        shutil.copy(source, locked / "inside.pcap")
        (locked / "inside.pcap").chmod(0o644)
        secret = world / "secret.pcap"
        shutil.copy(source, secret)
        secret.chmod(0o000)
        folder = world / "a-folder"
        folder.mkdir()
        locked.chmod(0o000)
        paths = [locked / "inside.pcap", secret, folder, locked]
        messages = _as_nobody_one_line([[str(p)] for p in paths])
        for path, message in zip(paths, messages, strict=True):
            assert message.startswith(f"mqoe: error: {path}: "), message
        assert "permission denied" in messages[0].lower()
        assert "permission denied" in messages[1].lower()
        assert "folder" in messages[2] and "folder" in messages[3]


def test_unwritable_output_folders_are_one_line_naming_the_option(tmp_path: Path) -> None:
    with world_dir() as world:
        readable = world / "c.pcap"
        shutil.copy(_capture(tmp_path), readable)
        readable.chmod(0o644)
        locked = world / "locked"
        locked.mkdir()
        locked.chmod(0o000)
        target = locked / "out"
        options = ["--csv", "--plot"]
        messages = _as_nobody_one_line([[str(readable), o, str(target)] for o in options])
        for option, message in zip(options, messages, strict=True):
            assert f"{option} {target}: cannot write there" in message, message
