"""How a case is laid out: the "why" header (query, the person's triage beside the classifier's verdict, the
failures with one evidence sentence each, per-case metrics beside the baseline's, events), then the ranked list,
the labelled evidence it did not retrieve, leaked results with full reasons, triage, classification and passages.

Pure functions from a :class:`CaseDetail` to Rich renderables, laid out once at a width in the worker that read
the case (:func:`rendered`); the case screen only copies the lines. Every data string goes through the one
sanitiser and is shown as plain text.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ragtriage.app.browse.case import CaseDetail, Leak
from ragtriage.safe_text import visible
from ragtriage.tui.text import delta, lit, middle, num, wrap_lines
from ragtriage.tui.widgets.line_table import Column, LineTable

PASSAGE_CHARS = 300
HEADER_MEASURES = ("P", "R", "RR", "nDCG")
SHOWN_FAILURES = 3


def heading(title: str) -> Text:
    return Text(title, style="bold underline")


def where(m: dict[str, Any], k: int) -> str:
    """Where a labelled unit is, in words (from classify.unit_locations' location and ranks)."""
    loc = m.get("location")
    if loc == "final-top-k":
        text = f"at final rank {m.get('final_rank')}"
    elif loc == "final-below-k":
        text = f"at final rank {m.get('final_rank')}, below k={k}"
    elif loc == "candidate":
        text = f"at candidate rank {m.get('candidate_rank')}"
    elif loc == "absent-from-corpus":
        text = "not in the corpus"
    elif loc == "other-run":
        text = f"only in another run: {visible(m.get('best_other_run'))} rank {m.get('best_rank_other_runs')}"
    elif loc == "absent-from-runs":
        text = "never retrieved by any run"
    else:
        text = visible(loc)
    if m.get("permitted") is False:
        text += ", not permitted to the principal"
    return text


def failure_sentence(failure: dict[str, Any], k: int) -> str:
    """One sentence of evidence for a failure, from the classifier's stored facts."""
    try:
        facts = json.loads(failure.get("evidence") or "{}").get("facts", {})
    except (ValueError, AttributeError):
        facts = {}
    missing = facts.get("missing") or []
    if missing:
        m = missing[0]
        more = f" (+{len(missing) - 1} more)" if len(missing) > 1 else ""
        return f"{visible(m.get('unit_id'))} grade {m.get('grade')} is {where(m, k)}{more}; k={k}"
    if facts.get("leaks") is not None:
        return f"{facts.get('n_leaked_final')} leak findings in the final list ({facts.get('n_leaked_rows')} in all)"
    for key in ("stale_detail", "reason"):
        if facts.get(key):
            return f"{visible(facts[key])}; k={k}"
    if facts.get("n_relevant") == 0:
        return f"no relevant label for this case; k={k}"
    return f"k={k}"


def metrics_block(d: CaseDetail) -> LineTable:
    """The case's P/R/RR/nDCG at the run's k; with a baseline open, its row and the Δ row (run − baseline)."""
    names = [f"{m}@{d.k}" for m in HEADER_MEASURES]
    columns = [Column("case"), *(Column(n, right=True) for n in names)]
    rows = [[Text(middle(visible(d.run_id), 16)), *(Text(num(d.metrics.get(n))) for n in names)]]
    if d.baseline:
        base = [d.baseline_metrics.get(n) for n in names]
        rows.append([Text(middle(visible(d.baseline), 16)), *(Text(num(v)) for v in base)])
        diffs = []
        for n, b in zip(names, base, strict=True):
            mine = d.metrics.get(n)
            diff = None if mine is None or b is None else float(mine) - float(b)
            style = "" if not diff else ("red" if diff < 0 else "green")
            diffs.append(Text(delta(diff), style=style))
        rows.append([Text("Δ"), *diffs])
    return LineTable(columns, rows)


def events_line(d: CaseDetail) -> Text:
    e = d.events
    if not e:
        return Text("run events: none recorded", style="dim")
    latency = e.get("latency_ms")
    took = "—" if latency is None else f"{latency:.0f} ms"
    line = Text.assemble(("events ", "bold"), f"latency {took} · status ", lit(e.get("status")))
    for flag, word in (("timed_out", "TIMEOUT"), ("fallback", "FALLBACK"), ("empty", "EMPTY")):
        if e.get(flag):
            line.append(f" · {word}", style="bold red")
    if e.get("error"):
        line.append(" · error ")
        line.append_text(lit(e["error"]))
    trace = next((r["trace_id"] for r in d.results if r.get("trace_id")), None)
    if trace:  # a run loaded from traces: the trace to open in the tracing tool
        line.append(" · trace ")
        line.append_text(lit(trace))
    return line


QUERY_LINES = 2


def query_cut(d: CaseDetail, width: int) -> bool:
    """Whether the header cannot show the whole query (the last section then shows it)."""
    return len(wrap_lines(visible(d.case.get("query")), width - 2, QUERY_LINES + 1)) > QUERY_LINES


def mine_text(d: CaseDetail) -> str:
    """What the person recorded: category / status, by whom and when; "not triaged" when nothing."""
    n = d.note
    if n is None or not (n.category or n.status or n.note):
        return "not triaged"
    return f"{n.category or '-'} / {n.status or '-'} by {n.author} at {n.updated_at[:19]}"


def mine_line(d: CaseDetail) -> Text:
    """The person's verdict beside the classifier's lines above it: category / status and the note's first
    line, on one line (the Triage section below has the note in full)."""
    n = d.note
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append("mine ", style="bold cyan")
    if n is None or not (n.category or n.status or n.note):
        line.append("not triaged (1-4 category, 5-8 status, e note)", style="dim")
        return line
    line.append_text(lit(f"{n.category or '-'} / {n.status or '-'}", "bold cyan"))
    if n.note:
        line.append(" · note: ")
        line.append_text(lit(n.note.splitlines()[0] + (" …" if "\n" in n.note.strip() else "")))
    return line


def why_block(d: CaseDetail, width: int) -> RenderableType:
    """The header: query, failures, per-case metrics and events, each line fitting ``width``."""
    lines: list[Text] = []
    query = visible(d.case.get("query"))
    for i, part in enumerate(wrap_lines(query, width - 2, QUERY_LINES)):
        lines.append(Text.assemble(("Q " if i == 0 else "  ", "bold"), part))
    if query_cut(d, width):
        chars = len(str(d.case.get("query")))
        lines.append(Text(f"  the query in full ({chars} characters) is the last section: G", style="dim"))
    if "classification" in d.errors:
        lines.append(Text(visible(d.errors["classification"]), style="red"))
    elif not d.failures:
        lines.append(Text("not a failure of this run (no rule fired)", style="green"))
    for f in d.failures[:SHOWN_FAILURES]:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{visible(f.get('category'))} ", style="bold magenta")
        line.append_text(lit(f.get("rule"), "bold"))
        line.append(f"  ({visible(f.get('failure'))})", style="dim")
        lines.append(line)
        lines.append(Text("  " + failure_sentence(f, d.k), no_wrap=True, overflow="ellipsis"))
    if len(d.failures) > SHOWN_FAILURES:
        lines.append(Text(f"… {len(d.failures) - SHOWN_FAILURES} more failures below", style="dim"))
    lines.append(mine_line(d))
    if "metrics" in d.errors:
        lines.append(Text(visible(d.errors["metrics"]), style="red"))
    elif not d.metrics:
        lines.append(Text(f"no metrics at k={d.k}: the case has no relevant label (not averaged)", style="dim"))
    lines.append(events_line(d))
    if d.metrics and "metrics" not in d.errors:
        return Group(*lines, metrics_block(d))
    return Group(*lines)


RESULT_COLUMNS = (Column("#", right=True), Column("unit", flex=True), Column("grade", right=True), Column("flags"))


#: Flag words and the letters the side-by-side panels use for them (legend in the panels' heading).
FLAG_LETTERS = {"LEAK": "L", "stale": "S", "dup": "D", "not-in-corpus": "N", "relevant": "R"}


def flags(d: CaseDetail, r: dict[str, Any], *, compact: bool = False) -> Text:
    out = Text()

    def add(word: str, style: str, detail: str = "") -> None:
        out.append(FLAG_LETTERS[word] if compact else f"{word}{detail} ", style=style)

    key = (str(r["stage"]), int(r["rank"]))
    if key in d.leaked_at():
        add("LEAK", "bold white on red")
    if key in d.stale:
        add("stale", "yellow", f"({d.stale[key]})")
    if r["duplicate"]:
        add("dup", "dim")
    if r["not_in_corpus"]:
        add("not-in-corpus", "yellow")
    if str(r["unit_id"]) in d.relevant:
        add("relevant", "bold green")
    out.rstrip()
    return out


def results_block(
    d: CaseDetail, stage: str, width: int, flagged_only: bool = False, *, compact: bool = False
) -> RenderableType:
    """One line per result of ``stage``; ``flagged_only`` keeps the rows with a flag (the candidate list is long
    and only its relevant, leaked or stale rows explain anything); ``compact`` writes flags as letters (a panel
    of the side-by-side lists is a third of the width)."""
    rows = []
    for r in d.results:
        if r["stage"] != stage:
            continue
        if flagged_only and not flags(d, r).plain:
            continue
        grade = Text("unjudged", style="yellow") if r["grade"] is None else Text(str(r["grade"]))
        rows.append([Text(str(r["rank"])), lit(r["unit_id"]), grade, flags(d, r, compact=compact)])
    if not rows:
        return Text(f"no {'flagged ' if flagged_only else ''}{stage} results", style="yellow")
    return LineTable(RESULT_COLUMNS, rows, middle_cut=True)


def missing_block(d: CaseDetail, width: int) -> RenderableType:
    if "missing" in d.errors:
        return Text(visible(d.errors["missing"]), style="red")
    missing = [m for m in d.locations if m.get("location") != "final-top-k"]
    if not missing:
        return Text(f"every labelled relevant unit is in the final top {d.k}", style="green")
    unit_w = max(12, min(max(len(visible(m["unit_id"])) for m in missing), width // 2))
    lines = []
    for m in missing:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(middle(visible(m["unit_id"]), unit_w).ljust(unit_w), style="bold")
        line.append(f"  grade {m.get('grade')}  ")
        line.append(where(m, d.k))
        lines.append(line)
    return Group(*lines)


def leak_lines(leaks: list[Leak]) -> list[Text]:
    """Each leaked result, then its reasons in full (the case screen's section, the Leakage view's pane)."""
    out: list[Text] = []
    for leak in leaks:
        out.append(Text.assemble((f"{leak.stage} #{leak.rank} ", "bold red"), lit(leak.unit_id, "bold")))
        out.extend(Text.assemble("  ", lit(reason)) for reason in leak.reasons)
    return out


def leaks_block(d: CaseDetail) -> RenderableType:
    if "leaks" in d.errors:
        return Text(visible(d.errors["leaks"]), style="red")
    return Group(*leak_lines(d.leaks))


def triage_block(d: CaseDetail) -> RenderableType:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    n = d.note
    grid.add_row("mine", lit(mine_text(d)))
    grid.add_row("note", Text(visible(n.note, keep_newlines=True)) if n and n.note else Text("(none: press e)"))
    c = d.case
    who = c.get("principal_id") or "(none: ACL unchecked)"
    grid.add_row("principal", lit(f"{who} groups {c.get('principal_groups')} tenant {c.get('principal_tenant')}"))
    grid.add_row("expected", lit(f"{c.get('expected_behavior')} (answerable={c.get('answerable')})"))
    grid.add_row("case", lit(f"split={c.get('split')} type={c.get('query_type')} lang={c.get('language')}"))
    return grid


def classification_block(d: CaseDetail) -> RenderableType:
    out: list[RenderableType] = []
    for f in d.failures:
        out.append(
            Text.assemble(
                (f"{f.get('failure')} ", "bold"),
                lit(f"{f.get('category')} · {f.get('rule')} · confidence {num(f.get('confidence'))}"),
            )
        )
        for step in f.get("experiments") or []:
            out.append(Text.assemble("  try: ", lit(step)))
        patterns = f.get("patterns") or []
        if patterns:
            out.append(Text.assemble("  patterns: ", lit(", ".join(map(str, patterns)))))
    return Group(*out) if out else Text("no automatic classification (not a failure)")


def _marked(passage: str, evidence: list[dict[str, int]] | None) -> Text:
    """The passage as plain text (each piece through ``safe_text.visible``, never markup), the evidence spans in
    it (offsets into the raw passage, unit span) styled: cut at the raw offsets before sanitising, so a control
    character shown wider cannot shift a highlight."""
    out, at = Text(), 0
    for span in evidence or []:
        s, e = max(span["s"], at), span["e"]
        if e <= s:
            continue
        out.append(visible(passage[at:s]))
        out.append(visible(passage[s:e]), style="reverse")
        at = e
    out.append(visible(passage[at:]))
    return out


def passages_block(d: CaseDetail) -> RenderableType:
    out = []
    for r in d.results:
        if r["stage"] != "final":
            continue
        text = _marked(r["passage"], r.get("evidence")) if r["passage"] else Text("(no passage text in the manifest)")
        line = Text()
        line.append(f"#{r['rank']} ", style="bold")
        line.append_text(lit(r["unit_id"], "bold"))
        line.append(" ")
        line.append_text(lit(r["title"] or ""))
        line.append("\n   ")
        line.append_text(text[:PASSAGE_CHARS] + ("…" if len(text) > PASSAGE_CHARS else ""))
        out.append(line)
    return Group(*out) if out else Text("(no final-stage results)")


SECTIONS = (
    "why",
    "runs",
    "results",
    "leaks",
    "missing",
    "triage",
    "classification",
    "candidates",
    "passages",
    "query",
)
#: Narrowest panel of the side-by-side ranked lists (rank, unit, grade, a flag): two fit at 80 columns.
PANEL_WIDTH = 34


def panels_fit(width: int) -> int:
    return max(1, (width + 2) // (PANEL_WIDTH + 2))


def runs_block(details: list[CaseDetail], offset: int, total: int, width: int) -> RenderableType:
    """The final lists of several runs for one case side by side, one panel per run; the heading says which of
    how many runs are shown and that `[`/`]` shift the window."""
    grid = Table.grid(expand=True, padding=(0, 2))
    for _ in details:
        grid.add_column(ratio=1)
    panels: list[RenderableType] = []
    for d in details:
        panels.append(Group(lit(d.run_id, "bold"), results_block(d, "final", width, compact=True)))
    grid.add_row(*panels)
    shown = f"runs {offset + 1}-{offset + len(details)} of {total}"
    more = " ([ ] shift)" if total > len(details) else ""
    legend = Text("flags: " + ", ".join(f"{c} {w}" for w, c in FLAG_LETTERS.items()), style="dim")
    return Group(heading(f"Final lists side by side: {shown}{more}"), legend, grid)


def sections(d: CaseDetail, width: int, side: RenderableType | None = None) -> dict[str, RenderableType]:
    n_final = sum(1 for r in d.results if r["stage"] == "final")
    n_cand = len(d.results) - n_final
    leaks: RenderableType = Text("")
    if d.leaks or "leaks" in d.errors:
        leaks = Group(Text("Leaked results (final first), full reasons", style="bold underline red"), leaks_block(d))
    return {
        "why": why_block(d, width),
        "runs": side if side is not None else Text(""),
        "results": Group(heading(f"Final list ({n_final}; k={d.k})"), results_block(d, "final", width)),
        "missing": Group(heading("Labelled evidence not in the final top k"), missing_block(d, width)),
        "leaks": leaks,
        "triage": Group(heading("Triage (1-4 category, 5-8 status, e note)"), triage_block(d)),
        "classification": Group(heading("Automatic classification"), classification_block(d)),
        "candidates": Group(
            heading(f"Candidate stage: {n_cand} results, those flagged"),
            results_block(d, "candidate", width, flagged_only=True),
        ),
        "passages": Group(heading("Final passages"), passages_block(d)),
        "query": Group(heading("Query in full"), Text(visible(d.case.get("query"))))
        if query_cut(d, width)
        else Text(""),
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


def rendered(d: CaseDetail, width: int, side: RenderableType | None = None) -> Rendered:
    return Rendered(d, width, {name: prerender(body, width) for name, body in sections(d, width, side).items()})


def body_width(screen_width: int) -> int:
    """Cells a section has in a terminal ``screen_width`` wide: the body's padding and its scrollbar's gutter
    taken off (what :meth:`CaseScreen.section_width` measures once laid out; a read ahead lays the case out at
    this). The gutter is kept when no scrollbar shows (``scrollbar-gutter: stable``), so the width does not
    change as the content grows past the screen, which would lay the case out again."""
    return max(20, screen_width - 4)
