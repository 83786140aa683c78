"""The one place the gate reads the layers below it (metrics, checks, classify) and the store.

Compare and the gate rules take Arrow tables from here, so an API change in another module touches this file
only. Imports of the other layers are inside the functions: the gate's pure parts stay importable and testable
on their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.store import StoreError, current_dataset_version, require_run

# Case columns a comparison or a slice rule may group by; ``doc_type`` is the doc_type of a case's relevant
# evidence units (a case with relevant units of two types belongs to both slices).
CASE_COLUMNS = (
    "query_type",
    "source_family",
    "language",
    "split",
    "expected_scope",
    "expected_behavior",
    "critical",
    "answerable",
    "principal_tenant",
    "filter_tenant",
    "filter_language",
    "filter_region",
    "filter_product",
    "filter_doc_type",
)
EVIDENCE_COLUMNS = ("doc_type", "source_system", "chunk_kind", "region", "product", "tenant")
SLICE_COLUMNS = CASE_COLUMNS + EVIDENCE_COLUMNS


def query(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None) -> pa.Table:
    """Run ``sql`` on a cursor of its own: DuckDB 2 refuses new work on a connection with an unfinished result."""
    cur = con.cursor()
    try:
        return cur.sql(sql, params=params).to_arrow_table()
    finally:
        cur.close()


def first_row(con: duckdb.DuckDBPyConnection, sql: str, params: list[object]) -> tuple[Any, ...] | None:
    cur = con.cursor()
    try:
        rows = cur.execute(sql, params).fetchall()
    finally:
        cur.close()
    return rows[0] if rows else None


def per_case(con: duckdb.DuckDBPyConnection, run_id: str, ks: Sequence[int]) -> pa.Table:
    """Per-case metric table of the final stage: case_id, n_relevant, n_retrieved, ``P@k`` ... ``Judged@k``."""
    from ragtriage.metrics.per_case import per_case as metrics_per_case

    table: pa.Table = metrics_per_case(con, run_id, tuple(sorted(set(ks))), stage="final", counts=False)
    return table


def leaks(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Every leaked result row of the run, in any stage (case_id, stage, rank, rule, detail, ...)."""
    from ragtriage.checks.leakage import leakage

    table: pa.Table = leakage(con, run_id)
    return table


def negative_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """One row per unanswerable case: case_id, expected_behavior, passed, reason."""
    from ragtriage.checks.negatives import negative_outcomes as outcomes

    table: pa.Table = outcomes(con, run_id)
    return table


def defect_categories(con: duckdb.DuckDBPyConnection, run_id: str, k: int | None = None) -> pa.Table:
    """case_id → the classifier's defect categories for the run at ``k`` (default: the run's own k), joined with
    ', '; every case with a failure or a relevant label has one (``classify.case_categories``)."""
    from ragtriage.classify.case_categories import case_categories

    return case_categories(con, run_id, k=k)


def category_costs(con: duckdb.DuckDBPyConnection, run_id: str) -> Any:
    """What each defect category costs the run at its own k (``classify.CostReport``)."""
    from ragtriage.classify import run_classification

    return run_classification(con, run_id).costs


def dataset_version_of(con: duckdb.DuckDBPyConnection, run_id: str) -> str:
    require_run(con, run_id)
    row = first_row(con, "SELECT dataset_version FROM runs WHERE run_id = ?", [run_id])
    assert row is not None
    return str(row[0])


def paired_version(con: duckdb.DuckDBPyConnection, run_id: str, baseline: str) -> str:
    """The dataset version both runs were loaded against; a mismatch is an input error, not a comparison."""
    cand, base = dataset_version_of(con, run_id), dataset_version_of(con, baseline)
    if cand != base:
        raise StoreError(
            f"run {run_id!r} was loaded against dataset version {cand[:12]} but baseline {baseline!r} against "
            f"{base[:12]}; reload one of them against the same dataset before comparing"
        )
    # Metrics read the current labels (a label import or adjudication moves the pointer), so the verdict names
    # the version it was computed on, not the one the runs were loaded against.
    return current_dataset_version(con)


def case_slices(con: duckdb.DuckDBPyConnection, dataset_version: str, by: str | None) -> pa.Table:
    """case_id, split, critical, answerable and ``slice`` (the value of ``by``, '(none)' when missing).

    Case columns give one row per case; evidence columns give one row per (case, value) over the case's relevant
    units, and '(no evidence)' for a case without any.
    """
    if by is not None and by not in SLICE_COLUMNS:
        raise StoreError(f"cannot slice by {by!r}; choose one of: {', '.join(SLICE_COLUMNS)}")
    base = """SELECT case_id, split, critical, answerable FROM all_cases WHERE dataset_version = $v"""
    if by is None:
        sql = f"SELECT *, 'all' AS slice FROM ({base})"
    elif by in CASE_COLUMNS:
        sql = f"""SELECT case_id, split, critical, answerable, coalesce(CAST({by} AS VARCHAR), '(none)') AS slice
                  FROM all_cases WHERE dataset_version = $v"""
    else:
        sql = f"""
        WITH rel AS (
            SELECT DISTINCT q.case_id, coalesce(CAST(d.{by} AS VARCHAR), '(none)') AS slice
            FROM qrels q JOIN documents d USING (unit_id)
            WHERE q.grade >= (SELECT relevance_threshold FROM datasets WHERE dataset_version = $v)
        )
        SELECT c.*, coalesce(r.slice, '(no evidence)') AS slice FROM ({base}) c LEFT JOIN rel r USING (case_id)"""
    return query(con, sql + " ORDER BY case_id, slice", {"v": dataset_version})


def latency(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, float | int | None]:
    """Serving figures from ``events``: cases with events, p95 latency (linear interpolation), timeouts, and
    the concurrency they were measured at."""
    row = first_row(
        con,
        """SELECT count(DISTINCT case_id), quantile_cont(latency_ms, 0.95), count(*) FILTER (WHERE timed_out),
                  count(latency_ms)
           FROM events WHERE run_id = ?""",
        [run_id],
    )
    assert row is not None
    return {
        "cases": int(row[0]),
        "p95_ms": None if row[1] is None else float(row[1]),
        "timeouts": int(row[2]),
        "with_latency": int(row[3]),
        "concurrency": measured_concurrency(con, run_id),
    }


def measured_concurrency(con: duckdb.DuckDBPyConnection, run_id: str) -> int | None:
    """The concurrency a run's latencies were measured at, as run.json states it (``ragtriage record`` writes
    ``concurrency``; a hand-written run.json may keep it under ``system``), or None when it does not say."""
    row = first_row(
        con,
        """SELECT coalesce(TRY_CAST(json_extract_string(manifest, '$.concurrency') AS INTEGER),
                          TRY_CAST(json_extract_string(manifest, '$.system.concurrency') AS INTEGER))
           FROM runs WHERE run_id = ?""",
        [run_id],
    )
    return None if row is None or row[0] is None else int(row[0])


def timed_out_cases(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    rows = query(
        con, "SELECT DISTINCT case_id FROM events WHERE run_id = $r AND timed_out ORDER BY case_id", {"r": run_id}
    )
    return [str(c) for c in rows.column("case_id").to_pylist()]
