"""The one paired comparison every command reads: the paired table (per-case values of runs x measures over the
same cases) and the statistics of a candidate's column against the baseline's (mean difference, interval,
p-value, wins/ties/losses), stated in one sentence.

``compare --run`` (``gate.compare``), the gate's regression rule, ``compare --runs`` and ``report``
(``experiments.runs_table``) and the TUI's Compare take their figures from here, so for the same pair, measure
and cases they print the same mean difference, interval and p-value, digit for digit.

A case is paired when it has a relevant unit and every run has a defined value for it; differences are
``candidate - baseline``; the statistics are ``significance.paired_tests`` (or its ``paired_pvalues``).
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.arrays import non_null_values
from ragtriage.gate import sources
from ragtriage.gate.significance import INTERVAL_RESAMPLES, TIE, PairStats, paired_tests
from ragtriage.metrics.distribution import CONFIDENCE

__all__ = ["INTERVAL_RESAMPLES", "TIE", "PairStats", "method", "pair_stats", "paired_matrix", "worst_first"]

#: decimals of a difference that order the cases by loss (then by case id). A per-case value summed by DuckDB's
#: parallel aggregation may differ in its last bits between two runs on the same store, so two cases whose
#: differences are equal to these decimals are equal for the order: the same output comes every time.
ORDER_DECIMALS = 9
RANDOMIZATION = "paired randomization (sign-flip) test"
#: the seed and the resamples of the test when a command is given none (``compare``, ``report``, the TUI)
SEED, TEST_RESAMPLES = 0, 10_000

FloatArray = npt.NDArray[np.float64]
#: the statistics of each candidate column against its baseline column (``significance.paired_tests``)
pair_stats = paired_tests


def method(*, n_resamples: int, seed: int, test: str = RANDOMIZATION) -> str:
    """The sentence that states how every paired figure was made: interval, test, resamples and seed."""
    drawn = f", {n_resamples} resamples unless exact" if test == RANDOMIZATION else ""
    return (
        f"Δ = candidate - baseline on paired cases; {int(CONFIDENCE * 100)}% percentile bootstrap interval of the "
        f"mean Δ ({INTERVAL_RESAMPLES} resamples); two-sided {test}{drawn}; seed {seed}"
    )


def paired_matrix(
    con: duckdb.DuckDBPyConnection, runs: Sequence[str], measures: Sequence[str], split: str | None
) -> tuple[pa.Array, FloatArray]:
    """(case_ids, values n x runs x measures) over the paired cases of ``split``, sorted by case.

    Values come from ``sources.measure_values`` (the one engine, through the fixed table where it holds the
    measure): the cases of the per-run figures, which the request's population chose (``EvalContext.population_sql``),
    so the pairs are exactly the cases each run's mean is taken over."""
    cur = duckdb.connect()
    for i, run in enumerate(runs):
        wide = sources.measure_values(con, run, measures, split)
        cur.register(f"r{i}", wide.rename_columns(["case_id", *(f"c{i}_{j}" for j in range(len(measures)))]))
    cols = [f"c{i}_{j}" for i in range(len(runs)) for j in range(len(measures))]
    joins = " ".join(f"JOIN r{i} USING (case_id)" for i in range(1, len(runs)))
    defined = " AND ".join(f"{c} IS NOT NULL" for c in cols)
    table = cur.sql(
        f"""SELECT case_id, {", ".join(f"CAST({c} AS DOUBLE) AS {c}" for c in cols)}
            FROM r0 {joins} WHERE {defined} ORDER BY case_id"""
    ).to_arrow_table()
    cur.close()
    values = np.empty((table.num_rows, len(runs), len(measures)))
    for i in range(len(runs)):
        for j in range(len(measures)):
            values[:, i, j] = non_null_values(table.column(f"c{i}_{j}"), np.float64)
    return table.column("case_id").combine_chunks(), values


def worst_first(pairs: pa.Table) -> pa.Table:
    """The rows of ``pairs`` (with ``diff`` and ``case_id``) that lose by more than ``TIE``, the largest loss
    first, equal losses (to ``ORDER_DECIMALS``, rounded half away from zero as DuckDB's ``round``) by case id."""
    losses = pairs.filter(pc.less(pairs.column("diff"), -TIE))
    key = pc.round(losses.column("diff"), ORDER_DECIMALS, round_mode="half_towards_infinity")
    ordered = losses.append_column("_order", key).sort_by([("_order", "ascending"), ("case_id", "ascending")])
    return ordered.drop_columns(["_order"])
