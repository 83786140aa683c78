"""A defect category for every case a caller names as failing (the gate's failing cases), at a given k.

The gate fails cases by its own measures (a regression in nDCG@10, a slice under its minimum), which are not the
classifier's failure kinds: a case can lose nDCG while meeting the recall bar. So that no failing case goes
without an owner, a case's category is, in this order:

1. the categories of its classified failures at k (``failures``);
2. else the categories of its relevant units missing from the top k, each by its own defect
   (``rules.UNIT_CATEGORY``: the same reading the costs use);
3. else ``ranking``: every relevant unit is in the top k, so what it lost is their order.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.classify.classify_run import failure_source, judging_k
from ragtriage.classify.locations import PLAIN_RUNS_TABLE, location_ctes, numbered_positions
from ragtriage.classify.rules import UNIT_CATEGORY

# One statement over the run's failure rows and its unit locations, so neither is fetched whole: a large run's
# failure rows (with their evidence) and every relevant unit's location would otherwise be held in memory beside
# the work DuckDB does under the store's cap. The lists that need numbering are numbered before it, a chunk of cases
# at a time (``locations.numbered_positions``): windows over every row of a run loaded from chunks outgrow the cap.
_SQL = """
WITH {ctes},
failed AS (
    SELECT case_id, string_agg(DISTINCT category, ', ' ORDER BY category) AS category FROM _cc_failure_rows
    GROUP BY case_id
),
labelled AS (
    SELECT u.case_id,
           string_agg(DISTINCT {category}, ', ' ORDER BY {category})
               FILTER (WHERE u.location <> 'final-top-k') AS category
    FROM locations u GROUP BY u.case_id
),
named AS (SELECT case_id FROM failed UNION SELECT case_id FROM labelled)
SELECT c.case_id, coalesce(f.category, m.category, 'ranking') AS category,
       CASE WHEN f.category IS NOT NULL THEN 'classified failure'
            WHEN m.category IS NOT NULL THEN 'relevant unit missing from the top k'
            ELSE 'order within the top k' END AS basis
FROM named c LEFT JOIN failed f USING (case_id) LEFT JOIN labelled m USING (case_id)
ORDER BY c.case_id
"""


def case_categories(con: duckdb.DuckDBPyConnection, run_id: str, *, k: int | None = None) -> pa.Table:
    """case_id, category (', '-joined when several) and basis for every case with a failure or a relevant label,
    judged at :func:`judging_k`. A case absent from the result has neither (a negative case that behaved, or an
    unlabelled one): only a rule outside the classifier (latency) can fail it."""
    cutoff = judging_k(con, run_id, k)
    cur = con.cursor()  # the numbered positions' temp tables go with it
    try:
        # the run's failure rows: a relation of the store's, or rows classified now (failure_source)
        failures = failure_source(cur, run_id, cutoff)
        ctes = location_ctes(plain_runs=PLAIN_RUNS_TABLE, numbered=numbered_positions(cur, run_id, cutoff))
        sql = _SQL.format(ctes=ctes, category=UNIT_CATEGORY).replace("_cc_failure_rows", failures, 1)
        return cur.sql(sql, params={"run_id": run_id, "k": cutoff}).to_arrow_table()
    finally:
        cur.close()
