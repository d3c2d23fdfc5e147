"""A run's tables without pandas: columns stored by pyarrow, DataFrames made on access.

Importing pandas costs more than a trace-driven run itself (~0.4-0.9 s against ~20 ms),
so a scenario may hand its tables over as a :class:`ColumnTable` (named columns, or
rows as dicts) and :class:`Tables` holds them: the store writes each one to Parquet
through pyarrow directly, while ``tables[name]`` still gives the pandas DataFrame every
reader expects (built once, on first access, exactly as ``pd.DataFrame(columns)``
would). :meth:`ColumnTable.to_arrow` gives the same Arrow types ``pa.Table.from_pandas``
gives that DataFrame (a float NaN becomes null, text is ``large_string``), so the files
read back the same through the store; columns it cannot match for certain (mixed
types, None, other dtypes) go through pandas as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import numpy.typing as npt
    import pandas as pd
    import pyarrow as pa

Column = Union[Sequence[Any], "npt.NDArray[Any]"]  # one value per row
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_NUMPY_KINDS = {"f": "float64", "i": "int64", "b": "bool"}  # dtype.kind → exact dtype name


class ColumnTable:
    """A tidy table as named columns of equal length (1-d numpy arrays or lists), or as
    rows (``from_records``: dicts, one per row, as ``pd.DataFrame(rows)`` reads them)."""

    __slots__ = ("_columns", "_records")

    def __init__(self, columns: Mapping[str, Column]) -> None:
        lengths = {len(values) for values in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns have different lengths: {sorted(lengths)}")
        self._columns: dict[str, Column] | None = dict(columns)
        self._records: list[dict[str, Any]] | None = None

    @classmethod
    def from_records(cls, rows: Sequence[Mapping[str, Any]]) -> ColumnTable:
        """The table of ``rows``, one dict per row (columns: keys in first-seen order)."""
        table = cls({})
        table._columns = None
        table._records = [dict(row) for row in rows]
        return table

    def __len__(self) -> int:
        if self._records is not None:
            return len(self._records)
        assert self._columns is not None
        return len(next(iter(self._columns.values()), ()))

    @property
    def column_names(self) -> list[str]:
        if self._records is not None:
            return list(dict.fromkeys(key for row in self._records for key in row))
        assert self._columns is not None
        return list(self._columns)

    def to_pandas(self) -> pd.DataFrame:
        """The DataFrame ``pd.DataFrame`` makes of the columns (or rows) as given."""
        import pandas as pd

        if self._records is not None:
            return pd.DataFrame(self._records)
        return pd.DataFrame(self._columns)

    def to_arrow(self) -> pa.Table:
        """The table ``pa.Table.from_pandas(self.to_pandas(), preserve_index=False)``
        reads back as: built directly where every column's type is certain."""
        import pyarrow as pa

        direct = self.direct_arrow()
        if direct is not None:
            return direct
        return pa.Table.from_pandas(self.to_pandas(), preserve_index=False)

    def direct_arrow(self) -> pa.Table | None:
        """:meth:`to_arrow` built without pandas, or None where pandas must decide."""
        import pyarrow as pa

        columns = self._plain_columns()
        if columns is None:
            return None
        arrays = [arrow_column(values) for values in columns.values()]
        if not all(array is not None for array in arrays):
            return None
        return pa.Table.from_arrays(arrays, names=list(columns))

    def _plain_columns(self) -> dict[str, Column] | None:
        """The columns, or None if rows disagree on their keys (pandas aligns them)."""
        if self._columns is not None:
            return self._columns
        assert self._records is not None
        if not self._records:
            return None
        keys = list(self._records[0])
        if any(list(row) != keys for row in self._records):
            return None
        return {key: [row[key] for row in self._records] for key in keys}

    def __reduce__(self) -> tuple[Any, ...]:  # slots: pickled by its parts (sweep workers)
        if self._records is not None:
            return (ColumnTable.from_records, (self._records,))
        return (ColumnTable, (self._columns,))


def arrow_column(values: Column) -> pa.Array | None:
    """``values`` as the Arrow array pandas + ``from_pandas`` would give, or None when
    that is not certain: a numpy array of float64 / int64 / bool, or a non-empty list
    whose items are all ``float``, all ``int`` (in int64), all ``bool`` or all ``str``.

    Arrays are assembled from their buffers: ``pa.array`` imports pandas on its first
    call (to ask whether its argument is a pandas object), whatever it is given."""
    import numpy as np

    if isinstance(values, np.ndarray):
        if values.ndim != 1 or _NUMPY_KINDS.get(values.dtype.kind) != values.dtype.name:
            return None
        return _numeric(values)
    if not values or not isinstance(values, list | tuple):
        return None
    kind = type(values[0])
    if any(type(value) is not kind for value in values):
        return None
    if kind is float:
        return _numeric(np.array(values, np.float64))
    if kind is int:
        if not all(_INT64_MIN <= value <= _INT64_MAX for value in values):
            return None  # pandas would make it uint64 or object
        return _numeric(np.array(values, np.int64))
    if kind is bool:
        return _numeric(np.array(values, np.bool_))
    if kind is str:  # pandas' str dtype → large_string
        return large_strings(values)
    return None


def _numeric(values: npt.NDArray[Any]) -> pa.Array:
    """A float64, int64 or bool numpy array as Arrow; a float NaN is null (from_pandas)."""
    import numpy as np
    import pyarrow as pa

    n = len(values)
    if values.dtype.kind == "b":
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
    data = pa.py_buffer(np.ascontiguousarray(values))
    if values.dtype.kind == "i":
        return pa.Array.from_buffers(pa.int64(), n, [None, data])
    valid = ~np.isnan(values)
    nulls = n - int(valid.sum())
    if not nulls:
        return pa.Array.from_buffers(pa.float64(), n, [None, data])
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.float64(), n, [bitmap, data], null_count=nulls)


def large_strings(values: Sequence[str]) -> pa.Array | None:
    """``pa.array(values, pa.large_string())``, from UTF-8 bytes and int64 offsets (None
    for a string UTF-8 cannot encode: pandas' way reports it)."""
    import numpy as np
    import pyarrow as pa

    try:
        encoded = [value.encode("utf-8") for value in values]
    except UnicodeEncodeError:
        return None
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(data) for data in encoded], out=offsets[1:])
    data = pa.py_buffer(b"".join(encoded))
    return pa.LargeStringArray.from_buffers(len(encoded), pa.py_buffer(offsets), data)


Held = Union["pd.DataFrame", ColumnTable]


class Tables(Mapping[str, "pd.DataFrame"]):
    """A run's named tables: ``tables[name]`` is a DataFrame (made once, on first access,
    from a :class:`ColumnTable`); :meth:`held` gives each table as it was given."""

    __slots__ = ("_frames", "_held")

    def __init__(self, tables: Mapping[str, Held] | None = None) -> None:
        self._held: dict[str, Held] = dict(tables or {})
        self._frames: dict[str, pd.DataFrame] = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        frame = self._frames.get(name)
        if frame is None:
            held = self._held[name]
            frame = held.to_pandas() if isinstance(held, ColumnTable) else held
            self._frames[name] = frame
        return frame

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def held(self, name: str) -> Held:
        """Table ``name`` as stored: its DataFrame once one was made (a reader may have
        changed it), else the :class:`ColumnTable` it was given as."""
        frame = self._frames.get(name)
        return frame if frame is not None else self._held[name]

    def n_rows(self, name: str) -> int:
        """The number of rows of table ``name``, without making its DataFrame."""
        return len(self.held(name))

    def __repr__(self) -> str:
        return f"Tables({', '.join(f'{name}: {self.n_rows(name)} rows' for name in self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Tables, ({name: self.held(name) for name in self},))


def held_table(tables: Mapping[str, pd.DataFrame], name: str) -> Held:
    """Table ``name`` of a record's tables as held (any mapping of DataFrames works)."""
    return tables.held(name) if isinstance(tables, Tables) else tables[name]
