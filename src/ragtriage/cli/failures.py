"""`failures`: a run's classified failures (category, rule, patterns, experiments), with the human triage on top."""

from __future__ import annotations

from typing import Annotated

import typer

from ragtriage.app.render.output import Format, Output
from ragtriage.cli._app import DEFAULT_DB_PATH, DbOpt, FormatOpt, app, classified_first, say, show, store_for
from ragtriage.cli._app import fail as _fail
from ragtriage.contract.categories import CATEGORIES, UNDETERMINED
from ragtriage.contract.limits import MAX_CUTOFF


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
    from ragtriage.classify import CATEGORIES as VERDICTS
    from ragtriage.classify import PATTERNS, failure_summary, failures, store_classification
    from ragtriage.store import k_statement
    from ragtriage.store.corpus_manifest import manifest_note
    from ragtriage.store.memory_cap import capped

    if category is not None and category not in VERDICTS:
        raise _fail(ValueError(f"unknown category {category!r}; use one of: {', '.join(VERDICTS)}"))
    names = [p.name for p in PATTERNS]
    if pattern is not None and pattern not in names:
        raise _fail(ValueError(f"unknown pattern {pattern!r}; use one of: {', '.join(names)}"))
    if not reclassify:
        classified_first(db)
    # the load's memory cap: a run classified here (--reclassify, or a store loaded with --no-precompute) is
    # classified a chunk of cases at a time, which fits it
    with store_for(db, read_only=not reclassify) as con, capped(con):
        if reclassify:
            store_classification(con, run, ks=k)
        partial = manifest_note(con)
        judged_at = k_statement(con, run, k)
        if summary:
            stats = failure_summary(con, run, k=k)
        else:
            rows = failures(con, run, category=category, pattern=pattern, k=k)
    from ragtriage.app.triage import shown_failures, summary_table, with_notes
    from ragtriage.notes import NotesDamaged

    if summary:
        table, context, notes = summary_table(stats)
        notes = ([partial] if partial else []) + notes
        shown = {"run": run, **context, "k": judged_at}  # the cutoff with its source (--k, run.json, default)
        show(Output(table, shown, notes, empty="no failures"), fmt)
        return
    try:
        rows, unread = with_notes(rows, db, run)
    except NotesDamaged as exc:
        raise _fail(str(exc)) from exc
    if unread:
        say(unread, err=True)
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
    show(Output(rows, context, notes, shown=shown_failures(rows), json_columns=("evidence",), empty="no failures"), fmt)


@app.command("classify")
def classify_cmd(db: DbOpt = DEFAULT_DB_PATH) -> None:
    """Store every run's failure classification now (`load` leaves it to the TUI's background worker and to the
    commands that read it; `load --wait-classified` does it at load).

    A chunk of cases at a time, each kept as it is done: a run stopped midway continues where it stopped.
    """
    from ragtriage.classify import Progress, pending, refresh

    def told(p: Progress) -> None:
        say(p.sentence(), err=True)

    with store_for(db, read_only=False) as con:
        runs = pending(con)
        done = refresh(con, on_chunk=told)
    left = [r for r in runs if r not in done]
    say(f"classified and stored: {', '.join(done) or 'nothing to do (every run is classified)'}", err=True)
    if left:
        raise _fail(f"not classified: {', '.join(left)}")
