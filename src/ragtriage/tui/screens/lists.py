"""The list views: Slices, Zero-hit, Leakage and Compare (Failures has its own module for its filters).

Every list has one row per case (Slices one per slice value, whose Enter lists its failing cases); Enter opens
the case and `n`/`p` there follow this list's order.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from ragtriage.app.browse import lists as browse_lists
from ragtriage.app.browse.case import case_leaks
from ragtriage.app.browse.compare import (
    CompareCauses,
    CompareView,
    RunsMatrix,
    compare_causes,
    compare_stats,
    compare_view,
    runs_matrix,
)
from ragtriage.app.browse.lists import FAILS, NOT_CHECKED, LeakVerdict, leak_verdict
from ragtriage.app.browse.reads import CASE_MEASURES, ViewError
from ragtriage.app.render.comparison import TEXT_HEADERS, text_rows
from ragtriage.metrics.slices import CASE_FIELDS
from ragtriage.safe_text import visible
from ragtriage.tui.case_layout import leak_lines
from ragtriage.tui.screens.modals import Pick
from ragtriage.tui.screens.table_view import CaseListScreen, TableScreen
from ragtriage.tui.text import lit
from ragtriage.tui.widgets.line_table import Column, LineTable
from ragtriage.tui.widgets.plots import DeltaHistogram


def stats_lines(stats: pa.Table, measure: str, by: str | None) -> LineTable:
    """``compare``'s figures as lines (3 decimals fit 80 columns), the shown measure in bold: every measure over
    all cases, or with ``by`` the shown measure over all cases then per slice, worst mean Δ first (the metric
    column left out: the bar names it)."""
    if by is not None:
        stats = stats.filter(pc.equal(stats.column("metric"), measure))
        stats = pa.concat_tables([stats.slice(0, 1), stats.slice(1).sort_by([("mean_diff", "ascending")])])
    shown = {h: i for i, h in enumerate(TEXT_HEADERS)}
    keep = [h for h in TEXT_HEADERS if h != ("metric" if by else "slice")]  # the bar names the one measure
    columns = [
        Column(by if h == "slice" and by else h, right=h not in ("slice", "metric"), flex=h == "slice") for h in keep
    ]
    rows = [
        [lit(row[shown[h]], "bold" if row[shown["metric"]] == measure else "") for h in keep]
        for row in text_rows(stats, digits=3)
    ]
    return LineTable(columns, rows, middle_cut=True)


class ZeroHitScreen(CaseListScreen):
    """Answerable cases with no relevant unit in the run's final top k (the k is in the title)."""

    MODE = "zerohit"

    def __init__(self) -> None:
        super().__init__()
        self.k: int | None = None

    def bar_detail(self) -> str:
        at = f"k={self.k}" if self.k is not None else "the run's k"
        return f"run {self.triage.run_id} · no relevant unit in the final top {at}"

    def fetch(self, cur: Any) -> tuple[pa.Table, int]:
        return browse_lists.zero_hit(cur, self.triage.run_id, self.triage.cache)

    def show(self, result: tuple[pa.Table, int]) -> None:
        self.source, self.k = result
        self.set_bar()
        self.render_table()


class LeakageScreen(CaseListScreen):
    """One row per leaking case, final-stage leaks first; below the list, the highlighted case's leaked results
    with every reason in full (wrapped, never cut). A hard failure, drawn in the error colour."""

    MODE = "leakage"
    TABLE_CLASSES = "hard-failure"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "move('down')", "Next case"),
        Binding("p", "move('up')", "Prev case"),
    ]
    DEFAULT_CSS = """
    LeakageScreen #tablebox { height: 1fr; }
    LeakageScreen #reasons { height: 1fr; border-top: solid $error; padding: 0 1; }
    LeakageScreen ArrowTable.hard-failure { color: $text-error; }
    LeakageScreen ArrowTable.hard-failure > .datatable--header { background: $error; color: $text; }
    LeakageScreen #status { color: $text-error; text-style: bold; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.leaks: pa.Table | None = None

    def compose_below(self) -> ComposeResult:
        with VerticalScroll(id="reasons"):
            yield Static(id="reason-text", markup=False)

    def fetch(self, cur: Any) -> tuple[pa.Table, pa.Table]:
        leaks = self.triage.cache.table("leakage", self.triage.run_id, cur)
        return browse_lists.leakage_by_case(cur, leaks), leaks

    def show(self, result: tuple[pa.Table, pa.Table]) -> None:
        self.source, self.leaks = result
        self.render_table()
        self.show_reasons()

    def describe(self) -> str:
        assert self.source is not None
        n = self.source.num_rows
        head = f"LEAKAGE in {n} cases, final-stage leaks first" if n else "no leaked results in this run"
        return f"{head} · {super().describe()}"

    def on_data_table_row_highlighted(self, event: Any) -> None:
        self.show_reasons()

    def show_reasons(self) -> None:
        case_id = self.cursor_case()
        body = self.query_one("#reason-text", Static)
        if case_id is None or self.leaks is None:
            body.update(Text(""))
            return
        head = Text.assemble(("leaked results of ", "bold"), lit(case_id, "bold"), " (final first)")
        body.update(Group(head, *leak_lines(case_leaks(self.leaks, case_id))))


class SlicesScreen(TableScreen):
    """Slices worst first by one dimension; `d` picks the dimension, Enter lists the slice's failing cases."""

    MODE = "slices"
    ROW_NOUN = "slices"
    KEY_COLUMN = "slice_value"
    FREE_TEXT = ("slice_value",)
    KEY_COLUMNS = 6  # slice_value, n, mean, median, p10, zero_hit_rate
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "dimension", "Dimension"),
        Binding("enter", "open", "Failing cases"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.dimension = browse_lists.DIMENSIONS[0]
        self.measure = ""  # "nDCG@8 grade>=2 exponential": the columns that are the same on every row
        self.threshold: int | None = None

    def bar_detail(self) -> str:
        return f"run {self.triage.run_id} · by {self.dimension}" + (f" · {self.measure}" if self.measure else "")

    def fetch(self, cur: Any) -> browse_lists.Slices:
        return browse_lists.slices(cur, self.triage.run_id, self.dimension, self.triage.cache)

    def show(self, result: browse_lists.Slices) -> None:
        self.measure, self.threshold = result.measure, result.threshold
        self.set_bar()
        super().show(result.table)

    def action_dimension(self) -> None:
        dims = browse_lists.DIMENSIONS
        self.dimension = dims[(dims.index(self.dimension) + 1) % len(dims)]
        self.sort_column = None
        self.reload()

    def action_open(self) -> None:
        row = self.current_row()
        if row is None or self.threshold is None:
            return
        from ragtriage.tui.screens.failures import FailuresScreen

        self.app.push_screen(FailuresScreen(slice_filter=(self.dimension, row["slice_value"], self.threshold)))


def verdicts_line(verdicts: list[LeakVerdict]) -> Text:
    """Each compared run's leakage verdict, failing runs first in red: a leaking run fails whatever its figures
    below say, and a run nothing could be checked on is said to be so, never clean. Runs with the same verdict
    and coverage share one phrase."""
    line = Text()
    for v in (v for v in verdicts if v.state == FAILS):
        line.append_text(lit(v.run_id, "bold white on red"))
        line.append(f" FAILS: leaks in {v.leaked_cases} cases · ", style="bold red")
    groups: dict[tuple[str, str], list[str]] = {}
    for v in verdicts:
        if v.state == NOT_CHECKED:
            groups.setdefault((f"leakage NOT CHECKED ({v.why_unchecked()}): ", "bold yellow"), []).append(v.run_id)
        elif v.state != FAILS:
            phrase = f"no leaks in {v.checked} of {v.cases} cases checked: "
            groups.setdefault((phrase, "yellow" if v.unchecked else "green"), []).append(v.run_id)
    for (phrase, style), runs in groups.items():
        line.append(phrase, style=style)
        line.append_text(lit(", ".join(runs)))
        line.append(" · ")
    line.rstrip()
    if line.plain.endswith("·"):
        line.right_crop(2)
    return line


class CompareScreen(CaseListScreen):
    """Each run's leakage verdict first (a leaking run FAILS, its column says LEAKS), then one row per paired case:
    the measure for the baseline, the open run and its Δ, then every other loaded run of the same dataset, worst
    regression of the open run first; `m` picks the measure, `b` the baseline. Below, ``compare``'s own figures
    of the open run against the baseline (``compare_stats``: both means, mean Δ, its 95% interval, p, W/T/L per
    measure at the view's k; with `d` per slice of a case field, worst Δ first); `v` swaps them for the Δ
    distribution. `w` adds each dropped case's cause (``experiments.explain``) as a column and,
    in place of the distribution, the cases per cause and the highlighted case's facts. Enter opens the case with
    the runs' ranked lists side by side."""

    MODE = "compare"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "measure", "Measure"),
        Binding("b", "baseline", "Base"),
        Binding("w", "why", "Why"),
        Binding("v", "plot", "Plot"),
        Binding("d", "dimension", "Slices"),
    ]
    DEFAULT_CSS = """
    CompareScreen #tablebox { height: 1fr; }
    CompareScreen #verdicts { height: auto; padding: 0 1; }
    CompareScreen DeltaHistogram { height: 9; display: none; }
    CompareScreen #stats { height: auto; max-height: 9; padding: 0 1; }
    CompareScreen #why { height: auto; max-height: 7; padding: 0 1; border-top: solid $primary; display: none; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.family = CASE_MEASURES[0]
        self.matrix: RunsMatrix | None = None
        self.matrix_key: tuple[Any, ...] = ()
        self.view: CompareView | None = None
        self.failing: list[str] = []  # the compared runs that leak
        self.verdicts: list[LeakVerdict] = []
        self.explain = False
        self.causes: CompareCauses | None = None
        self.by: str | None = None  # the case field the figures are sliced by (`d`)
        self.plot = False  # `v`: the Δ distribution in place of the figures
        self.stats: pa.Table | None = None
        self.stats_key: tuple[Any, ...] = ()

    def compose_above(self) -> ComposeResult:
        yield Static(id="verdicts", markup=False)

    def compose_below(self) -> ComposeResult:
        yield Static(id="why", markup=False)
        yield Static(id="stats", markup=False)
        yield DeltaHistogram()

    def bar_detail(self) -> str:
        measure = self.view.measure if self.view else self.family
        by = f" · by {self.by}" if self.by else ""
        return f"{self.triage.run_id} vs {self.triage.baseline or '(no baseline)'} · {measure}{by}"

    def fetch(self, cur: Any) -> tuple[CompareView, list[LeakVerdict], CompareCauses | None, tuple[Any, pa.Table]]:
        app = self.triage
        if not app.baseline:
            raise ViewError("no baseline run: press b to pick one, or start with --baseline RUN")
        key = (app.baseline, app.run_id, tuple(app.runs))  # a run loaded meanwhile joins on the next reload
        if self.matrix is None or self.matrix_key != key:
            self.matrix, self.matrix_key = (
                runs_matrix(cur, app.run_id, app.baseline, app.runs, app.cache),
                key,
            )
        view = compare_view(cur, self.matrix, self.family)
        causes = compare_causes(cur, view) if self.explain else None
        k = app.cache.k(app.run_id, cur)
        stats_key = (app.baseline, app.run_id, k, self.by)
        stats = self.stats if self.stats_key == stats_key else compare_stats(cur, app.run_id, app.baseline, k, self.by)
        return view, [leak_verdict(cur, run, app.cache) for run in view.runs], causes, (stats_key, stats)

    def show(self, result: tuple[CompareView, list[LeakVerdict], CompareCauses | None, tuple[Any, pa.Table]]) -> None:
        self.view, self.verdicts, self.causes, (self.stats_key, self.stats) = result
        verdicts = self.verdicts
        self.failing = [v.run_id for v in verdicts if v.state == FAILS]
        self.triage.compare_runs = (self.view.runs[1], self.view.runs[0], *self.view.runs[2:])  # the case screen
        self.set_bar()
        self.query_one("#verdicts", Static).update(verdicts_line(verdicts))
        leaking = {v.run_id for v in verdicts if v.state == FAILS}
        names = [visible(r) + (" LEAKS" if r in leaking else "") for r in self.view.runs]
        table, cause = (self.causes.table, ["cause"]) if self.causes else (self.view.table, [])
        self.source = table.rename_columns(["case_id", names[0], names[1], "Δ", *cause, *names[2:], "query"])
        self.render_table()
        runs = f"{self.triage.run_id} − {self.triage.baseline}"
        histogram = self.query_one(DeltaHistogram)
        histogram.display = self.causes is None and self.plot
        self.query_one("#stats", Static).display = self.causes is None and not self.plot
        self.query_one("#why", Static).display = self.causes is not None
        histogram.show(self.view.deltas, f"cases per Δ {self.view.measure} ({runs})")
        self.query_one("#stats", Static).update(stats_lines(self.stats, self.view.measure, self.by))
        self.show_why()

    def show_why(self) -> None:
        """The cases per cause, then the highlighted case's cause and the facts it rests on (literal text)."""
        if self.causes is None:
            return
        counts = " · ".join(f"{c} {n}" for c, n in self.causes.counts.items()) or "no case dropped"
        lines = [Text(f"{self.view.measure if self.view else ''} drops by cause: {counts}", style="bold")]
        case_id = self.cursor_case()
        found = self.causes.why(case_id)
        if case_id is not None:
            tail = Text.assemble((f"{found[0]}: ", "bold"), lit(found[1])) if found else Text("did not drop")
            lines.append(Text.assemble(lit(case_id, "bold"), " ", tail))
        self.query_one("#why", Static).update(Group(*lines))

    def on_data_table_row_highlighted(self, event: Any) -> None:
        super().on_data_table_row_highlighted(event)
        self.show_why()

    def action_why(self) -> None:
        self.explain = not self.explain
        self.reload()

    def describe(self) -> str:
        v = self.view
        if v is None:
            return super().describe()
        fails = f"FAILS (leaks): {', '.join(self.failing)} · " if self.failing else ""
        return f"{fails}{super().describe()}"

    def action_plot(self) -> None:
        self.plot = not self.plot
        if self.view is not None:
            self.show((self.view, self.verdicts, self.causes, (self.stats_key, self.stats)))

    def action_dimension(self) -> None:
        dims: list[str | None] = [None, *CASE_FIELDS]
        self.by = dims[(dims.index(self.by) + 1) % len(dims)]
        self.reload()

    def action_measure(self) -> None:
        k = self.view.measure.partition("@")[2] if self.view else ""
        self.app.push_screen(Pick(f"measure at k={k}" if k else "measure", CASE_MEASURES, self.family), self.pick)

    def pick(self, family: str | None) -> None:
        if family is None or family == self.family:
            return
        self.family = family
        self.sort_column = None
        self.reload()

    def action_baseline(self) -> None:
        others = [r for r in self.triage.runs if r != self.triage.run_id]
        if not others:
            self.show_error("only one run is loaded; load another to compare")
            return
        current = self.triage.baseline
        self.triage.baseline = others[(others.index(current) + 1) % len(others)] if current in others else others[0]
        self.reload()
