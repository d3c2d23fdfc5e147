"""Loading phones: each of a phone's files parsed (:mod:`.parse`), then merged into one
:class:`~mqoe.analysis.memlog.model.PhoneLog` (records sorted by time, duplicates from
overlapping files dropped)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.memlog.model import MEMINFO_COLUMNS, IntArray, LineIssue, ParseStats, PhoneLog
from mqoe.analysis.memlog.parse import _BASE, _FIELDS, _MAX_ISSUES, _FileParser
from mqoe.analysis.memlog.read import _entries, _is_dir, _phone_stem, discover_phones
from mqoe.errors import InputFileError, UserError


def load_fleet(paths: Sequence[str | Path], *, skip_bad_lines: bool = False) -> list[PhoneLog]:
    """Every phone found in ``paths`` (:func:`discover_phones`), loaded."""
    return [
        load_phone(files, name=name, skip_bad_lines=skip_bad_lines)
        for name, files in discover_phones(paths).items()
    ]


def load_phone(
    paths: str | Path | Sequence[str | Path],
    *,
    name: str | None = None,
    skip_bad_lines: bool = False,
) -> PhoneLog:
    """Parse one phone's files (logs and configuration, any mix, or a directory of them).

    Records from all files are merged and sorted by ``unix_ms`` (stable). Raises
    :class:`InputFileError` on the first malformed line unless ``skip_bad_lines``.
    """
    items = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    files: list[Path] = []
    for item in items:
        if _is_dir(item):
            inside = _entries(item)[0]
            if not inside:
                raise InputFileError(item, "no log files in this directory")
            files.extend(inside)
        else:
            files.append(item)
    if not files:
        raise UserError("load_phone needs at least one file")
    label = name if name is not None else (_phone_stem(items[0]) if items else "phone")
    parsed = [_FileParser(path, skip_bad_lines).parse() for path in files]
    return _merge(label, tuple(files), parsed)


# -- merging a phone's files ------------------------------------------------------------


def _reordered(times: IntArray) -> int:
    if len(times) < 2:
        return 0
    return int(np.count_nonzero(times[1:] < np.maximum.accumulate(times)[:-1]))


def _frame(columns: Mapping[str, npt.NDArray[Any]], nullable: Sequence[str] = ()) -> pd.DataFrame:
    data: dict[str, Any] = {}
    for name, values in columns.items():
        if name in nullable:
            data[name] = pd.arrays.IntegerArray(values, values < 0)
        else:
            data[name] = values
    return pd.DataFrame(data)


def _sorted_unique(
    columns: Mapping[str, npt.NDArray[Any]], subset: Sequence[str] | None = None
) -> tuple[dict[str, npt.NDArray[Any]], int]:
    """Stable sort by unix_ms; drop exact duplicates (only possible at equal times).

    Works on the column arrays, so a phone's table is built once (pandas' per-frame
    overhead, not the data, dominated small phones when each file made its own frames).
    """
    out = dict(columns)
    times = out["unix_ms"]
    if len(times) > 1 and not bool(np.all(times[1:] >= times[:-1])):
        order = np.argsort(times, kind="stable")
        out = {name: values[order] for name, values in out.items()}
        times = out["unix_ms"]
    if len(times) < 2 or not bool(np.any(times[1:] == times[:-1])):
        return out, 0
    keys = pd.DataFrame({name: out[name] for name in (subset or list(out))})
    duplicated = keys.duplicated(keep="first").to_numpy(np.bool_)
    return {name: values[~duplicated] for name, values in out.items()}, int(duplicated.sum())


def _joined(files: list[_FileParser], tags: Sequence[str], names: Sequence[str]) -> dict[str, Any]:
    """The columns ``names`` of every file's ``tags`` tables, end to end (file order)."""
    return {
        name: np.concatenate([parsed.columns[tag][name] for parsed in files for tag in tags])
        for name in names
    }


def _merge(name: str, paths: tuple[Path, ...], files: list[_FileParser]) -> PhoneLog:
    base = [column for column, _, _ in _BASE]
    reordered = sum(
        _reordered(parsed.columns[tag]["unix_ms"]) for parsed in files for tag in _FIELDS
    )
    # D before M in each file, so that an M: line repeating a D: line's sample is the one
    # dropped as a duplicate (kind 1 = D, 0 = M).
    joined = _joined(files, ("D", "M"), base)
    joined["kind"] = np.concatenate(
        [
            np.full(len(parsed.columns[tag]["unix_ms"]), code, dtype=np.int8)
            for parsed in files
            for tag, code in (("D", 1), ("M", 0))
        ]
    )
    sample_cols, dup_samples = _sorted_unique(joined, base)
    codes = sample_cols.pop("kind")
    samples = _frame(sample_cols, nullable=["running_services"])
    samples.insert(1, "kind", pd.Series(pd.Categorical.from_codes(codes, pd.Index(["M", "D"]))))
    meminfo_cols, dup_meminfo = _sorted_unique(
        _joined(files, ("D",), ["unix_ms", *MEMINFO_COLUMNS])
    )
    meminfo = _frame(meminfo_cols, nullable=MEMINFO_COLUMNS)
    trim_cols, dup_trims = _sorted_unique(_joined(files, ("T",), [c for c, _, _ in _FIELDS["T"]]))
    trims = _frame(trim_cols)
    broadcast_cols, dup_broadcasts = _sorted_unique(
        _joined(files, ("B",), [c for c, _, _ in _FIELDS["B"]])
    )
    broadcasts = _frame(broadcast_cols)
    configs = [c for parsed in files for c in parsed.configs]
    config = max(reversed(configs), key=lambda c: c.unix_ms) if configs else None
    issues = [LineIssue(str(p.path), line, what) for p in files for line, what in p.issues]
    unknown: Counter[str] = Counter()
    for parsed in files:
        unknown.update(parsed.unknown)
    stats = ParseStats(
        lines=sum(p.n_lines for p in files),
        records={
            "M": int((samples["kind"] == "M").sum()),
            "D": len(meminfo),
            "T": len(trims),
            "B": len(broadcasts),
            "C": len(configs),
        },
        skipped_blank=sum(p.blank for p in files),
        unknown_tags=dict(sorted(unknown.items())),
        reordered=reordered,
        duplicates=dup_samples + dup_meminfo + dup_trims + dup_broadcasts,
        truncated=sum(p.truncated for p in files),
        n_skipped=len(issues),
        skipped=tuple(issues[:_MAX_ISSUES]),
    )
    return PhoneLog(name, paths, samples, meminfo, trims, broadcasts, config, stats)
