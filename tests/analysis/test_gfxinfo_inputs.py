"""``mqoe analyze gfxinfo`` on files as they come off phones and PCs: every encoding and
line end reads the same, output options fail early in one line, unreadable paths are named,
memory does not grow with the file beyond the compact per-frame columns, and mutated dumps
only ever raise user errors."""

from __future__ import annotations

import argparse
import codecs
import gzip
import json
import re
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis import gfxinfo as gfx
from mqoe.analysis.gfxinfo import parse as gfxinfo_parse
from mqoe.analysis.gfxinfo.data import read_gfxinfo
from mqoe.analysis.gfxinfo.report import analyze
from mqoe.cli.main import main
from mqoe.generators.gfxinfo import synth_gfxinfo, write_large_dump
from tests.fuzzing import DEEP_INPUTS, QUICK_INPUTS, fuzz
from tests.unprivileged import run_python_as_nobody, world_dir

# -- encodings and line ends -----------------------------------------------------------------

_ENCODINGS = {
    "utf-8": lambda text: text.encode(),
    "utf-8-bom": lambda text: codecs.BOM_UTF8 + text.encode(),
    "utf-16le-bom": lambda text: codecs.BOM_UTF16_LE + text.encode("utf-16-le"),
    "utf-16be-bom": lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
    "utf-16le": lambda text: text.encode("utf-16-le"),
}
_LINE_ENDS = {"lf": "\n", "crlf": "\r\n", "cr": "\r", "cr-cr-lf": "\r\r\n"}


def _figures(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    report = analyze(read_gfxinfo(path))
    return report.packages.drop(columns="file"), report.gaps.drop(columns="file")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(["old", "new"]),
    frames=st.integers(1, 120),
    encoding=st.sampled_from(sorted(_ENCODINGS)),
    line_end=st.sampled_from(sorted(_LINE_ENDS)),
    gzipped=st.booleans(),
)
def test_every_encoding_and_line_end_reads_like_the_plain_twin(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    layout: str,
    frames: int,
    encoding: str,
    line_end: str,
    gzipped: bool,
) -> None:
    text, _ = synth_gfxinfo(np.random.default_rng(seed), ("com.a", "com.b"), frames, layout)
    folder = tmp_path_factory.mktemp("enc")
    plain = folder / "plain.txt"
    plain.write_bytes(text.encode())
    data = _ENCODINGS[encoding](text.replace("\n", _LINE_ENDS[line_end]))
    twin = folder / "twin.txt"
    twin.write_bytes(gzip.compress(data) if gzipped else data)
    for got, expected in zip(_figures(twin), _figures(plain), strict=True):
        pd.testing.assert_frame_equal(got, expected)


# -- output options and unreadable paths --------------------------------------------------------


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["analyze", "gfxinfo", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _dump(tmp_path: Path, name: str = "dump.txt", line_end: str = "\n") -> Path:
    text, _ = synth_gfxinfo(np.random.default_rng(4), ("com.a",), 80, "new")
    path = tmp_path / name
    path.write_bytes(text.replace("\n", line_end).encode())
    return path


def test_cr_only_file_with_plot_draws_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _main(capsys, str(_dump(tmp_path, line_end="\r")), "--plot", str(tmp_path))
    assert code == 0, err
    assert "com.a" in out
    for name in ("frame_duration_cdf", "slow_frame_stages", "slow_frame_gaps"):
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_with_no_per_frame_rows_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary_only = tmp_path / "summary.txt"
    summary_only.write_text(
        "** Graphics info for pid 7 [com.idle] **\nTotal frames rendered: 3\n"
        "Janky frames: 1 (33.33%)\n"
    )
    plots, csv = tmp_path / "png", tmp_path / "csv"
    code, _, err = _main(capsys, str(summary_only), "--plot", str(plots), "--csv", str(csv))
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "--plot" in err and "nothing to plot" in err
    assert list(plots.iterdir()) == [] and list(csv.iterdir()) == []


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_output_folder_is_checked_before_the_input_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the input was read before the output folder was checked")

    monkeypatch.setattr(gfx, "read_gfxinfo", never)
    not_a_folder = tmp_path / "taken"
    not_a_folder.write_text("a file, not a folder")
    code, _, err = _main(capsys, str(_dump(tmp_path)), option, str(not_a_folder))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert option in err and str(not_a_folder) in err
    assert not_a_folder.read_text() == "a file, not a folder"


_AS_NOBODY = """
import contextlib, io, json, sys
from mqoe.cli.main import main
results = []
for argv in json.loads(sys.argv[1] if len(sys.argv) > 1 else {cases!r}):
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    results.append([code, errors.getvalue()])
print(json.dumps(results))
"""


def test_unreadable_paths_are_one_line_naming_the_path() -> None:
    with world_dir() as root:
        good = _dump(root, "good.txt")
        good.chmod(0o644)
        locked = root / "locked"
        locked.mkdir()
        inside = _dump(locked, "inside.txt")
        locked.chmod(0o000)
        secret = _dump(root, "secret.txt")
        secret.chmod(0o000)
        folder = root / "folder"
        folder.mkdir()
        folder.chmod(0o000)
        out = locked / "out"
        cases = [["analyze", "gfxinfo", str(good), str(t)] for t in (inside, secret, folder)]
        cases.append(["analyze", "gfxinfo", str(good), "--csv", str(out)])
        result = run_python_as_nobody(_AS_NOBODY.format(cases=json.dumps(cases)))  # one start-up
        assert result.returncode == 0, result.stderr
        named = [inside, secret, folder, out]
        for (code, err), path in zip(json.loads(result.stdout), named, strict=True):
            assert code == 2 and "Traceback" not in err, err
            assert len(err.strip().splitlines()) == 1 and str(path) in err, err
        assert "--csv" in json.loads(result.stdout)[-1][1]


# -- big input: memory that does not grow with the file --------------------------------------


def _repeated_dump(path: Path, sections: int) -> int:
    """``sections`` dumps of one process, 2000 frames each, timestamps shifted so that no
    frame repeats. Returns the number of frames written."""
    text, _ = synth_gfxinfo(np.random.default_rng(21), ("com.big",), 2000, "new")
    head, _, rest = text.partition("** Graphics info")
    timestamp = re.compile(r"(?<![0-9])[0-9]{13,16}(?![0-9])")
    with path.open("w") as out:
        out.write(head)
        for k in range(sections):
            shift = k * 10**12  # 1000 s later: a later dump of the same process
            shifted = timestamp.sub(lambda m, s=shift: str(int(m.group()) + s), rest)
            out.write("** Graphics info" + shifted)
    return 2000 * sections


def _peak_bytes(path: Path) -> int:
    tracemalloc.start()
    try:
        report = analyze(read_gfxinfo(path))
        json.dumps(report.to_json())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_loader_memory_grows_only_by_the_compact_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gfxinfo_parse, "_BATCH_ROWS", 2048)  # bounded batches, small here
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    rows_small = _repeated_dump(small, 4)
    rows_large = _repeated_dump(large, 20)
    assert large.stat().st_size > 4 * 2**20
    extra = _peak_bytes(large) - _peak_bytes(small)
    per_row = extra / (rows_large - rows_small)
    # the compact columns: ~40 bytes a row kept, plus the analysis' sort keys while it runs
    assert per_row < 160, f"{per_row:.0f} bytes per row"


def test_large_dump_writer_is_fast_realistic_and_close_to_the_size_asked(tmp_path: Path) -> None:
    path = tmp_path / "large.txt"
    start = time.perf_counter()
    write_large_dump(path, 4_000_000, seed=3)
    elapsed = time.perf_counter() - start
    size = path.stat().st_size
    assert abs(size - 4_000_000) < 0.02 * 4_000_000
    assert elapsed < 5.0, f"{size / elapsed / 1e6:.0f} MB/s"
    text = path.read_text()
    assert f"\n{','.join(gfx.LAYOUT_ANDROID14)},\n" in text
    data = read_gfxinfo(path)
    report = analyze(data)
    dumps = int(data.sections["sections"].sum())
    assert dumps > 50 and len(report.packages) == 1  # one app, dumped again and again
    row = report.packages.iloc[0]
    assert row["rows"] == 120 * dumps  # framestats: the 120 most recent frames each time
    assert data.warnings.duplicate_rows == 0  # later dumps are later frames
    assert report.windows["frames"].sum() == row["frames"] > 100 * dumps
    assert 0 < row["sr"] < row["frames"] and report.summaries["total_frames_rendered"].min() > 100


# -- fuzzing -----------------------------------------------------------------------------------


def _fuzz_seeds() -> list[bytes]:
    rng = np.random.default_rng(7)
    seeds = []
    for layout in ("old", "new", "android14"):
        text, _ = synth_gfxinfo(rng, ("com.a",), 12, layout, idle_packages=("com.idle",))
        seeds.append(text.encode())
    two = synth_gfxinfo(rng, ("com.b",), 10, "android14")[0]
    head, _, block = two.partition("---PROFILEDATA---")
    second = block.replace("MainActivity", "DialogActivity", 1)
    seeds.append((head + "---PROFILEDATA---" + block + "\n---PROFILEDATA---" + second).encode())
    seeds.append(
        b"** Graphics info for pid 31185 [com.instagram.android] **\n\nStats since: 5ns\n"
        b"Total frames rendered: 51\nJanky frames: 9 (17.65%)\n50th percentile: 7ms\n"
        b"Number Missed Vsync: 7\nHISTOGRAM: 5ms=6 6ms=14 300ms=1\n"
    )
    seeds.append(gzip.compress(seeds[1]))
    return seeds


def _cli_target(folder: Path) -> Any:
    """The pipeline `mqoe analyze gfxinfo FILE --json` runs (every other input with
    --skip-bad-lines, every tenth also with --csv): user errors escape as the CLI sees
    them."""
    from mqoe.cli import analyze_gfxinfo as cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    count = [0]

    def target(path: Path) -> None:
        count[0] += 1
        extra = ["--csv", str(folder / "csv")] if count[0] % 10 == 0 else []
        lenient = ["--skip-bad-lines"] if count[0] % 2 else []
        cli.run(parser.parse_args([str(path), "--json", *extra, *lenient]))

    return target


def test_fuzz_quick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    counts = fuzz(_cli_target(tmp_path), _fuzz_seeds(), tmp_path, QUICK_INPUTS, seed=11)
    assert counts["accepted"] > 0 and counts["user_errors"] > 0, counts


@pytest.mark.slow
def test_fuzz_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    counts = fuzz(_cli_target(tmp_path), _fuzz_seeds(), tmp_path, DEEP_INPUTS, seed=12)
    assert counts["accepted"] > 0 and counts["user_errors"] > 0, counts
