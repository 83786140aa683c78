"""Where a comparison moved: the measure per slice for every run with its difference from the baseline (worst
slice first), and per defect category the failures each run adds and fixes against the baseline.

Slices are the gate's slice columns (``ragtriage.gate.sources.case_slices``: a case belongs to every value its
relevant evidence carries), over the same paired cases as the table. Categories come from the classifier's public
``failures`` (each run classified at its own k); a case that fails in both runs under different categories is
listed as moved.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ragtriage.arrays import non_null_values, table_of
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
    cur.register("ids", pa.Table.from_arrays([rc.case_ids], names=["case_id"]))
    cur.register("mem", memberships)
    joined = cur.sql(
        """WITH numbered AS (SELECT case_id, row_number() OVER (ORDER BY case_id) - 1 AS i FROM ids)
           SELECT DISTINCT i, slice FROM numbered JOIN mem USING (case_id) ORDER BY slice, i"""
    ).to_arrow_table()
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
    parts: list[dict[str, npt.NDArray[Any]]] = []
    for j, measure in enumerate(rc.measures):
        worst = deltas[:, 1:, j].min(axis=1) if r > 1 else np.zeros(len(names))
        order = np.lexsort((names, worst))  # worst difference first, then by name
        parts.append(
            {
                "measure": np.full(len(order) * r, measure, dtype=object),
                "slice": np.repeat(names[order].astype(object), r),
                "n": np.repeat(counts[order], r).astype(np.float64),
                "run_id": np.tile(np.array(rc.runs, dtype=object), len(order)),
                "mean": means[order, :, j].reshape(-1),
                "delta": deltas[order, :, j].reshape(-1),
            }
        )
    return table_of({k: np.concatenate([p[k] for p in parts]) for k in SLICE_SCHEMA.names}, SLICE_SCHEMA)


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
    cur = duckdb.connect()
    parts = []
    for i, run in enumerate(rc.runs):
        cur.register(f"f{i}", sources.failure_categories(con, run))
        parts.append(f"SELECT $r{i} AS run_id, case_id, category FROM f{i}")
    cur.execute(f"CREATE TEMP TABLE f AS {' UNION ALL '.join(parts)}", {f"r{i}": run for i, run in enumerate(rc.runs)})
    cur.register("cs", sources.case_slices(con, rc.dataset_version, None))
    failing = cur.sql(
        """SELECT DISTINCT f.run_id, f.case_id, f.category FROM f JOIN cs USING (case_id)
           WHERE $split IS NULL OR cs.split = $split""",
        params={"split": rc.split},
    ).to_arrow_table()
    return category_tables(failing, list(rc.runs), rc.baseline)
