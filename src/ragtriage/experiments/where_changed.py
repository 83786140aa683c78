"""Where a comparison moved: the measure per slice for every run with its difference from the baseline (worst
slice first), and per defect category the failures each run adds and fixes against the baseline.

Slices are the gate's slice columns (``ragtriage.gate.sources.case_slices``: a case belongs to every value its
relevant evidence carries), over the same paired cases as the table. Categories come from the classifier's public
``failures`` (each run classified at its own k); a case that fails in both runs under different categories is
listed as moved.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from ragtriage.arrays import non_null_values
from ragtriage.experiments.runs_table import RunsComparison
from ragtriage.gate import sources

SLICE_SCHEMA = pa.schema(
    [
        ("measure", pa.string()),
        ("slice", pa.string()),
        ("n", pa.int64()),
        ("run_id", pa.string()),
        ("mean", pa.float64()),
        ("delta", pa.float64()),
    ]
)


def slice_table(rc: RunsComparison, memberships: pa.Table) -> pa.Table:
    """Long table (measure, slice, n, run_id, mean, delta) from case→slice ``memberships`` (case_id, slice).

    Per measure, slices are ordered by their worst difference over the candidate runs (most negative first);
    within a slice the baseline comes first, then the runs in table order.
    """
    cur = duckdb.connect()
    cur.register("ids", pa.table({"case_id": rc.case_ids, "i": pa.array(np.arange(rc.n_cases))}))
    cur.register("mem", memberships)
    joined = cur.sql("SELECT DISTINCT i, slice FROM ids JOIN mem USING (case_id) ORDER BY slice, i").to_arrow_table()
    if joined.num_rows == 0:
        return SLICE_SCHEMA.empty_table()
    rows = non_null_values(joined.column("i"), np.uint64).astype(np.int64)
    names, inverse = np.unique(
        np.asarray(joined.column("slice").to_pylist(), dtype=object).astype(str), return_inverse=True
    )
    n, r, m = rc.values.shape
    sums = np.zeros((len(names), r * m))
    np.add.at(sums, inverse, rc.values.reshape(n, r * m)[rows])
    counts = np.bincount(inverse, minlength=len(names))
    means = (sums / counts[:, None]).reshape(len(names), r, m)
    deltas = means - means[:, :1, :]
    out: dict[str, list[object]] = {f.name: [] for f in SLICE_SCHEMA}
    for j, measure in enumerate(rc.measures):
        worst = deltas[:, 1:, j].min(axis=1) if r > 1 else np.zeros(len(names))
        for s in sorted(range(len(names)), key=lambda s: (worst[s], names[s])):
            for i, run in enumerate(rc.runs):
                for key, value in (
                    ("measure", measure),
                    ("slice", str(names[s])),
                    ("n", int(counts[s])),
                    ("run_id", run),
                    ("mean", float(means[s, i, j])),
                    ("delta", float(deltas[s, i, j])),
                ):
                    out[key].append(value)
    return pa.table(out, schema=SLICE_SCHEMA)


def slice_deltas(con: duckdb.DuckDBPyConnection, rc: RunsComparison, by: str) -> pa.Table:
    """``slice_table`` over the slice column ``by`` (a case or evidence column of ``sources.SLICE_COLUMNS``)."""
    return slice_table(rc, sources.case_slices(con, rc.dataset_version, by).select(["case_id", "slice"]))


def category_tables(failing: pa.Table, runs: list[str], baseline: str) -> tuple[pa.Table, pa.Table]:
    """(counts, moved) from distinct failing (run_id, case_id, category) rows.

    counts: run_id, category, baseline_failures, run_failures, added (failing in this category in the run, not
    in the baseline), fixed (the reverse). moved: run_id, case_id, baseline_categories, run_categories for a
    case failing in both runs under different categories.
    """
    cur = duckdb.connect()
    cur.register("f", failing)
    params = {"runs": [r for r in runs if r != baseline], "base": baseline}
    counts = cur.sql(
        """WITH base AS (SELECT case_id, category FROM f WHERE run_id = $base),
           cand AS (SELECT run_id, case_id, category FROM f WHERE run_id <> $base),
           b2 AS (SELECT r.run_id, base.case_id, base.category FROM (SELECT unnest($runs) AS run_id) r, base),
           j AS (SELECT coalesce(c.run_id, b2.run_id) AS run_id, coalesce(c.category, b2.category) AS category,
                        c.case_id AS c_case, b2.case_id AS b_case
                 FROM cand c FULL OUTER JOIN b2
                   ON c.run_id = b2.run_id AND c.case_id = b2.case_id AND c.category = b2.category)
           SELECT run_id, category, count(b_case) AS baseline_failures, count(c_case) AS run_failures,
                  count(*) FILTER (WHERE b_case IS NULL) AS added, count(*) FILTER (WHERE c_case IS NULL) AS fixed
           FROM j GROUP BY run_id, category ORDER BY list_position($runs, run_id), category""",
        params=params,
    ).to_arrow_table()
    moved = cur.sql(
        """WITH cats AS (SELECT run_id, case_id, list(category ORDER BY category) AS cats
                        FROM f GROUP BY run_id, case_id)
           SELECT c.run_id, c.case_id, array_to_string(b.cats, ', ') AS baseline_categories,
                  array_to_string(c.cats, ', ') AS run_categories
           FROM cats c JOIN cats b ON b.run_id = $base AND b.case_id = c.case_id
           WHERE list_contains($runs, c.run_id) AND c.cats <> b.cats
           ORDER BY list_position($runs, c.run_id), c.case_id""",
        params=params,
    ).to_arrow_table()
    return counts, moved


def category_changes(con: duckdb.DuckDBPyConnection, rc: RunsComparison) -> tuple[pa.Table, pa.Table]:
    """``category_tables`` for the runs of ``rc``, over the cases of its split (every failing case, answerable or
    not: a negative case that stops abstaining is a failure the run adds)."""
    tables = []
    for run in rc.runs:
        t = sources.case_categories(con, run)
        tables.append(t.append_column("run_id", pa.repeat(pa.scalar(run), t.num_rows)))
    cur = duckdb.connect()
    cur.register("f", pa.concat_tables(tables))
    cur.register("cs", sources.case_slices(con, rc.dataset_version, None))
    failing = cur.sql(
        """SELECT DISTINCT f.run_id, f.case_id, f.category FROM f JOIN cs USING (case_id)
           WHERE $split IS NULL OR cs.split = $split""",
        params={"split": rc.split},
    ).to_arrow_table()
    return category_tables(failing, list(rc.runs), rc.baseline)
