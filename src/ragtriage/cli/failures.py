"""`failures`: a run's classified failures (category, rule, patterns, experiments), with the human triage on top."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import duckdb
import pyarrow as pa
import typer
from rich.console import Console
from rich.table import Table

from ragtriage.classify import CATEGORIES, PATTERNS, FailureSummary, classify_run, failure_summary, failures
from ragtriage.cli._app import app, open_existing, shown
from ragtriage.cli._app import fail as _fail
from ragtriage.csv_out import csv_text
from ragtriage.safe_text import visible
from ragtriage.store import DEFAULT_DB, StoreError

try:  # the notes store is optional: without it the automatic classification is all there is
    from ragtriage.notes import NotesError, NotesStore, notes_path_for
except ImportError:  # pragma: no cover - depends on the installed modules
    NotesStore = None  # type: ignore[assignment,misc]

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

OVERLAY = ("user_category", "status", "note")


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def _with_notes(rows: pa.Table, db: Path, run: str) -> pa.Table:
    """Add user_category, status and note from the notes file beside ``db`` (NULL when none is written)."""
    notes: dict[str, dict[str, Any]] = {}
    if NotesStore is not None and notes_path_for(db).exists():
        try:
            for n in NotesStore.open(db).to_arrow(run).to_pylist():
                notes[n["case_id"]] = n
        except NotesError as exc:
            err.print(visible(f"notes not shown: {exc}"), markup=False, highlight=False)
    ids = rows.column("case_id").to_pylist()
    for name, key in zip(OVERLAY, ("category", "status", "note"), strict=True):
        rows = rows.append_column(name, pa.array([notes.get(c, {}).get(key) for c in ids], pa.string()))
    return rows


def _summary_dict(s: FailureSummary) -> dict[str, Any]:
    return {
        "k": s.k,
        "failures": s.failures,
        "cases": s.cases,
        "by_category": s.by_category,
        "by_failure": s.by_failure,
        "by_pattern": s.by_pattern,
        "cost": {
            "measure": s.costs.measure,
            "mean": s.costs.mean,
            "gap": s.costs.gap,
            "population": s.costs.population,
            "by_category": {c.category: {"cost": c.cost, "cases": c.cases} for c in s.costs.costs},
            "sentence": s.costs.sentence(),
        },
    }


def _print_summary(run: str, s: FailureSummary) -> None:
    console.print(visible(f"run {run}: {s.failures} failure(s) in {s.cases} case(s), judged at k={s.k}"), markup=False)
    console.print(visible(s.costs.sentence()), markup=False, highlight=False)
    cost = Table("category", f"{s.costs.measure} lost", "cases", title="cost per category", title_justify="left")
    for c in s.costs.costs:
        cost.add_row(shown(c.category), f"{c.cost:.4f}", str(c.cases))
    console.print(cost)
    for title, counts in (("category", s.by_category), ("failure", s.by_failure), ("pattern", s.by_pattern)):
        table = Table(title, "failures", title=f"per {title}", title_justify="left")
        for name, count in counts.items():
            table.add_row(shown(name), str(count))
        if not counts:
            table.add_row("(none)", "0")
        console.print(table)


def _print_rows(rows: pa.Table) -> None:
    if rows.num_rows == 0:
        console.print("no failures")
        return
    # the rule name starts with its category, so the category needs no column of its own
    table = Table(title=f"{rows.num_rows} failure(s)", title_justify="left", box=None, header_style="bold")
    for name in ("case", "failure", "rule", "conf", "patterns", "mine"):
        table.add_column(name, overflow="fold", no_wrap=name in ("case", "conf"))
    for r in rows.to_pylist():
        mine = "/".join(v for v in (r["user_category"], r["status"]) if v)
        cells = (r["case_id"], r["failure"], r["rule"], f"{r['confidence']:.2f}", ", ".join(r["patterns"]), mine)
        table.add_row(*(shown(c) for c in cells))
    console.print(table)


def _flat(rows: pa.Table) -> pa.Table:
    """Lists joined with '; ' so the rows fit a CSV cell."""
    for name in ("patterns", "experiments"):
        i = rows.column_names.index(name)
        joined = pa.array(["; ".join(v or []) for v in rows.column(name).to_pylist()], pa.string())
        rows = rows.set_column(i, name, joined)
    return rows


@app.command("failures")
def failures_cmd(
    run: Annotated[str, typer.Option("--run", help="run_id whose failures to show (see `ragtriage info`).")],
    db: Annotated[Path, typer.Option("--db", help="DuckDB store file.")] = Path(DEFAULT_DB),
    category: Annotated[str | None, typer.Option(help=f"Only this category: {', '.join(CATEGORIES)}.")] = None,
    pattern: Annotated[
        str | None, typer.Option(help=f"Only failures with this pattern hint: {', '.join(p.name for p in PATTERNS)}.")
    ] = None,
    summary: Annotated[bool, typer.Option("--summary", help="Counts per category, failure and pattern.")] = False,
    reclassify: Annotated[
        bool, typer.Option("--reclassify", help="Classify the run again and store the result (needs write access).")
    ] = False,
    fmt: Annotated[Format, typer.Option("--format", help="Output: table, json or csv.")] = Format.table,
    k: Annotated[
        int | None, typer.Option("--k", help="Judge at this cutoff instead of the run's own k (run.json).")
    ] = None,
) -> None:
    """Each failure of a run with its defect category, the rule that decided it and the evidence.

    Human triage (category, status, note written in the TUI) is shown beside the automatic classification.
    """
    if category is not None and category not in CATEGORIES:
        raise _fail(ValueError(f"unknown category {category!r}; use one of: {', '.join(CATEGORIES)}"))
    names = [p.name for p in PATTERNS]
    if pattern is not None and pattern not in names:
        raise _fail(ValueError(f"unknown pattern {pattern!r}; use one of: {', '.join(names)}"))
    con = None
    try:
        con = open_existing(db, read_only=not reclassify)
        if reclassify:
            classify_run(con, run, ks=k, store=True)
        if summary:
            stats = failure_summary(con, run, k=k)
        else:
            rows = failures(con, run, category=category, pattern=pattern, k=k)
    except (StoreError, duckdb.Error, OSError, ValueError) as exc:
        raise _fail(exc) from exc
    finally:
        if con is not None:
            con.close()
    if summary:
        if fmt is Format.json:
            typer.echo(json.dumps({"run_id": run, **_summary_dict(stats)}, indent=2))
        elif fmt is Format.csv:
            rows_out = [
                {"kind": kind, "name": name, "value": float(count)}
                for kind, counts in (("category", stats.by_category), ("failure", stats.by_failure))
                + (("pattern", stats.by_pattern),)
                for name, count in counts.items()
            ]
            rows_out += [{"kind": "cost", "name": c.category, "value": round(c.cost, 6)} for c in stats.costs.costs]
            schema = pa.schema([("kind", pa.string()), ("name", pa.string()), ("value", pa.float64())])
            typer.echo(csv_text(pa.Table.from_pylist(rows_out, schema)), nl=False)
        else:
            _print_summary(run, stats)
        return
    rows = _with_notes(rows, db, run)
    if fmt is Format.json:
        out = rows.to_pylist()
        for r in out:
            r["evidence"] = json.loads(r["evidence"])
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
    elif fmt is Format.csv:
        typer.echo(csv_text(_flat(rows)), nl=False)
    else:
        _print_rows(rows)
