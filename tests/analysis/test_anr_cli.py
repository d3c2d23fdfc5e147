"""``mqoe analyze anr`` end to end on generated directories; the 50,000-event benchmark."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mqoe.cli import analyze_anr
from mqoe.errors import UserError
from mqoe.generators.anr.fleet import write_synth_dir

REAL_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "anr"


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    analyze_anr.add_arguments(parser)
    return analyze_anr.run(parser.parse_args(argv))


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    directory = tmp_path_factory.mktemp("anr")
    truth = write_synth_dir(directory, 120, seed=7, n_apps=8)
    return directory, truth


def test_json_output_matches_the_generators_truth(
    synth_dir: tuple[Path, pd.DataFrame], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, truth = synth_dir
    assert _run([str(directory), "--json", "--workers", "1"]) == 0
    payload = json.loads(capsys.readouterr().out)
    events = {Path(e["file"]).name: e for e in payload["events"]}
    assert len(events) == len(truth) == payload["files"]
    for row in truth.itertuples(index=False):
        event = events[Path(str(row.file)).name]
        assert event["family"] == row.family
        assert event["process"] == row.app
        assert ";".join(event["critical_threads"]) == row.critical_threads
        assert event["blocked_thread"] == ("android.fg" if row.watchdog else "main")
    sizes = [c["size"] for c in payload["clusters"]]
    assert sum(sizes) == len(truth) and sizes == sorted(sizes, reverse=True)
    by_cluster = pd.Series([e["cluster"] for e in payload["events"]]).value_counts()
    assert {c["id"]: c["size"] for c in payload["clusters"]} == by_cluster.to_dict()
    assert all(c["representative"] for c in payload["clusters"])
    anrs = truth[~truth["watchdog"]]  # watchdog kills are SNRs: not in the per-app fit
    counts = anrs["app"].value_counts().sort_values(ascending=False).to_numpy()
    slope = np.polyfit(np.log(np.arange(1, len(counts) + 1)), np.log(counts), 1)[0]
    assert payload["zipf"]["a"] == pytest.approx(-slope)
    assert payload["bad_files"] == [] and payload["parse_warnings"] == {}


def test_exact_flag_gives_the_same_clusters(
    synth_dir: tuple[Path, pd.DataFrame], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, _ = synth_dir
    labels = []
    for extra in ([], ["--exact"]):
        assert _run([str(directory), "--json", "--workers", "2", *extra]) == 0
        payload = json.loads(capsys.readouterr().out)
        labels.append([e["cluster"] for e in payload["events"]])
    assert labels[0] == labels[1]


def test_csv_plot_and_text_outputs(
    synth_dir: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory, truth = synth_dir
    out = tmp_path / "out"
    assert _run([str(directory), "--csv", str(out), "--plot", str(out), "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert f"{len(truth)} ANR events" in text and "Zipf fit" in text
    events = pd.read_csv(out / "events.csv")
    assert len(events) == len(truth)
    clusters = pd.read_csv(out / "clusters.csv")
    assert clusters["size_events"].sum() == len(truth)
    apps = pd.read_csv(out / "apps.csv")
    assert apps["events"].sum() == (~truth["watchdog"]).sum()
    assert set(pd.read_csv(out / "zipf.csv").columns) == {"a", "b", "r2", "apps"}
    for name in ("cluster_sizes.png", "zipf.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left


def test_bad_file_is_a_user_error_or_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_synth_dir(tmp_path, 5, seed=1)
    bad = tmp_path / "notes.txt"
    bad.write_text("not a trace\n")
    with pytest.raises(UserError, match=r"notes\.txt.*not an ANR trace file"):
        _run([str(tmp_path), "--workers", "1"])
    assert _run([str(tmp_path), "--json", "--skip-bad-files", "--workers", "1"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["events"]) == 5
    assert [Path(b["file"]).name for b in payload["bad_files"]] == ["notes.txt"]


def test_garbage_and_bad_arguments_are_user_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "anr_garbage"
    garbage.write_bytes(bytes(range(256)) * 50)
    with pytest.raises(UserError, match=r"anr_garbage.*binary data"):
        _run([str(garbage)])
    with pytest.raises(UserError, match="no such file"):
        _run([str(tmp_path / "missing")])
    with pytest.raises(UserError, match="threshold"):
        _run([str(garbage), "--threshold", "1.5"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="no files"):
        _run([str(empty)])


def test_real_traces_one_event_per_file(capsys: pytest.CaptureFixture[str]) -> None:
    """Facts read off the six files by hand (see test_anr_real.py for the details)."""
    if not REAL_DATA.is_dir():
        pytest.skip(f"no real ANR traces in {REAL_DATA}")
    assert _run([str(REAL_DATA), "--json", "--workers", "1"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["files"] == 6 and payload["bad_files"] == []
    got = {
        Path(e["file"]).name: (
            e["process"],
            e["source"],
            e["blocked_thread"],
            tuple(e["critical_threads"]),
            e["family"],
            e["stacks_missing"],
            e["threads_without_stack"],
        )
        for e in payload["events"]
    }
    sentry = "io.sentry.samples.android"
    assert got == {
        "sentry__thread_dump.txt": (
            sentry, "anr_trace", "main", ("Thread-9",), "app_defect", False, 0
        ),
        "sentry__thread_dump_bad_data.txt": (
            "com.example.app:mainProcess", "anr_trace", "sysTid=12233", ("sysTid=12233",),
            "unknown", True, 498,
        ),
        "sentry__thread_dump_native_only.txt": (
            sentry, "anr_trace", "samples.android", ("samples.android",), "app_defect", False, 0
        ),
        "sentry__thread_dump_no_stacktrace.txt": (
            sentry, "anr_trace", "main", ("main",), "app_defect", False, 1
        ),
        "sentry__thread_dump_process_name_main.txt": (
            sentry, "anr_trace", sentry, (sentry,), "app_defect", False, 0
        ),
        "xcrash__tombstone_anr_arm64-v8a.txt": (
            "xcrash.sample", "xcrash_tombstone", "main", ("main",), "app_defect", False, 0
        ),
    }  # fmt: skip
    # Waiting Channels twins: 1 in the Android 13 dump, 2 in the native-only one; the two
    # tiny files stop before "----- end N -----".
    assert payload["parse_warnings"] == {"skipped_sections": 3, "truncated_sections": 2}
    assert _run([str(REAL_DATA), "--workers", "1"]) == 0
    err = capsys.readouterr().err
    missing = [line for line in err.splitlines() if line.startswith("stacks missing")]
    assert len(missing) == 1 and "1 of 6 events" in missing[0]
    assert "sentry__thread_dump_bad_data.txt" in missing[0]


@pytest.mark.slow
def test_fifty_thousand_events_under_two_minutes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole pipeline — parsing 50,000 files included — on 2 worker processes."""
    workers = 2
    data = tmp_path / "anr"
    try:
        truth = write_synth_dir(data, 50_000, seed=11, n_apps=200, workers=workers)
        os.sync()
        start = time.perf_counter()
        assert _run([str(data), "--json", "--workers", str(workers)]) == 0
        elapsed = time.perf_counter() - start
    finally:
        shutil.rmtree(data, ignore_errors=True)  # 1.5 GB: not left behind in pytest's tmp
    payload = json.loads(capsys.readouterr().out)
    with capsys.disabled():
        print(f"\n50,000 ANR files: {elapsed:.1f} s wall, {len(payload['clusters'])} clusters")
    assert elapsed < 120.0
    got = {Path(e["file"]).name: e["family"] for e in payload["events"]}
    want = dict(zip(truth["file"].map(lambda f: Path(f).name), truth["family"], strict=True))
    assert got == want
