"""The fixed per-case table of one run and stage (``P@k`` ... ``Judged@k`` at every k): the measures of the one
engine (``metrics.engine``, which holds their definitions; docs/metrics.md) in the columns the CLI, the TUI,
compare, the gate and the notes export read. nDCG@k is the linear gain unless the context asks the exponential one.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.contract.relevance import is_relevant
from ragtriage.metrics.context import DEFAULT_KS, EvalContext, MetricsError, arrow, resolve
from ragtriage.metrics.engine import evaluate
from ragtriage.metrics.gain import DEFAULT_GAIN
from ragtriage.metrics.measures import FIXED, Measure
from ragtriage.metrics.ranking import cut_lists_table

MEASURES = FIXED
#: ``n_judged_retrieved`` keeps Judged@k's (ir_measures') word and, like it, counts labelled units
#: (``contract.relevance.labelled_units``: any label, a negative grade included), not trec_eval's judged ones
COUNT_COLUMNS = ("n_judged_retrieved", "n_relevant_retrieved", "n_retrieved")


def per_case_schema(ks: Sequence[int], *, counts: bool = True) -> pa.Schema:
    """What :func:`per_case` returns for cutoffs ``ks``: the seam the CLI, the TUI, compare and the notes export
    read; ``zero_hit@k`` is a boolean."""
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


def fixed_column(m: Measure) -> str | None:
    """The fixed table's column holding measure ``m`` as parsed (parameters left to the dataset and the default
    gain), or None when the table has no such column."""
    if m.name == "NumRel" and m.rel is None:
        return "n_relevant"
    if m.name in MEASURES and m.cutoff is not None and m.rel is None and m.dcg is None:
        return f"{m.name}@{m.cutoff}"
    return None


def _counts(con: duckdb.DuckDBPyConnection, ctx: EvalContext) -> pa.Table:
    """De-duplicated result counts over the whole stage (a full pass over the run's rows, so kept apart); ``q``
    holds every labelled unit, so ``count(q.unit_id)`` is the labelled count (:data:`COUNT_COLUMNS`)."""
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


def per_case_context(
    con: duckdb.DuckDBPyConnection, ctx: EvalContext, *, counts: bool = True, without: pa.Table | None = None
) -> pa.Table:
    """:func:`per_case` of a resolved context: case_id, n_relevant, the counts unless ``counts=False``, and the
    fixed measures at ``ctx.ks`` with ``zero_hit@k``, from the one engine; the ``without`` rows (case_id,
    unit_id) taken out of the cut lists."""
    fixed = [Measure(m, cutoff=k) for k in ctx.ks for m in MEASURES]  # in the table's column order
    measures = [m.resolve(ctx.threshold, ctx.gain) for m in [Measure("NumRel"), *fixed]]
    cur = con.cursor()  # the cut lists' temp tables go with it
    try:
        lists = cut_lists_table(cur, ctx.run_id, ctx.stage, ctx.depth, ctx.case_filter())
        if without is not None and without.num_rows:
            cur.register("_without", without.select(["case_id", "unit_id"]))
            cur.execute(f"DELETE FROM {lists} WHERE (case_id, unit_id) IN (SELECT case_id, unit_id FROM _without)")
            cur.unregister("_without")
        table = evaluate(cur, ctx, measures, trec=False, lists=lists)
    finally:
        cur.close()
    values = {f"{m.name}@{m.cutoff}": table[f"m{i}"] for i, m in enumerate(measures)}  # columns keep plain names
    columns = {"case_id": table["case_id"], "n_relevant": table["m0"]}
    for k in ctx.ks:
        columns.update({f"{m}@{k}": values[f"{m}@{k}"] for m in MEASURES})
        columns[f"zero_hit@{k}"] = pc.equal(values[f"Success@{k}"], 0.0)
    table = pa.table(columns).cast(per_case_schema(ctx.ks, counts=False))
    if not counts:
        return table
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
    ks: Sequence[int] = DEFAULT_KS,
    *,
    stage: str = "final",
    gain: str = DEFAULT_GAIN,
    split: str | None = None,
    counts: bool = True,
    cases: Sequence[str] | None = None,
    without: pa.Table | None = None,
) -> pa.Table:
    """One row per answerable case (cases without results score 0): counts and ``P@k`` ... ``Judged@k``;
    columns :func:`per_case_schema`.

    ``counts=False`` skips n_retrieved/n_judged_retrieved, which need a pass over every result row of the run.
    ``cases`` keeps those cases only, reading only their rows (the TUI's case screen: milliseconds at any size).
    ``without`` (case_id, unit_id rows: a leaking baseline's leaked results) earn nothing where they stand in the
    lists, as if a filter had blanked them; the other results keep their positions (what a filtered retriever
    would have put there instead is unknown).
    """
    ctx = resolve(con, run_id, ks, stage=stage, gain=gain, split=split, cases=cases)
    return per_case_context(con, ctx, counts=counts, without=without)
