"""The triage use cases: a run's classified failures beside the human triage written in the TUI, their summary,
and the findings of ``check`` with its verdict. The CLI prints what these return."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from ragtriage.app.render import Output
from ragtriage.metrics.context import over_arrow

if TYPE_CHECKING:
    from ragtriage.checks.report import CheckReport
    from ragtriage.classify import FailureSummary


def with_notes(rows: pa.Table, db: Path, run: str) -> tuple[pa.Table, str | None]:
    """``rows`` with user_category, status and note from the notes file beside ``db`` (NULL when none is
    written), and why the notes are not shown when they cannot be read. Raises NotesDamaged: the listed notes
    would be silently empty."""
    from ragtriage.notes import NOTE_SCHEMA, NotesDamaged, NotesError, NotesStore, notes_path_for

    notes, unread = None, None
    if notes_path_for(db).exists():
        try:
            notes = NotesStore.open(db).to_arrow(run)
        except NotesDamaged:
            raise
        except NotesError as exc:
            unread = f"notes not shown: {exc}"
    ordered = rows.append_column("_order", pa.array(range(rows.num_rows), pa.int64()))
    sql = """SELECT f.* EXCLUDE (_order), n.category AS user_category, n.status, n.note
             FROM f LEFT JOIN n USING (case_id) ORDER BY f._order"""
    return over_arrow(sql, f=ordered, n=NOTE_SCHEMA.empty_table() if notes is None else notes), unread


def summary_table(stats: FailureSummary) -> tuple[pa.Table, dict[str, object], list[str]]:
    """Counts per category, failure kind and pattern hint, and the measure each category costs the run."""
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


def shown_failures(rows: pa.Table) -> pa.Table:
    """The terminal columns: the rule name starts with its category, so the category needs no column."""
    sql = """SELECT case_id AS "case", failure, rule, confidence AS conf, patterns,
                    concat_ws('/', user_category, status) AS mine FROM f"""
    return over_arrow(sql, f=rows)


def shown_findings(findings: pa.Table) -> pa.Table:
    """The terminal's columns of ``check`` findings rows (a row's unit is its chunk, else its document)."""
    return over_arrow(
        """SELECT "check", case_id AS "case", stage, rank, coalesce(chunk_id, document_id, '') AS unit, rule, detail
           FROM f WHERE "check" <> 'unchecked'""",
        f=findings,
    )


def check_output(report: CheckReport, *, reader: bool, limit: int, spark: bool) -> Output:
    """``check``'s findings, counts and verdict; a ``reader`` (table, markdown) gets the first ``limit`` rows of
    each check only, the rest never built (a run leaking on every row has a leak row per result, which a terminal
    table cannot hold)."""
    import numpy as np

    from ragtriage.arrays import table_of

    shown: pa.Table | None = None
    cut = 0
    if reader:
        findings = report.findings(limit, unchecked=False)
        shown = shown_findings(findings)
        cut = report.finding_count(unchecked=False) - findings.num_rows
    else:
        findings = report.findings()
    unchecked = report.unchecked.num_rows
    notes = [_first_ids("unchecked (no principal)", report.unchecked["case_id"], unchecked)] if unchecked else []
    if report.coverage.manifest_note:
        notes.insert(0, report.coverage.manifest_note)
    if spark:
        from ragtriage.spark.check import NOT_RUN

        notes.append(f"engine spark: leakage only; not run: {', '.join(NOT_RUN)} (ragtriage load, then check)")
    if cut:
        notes.append(f"… {cut:,} more rows (the first {limit} of each check shown): --limit 0 or --format csv for all")
    counts = report.counts()
    if spark:
        from ragtriage.checks.report import LEAKAGE_COUNTS

        counts = {k: counts[k] for k in LEAKAGE_COUNTS}
    context = {
        "run": report.run_id,
        "verdict": report.verdict_line(),
        "checked": f"{report.coverage.checked:,} of {report.coverage.cases:,} case(s)",
        "passed": report.passed,
        "strict_passed": report.strict_passed,
    }
    if report.coverage.manifest_note:
        context["corpus_manifest"] = "derived from trace metadata, partial"
    section = table_of(
        {"check": np.array(list(counts), dtype=object), "count": np.array(list(counts.values()), dtype=np.int64)},
        pa.schema([("check", pa.string()), ("count", pa.int64())]),
    )
    return Output(findings, context, notes, {"counts": section}, shown=shown, empty="no findings")


def _first_ids(what: str, ids: pa.ChunkedArray, total: int, first: int = 10) -> str:
    """A column of ids as one line of bounded length: the first ``first`` and how many there are in all (only
    those few become Python strings: a run without principals has one unchecked case per case)."""
    head = ", ".join(str(i) for i in ids.slice(0, first).to_pylist())
    if total <= first:
        return f"{what}: {head}"
    return f"{what}: {head} … ({total:,} in all; --format csv lists them)"
