"""Where the trace text is: both generations of systrace HTML report, a JS-escaped text,
base64 gzip trace-data blocks, ``atrace -z`` through adb's line-end conversion, and any
encoding or line end a shell gave the file — the same numbers as the plain text."""

from __future__ import annotations

import base64
import gzip
import zlib
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.systrace.model import SystraceTrace
from mqoe.analysis.systrace.parse import load_systrace, parse_systrace_text
from mqoe.analysis.systrace.read import js_unescape
from mqoe.errors import InputFileError
from mqoe.generators.systrace.containers import wrap_html
from mqoe.generators.systrace.trace import synth_systrace

TABLES = ("threads", "preemptions", "frames", "critical_path", "counters", "compositions")


@cache
def _synth(seed: int = 3, duration_s: float = 0.4) -> str:
    text, _ = synth_systrace(np.random.default_rng(seed), duration_s=duration_s)
    # A counter whose name holds a quote and a backslash, to check the JS escapes.
    return text + (
        "  com.example.app-2300  ( 2300) [001] ...1  9999.000001: "
        'tracing_mark_write: C|2300|say "hi" \\o/|7\n'
    )


def _same(a: SystraceTrace, b: SystraceTrace) -> None:
    for table in TABLES:
        pd.testing.assert_frame_equal(getattr(a, table), getattr(b, table))
    assert a.stats.contents() == b.stats.contents()


def _write(tmp_path: Path, data: str | bytes, name: str = "t.html") -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _perf_data_page(text: str, escape: bool = True) -> str:
    """The page of the older systrace.py: the trace in `var linuxPerfData = "…";`, each
    line ending in `\\n\\` (written here independently of the library's wrapper)."""
    if escape:
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    lines = "".join(f"{line}\\n\\\n" for line in text.splitlines())
    return (
        "<!DOCTYPE html>\n<html>\n<head><title>Android System Trace</title>\n"
        "<script>function reload(){if(linuxPerfData){importEvents([linuxPerfData])}}</script>"
        '\n</head>\n<body>\n  <script>\n  var linuxPerfData = "\\\n'
        + lines
        + '         \\n";\n  </script>\n</body>\n</html>\n'
    )


# -- systrace HTML reports --------------------------------------------------------------


def test_a_linux_perf_data_page_reads_like_its_text(tmp_path: Path) -> None:
    plain = parse_systrace_text(_synth())
    page = load_systrace(_write(tmp_path, _perf_data_page(_synth())))
    _same(page, plain)
    assert page.stats.container == "linuxPerfData HTML" and page.stats.html_js_blocks == 1
    assert 'say "hi" \\o/' in set(page.counters["name"])


def test_quotes_the_old_systrace_py_left_unescaped_do_not_end_the_string(tmp_path: Path) -> None:
    text = _synth().replace("\\", "/")  # a bare backslash would be an escape, in JS too
    plain = parse_systrace_text(text)
    _same(load_systrace(_write(tmp_path, _perf_data_page(text, escape=False))), plain)
    assert 'say "hi" /o/' in set(plain.counters["name"])


def test_the_library_wrapper_writes_such_a_page(tmp_path: Path) -> None:
    from mqoe.generators.systrace.containers import wrap_linux_perf_data

    plain = parse_systrace_text(_synth())
    _same(load_systrace(_write(tmp_path, wrap_linux_perf_data(_synth()))), plain)


def test_a_one_line_linux_perf_data_string(tmp_path: Path) -> None:
    lines = _synth().splitlines()[:40]
    literal = "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines)
    page = f'<html><body><script>var linuxPerfData = "{literal}\\n";</script></body></html>\n'
    trace = load_systrace(_write(tmp_path, page))
    assert trace.stats.events == parse_systrace_text("\n".join(lines)).stats.events > 30


def test_an_error_inside_a_linux_perf_data_string_names_the_page_line(tmp_path: Path) -> None:
    text = "\n".join(_synth().splitlines()[:30])
    bad = text.replace("prev_state=S ==>", "prev_state= ==>", 1)
    page = _perf_data_page(bad)
    line = next(i for i, x in enumerate(page.splitlines(), 1) if "prev_state= ==>" in x)
    with pytest.raises(InputFileError, match=rf"t\.html:{line}: expected sched_switch"):
        load_systrace(_write(tmp_path, page))


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("a\\nb", "a\nb"),
        ("tab\\there", "tab\there"),
        ('say \\"hi\\" it\\\'s', 'say "hi" it\'s'),
        ("back\\\\slash", "back\\slash"),
        ("\\x41\\u00e9\\u{1F600}", "Aé😀"),
        ("\\ud83d\\ude00", "😀"),  # a surrogate pair written as two escapes
        ("\\ud83d!", "\ufffd!"),  # a lone surrogate
        ("\\101\\0", "A\x00"),  # legacy octal
        ("\\q\\-", "q-"),  # any other escaped character is itself
        ("\\r\\b\\f\\v", "\r\b\f\v"),
    ],
)
def test_js_escapes_decode_as_javascript_does(literal: str, value: str) -> None:
    assert js_unescape(literal) == value


def test_a_js_escaped_text_file_reads_like_the_text(tmp_path: Path) -> None:
    # The body of a linuxPerfData string saved as a file (catapult keeps one like that).
    escaped = _synth().replace("\\", "\\\\").replace('"', '\\"')
    body = "".join(f"{line}\\n\\\n" for line in escaped.splitlines())
    trace = load_systrace(_write(tmp_path, body, "t.txt"))
    assert trace.stats.container == "JS-escaped text"
    _same(trace, parse_systrace_text(_synth()))


def test_a_base64_gzip_trace_data_block_is_inflated(tmp_path: Path) -> None:
    packed = base64.b64encode(gzip.compress(_synth().encode())).decode()
    rows = "\n".join(packed[i : i + 76] for i in range(0, len(packed), 76))
    page = wrap_html(rows + "\n")
    trace = load_systrace(_write(tmp_path, page))
    assert (trace.stats.html_gzip_blocks, trace.stats.html_json_blocks) == (1, 1)
    _same(trace, parse_systrace_text(_synth()))
    broken = wrap_html(rows[: len(rows) // 2] + "\n")
    with pytest.raises(InputFileError, match=r"t\.html:\d+: a base64 gzip trace-data block"):
        load_systrace(_write(tmp_path, broken))


def test_the_containers_found_are_named_outermost_first(tmp_path: Path) -> None:
    page = gzip.compress(_perf_data_page(_synth()).encode("utf-16"))
    trace = load_systrace(_write(tmp_path, page, "t.html.gz"))
    assert trace.stats.container == "gzip, linuxPerfData HTML"
    _same(trace, parse_systrace_text(_synth()))


def test_an_html_page_of_json_blocks_only_is_refused_with_a_reason(tmp_path: Path) -> None:
    page = '<html>\n<script class="trace-data" type="application/text">\n{"a": 1}\n</script>\n'
    with pytest.raises(InputFileError, match="only JSON trace data"):
        load_systrace(_write(tmp_path, page))


# -- atrace -z --------------------------------------------------------------------------


def test_atrace_z_after_a_preamble_and_through_adb_line_end_conversion(tmp_path: Path) -> None:
    plain = parse_systrace_text(_synth())
    packed = b"capturing trace... done\nTRACE:\n" + zlib.compress(_synth().encode(), 9)
    for name, data in (
        ("lf", packed),
        ("crlf", packed.replace(b"\n", b"\r\n")),  # a terminal's LF → CR LF on every byte
        ("crcrlf", packed.replace(b"\n", b"\r\r\n")),  # …and Windows text mode's extra CR
    ):
        trace = load_systrace(_write(tmp_path, data, f"{name}.z"))
        assert trace.stats.container == "atrace -z"
        _same(trace, plain)


def test_bytes_after_the_zlib_stream_are_counted_and_reported(tmp_path: Path) -> None:
    data = b"TRACE:\n" + zlib.compress(_synth().encode()) + b"\x00garbage" * 100
    trace = load_systrace(_write(tmp_path, data, "t.z"))
    assert trace.stats.trailing_bytes == 800
    assert any("800 bytes after the end" in w for w in trace.stats.warnings())


# -- encodings and line ends, on generated captures -------------------------------------

_ENCODINGS = {
    "utf-8": lambda t: t.encode("utf-8"),
    "utf-8 BOM": lambda t: t.encode("utf-8-sig"),
    "utf-16 (PowerShell >)": lambda t: t.encode("utf-16"),
    "utf-16-le BOM": lambda t: b"\xff\xfe" + t.encode("utf-16-le"),
    "utf-16-be BOM": lambda t: b"\xfe\xff" + t.encode("utf-16-be"),
    "utf-16-le, no BOM": lambda t: t.encode("utf-16-le"),
}


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**16),
    encoding=st.sampled_from(sorted(_ENCODINGS)),
    line_end=st.sampled_from(["\n", "\r\n", "\r", "\r\r\n"]),
    container=st.sampled_from(["text", "gzip", "html", "linuxPerfData"]),
)
def test_any_encoding_line_end_and_container_gives_the_same_numbers(
    tmp_path_factory: pytest.TempPathFactory, seed: int, encoding: str, line_end: str,
    container: str,
) -> None:  # fmt: skip
    text, _ = synth_systrace(np.random.default_rng(seed), duration_s=0.15)
    plain = parse_systrace_text(text)
    if container == "html":
        text = wrap_html(text)
    elif container == "linuxPerfData":
        text = _perf_data_page(text)
    data = _ENCODINGS[encoding](text.replace("\n", line_end))
    if container == "gzip":
        data = gzip.compress(data)
    path = tmp_path_factory.mktemp("enc") / "capture"
    path.write_bytes(data)
    _same(load_systrace(path), plain)
