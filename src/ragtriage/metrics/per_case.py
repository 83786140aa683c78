"""Per-case metrics of one run and stage, computed in DuckDB over the cut lists (see ``ranking``).

Definitions (docs/metrics.md): relevant = effective grade >= the dataset's relevance threshold; P@k divides by k
even when the list is shorter; R@k, nDCG@k and AP@k divide by the labelled relevant units and are NULL for a case
with none (a dataset defect, counted apart); RR@k is 1/position of the first relevant result within k; unjudged
results (no qrels row) are neither relevant nor irrelevant for Judged@k (judged results in the top k over the
results there, min(k, list length), as ir_measures divides), and count as non-relevant elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pyarrow as pa

from ragtriage.contract.relevance import is_relevant
from ragtriage.metrics.context import DEFAULT_KS, EvalContext, MetricsError, arrow, resolve
from ragtriage.metrics.ranking import cut_lists

MEASURES = ("P", "R", "RR", "nDCG", "AP", "Success", "Judged")
# measures whose denominator is the labelled relevant units: undefined for a case without any
NEEDS_RELEVANT = ("R", "nDCG", "AP")


COUNT_COLUMNS = ("n_judged_retrieved", "n_relevant_retrieved", "n_retrieved")


def per_case_schema(ks: Sequence[int], *, counts: bool = True) -> pa.Schema:
    """What :func:`per_case` returns for cutoffs ``ks``: the seam the CLI, the TUI, compare and the notes export
    read. ``R``/``nDCG``/``AP`` are null for a case without a relevant label; ``zero_hit@k`` is a boolean."""
    fields = [pa.field("case_id", pa.string()), pa.field("n_relevant", pa.int64())]
    if counts:
        fields += [pa.field(c, pa.int64()) for c in COUNT_COLUMNS]
    for k in ks:
        fields += [pa.field(f"{m}@{k}", pa.float64()) for m in MEASURES]
        fields.append(pa.field(f"zero_hit@{k}", pa.bool_()))
    return pa.schema(fields)


def given_per_case(
    table: pa.Table, ks: Sequence[int], measures: Sequence[str] = MEASURES, extra: Sequence[str] = ()
) -> pa.Table:
    """A per-case table a caller computed already (to summarise or slice it), refused unless it has the
    ``measures`` at every k of ``ks`` and the ``extra`` columns."""
    need = [*extra, *(f"{m}@{k}" for m in measures for k in ks)]
    missing = [c for c in need if c not in table.column_names]
    if missing:
        raise MetricsError(f"per-case table without {', '.join(missing)}: compute it at cutoffs {list(ks)}")
    return table


def hits_sql(k: int) -> str:
    """Relevant results within k, over rows (pos, rel, g) of a cut list; shared with trec-compat."""
    return f"count(*) FILTER (WHERE rel AND pos <= {k})"


def dcg_sql(k: int | None, g: str = "g") -> str:
    """DCG@k: gain g discounted by log2(position + 1), the one definition every mode uses (k None: whole list)."""
    return f"sum({g} / log2(pos + 1))" + (f" FILTER (WHERE pos <= {k})" if k is not None else "")


def ideal_dcg_sql(k: int | None, gains: str = "n.gains") -> str:
    """The ideal DCG@k from ``gains``, a case's positive gains sorted descending (k None: all of them)."""
    cut = f"{gains}[1:{k}]" if k is not None else gains
    return f"list_sum(list_transform({cut}, lambda x, j: x / log2(j + 1)))"


def _per_k_aggregates(ks: Sequence[int]) -> str:
    parts = []
    for k in ks:
        parts += [
            f"{hits_sql(k)} AS hits_{k}",
            f"count(*) FILTER (WHERE judged AND pos <= {k}) AS judged_{k}",
            f"count(*) FILTER (WHERE pos <= {k}) AS listed_{k}",
            f"coalesce({dcg_sql(k)}, 0) AS dcg_{k}",
        ]
    return ",\n".join(parts)


def _per_k_columns(ks: Sequence[int]) -> str:
    parts = []
    for k in ks:
        hits = f"coalesce(a.hits_{k}, 0)"
        idcg = ideal_dcg_sql(k)
        # AP: the j-th relevant result at position p contributes precision j / p
        ap = f"list_sum(list_transform(list_filter(a.rel_pos, lambda p: p <= {k}), lambda p, j: j / p))"
        parts += [
            f'{hits} / {k}.0 AS "P@{k}"',
            f'CASE WHEN n.n_relevant > 0 THEN {hits} / n.n_relevant END AS "R@{k}"',
            f'CASE WHEN a.first_rel <= {k} THEN 1.0::DOUBLE / a.first_rel ELSE 0.0::DOUBLE END AS "RR@{k}"',
            f'CASE WHEN n.n_relevant > 0 THEN coalesce(a.dcg_{k} / nullif({idcg}, 0), 0.0) END AS "nDCG@{k}"',
            f'CASE WHEN n.n_relevant > 0 THEN coalesce({ap}, 0.0) / n.n_relevant END AS "AP@{k}"',
            f'CASE WHEN {hits} > 0 THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END AS "Success@{k}"',
            f'coalesce(a.judged_{k} / nullif(a.listed_{k}, 0), 0.0) AS "Judged@{k}"',
            f'{hits} = 0 AS "zero_hit@{k}"',
        ]
    return ",\n".join(parts)


def per_case_sql(ctx: EvalContext) -> tuple[str, list[object]]:
    """The per-case query over a registered ``_lists`` (case_id, unit_id, pos) table."""
    pop, params = ctx.population_sql()
    qrels, qrels_params = ctx.qrels_sql()
    sql = f"""
    WITH pop AS MATERIALIZED ({pop}),
    q AS MATERIALIZED (
        SELECT q.case_id, q.unit_id, {is_relevant("q.grade", ctx.threshold)} AS rel, {ctx.gain_sql("q.grade")} AS g
        FROM {qrels} q SEMI JOIN pop USING (case_id)
    ),
    n AS (
        SELECT pop.case_id, count(q.unit_id) FILTER (WHERE q.rel) AS n_relevant,
               list(q.g ORDER BY q.g DESC) FILTER (WHERE q.g > 0) AS gains
        FROM pop LEFT JOIN q USING (case_id) GROUP BY pop.case_id
    ),
    hit AS (
        SELECT l.case_id, l.pos, q.case_id IS NOT NULL AS judged, coalesce(q.rel, FALSE) AS rel,
               coalesce(q.g, 0.0) AS g
        FROM _lists l LEFT JOIN q USING (case_id, unit_id)
    ),
    a AS (
        SELECT case_id, min(pos) FILTER (WHERE rel) AS first_rel, list(pos ORDER BY pos) FILTER (WHERE rel) AS rel_pos,
               {_per_k_aggregates(ctx.ks)}
        FROM hit GROUP BY case_id
    )
    SELECT n.case_id, CAST(n.n_relevant AS BIGINT) AS n_relevant, {_per_k_columns(ctx.ks)}
    FROM n LEFT JOIN a USING (case_id)
    ORDER BY n.case_id
    """
    return sql, params + qrels_params


def _counts(con: duckdb.DuckDBPyConnection, ctx: EvalContext) -> pa.Table:
    """De-duplicated result counts over the whole stage (a full pass over the run's rows, so kept apart)."""
    pop, params = ctx.population_sql()
    cut, cut_params = ctx.case_filter()
    qrels, qrels_params = ctx.qrels_sql()
    return arrow(
        con,
        f"""WITH pop AS ({pop}),
            r AS (SELECT DISTINCT case_id, unit_id FROM results WHERE run_id = ? AND stage = ?{cut}),
            q AS (SELECT q.case_id, q.unit_id, {is_relevant("q.grade", ctx.threshold)} AS rel
                  FROM {qrels} q SEMI JOIN pop USING (case_id))
            SELECT r.case_id, CAST(count(q.unit_id) AS BIGINT) AS n_judged_retrieved,
                   CAST(count(*) FILTER (WHERE q.rel) AS BIGINT) AS n_relevant_retrieved,
                   CAST(count(*) AS BIGINT) AS n_retrieved
            FROM r SEMI JOIN pop USING (case_id) LEFT JOIN q USING (case_id, unit_id) GROUP BY r.case_id""",
        params + [ctx.run_id, ctx.stage, *cut_params, *qrels_params],
    )


def per_case_context(con: duckdb.DuckDBPyConnection, ctx: EvalContext, *, counts: bool = True) -> pa.Table:
    lists = cut_lists(con, ctx.run_id, ctx.stage, ctx.depth, ctx.case_filter())
    sql, params = per_case_sql(ctx)
    table = arrow(con, sql, params, _lists=lists)
    if not counts:
        return table.cast(per_case_schema(ctx.ks, counts=False))
    joined = arrow(
        con,
        """SELECT m.case_id, m.n_relevant,
                  coalesce(c.n_judged_retrieved, 0) AS n_judged_retrieved,
                  coalesce(c.n_relevant_retrieved, 0) AS n_relevant_retrieved,
                  coalesce(c.n_retrieved, 0) AS n_retrieved, m.* EXCLUDE (case_id, n_relevant)
           FROM _m m LEFT JOIN _c c USING (case_id) ORDER BY m.case_id""",
        _m=table,
        _c=_counts(con, ctx),
    )
    return joined.cast(per_case_schema(ctx.ks))


def per_case(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    ks: Sequence[int] | str = DEFAULT_KS,
    *,
    stage: str = "final",
    gain: str = "exponential",
    split: str | None = None,
    counts: bool = True,
    cases: Sequence[str] | None = None,
) -> pa.Table:
    """One row per answerable case (cases without results score 0): counts and ``P@k`` ... ``Judged@k``;
    columns :func:`per_case_schema`.

    ``counts=False`` skips n_retrieved/n_judged_retrieved, which need a pass over every result row of the run.
    ``cases`` keeps those cases only, reading only their rows (the TUI's case screen: milliseconds at any size).
    """
    ctx = resolve(con, run_id, ks, stage=stage, gain=gain, split=split, cases=cases)
    return per_case_context(con, ctx, counts=counts)
