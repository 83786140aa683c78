"""The two tables every trace reader fills (their columns are described in the package docstring)."""

from __future__ import annotations

import duckdb

SPAN_COLUMNS = (
    "sid, file, line, trace_id, span_id, parent_id, kind, query, started, latency_ms, error, case_attr, principal, "
    "groups, resource"
)


def doc_score(d: str = "") -> str:
    """SQL: the score of a ``trc_docs`` row (alias ``d``) as a DOUBLE, whichever column the reader put it in
    (NULL where the text is no number: the checks refuse that)."""
    p = f"{d}." if d else ""
    return f"coalesce({p}score, TRY_CAST({p}score_text AS DOUBLE))"


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE OR REPLACE TEMP SEQUENCE trc_sid")
    con.execute(
        """CREATE OR REPLACE TEMP TABLE trc_spans (sid BIGINT, file VARCHAR, line BIGINT, trace_id VARCHAR,
               span_id VARCHAR, parent_id VARCHAR, kind VARCHAR, query VARCHAR, started DOUBLE, latency_ms DOUBLE,
               error VARCHAR, case_attr VARCHAR, principal VARCHAR, groups VARCHAR[], resource VARCHAR)"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE trc_docs (sid BIGINT, role VARCHAR, idx INTEGER, document_id VARCHAR,
               score_text VARCHAR, content VARCHAR, metadata VARCHAR, rank BIGINT, score DOUBLE)"""
    )


def drop_tables(con: duckdb.DuckDBPyConnection) -> None:
    for table in ("trc_spans", "trc_docs"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
