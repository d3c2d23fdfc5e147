"""What GPU buffers hold, and what LZ4 makes of it, page by page (GPU-buffer study).

Simulations never compress real bytes (far too slow). They draw each page's stored size
and charge its codec time from a table measured once, on the calibration host, with the
real ``lz4`` library (:func:`calibrate`, ``mqoe calibrate lz4``) on synthetic buffer
contents. The packaged ``profiles/lz4_table.json`` is such a table; a device profile
scales its host times to the phone.

A page is 4 KiB of RGBA8888 pixels: 1024 pixels, about one row of a 1080-px-wide
surface. :data:`CONTENT_CLASSES`, from most to least compressible:

* ``zero``  cleared or never-drawn surface memory (the paper: most of the gain);
* ``flat``  UI surfaces: solid backgrounds, cards, buttons, a few icons and gradients;
* ``text``  rendered text on a flat background, with anti-aliased glyph edges;
* ``photo`` decoded photos and textures: smooth structure plus sensor noise;
* ``noise`` random bytes, like already-compressed (ETC/ASTC) textures.

Pages are compressed as the kernel's zram does: LZ4 block format (no size header), one
page at a time, and a page whose compressed form is not smaller than the page is stored
raw, whole (so a stored object of exactly :data:`PAGE_BYTES` bytes *is* the page).

Speeds are MB/s of uncompressed data, 1 MB = 10**6 bytes. They include the Python call
overhead per page (a fraction of a microsecond), as the kernel's figure includes zram's
own per-page work. Ratios and size quantiles are deterministic for a seed (on a given
numpy and CPU); speeds are not.
"""

from __future__ import annotations

import itertools
import json
import math
import platform
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import lz4  # type: ignore[import-untyped]
import lz4.block  # type: ignore[import-untyped]
import numpy as np

from mqoe.errors import InputFileError

PAGE_BYTES = 4096  # the kernel's page, the unit zram and zsmalloc store
CONTENT_CLASSES: tuple[str, ...] = ("zero", "flat", "text", "photo", "noise")
N_QUANTILES = 33  # stored-size quantiles 0, 1/32, …, 1 kept per class
TABLE_FORMAT = "mqoe-lz4-table/1"
PACKAGED_TABLE = "lz4_table.json"

_PX = PAGE_BYTES // 4  # RGBA8888 pixels per page
_X = np.arange(_PX, dtype=np.float32)
_F32 = np.float32
_CHUNK_PAGES = 1024  # generated at a time: the float intermediates need ~100 kB per page
_RATIO_SLACK = 1e-6  # a hand-rounded ratio may sit this far outside its quantile range


# -- page contents --------------------------------------------------------------------
def make_pages(content: str, n: int, rng: np.random.Generator) -> bytes:
    """``n`` synthetic pages of class ``content`` (see the module docstring), concatenated
    (``n * PAGE_BYTES`` bytes). The same ``rng`` state gives the same bytes."""
    if content not in _GENERATORS:
        raise ValueError(f"unknown content class {content!r}; known: {', '.join(CONTENT_CLASSES)}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    generate = _GENERATORS[content]
    chunks = []
    for start in range(0, n, _CHUNK_PAGES):
        size = min(_CHUNK_PAGES, n - start)
        pixels = generate(size, rng)
        assert pixels.shape == (size, _PX, 4) and pixels.dtype == np.uint8
        chunks.append(pixels.tobytes())
    return b"".join(chunks)


def _zero(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.zeros((n, _PX, 4), np.uint8)


def _noise(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.frombuffer(rng.bytes(n * PAGE_BYTES), np.uint8).reshape(n, _PX, 4)


def _rgba(rgb: np.ndarray, alpha: np.ndarray | int = 255) -> np.ndarray:
    """Float RGB (n, px, 3) → RGBA8888, rounded like a blender writing 8-bit channels."""
    out = np.empty((rgb.shape[0], _PX, 4), np.uint8)
    out[..., :3] = np.clip(np.rint(rgb), 0, 255)
    out[..., 3] = alpha
    return out


def _interval_coverage(page: np.ndarray, lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """How much of each pixel [x, x+1) the intervals [lo, hi) of each page cover, summed
    over intervals (float32, shape (n, px)): an analytic box rasteriser. Fully covered
    pixels get 1 through a difference array; the two end pixels get their fractions."""
    lo = np.clip(lo, 0, _PX)
    hi = np.clip(hi, lo, _PX)
    first, last = np.floor(lo).astype(np.int64), np.floor(hi).astype(np.int64)
    same = first == last
    width = _PX + 1
    partial = np.bincount(
        np.concatenate([page * width + first, (page * width + last)[~same]]),
        weights=np.concatenate([np.where(same, hi - lo, first + 1 - lo), (hi - last)[~same]]),
        minlength=n * width,
    )
    full = np.bincount(
        np.concatenate([(page * width + first + 1)[~same], (page * width + last)[~same]]),
        weights=np.concatenate([np.ones((~same).sum()), -np.ones((~same).sum())]),
        minlength=n * width,
    )
    cover = partial.reshape(n, width) + np.cumsum(full.reshape(n, width), axis=1)
    return cover[:, :_PX].astype(_F32)


def _flat(n: int, rng: np.random.Generator) -> np.ndarray:
    # A row through a UI: a few solid runs (background, cards, buttons) in a small page
    # palette, since layouts reuse their theme colours.
    k_max, palette_size = 12, 3
    k = np.minimum(rng.poisson(3.0, n), k_max)
    bounds = rng.integers(1, _PX, (n, k_max))
    active = np.arange(k_max)[None, :] < k[:, None]
    bounds = np.sort(np.where(active, bounds, _PX), axis=1)
    flat_index = (np.arange(n)[:, None] * (_PX + 1) + bounds).ravel()
    marks = np.bincount(flat_index, minlength=n * (_PX + 1)).reshape(n, _PX + 1)
    run = np.cumsum(marks, axis=1)[:, :_PX]
    palette = rng.integers(0, 256, (n, palette_size, 3)).astype(_F32)
    rows = np.arange(n)[:, None]
    colour = palette[rows, rng.integers(0, palette_size, (n, k_max + 1))]
    rgb = colour[rows, run]
    # Most edges are pixel-aligned; rounded corners and fractional layout positions
    # leave one anti-aliased pixel blending the two colours.
    pi, ki = np.nonzero(active & (rng.random((n, k_max)) < 0.6))
    cov = rng.random(len(pi)).astype(_F32)[:, None]
    rgb[pi, bounds[pi, ki]] = colour[pi, ki] * (1 - cov) + colour[pi, ki + 1] * cov
    rgb = _icons(rgb, n, rng)
    rgb = _gradients(rgb, n, rng)
    # Some surfaces are translucent overlays (scrims, sheets) with a constant alpha.
    alpha = np.where(rng.random((n, 1)) < 0.1, rng.integers(0, 255, (n, 1)), 255)
    return _rgba(rgb, alpha.astype(np.uint8))


def _icons(rgb: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    # A row through an icon or avatar (12–48 px): an accent colour with mostly solid,
    # partly anti-aliased coverage — the busiest part of a UI surface.
    m_max = 3
    m = np.minimum(rng.poisson(1.0, n), m_max)
    start = rng.integers(0, _PX - 48, (n, m_max)).astype(_F32)
    end = start + rng.integers(12, 49, (n, m_max))
    pi, si = np.nonzero(np.arange(m_max)[None, :] < m[:, None])
    inside = _interval_coverage(pi, start[pi, si], end[pi, si], n)[..., None] > 0
    u = rng.random((n, _PX))
    cov = np.where(u < 0.45, 0.0, np.where(u < 0.8, 1.0, rng.random((n, _PX))))
    cov = cov.astype(_F32)[..., None]
    accent = rng.integers(0, 256, (n, 1, 3)).astype(_F32)
    return np.where(inside, rgb * (1 - cov) + accent * cov, rgb)


def _gradients(rgb: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    # One page in five crosses a horizontal gradient (shadow, scrim, gradient button):
    # a shallow ramp repeats each 8-bit level over a few pixels, a steep one does not.
    has = rng.random(n) < 0.2
    start = rng.integers(0, _PX - 32, n)
    end = np.minimum(start + rng.integers(32, 400, n), _PX)
    ramp = np.clip((_X[None, :] - start[:, None]) / (end - start)[:, None], 0, 1)
    ramp = ramp.astype(_F32)[..., None]
    inside = has[:, None] & (_X[None, :] >= start[:, None]) & (_X[None, :] < end[:, None])
    target = rng.integers(0, 256, (n, 1, 3)).astype(_F32)
    return np.where(inside[..., None], rgb * (1 - ramp) + target * ramp, rgb)


def _text(n: int, rng: np.random.Generator) -> np.ndarray:
    # A row through a paragraph: glyphs on an advance grid between the margins, ragged
    # right. Where the row crosses the x-height most glyphs have ink; through ascenders
    # or descenders few do; between lines none (the surface is still a text surface).
    advance = rng.uniform(6, 16, n).astype(_F32)  # glyph advance, px (font size)
    margin = rng.uniform(16, 64, n).astype(_F32)
    end = margin + (_PX - 2 * margin) * rng.uniform(0.6, 1.0, n).astype(_F32)
    p_ink = np.array([0.9, 0.3, 0.0], _F32)[rng.choice(3, n, p=[0.7, 0.2, 0.1])]
    cells, strokes = _PX // 6 + 2, 3
    left = margin[:, None] + advance[:, None] * np.arange(cells, dtype=_F32)[None, :]
    inked = (
        (rng.random((n, cells)) < p_ink[:, None])
        & (left + advance[:, None] <= end[:, None])
        & (rng.random((n, cells)) > 0.17)  # word spaces
    )
    count = rng.integers(1, strokes + 1, (n, cells))
    active = inked[..., None] & (np.arange(strokes)[None, None, :] < count[..., None])
    # Each glyph crosses the row in 1–3 strokes: vertical stems as wide as the font's
    # weight, or now and then a horizontal bar (crossbar, bowl) a good part of a glyph.
    slot = (np.arange(strokes)[None, None, :] + rng.random((n, cells, strokes))) / strokes
    centre = left[..., None] + advance[:, None, None] * (0.15 + 0.7 * slot.astype(_F32))
    stem = (advance * rng.uniform(0.06, 0.12, n).astype(_F32))[:, None, None]
    bar = advance[:, None, None] * rng.uniform(0.15, 0.4, (n, cells, strokes)).astype(_F32)
    half = np.where(rng.random((n, cells, strokes)) < 0.15, bar, stem)
    pi, ci, si = np.nonzero(active)
    c, h = centre[pi, ci, si], half[pi, ci, si]
    cov = np.minimum(_interval_coverage(pi, c - h, c + h, n), 1)[..., None]
    # Greyscale anti-aliasing: every channel follows the coverage. Light or dark theme,
    # now and then a coloured link.
    dark = rng.random((n, 1)) < 0.25
    bg = np.where(dark, rng.integers(0, 40, (n, 1)), rng.integers(235, 256, (n, 1)))
    fg = np.where(dark, rng.integers(200, 256, (n, 1)), rng.integers(0, 80, (n, 1)))
    bg_rgb = np.repeat(bg, 3, 1)[:, None, :].astype(_F32)
    fg_rgb = np.repeat(fg, 3, 1)[:, None, :].astype(_F32)
    link = rng.random((n, 1, 1)) < 0.1
    fg_rgb = np.where(link, rng.integers(0, 256, (n, 1, 3)).astype(_F32), fg_rgb)
    return _rgba(bg_rgb + (fg_rgb - bg_rgb) * cov)


def _photo(n: int, rng: np.random.Generator) -> np.ndarray:
    # Smooth structure (sky, skin, walls): per-channel values at knots 64–512 px apart,
    # joined by smoothstep curves (cheap: no per-pixel transcendental functions).
    spacing = rng.choice(np.array([64, 128, 256, 512], _F32), n)[:, None]
    knots = _PX // 64 + 2
    base = rng.uniform(40, 215, (n, 1, 3))
    level = (base + rng.normal(0, 12, (n, knots, 3))).astype(_F32)
    pos = _X[None, :] / spacing
    knot = np.floor(pos)
    j = knot.astype(np.intp)
    t = (pos - knot)[..., None]
    t = t * t * (3 - 2 * t)
    rows = np.arange(n)[:, None]
    smooth = level[rows, j] * (1 - t) + level[rows, j + 1] * t
    # Texture (foliage, fabric) and sensor noise, both of per-page strength: JPEG keeps
    # texture but flattens the noise of smooth regions, so some pages repeat pixels and
    # LZ4 finds a few matches; busy ones it cannot shrink at all.
    # Strengths in 8-bit levels, medians tuned so the class lands near 94 % under LZ4.
    texture = rng.lognormal(np.log(1.6), 1.0, (n, 1, 1)).astype(_F32)
    white = rng.standard_normal((n, _PX + 3, 3), dtype=_F32)
    # A 4-px box filter: texture correlated over a few pixels, still of unit variance.
    grain = (white[:, :_PX] + white[:, 1 : _PX + 1] + white[:, 2 : _PX + 2] + white[:, 3:]) / 2
    sigma = rng.lognormal(np.log(0.8), 0.8, (n, 1, 1)).astype(_F32)
    noise = sigma * rng.standard_normal((n, _PX, 3), dtype=_F32)
    return _rgba(smooth + texture * grain + noise)


_GENERATORS: dict[str, Callable[[int, np.random.Generator], np.ndarray]] = {
    "zero": _zero,
    "flat": _flat,
    "text": _text,
    "photo": _photo,
    "noise": _noise,
}


# -- the codec, as zram uses it -------------------------------------------------------
def compress_page(page: bytes) -> bytes:
    """The object stored for a 4 KiB ``page``: its LZ4 block (no size header, as the
    kernel's lz4), or the page itself, raw, when LZ4 cannot make it smaller (as zram)."""
    if len(page) != PAGE_BYTES:
        raise ValueError(f"a page is {PAGE_BYTES} bytes, got {len(page)}")
    packed: bytes = lz4.block.compress(page, store_size=False)
    return packed if len(packed) < PAGE_BYTES else bytes(page)


def decompress_page(data: bytes) -> bytes:
    """The 4 KiB page back from a stored object; one of exactly ``PAGE_BYTES`` is raw."""
    if len(data) == PAGE_BYTES:
        return bytes(data)
    if len(data) > PAGE_BYTES:
        raise ValueError(f"a stored page is at most {PAGE_BYTES} bytes, got {len(data)}")
    page: bytes = lz4.block.decompress(data, uncompressed_size=PAGE_BYTES)
    if len(page) != PAGE_BYTES:
        raise ValueError(f"stored object decompressed to {len(page)} bytes, not a page")
    return page


def stored_size(page: bytes) -> int:
    """Bytes the pool holds for ``page``: min(LZ4 block size, PAGE_BYTES)."""
    return len(compress_page(page))


# -- the measured table ---------------------------------------------------------------
@dataclass(frozen=True)
class ClassStats:
    """LZ4 on one content class, measured on the calibration host."""

    ratio: float  # mean stored_size / PAGE_BYTES
    size_quantiles: tuple[int, ...]  # N_QUANTILES quantiles (0, 1/32, …, 1), bytes
    compress_mb_s: float  # MB/s of uncompressed input, 1 MB = 1e6 bytes
    decompress_mb_s: float  # MB/s of uncompressed output, 1 MB = 1e6 bytes

    def __post_init__(self) -> None:
        q = self.size_quantiles
        if len(q) != N_QUANTILES or not all(_is_int(v) for v in q):
            raise ValueError(f"size_quantiles must be {N_QUANTILES} integers")
        if not all(1 <= v <= PAGE_BYTES for v in q):
            raise ValueError(f"size_quantiles must lie in 1..{PAGE_BYTES} bytes")
        if any(b < a for a, b in itertools.pairwise(q)):
            raise ValueError("size_quantiles must be non-decreasing")
        for name in ("compress_mb_s", "decompress_mb_s"):
            speed = getattr(self, name)
            if not (_is_number(speed) and math.isfinite(speed) and speed > 0):
                raise ValueError(f"{name} must be a positive number, got {speed!r}")
        mean = self.ratio * PAGE_BYTES if _is_number(self.ratio) else math.nan
        slack = _RATIO_SLACK * PAGE_BYTES
        if not q[0] - slack <= mean <= q[-1] + slack:
            raise ValueError(
                f"ratio {self.ratio!r} must be a mean stored size / {PAGE_BYTES} within "
                f"the quantiles' range {q[0]}..{q[-1]} bytes"
            )


@dataclass(frozen=True)
class Lz4Table:
    """Per-class LZ4 stored sizes and host speeds; what simulations read instead of
    running the codec."""

    classes: Mapping[str, ClassStats]  # every name of CONTENT_CLASSES
    lz4_version: str
    host: str  # OS, machine, CPU model, Python of the calibration host
    pages_per_class: int
    seed: int

    def __post_init__(self) -> None:
        unknown = [name for name in self.classes if name not in CONTENT_CLASSES]
        if unknown:
            raise ValueError(
                f"unknown content class(es) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(CONTENT_CLASSES)}"
            )
        missing = [name for name in CONTENT_CLASSES if name not in self.classes]
        if missing:
            raise ValueError(f"missing content class(es) {', '.join(map(repr, missing))}")
        if not (_is_int(self.pages_per_class) and self.pages_per_class >= 1):
            raise ValueError(f"pages_per_class must be a positive integer: {self.pages_per_class}")
        if not (_is_int(self.seed) and self.seed >= 0):
            raise ValueError(f"seed must be a non-negative integer: {self.seed!r}")
        ordered = {name: self.classes[name] for name in CONTENT_CLASSES}
        object.__setattr__(self, "classes", MappingProxyType(ordered))

    @cached_property
    def _quantiles(self) -> np.ndarray:  # (classes, N_QUANTILES) float64, bytes
        return np.array([self.classes[c].size_quantiles for c in CONTENT_CLASSES], float)

    @cached_property
    def _compress_ns_per_page(self) -> np.ndarray:
        # PAGE_BYTES / (mb_s * 1e6 B/s) s = PAGE_BYTES * 1e3 / mb_s ns
        return np.array([PAGE_BYTES * 1e3 / self.classes[c].compress_mb_s for c in CONTENT_CLASSES])

    @cached_property
    def _decompress_ns_per_page(self) -> np.ndarray:
        return np.array(
            [PAGE_BYTES * 1e3 / self.classes[c].decompress_mb_s for c in CONTENT_CLASSES]
        )

    def sample_sizes(self, content_ids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Stored sizes (int64 bytes, 1..PAGE_BYTES) for pages of the given content
        classes (ids index CONTENT_CLASSES), drawn from each class's quantiles:
        inverse CDF, linear between quantiles, rounded."""
        ids = _check_ids(content_ids)
        u = rng.random(ids.shape) * (N_QUANTILES - 1)
        i = np.minimum(u.astype(np.int64), N_QUANTILES - 2)
        lo, hi = self._quantiles[ids, i], self._quantiles[ids, i + 1]
        sizes: np.ndarray = np.rint(lo + (hi - lo) * (u - i)).astype(np.int64)
        return sizes

    def compress_ns(self, content_ids: np.ndarray) -> float:
        """Host nanoseconds to compress these pages, one by one (sum)."""
        return float(self._compress_ns_per_page[_check_ids(content_ids)].sum())

    def decompress_ns(self, content_ids: np.ndarray) -> float:
        """Host nanoseconds to decompress these pages, one by one (sum)."""
        return float(self._decompress_ns_per_page[_check_ids(content_ids)].sum())

    def to_json(self) -> str:
        """The table as JSON text (quantile lists on one line each, for review)."""
        classes = {
            name: {
                "ratio": s.ratio,
                "size_quantiles": f"@@{name}@@",
                "compress_mb_s": s.compress_mb_s,
                "decompress_mb_s": s.decompress_mb_s,
            }
            for name, s in self.classes.items()
        }
        data = {
            "format": TABLE_FORMAT,
            "page_bytes": PAGE_BYTES,
            "lz4_version": self.lz4_version,
            "host": self.host,
            "pages_per_class": self.pages_per_class,
            "seed": self.seed,
            "classes": classes,
        }
        text = json.dumps(data, indent=2)
        for name, s in self.classes.items():
            text = text.replace(f'"@@{name}@@"', json.dumps(list(s.size_quantiles)))
        return text + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> Lz4Table:
        """Parse :meth:`to_json` output; any problem is an ``InputFileError`` (a
        ``UserError``) naming ``source`` and what is wrong."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InputFileError(source, f"not valid JSON: {exc}") from None
        try:
            return _table_from_dict(data)
        except ValueError as exc:
            raise InputFileError(source, str(exc)) from None


_TABLE_KEYS = ("format", "page_bytes", "lz4_version", "host", "pages_per_class", "seed", "classes")
_CLASS_KEYS = ("ratio", "size_quantiles", "compress_mb_s", "decompress_mb_s")


def _table_from_dict(data: Any) -> Lz4Table:
    _check_keys(data, _TABLE_KEYS, "the table")
    if data["format"] != TABLE_FORMAT:
        raise ValueError(f"format must be {TABLE_FORMAT!r}, got {data['format']!r}")
    if data["page_bytes"] != PAGE_BYTES:
        raise ValueError(f"page_bytes must be {PAGE_BYTES}, got {data['page_bytes']!r}")
    for key in ("lz4_version", "host"):
        if not isinstance(data[key], str):
            raise ValueError(f"{key} must be a string")
    if not isinstance(data["classes"], dict):
        raise ValueError("classes must be an object of content class → stats")
    classes = {}
    for name, stats in data["classes"].items():
        if name not in CONTENT_CLASSES:
            raise ValueError(f"unknown content class {name!r}; known: {', '.join(CONTENT_CLASSES)}")
        classes[name] = _class_from_dict(name, stats)
    return Lz4Table(
        classes=classes,
        lz4_version=data["lz4_version"],
        host=data["host"],
        pages_per_class=data["pages_per_class"],
        seed=data["seed"],
    )


def _class_from_dict(name: str, data: Any) -> ClassStats:
    where = f"class {name!r}"
    _check_keys(data, _CLASS_KEYS, where)
    q = data["size_quantiles"]
    if not isinstance(q, list):
        raise ValueError(f"{where}: size_quantiles must be a list of integers")
    for key in ("ratio", "compress_mb_s", "decompress_mb_s"):
        if not _is_number(data[key]):
            raise ValueError(f"{where}: {key} must be a number, got {data[key]!r}")
    try:
        return ClassStats(
            ratio=float(data["ratio"]),
            size_quantiles=tuple(q),
            compress_mb_s=float(data["compress_mb_s"]),
            decompress_mb_s=float(data["decompress_mb_s"]),
        )
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _check_keys(data: Any, keys: tuple[str, ...], where: str) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a JSON object")
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(missing)}")
    unknown = [k for k in data if k not in keys]
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_ids(content_ids: np.ndarray) -> np.ndarray:
    ids = np.asarray(content_ids)
    if not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"content ids must be integers, got dtype {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= len(CONTENT_CLASSES)):
        raise ValueError(f"content ids must index CONTENT_CLASSES (0..{len(CONTENT_CLASSES) - 1})")
    return ids


# -- calibration ----------------------------------------------------------------------
def calibrate(pages_per_class: int = 2048, seed: int = 0, repeats: int = 3) -> Lz4Table:
    """Compress each class's synthetic pages with the real lz4, page by page; time
    compress and decompress (best of ``repeats`` passes after an untimed warm-up,
    ``time.perf_counter``, page generation excluded) and record ratios and size
    quantiles.

    Each class draws its pages from its own stream of ``seed`` (``SeedSequence.spawn``),
    so sizes are deterministic for a seed. Passes take the classes in turn, so a burst
    of other load on the host spoils one pass of each, not all of one class's. Reads
    the wall clock: never call it from a simulation model.
    """
    if not (_is_int(pages_per_class) and pages_per_class >= 1):
        raise ValueError(f"pages_per_class must be a positive integer, got {pages_per_class!r}")
    if not (_is_int(repeats) and repeats >= 1):
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    if not (_is_int(seed) and seed >= 0):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    streams = np.random.SeedSequence(seed).spawn(len(CONTENT_CLASSES))
    pages = {
        content: make_pages(content, pages_per_class, np.random.default_rng(stream))
        for content, stream in zip(CONTENT_CLASSES, streams, strict=True)
    }
    sizes = {content: _stored_sizes(data) for content, data in pages.items()}
    best = {content: (math.inf, math.inf) for content in CONTENT_CLASSES}
    for _ in range(repeats):
        for content, data in pages.items():
            compress_s, decompress_s = _time_pass(data)
            best[content] = (min(best[content][0], compress_s), min(best[content][1], decompress_s))
    return Lz4Table(
        classes={c: _stats(sizes[c], len(pages[c]), *best[c]) for c in CONTENT_CLASSES},
        lz4_version=f"liblz4 {lz4.library_version_string()}, python-lz4 {lz4.__version__}",
        host=_host(),
        pages_per_class=pages_per_class,
        seed=seed,
    )


def _stored_sizes(data: bytes) -> np.ndarray:
    # Also the untimed warm-up pass: it takes the page faults of fresh output buffers,
    # which the kernel's recycled pages do not.
    stored = [compress_page(data[i : i + PAGE_BYTES]) for i in range(0, len(data), PAGE_BYTES)]
    if b"".join(decompress_page(obj) for obj in stored) != data:
        raise RuntimeError("lz4 round trip changed the data; the lz4 library is broken")
    return np.array([len(obj) for obj in stored], np.int64)


def _time_pass(data: bytes) -> tuple[float, float]:
    """Seconds to compress, then decompress, ``data`` page by page."""
    pages = [data[i : i + PAGE_BYTES] for i in range(0, len(data), PAGE_BYTES)]
    t0 = time.perf_counter()
    stored = [compress_page(page) for page in pages]
    t1 = time.perf_counter()
    restored = [decompress_page(obj) for obj in stored]
    t2 = time.perf_counter()
    del restored
    return t1 - t0, t2 - t1


def _stats(sizes: np.ndarray, n_bytes: int, compress_s: float, decompress_s: float) -> ClassStats:
    quantiles = np.quantile(sizes, np.linspace(0, 1, N_QUANTILES))
    mb = n_bytes / 1e6
    return ClassStats(
        ratio=float(sizes.mean()) / PAGE_BYTES,
        size_quantiles=tuple(int(v) for v in np.rint(quantiles)),
        compress_mb_s=round(mb / max(compress_s, 1e-9), 1),
        decompress_mb_s=round(mb / max(decompress_s, 1e-9), 1),
    )


def _host() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(
                (line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
                cpu,
            )
    except OSError:
        pass
    return (
        f"{platform.system()} {platform.machine()}, {cpu}, "
        f"{platform.python_implementation()} {platform.python_version()}"
    )


# -- files ----------------------------------------------------------------------------
def load_table(path: str | Path | None = None) -> Lz4Table:
    """The table at ``path``, or the packaged ``profiles/lz4_table.json`` (``None``).
    A missing or malformed file is a ``UserError`` naming it."""
    if path is None:
        return _packaged_table()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputFileError(path, "no such LZ4 table file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read: {exc}") from None
    return Lz4Table.from_json(text, str(path))


@cache
def _packaged_table() -> Lz4Table:
    # Immutable (frozen, read-only mapping), so one parse serves every run.
    resource = resources.files("mqoe.device.profiles").joinpath(PACKAGED_TABLE)
    return Lz4Table.from_json(resource.read_text(encoding="utf-8"), f"packaged {PACKAGED_TABLE}")


def save_table(table: Lz4Table, path: Path) -> None:
    """Write ``table`` as JSON to ``path``, atomically (parents are created)."""
    from mqoe.results.atomic import atomic_write_text  # pandas/pyarrow: only when saving

    atomic_write_text(path, table.to_json())
