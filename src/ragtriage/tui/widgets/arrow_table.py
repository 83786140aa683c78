"""A virtualised table over an Arrow table (textual-fastdatatable), with vim keys and literal, legible cells.

fastdatatable renders only the visible rows, so a long list paints as fast as a short one; the widget is
rebuilt on every new table because the backend is fixed at construction. What it is given is made legible
first (:func:`displayable`): every string through the one sanitiser, ids cut in the middle, numbers as
right-aligned fixed-width text with 4 decimals (never ``0.…``), and the free-text column given the width left.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual_fastdatatable import ArrowBackend, DataTable

from ragtriage.safe_text import is_string_type, visible, visible_array

ID_WIDTH = 24
LABEL_WIDTH = 40
MIN_TEXT = 20
GAP = 2
#: Columns holding free text: they take the width the other columns leave (a view may name its own).
FREE_TEXT = ("query", "rules")


def middle_cut(column: pa.ChunkedArray, width: int) -> pa.ChunkedArray:
    """Strings longer than ``width`` cut in the middle (``pol-trav…2024#06``), vectorised."""
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    long = pc.fill_null(pc.greater(pc.utf8_length(column), width), False)
    cut = pc.binary_join_element_wise(
        pc.utf8_slice_codeunits(column, 0, head), pc.utf8_slice_codeunits(column, -tail) if tail else "", "…"
    )
    return pc.if_else(long, cut, column)


def end_cut(column: pa.ChunkedArray, width: int) -> pa.ChunkedArray:
    long = pc.fill_null(pc.greater(pc.utf8_length(column), width), False)
    return pc.if_else(long, pc.binary_join_element_wise(pc.utf8_slice_codeunits(column, 0, width - 1), "…", ""), column)


def fixed4(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Floats as ``0.1250`` text (4 decimals, compact past 1e6), right-aligned by padding to the widest."""
    values = pc.fill_null(pc.cast(col, pa.float64()), float("nan")).to_numpy()
    finite = np.nan_to_num(values)
    out = np.where(np.isnan(values), "—", np.char.mod("%.4f", finite))
    big = np.abs(finite) >= 1e6
    if big.any():
        out = np.where(big, np.char.mod("%.4g", finite), out)
    width = max((len(s) for s in out), default=1)
    return pa.chunked_array([pa.array(np.char.rjust(out.astype(str), width))], pa.string())


def displayable(table: pa.Table, width: int, free_text: tuple[str, ...] = FREE_TEXT, keep: int = 0) -> pa.Table:
    """``table`` as the cells a person reads at ``width`` columns (see the module docstring); columns whose name
    starts with ``_`` are for search only and not shown. The first ``keep`` columns must fit beside the free text
    even when they come after it (Slices: the value, then its n, mean, median, p10 and zero-hit rate)."""
    table = table.select([n for n in table.column_names if not n.startswith("_")])
    cols: list[Any] = []
    fixed = 0
    # columns after the last free-text one are for wide screens: they do not take width from the free text
    last_free = max((i for i, n in enumerate(table.column_names) if n in free_text), default=len(table.columns))
    for i, (name, col) in enumerate(zip(table.column_names, table.columns, strict=True)):
        if pa.types.is_floating(col.type):
            col = fixed4(col)
        elif pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
            col = pc.binary_join(pc.cast(col, pa.list_(pa.string())), ", ")
        elif pa.types.is_struct(col.type) or pa.types.is_map(col.type):
            col = pa.array([None if v is None else str(v) for v in col.to_pylist()], pa.string())
        if is_string_type(col.type):
            col = visible_array(col)
            if name.endswith("id"):
                col = middle_cut(col, ID_WIDTH)  # ids differ at both ends
            elif name not in free_text:
                col = end_cut(col, LABEL_WIDTH)
        cols.append(col)
        if name not in free_text and (i < last_free or i < keep):
            fixed += max(len(name), column_width(col)) + GAP
    free = {n: column_width(c) for n, c in zip(table.column_names, cols, strict=True) if n in free_text}
    if free:
        rooms = share(free, width - fixed - 2)
        cols = [end_cut(c, rooms[n]) if n in rooms else c for n, c in zip(table.column_names, cols, strict=True)]
    return pa.table(cols, names=table.column_names)


def share(natural: dict[str, int], room: int) -> dict[str, int]:
    """Split ``room`` cells between free-text columns: narrow ones keep their natural width, the widest take
    what is left in equal parts (never below MIN_TEXT)."""
    out: dict[str, int] = {}
    left = dict(natural)
    while left:
        each = max(MIN_TEXT, room // len(left) - GAP)
        fits = {n: w for n, w in left.items() if max(w, len(n)) <= each}
        if not fits:
            return {**out, **dict.fromkeys(left, each)}
        for n, w in fits.items():
            out[n] = max(w, len(n))
            room -= out[n] + GAP
            del left[n]
    return out


def column_width(col: Any) -> int:
    if is_string_type(col.type):
        longest = pc.max(pc.utf8_length(col)).as_py()
        return int(longest or 0)
    return max((len(str(v)) for v in (pc.min(col).as_py(), pc.max(col).as_py())), default=1)


class ArrowTable(DataTable):
    """Row-cursor table; `j`/`k`/`g`/`G` move like arrows/Home/End. Data is shown literally (no markup)."""

    # As tall as the box it is in: fastdatatable's own rule (auto, at most the terminal's height) made it taller
    # than its box, so the rows it scrolled to could be under the footer, the cursor highlighted out of sight.
    DEFAULT_CSS = """
    ArrowTable { height: 1fr; max-height: 100%; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open"),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "cursor_table_start", "Top", show=False),
        Binding("G", "cursor_table_end", "Bottom", show=False),
        Binding("ctrl+f", "page_down", "Page down", show=False),
        Binding("ctrl+b", "page_up", "Page up", show=False),
    ]

    def __init__(
        self,
        table: pa.Table,
        width: int = 80,
        free_text: tuple[str, ...] = FREE_TEXT,
        keep: int = 0,
        *,
        cursor_row: int = 0,
        **kwargs: Any,
    ) -> None:
        self.arrow = table
        shown = displayable(table, width, free_text, keep)
        super().__init__(
            backend=ArrowBackend(shown),
            # as Text: a label string would be read as markup (a run id `[b]x[/b]` names a Compare column)
            column_labels=[Text(visible(name)) for name in shown.column_names],
            cursor_type="row",
            max_column_content_width=max(width, MIN_TEXT),
            render_markup=False,
            show_row_labels=False,
            zebra_stripes=True,
            **kwargs,
        )
        # The cursor starts on ``cursor_row`` (the case a re-sorted or re-filtered list keeps): set now, so the
        # screen reads that row at once, and scrolled into view once the table knows its height (fastdatatable
        # measures it when idle after mounting; a scroll before that is clamped to the top, leaving the cursor
        # below the screen, highlighted nowhere).
        self.set_reactive(DataTable.cursor_coordinate, Coordinate(max(0, min(cursor_row, table.num_rows - 1)), 0))
        self._scroll_pending = self.cursor_row > 0

    _scroll_pending = False
    _scroll_tries = 0

    def watch_virtual_size(self) -> None:
        self._scroll_once_sized()

    def on_resize(self) -> None:
        """A table made shorter (a status line wrapping, a smaller terminal) keeps its cursor's row drawn: a key
        acts on that row, so the user must see it."""
        if self._scroll_pending:
            self._scroll_once_sized()
        elif self.size.height > 0 and not self.cursor_visible() and 0 <= self.cursor_row < self.row_count:
            top = round(self.scroll_y)
            y = self.cursor_row if self.cursor_row < top else self.cursor_row - self.rows_in_view() + 1
            self.scroll_to(y=max(0, y), animate=False, immediate=True)

    def _scroll_once_sized(self) -> None:
        """Scroll the starting row into view once the table has a height and knows its rows; again after the next
        refresh when the scroll did not take (a table laid out for the first time may not allow scrolling yet)."""
        if not (self._scroll_pending and self.virtual_size.height > 0 and self.size.height > 0):
            return
        self.show_cursor_row()
        self._scroll_tries += 1
        if self.cursor_visible() or self._scroll_tries >= 5:
            self._scroll_pending = False
        else:
            self.call_after_refresh(self._scroll_once_sized)

    def rows_in_view(self) -> int:
        """How many data rows the table shows at once (its height less the header)."""
        return max(1, self.scrollable_content_region.height - (self.header_height if self.show_header else 0))

    def show_cursor_row(self) -> None:
        """Scroll so the cursor's row is in the middle of the table (a table just mounted has no size yet, so a
        cursor moved then stays below the screen, highlighted nowhere)."""
        self.scroll_to(y=max(0, self.cursor_row - self.rows_in_view() // 2), animate=False, immediate=True)

    def cursor_visible(self) -> bool:
        """Whether the cursor's row is one of the rows drawn now."""
        top = round(self.scroll_y)
        return 0 <= self.cursor_row < self.row_count and top <= self.cursor_row < top + self.rows_in_view()

    def row_dict(self, index: int | None = None) -> dict[str, Any] | None:
        """The source row under the cursor (or at ``index``) as a dict, from the Arrow table."""
        i = self.cursor_row if index is None else index
        if not 0 <= i < self.arrow.num_rows:
            return None
        row: dict[str, Any] = self.arrow.slice(i, 1).to_pylist()[0]
        return row
