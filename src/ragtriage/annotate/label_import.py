"""Importing labelled rows (a filled-in pool or adjudication file) as a new dataset version.

Rows are staged and checked like the loader's labels: every error names the file, line and field, and nothing is
written unless the whole file passes. A row with an empty grade is a unit nobody has judged yet: it is skipped,
not refused, so a half-labelled pool can be imported and counted as still unjudged.

The new version keeps the parent's labels as ``annotate.versions.fork_with_labels`` says. The file's ``annotator``
column wins over ``--annotator``, which fills the blanks. Annotator ``adjudicated`` is the one the ``qrels`` view
prefers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import pyarrow as pa

from ragtriage.annotate.pool import pool_relation
from ragtriage.annotate.versions import DatasetRow, dataset_row, fork_with_labels, scalar
from ragtriage.contract.errors import Finding, ValidationFailed, unreadable
from ragtriage.contract.field_rules import ID_CONTROLS
from ragtriage.contract.fields import CHUNK_MAP, LABELS
from ragtriage.contract.rules import Rule, apply_rules, duplicate_rule, unknown_ref_rule
from ragtriage.contract.staging import Staged, qident, sql_str, stage, type_findings
from ragtriage.csv_out import restore_sql
from ragtriage.safe_text import visible
from ragtriage.store.connection import current_dataset_version
from ragtriage.store.corpus_manifest import manifest_kind
from ragtriage.store.dataset_rules import (
    chunk_unit_rule,
    grade_scale_rule,
    label_in_snapshot_rule,
    label_unit,
    span_rules,
)
from ragtriage.store.load import record_loads, record_warnings
from ragtriage.store.transactions import transaction

STAGED = "_annotate_import"
GRADED = "_annotate_graded"
NEW_LABELS = "_annotate_new"
CHUNK_MAP_TABLE = "_annotate_chunk_map"


@dataclass
class ImportReport:
    version: str
    parent: str
    unchanged: bool
    imported: int
    replaced: int
    blank: int
    file_units: int
    unjudged: int
    pool_units: int | None = None
    pool_unjudged: int | None = None
    warnings: list[Finding] = field(default_factory=list)
    #: runs classified again against the new version (their stored classification was for the old one)
    classified: list[str] = field(default_factory=list)


def _file_findings(staged: Staged) -> list[Finding]:
    """The staging findings that are about the file itself; row type errors are re-derived over every row."""
    return [
        f
        for f in staged.findings
        if f.code != "wrong-type" and not (f.code == "missing-field" and f.message.startswith("missing required"))
    ]


def _row_type_findings(con: duckdb.DuckDBPyConnection, staged: Staged) -> list[Finding]:
    """Type errors and missing required values on every row except a blank grade (an unjudged unit), by the
    staging reporter over every field (a missing column too), with the grade not required."""
    fields = tuple(replace(f, required=False) if f.name == "grade" else f for f in LABELS.fields)
    tests = {
        f.name: (qident("__bad_" + f.name), f"({qident(f.name)} IS NULL AND NOT {qident('__bad_' + f.name)})")
        for f in fields
    }
    return type_findings(con, staged.name, str(staged.path), replace(LABELS, fields=fields), tests, "line")


def _rules(ds: DatasetRow, has_documents: bool) -> list[Rule]:
    rules = [
        unknown_ref_rule("case_id", "cases", "case_id", "case id"),
        # no range rule runs here: a grade beyond INTEGER must be refused by the scale, or the import's CAST fails
        grade_scale_rule(ds.grade_min, ds.grade_max, range_checked=False),
        duplicate_rule(
            [],
            "grade",
            "label for case / unit / annotator",
            key_exprs=["case_id", label_unit(ds.unit), "coalesce(annotator, '')"],
        ),
    ]
    if ds.unit == "chunk":
        rules.append(chunk_unit_rule())
    if ds.unit == "span":
        need = "each label needs start and end (or import chunk labels with --chunk-map)"
        rules += span_rules(need, "documents" if has_documents else None)
    if has_documents:
        rules.append(label_in_snapshot_rule(ds.unit, "SELECT unit_id FROM documents"))
    return rules


_ID_SOURCES = {
    "case_id": "SELECT case_id AS id FROM cases",
    "document_id": "SELECT document_id AS id FROM documents UNION SELECT document_id FROM labels",
    "chunk_id": "SELECT chunk_id AS id FROM documents UNION SELECT chunk_id FROM labels",
    "section_id": "SELECT section_id AS id FROM documents UNION SELECT section_id FROM labels",
}


def _restore_neutralised(con: duckdb.DuckDBPyConnection, staged: Staged) -> None:
    """A pool written as CSV went through the one CSV writer, which apostrophe-leads formula-like cells (a case
    id ``=q1``) and shows control characters as visible escapes (``q2\x1b`` as ``q2␛``); undo both so the ids
    match the store again. Only the store's ids holding controls (few, and warned about at load) are mapped
    back from their shown form."""
    cols = [f.name for f in LABELS.fields if f.kind == "string"]
    sets = ", ".join(f"{qident(c)} = {restore_sql(qident(c))}" for c in cols)
    con.execute(f"UPDATE {staged.name} SET {sets}")
    for col, source in _ID_SOURCES.items():
        found = con.execute(f"SELECT id FROM ({source}) WHERE regexp_matches(id, ?)", [ID_CONTROLS]).fetchall()
        raw = [r[0] for r in found]
        if not raw:
            continue
        con.register("_shown_ids", pa.table({"shown": [visible(v) for v in raw], "id": raw}))
        try:
            con.execute(
                f"UPDATE {staged.name} SET {qident(col)} = m.id FROM _shown_ids m WHERE {qident(col)} = m.shown"
            )
        finally:
            con.unregister("_shown_ids")


def _chunk_spans(con: duckdb.DuckDBPyConnection, staged: Staged, chunk_map: Path, ds: DatasetRow) -> list[Finding]:
    """Chunk labels carried over to a span dataset: each label takes its chunk's document and offsets from
    ``chunk_map`` (chunk_id, document_id, start, end). The map is checked as a span file is (file:line:field),
    and a label whose chunk the map lacks is refused naming its line."""
    if ds.unit != "span":
        msg = f"--chunk-map turns chunk labels into spans: the current dataset's unit is {ds.unit}, not span"
        return [Finding(str(chunk_map), None, "unit", "bad-value", msg)]
    cmap = stage(con, chunk_map, CHUNK_MAP, CHUNK_MAP_TABLE)
    found = [
        *cmap.findings,
        *apply_rules(
            con,
            cmap,
            [*span_rules("each chunk needs start and end", None), duplicate_rule(["chunk_id"], "chunk_id", "chunk id")],
        ),
    ]
    if any(f.severity == "error" for f in found):
        return found
    for col, kind in (("document_id", "VARCHAR"), ("start", "BIGINT"), ("end", "BIGINT")):  # absent: typed NULL
        con.execute(f"ALTER TABLE {staged.name} ALTER {qident(col)} TYPE {kind}")
    con.execute(
        f"""UPDATE {staged.name} s SET document_id = m.document_id, "start" = m."start", "end" = m."end"
            FROM {CHUNK_MAP_TABLE} m WHERE s.chunk_id = m.chunk_id"""
    )
    missing = Rule(
        "chunk_id",
        "not-in-chunk-map",
        f"s.grade IS NOT NULL AND (s.chunk_id IS NULL OR s.chunk_id NOT IN (SELECT chunk_id FROM {CHUNK_MAP_TABLE}))",
        f"'chunk ' || coalesce(s.chunk_id, '(none)') || ' is not in the chunk map {visible(str(chunk_map))}'",
    )
    return found + apply_rules(con, staged, [missing])


def _validate(
    con: duckdb.DuckDBPyConnection, path: Path, ds: DatasetRow, fmt: str | None, chunk_map: Path | None = None
) -> tuple[Staged, list[Finding]]:
    staged = stage(con, path, LABELS, STAGED, fmt=fmt)
    if staged.fmt in ("csv", "tsv") and staged.rows:
        _restore_neutralised(con, staged)
    findings = _file_findings(staged)
    if chunk_map is not None and staged.rows:
        # the map gives each chunk's document: a chunk label file may leave the column out
        findings = [f for f in findings if not (f.field == "document_id" and f.code == "missing-field")]
        findings += _chunk_spans(con, staged, chunk_map, ds)
        if any(f.severity == "error" for f in findings):
            raise ValidationFailed([f for f in findings if f.severity == "error"])
    # a malformed JSON line left no row to check, so it is refused alone, like an unreadable file: the rules
    # below would otherwise judge a pool with that line's label missing
    malformed = any(f.code == "malformed-json" and f.severity == "error" for f in findings)
    if unreadable(findings) or malformed or not staged.rows:
        raise ValidationFailed([f for f in findings if f.severity == "error"])
    findings += _row_type_findings(con, staged)
    bad = " OR ".join(qident("__bad_" + f.name) for f in LABELS.fields)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {GRADED} AS SELECT * FROM {staged.name} WHERE grade IS NOT NULL AND NOT ({bad})"
    )
    graded = Staged(GRADED, staged.path, staged.fmt, 0, [], staged.line_label)
    has_docs = manifest_kind(con) == "complete"  # a derived (partial) manifest cannot say a unit is not there
    findings += apply_rules(con, graded, _rules(ds, has_docs))
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise ValidationFailed(errors)
    return staged, [f for f in findings if f.severity == "warning"]


def _new_labels(con: duckdb.DuckDBPyConnection, ds: DatasetRow, annotator: str) -> int:
    """Temp table of the file's graded rows as labels; returns how many."""
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {NEW_LABELS} AS
            SELECT case_id, document_id, chunk_id, section_id, {label_unit(ds.unit)} AS unit_id,
                   CAST(grade AS INTEGER) AS grade, coalesce(annotator, {sql_str(annotator)}) AS annotator, note, line
            FROM {GRADED}"""
    )
    return int(scalar(con, f"SELECT count(*) FROM {NEW_LABELS}"))


def _record(con: duckdb.DuckDBPyConnection, path: Path, parent: str, report: ImportReport, rows: int) -> None:
    """Log the import in ``loads``; a new version inherits its parent's load warnings plus the import's own."""
    record_loads(con, "labels", report.version, [(path, rows)], {})
    if not report.unchanged:
        record_warnings(con, report.version, report.warnings, inherit=parent)


def import_labels(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    *,
    annotator: str,
    fmt: str | None = None,
    pool_runs: list[str] | None = None,
    depth: int = 10,
    stage_name: str = "final",
    chunk_map: str | Path | None = None,
) -> ImportReport:
    """Import a labelled file as a child of the current version, in one transaction, then classify every run
    against it (``classify.refresh``: what ``failures``, the gate and the TUI read), as ``import-labels`` does.

    ``pool_runs``/``depth`` re-pool those runs against the new version to count what is still unjudged there;
    without them the count is over the file's own rows. ``chunk_map`` (a span dataset): the file's labels are
    of chunks, placed as spans by the map (:func:`_chunk_spans`), so labels of an old chunking carry over.
    """
    from ragtriage.classify import refresh

    p = Path(path)
    with transaction(con):
        parent = current_dataset_version(con)
        ds = dataset_row(con, parent)
        staged, warnings = _validate(con, p, ds, fmt, None if chunk_map is None else Path(chunk_map))
        blank = int(scalar(con, f"SELECT count(*) FROM {staged.name} WHERE grade IS NULL"))
        imported = _new_labels(con, ds, annotator)
        if imported == 0:
            raise ValidationFailed(
                [
                    Finding(
                        str(p), None, "grade", "no-labels", "no row has a grade; fill the grade column before importing"
                    )
                ]
            )
        fork = fork_with_labels(con, parent, NEW_LABELS)
        file_units, unjudged = con.execute(
            f"""SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (
                    SELECT 1 FROM labels l WHERE l.case_id = f.case_id AND l.unit_id = f.unit_id))
                FROM (SELECT DISTINCT case_id, {label_unit(ds.unit)} AS unit_id FROM {staged.name}
                      WHERE case_id IS NOT NULL) f"""
        ).fetchall()[0]
        report = ImportReport(
            fork.version,
            parent,
            fork.unchanged,
            imported,
            fork.replaced,
            blank,
            int(file_units),
            int(unjudged),
            warnings=warnings,
        )
        if pool_runs:
            report.pool_units, report.pool_unjudged = _pool_counts(con, pool_runs, depth, stage_name)
        _record(con, p, parent, report, staged.rows)
    report.classified = refresh(con)
    return report


def _pool_counts(con: duckdb.DuckDBPyConnection, runs: list[str], depth: int, stage_name: str) -> tuple[int, int]:
    row = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE NOT judged) FROM ({pool_relation(con, runs, depth, stage_name)})",
        {"runs": runs, "stage": stage_name},
    ).fetchall()[0]
    return int(row[0]), int(row[1])
