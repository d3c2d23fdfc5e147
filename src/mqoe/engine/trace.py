"""The trace recorder: typed records kept in memory, turned into tables after the run.

Models guard every emit with ``if trace.enabled:`` so a disabled recorder costs one
attribute read and no record is built. Records are frozen, slotted dataclasses defined
next to the model that emits them (e.g. ``SchedSwitch`` in ``device/cpu.py``).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


class Recorder:
    __slots__ = ("_records", "enabled")

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled
        self._records: defaultdict[type, list[Any]] = defaultdict(list)

    def emit(self, record: Any) -> None:
        """Keep one record (callers check ``enabled`` first, so nothing is built when off)."""
        self._records[type(record)].append(record)

    def records(self, kind: type) -> list[Any]:
        """All records of one type, in emission order (chronological)."""
        return list(self._records.get(kind, ()))

    def kinds(self) -> list[type]:
        return list(self._records)

    def frame(self, kind: type) -> pd.DataFrame:
        """One row per record, one column per dataclass field."""
        import pandas as pd  # only when tables are wanted: runs start without pandas

        columns = [f.name for f in dataclasses.fields(kind)]
        rows = [dataclasses.astuple(r) for r in self._records.get(kind, ())]
        return pd.DataFrame(rows, columns=columns)

    def __len__(self) -> int:
        return sum(len(v) for v in self._records.values())
