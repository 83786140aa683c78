"""The one place the gate reads the layers below it (metrics, checks, classify) and the store.

Compare and the gate rules take Arrow tables from here, so an API change in another module touches this file
only. Imports of the other layers are inside the functions: the gate's pure parts stay importable and testable
on their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.contract.dimensions import NO_VALUE, SLICE_DIMENSIONS
from ragtriage.store import StoreError, current_dataset_version, run_k
from ragtriage.store.connection import run_dataset_version, run_fact

# The slice dimensions a comparison or a slice rule may group by: the one list (ragtriage.contract.dimensions).
SLICE_COLUMNS = SLICE_DIMENSIONS


def query(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None) -> pa.Table:
    """Run ``sql`` on a cursor of its own: DuckDB 2 refuses new work on a connection with an unfinished result."""
    cur = con.cursor()
    try:
        return cur.sql(sql, params=params).to_arrow_table()
    finally:
        cur.close()


def first_row(con: duckdb.DuckDBPyConnection, sql: str, params: list[object]) -> tuple[Any, ...] | None:
    cur = con.cursor()
    try:
        rows = cur.execute(sql, params).fetchall()
    finally:
        cur.close()
    return rows[0] if rows else None


def per_case(
    con: duckdb.DuckDBPyConnection, run_id: str, ks: Sequence[int], without: pa.Table | None = None
) -> pa.Table:
    """Per-case metric table of the final stage: case_id, n_relevant, ``P@k`` ... ``Judged@k``; read from the
    per-case cache (``metrics.summary_cache``) when ``ragtriage load`` (or an earlier call here) filled it for this
    store state, and kept there when this call computes it. Computed beside the cached cutoffs otherwise, so a
    figure at a cached cutoff comes from one computation whichever cutoffs a command asks. ``without``: rows of a
    :func:`leaks` table whose final-stage rows earn nothing (never cached)."""
    import pyarrow.compute as pc

    from ragtriage.metrics import summary_cache
    from ragtriage.metrics.context import DEFAULT_KS
    from ragtriage.metrics.per_case import per_case as metrics_per_case
    from ragtriage.metrics.per_case import per_case_schema

    cutoffs = tuple(sorted(set(ks)))
    if without is None:
        cached = summary_cache.per_case_kept(con, run_id, cutoffs)
        if cached is not None:
            return cached
        table = metrics_per_case(con, run_id, sorted({*DEFAULT_KS, *cutoffs}), stage="final", counts=False)
    else:
        final = without.filter(pc.equal(without.column("stage").cast(pa.string()), "final"))
        table = metrics_per_case(con, run_id, cutoffs, stage="final", counts=False, without=final)
    schema = per_case_schema(cutoffs, counts=False)
    return table.select(schema.names).cast(schema)


def side_by_side(
    fn: Callable[[duckdb.DuckDBPyConnection, str], pa.Table], con: duckdb.DuckDBPyConnection, runs: Sequence[str]
) -> list[pa.Table]:
    """``fn(cursor, run)`` of several runs computed side by side, each on a cursor of its own: a part of each
    query runs on one core (its Arrow scan, its final order), so two of them side by side take less than one after
    the other. Each thread runs in a copy of the caller's context, so the command's request
    (``metrics.context.using``: threshold, population, labels) reaches every run's figures."""
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    def one(rid: str) -> pa.Table:
        cur = con.cursor()
        try:
            return fn(cur, rid)
        finally:
            cur.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(contextvars.copy_context().run, one, rid) for rid in runs]
        return [f.result() for f in futures]


def measure_values(
    con: duckdb.DuckDBPyConnection, run_id: str, measures: Sequence[str], split: str | None = None
) -> pa.Table:
    """Per-case values of ir_measures-named ``measures`` on the final stage: case_id, then one column per measure
    named as given, in that order (NULL where a measure is undefined for a case), over the cases of ``split``.

    Measures the fixed table holds (``P@k`` ... ``Judged@k`` at the dataset's threshold and the default gain,
    ``NumRel`` as n_relevant) are read from :func:`per_case`, the table the gate and the TUI read, so every
    command compares the same figures; any other measure is asked of ``metrics.measure_eval``. Both are the one
    engine's values."""
    from ragtriage.metrics.measure_eval import evaluate_run
    from ragtriage.metrics.measures import parse_measure
    from ragtriage.metrics.per_case import fixed_column

    columns = [fixed_column(parse_measure(m)) for m in measures]
    if any(c is None for c in columns):
        table: pa.Table = evaluate_run(con, run_id, measures, split=split).wide
        return table.rename_columns(["case_id", *measures])
    ks = sorted({int(c.rsplit("@", 1)[1]) for c in columns if c and "@" in c})
    fixed = per_case(con, run_id, ks or [10])
    select = ", ".join(f'"{c}" AS "m{i}"' for i, c in enumerate(columns))
    cur = con.cursor()
    try:
        cur.register("_fixed", fixed)
        kept = cur.sql(
            f"""SELECT case_id, {select} FROM _fixed
                WHERE $split IS NULL OR case_id IN (SELECT case_id FROM cases WHERE split = $split)
                ORDER BY case_id""",
            params={"split": split},
        ).to_arrow_table()
    finally:
        cur.close()
    return kept.rename_columns(["case_id", *measures])


def leaks(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Every leaked result row of the run, in any stage (case_id, stage, rank, rule, detail, ...)."""
    from ragtriage.checks.leakage import leakage

    table: pa.Table = leakage(con, run_id)
    return table


def leak_summary(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int, Any]:
    """(distinct leaked result rows, leaking cases, ``checks.leakage.Coverage``) of the run, any stage: read from
    the run's stored classification when it is fresh (``classify.stored.leak_counts``, written by the same
    ``checks.leakage`` query at load), else computed now by that query."""
    import pyarrow.compute as pc

    from ragtriage.checks.leakage import coverage, leakage, leaked_result_rows, unchecked_cases
    from ragtriage.classify import stored

    cur = con.cursor()
    try:
        counts = stored.leak_counts(cur, run_id, run_k(cur, run_id))
    finally:
        cur.close()
    if counts is None:
        table = leakage(con, run_id)
        cases = pc.count_distinct(table.column("case_id")).as_py() if table.num_rows else 0
        counts = (leaked_result_rows(table), int(cases))
    return *counts, coverage(con, unchecked_cases(con, run_id))


def negative_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """One row per unanswerable case: case_id, expected_behavior, passed, reason."""
    from ragtriage.checks.negatives import negative_outcomes as outcomes

    table: pa.Table = outcomes(con, run_id)
    return table


def defect_categories(con: duckdb.DuckDBPyConnection, run_id: str, k: int | None = None) -> pa.Table:
    """case_id → the classifier's defect categories for the run at ``k`` (default: the run's own k), joined with
    ', '; every case with a failure or a relevant label has one (``classify.case_categories``)."""
    from ragtriage.classify.classify_run import case_categories

    return case_categories(con, run_id, k=k)


def category_costs(con: duckdb.DuckDBPyConnection, run_id: str) -> Any:
    """What each defect category costs the run at its own k (``classify.CostReport``)."""
    from ragtriage.classify.classify_run import run_costs

    return run_costs(con, run_id)


def paired_version(con: duckdb.DuckDBPyConnection, run_id: str, baseline: str) -> str:
    """The dataset version both runs were loaded against; a mismatch is an input error, not a comparison."""
    cand, base = (run_dataset_version(con, rid) for rid in (run_id, baseline))
    if cand != base:
        raise StoreError(
            f"run {run_id!r} was loaded against dataset version {cand[:12]} but baseline {baseline!r} against "
            f"{base[:12]}; reload one of them against the same dataset before comparing"
        )
    # Metrics read the current labels (a label import or adjudication moves the pointer), so the verdict names
    # the version it was computed on, not the one the runs were loaded against.
    return current_dataset_version(con)


def case_slices(con: duckdb.DuckDBPyConnection, dataset_version: str, by: str | None) -> pa.Table:
    """case_id, split, critical, answerable and ``slice``: one row per case and slice it belongs to, by the one
    membership rule (``metrics.slices.membership_sql``; '(none)' for a case without a value or evidence).

    ``dataset_version`` is the current one (:func:`paired_version`), whose cases and labels the views show.
    """
    from ragtriage.metrics.slices import membership_sql

    if by is not None and by not in SLICE_DIMENSIONS:
        raise StoreError(f"cannot slice by {by!r}; choose one of: {', '.join(SLICE_DIMENSIONS)}")
    if dataset_version != current_dataset_version(con):
        raise StoreError(f"dataset version {dataset_version[:12]} is not the current one; slices read the current")
    members = "SELECT case_id, 'all' AS v FROM cases" if by is None else membership_sql(by)
    sql = f"""SELECT c.case_id, c.split, c.critical, c.answerable, coalesce(m.v, '{NO_VALUE}') AS slice
              FROM cases c JOIN (SELECT DISTINCT case_id, v FROM ({members})) m USING (case_id)
              ORDER BY case_id, slice"""
    return query(con, sql)


_CONCURRENCY = run_fact(
    "coalesce(TRY_CAST(json_extract_string(manifest, '$.concurrency') AS INTEGER), "
    "TRY_CAST(json_extract_string(manifest, '$.system.concurrency') AS INTEGER))",
    "$1",
)


def latency(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, float | int | None]:
    """Serving figures from ``events``: cases with events, p95 latency (linear interpolation), timeouts, and
    the concurrency they were measured at, as run.json states it (``ragtriage record`` writes ``concurrency``; a
    hand-written run.json may keep it under ``system``), or None when it does not say."""
    row = first_row(
        con,
        f"""SELECT count(DISTINCT case_id), quantile_cont(latency_ms, 0.95), count(*) FILTER (WHERE timed_out),
                  count(latency_ms),
                  {_CONCURRENCY}
           FROM events WHERE run_id = $1""",
        [run_id],
    )
    assert row is not None
    return {
        "cases": int(row[0]),
        "p95_ms": None if row[1] is None else float(row[1]),
        "timeouts": int(row[2]),
        "with_latency": int(row[3]),
        "concurrency": None if row[4] is None else int(row[4]),
    }


def timed_out_cases(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    rows = query(
        con, "SELECT DISTINCT case_id FROM events WHERE run_id = $r AND timed_out ORDER BY case_id", {"r": run_id}
    )
    return [str(c) for c in rows.column("case_id").to_pylist()]


def failure_categories(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Distinct (case_id, category) of the run's classified failures, from the classifier's public ``failures``."""
    from ragtriage.classify.classify_run import failure_source
    from ragtriage.classify.stored import judging_k

    cutoff = judging_k(con, run_id, None)
    cur = con.cursor()
    try:
        # read in SQL: a large run's failure rows, with their evidence, are never fetched whole
        src = failure_source(cur, run_id, cutoff)
        sql = f"SELECT DISTINCT case_id, category FROM {src} ORDER BY case_id, category"
        return cur.sql(sql, params={"run_id": run_id, "k": cutoff}).to_arrow_table()
    finally:
        cur.close()
