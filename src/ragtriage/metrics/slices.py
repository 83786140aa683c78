"""Metrics by slice: case fields (query_type, tags, ...) and evidence fields of the labelled relevant units.

A case belongs to every slice its field puts it in: a case tagged ``[a, b]`` counts in both, a case whose relevant
units are a policy and a table counts under both doc_types. Cases with no value (or no relevant label, for the
evidence fields) form their own ``(none)`` slice, so the slice counts always add up to at least the population.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pyarrow as pa

from ragtriage.arrays import non_null_values, row_numbers, table_of_rows
from ragtriage.contract.dimensions import CASE_DIMENSIONS, EVIDENCE_DIMENSIONS, NO_VALUE, SLICE_DIMENSIONS
from ragtriage.contract.relevance import CURRENT_THRESHOLD, relevant_labels
from ragtriage.metrics.context import DEFAULT_KS, EvalContext, MetricsError, arrow, context_of
from ragtriage.metrics.distribution import describe
from ragtriage.metrics.gain import DEFAULT_GAIN
from ragtriage.metrics.measures import fixed_label
from ragtriage.metrics.per_case import MEASURES, given_per_case, per_case_context

CASE_FIELDS = CASE_DIMENSIONS  # the one list, ragtriage.contract.dimensions
EVIDENCE_FIELDS = EVIDENCE_DIMENSIONS
NONE = NO_VALUE

# Age of the newest update of a relevant unit, against the newest update in the corpus snapshot (a fixed point
# of the data, so the buckets do not drift with the wall clock).
_AGE = """CASE WHEN d.updated_at IS NULL THEN NULL
               WHEN date_diff('day', d.updated_at, ref.t) < 30 THEN '<30d'
               WHEN date_diff('day', d.updated_at, ref.t) < 180 THEN '30-180d'
               WHEN date_diff('day', d.updated_at, ref.t) < 365 THEN '180-365d'
               ELSE '>=365d' END"""


def membership_sql(by: str, threshold: int | str = CURRENT_THRESHOLD) -> str:
    """(case_id, v) pairs for one slice dimension, over all cases of the current dataset: the one membership
    rule of metrics, compare, the gate and the agreement report (v NULL: the case has no value)."""
    if by == "tags":
        return "SELECT case_id, unnest(CASE WHEN len(tags) > 0 THEN tags ELSE [NULL] END) AS v FROM cases"
    if by in CASE_FIELDS:
        return f"SELECT case_id, CAST({by} AS VARCHAR) AS v FROM cases"
    rel = relevant_labels(threshold)
    if by == "evidence_count":
        return f"""SELECT c.case_id,
                          CASE WHEN n IS NULL THEN '0' WHEN n >= 3 THEN '3+' ELSE CAST(n AS VARCHAR) END AS v
                   FROM cases c
                   LEFT JOIN (SELECT case_id, count(*) AS n FROM ({rel}) GROUP BY case_id) USING (case_id)"""
    expr = _AGE if by == "update_age" else f"d.{by}"
    return f"""WITH ref AS (SELECT max(updated_at) AS t FROM documents)
               SELECT DISTINCT c.case_id, {expr} AS v
               FROM cases c LEFT JOIN ({rel}) r USING (case_id) LEFT JOIN documents d USING (unit_id), ref"""


def slices(
    con: duckdb.DuckDBPyConnection,
    run: str | EvalContext,
    by: str = "query_type",
    ks: Sequence[int] = DEFAULT_KS,
    *,
    measure: str = "nDCG",
    k: int | None = None,
    stage: str = "final",
    gain: str = DEFAULT_GAIN,
    split: str | None = None,
    seed: int = 0,
    per_case: pa.Table | None = None,
) -> pa.Table:
    """One row per slice value, worst mean ``measure@k`` first (k defaults to the deepest cutoff).

    Columns: dimension, slice_value, n, n_without_relevant, measure, threshold, gain, mean, median, p10, min,
    ci_low, ci_high (of ``measure@k``), zero_hit_rate (at k), then the mean of every measure@k.

    ``per_case`` is :func:`ragtriage.metrics.per_case.per_case` of the same run, stage, gain and split at (at least)
    these cutoffs, when the caller has it already (the TUI slices by one dimension after another): computing it is
    most of the cost.
    """
    if by not in SLICE_DIMENSIONS:
        raise MetricsError(f"slice by {by!r}: use one of {', '.join(SLICE_DIMENSIONS)}")
    ctx = context_of(con, run, ks, stage=stage, gain=gain, split=split)
    k = ctx.depth if k is None else k
    if k not in ctx.ks or measure not in MEASURES:
        raise MetricsError(f"{measure}@{k}: pick a measure of {', '.join(MEASURES)} and k of {list(ctx.ks)}")
    if per_case is None:
        table = per_case_context(con, ctx, counts=False)
    else:
        table = given_per_case(per_case, ctx.ks, extra=("case_id", "n_relevant", f"zero_hit@{k}"))
    table = table.append_column("_row", row_numbers(table.num_rows))
    means = ", ".join(f'avg(p."{m}@{c}") AS "{m}@{c}"' for m in MEASURES for c in ctx.ks)
    grouped = arrow(
        con,
        f"""WITH mem AS ({membership_sql(by, ctx.threshold)})
            SELECT coalesce(m.v, '{NONE}') AS slice_value, list(p._row) AS rows,
                   count(*) AS n, count(*) FILTER (WHERE p.n_relevant = 0) AS n_without_relevant,
                   avg(CAST(p."zero_hit@{k}" AS DOUBLE)) AS zero_hit_rate, {means}
            FROM _p p JOIN (SELECT DISTINCT case_id, v FROM mem) m USING (case_id)
            GROUP BY ALL""",
        _p=table,
    )
    return _with_distributions(table, grouped, by, fixed_label(measure, k, ctx.gain), ctx.threshold, ctx.gain, seed)


def _with_distributions(
    per_case: pa.Table, grouped: pa.Table, by: str, name: str, threshold: int, gain: str, seed: int
) -> pa.Table:
    values = per_case.column(name)
    rows = []
    for i in range(grouped.num_rows):
        g = grouped.slice(i, 1).drop_columns(["rows"]).to_pylist()[0]
        members = grouped.column("rows")[i].values  # row numbers as an Arrow array: no numpy round trip
        d = describe(non_null_values(values.take(members), np.float64), seed=seed)
        head = {
            "dimension": by,
            "slice_value": g.pop("slice_value"),
            "n": g.pop("n"),
            "n_without_relevant": g.pop("n_without_relevant"),
            "measure": name,
            "threshold": threshold,
            "gain": gain,
            "mean": d.mean,
            "median": d.median,
            "p10": d.p10,
            "min": d.min,
            "ci_low": d.ci_low,
            "ci_high": d.ci_high,
        }
        rows.append({**head, **g})
    rows.sort(key=lambda r: (r["mean"] is not None, r["mean"] or 0.0, str(r["slice_value"])))
    strings, counts = ("dimension", "slice_value", "measure", "gain"), ("n", "n_without_relevant", "threshold")
    names = list(rows[0]) if rows else [*strings, *counts]
    schema = pa.schema(
        [(c, pa.string() if c in strings else pa.int64() if c in counts else pa.float64()) for c in names]
    )
    return table_of_rows(rows, schema)
