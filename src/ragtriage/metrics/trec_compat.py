"""``--trec-compat``: the figures ``trec_eval -c -l THRESHOLD -m P.k -m recall.k -m ndcg_cut.k -m map_cut.k
-m recip_rank`` prints for the store's qrels and run, to floating-point rounding.

What trec_eval does differently from the default mode (docs/metrics.md lists it all): it ignores the recorded rank
and orders each list by score descending, ties by docno descending; it averages over every query that has a
qrels line (``-c``: a query missing from the run scores 0; a run query without qrels is ignored); a query without
relevant documents scores 0 on recall/map instead of being excluded; nDCG uses linear gain over every positive
grade, with the ideal list built from all judged documents; recip_rank has no cutoff. A unit repeated in one list
keeps its first occurrence (lowest recorded rank) and that row's score, as a de-duplicated run file would.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pyarrow as pa

from ragtriage.contract.relevance import is_relevant
from ragtriage.metrics.context import DEFAULT_KS, EvalContext, arrow, resolve
from ragtriage.metrics.distribution import describe
from ragtriage.metrics.per_case import dcg_sql, hits_sql, ideal_dcg_sql
from ragtriage.metrics.ranking import trec_key
from ragtriage.metrics.summary import MetricReport, MetricRow, column_values
from ragtriage.store.dedup import first_occurrences

TREC_MEASURES = ("P", "recall", "ndcg_cut", "map_cut")


def _columns(ks: Sequence[int]) -> str:
    parts = []
    for k in ks:
        hits = f"coalesce(a.hits_{k}, 0)"
        idcg = ideal_dcg_sql(k)
        parts += [
            f'{hits} / {k}.0 AS "P_{k}"',
            f'CASE WHEN n.num_rel > 0 THEN {hits} / n.num_rel ELSE 0.0 END AS "recall_{k}"',
            f'coalesce(a.dcg_{k} / nullif({idcg}, 0), 0.0) AS "ndcg_cut_{k}"',
            f'CASE WHEN n.num_rel > 0 THEN coalesce(a.ap_{k}, 0.0) / n.num_rel ELSE 0.0 END AS "map_cut_{k}"',
        ]
    return ",\n".join(parts)


def _aggregates(ks: Sequence[int]) -> str:
    parts = []
    for k in ks:
        parts += [
            f"{hits_sql(k)} AS hits_{k}",
            f"{dcg_sql(k)} AS dcg_{k}",
            f"sum(cum_rel / pos) FILTER (WHERE rel AND pos <= {k}) AS ap_{k}",
        ]
    return ",\n".join(parts)


def trec_sql(ctx: EvalContext, *, dedupe: bool = True) -> tuple[str, list[object]]:
    """Per-query trec_eval figures. Ranking whole lists by score with a window costs seconds at 10M rows, so the
    top ``depth`` of each list comes from a top-n aggregate, and a query whose first relevant result lies deeper
    (recip_rank has no cutoff) gets its rank by counting the results ordered before it. ``dedupe=False`` is for
    runs known to hold no repeated unit (``runs.has_repeats``), which skip the de-duplicating window."""
    split = "WHERE case_id IN (SELECT case_id FROM cases WHERE split = ?)" if ctx.split else ""

    def rel(grade: str) -> str:
        return is_relevant(grade, ctx.threshold)

    rows = """SELECT case_id, unit_id, rank, score FROM results WHERE run_id = ? AND stage = ?
              AND case_id IN (SELECT case_id FROM n)"""
    if dedupe:
        rows = first_occurrences(rows)
    sql = f"""
    WITH q AS MATERIALIZED (SELECT case_id, unit_id, grade FROM qrels {split}),
    n AS (SELECT case_id, count(*) FILTER (WHERE {rel("grade")}) AS num_rel,
                 list(CAST(grade AS DOUBLE) ORDER BY grade DESC) FILTER (WHERE grade > 0) AS gains
          FROM q GROUP BY case_id),
    r AS NOT MATERIALIZED ({rows}),
    top AS (SELECT case_id, max_by(unit_id, {trec_key("r")}, {ctx.depth}) AS l FROM r GROUP BY case_id),
    ranked AS (SELECT case_id, unnest(l) AS unit_id, unnest(range(1, len(l) + 1)) AS pos FROM top),
    hit AS (SELECT x.case_id, x.pos, coalesce({rel("q.grade")}, FALSE) AS rel,
                   CAST(greatest(coalesce(q.grade, 0), 0) AS DOUBLE) AS g,
                   sum(CASE WHEN {rel("q.grade")} THEN 1 ELSE 0 END)
                       OVER (PARTITION BY x.case_id ORDER BY x.pos) AS cum_rel
            FROM ranked x LEFT JOIN q USING (case_id, unit_id)),
    a AS (SELECT case_id, min(pos) FILTER (WHERE rel) AS first_rel, {_aggregates(ctx.ks)} FROM hit GROUP BY case_id),
    best AS (SELECT r.case_id, max({trec_key("r")}) AS best_key
             FROM r JOIN q USING (case_id, unit_id)
             WHERE {rel("q.grade")} AND r.case_id IN (SELECT case_id FROM a WHERE first_rel IS NULL)
             GROUP BY r.case_id),
    deep AS (SELECT r.case_id, 1 + count(*) FILTER (WHERE {trec_key("r")} > b.best_key) AS first_rel
             FROM r JOIN best b USING (case_id) GROUP BY r.case_id)
    SELECT n.case_id, CAST(n.num_rel AS BIGINT) AS num_rel, {_columns(ctx.ks)},
           CASE WHEN coalesce(a.first_rel, d.first_rel) IS NOT NULL
                THEN 1.0::DOUBLE / coalesce(a.first_rel, d.first_rel) ELSE 0.0::DOUBLE END AS recip_rank
    FROM n LEFT JOIN a USING (case_id) LEFT JOIN deep d USING (case_id) ORDER BY n.case_id
    """
    params: list[object] = [ctx.split] if ctx.split else []
    return sql, [*params, ctx.run_id, ctx.stage]


def _has_repeats(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    rows = con.execute("SELECT has_repeats FROM runs WHERE run_id = ?", [run_id]).fetchall()
    return not rows or rows[0][0] is not False  # unknown: de-duplicate


def trec_per_query(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    ks: Sequence[int] | str = DEFAULT_KS,
    *,
    stage: str = "final",
    split: str | None = None,
) -> pa.Table:
    """One row per query with a qrels line (trec_eval -c's population), trec_eval's measure names."""
    ctx = resolve(con, run_id, ks, stage=stage, gain="linear", split=split)
    sql, params = trec_sql(ctx, dedupe=_has_repeats(con, run_id))
    return arrow(con, sql, params)


def trec_summary(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    ks: Sequence[int] | str = DEFAULT_KS,
    *,
    stage: str = "final",
    split: str | None = None,
    seed: int = 0,
) -> MetricReport:
    """trec_eval's 'all' line per measure (the mean), with the same distribution columns as the default mode."""
    ctx = resolve(con, run_id, ks, stage=stage, gain="linear", split=split)
    sql, params = trec_sql(ctx, dedupe=_has_repeats(con, run_id))
    table = arrow(con, sql, params)
    rows = []
    for m in TREC_MEASURES:
        for k in ctx.ks:
            rows.append(_row(table, m, k, f"{m}_{k}", seed))
    rows.append(_row(table, "recip_rank", 0, "recip_rank", seed))
    hits = {k: column_values(table, f"P_{k}") for k in ctx.ks}
    return MetricReport(
        run_id=ctx.run_id,
        threshold=ctx.threshold,
        gain="linear",
        unit=ctx.unit,
        ks=ctx.ks,
        n_cases=table.num_rows,
        n_without_relevant=int(np.sum(column_values(table, "num_rel") == 0)),
        rows=rows,
        zero_hit_rate={k: float(np.mean(v == 0)) if len(v) else None for k, v in hits.items()},
        stage=ctx.stage,
        split=ctx.split,
        mode="trec-compat",
    )


def _row(table: pa.Table, measure: str, k: int, column: str, seed: int) -> MetricRow:
    d = describe(column_values(table, column), seed=seed)
    return MetricRow.of(measure, k, column, d)
