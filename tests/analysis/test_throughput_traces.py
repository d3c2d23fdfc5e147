"""Throughput-trace and manifest parsers: hand-made files, errors by line, round trips."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.throughput_traces.model import MAHIMAHI_PACKET_BITS, ThroughputTrace
from mqoe.analysis.throughput_traces.read import load_manifest, load_trace
from mqoe.analysis.throughput_traces.write import write_trace
from mqoe.errors import InputFileError, UserError
from mqoe.generators.throughput_traces import synthetic_manifest

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "network-traces"


def _write(tmp_path: Path, text: str, name: str = "trace.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(path: Path, **kwargs: object) -> InputFileError:
    with pytest.raises(InputFileError) as info:
        load_trace(path, **kwargs)  # type: ignore[arg-type]
    return info.value


# -- Sabre JSON -------------------------------------------------------------------------


def test_sabre_json_segments_are_read_in_order(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[{"duration_ms": 1000, "bandwidth_kbps": 1500, "latency_ms": 100},\n'
        ' {"duration_ms": 500, "bandwidth_kbps": 0, "latency_ms": 80}]\n',
        "walk.json",
    )
    trace = load_trace(path)
    assert trace.name == "walk"
    assert trace.duration_ms.tolist() == [1000.0, 500.0]
    assert trace.bandwidth_kbps.tolist() == [1500.0, 0.0]
    assert trace.latency_ms.tolist() == [100.0, 80.0]
    assert trace.period_ms == 1500.0
    assert trace.bits_per_period == 1_500_000.0
    assert trace.mean_kbps == 1000.0
    assert trace.duration_ms.dtype == np.float64


def test_sabre_entries_without_latency_take_the_parameter(tmp_path: Path) -> None:
    path = _write(tmp_path, '[{"duration_ms": 10, "bandwidth_kbps": 5}]', "t.json")
    assert load_trace(path, latency_ms=40.0).latency_ms.tolist() == [40.0]


def test_bad_json_names_the_line_of_the_syntax_error(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[\n {"duration_ms": 1000, "bandwidth_kbps": 10, "latency_ms": 1},\n'
        ' {"duration_ms": 1000, "bandwidth_kbps": , "latency_ms": 1}\n]\n',
        "bad.json",
    )
    error = _error(path)
    assert error.line == 3
    assert str(error).startswith(f"{path}:3: invalid JSON")


def test_negative_bandwidth_names_the_segment_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[\n {"duration_ms": 1000, "bandwidth_kbps": 10, "latency_ms": 1},\n\n'
        ' {"duration_ms": 1000, "bandwidth_kbps": -5, "latency_ms": 1}\n]\n',
        "neg.json",
    )
    error = _error(path)
    assert error.line == 4
    assert "segment 1: bandwidth_kbps must be >= 0" in str(error)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[]", "empty trace"),
        ('{"duration_ms": 1}', "expected a JSON list"),
        ('[{"duration_ms": 0, "bandwidth_kbps": 1}]', "duration_ms must be > 0"),
        ('[{"duration_ms": 5, "bandwidth_kbps": "fast"}]', "expected {"),
        ('[{"duration_ms": 5, "bandwidth_kbps": true}]', "expected {"),
        ('[{"duration_ms": 5, "bandwidth_kbps": NaN}]', "expected {"),
        ("[1, 2]", "expected {"),
    ],
)
def test_malformed_sabre_traces_are_input_errors(tmp_path: Path, text: str, fragment: str) -> None:
    assert fragment in str(_error(_write(tmp_path, text, "x.json")))


# -- Mahimahi ---------------------------------------------------------------------------


def test_mahimahi_packets_are_binned_into_bandwidth(tmp_path: Path) -> None:
    # Period 250 ms → bins of 100, 100, 50 ms holding 3, 1, 1 packets of 12 kbit.
    path = _write(tmp_path, "5\n5\n20\n120\n250\n", "link.down")
    trace = load_trace(path, latency_ms=30.0)
    assert trace.duration_ms.tolist() == [100.0, 100.0, 50.0]
    assert trace.bandwidth_kbps.tolist() == [360.0, 120.0, 240.0]
    assert trace.latency_ms.tolist() == [30.0, 30.0, 30.0]
    assert trace.bits_per_period == 5 * MAHIMAHI_PACKET_BITS


def test_mahimahi_bin_width_is_a_parameter(tmp_path: Path) -> None:
    path = _write(tmp_path, "0\n1\n2\n3\n", "x.up")  # 4 packets in a 3 ms loop
    trace = load_trace(path, bin_ms=1.0)
    assert trace.duration_ms.tolist() == [1.0, 1.0, 1.0]
    # Packet at 3 = the period's end goes into the last bin, with the one at 2.
    assert trace.bandwidth_kbps.tolist() == [12_000.0, 12_000.0, 24_000.0]


def test_one_packet_per_millisecond_is_twelve_megabit(tmp_path: Path) -> None:
    path = _write(tmp_path, "\n".join(str(t) for t in range(1, 1001)) + "\n")
    assert load_trace(path, fmt="mahimahi").mean_kbps == pytest.approx(12_000.0)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("1\n2\n12.5\n", 3, "expected one integer millisecond timestamp"),
        ("10\n20\n15\n30\n", 3, "must not decrease (15 after 20)"),
        ("10\n20 30\n", 2, "expected one integer"),
        ("10\n-20\n", 2, "expected one integer"),
    ],
)
def test_bad_mahimahi_lines_are_named(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    error = _error(_write(tmp_path, text))
    assert error.line == line
    assert fragment in str(error)


def test_mahimahi_trace_of_zero_length_is_refused(tmp_path: Path) -> None:
    assert "non-zero time" in str(_error(_write(tmp_path, "0\n0\n")))


# -- time_s throughput_mbps -------------------------------------------------------------


def test_text_values_hold_since_the_previous_time_comments_and_commas_allowed(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, "# cooked trace\n0 1.5\n1,2.0  # comma works\n\n3\t0.5\n")
    trace = load_trace(path, latency_ms=20.0)
    assert trace.duration_ms.tolist() == [1000.0, 2000.0]  # the first line marks the start
    assert trace.bandwidth_kbps.tolist() == [2000.0, 500.0]
    assert trace.latency_ms.tolist() == [20.0, 20.0]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("0 1\n1 2\n2 3 4\n", 3, "expected 2 columns"),
        ("0 1\n1 fast\n", 2, "expected two numbers"),
        ("0 1\n1 2\n0.5 3\n", 3, "time must not go back"),
        ("0 1\n1 -2\n", 2, "throughput must be >= 0"),
        ("0 1\n1 inf\n", 2, "finite"),
    ],
)
def test_bad_text_lines_are_named(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    error = _error(_write(tmp_path, text))
    assert error.line == line
    assert f":{line}: " in str(error)
    assert fragment in str(error)


def test_one_text_line_has_no_step_length(tmp_path: Path) -> None:
    assert "at least two lines" in str(_error(_write(tmp_path, "0 1.5\n")))


# -- detection and file-level errors ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"), [("", "empty"), ("  \n\n", "empty"), ("# only\n", "only comments")]
)
def test_empty_files_are_input_errors(tmp_path: Path, text: str, fragment: str) -> None:
    assert fragment in str(_error(_write(tmp_path, text)))


def test_unknown_layouts_are_named_by_line(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "# header\n1 2 3\n"))
    assert error.line == 2
    assert "unknown trace format" in str(error)


def test_a_forced_format_parses_as_that_format(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "10\n20\n"), fmt="text")
    assert error.line == 1 and "expected 2 columns" in str(error)


def test_missing_directory_and_binary_files_are_input_errors(tmp_path: Path) -> None:
    assert "no such file" in str(_error(tmp_path / "absent.json"))
    assert isinstance(_error(tmp_path), InputFileError)
    binary = tmp_path / "blob"
    binary.write_bytes(b"\x00\x81\xff\x07\x9c")
    error = _error(binary)
    assert (error.path, error.line) == (str(binary), 1)


def test_unknown_format_names_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown trace format 'pcap'"):
        load_trace(_write(tmp_path, "1\n"), fmt="pcap")


# -- manifests --------------------------------------------------------------------------


def test_manifest_gives_segment_length_ladder_and_sizes(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        json.dumps(
            {
                "segment_duration_ms": 4000,
                "bitrates_kbps": [300, 750],
                "segment_sizes_bits": [[1_200_000, 3_000_000], [1_100_000, 2_900_000]],
            }
        ),
        "m.json",
    )
    manifest = load_manifest(path)
    assert manifest.segment_s == 4.0
    assert manifest.bitrates_kbps == (300.0, 750.0)
    assert manifest.n_segments == 2 and manifest.duration_s == 8.0
    assert manifest.segment_sizes_bits.dtype == np.int64
    assert manifest.segment_sizes_bits.tolist() == [[1_200_000, 3_000_000], [1_100_000, 2_900_000]]


def test_a_short_manifest_row_names_its_line(tmp_path: Path) -> None:
    text = (
        '{"segment_duration_ms": 2000, "bitrates_kbps": [100, 200],\n'
        ' "segment_sizes_bits": [\n  [1, 2],\n  [3, 4],\n  [5]\n ]}\n'
    )
    with pytest.raises(InputFileError, match=r"segment_sizes_bits\[2\]") as info:
        load_manifest(_write(tmp_path, text, "m.json"))
    assert info.value.line == 5


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"segment_duration_ms": 1000, "bitrates_kbps": [1]}, "lacks segment_sizes_bits"),
        (
            {"segment_duration_ms": 1000, "bitrates_kbps": [2, 1], "segment_sizes_bits": [[1, 1]]},
            "strictly ascending",
        ),
        (
            {"segment_duration_ms": -1, "bitrates_kbps": [1], "segment_sizes_bits": [[1]]},
            "segment_duration_ms must be a positive number",
        ),
        (
            {"segment_duration_ms": 1000, "bitrates_kbps": [1], "segment_sizes_bits": [[0]]},
            "positive sizes",
        ),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_malformed_manifests_are_input_errors(tmp_path: Path, data: object, fragment: str) -> None:
    with pytest.raises(InputFileError, match=fragment):
        load_manifest(_write(tmp_path, json.dumps(data), "m.json"))


def test_synthetic_manifest_sizes_are_rate_times_duration() -> None:
    manifest = synthetic_manifest([235, 1750], 4.0, 3)
    assert manifest.segment_sizes_bits.tolist() == [[940_000, 7_000_000]] * 3
    assert manifest.segment_s == 4.0


# -- round trips and garbage ------------------------------------------------------------


@st.composite
def traces(draw: st.DrawFn) -> ThroughputTrace:
    n = draw(st.integers(1, 12))
    steps = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    rates = draw(
        st.lists(
            st.one_of(st.just(0.0), st.floats(50.0, 50_000.0, allow_nan=False)),
            min_size=n,
            max_size=n,
        )
    )
    if sum(s * r for s, r in zip(steps, rates, strict=True)) < 5 * MAHIMAHI_PACKET_BITS / 100:
        rates[0] = 5_000.0
    latency = draw(st.integers(0, 300))
    return ThroughputTrace(
        "gen", np.array(steps) * 100.0, np.array(rates), np.full(n, float(latency))
    )


_settings = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_settings
@given(trace=traces())
def test_sabre_and_text_round_trips_keep_the_bandwidth(
    tmp_path: Path, trace: ThroughputTrace
) -> None:
    write_trace(trace, tmp_path / "t.json", "sabre")
    again = load_trace(tmp_path / "t.json")
    assert again.duration_ms.tolist() == trace.duration_ms.tolist()
    assert again.bandwidth_kbps.tolist() == trace.bandwidth_kbps.tolist()
    assert again.latency_ms.tolist() == trace.latency_ms.tolist()

    write_trace(trace, tmp_path / "t.txt", "text")
    text = load_trace(tmp_path / "t.txt", latency_ms=7.0)
    np.testing.assert_allclose(text.bandwidth_kbps, trace.bandwidth_kbps, rtol=1e-12)
    np.testing.assert_allclose(text.duration_ms, trace.duration_ms, rtol=1e-9)
    assert (text.latency_ms == 7.0).all()


@_settings
@given(trace=traces())
def test_mahimahi_round_trip_keeps_each_bin_within_two_packets(
    tmp_path: Path, trace: ThroughputTrace
) -> None:
    write_trace(trace, tmp_path / "t.down", "mahimahi")
    again = load_trace(tmp_path / "t.down")  # detected by content, 100 ms bins
    expected = np.repeat(trace.bandwidth_kbps, (trace.duration_ms // 100).astype(int))
    assert again.period_ms == trace.period_ms
    assert len(again.bandwidth_kbps) == len(expected)
    per_packet_kbps = MAHIMAHI_PACKET_BITS / 100.0  # one packet more or less in a 100 ms bin
    assert np.abs(again.bandwidth_kbps - expected).max() <= 2 * per_packet_kbps + 1e-9
    assert abs(again.bits_per_period - trace.bits_per_period) <= MAHIMAHI_PACKET_BITS


_GARBAGE_ALPHABET = '0123456789 ,.#\n\t-+e[]{}:"_abdnrstu'


@_settings
@given(
    data=st.one_of(
        st.binary(max_size=200),
        st.text(alphabet=_GARBAGE_ALPHABET, max_size=200).map(str.encode),
        st.text(max_size=100).map(lambda s: s.encode("utf-8", "surrogatepass")),
    ),
    fmt=st.sampled_from(["auto", "sabre", "mahimahi", "text"]),
)
def test_garbage_is_a_user_error_or_a_valid_trace(tmp_path: Path, data: bytes, fmt: str) -> None:
    path = tmp_path / "garbage"
    path.write_bytes(data)
    try:
        trace = load_trace(path, fmt=fmt)
    except UserError:
        return
    assert (trace.duration_ms > 0).all() and (trace.bandwidth_kbps >= 0).all()
    assert np.isfinite(trace.duration_ms).all() and np.isfinite(trace.bandwidth_kbps).all()


@_settings
@given(data=st.text(alphabet=_GARBAGE_ALPHABET + "gizemk", max_size=300))
def test_garbage_manifests_are_user_errors(tmp_path: Path, data: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(data, encoding="utf-8")
    try:
        manifest = load_manifest(path)
    except UserError:
        return
    assert manifest.n_segments >= 1


# -- the real files ---------------------------------------------------------------------


def _real(folder: str) -> list[Path]:
    if not REAL.is_dir():
        pytest.skip(f"real traces not present at {REAL}")
    return sorted((REAL / folder).glob("*.json"))


@pytest.mark.parametrize(
    ("folder", "latency_ms"), [("hsdpa-3g", 100.0), ("lte-4g", 20.0), ("fcc-sd", 20.0)]
)
def test_the_shipped_real_traces_parse(folder: str, latency_ms: float) -> None:
    files = _real(folder)
    assert files
    for path in files:
        trace = load_trace(path)
        raw = json.loads(path.read_text())
        assert trace.bandwidth_kbps.tolist() == [float(e["bandwidth_kbps"]) for e in raw]
        assert (trace.latency_ms == latency_ms).all()
        assert trace.mean_kbps > 0
    if folder == "fcc-sd":
        assert all(load_trace(p).period_ms == 180_000 for p in files)


def test_the_shipped_manifest_parses() -> None:
    _real("hsdpa-3g")
    manifest = load_manifest(REAL / "manifest-bbb.json")
    assert manifest.segment_s == 3.0
    assert manifest.n_segments == 199
    assert len(manifest.ladder) == 10
    assert manifest.bitrates_kbps[0] == 230 and manifest.bitrates_kbps[-1] == 6000
    assert manifest.segment_sizes_bits[0, 0] == 886_360
