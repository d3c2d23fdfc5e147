"""A mutation fuzzer every analyser's fuzz target shares.

Each target takes valid generated inputs (seeds), mutates them (byte flips, truncation,
duplicated and removed lines, huge numbers, NaN, unicode, line-end and encoding changes)
and feeds each mutant, written to a file, to the analyser. The contract checked on every
input: the analyser returns, or raises a :class:`~mqoe.errors.UserError` whose message
names the file (and ``file:line`` when it is an :class:`~mqoe.errors.InputFileError`
with a line); it never raises anything else and never takes longer than ``limit_s``.

``make test`` runs ``QUICK_INPUTS`` per format; ``make test-slow`` runs ``DEEP_INPUTS``.
The random stream is seeded, so a failure names the mutant's index and replays.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from mqoe.errors import InputFileError, UserError

QUICK_INPUTS = 300  # per format in `make test`
DEEP_INPUTS = 10_000  # per format in `make test-slow`
LIMIT_S = 10.0  # no single input may take longer

_NUMBER = re.compile(rb"\d+")
_WEIRD = (
    b"NaN", b"nan", b"inf", b"-inf", b"1e400", b"-1", b"99999999999999999999999999999",
    b"0", b"-0", b"\xef\xbf\xbd", "ü∂🎞".encode(), b"\x00", b"\xff\xfe", b"",
)  # fmt: skip


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [data]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to three random mutations of ``data``."""
    for _ in range(rng.randint(1, 3)):
        data = _MUTATIONS[rng.randrange(len(_MUTATIONS))](data, rng)
    return data


def _flip(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    return bytes(buf)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)] if data else data


def _duplicate_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i] * rng.randint(1, 3))
    return b"".join(lines)


def _remove_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    del lines[i : i + rng.randint(1, 4)]
    return b"".join(lines)


def _swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def _weird_number(data: bytes, rng: random.Random) -> bytes:
    matches = list(_NUMBER.finditer(data))
    if not matches:
        return data + rng.choice(_WEIRD)
    m = rng.choice(matches)
    return data[: m.start()] + rng.choice(_WEIRD) + data[m.end() :]


def _insert_text(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(_WEIRD) + data[i:]


def _line_ends(data: bytes, rng: random.Random) -> bytes:
    end = rng.choice((b"\r\n", b"\r", b"\r\r\n", b"\n\n"))
    return data.replace(b"\r\n", b"\n").replace(b"\n", end)


def _encoding(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", errors="replace")
    kind = rng.randrange(3)
    if kind == 0:
        return b"\xef\xbb\xbf" + data
    if kind == 1:
        return text.encode("utf-16")  # with a BOM, native order
    return text.encode("utf-16-be")  # no BOM


def _huge_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines[i] = lines[i].rstrip(b"\r\n") * rng.randint(50, 400) + b"\n"
    return b"".join(lines)


_MUTATIONS: tuple[Callable[[bytes, random.Random], bytes], ...] = (
    _flip, _truncate, _duplicate_line, _remove_lines, _swap_lines, _weird_number,
    _insert_text, _line_ends, _encoding, _huge_line,
)  # fmt: skip


def check_user_error(exc: UserError, path: Path) -> None:
    """The one-user-error contract: the message names the file, and ``file:line`` for
    an InputFileError that has a line."""
    message = str(exc)
    assert str(path) in message or path.name in message, f"error does not name {path}: {message}"
    assert "\n" not in message.strip(), f"error is not one line: {message!r}"
    if isinstance(exc, InputFileError) and exc.line is not None:
        assert f":{exc.line}" in message, f"error does not name its line: {message}"


def fuzz(
    target: Callable[[Path], object],
    seeds: Sequence[bytes],
    folder: Path,
    n_inputs: int = QUICK_INPUTS,
    seed: int = 0,
    suffix: str = ".txt",
    limit_s: float = LIMIT_S,
) -> dict[str, int]:
    """Feed ``n_inputs`` mutants of ``seeds`` to ``target(path)``; assert the contract.
    Returns how many inputs were accepted and how many were user errors (a fuzz target
    whose every input is refused, or accepted, tests less than it seems: callers assert
    on both counts)."""
    rng = random.Random(seed)
    counts = {"accepted": 0, "user_errors": 0}
    path = folder / f"fuzz-input{suffix}"
    for i in range(n_inputs):
        data = mutate(seeds[i % len(seeds)], rng)
        path.write_bytes(data)
        start = time.perf_counter()
        try:
            target(path)
        except UserError as exc:
            check_user_error(exc, path)
            counts["user_errors"] += 1
        except Exception as exc:  # the contract is broken: say which input
            keep = folder / f"fuzz-failure-{i}{suffix}"
            keep.write_bytes(data)
            raise AssertionError(
                f"input {i} (kept as {keep}) raised {type(exc).__name__}: {exc}"
            ) from exc
        else:
            counts["accepted"] += 1
        elapsed = time.perf_counter() - start
        assert elapsed < limit_s, f"input {i} took {elapsed:.1f} s (limit {limit_s} s)"
    return counts
