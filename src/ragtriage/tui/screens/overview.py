"""Overview: which dataset and run, the metric table, the per-case nDCG distribution, failures per category and
the leak count (red when non-zero)."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import pyarrow as pa
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker, get_current_worker

from ragtriage.tui import data
from ragtriage.tui.screens.base import DataScreen

BARS = " ▁▂▃▄▅▆▇█"
SUMMARY_MAX_ROWS = 40


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return "" if v is None else str(v)


def arrow_rich(table: pa.Table, limit: int = SUMMARY_MAX_ROWS) -> RenderableType:
    t = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in table.column_names:
        t.add_column(name, justify="right" if pa.types.is_floating(table.schema.field(name).type) else "left")
    for row in table.slice(0, limit).to_pylist():
        t.add_row(*(Text(fmt(v)) for v in row.values()))
    if table.num_rows > limit:
        t.add_row(Text(f"… {table.num_rows - limit} more"))
    return t


def histogram_line(counts: list[int]) -> Text:
    top = max(counts) or 1
    bars = "".join(BARS[round(c / top * (len(BARS) - 1))] for c in counts)
    line = Text("0 ")
    line.append(bars, style="bold cyan")
    line.append(" 1   counts " + " ".join(str(c) for c in counts))
    return line


def identity_block(run: dict[str, Any], ds: dict[str, Any]) -> RenderableType:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row(
        "dataset",
        Text(
            f"{ds.get('name')} {ds.get('version')} ({str(ds.get('dataset_version'))[:12]}) unit={ds.get('unit')} "
            f"relevant: grade>={ds.get('relevance_threshold')} on {ds.get('grade_min')}..{ds.get('grade_max')}"
        ),
    )
    grid.add_row(
        "run",
        Text(
            f"{run.get('run_id')} k={run.get('k')} candidate_k={run.get('candidate_k')} "
            f"index={run.get('index_version')} corpus={run.get('corpus_version')}"
        ),
    )
    grid.add_row(
        "config",
        Text(f"embedding={run.get('embedding_model')} chunking={run.get('chunking')} reranker={run.get('reranker')}"),
    )
    return grid


def leaks_block(n: int) -> RenderableType:
    if n:
        return Text(f"LEAKAGE: {n} result rows the principal may not see (press l)", style="bold white on red")
    return Text("leakage: none (0 rows)", style="green")


def titled(title: str, body: RenderableType) -> RenderableType:
    return Group(Text(title, style="bold underline"), body)


class OverviewScreen(DataScreen):
    """Each section has its own worker, so the identity paints at once and slow core answers fill in later."""

    MODE = "overview"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
        Binding("g", "scroll_to(0)", "Top", show=False),
        Binding("G", "scroll_to(-1)", "Bottom", show=False),
    ]
    SECTIONS = ("identity", "summary", "leaks", "dist", "categories")
    LOADING: ClassVar[dict[str, str]] = {
        "identity": "loading the run's identity…",
        "summary": "loading metrics.summarize…",
        "leaks": "loading checks.leakage…",
        "dist": "loading metrics.per_case…",
        "categories": "loading classify.failures…",
    }
    PAINT_WAIT = 2.0
    DEFAULT_CSS = """
    OverviewScreen #body { height: 1fr; padding: 0 1; }
    OverviewScreen .section { margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        with VerticalScroll(id="body"):
            for name in self.SECTIONS:
                yield Static(id=f"sec-{name}", classes="section", markup=False)
        yield from self.compose_footer()

    class SectionLoaded(Message):
        def __init__(self, name: str, result: Any, error: str | None, painted: threading.Event) -> None:
            super().__init__()
            self.name, self.result, self.error, self.painted = name, result, error, painted

    def reload(self) -> None:
        self._loaded_for = self.stale_key()
        self.set_bar()
        self.failed: dict[str, str] = {}
        for name in self.SECTIONS:
            self.section(name, Text(self.LOADING[name], style="dim"))
        self.set_status("")
        self.load_sections(self.triage.run_id)

    @work(thread=True, exclusive=True, group="overview", exit_on_error=False)
    def load_sections(self, run_id: str) -> None:
        """One worker, sections one after another, each posted as soon as it is ready: running the core calls in
        parallel on two cores made every section late instead of the first ones early. The metric table comes
        right after the (cheap) identity, and the heavier sections wait until it is on screen, because a DuckDB
        query running while the UI thread paints slows both."""
        worker = get_current_worker()
        for name in self.SECTIONS:
            if worker.is_cancelled:
                return
            painted = threading.Event()
            try:
                self.post_message(self.SectionLoaded(name, self.fetch_section(name, run_id), None, painted))
            except Exception as exc:  # shown in place of the section; the other sections still load
                self.post_message(self.SectionLoaded(name, None, str(exc), painted))
            if name == "summary":
                painted.wait(self.PAINT_WAIT)

    def fetch_section(self, name: str, run_id: str) -> Any:
        """Worker body: one core call on its own cursor; returns, never touches a widget."""
        app, cur = self.triage, self.triage.con.cursor()
        try:
            if name == "identity":
                return data.identity(cur, run_id)
            if name == "leaks":
                return app.cache.get("leakage", run_id, cur).num_rows
            if name == "summary":
                return data.summary(cur, run_id, app.db_path)
            if name == "dist":
                return data.distribution(cur, run_id, app.cache)
            return data.category_counts(app.cache.get("failures", run_id, cur))
        finally:
            cur.close()

    def on_overview_screen_section_loaded(self, message: SectionLoaded) -> None:
        self.call_after_refresh(message.painted.set)
        if message.error is None:
            self.section(message.name, self.render_section(message.name, message.result))
        else:
            self.failed[message.name] = message.error
            self.section(message.name, Text(message.error, style="red"))
            self.set_status(f"{len(self.failed)} section(s) unavailable", error=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Sections arrive as messages; nothing to do when the worker ends."""

    def render_section(self, name: str, result: Any) -> RenderableType:
        if name == "identity":
            return identity_block(*result)
        if name == "leaks":
            return leaks_block(result)
        if name == "summary":
            table, context = result
            return titled(f"Metrics ({context})" if context else "Metrics", arrow_rich(table))
        if name == "dist":
            counts, label = result
            return titled(f"Distribution of {label}", histogram_line(counts))
        return titled("Failures per category (press f)", arrow_rich(result))

    def action_scroll(self, lines: int) -> None:
        # immediate: a deferred scroll starts from the old position, so a burst of keys would move one line
        self.query_one("#body", VerticalScroll).scroll_relative(y=lines, animate=False, immediate=True)

    def action_scroll_to(self, where: int) -> None:
        body = self.query_one("#body", VerticalScroll)
        body.scroll_end(animate=False) if where < 0 else body.scroll_home(animate=False)

    def section(self, name: str, body: RenderableType) -> None:
        self.query_one(f"#sec-{name}", Static).update(body)
