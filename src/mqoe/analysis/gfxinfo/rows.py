"""PROFILEDATA rows → int64 columns (the format is in :mod:`mqoe.analysis.gfxinfo`).

A block's rows arrive in bounded batches. :func:`parse_rows` converts a batch of plain rows
(``int,int,…,int,`` in ASCII) with a handful of numpy passes over its bytes; any batch it
cannot vouch for — a field count that differs from the header's, a non-integer or beyond-
int64 value in a known column, white space, anything unusual — goes to
:func:`parse_rows_slowly`, which checks row by row and names each bad row. Both accept and
refuse exactly the same rows (a property test holds them together).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

_PLAIN_BYTES = b"0123456789-,\n"  # all a plain batch may hold
_INT_TOKEN = re.compile(r"\s*-?[0-9]{1,19}\s*")
_MAX_DIGITS = 19  # int64 has 19 decimal digits
_INT64_MAX = 2**63 - 1
_COMMA, _NEWLINE, _MINUS, _ZERO = 44, 10, 45, 48


@dataclass(frozen=True)
class Header:
    """A PROFILEDATA header: its column names, line, and the known columns' positions."""

    names: tuple[str, ...]
    line: int
    known: tuple[tuple[int, str], ...]  # (position, our column name), in position order

    @property
    def width(self) -> int:
        return len(self.names)


@dataclass(frozen=True)
class Rows:
    """Converted rows of one block (or part of one), as the reader hands them on."""

    section: int  # index into the file's sections
    window: str
    block: int
    columns: dict[str, IntArray]
    lines: IntArray
    texts: IntArray  # a hash of each row's text (equal rows: the same frame seen twice)


def _wanted(header: Header, wanted: Collection[str] | None) -> list[tuple[int, str]]:
    return [(i, name) for i, name in header.known if wanted is None or name in wanted]


def swap_names(header: Header, first: str, second: str) -> Header:
    """The header with the two known columns' names exchanged (their values stay put)."""
    names = {first: second, second: first}
    known = tuple((i, names.get(name, name)) for i, name in header.known)
    return Header(header.names, header.line, known)


def parse_rows(
    rows: Sequence[str], header: Header, wanted: Collection[str] | None = None
) -> dict[str, IntArray] | None:
    """The ``wanted`` known columns (all known ones if None) of plain rows, or None when
    any row is not plain; every known column is checked either way.

    Fields end at a comma, or at the line end of a row without a trailing comma. Row
    *r*'s last field end must be its trailing comma or its line end, which holds exactly
    when every row has the header's field count. Digits are summed right-aligned in
    uint64 (19 digits cannot overflow it), column by column, then signs are applied;
    only fields of 19 characters or more need the int64 range checked.
    """
    width, n = header.width, len(rows)
    text = "\n".join(rows) + "\n"
    if not n or not text.isascii():
        return None
    blob = text.encode("ascii")
    if blob.translate(None, _PLAIN_BYTES):
        return None
    a = np.frombuffer(blob, dtype=np.uint8)
    line_ends = np.cumsum(np.fromiter(map(len, rows), dtype=np.int64, count=n) + 1) - 1
    trailing = a[line_ends - 1] == _COMMA  # rows are never empty: the char before is theirs
    commas = np.flatnonzero(a == _COMMA)
    # usually every field, the last too, ends at a comma; else some rows end at line ends
    every = trailing.all()
    ends = commas if every else np.sort(np.concatenate([commas, line_ends[~trailing]]))
    if len(ends) != n * width:
        return None
    row_ends = ends[width - 1 :: width]
    if not np.array_equal(row_ends + trailing, line_ends):  # each row: exactly width fields
        return None
    # each field's length: the distance from the previous field end, less the separator
    # (and, for a row's first field, less the previous row's line end too)
    length = np.diff(ends, prepend=-1) - 1
    length[width::width] -= trailing[:-1]
    known = np.array([i for i, _ in header.known], dtype=np.int64)
    if length.min() < 1 and (length.reshape(n, width)[:, known] < 1).any():
        return None  # an empty known field
    minus = np.zeros(0, dtype=np.int64) if b"-" not in blob else np.flatnonzero(a == _MINUS)
    if len(minus):  # a '-' in a known column must open its field and be followed by digits
        field = np.searchsorted(ends, minus)
        first = ends[field] - length[field]
        in_known = np.isin(field % width, known)
        if ((minus != first) & in_known).any() or ((length[field] < 2) & in_known).any():
            return None
    if length.max() >= _MAX_DIGITS:  # 19 digits (or a sign and 18) may leave int64
        grid = length.reshape(n, width)[:, known]
        long = np.flatnonzero(grid.ravel() >= _MAX_DIGITS)
        rows_, slots = np.divmod(long, len(known))
        at = rows_ * width + known[slots]
        negative = a[ends[at] - length[at]] == _MINUS
        digits = length[at] - negative
        if (digits > _MAX_DIGITS).any() or not _fits_int64(a, ends[at], digits, negative):
            return None
    out: dict[str, IntArray] = {}
    base = np.arange(n, dtype=np.int64) * width
    for position, name in header.known:
        if wanted is not None and name not in wanted:
            continue
        at = base + position
        last, digits = ends[at], length[at]
        negative = None
        if len(minus):
            negative = a[last - digits] == _MINUS
            digits = digits - negative
        values = _digits_value(a, last, digits).view(np.int64)
        if negative is not None:
            np.negative(values, out=values, where=negative)
        out[name] = values
    return out


def _digits_value(
    a: npt.NDArray[np.uint8], last: IntArray, digits: IntArray
) -> npt.NDArray[np.uint64]:
    """The unsigned value of the digit runs ending (exclusive) at ``last`` (Horner's rule,
    one digit position of every field at a time)."""
    value = np.zeros(len(last), dtype=np.uint64)
    if not len(last):
        return value
    shortest, longest = int(digits.min()), int(digits.max())
    for k in range(longest, shortest, -1):  # only some fields are this long: mask the rest
        value *= np.uint64(10)
        digit = a[last - k].astype(np.uint64) - np.uint64(_ZERO)
        digit *= digits >= k
        value += digit
    for k in range(shortest, 0, -1):  # every field has these: add the characters as they are
        value *= np.uint64(10)
        value += a[last - k]
    # ...and take the '0' of each of those positions back off at once (uint64 arithmetic
    # wraps, so the result is exact whenever the true value fits, as 19 digits do)
    value -= np.uint64(_ZERO * ((10**shortest - 1) // 9) % 2**64)
    return value


def _fits_int64(
    a: npt.NDArray[np.uint8], last: IntArray, digits: IntArray, negative: npt.NDArray[np.bool_]
) -> bool:
    magnitude = _digits_value(a, last, digits)
    limit = np.where(negative, np.uint64(_INT64_MAX + 1), np.uint64(_INT64_MAX))
    return bool((magnitude <= limit).all())


def row_values(text: str, header: Header) -> list[int] | str:
    """One row's known values in ``header.known`` order, or what is wrong with it."""
    body = text.rstrip()
    fields = (body[:-1] if body.endswith(",") else body).split(",")
    if len(fields) != header.width:
        return (
            f"expected {header.width} comma-separated fields as in the PROFILEDATA header "
            f"(line {header.line}), found {len(fields)}"
        )
    values: list[int] = []
    for i, _ in header.known:
        token = fields[i]
        number = int(token) if _INT_TOKEN.fullmatch(token) and token.isascii() else None
        if number is None or not -(2**63) <= number <= _INT64_MAX:
            return f"{header.names[i]}: expected an integer (int64), found {token.strip()[:30]!r}"
        values.append(number)
    return values


def parse_rows_slowly(
    rows: Sequence[str], lines: Sequence[int], header: Header, wanted: Collection[str] | None
) -> tuple[dict[str, IntArray], IntArray, list[tuple[int, str]]]:
    """Row by row: the good rows' wanted columns and line numbers, and the bad rows
    as (line, what is wrong)."""
    chosen = _wanted(header, wanted)
    slots = [header.known.index(c) for c in chosen]
    good: list[list[int]] = []
    kept: list[int] = []
    bad: list[tuple[int, str]] = []
    for text, line in zip(rows, lines, strict=True):
        values = row_values(text, header)
        if isinstance(values, str):
            bad.append((line, values))
        else:
            good.append([values[s] for s in slots])
            kept.append(line)
    grid = np.array(good, dtype=np.int64).reshape(len(good), len(chosen))
    columns = {name: grid[:, j].copy() for j, (_, name) in enumerate(chosen)}
    return columns, np.array(kept, dtype=np.int64), bad
