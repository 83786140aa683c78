"""How much of each top k carries a relevance label: where the label pool must grow before the figures hold.

An unlabelled result counts as not relevant in P/R/nDCG, so a case whose top k is mostly unlabelled can score low
for a good ranking. Judged@k = labelled results in the top k / the results there (min(k, list length), ir_measures'
definition and name). It counts the *labelled* rule (``contract.relevance.labelled_units``: any label, a negative
grade included), not trec_eval's *judged* (grade >= 0), because the question is whether anyone looked at the
result; the report's ``judged``/``unjudged`` columns keep Judged@k's word and count the same. A case is *mostly
unjudged* when more than half of the results it returned within k have no label.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.contract.relevance import labelled_units
from ragtriage.metrics.context import EvalContext, arrow, context_of
from ragtriage.metrics.engine import evaluate
from ragtriage.metrics.measures import Measure
from ragtriage.metrics.ranking import cut_lists


def judged_report(
    con: duckdb.DuckDBPyConnection,
    run: str | EvalContext,
    k: int = 10,
    *,
    stage: str = "final",
    split: str | None = None,
) -> pa.Table:
    """One row per answerable case, least labelled first: returned (within k), judged and unjudged (labelled and
    unlabelled, Judged@k's words), Judged@k (the engine's), flag.
    A resolved context gives its deepest cutoff as k."""
    ctx = context_of(con, run, (k,), stage=stage, split=split)
    k = ctx.depth
    measure = Measure("Judged", cutoff=k)
    lists = cut_lists(con, ctx.run_id, ctx.stage, k, ctx.case_filter())
    values = evaluate(con, ctx, [measure], trec=False, lists=lists).select(["case_id", "m0"])
    pop, params = ctx.population_sql()
    qrels, qrels_params = ctx.qrels_sql()
    return arrow(
        con,
        f"""WITH pop AS ({pop}),
            t AS (SELECT l.case_id, count(*) AS returned, count(q.unit_id) AS labelled
                  FROM _lists l LEFT JOIN ({labelled_units(qrels)}) q USING (case_id, unit_id)
                  GROUP BY l.case_id)
            SELECT p.case_id, c.query, {k} AS k, coalesce(t.returned, 0) AS returned,
                   coalesce(t.labelled, 0) AS judged, coalesce(t.returned - t.labelled, 0) AS unjudged,
                   v.m0 AS "{measure}",
                   coalesce(t.returned - t.labelled, 0) * 2 > coalesce(t.returned, 0) AS mostly_unjudged
            FROM pop p JOIN cases c USING (case_id) LEFT JOIN t USING (case_id) JOIN _v v USING (case_id)
            ORDER BY "{measure}", p.case_id""",
        params + qrels_params,
        _lists=lists,
        _v=values,
    )
