"""The values a memory-signal log is read into: a phone's configuration, its tidy
tables (:class:`PhoneLog`), what was skipped (:class:`ParseStats`), and the names of
trim levels, states, broadcasts and meminfo fields."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
ObjArray = npt.NDArray[np.object_]

#: Android's ``ComponentCallbacks2`` trim levels plus the logger's 0 = "none".
TRIM_LEVELS = (0, 5, 10, 15, 20, 40, 60, 80)
STATES = ("Normal", "Moderate", "Low", "Critical")
_STATE_OF_LEVEL = np.zeros(81, dtype=np.int64)  # trim level → index into STATES
_STATE_OF_LEVEL[[5, 10, 15]] = [1, 2, 3]  # RUNNING_MODERATE / LOW / CRITICAL; others Normal
BROADCASTS = ("SCREEN_ON", "SCREEN_OFF", "POWER_SAVE_MODE_CHANGED", "BATTERY_LOW", "BATTERY_OKAY")

MEMINFO_FIELDS = (
    "MemFree", "Buffers", "Cached", "SwapCached", "Active", "Inactive", "Active(anon)",
    "Inactive(anon)", "Active(file)", "Inactive(file)", "Unevictable", "SwapTotal",
    "SwapFree", "Dirty", "Writeback", "AnonPages", "Mapped", "VmallocTotal",
    "VmallocUsed", "VmallocChunk",
)  # fmt: skip


def _snake(name: str) -> str:
    name = name.replace("(", "_").replace(")", "")
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower() + "_kb"


MEMINFO_COLUMNS = tuple(_snake(name) for name in MEMINFO_FIELDS)


# -- parsed data --------------------------------------------------------------------


@dataclass(frozen=True)
class PhoneConfig:
    """The fields of a phone's ``C:`` line (the latest one)."""

    unix_ms: int
    age: str
    answers: tuple[str, str, str, str, str]  # q1..q5, as written
    q6_text: str
    manufacturer: str
    total_mem_bytes: int  # ActivityManager.MemoryInfo.totalMem
    threshold_bytes: int  # MemoryInfo.threshold (low-memory threshold)
    is_low_ram_device: bool
    n_cores: int
    api: int


@dataclass(frozen=True)
class LineIssue:
    """A malformed line skipped with ``skip_bad_lines=True``."""

    path: str
    line: int
    what: str


@dataclass(frozen=True)
class ParseStats:
    """What parsing a phone's files met, for data-quality reporting."""

    lines: int = 0  # physical lines read
    records: Mapping[str, int] = field(default_factory=dict)  # kept records per tag
    skipped_blank: int = 0  # blank and '#' lines
    unknown_tags: Mapping[str, int] = field(default_factory=dict)  # ignored lines per tag
    reordered: int = 0  # records earlier than a preceding one of the same tag and file
    duplicates: int = 0  # exact duplicate records dropped
    truncated: int = 0  # cut-off writes dropped: bad unterminated last line, NUL lines
    n_skipped: int = 0  # malformed lines skipped (skip_bad_lines=True)
    skipped: tuple[LineIssue, ...] = ()  # the first _MAX_ISSUES of them


@dataclass(frozen=True)
class PhoneLog:
    """One phone's log, sorted by time. DataFrame columns are named with their units."""

    name: str
    paths: tuple[Path, ...]
    samples: pd.DataFrame  # M: and D: lines: unix_ms, kind, the 8 M: fields
    meminfo: pd.DataFrame  # D: lines: unix_ms and the 20 /proc/meminfo values (kB)
    trims: pd.DataFrame  # T: lines
    broadcasts: pd.DataFrame  # B: lines: unix_ms, event
    config: PhoneConfig | None  # the latest C: line, if any
    stats: ParseStats
