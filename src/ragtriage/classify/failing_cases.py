"""Failures grouped by case, written once: a case may break several rules, and every reader that lists failing
cases (the notes export, the gate's per-category rules and reports, the TUI) wants one row per case."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.classify.classify_run import failures

#: What :func:`failing_cases` returns: the distinct categories and rules of each failing case, sorted.
FAILING_CASE_SCHEMA = pa.schema(
    [("case_id", pa.string()), ("categories", pa.list_(pa.string())), ("rules", pa.list_(pa.string()))]
)


def failing_cases(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """One row per failing case of ``run_id`` (:data:`FAILING_CASE_SCHEMA`), ordered by case."""
    cur = con.cursor()
    try:
        cur.register("_failure_rows", failures(cur, run_id))
        table = cur.sql(
            """SELECT case_id, list(DISTINCT category ORDER BY category) AS categories,
                      list(DISTINCT rule ORDER BY rule) AS rules
               FROM _failure_rows GROUP BY case_id ORDER BY case_id"""
        ).to_arrow_table()
    finally:
        cur.close()
    return table.cast(FAILING_CASE_SCHEMA)
