"""Failures: every failing case with its automatic category, rule and pattern beside the person's triage.

While the app classifies the run in the background, the list holds the chunks of cases classified so far and
the status line says so, with the progress; it fills in as each chunk is stored.

Filters cycle through the values present (`a` auto category, `p` pattern, `u` status); a slice filter comes
from the Slices view. Triage keys act on the case under the cursor and the list refreshes from the notes store.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from textual import work
from textual.binding import Binding, BindingType
from textual.worker import Worker, WorkerState

from ragtriage.app.browse import lists as browse_lists
from ragtriage.app.browse import reads as browse_reads
from ragtriage.app.browse.reads import natural_order
from ragtriage.classify import Progress
from ragtriage.safe_text import visible
from ragtriage.tui.screens.table_view import CaseListScreen

FILTERS = {"_auto": "a", "pattern": "p", "status": "u"}


def cycle(values: list[str], current: str | None) -> str | None:
    """None → first value → … → last value → None."""
    if not values:
        return None
    if current not in values:
        return values[0]
    i = values.index(current) + 1
    return values[i] if i < len(values) else None


def distinct_parts(column: pa.ChunkedArray) -> list[str]:
    """The values of a '; '-joined column, each once, sorted."""
    return sorted({p for v in column.to_pylist() if v for p in str(v).split("; ")})


class FailuresScreen(CaseListScreen):
    MODE = "failures"
    FREE_TEXT = ("rule", "query")  # the rule names the category too (ranking.…), so it is the column shown
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "filter('_auto')", "by category"),
        Binding("p", "filter('pattern')", "by pattern"),
        Binding("u", "filter('status')", "by status"),
        Binding("x", "clear_filters", "Clear", show=False),
    ]

    def __init__(self, slice_filter: tuple[str, Any, int] | None = None) -> None:
        super().__init__()
        self.filters: dict[str, str | None] = dict.fromkeys(FILTERS)
        self.slice_filter = slice_filter
        self.slice_cases: set[str] | None = None

    def bar_detail(self) -> str:
        if self.slice_filter:
            return f"run {self.triage.run_id} · slice {self.slice_filter[0]}={visible(self.slice_filter[1])}"
        return f"run {self.triage.run_id}"

    #: The background classification's progress when the list shown is partial (None: the whole run)
    partial: Progress | None = None

    def fetch(self, cur: Any) -> tuple[pa.Table, set[str] | None, Progress | None]:
        run_id = self.triage.run_id
        state = self.triage.classification_state(run_id)
        if state is not None and not state.complete:
            listed = browse_reads.partial_failure_list(cur, run_id, self.triage.cache)
        else:
            listed = self.triage.cache.table("failure_list", run_id, cur)
        rows = browse_lists.triage_table(cur, listed, run_id, self.triage.store)
        cases = None
        if self.slice_filter:
            cases = set(browse_lists.slice_case_ids(cur, *self.slice_filter))
        return rows, cases, state

    def show(self, result: tuple[pa.Table, set[str] | None, Progress | None]) -> None:
        rows, self.slice_cases, self.partial = result
        self.source = self.with_units(rows)
        self.render_table()

    def on_classified(self, p: Progress | None) -> None:
        """A chunk of the open run was stored (or the classification ended): read the list again."""
        if p is None or p.run_id == self.triage.run_id:
            self.reload()

    units: pa.Table | None = None

    def with_units(self, rows: pa.Table) -> pa.Table:
        """The list with the searchable unit ids, once fetched (a join re-orders rows: natural order again)."""
        if self.units is None or "_units" in rows.column_names:
            return rows
        return natural_order(rows.join(self.units, "case_id", join_type="left outer"), "case_id")

    def action_search(self) -> None:
        """`/` searches the unit ids the failures name too: their evidence is fetched now, not with the list."""
        super().action_search()
        if self.units is None:
            self.load_units(self.triage.run_id)

    @work(thread=True, exclusive=True, group="failure-units", exit_on_error=False)
    def load_units(self, run_id: str) -> pa.Table:
        with self.triage.reader.cursor() as cur:
            return browse_lists.failure_units(cur, run_id, self.triage.cache)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "failure-units" and event.worker.node is self:
            if event.state == WorkerState.SUCCESS and self.source is not None:
                self.units = event.worker.result
                self.source = self.with_units(self.source)
                self.render_table()
            return
        super().on_worker_state_changed(event)

    def transform(self, table: pa.Table) -> pa.Table:
        if self.slice_cases is not None:
            table = table.filter(pc.is_in(table.column("case_id"), pa.array(sorted(self.slice_cases), pa.string())))
        for col, value in self.filters.items():
            if value is None:
                continue
            if col == "status" and value == "(untriaged)":
                table = table.filter(pc.is_null(table.column(col)))
            else:
                parts = pc.fill_null(pc.match_substring(table.column(col), value), False)
                table = table.filter(parts)
        return table

    def describe(self) -> str:
        active = [f"{k.lstrip('_')}={visible(v)}" for k, v in self.filters.items() if v]
        head = []
        if self.partial is not None:
            head = [f"PARTIAL: classifying {self.partial.done}/{self.partial.chunks or '?'} chunks"]
        return " · ".join([*head, super().describe(), *active])

    def action_filter(self, column: str) -> None:
        if self.source is None:
            return
        values = distinct_parts(self.source.column(column))
        if column == "status":
            values.append("(untriaged)")
        self.filters[column] = cycle(values, self.filters[column])
        self.render_table()

    def action_clear_filters(self) -> None:
        self.filters = dict.fromkeys(FILTERS)
        self.render_table()

    def stale_key(self) -> tuple[Any, ...]:
        return (*super().stale_key(), self.triage.notes_version)

    def on_note_saved(self) -> None:
        """Called by the app after a note of this run was saved: re-read the triage columns."""
        self.reload()
