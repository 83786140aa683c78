"""Latency and failure counts of a run from its ``events``: the operational side of a retrieval result."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.metrics.context import arrow
from ragtriage.store import require_run


def latency_report(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """One row: events, p50/p95/max/mean latency (ms, linear-interpolated quantiles) and timeout/empty/fallback/
    error counts, plus cases of the current dataset with no event at all."""
    cur = con.cursor()
    try:
        require_run(cur, run_id)
    finally:
        cur.close()
    return arrow(
        con,
        """WITH e AS (SELECT * FROM events WHERE run_id = $1)
           SELECT $1 AS run_id, count(*) AS events, count(latency_ms) AS with_latency,
                  quantile_cont(latency_ms, 0.5) AS p50_ms, quantile_cont(latency_ms, 0.95) AS p95_ms,
                  max(latency_ms) AS max_ms, avg(latency_ms) AS mean_ms,
                  count(*) FILTER (WHERE timed_out) AS timeouts, count(*) FILTER (WHERE empty) AS empty,
                  count(*) FILTER (WHERE fallback) AS fallbacks, count(*) FILTER (WHERE status = 'error') AS errors,
                  count(*) FILTER (WHERE status = 'insufficient_evidence') AS insufficient_evidence,
                  (SELECT count(*) FROM cases c ANTI JOIN e USING (case_id)) AS cases_without_event
           FROM e""",
        [run_id],
    )
