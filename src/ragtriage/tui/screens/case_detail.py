"""Case detail: everything a person needs to agree or disagree with the automatic classification, and the
triage keys to record it; `n`/`p` move to the next/previous case of the list it was opened from.

Every data string is wrapped in ``rich.text.Text`` so brackets in a query or passage print as typed.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static
from textual.worker import get_current_worker

from ragtriage.tui.detail_data import CaseDetail, case_detail
from ragtriage.tui.screens.base import LOAD_GROUP, DataScreen
from ragtriage.tui.triage_keys import TRIAGE_BINDINGS, TriageKeys
from ragtriage.tui.widgets.line_table import Column, LineTable

PASSAGE_CHARS = 400
PREFETCH_KEEP = 8


def lit(value: Any) -> Text:
    return Text("" if value is None else str(value))


def heading(title: str) -> Text:
    return Text(title, style="bold underline")


def case_block(d: CaseDetail) -> RenderableType:
    c = d.case
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    groups = ", ".join(c.get("principal_groups") or [])
    who = c.get("principal_id") or "(none: ACL unchecked)"
    principal = f"{who} groups [{groups}] tenant {c.get('principal_tenant')}"
    rows = [
        ("query", c.get("query")),
        ("principal", principal),
        ("filters", c.get("filters") or "(none)"),
        ("expected", f"{c.get('expected_behavior')} (answerable={c.get('answerable')})"),
        (
            "case",
            f"split={c.get('split')} type={c.get('query_type')} lang={c.get('language')} "
            f"critical={c.get('critical')} tags={c.get('tags')}",
        ),
    ]
    for k, v in rows:
        grid.add_row(k, lit(v))
    return grid


def triage_block(d: CaseDetail) -> RenderableType:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    n = d.note
    mine = f"{n.category or '-'} / {n.status or '-'} by {n.author} at {n.updated_at[:19]}" if n else "not triaged"
    grid.add_row("mine", lit(mine))
    grid.add_row("note", lit(n.note if n and n.note else "(none: press e)"))
    return grid


SHOWN_ELSEWHERE = {
    "case_id",
    "run_id",
    "query",
    "split",
    "query_type",
    "dataset_version",
    "k",
    "category",
    "rule",
    "confidence",
    "pattern",
    "patterns",
    "evidence",
}
EVIDENCE_LINE = 110


def evidence_lines(raw: Any) -> list[Text]:
    """The classifier's evidence: its ``facts`` one per line (JSON text as the store holds it)."""
    if raw in (None, ""):
        return []
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return [Text(f"  evidence: {raw}"[:EVIDENCE_LINE])]
    facts = parsed.get("facts", parsed) if isinstance(parsed, dict) else {"evidence": parsed}
    out = []
    for k, v in facts.items():
        text = json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v
        line = f"  {k}: {text}"
        out.append(Text(line if len(line) <= EVIDENCE_LINE else line[: EVIDENCE_LINE - 1] + "…"))
    return out


def classification_block(d: CaseDetail) -> RenderableType:
    if "classification" in d.errors:
        return Text(d.errors["classification"], style="red")
    if d.classification is None or d.classification.num_rows == 0:
        return Text("not a failure of this run (no rule fired)")
    out: list[RenderableType] = []
    for r in d.classification.to_pylist():
        head = Text()
        head.append(str(r.get("category", "?")), style="bold")
        head.append(f"  rule {r.get('rule', '?')}")
        if r.get("confidence") is not None:
            head.append(f"  confidence {r['confidence']}")
        patterns = r.get("patterns", r.get("pattern"))
        if patterns:
            head.append(f"  pattern {'; '.join(patterns) if isinstance(patterns, list) else patterns}")
        out.append(head)
        for k, v in r.items():
            if k not in SHOWN_ELSEWHERE and v not in (None, "", []):
                out.append(Text(f"  {k}: {'; '.join(map(str, v)) if isinstance(v, list) else v}"))
        out.extend(evidence_lines(r.get("evidence")))
    return Group(*out)


RESULT_COLUMNS = (
    Column("stg"),
    Column("#", right=True),
    Column("gr", right=True),
    Column("unit", flex=True),
    Column("type"),
    Column("doc"),
    Column("ACL"),
    Column("score", right=True),
)


def results_block(d: CaseDetail) -> RenderableType:
    if d.results.num_rows == 0:
        return Text("no results recorded for this case")
    rows = []
    for r in d.results.to_pylist():
        verdict = d.verdicts.get((r["stage"], r["rank"]))
        acl = Text(f"LEAK {verdict}", style="bold red") if verdict else Text("ok" if "acl" not in d.errors else "?")
        grade = Text("?", style="yellow") if r["unjudged"] else lit(r["grade"])
        doc = "absent" if r["not_in_corpus"] else (r["doc_status"] or "")
        score = "" if r["score"] is None else f"{r['score']:.3f}"
        stage = "fin" if r["stage"] == "final" else "cand"
        rows.append(
            [lit(stage), lit(r["rank"]), grade, lit(r["unit_id"]), lit(r["doc_type"]), lit(doc), acl, lit(score)]
        )
    return LineTable(RESULT_COLUMNS, rows)


def passages_block(d: CaseDetail) -> RenderableType:
    out = []
    for r in d.results.to_pylist():
        if r["stage"] != "final":
            continue
        text = (r["passage"] or "(no passage text in the manifest)").replace("\n", " ")
        line = Text()
        line.append(f"#{r['rank']} {r['unit_id']} ", style="bold")
        line.append(lit(r["title"] or ""))
        line.append("\n   ")
        line.append(text[:PASSAGE_CHARS] + ("…" if len(text) > PASSAGE_CHARS else ""))
        out.append(line)
    return Group(*out) if out else Text("(no final-stage results)")


def missing_block(d: CaseDetail) -> RenderableType:
    if "missing" in d.errors:
        return Text(d.errors["missing"], style="red")
    if d.missing is None or d.missing.num_rows == 0:
        return Text("every labelled relevant unit is in the final top k")
    t = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in d.missing.column_names:
        if name not in ("case_id", "run_id"):
            t.add_column(name, overflow="fold")
    for r in d.missing.to_pylist():
        t.add_row(*(lit(v) for k, v in r.items() if k not in ("case_id", "run_id")))
    return t


SECTIONS = ("case", "triage", "classification", "results", "passages", "missing")


def sections(d: CaseDetail) -> dict[str, RenderableType]:
    return {
        "case": Group(heading("Case"), case_block(d)),
        "triage": Group(heading("Triage (1-4 category, 5-8 status, e note)"), triage_block(d)),
        "classification": Group(heading("Automatic classification"), classification_block(d)),
        "results": Group(heading("Ranked results (gr ? = unjudged)"), results_block(d)),
        "passages": Group(heading("Final passages"), passages_block(d)),
        "missing": Group(heading("Labelled evidence not retrieved in the top k"), missing_block(d)),
    }


def prerender(renderable: RenderableType, width: int) -> Text:
    """The renderable laid out at ``width`` once, as lines that need no further wrapping or measuring.

    Laying out the grids and tables is most of the cost of showing a case (Textual lays a Static out to learn
    its height and again to paint it); done here, in the worker that fetched the case, the UI thread only copies
    lines. The result keeps every style and prints data literally, as the renderable did.
    """
    console = Console(
        width=width,
        file=io.StringIO(),
        color_system="truecolor",
        force_terminal=True,
        highlight=False,
        emoji=False,
        markup=False,
    )
    out = Text(no_wrap=True, overflow="crop", end="")
    for i, line in enumerate(console.render_lines(renderable, console.options.update_width(width), pad=False)):
        if i:
            out.append("\n")
        for seg in line:
            if not seg.control:
                out.append(seg.text, seg.style)
    return out


@dataclass
class Rendered:
    """A case's detail and its sections laid out at one width (built in a worker thread)."""

    detail: CaseDetail
    width: int
    sections: dict[str, Text]


def rendered(d: CaseDetail, width: int) -> Rendered:
    return Rendered(d, width, {name: prerender(body, width) for name, body in sections(d).items()})


class CaseScreen(TriageKeys, DataScreen):
    MODE = "failures"
    BINDINGS: ClassVar[list[BindingType]] = [
        *TRIAGE_BINDINGS,
        Binding("n", "step(1)", "Next"),
        Binding("p", "step(-1)", "Prev"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
        Binding("g", "scroll_home", "Top", show=False),
        Binding("G", "scroll_end", "Bottom", show=False),
    ]
    DEFAULT_CSS = """
    CaseScreen #body { height: 1fr; padding: 0 1; }
    CaseScreen .section { margin-top: 1; }
    """

    def __init__(self, case_id: str, case_list: list[str], mode: str) -> None:
        super().__init__()
        self.case_list = case_list or [case_id]
        self.pos = self.case_list.index(case_id) if case_id in self.case_list else -1
        self.case_id = case_id
        self.MODE = mode  # type: ignore[misc]  # the view bar highlights the list this case was opened from
        self.detail: CaseDetail | None = None
        self.prefetched: dict[tuple[Any, ...], Rendered] = {}

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        with VerticalScroll(id="body"):
            for name in SECTIONS:
                yield Static(id=f"sec-{name}", classes="section", markup=False)
        yield from self.compose_footer()

    def bar_detail(self) -> str:
        return f"case {self.case_id} ({self.pos + 1}/{len(self.case_list)}) · run {self.triage.run_id}"

    def section_width(self) -> int:
        """Cells a section has: the body less its padding and scrollbar (known after the first layout)."""
        width = self.query_one("#sec-case", Static).content_region.width
        return width if width > 0 else max(20, self.app.size.width - 4)

    def fetch(self, cur: Any) -> Rendered:
        width = self.width_for_workers
        return rendered(case_detail(cur, self.triage.run_id, self.case_id, self.triage.store, self.triage.cache), width)

    width_for_workers = 76

    def reload(self) -> None:
        self.width_for_workers = self.section_width()
        super().reload()

    def on_resize(self) -> None:
        if self.detail is not None and self.section_width() != self.width_for_workers:
            self.prefetched.clear()
            self.reload()

    def detail_key(self, case_id: str) -> tuple[Any, ...]:
        return (*self.stale_key(), case_id)

    def show(self, result: Rendered) -> None:
        d = result.detail
        if (d.run_id, d.case.get("case_id")) != (self.triage.run_id, self.case_id):
            return  # an answer for a case the user has already left
        self.detail = d
        for name in SECTIONS:
            self.query_one(f"#sec-{name}", Static).update(result.sections[name])
        errs = [v for k, v in d.errors.items() if k == "acl"]
        self.set_status(f"{len(d.results)} result rows" + (f" · ACL: {errs[0]}" if errs else ""), error=bool(errs))
        self.call_after_refresh(self.prefetch_neighbours)  # after the paint: its Python work would slow the paint

    def prefetch_neighbours(self) -> None:
        """Fetch the cases around this one in the background, so `n`/`p` show them without a query; two ahead,
        so that a run of `n` finds the next case ready while the one after it is fetched."""
        around = (self.pos + 1, self.pos - 1, self.pos + 2)
        want = [self.case_list[i] for i in around if 0 <= i < len(self.case_list)]
        want = [c for c in want if self.detail_key(c) not in self.prefetched]
        if want:
            self.prefetch(want, self.stale_key(), self.width_for_workers)

    @work(thread=True, exclusive=True, group="case-prefetch", exit_on_error=False)
    def prefetch(self, case_ids: list[str], key: tuple[Any, ...], width: int) -> None:
        app, cur = self.triage, self.triage.con.cursor()
        try:
            for case_id in case_ids:
                if get_current_worker().is_cancelled:
                    return
                found = rendered(case_detail(cur, key[0], case_id, app.store, app.cache), width)
                self.app.call_from_thread(self.keep_prefetched, (*key, case_id), found)
        finally:
            cur.close()

    def keep_prefetched(self, key: tuple[Any, ...], found: Rendered) -> None:
        if key[:-1] != self.stale_key():
            return  # notes or run changed meanwhile: the answer may be out of date
        if len(self.prefetched) >= PREFETCH_KEEP:
            self.prefetched.pop(next(iter(self.prefetched)))
        self.prefetched[key] = found

    def stale_key(self) -> tuple[Any, ...]:
        return (*super().stale_key(), self.triage.notes_version)

    def triage_case(self) -> str | None:
        return self.case_id

    def action_step(self, delta: int) -> None:
        if self.pos < 0:
            return
        i = self.pos + delta
        if not 0 <= i < len(self.case_list):
            self.notify("no more cases in this list", timeout=2)
            return
        self.pos, self.case_id = i, self.case_list[i]
        self.query_one("#body", VerticalScroll).scroll_home(animate=False)
        ready = self.prefetched.get(self.detail_key(self.case_id))
        if ready is None:
            self.reload()
            return
        self.workers.cancel_group(self, LOAD_GROUP)  # a slower load of the case just left must not land
        self._loaded_for = self.stale_key()
        self.set_bar()
        self.show(ready)

    def action_scroll(self, lines: int) -> None:
        # immediate: a deferred scroll starts from the old position, so a burst of keys would move one line
        self.query_one("#body", VerticalScroll).scroll_relative(y=lines, animate=False, immediate=True)

    def action_scroll_home(self) -> None:
        self.query_one("#body", VerticalScroll).scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        self.query_one("#body", VerticalScroll).scroll_end(animate=False)

    def on_note_saved(self) -> None:
        self.reload()
