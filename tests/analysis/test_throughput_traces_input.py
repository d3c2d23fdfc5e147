"""Throughput traces as users' machines write them: any encoding and line end, unreadable
paths, and mutated files fed to the trace-driven mode (only one-line user errors escape)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.throughput_traces.model import ThroughputTrace
from mqoe.analysis.throughput_traces.read import load_trace
from mqoe.device.profiles import load_profile
from mqoe.errors import InputFileError
from mqoe.workloads.runner import run_scenario
from tests.fuzzing import DEEP_INPUTS, QUICK_INPUTS, fuzz
from tests.text_variants import VARIANTS
from tests.unprivileged import run_python_as_nobody, world_dir

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
COOKED = SHARED / "real" / "throughput"
SABRE = SHARED / "network-traces"


def _same(a: ThroughputTrace, b: ThroughputTrace) -> None:
    assert a.duration_ms.tolist() == b.duration_ms.tolist()
    assert a.bandwidth_kbps.tolist() == b.bandwidth_kbps.tolist()
    assert a.latency_ms.tolist() == b.latency_ms.tolist()


def _every_variant_reads_like_the_plain_twin(folder: Path, text: str, suffix: str) -> None:
    plain = folder / f"plain{suffix}"
    plain.write_bytes(text.encode("utf-8"))
    expected = load_trace(plain, latency_ms=5.0)
    for number, encode in enumerate(VARIANTS.values()):
        variant = folder / f"variant{number}{suffix}"
        variant.write_bytes(encode(text))
        _same(load_trace(variant, latency_ms=5.0), expected)


# -- generated files of each format -------------------------------------------------------

_mbps = st.one_of(st.just(0.0), st.floats(0.01, 500.0), st.sampled_from([1e-3, 2.5e1, 1.5e2]))


@st.composite
def cooked_texts(draw: st.DrawFn) -> str:
    n = draw(st.integers(2, 25))
    start = draw(st.sampled_from([0.0, 0.474, 3.0]))
    steps = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.4564]), min_size=n, max_size=n))
    times = np.cumsum([start, *steps[1:]]).tolist()
    rates = draw(st.lists(_mbps, min_size=n, max_size=n))
    rates[-1] = 5.0  # some data, so every draw is a valid trace
    times[-1] = times[-2] + 1.0
    sep = draw(st.sampled_from(["\t", " ", "  ", ",", " \t"]))
    body = "".join(f"{t!r}{sep}{r!r}\n" for t, r in zip(times, rates, strict=True))
    return (
        draw(st.sampled_from(["", "# cooked trace\n"])) + body + draw(st.sampled_from(["", "\n"]))
    )


@st.composite
def mahimahi_texts(draw: st.DrawFn) -> str:
    stamps = sorted(draw(st.lists(st.integers(0, 5000), min_size=1, max_size=60)))
    stamps[-1] = max(stamps[-1], 1)
    return "".join(f"{s}\n" for s in stamps)


@st.composite
def sabre_texts(draw: st.DrawFn) -> str:
    n = draw(st.integers(1, 8))
    rows = [
        {
            "duration_ms": draw(st.integers(1, 5000)),
            "bandwidth_kbps": draw(st.integers(1, 50_000)),
            "latency_ms": draw(st.integers(0, 300)),
        }
        for _ in range(n)
    ]
    return json.dumps(rows, indent=draw(st.sampled_from([None, 1, 2]))) + "\n"


_settings = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_settings
@given(text=st.one_of(cooked_texts(), mahimahi_texts(), sabre_texts()))
def test_every_encoding_and_line_end_gives_the_plain_twins_numbers(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    _every_variant_reads_like_the_plain_twin(tmp_path_factory.mktemp("enc"), text, ".txt")


@_settings
@given(text=st.one_of(cooked_texts(), mahimahi_texts()), bad_at=st.integers(0, 30))
def test_a_bad_line_has_the_same_number_whatever_the_line_ends(
    tmp_path_factory: pytest.TempPathFactory, text: str, bad_at: int
) -> None:
    lines = text.splitlines()
    lines.insert(min(bad_at, len(lines)), "1 2 three")
    text = "\n".join(lines) + "\n"
    folder = tmp_path_factory.mktemp("bad")
    plain = folder / "plain.txt"
    plain.write_bytes(text.encode("utf-8"))
    with pytest.raises(InputFileError) as expected:
        load_trace(plain)
    assert expected.value.line is not None
    for number, encode in enumerate(VARIANTS.values()):
        variant = folder / f"v{number}.txt"
        variant.write_bytes(encode(text))
        with pytest.raises(InputFileError) as got:
            load_trace(variant)
        assert (got.value.line, got.value.what) == (expected.value.line, expected.value.what)


def test_gzip_and_corrupt_gzip_traces(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "trace.txt.gz"
    path.write_bytes(gzip.compress(b"0 1\n1 2\n"))
    assert load_trace(path).bandwidth_kbps.tolist() == [2000.0]
    data = bytearray(gzip.compress(b"0 1\n1 2\n" * 500))
    data[30] ^= 0xFF  # a damaged deflate stream, not just a short one
    path.write_bytes(bytes(data))
    with pytest.raises(InputFileError) as info:
        load_trace(path)
    assert info.value.path == str(path)


# -- the real files, re-encoded -----------------------------------------------------------


def test_real_cooked_traces_re_encoded_give_the_same_numbers(tmp_path: Path) -> None:
    if not COOKED.is_dir():
        pytest.skip(f"real cooked traces not present at {COOKED}")
    files = sorted(p for p in COOKED.iterdir() if p.is_file())
    assert files
    for index, path in enumerate(files):
        folder = tmp_path / str(index)
        folder.mkdir()
        _every_variant_reads_like_the_plain_twin(folder, path.read_text(encoding="utf-8"), "")


def test_real_sabre_traces_re_encoded_give_the_same_numbers(tmp_path: Path) -> None:
    if not SABRE.is_dir():
        pytest.skip(f"Sabre traces not present at {SABRE}")
    files = [sorted((SABRE / folder).glob("*.json"))[0] for folder in ("hsdpa-3g", "fcc-sd")]
    for index, path in enumerate(files):
        folder = tmp_path / str(index)
        folder.mkdir()
        _every_variant_reads_like_the_plain_twin(folder, path.read_text(encoding="utf-8"), ".json")


# -- unreadable paths, as a user who cannot read them ----------------------------------


_CLI_SCRIPT = """
import sys
from mqoe.cli.main import main
for args in {calls!r}:
    code = main(args)
    sys.stderr.flush()
    print(code, flush=True)
"""


def test_unreadable_traces_are_one_line_naming_them() -> None:
    with world_dir() as root:
        locked = root / "locked"  # a folder nobody may enter, holding a trace
        locked.mkdir()
        (locked / "trace.txt").write_text("0 1\n1 2\n")
        locked.chmod(0o000)
        secret = root / "secret.txt"  # a trace nobody may read
        secret.write_text("0 1\n1 2\n")
        secret.chmod(0o000)
        folder = root / "traces"  # a folder given where a file is expected
        folder.mkdir(mode=0o000)
        results = root / "results"  # where nobody may store the runs
        results.mkdir()
        results.chmod(0o777)
        traces = [locked / "trace.txt", secret, folder]
        calls = [
            ["run", "trace-abr", "--set", f"trace={t}", "session_s=8", "--out", str(results)]
            for t in traces
        ]
        # One interpreter for the three runs: starting one as nobody costs seconds.
        result = run_python_as_nobody(_CLI_SCRIPT.format(calls=calls))
        assert "Traceback" not in result.stderr, result.stderr
        assert result.stdout.split() == ["2", "2", "2"]
        lines = result.stderr.splitlines()
        assert len(lines) == 3, result.stderr
        reasons = ["permission denied", "permission denied", "is a folder"]
        for trace, reason, line in zip(traces, reasons, lines, strict=True):
            assert line.startswith(f"mqoe: error: {trace}: {reason}"), line


# -- fuzzing through the trace-driven mode ---------------------------------------------------


def _seeds(strategy: st.SearchStrategy[str], n: int = 8) -> list[bytes]:
    seeds: list[bytes] = []

    @settings(max_examples=n, database=None, deadline=None, derandomize=True)
    @given(text=strategy)
    def collect(text: str) -> None:
        seeds.append(text.encode("utf-8"))

    collect()
    return seeds


def _trace_mode(path: Path) -> None:
    """What ``mqoe run trace-abr --set trace=PATH`` does, without storing the run."""
    record = run_scenario(
        "trace-abr", load_profile("nokia-1"), 0, {"trace": str(path), "session_s": "16"}
    )
    assert len(record.tables["segments"]) == 4


_FORMATS = {
    "cooked": (cooked_texts(), ""),
    "mahimahi": (mahimahi_texts(), ".down"),
    "sabre": (sabre_texts(), ".json"),
}


@pytest.mark.parametrize("fmt", sorted(_FORMATS))
def test_fuzzed_traces_give_a_session_or_one_user_error(tmp_path: Path, fmt: str) -> None:
    strategy, suffix = _FORMATS[fmt]
    counts = fuzz(_trace_mode, _seeds(strategy), tmp_path, QUICK_INPUTS, suffix=suffix)
    assert counts["accepted"] > 0 and counts["user_errors"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(_FORMATS))
def test_deep_fuzzed_traces_give_a_session_or_one_user_error(tmp_path: Path, fmt: str) -> None:
    strategy, suffix = _FORMATS[fmt]
    seeds = _seeds(strategy, 30)
    counts = fuzz(_trace_mode, seeds, tmp_path, DEEP_INPUTS, seed=1, suffix=suffix)
    assert counts["accepted"] > 0 and counts["user_errors"] > 0


def test_fuzzing_real_cooked_traces(tmp_path: Path) -> None:
    if not COOKED.is_dir():
        pytest.skip(f"real cooked traces not present at {COOKED}")
    seeds = [p.read_bytes() for p in sorted(COOKED.iterdir()) if p.is_file()]
    counts = fuzz(_trace_mode, seeds, tmp_path, QUICK_INPUTS // 3, seed=2)
    assert counts["accepted"] > 0 and counts["user_errors"] > 0
