"""A list view over one Arrow table: `/` searches ids and query text, `t`/`T` sort by any column, Enter opens
the case under the cursor. Zero-hit, Leakage, Slices, Failures and Compare are all this with their own fetch.

Search and sort re-order rows the core already produced; no figure is derived here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, overload

import pyarrow as pa
import pyarrow.compute as pc
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.timer import Timer
from textual.widgets import Input

from ragtriage.tui.screens.base import TRIAGE_BINDINGS, DataScreen, TriageKeys
from ragtriage.tui.text import sort_table
from ragtriage.tui.widgets.arrow_table import FREE_TEXT, ArrowTable

#: Columns `/` searches; ``_units`` is a hidden column of the unit ids a row's case involves.
SEARCHABLE = ("case_id", "query", "unit_id", "document_id", "chunk_id", "run_id", "slice_value", "_units")
MOVE_KEYS = (
    ("j,down", "down"),
    ("k,up", "up"),
    ("g,home", "top"),
    ("G,end", "bottom"),
    ("ctrl+f,pagedown", "pagedown"),
    ("ctrl+b,pageup", "pageup"),
)


def replay(moves: list[str], row: int, n_rows: int, page: int) -> int:
    """The cursor row after the moves typed while the list was loading, clamped to the rows there are."""
    for move in moves:
        row = {
            "down": row + 1,
            "up": row - 1,
            "top": 0,
            "bottom": n_rows - 1,
            "pagedown": row + page,
            "pageup": row - page,
        }.get(move, row)
        row = max(0, min(row, n_rows - 1))
    return max(row, 0)


def search_rows(table: pa.Table, text: str) -> pa.Table:
    """Rows whose id or query columns contain ``text`` (case-insensitive)."""
    if not text:
        return table
    cols = [c for c in table.column_names if c in SEARCHABLE and pa.types.is_string(table.schema.field(c).type)]
    if not cols:
        return table
    mask = None
    for c in cols:
        hit = pc.fill_null(pc.match_substring(table.column(c), text, ignore_case=True), False)
        mask = hit if mask is None else pc.or_(mask, hit)
    return table.filter(mask)


def row_of(table: pa.Table, column: str, value: Any) -> int:
    """The first row whose ``column`` holds ``value``; the first row when none does (any more)."""
    if value is None or column not in table.column_names:
        return 0
    found = pc.index(table.column(column), pa.scalar(value, table.schema.field(column).type)).as_py()
    return max(0, int(found))


class TableScreen(DataScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open"),
        Binding("slash", "search", "Search"),
        Binding("t", "sort", "Sort"),
        Binding("T", "reverse", "Reverse sort", show=False),
        *(Binding(keys, f"move('{move}')", move, show=False) for keys, move in MOVE_KEYS),
    ]
    AUTO_FOCUS = "ArrowTable"
    DEFAULT_CSS = """
    TableScreen #search { height: 1; border: none; padding: 0 1; }
    TableScreen #tablebox { height: 1fr; }
    """
    TABLE_CLASSES: ClassVar[str] = ""
    FREE_TEXT: ClassVar[tuple[str, ...]] = FREE_TEXT
    #: How many leading columns must fit at 80 columns beside the free text (see ``displayable``'s ``keep``).
    KEY_COLUMNS: ClassVar[int] = 0

    def __init__(self) -> None:
        super().__init__()
        self.source: pa.Table | None = None
        self.shown: pa.Table | None = None
        self.sort_column: str | None = None
        self.descending = False
        self.search_text = ""
        self.pending: list[str] = []
        self._table: ArrowTable | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        search = Input(placeholder="search ids (case, unit) and query text; Enter keeps, Escape clears", id="search")
        search.display = False
        yield search
        yield from self.compose_above()
        yield Container(id="tablebox")
        yield from self.compose_below()
        yield from self.compose_footer()

    def compose_above(self) -> ComposeResult:
        """What a view shows over its list (Compare: each run's leakage verdict, before any figure)."""
        yield from ()

    def compose_below(self) -> ComposeResult:
        """What a view shows under its list (Leakage: the case's reasons; Compare: the Δ histogram)."""
        yield from ()

    def show(self, result: pa.Table) -> None:
        self.source = result
        self.render_table()

    def replay_pending(self) -> None:
        """Keys typed while the list was loading act now, in order: cursor moves, then Enter."""
        moves, self.pending = self.pending, []
        widget = self.table_widget()
        if widget is None or not moves:
            return
        cursor = [m for m in moves if m != "open"]
        if cursor and self.shown is not None and self.shown.num_rows:
            page = max(1, self.size.height - 6)
            widget.move_cursor(row=replay(cursor, widget.cursor_row, self.shown.num_rows, page))
        if "open" in moves:
            self.action_open()

    def action_move(self, move: str) -> None:
        """Cursor keys that reach the screen: the table is not there yet (queue them) or not focused."""
        widget = self.table_widget()
        if widget is None or self.shown is None:
            self.pending.append(move)
            return
        if self.shown.num_rows:
            page = max(1, widget.size.height - 1)
            widget.move_cursor(row=replay([move], widget.cursor_row, self.shown.num_rows, page))
        widget.focus()

    ROW_NOUN: ClassVar[str] = "cases"

    def describe(self) -> str:
        """The status line: row counts, sort and search; views add their filters."""
        assert self.source is not None and self.shown is not None
        parts = [f"{self.shown.num_rows} of {self.source.num_rows} {self.ROW_NOUN}"]
        if self.sort_column:
            parts.append(f"sorted by {self.sort_column} {'desc' if self.descending else 'asc'}")
        if self.search_text:
            parts.append(f"search {self.search_text!r}")
        return " · ".join(parts)

    def transform(self, table: pa.Table) -> pa.Table:
        """Views with filters narrow the rows here (before search and sort)."""
        return table

    #: The column naming a row: a list re-sorted, re-filtered, searched or reloaded keeps the cursor on the row
    #: with the same value when it is still listed, else on the first row.
    KEY_COLUMN: ClassVar[str] = "case_id"

    def render_table(self) -> None:
        if self.source is None:
            return
        keep = self.cursor_key()
        shown = search_rows(self.transform(self.source), self.search_text)
        if self.sort_column is not None and self.sort_column in shown.column_names:
            shown = sort_table(shown, self.sort_column, descending=self.descending)
        self.shown = shown
        box = self.query_one("#tablebox", Container)
        if not box.is_attached:
            return  # a key typed while the app quits (q then u): the screen is being taken down
        box.remove_children()
        self._rendered_width = self.app.size.width
        widget = ArrowTable(
            shown,
            self._rendered_width,
            self.FREE_TEXT,
            self.KEY_COLUMNS,
            cursor_row=row_of(shown, self.KEY_COLUMN, keep),
            classes=self.TABLE_CLASSES,
        )
        box.mount(widget)
        if not self.query_one("#search", Input).has_focus:
            widget.focus()
        first = self._table is None
        self._table = widget
        self.set_status(self.describe())
        self.replay_pending()
        if first:
            # The list's first showing: read the cursor's case now, not after the cursor rests (the table's first
            # paint of a long list keeps the UI thread busy for a while).
            self._prefetch_highlighted()

    _rendered_width = 0

    def on_resize(self) -> None:
        if self.source is not None and self.app.size.width != self._rendered_width:
            self.render_table()  # free text takes the new width

    def table_widget(self) -> ArrowTable | None:
        """The table now shown (the one being replaced may still be in the DOM for a frame)."""
        return self._table

    def on_screen_resume(self) -> None:
        """Back from the case screen: the cursor on the case it showed last (after any n/p there, whatever the
        list's search or sort), when the list still shows it."""
        super().on_screen_resume()
        last, widget = self.triage.last_case, self.table_widget()
        if last is None or widget is None or self.shown is None or "case_id" not in self.shown.column_names:
            return
        found = pc.index(self.shown.column("case_id"), pa.scalar(last, self.shown.schema.field("case_id").type))
        self.triage.last_case = None  # once: back from a modal later, the cursor stays where the user put it
        if found.as_py() >= 0:
            widget.move_cursor(row=int(found.as_py()))

    def current_row(self) -> dict[str, Any] | None:
        widget = self.table_widget()
        return widget.row_dict() if widget else None

    def case_ids(self) -> list[str]:
        if self.shown is None or "case_id" not in self.shown.column_names:
            return []
        return [str(c) for c in self.shown.column("case_id").to_pylist()]

    def action_open(self) -> None:
        if self.table_widget() is None:
            self.pending.append("open")
            return
        row = self.current_row()
        widget = self.table_widget()
        if row and row.get("case_id") and self.shown is not None:
            ids = CaseIds(self.shown.column("case_id"))
            self.triage.open_case(str(row["case_id"]), ids, widget.cursor_row if widget is not None else None)

    def on_data_table_row_selected(self, event: Any) -> None:
        self.action_open()

    #: Seconds the cursor rests on a row before its case is read ahead (scrolling past rows reads nothing).
    PREFETCH_AFTER: ClassVar[float] = 0.05
    _prefetch_timer: Timer | None = None

    def on_data_table_row_highlighted(self, event: Any) -> None:
        """Read the highlighted row's case ahead (``TriageApp.prefetch_case``): Enter then finds it read or under
        way, instead of starting the read while Textual mounts the case screen."""
        if self._prefetch_timer is not None:
            self._prefetch_timer.stop()
        self._prefetch_timer = self.set_timer(self.PREFETCH_AFTER, self._prefetch_highlighted)

    def _prefetch_highlighted(self) -> None:
        self._prefetch_timer = None
        case_id = self.cursor_case()
        if case_id is not None and self.is_current:
            self.triage.prefetch_case(case_id)

    def action_sort(self) -> None:
        if self.source is None or not self.source.column_names:
            return
        names = self.source.column_names
        i = names.index(self.sort_column) + 1 if self.sort_column in names else 0
        self.sort_column = names[i % len(names)]
        self.render_table()

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self.render_table()

    def cursor_key(self) -> Any:
        row = self.current_row()
        return row.get(self.KEY_COLUMN) if row else None

    def cursor_case(self) -> str | None:
        row = self.current_row()
        return str(row["case_id"]) if row and row.get("case_id") is not None else None

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "search":
            self.search_text = event.value
            self.render_table()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "search":
            widget = self.table_widget()
            if widget:
                widget.focus()

    def action_back(self) -> None:
        box = self.query_one("#search", Input)
        if box.has_focus or self.search_text:
            box.value = ""
            box.display = False
            self.search_text = ""
            self.render_table()
            return
        super().action_back()


class CaseListScreen(TriageKeys, TableScreen):
    """A list with one row per case (Failures, Zero-hit, Leakage, Compare): the triage keys act on the highlighted
    case, which sort, filter, search and reload keep on screen."""

    BINDINGS: ClassVar[list[BindingType]] = TRIAGE_BINDINGS

    def triage_case(self) -> str | None:
        return self.cursor_case()


class CaseIds(Sequence[str]):
    """The case ids a case screen steps through with `n`/`p`: a read-only sequence over the list's Arrow column
    (ids are shown as text, never interpreted). A Failures list of a large run holds many cases; turning them into
    Python strings when a case opens would cost the key press its time on the UI thread, so the screen's handful
    of neighbours is taken from the column one by one."""

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
