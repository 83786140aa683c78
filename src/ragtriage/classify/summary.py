"""A run's failures in counts (per category, failure kind, pattern) with what each category costs.

``failures --summary`` and the TUI Overview read this. From fresh stored rows it is a few aggregates in SQL and
never fetches the evidence, which keeps it fast on a large run.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from ragtriage.classify import stored
from ragtriage.classify.classify_run import failure_source, fold_classification, judging_k
from ragtriage.classify.cost import CostReport


@dataclass(frozen=True)
class FailureSummary:
    run_id: str
    k: int
    failures: int
    cases: int
    by_category: dict[str, int]
    by_failure: dict[str, int]
    by_pattern: dict[str, int]
    costs: CostReport
    from_store: bool


_COUNTS = """
SELECT 'category' AS kind, category AS name, count(*) AS n FROM {src} GROUP BY category
UNION ALL SELECT 'failure', failure, count(*) FROM {src} GROUP BY failure
UNION ALL SELECT 'pattern', p, count(*) FROM (SELECT unnest(patterns) AS p FROM {src}) GROUP BY p
UNION ALL SELECT 'total', 'failures', count(*) FROM {src}
UNION ALL SELECT 'total', 'cases', count(DISTINCT case_id) FROM {src}
ORDER BY kind, n DESC, name
"""


def _counts(rows: list[tuple[str, str, int]]) -> dict[str, dict[str, int]]:
    """Counts by kind and name, summed over ``rows`` (one chunk's counts after another), largest first."""
    out: dict[str, dict[str, int]] = {"category": {}, "failure": {}, "pattern": {}, "total": {}}
    for kind, name, n in rows:
        out[kind][name] = out[kind].get(name, 0) + int(n)
    return {kind: dict(sorted(named.items(), key=lambda kv: (-kv[1], str(kv[0])))) for kind, named in out.items()}


def failure_summary(con: duckdb.DuckDBPyConnection, run_id: str, *, k: int | None = None) -> FailureSummary:
    """Counts and category costs of ``run_id`` at :func:`judging_k` (stored when fresh, else computed)."""
    cutoff = judging_k(con, run_id, k)
    cur = con.cursor()
    try:
        if stored.is_fresh(cur, run_id, cutoff):
            src = failure_source(cur, run_id, cutoff)
            kept = cur.execute(_COUNTS.format(src=src), {"run_id": run_id, "k": cutoff}).fetchall()
            costs = CostReport.from_table(run_id, cutoff, stored.cost_rows(cur, run_id, cutoff))
            return _summary(run_id, cutoff, _counts(kept), costs, True)
    finally:
        cur.close()
    rows: list[tuple[str, str, int]] = []

    def count(chunk: duckdb.DuckDBPyConnection, rows_sql: str, params: dict[str, object]) -> None:
        # the chunk's rows once, without their evidence, then counted: every count adds up over the chunks, which
        # partition the cases (so distinct cases add up too)
        chunk.execute(
            f"CREATE OR REPLACE TEMP TABLE _sum_rows AS SELECT case_id, category, failure, patterns FROM ({rows_sql})",
            params,
        )
        try:
            rows.extend(chunk.execute(_COUNTS.format(src="_sum_rows")).fetchall())
        finally:
            chunk.execute("DROP TABLE _sum_rows")

    costs = fold_classification(con, run_id, cutoff, count)
    return _summary(run_id, cutoff, _counts(rows), costs, False)


def _summary(
    run_id: str, k: int, counts: dict[str, dict[str, int]], costs: CostReport, from_store: bool
) -> FailureSummary:
    return FailureSummary(
        run_id,
        k,
        counts["total"].get("failures", 0),
        counts["total"].get("cases", 0),
        counts["category"],
        counts["failure"],
        counts["pattern"],
        costs,
        from_store,
    )
