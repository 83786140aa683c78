"""Overview: which dataset and run, the metric table, the per-case nDCG distribution, failures per category and
the leak count (red when non-zero)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

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


def identity(ov: data.Overview) -> RenderableType:
    ds, run = ov.dataset, ov.run
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("dataset", Text(
        f"{ds.get('name')} {ds.get('version')} ({str(ds.get('dataset_version'))[:12]}) unit={ds.get('unit')} "
        f"relevant: grade>={ds.get('relevance_threshold')} on {ds.get('grade_min')}..{ds.get('grade_max')}"))
    grid.add_row("run", Text(
        f"{run.get('run_id')} k={run.get('k')} candidate_k={run.get('candidate_k')} "
        f"index={run.get('index_version')} corpus={run.get('corpus_version')}"))
    grid.add_row("config", Text(
        f"embedding={run.get('embedding_model')} chunking={run.get('chunking')} reranker={run.get('reranker')}"))
    return grid


class OverviewScreen(DataScreen):
    MODE = "overview"
    DEFAULT_CSS = """
    OverviewScreen #body { height: 1fr; padding: 0 1; }
    OverviewScreen .section { margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        with VerticalScroll(id="body"):
            for name in ("identity", "leaks", "summary", "dist", "categories"):
                yield Static(id=f"sec-{name}", classes="section", markup=False)
        yield from self.compose_footer()

    def fetch(self, cur: Any) -> data.Overview:
        return data.overview(cur, self.triage.run_id)

    def show(self, ov: data.Overview) -> None:
        self.set_status(" · ".join(ov.errors.values()) if ov.errors else "", error=bool(ov.errors))
        self.section("identity", identity(ov))
        if ov.leaks is None:
            leaks: RenderableType = Text(ov.errors.get("leakage", ""), style="red")
        elif ov.leaks:
            msg = f"LEAKAGE: {ov.leaks} result rows the principal may not see (press l)"
            leaks = Text(msg, style="bold white on red")
        else:
            leaks = Text("leakage: none (0 rows)", style="green")
        self.section("leaks", leaks)
        self.section("summary", Group(Text("Metrics", style="bold underline"),
                                      arrow_rich(ov.summary) if ov.summary is not None else Text("—")))
        dist = histogram_line(ov.histogram) if ov.histogram else Text(ov.errors.get("distribution", "—"))
        self.section("dist", Group(Text(f"Distribution {ov.histogram_label}", style="bold underline"), dist))
        cats = arrow_rich(ov.categories) if ov.categories is not None else Text(ov.errors.get("categories", "—"))
        self.section("categories", Group(Text("Failures per category (press f)", style="bold underline"), cats))

    def section(self, name: str, body: RenderableType) -> None:
        self.query_one(f"#sec-{name}", Static).update(body)
