"""Synthetic GPU-buffer pages, the zram-style LZ4 codec, and the recorded LZ4 table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.device.gpu_content import (
    CONTENT_CLASSES,
    N_QUANTILES,
    PAGE_BYTES,
    ClassStats,
    Lz4Table,
    calibrate,
    compress_page,
    decompress_page,
    load_table,
    make_pages,
    save_table,
    stored_size,
)
from mqoe.errors import UserError


def _pages(content: str, n: int, seed: int) -> list[bytes]:
    data = make_pages(content, n, np.random.default_rng(seed))
    return [data[i : i + PAGE_BYTES] for i in range(0, len(data), PAGE_BYTES)]


@pytest.fixture(scope="module")
def small_table() -> Lz4Table:
    return calibrate(pages_per_class=64, seed=5, repeats=1)


# -- pages and codec ------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), content=st.sampled_from(CONTENT_CLASSES))
def test_every_class_round_trips_exactly(seed: int, content: str) -> None:
    for page in _pages(content, 3, seed):
        stored = compress_page(page)
        assert len(stored) == stored_size(page) <= PAGE_BYTES
        assert decompress_page(stored) == page


@settings(suppress_health_check=[HealthCheck.large_base_example])
@given(page=st.binary(min_size=PAGE_BYTES, max_size=PAGE_BYTES))
def test_arbitrary_pages_round_trip(page: bytes) -> None:
    assert decompress_page(compress_page(page)) == page


@given(motif=st.binary(min_size=1, max_size=64), cut=st.integers(0, PAGE_BYTES))
def test_arbitrary_repetitive_pages_round_trip(motif: bytes, cut: int) -> None:
    # Random bytes rarely compress; a repeated motif with a random tail does.
    page = (motif * PAGE_BYTES)[:cut] + bytes(PAGE_BYTES - cut)
    stored = compress_page(page)
    assert len(stored) < PAGE_BYTES or len(motif) > 16
    assert decompress_page(stored) == page


def test_incompressible_page_is_stored_raw_and_whole() -> None:
    for page in _pages("noise", 8, 1):
        assert compress_page(page) == page
        assert stored_size(page) == PAGE_BYTES


def test_zero_page_shrinks_to_a_few_bytes_as_lz4_handles_runs() -> None:
    assert stored_size(bytes(PAGE_BYTES)) < 64


def test_mean_ratio_orders_the_classes_from_zero_to_noise() -> None:
    ratios = [
        np.mean([stored_size(p) for p in _pages(c, 128, 2)]) / PAGE_BYTES for c in CONTENT_CLASSES
    ]
    zero, flat, text, photo, noise = ratios
    assert zero < flat < text < photo <= noise == 1.0
    assert 0.01 < flat < 0.12  # a few percent to ~10 %
    assert 0.12 < text < 0.45  # moderately compressible
    assert 0.85 <= photo <= 1.0  # LZ4 barely helps


@pytest.mark.parametrize("content", CONTENT_CLASSES)
def test_make_pages_is_deterministic_per_seed(content: str) -> None:
    first = make_pages(content, 16, np.random.default_rng(7))
    assert first == make_pages(content, 16, np.random.default_rng(7))
    assert len(first) == 16 * PAGE_BYTES
    if content != "zero":
        assert first != make_pages(content, 16, np.random.default_rng(8))


def test_make_pages_rejects_unknown_class_and_negative_count() -> None:
    with pytest.raises(ValueError, match="unknown content class"):
        make_pages("jpeg", 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match=">= 0"):
        make_pages("flat", -1, np.random.default_rng(0))
    assert make_pages("flat", 0, np.random.default_rng(0)) == b""


def test_codec_rejects_objects_that_are_not_pages() -> None:
    with pytest.raises(ValueError, match="4096"):
        compress_page(bytes(100))
    with pytest.raises(ValueError, match="at most"):
        decompress_page(bytes(PAGE_BYTES + 1))


# -- calibration and the table --------------------------------------------------------
def test_calibration_sizes_are_deterministic_for_a_seed(small_table: Lz4Table) -> None:
    again = calibrate(pages_per_class=64, seed=5, repeats=1)
    for name in CONTENT_CLASSES:
        assert again.classes[name].ratio == small_table.classes[name].ratio
        assert again.classes[name].size_quantiles == small_table.classes[name].size_quantiles
    other = calibrate(pages_per_class=64, seed=6, repeats=1)
    assert other.classes["text"].size_quantiles != small_table.classes["text"].size_quantiles


def test_calibration_records_what_the_pages_measure(small_table: Lz4Table) -> None:
    streams = np.random.SeedSequence(5).spawn(len(CONTENT_CLASSES))
    for content, stream in zip(CONTENT_CLASSES, streams, strict=True):
        data = make_pages(content, 64, np.random.default_rng(stream))
        sizes = [stored_size(data[i : i + PAGE_BYTES]) for i in range(0, len(data), PAGE_BYTES)]
        stats = small_table.classes[content]
        assert stats.ratio == pytest.approx(np.mean(sizes) / PAGE_BYTES)
        assert (stats.size_quantiles[0], stats.size_quantiles[-1]) == (min(sizes), max(sizes))
        assert stats.compress_mb_s > 0 and stats.decompress_mb_s > 0
    assert small_table.pages_per_class == 64 and small_table.seed == 5
    assert "lz4" in small_table.lz4_version


@pytest.mark.parametrize("kwargs", [{"pages_per_class": 0}, {"repeats": 0}, {"seed": -1}])
def test_calibrate_rejects_bad_arguments(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        calibrate(**kwargs)


def test_sample_sizes_stay_in_range_and_match_the_class_mean() -> None:
    table = load_table()
    rng = np.random.default_rng(11)
    ids = rng.integers(0, len(CONTENT_CLASSES), 250_000).astype(np.int8)
    sizes = table.sample_sizes(ids, rng)
    assert sizes.dtype == np.int64 and sizes.shape == ids.shape
    for i, name in enumerate(CONTENT_CLASSES):
        stats, drawn = table.classes[name], sizes[ids == i]
        assert stats.size_quantiles[0] <= drawn.min() and drawn.max() <= stats.size_quantiles[-1]
        # 33 quantiles pin the mean to within ~1 % of a page.
        assert abs(drawn.mean() - stats.ratio * PAGE_BYTES) < 0.01 * PAGE_BYTES


def test_sample_sizes_hits_an_exact_distribution_by_hand() -> None:
    # Quantiles 1, 2, …, 33 → uniform on [1, 33], so the draws' mean is 17.
    linear = ClassStats(17 / PAGE_BYTES, tuple(range(1, 34)), 100.0, 200.0)
    table = _table_with(text=linear)
    ids = np.full(100_000, CONTENT_CLASSES.index("text"))
    sizes = table.sample_sizes(ids, np.random.default_rng(0))
    assert set(np.unique(sizes)) == set(range(1, 34))
    assert sizes.mean() == pytest.approx(17, abs=0.1)
    assert table.sample_sizes(np.zeros(0, np.int64), np.random.default_rng(0)).size == 0


def test_codec_times_sum_per_page_at_the_table_speed() -> None:
    linear = ClassStats(17 / PAGE_BYTES, tuple(range(1, 34)), 100.0, 200.0)
    table = _table_with(text=linear)
    ids = np.full(10, CONTENT_CLASSES.index("text"))
    # 10 pages × 4096 B at 100 MB/s (1e8 B/s) = 409.6 µs; at 200 MB/s half that.
    assert table.compress_ns(ids) == pytest.approx(409_600)
    assert table.decompress_ns(ids) == pytest.approx(204_800)
    with pytest.raises(ValueError):
        table.compress_ns(np.array([len(CONTENT_CLASSES)]))
    with pytest.raises(ValueError):
        table.sample_sizes(np.array([0.5]), np.random.default_rng(0))


def test_json_round_trip(small_table: Lz4Table, tmp_path: Path) -> None:
    assert Lz4Table.from_json(small_table.to_json(), "memory") == small_table
    path = tmp_path / "t.json"
    save_table(small_table, path)
    assert load_table(path) == small_table
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_packaged_table_has_every_class() -> None:
    table = load_table()
    assert tuple(table.classes) == CONTENT_CLASSES
    assert table.classes["noise"].ratio == 1.0
    assert table.classes["zero"].ratio < table.classes["flat"].ratio < table.classes["text"].ratio
    assert load_table() is table  # parsed once


def test_missing_table_file_is_a_user_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"nope\.json"):
        load_table(tmp_path / "nope.json")
    with pytest.raises(UserError, match="cannot read"):
        load_table(tmp_path)


def _valid() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(load_table().to_json())
    return data


def _set(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    data = _valid()
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


def _drop(path: tuple[str, ...]) -> dict[str, Any]:
    data = _valid()
    node = data
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return data


def _rising_then_falling() -> list[int]:
    q = list(range(100, 100 + N_QUANTILES))
    q[10] = 50
    return q


BAD_TABLES = [
    pytest.param(_drop(("host",)), "missing field(s) host", id="missing-field"),
    pytest.param(_drop(("classes", "photo")), "missing content class(es) 'photo'", id="no-photo"),
    pytest.param(
        _drop(("classes", "text", "compress_mb_s")), "missing field(s) compress_mb_s", id="speed"
    ),
    pytest.param(_set(("classes", "jpeg"), {}), "unknown content class 'jpeg'", id="unknown"),
    pytest.param(_set(("extra",), 1), "unknown field(s) extra", id="extra-field"),
    pytest.param(
        _set(("classes", "text", "size_quantiles"), _rising_then_falling()),
        "non-decreasing",
        id="non-monotone",
    ),
    pytest.param(
        _set(("classes", "zero", "size_quantiles"), [0] * N_QUANTILES), "1..4096", id="size-0"
    ),
    pytest.param(
        _set(("classes", "noise", "size_quantiles"), [4097] * N_QUANTILES),
        "1..4096",
        id="size-4097",
    ),
    pytest.param(
        _set(("classes", "flat", "size_quantiles"), [40] * 32), "33 integers", id="too-few"
    ),
    pytest.param(
        _set(("classes", "flat", "size_quantiles"), [40.5] * N_QUANTILES),
        "33 integers",
        id="not-int",
    ),
    pytest.param(_set(("classes", "flat", "compress_mb_s"), 0), "positive", id="zero-speed"),
    pytest.param(
        _set(("classes", "flat", "decompress_mb_s"), -3.0), "positive", id="negative-speed"
    ),
    pytest.param(_set(("classes", "flat", "ratio"), "low"), "must be a number", id="ratio-str"),
    pytest.param(_set(("classes", "flat", "ratio"), 1.5), "ratio", id="ratio-out-of-range"),
    pytest.param(_set(("page_bytes",), 8192), "page_bytes", id="page-size"),
    pytest.param(_set(("seed",), -1), "seed", id="seed"),
    pytest.param(_set(("pages_per_class",), 0), "pages_per_class", id="pages"),
    pytest.param([], "must be a JSON object", id="not-object"),
]


@pytest.mark.parametrize(("data", "fragment"), BAD_TABLES)
def test_from_json_rejects_malformed_tables(data: Any, fragment: str) -> None:
    with pytest.raises(UserError) as info:
        Lz4Table.from_json(json.dumps(data), "my-table.json")
    assert str(info.value).startswith("my-table.json: ")
    assert fragment in str(info.value)


def test_from_json_rejects_text_that_is_not_json() -> None:
    with pytest.raises(UserError, match=r"my-table\.json: not valid JSON"):
        Lz4Table.from_json("{", "my-table.json")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


@given(noise=_JSON, key=st.sampled_from(["classes", "seed", "host", "format"]))
def test_from_json_fails_only_with_user_errors(noise: Any, key: str) -> None:
    data = _valid()
    data[key] = noise
    try:
        Lz4Table.from_json(json.dumps(data), "fuzz.json")
    except UserError as exc:
        assert "fuzz.json" in str(exc)


def _table_with(**stats: ClassStats) -> Lz4Table:
    base = load_table()
    return Lz4Table(
        classes={**base.classes, **stats},
        lz4_version="test",
        host="test",
        pages_per_class=1,
        seed=0,
    )
