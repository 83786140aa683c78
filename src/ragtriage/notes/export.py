"""CSV export of triage: each failing or annotated case with its automatic and its human classification.

The TUI's export key and ``ragtriage export-notes`` both call :func:`export_table` then :func:`write_csv`, so the
file is the same whichever wrote it. The rows come from the core functions themselves, read by their declared
schemas (``classify.failure_list``: one row per failing case, :func:`ragtriage.metrics.per_case_schema`); the file is
written by the one CSV writer (:func:`ragtriage.csv_out.write_csv`, re-exported here): formula-like cells get a
leading apostrophe and control characters are made visible.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.classify import failure_list
from ragtriage.csv_out import write_csv
from ragtriage.metrics import DEFAULT_KS, per_case, per_case_schema
from ragtriage.notes.store import NotesStore
from ragtriage.store import run_ids

__all__ = ["BASE_COLUMNS", "ExportError", "export_schema", "export_table", "write_csv"]

BASE_COLUMNS = (
    "case_id",
    "run_id",
    "query",
    "auto_category",
    "auto_rule",
    "user_category",
    "status",
    "note",
    "author",
    "updated_at",
)


class ExportError(Exception):
    """The export cannot be produced (unknown run)."""


def export_schema() -> pa.Schema:
    """The export's columns: :data:`BASE_COLUMNS`, then the per-case metrics at the default cutoffs."""
    base = [pa.field(c, pa.string()) for c in BASE_COLUMNS if c != "updated_at"]
    metrics = [f for f in per_case_schema(DEFAULT_KS) if f.name != "case_id"]
    return pa.schema([*base, pa.field("updated_at", pa.string()), *metrics])


def export_table(con: duckdb.DuckDBPyConnection, store: NotesStore, run_id: str | None = None) -> pa.Table:
    """Rows for every failing or annotated case of ``run_id`` (every run when None), ordered by run and case."""
    with con.cursor() as cur:
        known = run_ids(cur)
        if run_id is not None and run_id not in known:
            raise ExportError(f"unknown run {run_id!r}; loaded runs: {', '.join(known) or 'none'}")
        runs = [run_id] if run_id is not None else known
        parts = [_export_run(cur, store, r) for r in runs]
    if not parts:
        return export_schema().empty_table()
    return pa.concat_tables(parts)


def _export_run(cur: duckdb.DuckDBPyConnection, store: NotesStore, run_id: str) -> pa.Table:
    """One run: failing cases (a case may break several rules: categories and rules joined with '; ') and
    annotated ones, each with the case's query and per-case metrics."""
    cur.register("_f", failure_list(cur, run_id))
    cur.register("_n", store.to_arrow(run_id))
    cur.register("_m", per_case(cur, run_id, DEFAULT_KS))
    try:
        table = cur.sql(
            """
            WITH f AS (SELECT case_id, category AS auto_category, rule AS auto_rule FROM _f),
            keys AS (SELECT case_id FROM f UNION SELECT case_id FROM _n)
            SELECT k.case_id, $run AS run_id, c.query, f.auto_category, f.auto_rule,
                   _n.category AS user_category, _n.status, _n.note, _n.author,
                   CAST(_n.updated_at AS VARCHAR) AS updated_at, _m.* EXCLUDE (case_id)
            FROM keys k LEFT JOIN cases c USING (case_id) LEFT JOIN f USING (case_id)
                 LEFT JOIN _n USING (case_id) LEFT JOIN _m USING (case_id)
            ORDER BY k.case_id
            """,
            params={"run": run_id},
        ).to_arrow_table()
    finally:
        for name in ("_f", "_n", "_m"):
            cur.unregister(name)
    return table.cast(export_schema())
