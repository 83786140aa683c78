"""Every rendering of a comparison: ``compare --runs`` and ``report`` as titled sections of text cells (and the
Markdown, JSON and CSV written from them), ``compare --run`` as an :class:`~ragtriage.app.render.output.Output`.

The terminal table, the Markdown and the HTML report all render the same ``Section`` list, so they cannot
disagree. Cells hold data-derived strings (run ids, slice values, case ids, configuration values) as they are;
each renderer passes every cell through ``ragtriage.safe_text`` (``visible``, ``markdown_cell``). Every figure is
printed with its metric name (which carries the cutoff), the paired cases, the seed and the resample count.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from ragtriage.app.compare import Changes, OneComparison
from ragtriage.app.render.output import Format, Output
from ragtriage.arrays import table_of, table_of_rows
from ragtriage.csv_out import csv_text
from ragtriage.experiments.explain import CAUSES
from ragtriage.experiments.runs_table import RunsComparison
from ragtriage.experiments.safety import RunSafety
from ragtriage.gate.compare import TIE, method
from ragtriage.safe_text import markdown_cell, visible

#: Column heads of the cases-per-cause table that fit 80 columns.
CAUSE_HEADERS = {
    "label-change": "labels",
    "candidate-miss": "miss",
    "unjudged-displacement": "unjudged",
    "rerank-inversion": "rerank",
    "tie-order": "ties",
}


@dataclass(frozen=True)
class Section:
    title: str
    headers: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    text_columns: int = 2  # the first columns are left-aligned text, the rest figures
    transitions: bool = False  # rows are (run, key, before, after): a terminal prints "run  key: before → after"

    @property
    def prose(self) -> bool:
        """A section of sentences only (its notes), no table."""
        return not self.headers


def _f(v: Any, digits: int = 4, sign: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:+.{digits}f}" if sign else f"{v:.{digits}f}"


def _p(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return "<0.0001" if v < 1e-4 else f"{v:.4f}"


def _ci(low: Any, high: Any, sign: bool = False, digits: int = 4) -> str:
    if low is None or (isinstance(low, float) and math.isnan(low)):
        return "n/a"
    return f"[{_f(low, digits, sign)}, {_f(high, digits, sign)}]"


def _safety_of(safety: tuple[RunSafety, ...]) -> dict[str, RunSafety]:
    return {s.run_id: s for s in safety}


def run_sentence(rc: RunsComparison, run: str, safety: RunSafety | None) -> str:
    """One run in one sentence: what blocks it (leakage) first, then on which measures it is better or worse than
    the baseline and whether each difference is significant after the table's correction."""
    corr = {"holm": "Holm", "bh": "BH"}[rc.correction]
    block = safety.phrase() if safety else "leakage not evaluated"
    mark = "✗ " if safety and safety.blocked else ""  # as in the run's cells of the table
    if run == rc.baseline:
        return f"{mark}{run} (baseline): {block}."
    moved: dict[str, list[str]] = {"better": [], "worse": [], "equal": []}
    for r in rc.table.to_pylist():
        d = r["delta"]
        if r["run_id"] != run or d is None or math.isnan(d):
            continue
        sig = "significant" if r["significant"] else "not significant"
        way = "better" if d > TIE else "worse" if d < -TIE else "equal"
        moved[way].append(f"{r['measure']} ({_f(d, sign=True)}, {sig}, p({corr}) {_p(r['p_adjusted'])})")
    figures = "; ".join(f"{way} on {', '.join(items)}" for way, items in moved.items() if items)
    return f"{mark}{run}: {block}. Against {rc.baseline}: {figures or 'no measure could be compared'}."


def summary_section(rc: RunsComparison, safety: tuple[RunSafety, ...]) -> Section:
    """The opening: one sentence per run, the baseline's last; first when it leaks, since every candidate's
    verdict below is measured against figures partly earned with leaked rows."""
    of = _safety_of(safety)
    base = of.get(rc.baseline)
    leaks = base is not None and base.leaked_rows > 0
    runs = [rc.baseline, *rc.candidates] if leaks else [*rc.candidates, rc.baseline]
    return Section("Verdict per run", [], [], [run_sentence(rc, r, of.get(r)) for r in runs])


def main_section(rc: RunsComparison, *, compact: bool = False, safety: tuple[RunSafety, ...] = ()) -> Section:
    """One row per run and measure. ``compact`` (a terminal) keeps 3 digits and drops the raw p and Δ interval.
    A run that leaks, or whose leakage could not be checked, is marked in its run cell, before any figure."""
    corr = {"holm": "Holm", "bh": "BH"}[rc.correction]
    of = _safety_of(safety)
    digits = 3 if compact else 4
    headers = ["run", "changed", "measure", "mean", "95% CI", "Δ", "Δ 95% CI", "W/T/L", "p", f"p ({corr})", "sig"]
    rows = []
    for r in rc.table.to_pylist():
        base = r["run_id"] == rc.baseline
        cfg = rc.config_of(r["run_id"])
        first = r["measure"] == rc.measures[0]
        if base:
            changed = "base" if compact else "baseline"
        elif compact:
            changed = f"{len(cfg.changes)}" + (" ⚠" if cfg.warning else "")
        else:
            changed = (", ".join(c.variable for c in cfg.changes) or "nothing") + (" ⚠" if cfg.warning else "")
        mark = of[r["run_id"]].mark if r["run_id"] in of else ""
        cells = {
            "run": r["run_id"] + ("" if not mark else " ✗" if compact else f" ✗ {mark}"),
            "measure": r["measure"],
            "mean": _f(r["mean"], digits),
            "95% CI": _ci(r["ci_low"], r["ci_high"], digits=digits),
            "Δ": "" if base else _f(r["delta"], digits, sign=True),
            "Δ 95% CI": "" if base else _ci(r["delta_ci_low"], r["delta_ci_high"], sign=True, digits=digits),
            "W/T/L": "" if base else f"{r['wins']}/{r['ties']}/{r['losses']}",
            "p": "" if base else _p(r["p_value"]),
            f"p ({corr})": "" if base else _p(r["p_adjusted"]),
            "sig": "" if base else ("yes" if r["significant"] else "no"),
            "changed": changed if first else "",
        }
        rows.append(cells)
    if compact:  # 80 columns: the configuration count moves into the run cell, details follow the table
        headers = [h for h in headers if h not in ("Δ 95% CI", "p", "changed")]
        for c in rows:
            c["run"] += " ⚠" if c["changed"].endswith("⚠") else ""
            c["95% CI"] = c["95% CI"].replace(", ", ",")
        headers[headers.index(f"p ({corr})")] = f"p({corr})"
        for c in rows:
            c[f"p({corr})"] = c[f"p ({corr})"]
    split = rc.split or "all splits"
    notes = [
        f"baseline {rc.baseline} · dataset {rc.dataset_version[:12]} · {split} · stage final",
        rc.method(),
        "changed: configuration variables that differ from the baseline's run.json (⚠: more than one changed, so "
        "the difference cannot be attributed to one variable)",
    ]
    if any(s.blocked for s in safety):
        notes.insert(0, "✗: the run leaks, its leakage was not checked, or it fails the gate, whatever its figures")
    return Section("Runs against the baseline", headers, [[c[h] for h in headers] for c in rows], notes, 3)


def config_section(rc: RunsComparison) -> Section:
    rows = []
    for cfg in rc.configs:
        if cfg.run_id == rc.baseline:
            continue
        if not cfg.changes:
            rows.append([cfg.run_id, "(none)", "", ""])
        rows += [[cfg.run_id, c.variable, c.baseline, c.run] for c in cfg.changes]
    notes = [f"{c.run_id}: {c.warning}" for c in rc.configs if c.warning]
    title = f"Configuration against {rc.baseline} (run.json)"
    return Section(title, ["run", "variable", rc.baseline, "run"], rows, notes, 4, transitions=True)


def slice_section(rc: RunsComparison, by: str, slices: pa.Table, *, compact: bool = False) -> Section:
    """Wide: one row per (measure, slice), the baseline's mean then each run's mean and Δ (``compact``: Δ only)."""
    digits = 3 if compact else 4
    per_run = [(f"Δ {r}",) if compact else (r, f"Δ {r}") for r in rc.candidates]
    headers = ["measure", by, "n", rc.baseline] + [h for hs in per_run for h in hs]
    rows: list[list[str]] = []
    width = len(rc.runs)
    recs = slices.to_pylist()
    for i in range(0, len(recs), width):
        group = recs[i : i + width]
        row = [group[0]["measure"], group[0]["slice"], str(group[0]["n"]), _f(group[0]["mean"], digits)]
        for g in group[1:]:
            row += ([] if compact else [_f(g["mean"], digits)]) + [_f(g["delta"], digits, sign=True)]
        rows.append(row)
    return Section(f"By {by} (worst slice first)", headers, rows, ["slices ordered by their worst Δ over the runs"])


def category_sections(rc: RunsComparison, categories: pa.Table, moved: pa.Table) -> list[Section]:
    counts = Section(
        f"Failures by defect category against {rc.baseline}",
        ["run", "category", rc.baseline, "run", "added", "fixed"],
        [
            [
                r["run_id"],
                r["category"],
                str(r["baseline_failures"]),
                str(r["run_failures"]),
                str(r["added"]),
                str(r["fixed"]),
            ]
            for r in categories.to_pylist()
        ],
        ["added: failing in this category in the run and not in the baseline; fixed: the reverse"],
    )
    moves = Section(
        "Cases that moved between categories",
        ["run", "case", f"{rc.baseline} categories", "run categories"],
        [[m["run_id"], m["case_id"], m["baseline_categories"], m["run_categories"]] for m in moved.to_pylist()],
        text_columns=4,
        transitions=True,
    )
    return [counts, moves]


def explain_sections(
    rc: RunsComparison, causes: pa.Table, explained: pa.Table, *, compact: bool = False
) -> list[Section]:
    """Cases per cause (one column per cause, in the order of precedence), then every drop with its cause
    (``compact``: a line each)."""
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for r in causes.to_pylist():
        counts.setdefault((r["run_id"], r["measure"]), {})[r["cause"]] = r["cases"]
    short = [CAUSE_HEADERS.get(c, c) for c in CAUSES]
    per_cause = Section(
        f"Why cases regressed against {rc.baseline} (cases per cause)",
        ["run", "measure", *short],
        [[run, m, *(str(n.get(c, 0)) for c in CAUSES)] for (run, m), n in counts.items()],
        [f"causes in order of precedence: {', '.join(CAUSES)} (the first that holds; docs/experiments.md)"],
    )
    rows = [
        [r["run_id"], r["case_id"], r["measure"], _f(r["delta"], sign=True), r["cause"], r["why"]]
        for r in explained.to_pylist()
    ]
    title = "Regressed cases and their causes"
    if compact:  # 80 columns: one line per drop rather than a table of squeezed sentences
        return [per_cause, Section(title, [], [], [f"{a} {b} {c} {d} {e}: {f}" for a, b, c, d, e, f in rows])]
    return [per_cause, Section(title, ["run", "case", "measure", "Δ", "cause", "why"], rows, [], 3)]


def sections(rc: RunsComparison, changes: Changes | None = None, *, compact: bool = False) -> list[Section]:
    """Every section of a comparison, in the order a reader wants them (``compact`` for an 80-column terminal)."""
    safety = changes.safety if changes else ()
    out = [summary_section(rc, safety), main_section(rc, compact=compact, safety=safety), config_section(rc)]
    if changes and changes.by and changes.slices is not None:
        out.append(slice_section(rc, changes.by, changes.slices, compact=compact))
    if changes and changes.categories is not None and changes.moved is not None:
        out += category_sections(rc, changes.categories, changes.moved)
    if changes and changes.causes is not None and changes.explained is not None:
        out += explain_sections(rc, changes.causes, changes.explained, compact=compact)
    return out


def section_markdown(s: Section, level: int = 3) -> list[str]:
    lines = [f"{'#' * level} {markdown_cell(s.title)}", ""]
    if s.prose:
        return lines + [f"- {markdown_cell(n)}" for n in s.notes] + [""]
    if s.rows:
        lines += ["| " + " | ".join(markdown_cell(h) for h in s.headers) + " |"]
        lines += ["|" + "".join("---|" if i < s.text_columns else "---:|" for i in range(len(s.headers)))]
        lines += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in s.rows]
    else:
        lines.append("(none)")
    if s.notes:
        lines += ["", *[f"- {markdown_cell(n)}" for n in s.notes]]
    return lines + [""]


def to_markdown(parts: list[Section]) -> str:
    lines: list[str] = []
    for s in parts:
        lines += section_markdown(s)
    return "\n".join(lines)


def _clean(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def to_dict(rc: RunsComparison, changes: Changes | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "baseline": rc.baseline,
        "runs": list(rc.runs),
        "measures": list(rc.measures),
        "dataset_version": rc.dataset_version,
        "split": rc.split,
        "test": rc.test,
        "correction": rc.correction,
        "n_comparisons": rc.n_comparisons,
        "alpha": rc.alpha,
        "seed": rc.seed,
        "n_resamples": rc.n_resamples,
        "n_cases": rc.n_cases,
        "method": rc.method(),
        "verdicts": summary_section(rc, changes.safety if changes else ()).notes,
        "leakage": [
            {
                "run_id": x.run_id,
                "status": x.status,
                "blocked": x.blocked,
                "leaked_result_rows": x.leaked_rows,
                "leaked_cases": x.leaked_cases,
                "cases": x.coverage.cases,
                "checked_cases": x.coverage.checked,
                "gate": x.gate or None,
                "gate_failed": list(x.gate_failed),
            }
            for x in (changes.safety if changes else ())
        ],
        "table": [{k: _clean(v) for k, v in r.items()} for r in rc.table.to_pylist()],
        "configuration": [
            {"run_id": c.run_id, "changes": [vars(x) for x in c.changes], "warning": c.warning} for c in rc.configs
        ],
    }
    if changes:
        out["by"] = changes.by
        for name in ("slices", "categories", "moved", "causes"):
            t = getattr(changes, name)
            if t is not None:
                out[name] = [{k: _clean(v) for k, v in r.items()} for r in t.to_pylist()]
        if changes.explained is not None:
            out["explained"] = [
                {**{k: _clean(v) for k, v in r.items()}, "evidence": json.loads(r["evidence"])}
                for r in changes.explained.to_pylist()
            ]
    return out


def to_json(rc: RunsComparison, changes: Changes | None = None) -> str:
    return json.dumps(to_dict(rc, changes), indent=2, ensure_ascii=False) + "\n"


def to_csv(rc: RunsComparison, changes: Changes | None = None) -> str:
    """The main table with each run's leakage status (right after its id, before any figure) and changed
    variables, through the one CSV writer."""
    summary = {c.run_id: c.summary() for c in rc.configs}
    status = {x.run_id: x.status for x in (changes.safety if changes else ())}
    ids = rc.table.column("run_id").to_pylist()
    diff = np.array([summary[r] for r in ids], dtype=object)
    leak = np.array([status.get(r, "not evaluated") for r in ids], dtype=object)
    extra = table_of(
        {"leakage": leak, "configuration_changes": diff},
        pa.schema([("leakage", pa.string()), ("configuration_changes", pa.string())]),
    )
    table = rc.table.add_column(1, "leakage", extra.column("leakage"))
    return csv_text(table.append_column("configuration_changes", extra.column("configuration_changes")))


def print_sections(parts: list[Section]) -> None:
    """Each section as a rich table of literal text (run ids and slice values may hold markup or escapes)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False)
    for s in parts:
        console.print(Text(visible(s.title), style="bold"))
        if s.prose:
            for n in s.notes:
                console.print(Text("  " + visible(n)))
            console.print()
            continue
        if not s.rows:
            console.print(Text("  (none)"))
        elif s.transitions:  # long values: one line each rather than a table squeezed into 80 columns
            for run, key, before, after in s.rows:
                console.print(Text(f"  {visible(run)}  {visible(key)}: {visible(before)} → {visible(after)}"))
        else:
            table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold")
            for i, h in enumerate(s.headers):
                justify: Literal["left", "right"] = "left" if i < s.text_columns else "right"
                table.add_column(Text(visible(h)), no_wrap=True, justify=justify)
            for row in s.rows:
                table.add_row(*(Text(visible(c)) for c in row))
            console.print(table)
        for n in s.notes:
            console.print(Text("  " + visible(n)))
        console.print()


def comparison_text(rc: RunsComparison, changes: Changes, fmt: Format) -> str | None:
    """``compare --runs`` in ``fmt`` as text; None for the table format, which :func:`print_sections` prints."""
    if fmt is Format.json:
        return to_json(rc, changes)
    if fmt is Format.csv:  # --explain: one row per drop, its evidence as JSON
        return csv_text(changes.explained) if changes.explained is not None else to_csv(rc, changes)
    if fmt is Format.markdown:
        return to_markdown(sections(rc, changes))
    return None


TEXT_HEADERS = ["slice", "metric", "n", "W/T/L", "base", "cand", "Δ mean", "95% CI", "p"]
EXPLAIN_NOTE = (
    "one cause per dropped (case, measure), the first that holds: label-change, tie-order, candidate-miss, "
    "unjudged-displacement, rerank-inversion, other (docs/experiments.md)"
)


def text_rows(summary: pa.Table, digits: int = 4) -> list[list[str]]:
    """``Comparison.summary`` rows formatted for a terminal (``digits=3`` fits 80 columns), a Markdown table or the
    TUI's Compare view, headed by ``TEXT_HEADERS``."""
    out = []
    for r in summary.to_pylist():
        p = "n/a" if _clean(r["p_value"]) is None else f"{r['p_value']:.{digits}g}"
        out.append(
            [
                str(r["slice"]),
                str(r["metric"]),
                str(r["n"]),
                f"{r['wins']}/{r['ties']}/{r['losses']}",
                f"{r['baseline']:.{digits}f}",
                f"{r['candidate']:.{digits}f}",
                f"{r['mean_diff']:+.{digits}f}",
                _ci(r["ci_low"], r["ci_high"], sign=True, digits=digits),
                p,
            ]
        )
    return out


def one_output(one: OneComparison, fmt: Format = Format.json) -> Output:
    """``compare --run``: the summary rows (numbers, for json/csv), the same rows formatted for a reader, and the
    worst cases; the candidate's leakage (``experiments.safety``) leads the context, before any figure, then the
    baseline's when it leaks (its figures include leaked rows), and the labels the figures use close it. With
    ``--explain``, the cases per cause and every drop's cause: a reader (table, markdown) gets the causes that
    occur and each drop's sentence, json every count and the evidence, csv (rows only) one row per drop with its
    evidence."""
    import pyarrow.compute as pc

    result = one.result
    schema = pa.schema([(h, pa.string()) for h in TEXT_HEADERS])
    shown = table_of_rows([dict(zip(TEXT_HEADERS, row, strict=True)) for row in text_rows(result.summary)], schema)
    base = one.baseline_safety
    context = {
        "leakage": one.safety.phrase(),
        **({"baseline leakage": f"baseline {result.baseline} {base.phrase()}"} if base.leaked_rows else {}),
        "run": result.run_id,
        "baseline": result.baseline,
        "dataset": result.dataset_version[:12],
        "k": list(result.ks),
        "by": result.by,
        "split": result.split or "all splits",
        "stage": "final",
        "method": method(n_resamples=result.n_resamples, seed=result.seed),
        "unpaired": result.unpaired,
        **one.labels,
    }
    parts = {"worst": result.worst}
    if one.why is not None:
        counts, explained = one.why.counts, one.why.explained
        context["explain"] = EXPLAIN_NOTE
        if fmt is Format.csv:
            return Output(explained, context)
        if fmt in (Format.table, Format.markdown):
            counts = counts.filter(pc.greater(counts.column("cases"), 0))
            explained = explained.drop_columns(["evidence"])
        parts |= {"causes": counts, "explained": explained}
    return Output(result.summary, context, sections=parts, shown=shown, json_columns=("evidence",))
