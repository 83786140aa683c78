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

from ragtriage.contract.dimensions import NO_VALUE, SLICE_DIMENSIONS
from ragtriage.store import StoreError, current_dataset_version, require_run

# The slice dimensions a comparison or a slice rule may group by: the one list (ragtriage.contract.dimensions).
SLICE_COLUMNS = SLICE_DIMENSIONS


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


def defect_categories(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """case_id → the classifier's defect categories for the run, joined with ', ' (one row per failing case)."""
    from ragtriage.classify import failing_cases

    cur = con.cursor()
    try:
        cur.register("failing", failing_cases(con, run_id))
        return cur.sql("SELECT case_id, array_to_string(categories, ', ') AS category FROM failing").to_arrow_table()
    finally:
        cur.close()


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
    """case_id, split, critical, answerable and ``slice``: one row per case and slice it belongs to, by the one
    membership rule (``metrics.slices.membership_sql``; '(none)' for a case without a value or evidence).

    ``dataset_version`` is the current one (:func:`paired_version`), whose cases and labels the views show.
    """
    from ragtriage.metrics.slices import membership_sql

    if by is not None and by not in SLICE_DIMENSIONS:
        raise StoreError(f"cannot slice by {by!r}; choose one of: {', '.join(SLICE_DIMENSIONS)}")
    if dataset_version != current_dataset_version(con):
        raise StoreError(f"dataset version {dataset_version[:12]} is not the current one; slices read the current")
    members = "SELECT case_id, 'all' AS v FROM cases" if by is None else membership_sql(by)
    sql = f"""SELECT c.case_id, c.split, c.critical, c.answerable, coalesce(m.v, '{NO_VALUE}') AS slice
              FROM cases c JOIN (SELECT DISTINCT case_id, v FROM ({members})) m USING (case_id)
              ORDER BY case_id, slice"""
    return query(con, sql)


def latency(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, float | int | None]:
    """Serving figures from ``events``: cases with events, p95 latency (linear interpolation), timeouts."""
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
    }


def timed_out_cases(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    rows = query(
        con, "SELECT DISTINCT case_id FROM events WHERE run_id = $r AND timed_out ORDER BY case_id", {"r": run_id}
    )
    return [str(c) for c in rows.column("case_id").to_pylist()]
