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

from ragtriage.classify import CATEGORIES, PATTERNS, classify_run, failures
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


def _summary(rows: pa.Table) -> dict[str, Any]:
    cur = duckdb.connect()
    cur.register("f", rows)
    by_category = dict(cur.sql("SELECT category, count(*) FROM f GROUP BY 1 ORDER BY 2 DESC, 1").fetchall())
    by_pattern = dict(
        cur.sql(
            "SELECT p, count(*) FROM (SELECT unnest(patterns) AS p FROM f) GROUP BY 1 ORDER BY 2 DESC, 1"
        ).fetchall()
    )
    by_failure = dict(cur.sql("SELECT failure, count(*) FROM f GROUP BY 1 ORDER BY 2 DESC, 1").fetchall())
    cases = cur.sql("SELECT count(DISTINCT case_id) FROM f").fetchall()[0][0]
    cur.close()
    return {
        "failures": rows.num_rows,
        "cases": cases,
        "by_category": by_category,
        "by_failure": by_failure,
        "by_pattern": by_pattern,
    }


def _print_summary(run: str, summary: dict[str, Any]) -> None:
    console.print(visible(f"run {run}: {summary['failures']} failure(s) in {summary['cases']} case(s)"), markup=False)
    for title, key in (("category", "by_category"), ("failure", "by_failure"), ("pattern", "by_pattern")):
        table = Table(title, "failures", title=f"per {title}", title_justify="left")
        for name, count in summary[key].items():
            table.add_row(shown(name), str(count))
        if not summary[key]:
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
            classify_run(con, run, store=True)
        rows = failures(con, run, category=category, pattern=pattern)
    except (StoreError, duckdb.Error, OSError, ValueError) as exc:
        raise _fail(exc) from exc
    finally:
        if con is not None:
            con.close()
    rows = _with_notes(rows, db, run)
    if summary:
        stats = _summary(rows)
        if fmt is Format.json:
            typer.echo(json.dumps({"run_id": run, **stats}, indent=2))
        elif fmt is Format.csv:
            counts = [
                {"kind": kind, "name": name, "failures": count}
                for kind in ("category", "failure", "pattern")
                for name, count in stats[f"by_{kind}"].items()
            ]
            schema = pa.schema([("kind", pa.string()), ("name", pa.string()), ("failures", pa.int64())])
            typer.echo(csv_text(pa.Table.from_pylist(counts, schema)), nl=False)
        else:
            _print_summary(run, stats)
        return
    if fmt is Format.json:
        out = rows.to_pylist()
        for r in out:
            r["evidence"] = json.loads(r["evidence"])
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
    elif fmt is Format.csv:
        typer.echo(csv_text(_flat(rows)), nl=False)
    else:
        _print_rows(rows)
