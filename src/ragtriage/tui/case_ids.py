"""The case ids a case screen steps through with `n`/`p`, held as the list's Arrow column.

A Failures list of a large run holds many cases; turning them into Python strings when a case opens would cost
the key press its time on the UI thread. The screen reads a handful of neighbours at a time, so they are taken from the
column one by one instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import pyarrow as pa


class CaseIds(Sequence[str]):
    """A read-only sequence of case ids over an Arrow string column (ids are shown as text, never interpreted)."""

    def __init__(self, column: pa.ChunkedArray | pa.Array) -> None:
        self._ids = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [str(v) for v in self._ids[i].to_pylist()]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return str(self._ids[i].as_py())

    def position(self, case_id: str, hint: int | None) -> int:
        """Where ``case_id`` is: ``hint`` (the list's cursor row) when it holds that id, else a search; -1 when
        absent."""
        if hint is not None and 0 <= hint < len(self) and self[hint] == case_id:
            return hint
        ids = self._ids.to_pylist()
        return ids.index(case_id) if case_id in ids else -1
