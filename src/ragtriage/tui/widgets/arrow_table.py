"""A virtualised table over an Arrow table (textual-fastdatatable), with vim keys, sort and literal text.

fastdatatable renders only the visible rows, so a 100k-row failures list paints as fast as a 10-row one; the
widget is rebuilt on every new table because the backend is fixed at construction.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from textual.binding import Binding, BindingType
from textual_fastdatatable import ArrowBackend, DataTable

MAX_CELL_WIDTH = 36


def displayable(table: pa.Table) -> pa.Table:
    """Nested and JSON columns as text so that every cell renders on one line; floats rounded to 4 decimals (the
    precision the CLI prints), still numbers, so they stay right-aligned and sortable."""
    cols = []
    for col in table.columns:
        if pa.types.is_floating(col.type):
            col = pc.round(col, 4)
        elif pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
            col = pc.binary_join(pc.cast(col, pa.list_(pa.string())), ", ")
        elif pa.types.is_struct(col.type) or pa.types.is_map(col.type):
            col = pa.array([None if v is None else str(v) for v in col.to_pylist()], pa.string())
        cols.append(col)
    return pa.table(cols, names=table.column_names)


class ArrowTable(DataTable):
    """Row-cursor table; `j`/`k`/`g`/`G` move like arrows/Home/End. Data is shown literally (no markup)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open"),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "cursor_table_start", "Top", show=False),
        Binding("G", "cursor_table_end", "Bottom", show=False),
        Binding("ctrl+f", "page_down", "Page down", show=False),
        Binding("ctrl+b", "page_up", "Page up", show=False),
    ]

    def __init__(self, table: pa.Table, **kwargs: Any) -> None:
        self.arrow = table
        super().__init__(
            backend=ArrowBackend(displayable(table)),
            cursor_type="row",
            max_column_content_width=MAX_CELL_WIDTH,
            render_markup=False,
            show_row_labels=False,
            zebra_stripes=True,
            **kwargs,
        )

    def row_dict(self, index: int | None = None) -> dict[str, Any] | None:
        """The source row under the cursor (or at ``index``) as a dict, from the Arrow table."""
        i = self.cursor_row if index is None else index
        if not 0 <= i < self.arrow.num_rows:
            return None
        row: dict[str, Any] = self.arrow.slice(i, 1).to_pylist()[0]
        return row
