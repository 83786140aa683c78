"""`failures`: a run's classified failures (category, rule, patterns, experiments), with the human triage on top."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragtriage.cli._app import DEFAULT_DB_PATH, DbOpt, FormatOpt, app, classified_first, open_existing, show
from ragtriage.cli._app import fail as _fail
from ragtriage.contract.categories import CATEGORIES, UNDETERMINED
from ragtriage.contract.limits import MAX_CUTOFF
from ragtriage.output import Format, Output
from ragtriage.safe_text import visible

if TYPE_CHECKING:
    import pyarrow as pa

    from ragtriage.classify import FailureSummary

err = Console(stderr=True, soft_wrap=True)


def _with_notes(rows: pa.Table, db: Path, run: str) -> pa.Table:
    """Add user_category, status and note from the notes file beside ``db`` (NULL when none is written)."""
    import pyarrow as pa

    from ragtriage.metrics.context import over_arrow
    from ragtriage.notes import NOTE_SCHEMA, NotesDamaged, NotesError, NotesStore, notes_path_for

    notes = None
    if notes_path_for(db).exists():
        try:
            notes = NotesStore.open(db).to_arrow(run)
        except NotesDamaged as exc:  # the listed notes would be silently empty: refused
            raise _fail(str(exc)) from exc
        except NotesError as exc:
            err.print(visible(f"notes not shown: {exc}"), markup=False, highlight=False)
    ordered = rows.append_column("_order", pa.array(range(rows.num_rows), pa.int64()))
    sql = """SELECT f.* EXCLUDE (_order), n.category AS user_category, n.status, n.note
             FROM f LEFT JOIN n USING (case_id) ORDER BY f._order"""
    return over_arrow(sql, f=ordered, n=NOTE_SCHEMA.empty_table() if notes is None else notes)


def _summary(stats: FailureSummary) -> tuple[pa.Table, dict[str, object], list[str]]:
    """Counts per category, failure kind and pattern hint, and the measure each category costs the run."""
    import pyarrow as pa

    counts = [("category", stats.by_category), ("failure", stats.by_failure), ("pattern", stats.by_pattern)]
    rows = [(kind, name, float(n)) for kind, by in counts for name, n in by.items()]
    rows += [("cost", c.category, c.cost) for c in stats.costs.costs]
    table = pa.table(
        {
            "kind": pa.array([r[0] for r in rows], pa.string()),
            "name": pa.array([r[1] for r in rows], pa.string()),
            "value": pa.array([r[2] for r in rows], pa.float64()),
        }
    )
    context: dict[str, object] = {
        "k": stats.k,
        "failures": stats.failures,
        "cases": stats.cases,
        "cost measure": stats.costs.measure,
        "mean": stats.costs.mean,
        "population": stats.costs.population,
    }
    return (
        table,
        context,
        [stats.costs.sentence(), "value: failures for category/failure/pattern, measure lost for cost"],
    )


def _shown(rows: pa.Table) -> pa.Table:
    """The terminal columns: the rule name starts with its category, so the category needs no column."""
    from ragtriage.metrics.context import over_arrow

    sql = """SELECT case_id AS "case", failure, rule, confidence AS conf, patterns,
                    concat_ws('/', user_category, status) AS mine FROM f"""
    return over_arrow(sql, f=rows)


@app.command("failures")
def failures_cmd(
    run: Annotated[str, typer.Option("--run", help="run_id whose failures to show (see `ragtriage info`).")],
    db: DbOpt = DEFAULT_DB_PATH,
    category: Annotated[
        str | None, typer.Option(help=f"Only this category: {', '.join((*CATEGORIES, UNDETERMINED))}.")
    ] = None,
    pattern: Annotated[
        str | None, typer.Option(help="Only failures with this pattern hint (an unknown name lists them).")
    ] = None,
    summary: Annotated[bool, typer.Option("--summary", help="Counts per category, failure and pattern.")] = False,
    reclassify: Annotated[
        bool, typer.Option("--reclassify", help="Classify the run again and store the result (needs write access).")
    ] = False,
    fmt: FormatOpt = Format.table,
    k: Annotated[
        int | None,
        typer.Option("--k", min=1, max=MAX_CUTOFF, help="Judge at this cutoff instead of the run's own k (run.json)."),
    ] = None,
) -> None:
    """Each failure of a run with its defect category, the rule that decided it and the evidence.

    Human triage (category, status, note written in the TUI) is shown beside the automatic classification.
    """
    import duckdb

    from ragtriage.classify import CATEGORIES as VERDICTS
    from ragtriage.classify import PATTERNS, failure_summary, failures, store_classification
    from ragtriage.store import StoreError, k_statement
    from ragtriage.store.corpus_manifest import manifest_note
    from ragtriage.store.memory_cap import capped

    if category is not None and category not in VERDICTS:
        raise _fail(ValueError(f"unknown category {category!r}; use one of: {', '.join(VERDICTS)}"))
    names = [p.name for p in PATTERNS]
    if pattern is not None and pattern not in names:
        raise _fail(ValueError(f"unknown pattern {pattern!r}; use one of: {', '.join(names)}"))
    if not reclassify:
        classified_first(db)
    con = None
    try:
        con = open_existing(db, read_only=not reclassify)
        # the load's memory cap: a run classified here (--reclassify, or a store loaded with --no-precompute)
        # is classified a chunk of cases at a time, which fits it
        with capped(con):
            if reclassify:
                store_classification(con, run, ks=k)
            partial = manifest_note(con)
            judged_at = k_statement(con, run, k)
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
        table, context, notes = _summary(stats)
        notes = ([partial] if partial else []) + notes
        shown = {"run": run, **context, "k": judged_at}  # the cutoff with its source (--k, run.json, default)
        show(Output(table, shown, notes, empty="no failures"), fmt)
        return
    rows = _with_notes(rows, db, run)
    cases = len(rows.column("case_id").unique())
    context = {
        "run": run,
        "k": judged_at,
        "category": category,
        "pattern": pattern,
        "failures": rows.num_rows,
        "cases": cases,
    }
    notes = [partial] if partial else []
    show(Output(rows, context, notes, shown=_shown(rows), json_columns=("evidence",), empty="no failures"), fmt)


@app.command("classify")
def classify_cmd(db: DbOpt = DEFAULT_DB_PATH) -> None:
    """Store every run's failure classification now (`load` leaves it to the TUI's background worker and to the
    commands that read it; `load --wait-classified` does it at load).

    A chunk of cases at a time, each kept as it is done: a run stopped midway continues where it stopped.
    """
    import duckdb

    from ragtriage.classify import Progress, pending, refresh
    from ragtriage.store import StoreError

    def told(p: Progress) -> None:
        err.print(visible(p.sentence()), markup=False, highlight=False)

    try:
        con = open_existing(db, read_only=False)
        try:
            runs = pending(con)
            done = refresh(con, on_chunk=told)
        finally:
            con.close()
    except (StoreError, duckdb.Error, OSError, ValueError) as exc:
        raise _fail(exc) from exc
    left = [r for r in runs if r not in done]
    err.print(
        visible(f"classified and stored: {', '.join(done) or 'nothing to do (every run is classified)'}"),
        markup=False,
        highlight=False,
    )
    if left:
        raise _fail(f"not classified: {', '.join(left)}")
