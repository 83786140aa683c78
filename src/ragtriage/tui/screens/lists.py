"""The list views: Slices, Zero-hit, Leakage and Compare (Failures has its own module for its filters)."""

from __future__ import annotations

from typing import Any, ClassVar

import pyarrow as pa
from textual.binding import Binding, BindingType

from ragtriage.tui import data
from ragtriage.tui.screens.table_view import TableScreen

DIMENSIONS = data.CASE_DIMENSIONS + data.EVIDENCE_DIMENSIONS


class ZeroHitScreen(TableScreen):
    """Answerable cases with no relevant unit in the final top k."""

    MODE = "zerohit"

    def fetch(self, cur: Any) -> pa.Table:
        return data.zero_hit(cur, self.triage.run_id, self.triage.cache)


class LeakageScreen(TableScreen):
    """Every leaked result row: a hard failure, never averaged away, drawn in the error colour."""

    MODE = "leakage"
    TABLE_CLASSES = "hard-failure"
    DEFAULT_CSS = """
    LeakageScreen ArrowTable.hard-failure { color: $text-error; }
    LeakageScreen ArrowTable.hard-failure > .datatable--header { background: $error; color: $text; }
    LeakageScreen #status { color: $text-error; text-style: bold; }
    """

    def fetch(self, cur: Any) -> pa.Table:
        return data.with_query(cur, self.triage.cache.get("leakage", self.triage.run_id, cur))

    def describe(self) -> str:
        assert self.source is not None
        n = self.source.num_rows
        head = f"LEAKAGE: {n} result rows the principal may not see" if n else "no leaked rows in this run"
        return f"{head} · {super().describe()}"


class SlicesScreen(TableScreen):
    """Slices worst first by one dimension; `d` picks the dimension, Enter lists the slice's failing cases."""

    MODE = "slices"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "dimension", "Dimension"),
        Binding("enter", "open", "Failing cases"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.dimension = DIMENSIONS[0]
        self.measure = ""  # "nDCG@10 grade>=2 exponential": the columns that are the same on every row

    def bar_detail(self) -> str:
        return f"run {self.triage.run_id} · by {self.dimension}" + (f" · {self.measure}" if self.measure else "")

    def fetch(self, cur: Any) -> pa.Table:
        return data.slices(cur, self.triage.run_id, self.dimension)

    def show(self, result: pa.Table) -> None:
        first = result.slice(0, 1).to_pylist()
        if first and {"measure", "threshold", "gain"} <= set(first[0]):
            row = first[0]
            self.measure = f"{row['measure']} grade>={row['threshold']} {row['gain']}"
        super().show(result)

    def action_dimension(self) -> None:
        self.dimension = DIMENSIONS[(DIMENSIONS.index(self.dimension) + 1) % len(DIMENSIONS)]
        self.sort_column = None
        self.reload()

    def slice_value(self, row: dict[str, Any]) -> Any:
        for key in ("slice_value", self.dimension, "value", "slice"):
            if key in row:
                return row[key]
        return next(iter(row.values()))

    def action_open(self) -> None:
        row = self.current_row()
        if row is None:
            return
        from ragtriage.tui.screens.failures import FailuresScreen

        self.app.push_screen(FailuresScreen(slice_filter=(self.dimension, self.slice_value(row))))


class CompareScreen(TableScreen):
    """Per-case deltas of the run against the baseline, worst regression first; `b` picks the baseline."""

    MODE = "compare"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("b", "baseline", "Baseline")]

    def bar_detail(self) -> str:
        return f"{self.triage.run_id} vs {self.triage.baseline or '(no baseline)'}"

    def __init__(self) -> None:
        super().__init__()
        self.wins_losses = ""

    def fetch(self, cur: Any) -> tuple[pa.Table, str]:
        if not self.triage.baseline:
            raise data.ViewError("no baseline run: press b to pick one, or start with --baseline RUN")
        return data.compare(cur, self.triage.run_id, self.triage.baseline)

    def show(self, result: tuple[pa.Table, str]) -> None:
        self.source, self.wins_losses = result
        self.render_table()

    def describe(self) -> str:
        return " · ".join(p for p in (self.wins_losses and f"wins/losses {self.wins_losses}", super().describe()) if p)

    def action_baseline(self) -> None:
        others = [r for r in self.triage.runs if r != self.triage.run_id]
        if not others:
            self.show_error("only one run is loaded; load another to compare")
            return
        current = self.triage.baseline
        self.triage.baseline = others[(others.index(current) + 1) % len(others)] if current in others else others[0]
        self.reload()
