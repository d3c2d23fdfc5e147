"""Pensieve's "cooked" throughput traces (``time_s throughput_mbps`` per line): what the
format means, what real files hold, and the trace-driven mode running on each of them."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.analysis.throughput_traces.read import load_trace
from mqoe.cli.main import main
from mqoe.device.profiles import load_profile
from mqoe.errors import InputFileError
from mqoe.workloads.runner import run_scenario

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
COOKED = SHARED / "real" / "throughput"

# Hand-checked with awk over each file (n = lines, duration = last time - first time,
# mean = sum over lines i >= 1 of mbps_i * (t_i - t_{i-1}) / duration: Pensieve's replay).
REAL_COOKED = {
    "cooked__bus.ljansbakken-oslo-report.2010-09-28_1407CEST.log": (449, 461.922, 2.763775070),
    "cooked__norway_bus_1": (266, 154.75999999, 2.911594825),
    "cooked__oboe_trace_0.txt": (49, 175.608, 2.633182156),
    "cooked__trace_10022_http---www.yahoo.com": (338, 535.012, 1.012414523),
    "cooked__trace_GZXjViWexCx3ojofXzKIvmlAFGvrVOJ1-B8MQTP9N0__1": (604, 1248.1420002, 2.020533811),
}


def _write(tmp_path: Path, text: str, name: str = "trace.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def _error(path: Path, **kwargs: object) -> InputFileError:
    with pytest.raises(InputFileError) as info:
        load_trace(path, **kwargs)  # type: ignore[arg-type]
    return info.value


def _cooked(name: str) -> Path:
    path = COOKED / name
    if not path.is_file():
        pytest.skip(f"real cooked trace not present at {path}")
    return path


def _plain_reading(path: Path) -> tuple[list[float], list[float]]:
    """Pensieve's load_trace.py, in a few lines: split each line, two floats."""
    times, mbps = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if parts:
            times.append(float(parts[0]))
            mbps.append(float(parts[1]))
    return times, mbps


# -- what a line means ------------------------------------------------------------------


def test_each_line_holds_its_throughput_since_the_previous_time(tmp_path: Path) -> None:
    # Pensieve's env.py replays cooked_bw[i] over cooked_time[i] - cooked_time[i-1]:
    # the first line only marks the start.
    trace = load_trace(_write(tmp_path, "0 9.0\n1 1.5\n3 2.0\n3.5 0.5\n"), latency_ms=20.0)
    assert trace.duration_ms.tolist() == [1000.0, 2000.0, 500.0]
    assert trace.bandwidth_kbps.tolist() == [1500.0, 2000.0, 500.0]
    assert trace.latency_ms.tolist() == [20.0, 20.0, 20.0]
    assert trace.period_ms == 3500.0


def test_times_need_not_start_at_zero(tmp_path: Path) -> None:
    shifted = load_trace(_write(tmp_path, "0.474 3.0\n1.474 2.0\n3.474 4.0\n", "late.txt"))
    plain = load_trace(_write(tmp_path, "0 3.0\n1 2.0\n3 4.0\n", "zero.txt"))
    np.testing.assert_allclose(shifted.duration_ms, plain.duration_ms, rtol=1e-12)
    assert shifted.bandwidth_kbps.tolist() == plain.bandwidth_kbps.tolist() == [2000.0, 4000.0]


def test_a_repeated_time_is_an_empty_interval(tmp_path: Path) -> None:
    # Pensieve carries nothing over a zero-length interval; the line's value is unused.
    trace = load_trace(_write(tmp_path, "0 1\n1 2\n1 7\n2 3\n"))
    assert trace.duration_ms.tolist() == [1000.0, 1000.0]
    assert trace.bandwidth_kbps.tolist() == [2000.0, 3000.0]


def test_tabs_blank_lines_scientific_notation_and_zero_rows_are_read(tmp_path: Path) -> None:
    text = "0.0\t1.5e0\n\n1.0\t  0\n2.0 \t 2.5E-1\n3e0\t0.0\n\n\n"
    trace = load_trace(_write(tmp_path, text))
    assert trace.duration_ms.tolist() == [1000.0, 1000.0, 1000.0]
    assert trace.bandwidth_kbps.tolist() == [0.0, 250.0, 0.0]
    assert trace.mean_kbps == pytest.approx(250.0 / 3)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("0 1\n1 2\n0.5 3\n", 3, "time must not go back (0.5 after 1)"),
        ("0 1\n1 2\n2 -0.1\n", 3, "throughput must be >= 0"),
        ("0 1\n1 nan\n", 2, "finite"),
        ("0 1\n1e400 2\n", 2, "finite"),
        ("0 1\n\n1 2 3\n", 3, "expected 2 columns"),
        ("0 1\n1 fast\n", 2, "expected two numbers"),
        ("0 1\n1.0.0 1\n", 2, "expected two numbers"),
        ("-1e308 1\n1e308 1\n", 2, "too long"),
    ],
)
def test_a_bad_cooked_line_is_named(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    path = _write(tmp_path, text)
    error = _error(path, fmt="text")
    assert (error.line, str(error).startswith(f"{path}:{line}: ")) == (line, True)
    assert fragment in error.what


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("0 1.5\n", "at least two lines"),
        ("2 1\n2 3\n\n", "lasts no time"),
        ("0 0\n1 0\n2 0\n", "carries no data"),
        ("0 1\n1 1e308\n", "too large"),
        ('[{"duration_ms": 5, "bandwidth_kbps": 0}]', "carries no data"),
        (
            '[{"duration_ms": 1e308, "bandwidth_kbps": 0}, {"duration_ms": 1e308,'
            ' "bandwidth_kbps": 0}, {"duration_ms": 1, "bandwidth_kbps": 1}]',
            "too long",
        ),
    ],
)
def test_a_trace_without_time_or_data_is_refused(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, text)
    error = _error(path)
    assert error.path == str(path)
    assert fragment in error.what


def test_the_trace_mode_names_a_file_that_carries_no_data(tmp_path: Path) -> None:
    path = _write(tmp_path, "0 0\n1 0\n")
    with pytest.raises(InputFileError) as info:
        run_scenario("trace-abr", load_profile("nokia-1"), 0, {"trace": str(path)})
    assert str(info.value) == f"{path}: the trace carries no data (every throughput is 0)"


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.4564, 5.0]), min_size=1, max_size=30),
    rates=st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 1000.0)), min_size=31, max_size=31),
    start=st.sampled_from([0.0, 0.474, 12.5, 1.3e9]),
)
def test_a_cooked_trace_replays_the_mean_pensieve_would_see(
    tmp_path_factory: pytest.TempPathFactory, steps: list[float], rates: list[float], start: float
) -> None:
    times = [start]
    for step in steps:
        times.append(times[-1] + step)
    rates = rates[: len(times)]
    carried = sum(r * (b - a) for a, b, r in zip(times, times[1:], rates[1:], strict=False))
    text = "".join(f"{t!r}\t{r!r}\n" for t, r in zip(times, rates, strict=False))
    path = _write(tmp_path_factory.mktemp("cooked"), text)
    if times[-1] == times[0] or carried == 0:
        with pytest.raises(InputFileError):
            load_trace(path)
        return
    trace = load_trace(path)
    assert len(trace.duration_ms) == sum(1 for a, b in itertools.pairwise(times) if b > a)
    assert trace.period_ms / 1000 == pytest.approx(times[-1] - times[0], rel=1e-9)
    assert trace.mean_kbps / 1000 == pytest.approx(carried / (times[-1] - times[0]), rel=1e-9)


# -- the real cooked traces ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REAL_COOKED))
def test_a_real_cooked_trace_has_its_samples_duration_and_mean(name: str) -> None:
    n_lines, duration_s, mean_mbps = REAL_COOKED[name]
    trace = load_trace(_cooked(name))
    assert len(trace.duration_ms) == n_lines - 1  # every interval has a length
    assert trace.period_ms / 1000.0 == pytest.approx(duration_s, rel=1e-9)
    assert trace.mean_kbps / 1000.0 == pytest.approx(mean_mbps, rel=1e-8)
    assert (trace.latency_ms == 0.0).all()


def test_every_real_cooked_trace_agrees_with_a_plain_reading() -> None:
    if not COOKED.is_dir():
        pytest.skip(f"real cooked traces not present at {COOKED}")
    files = sorted(p for p in COOKED.iterdir() if p.is_file())
    assert len(files) >= 5
    for path in files:
        times, mbps = _plain_reading(path)
        trace = load_trace(path, fmt="text")
        np.testing.assert_allclose(trace.duration_ms / 1000.0, np.diff(times), rtol=1e-9)
        np.testing.assert_allclose(trace.bandwidth_kbps / 1000.0, mbps[1:], rtol=1e-12)


def test_the_norway_report_log_holds_two_cooked_columns_not_the_raw_six() -> None:
    # Named after a raw Norway HSDPA log (6 columns), but it is the cooked conversion.
    path = _cooked("cooked__bus.ljansbakken-oslo-report.2010-09-28_1407CEST.log")
    widths = {len(line.split()) for line in path.read_text().splitlines() if line.strip()}
    assert widths == {2}
    assert load_trace(path).period_ms == pytest.approx(461_922.0)


@pytest.mark.parametrize("name", sorted(REAL_COOKED))
def test_a_short_trace_driven_session_runs_on_each_real_cooked_trace(name: str) -> None:
    path = _cooked(name)
    record = run_scenario(
        "trace-abr", load_profile("nokia-1"), 0, {"trace": str(path), "session_s": "40"}
    )
    table = record.tables["segments"]
    assert len(table) == 10  # 40 s of 4 s segments
    assert (table["download_end_s"] > table["download_start_s"]).all()
    assert np.isfinite(float(record.metrics["qoe_lin"]))


def test_the_command_line_runs_a_session_on_a_cooked_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _cooked("cooked__oboe_trace_0.txt")
    argv = ["run", "trace-abr", "--set", f"trace={path}", "session_s=20", "--out", str(tmp_path)]
    assert main([*argv, "--json"]) == 0
    assert '"segments": 5.0' in capsys.readouterr().out


def test_the_sabre_network_traces_still_load() -> None:
    folder = SHARED / "network-traces" / "hsdpa-3g"
    if not folder.is_dir():
        pytest.skip(f"Sabre traces not present at {folder}")
    for path in sorted(folder.glob("*.json")):
        assert load_trace(path).mean_kbps > 0
