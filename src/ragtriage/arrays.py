"""Arrow columns as numpy arrays without pyarrow's ``to_numpy``, which imports pandas whenever it is installed
(a cost paid by the first metric summary, duplicate check or TUI histogram of a process)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    import duckdb

_TYPES = {np.float64: pa.float64(), np.uint64: pa.uint64()}


def non_null_values(col: pa.ChunkedArray | pa.Array, dtype: type[np.float64] | type[np.uint64]) -> npt.NDArray[Any]:
    """The non-null values of ``col`` cast to ``dtype``, read straight from the Arrow value buffers."""
    chunked = col if isinstance(col, pa.ChunkedArray) else pa.chunked_array([col])
    cast = pc.cast(chunked.drop_null(), _TYPES[dtype])
    width = np.dtype(dtype).itemsize
    parts = [
        np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c), offset=c.offset * width) for c in cast.chunks if len(c)
    ]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _text(v: Any) -> str:
    """A value as DuckDB writes it into a VARCHAR (``true``, not Python's ``True``)."""
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    return str(v)


def _validity(valid: npt.NDArray[np.bool_]) -> pa.Buffer | None:
    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _column(values: npt.NDArray[Any], kind: pa.DataType) -> pa.Array:
    """One numpy column as an Arrow array of ``kind`` over buffers built here (NaN or None is null)."""
    n = len(values)
    if values.dtype == object:
        valid = np.array([not _missing(v) for v in values], dtype=bool)
    elif values.dtype.kind == "f":
        valid = ~np.isnan(values)
    else:
        valid = np.ones(n, dtype=bool)
    nulls = int(n - valid.sum())
    if kind == pa.string():
        encoded = [_text(v).encode() if ok else b"" for v, ok in zip(values, valid, strict=True)]
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        buffers = [_validity(valid), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
        return pa.Array.from_buffers(kind, n, buffers, null_count=nulls)
    dtype = {pa.float64(): np.float64, pa.int64(): np.int64, pa.bool_(): np.bool_}[kind]
    data: npt.NDArray[Any] = np.zeros(n, dtype=dtype)
    present = values[valid]
    if kind == pa.int64() and present.dtype.kind in "fO":
        as_float = present.astype(np.float64)
        if not np.array_equal(as_float, np.trunc(as_float)):
            raise ValueError(
                f"a fractional value cannot be an int64 column: {float(as_float[as_float != np.trunc(as_float)][0])!r}"
            )
    data[valid] = present.astype(dtype)
    body = np.packbits(data, bitorder="little") if kind == pa.bool_() else np.ascontiguousarray(data)
    return pa.Array.from_buffers(kind, n, [_validity(valid), pa.py_buffer(body)], null_count=nulls)


def row_numbers(n: int) -> pa.Array:
    """0 .. n-1 as an Arrow int64 array."""
    return over_buffer(np.arange(n, dtype=np.int64))


def over_buffer(values: npt.NDArray[np.int64] | npt.NDArray[np.uint64]) -> pa.Array:
    """A contiguous numpy array of 8-byte integers as an Arrow array over its buffer, no nulls
    (``pa.array(values)`` imports pandas when it is installed)."""
    kind = pa.int64() if values.dtype == np.int64 else pa.uint64()
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(np.ascontiguousarray(values))])


def table_of(columns: dict[str, npt.NDArray[Any]], schema: pa.Schema) -> pa.Table:
    """numpy columns as an Arrow table of ``schema`` (float64, int64, bool, string; NaN or None is null), over
    buffers built here: pyarrow's own constructors from Python or numpy import pandas when it is installed, and a
    throwaway DuckDB database to convert them costs more than the conversion of the handful of rows it is for."""
    return pa.Table.from_arrays([_column(np.asarray(columns[f.name]), f.type) for f in schema], schema=schema)


def table_of_rows(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """A few result rows (dicts keyed by the schema's names) as an Arrow table, through :func:`table_of`: for
    summaries of a handful of rows, which ``pa.Table.from_pylist`` would build only after importing pandas."""
    return table_of({f.name: np.array([r[f.name] for r in rows], dtype=object) for f in schema}, schema)


def rows_where_in(table: pa.Table, column: str, values: Sequence[str]) -> pa.Table:
    """The rows of ``table`` whose string ``column`` is one of ``values``, in table order, filtered by DuckDB:
    pyarrow compares with Python values only after converting them, which imports pandas when it is installed
    (paid by the first case a TUI session opens). An empty table is returned as it is, and the filter runs on a
    cursor of one in-memory database kept for the process: opening a database per call would be paid twice per
    case the TUI opens."""
    if table.num_rows == 0:
        return table
    with _memory().cursor() as cur:
        cur.register("_rows", table)
        return cur.sql(
            f'SELECT * FROM _rows WHERE list_contains($values::VARCHAR[], "{column}")',  # a filter keeps the order
            params={"values": list(values)},
        ).to_arrow_table()


_MEMORY: list[duckdb.DuckDBPyConnection] = []
_MEMORY_LOCK = threading.Lock()


def _memory() -> duckdb.DuckDBPyConnection:
    """The process's in-memory DuckDB database for filtering Arrow tables (opened on first use; cursors of it are
    independent connections, one per call, so threads never share one)."""
    import duckdb

    with _MEMORY_LOCK:
        if not _MEMORY:
            _MEMORY.append(duckdb.connect())
        return _MEMORY[0]
