"""Overview: which dataset and run, the leak banner (red when non-zero), the metric table, the per-case
distribution of a measure at the run's k (histogram; `m` cycles the measure), the per-slice means (bars) and
failures per category."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker, get_current_worker

from ragtriage.app.browse import lists as browse_lists
from ragtriage.app.browse import reads as browse_reads
from ragtriage.app.browse.lists import FAILS, NOT_CHECKED, LeakVerdict, leak_verdict
from ragtriage.classify import Progress
from ragtriage.safe_text import visible
from ragtriage.store.corpus_manifest import PARTIAL_LABEL
from ragtriage.tui.screens.base import SCROLL_BINDINGS, SectionsScreen
from ragtriage.tui.text import lit, num
from ragtriage.tui.widgets.line_table import Column, LineTable

if TYPE_CHECKING:
    from ragtriage.tui.widgets.plots import Histogram, SliceBars

SUMMARY_MAX_ROWS = 40
SLICE_DIMENSION = "query_type"


def arrow_rich(table: pa.Table, limit: int = SUMMARY_MAX_ROWS) -> RenderableType:
    """A small Arrow table as lines, numbers right-aligned (at most ``limit`` rows, then how many more)."""
    kinds = zip(table.column_names, table.schema.types, strict=True)
    columns = [Column(visible(n), right=pa.types.is_floating(t) or pa.types.is_integer(t)) for n, t in kinds]
    shown = LineTable(columns, [[Text(num(v)) for v in r.values()] for r in table.slice(0, limit).to_pylist()])
    return shown if table.num_rows <= limit else Group(shown, Text(f"… {table.num_rows - limit} more"))


SUMMARY_COLUMNS = (
    Column("measure"),
    Column("mean", right=True),
    Column("median", right=True),
    Column("p10", right=True),
    Column("min", right=True),
    Column("95% CI", right=True),
    Column("zero-hit", right=True),
    Column("n", right=True),
)


def summary_table(table: pa.Table, interval_pending: bool = False) -> RenderableType:
    """metrics.summarize's rows in 68 columns: the interval as one cell, every number with 4 decimals
    (``interval_pending``: the bootstrap is still running, its cells say so)."""
    rows = []
    for r in table.to_pylist():
        ci = "…" if interval_pending else f"{num(r['ci_low'])}–{num(r['ci_high'])}"
        cells = [r["name"], num(r["mean"]), num(r["median"]), num(r["p10"]), num(r["min"]), ci]
        rows.append([lit(c) for c in cells] + [lit(num(r["zero_hit_rate"])), lit(num(r["n"]))])
    return LineTable(SUMMARY_COLUMNS, rows)


def identity_block(run: dict[str, Any], ds: dict[str, Any]) -> RenderableType:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row(
        "dataset",
        lit(
            f"{ds.get('name')} {ds.get('version')} unit={ds.get('unit')} "
            f"relevant: grade>={ds.get('relevance_threshold')} on {ds.get('grade_min')}..{ds.get('grade_max')}"
            + (f" cases={ds['cases']}" if ds.get("cases") else "")
        ),
    )
    depth = f" candidates to {run['candidate_k']}" if run.get("candidate_k") is not None else ""
    index = f" index={run['index_version']}" if run.get("index_version") is not None else ""
    grid.add_row("run", lit(f"{run.get('run_id')} k={run.get('k')}{depth}{index}"))
    if ds.get("labels") not in (None, "human only"):  # only a store holding judged labels says which it shows
        grid.add_row("labels", Text(visible(ds["labels"]), no_wrap=True, overflow="ellipsis"))
    config = [f"{key}={run[key]}" for key in ("embedding_model", "chunking", "reranker") if run.get(key) is not None]
    if config:
        grid.add_row("config", Text(visible(" ".join(config)), no_wrap=True, overflow="ellipsis"))
    return grid


def leaks_block(verdict: LeakVerdict) -> RenderableType:
    """The leak banner: red when the run leaks, yellow when nothing could be checked (never "none" then); a line
    under it when the acls come from a manifest derived from trace metadata (partial)."""
    if verdict.state == FAILS:
        banner = Text(f" {verdict.sentence()} (press l) ", style="bold white on red")
    elif verdict.state == NOT_CHECKED:
        banner = Text(f" {verdict.sentence()} ", style="bold black on yellow")
    else:
        banner = Text(verdict.sentence(), style="yellow" if verdict.unchecked else "green")
    if not verdict.coverage.partial:
        return banner
    return Group(banner, Text(PARTIAL_LABEL, style="italic yellow", no_wrap=True, overflow="ellipsis"))


def titled(title: str, body: RenderableType) -> RenderableType:
    return Group(Text(title, style="bold underline"), body)


class OverviewScreen(SectionsScreen):
    """One worker fills the sections in turn, so the identity paints at once and slow core answers fill in."""

    MODE = "overview"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "measure", "Measure"),
        *SCROLL_BINDINGS,
    ]
    #: The order sections are fetched in: the metric table first (what a person reads first), then the stored
    #: answers (failure counts, leaks) and the case screen's whole-run answers, then the ones computed from every
    #: result row (histogram, slices).
    SECTIONS = ("identity", "summary", "categories", "leaks", "dist", "slices")
    #: The order they are shown in: the leak banner right under the identity, never below the fold.
    SHOWN = ("identity", "leaks", "summary", "dist", "slices", "categories")
    LOADING: ClassVar[dict[str, str]] = {
        "identity": "loading the run's identity…",
        "summary": "loading metrics.summarize…",
        "leaks": "loading checks.leakage…",
        "dist": "loading metrics.per_case…",
        "slices": "loading metrics.slices…",
        "categories": "loading classify.failure_summary…",
    }
    PAINT_WAIT = 2.0
    DEFAULT_CSS = """
    OverviewScreen #body { height: 1fr; padding: 0 1; }
    OverviewScreen .section { margin-top: 1; }
    OverviewScreen #sec-identity { margin-top: 0; }
    OverviewScreen #sec-leaks { margin-top: 0; }
    OverviewScreen .plot { height: 14; margin-top: 1; }
    OverviewScreen SliceBars.plot { height: auto; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.family = browse_reads.CASE_MEASURES[0]
        self.on_screen = threading.Event()
        self.on_screen.set()

    class SectionLoaded(Message):
        def __init__(self, name: str, result: Any, error: str | None, painted: threading.Event) -> None:
            super().__init__()
            self.name, self.result, self.error, self.painted = name, result, error, painted

    def reload(self) -> None:
        self._loaded_for = self.stale_key()
        self.deferred = None
        self.set_bar()
        self.failed: dict[str, str] = {}
        for name in self.SECTIONS:
            self.section(name, Text(self.LOADING[name], style="dim"))
        self.set_status("")
        self.load_sections(self.triage.run_id, self.SECTIONS)

    @work(thread=True, exclusive=True, group="overview", exit_on_error=False)
    def load_sections(self, run_id: str, names: tuple[str, ...]) -> None:
        """One worker, sections one after another, each posted as soon as it is ready: running the core calls in
        parallel on two cores made every section late instead of the first ones early. The metric table comes
        right after the (cheap) identity, and the heavier sections wait until it is on screen, because a DuckDB
        query running while the UI thread paints slows both."""
        worker = get_current_worker()
        for i, name in enumerate(names):
            if name in self.HEAVY and not self.on_screen.is_set():
                self.app.call_from_thread(self.defer, run_id, names[i:])
                return
            if worker.is_cancelled:
                return
            painted, result = self.post_section(name, run_id)
            if name == "summary":
                painted.wait(self.PAINT_WAIT)
                if isinstance(result, browse_lists.Summary) and result.interval_pending and not worker.is_cancelled:
                    self.post_section(name, run_id, partial(self.fetch_summary, run_id, interval=True))
            if name == "leaks" and names == self.SECTIONS:
                self.warm_case_screen(run_id)

    #: Sections computed from every result row: fetched only while the overview is on screen, so a person who
    #: has moved on to a list or a case is not slowed by a histogram nobody is looking at.
    HEAVY = ("dist", "slices")

    deferred: tuple[str, tuple[str, ...]] | None = None

    def defer(self, run_id: str, names: tuple[str, ...]) -> None:
        """Sections left for when the overview is on screen again (``on_screen_resume``)."""
        self.deferred = (run_id, names)
        if self.on_screen.is_set():
            self.on_screen_resume()

    def on_screen_suspend(self) -> None:
        self.on_screen.clear()

    def on_screen_resume(self) -> None:
        self.on_screen.set()
        super().on_screen_resume()
        shown = self.categories_progress
        if shown is not None and self.triage.classification_state(shown.run_id) != shown:
            self.on_classified(self.triage.classification_state(shown.run_id))  # it moved while another view showed
        if self.deferred is not None:
            (run_id, names), self.deferred = self.deferred, None
            if run_id == self.triage.run_id:
                self.load_sections(run_id, names)

    def warm_case_screen(self, run_id: str) -> None:
        """Whole-run answers the case screen needs, fetched while the person reads the overview."""
        app = self.triage
        for kind in browse_reads.CASE_SCREEN_KINDS:
            if get_current_worker().is_cancelled:
                return
            try:
                with app.reader.cursor() as cur:
                    app.cache.get(kind, run_id, cur)
            except browse_reads.ViewError:
                pass  # cached as the error: the case screen shows it in its section

    def fetch_section(self, name: str, run_id: str) -> Any:
        """Worker body: one core call on a short-lived connection; returns, never touches a widget."""
        if name == "summary":
            return self.fetch_summary(run_id, interval=False)
        app = self.triage
        with app.reader.cursor() as cur:
            if name == "identity":
                return browse_lists.identity(cur, run_id, app.cache)
            if name == "leaks":
                return leak_verdict(cur, run_id, app.cache)
            if name == "dist":
                return browse_lists.distribution(cur, run_id, app.cache, self.family)
            if name == "slices":
                return browse_lists.slices(cur, run_id, SLICE_DIMENSION, app.cache)
            state = app.classification_state(run_id)
            if state is not None and not state.complete:
                return state  # counted once the background classification has stored the run
            return browse_lists.categories(app.cache.failure_summary(run_id, cur))

    def fetch_summary(self, run_id: str, *, interval: bool) -> browse_lists.Summary:
        """The metric table; without its intervals on a cache miss, so the means paint before the bootstrap."""
        app = self.triage
        with app.reader.cursor() as cur:
            return browse_lists.summary(cur, run_id, app.db_path, app.cache, interval=interval)

    def on_overview_screen_section_loaded(self, message: SectionLoaded) -> None:
        self.call_after_refresh(message.painted.set)
        pending = isinstance(message.result, browse_lists.Summary) and message.result.interval_pending
        if message.name == "summary" and not pending:  # the bootstrap first: its intervals complete the table
            self.call_after_refresh(self.triage.start_classifying)
        if message.error is None:
            self.section(message.name, self.render_section(message.name, message.result))
        else:
            self.failed[message.name] = message.error
            self.section(message.name, Text(visible(message.error), style="red"))
            self.set_status(f"{len(self.failed)} section(s) unavailable", error=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Sections arrive as messages; nothing to do when the worker ends."""

    def render_section(self, name: str, result: Any) -> RenderableType:
        if name == "identity":
            return identity_block(*result)
        if name == "leaks":
            return leaks_block(result)
        if name == "summary":
            s: browse_lists.Summary = result
            title = f"Metrics ({s.context})" if s.context else "Metrics"
            return titled(title, summary_table(s.table, s.interval_pending))
        if name == "dist":
            d: browse_lists.Distribution = result
            self.plot("dist").show(d.counts, f"cases per {d.measure} bin (n={d.n})")
            return Text(f"Distribution of {d.measure} per case (m: next measure)", style="bold underline")
        if name == "slices":
            sl: browse_lists.Slices = result
            table = sl.table
            labels = table.column("slice_value").to_pylist()
            self.plot("slices").show(labels, table.column("mean").to_pylist(), "")
            return Text(
                f"Mean {sl.measure} by {SLICE_DIMENSION}, worst first, bars 0 to 1 (press s)", style="bold underline"
            )
        self.categories_progress = result if isinstance(result, Progress) else None
        if isinstance(result, Progress):
            return titled("Failures per category (press f)", Text(self.classifying_line(result), style="dim"))
        cats: browse_lists.Categories = result
        body = Group(arrow_rich(cats.counts), Text(visible(cats.costs.sentence()), style="italic"))
        return titled(f"Failures per category, cost in {cats.costs.measure} (press f)", body)

    #: The background classification's progress the categories section shows (None: it shows the counts)
    categories_progress: Progress | None = None

    @staticmethod
    def classifying_line(p: Progress) -> str:
        done = f"{p.done} of {p.chunks} chunks of cases" if p.chunks else "starting"
        return f"classifying in the background: {done}; counted when done (f lists the cases classified so far)"

    def on_classified(self, p: Progress | None) -> None:
        """The background classification moved: its line, or the counts once the open run is stored."""
        if p is not None and p.run_id != self.triage.run_id:
            return
        if p is None or p.complete:
            self.categories_progress = None
            self.load_categories(self.triage.run_id)
        else:
            self.section("categories", self.render_section("categories", p))

    @work(thread=True, exclusive=True, group="overview-categories", exit_on_error=False)
    def load_categories(self, run_id: str) -> None:
        self.post_section("categories", run_id)

    def post_section(
        self, name: str, run_id: str, fetch: Callable[[], Any] | None = None
    ) -> tuple[threading.Event, Any]:
        """Worker body: fetch one section (``fetch``, default :meth:`fetch_section`) and post it (or its error);
        returns an event set once it is painted, and what was fetched (None on an error)."""
        painted = threading.Event()
        result = None
        try:
            result = fetch() if fetch is not None else self.fetch_section(name, run_id)
            self.post_message(self.SectionLoaded(name, result, None, painted))
        except Exception as exc:  # shown in place of the section; the other sections still load
            self.post_message(self.SectionLoaded(name, None, str(exc), painted))
        return painted, result

    def plot(self, name: str) -> Any:
        """The section's picture, made when its data first arrives: plotext is imported then, not before the
        metric table's first paint."""
        from ragtriage.tui.widgets.plots import Histogram, SliceBars

        found = self.query(f"#plot-{name}")
        if found:
            return found.first()
        widget: Histogram | SliceBars = (Histogram if name == "dist" else SliceBars)(id=f"plot-{name}", classes="plot")
        self.query_one("#body", VerticalScroll).mount(widget, after=self.query_one(f"#sec-{name}"))
        return widget

    def action_measure(self) -> None:
        from ragtriage.tui.screens.modals import Pick

        self.app.push_screen(Pick("measure of the distribution", browse_reads.CASE_MEASURES, self.family), self.pick)

    def pick(self, family: str | None) -> None:
        if family is None or family == self.family:
            return
        self.family = family
        self.section("dist", Text(self.LOADING["dist"], style="dim"))
        self.load_sections(self.triage.run_id, ("dist",))

    def section(self, name: str, body: RenderableType) -> None:
        self.query_one(f"#sec-{name}", Static).update(body)
