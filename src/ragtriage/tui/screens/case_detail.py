"""Case detail: everything a person needs to agree or disagree with the automatic classification, and the
triage keys to record it; `n`/`p` move to the next/previous case of the list it was opened from.

Every data string is wrapped in ``rich.text.Text`` so brackets in a query or passage print as typed.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from ragtriage.tui.detail_data import CaseDetail, case_detail
from ragtriage.tui.screens.base import DataScreen
from ragtriage.tui.triage_keys import TRIAGE_BINDINGS, TriageKeys

PASSAGE_CHARS = 400


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
        ("case", f"split={c.get('split')} type={c.get('query_type')} lang={c.get('language')} "
                 f"critical={c.get('critical')} tags={c.get('tags')}"),
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


SHOWN_ELSEWHERE = {"case_id", "run_id", "query", "split", "query_type", "dataset_version", "k", "category", "rule",
                   "confidence", "pattern", "patterns", "evidence"}
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


def results_block(d: CaseDetail) -> RenderableType:
    if d.results.num_rows == 0:
        return Text("no results recorded for this case")
    t = Table(box=None, pad_edge=False, show_edge=False, expand=True, header_style="bold")
    for name, kw in (
        ("stg", {"no_wrap": True}),
        ("#", {"justify": "right"}),
        ("gr", {"justify": "right"}),
        ("unit", {"overflow": "fold", "ratio": 2}),
        ("type", {"no_wrap": True}),
        ("doc", {"no_wrap": True}),
        ("ACL", {"no_wrap": True}),
        ("score", {"justify": "right"}),
    ):
        t.add_column(name, **kw)
    for r in d.results.to_pylist():
        verdict = d.verdicts.get((r["stage"], r["rank"]))
        acl = Text(f"LEAK {verdict}", style="bold red") if verdict else Text("ok" if "acl" not in d.errors else "?")
        grade = Text("?", style="yellow") if r["unjudged"] else lit(r["grade"])
        doc = "absent" if r["not_in_corpus"] else (r["doc_status"] or "")
        score = "" if r["score"] is None else f"{r['score']:.3f}"
        stage = "fin" if r["stage"] == "final" else "cand"
        t.add_row(stage, lit(r["rank"]), grade, lit(r["unit_id"]), lit(r["doc_type"]), lit(doc), acl, score)
    return t


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
        self.case_id = case_id
        self.case_list = case_list or [case_id]
        self.MODE = mode
        self.detail: CaseDetail | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        with VerticalScroll(id="body"):
            for name in ("case", "triage", "classification", "results", "passages", "missing"):
                yield Static(id=f"sec-{name}", classes="section", markup=False)
        yield from self.compose_footer()

    def bar_detail(self) -> str:
        pos = self.case_list.index(self.case_id) + 1 if self.case_id in self.case_list else 0
        return f"case {self.case_id} ({pos}/{len(self.case_list)}) · run {self.triage.run_id}"

    def fetch(self, cur: Any) -> CaseDetail:
        return case_detail(cur, self.triage.run_id, self.case_id, self.triage.store, self.triage.cache)

    def show(self, result: CaseDetail) -> None:
        self.detail = result
        sections = {
            "case": ("Case", case_block(result)),
            "triage": ("Triage (1-4 category, 5-8 status, e note)", triage_block(result)),
            "classification": ("Automatic classification", classification_block(result)),
            "results": ("Ranked results (gr ? = unjudged)", results_block(result)),
            "passages": ("Final passages", passages_block(result)),
            "missing": ("Labelled evidence not retrieved in the top k", missing_block(result)),
        }
        for name, (title, body) in sections.items():
            self.query_one(f"#sec-{name}", Static).update(Group(heading(title), body))
        errs = [v for k, v in result.errors.items() if k == "acl"]
        self.set_status(f"{len(result.results)} result rows" + (f" · ACL: {errs[0]}" if errs else ""), error=bool(errs))

    def stale_key(self) -> tuple[Any, ...]:
        return (*super().stale_key(), self.triage.notes_version)

    def triage_case(self) -> str | None:
        return self.case_id

    def action_step(self, delta: int) -> None:
        if self.case_id not in self.case_list:
            return
        i = self.case_list.index(self.case_id) + delta
        if 0 <= i < len(self.case_list):
            self.case_id = self.case_list[i]
            self.query_one("#body", VerticalScroll).scroll_home(animate=False)
            self.reload()
        else:
            self.notify("no more cases in this list", timeout=2)

    def action_scroll(self, lines: int) -> None:
        self.query_one("#body", VerticalScroll).scroll_relative(y=lines, animate=False)

    def action_scroll_home(self) -> None:
        self.query_one("#body", VerticalScroll).scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        self.query_one("#body", VerticalScroll).scroll_end(animate=False)

    def on_note_saved(self) -> None:
        self.reload()
