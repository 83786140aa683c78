"""Classify one run's failures, store them with what each category costs, and read them back.

Stored classifications (``stored.py``) are the automatic verdicts only. A person's category, status and note live
in the notes store (``ragtriage.notes``), keyed by run and case, so re-classifying or re-loading a run replaces
these rows without touching anything a person wrote.

One k: every reader (``failures``, the gate, the TUI, ``export-notes``) judges a run at :func:`judging_k`, the
run's own k unless the caller names another. The readers: the failure rows (:func:`failures`), one row per failing
case (:func:`failure_list`), counts with the category costs (:func:`failure_summary`: ``failures --summary`` and the
TUI Overview) and a category for any case a caller fails (:func:`case_categories`: the gate's). Each reads fresh
stored rows in SQL, without fetching the evidence it does not show.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import TypeVar

import duckdb
import pyarrow as pa

from ragtriage.checks import leakage, negative_outcomes, version_pairs
from ragtriage.classify import stored
from ragtriage.classify.cost import CostReport, CostTally
from ragtriage.classify.decide import FAILURE_ORDER, decide_sql
from ragtriage.classify.facts import LEAKS, NEGATIVES, STALE_FIRST, VERSION_PAIRS, fact_chunks
from ragtriage.classify.locations import PLAIN_RUNS_TABLE, location_ctes, numbered_positions
from ragtriage.classify.rules import UNIT_CATEGORY
from ragtriage.classify.stored import done_chunk_of, judging_k, progress
from ragtriage.store import run_k
from ragtriage.store.connection import CURRENT_VERSION

#: What :func:`failures` returns, column for column: the seam the CLI, the TUI and the notes export read.
#: ``evidence`` is JSON text; ``patterns`` and ``experiments`` are lists of names; ``k`` is the cutoff judged at.
FAILURE_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("case_id", pa.string()),
        ("query", pa.string()),
        ("split", pa.string()),
        ("query_type", pa.string()),
        ("failure", pa.string()),
        ("category", pa.string()),
        ("rule", pa.string()),
        ("confidence", pa.float64()),
        ("evidence", pa.string()),
        ("patterns", pa.list_(pa.string())),
        ("experiments", pa.list_(pa.string())),
        ("dataset_version", pa.string()),
        ("k", pa.int32()),
    ]
)


def _cutoffs(con: duckdb.DuckDBPyConnection, run_id: str, ks: int | Sequence[int] | None) -> list[int]:
    default = run_k(con, run_id)  # also checks that the run exists
    if ks is None:
        return [default]
    cutoffs = [int(ks)] if isinstance(ks, int) else sorted({int(k) for k in ks})
    if not cutoffs or min(cutoffs) < 1:
        raise ValueError(f"cutoffs must be positive integers, got {ks!r}")
    return cutoffs


def decided_sql() -> str:
    """The classified rows of the facts registered as ``_cls_facts`` (parameters $run_id and $k)."""
    return decide_sql(
        f"(SELECT f.*, $run_id AS run_id, {CURRENT_VERSION} AS dataset_version, $k::INTEGER AS k FROM _cls_facts f)"
    )


Bounds = list[tuple[str | None, str | None]]


def _each_chunk(
    cur: duckdb.DuckDBPyConnection, run_id: str, k: int, decide: Callable[[], None], bounds: Bounds | None = None
) -> CostReport:
    """``decide()`` once per chunk of the run's facts (``facts.fact_chunks``; only the case ranges of ``bounds``
    when given), with the chunk registered as ``_cls_facts`` (what :func:`decided_sql` reads); returns the costs
    summed over the chunks (over the whole run only without ``bounds``)."""
    tally = CostTally(cur, run_id, k)
    with closing(fact_chunks(cur, run_id, k, bounds)) as chunks:
        for facts in chunks:
            cur.register("_cls_facts", facts)
            try:
                decide()
            finally:
                cur.unregister("_cls_facts")
            tally.add(facts)
    return tally.report()


T = TypeVar("T")


def with_checks(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    cutoffs: list[int],
    at: Callable[[duckdb.DuckDBPyConnection, str, int], T],
) -> list[tuple[int, T]]:
    """``at(cur, run_id, k)`` for each cutoff, on a cursor holding the checks layer's findings of the run."""
    cur = con.cursor()
    # stale_first is version_pairs filtered on its flag (same statement, same order): compute the pairs once.
    # A mask, not an expression: pc.field() imports pyarrow.dataset and Acero, a large share of a small load.
    pairs = version_pairs(cur, run_id)
    checks = {
        LEAKS: leakage(cur, run_id),
        NEGATIVES: negative_outcomes(cur, run_id),
        STALE_FIRST: pairs.filter(pairs.column("stale_first").fill_null(False)),
        VERSION_PAIRS: pairs,
    }
    try:
        for name, table in checks.items():
            cur.register(name, table)
        return [(k, at(cur, run_id, k)) for k in cutoffs]
    finally:
        for name in checks:
            cur.unregister(name)
        cur.close()


def _classify(
    con: duckdb.DuckDBPyConnection, run_id: str, cutoffs: list[int], bounds: Bounds | None = None
) -> list[tuple[int, pa.Table, CostReport]]:
    """The classified rows and the costs at each cutoff (of the case ranges of ``bounds`` only, when given)."""

    def at(cur: duckdb.DuckDBPyConnection, rid: str, k: int) -> tuple[pa.Table, CostReport]:
        parts: list[pa.Table] = []

        def decide() -> None:
            parts.append(cur.sql(decided_sql(), params={"run_id": rid, "k": k}).to_arrow_table())

        costs = _each_chunk(cur, rid, k, decide, bounds)
        return pa.concat_tables(parts), costs

    return [(k, *parts) for k, parts in with_checks(con, run_id, cutoffs, at)]


def classify_run(
    con: duckdb.DuckDBPyConnection, run_id: str, *, ks: int | Sequence[int] | None = None, store: bool = True
) -> pa.Table:
    """One row per failure of ``run_id`` (at each cutoff of ``ks``; default the run's k), classified.

    Columns: run_id, case_id, failure, category, rule, confidence, evidence (JSON text), patterns,
    experiments, dataset_version, k. With ``store`` the run's rows and category costs at each cutoff are
    replaced per cutoff (``stored.replacing``; ``con`` must then be writable).
    """
    parts = _classify(con, run_id, _cutoffs(con, run_id, ks))
    if store:
        for k, rows, costs in parts:
            stored.store(con, run_id, k, rows, costs.to_table())
    tables = [rows for _, rows, _ in parts]
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def fold_classification(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    k: int,
    fold: Callable[[duckdb.DuckDBPyConnection, str, dict[str, object]], None],
) -> CostReport:
    """Classify ``run_id`` at ``k`` without storing or keeping the rows: ``fold(cur, rows_sql, params)`` is called
    once per chunk of cases (``facts.fact_chunks``) with a query of that chunk's classified rows (the columns of
    :func:`classify_run`) and its parameters, to aggregate them in SQL. A reader of counts on a store loaded with
    ``--no-precompute`` so never holds every row's evidence in Arrow."""

    def at(cur: duckdb.DuckDBPyConnection, rid: str, cutoff: int) -> CostReport:
        return _each_chunk(cur, rid, cutoff, lambda: fold(cur, decided_sql(), {"run_id": rid, "k": cutoff}))

    ((_, costs),) = with_checks(con, run_id, [k], at)
    return costs


def store_classification(con: duckdb.DuckDBPyConnection, run_id: str, *, ks: int | Sequence[int] | None = None) -> None:
    """:func:`classify_run` with ``store`` for a caller that does not read the rows: they are written by SQL
    straight from each chunk's facts (``stored.Writer.rows``), never through Arrow, a chunk of cases at a time
    (``stored.replacing``)."""

    def at(cur: duckdb.DuckDBPyConnection, rid: str, k: int) -> None:
        with stored.replacing(cur, rid, k) as writer:
            writer.costs(_each_chunk(cur, rid, k, lambda: writer.rows(decided_sql(), {"k": k})).to_table())

    with_checks(con, run_id, _cutoffs(con, run_id, ks), at)


@dataclass(frozen=True)
class RunClassification:
    """A run's classification at one k: its failure rows and what each category costs (typed, for the TUI)."""

    run_id: str
    k: int
    rows: pa.Table  # classify_run's columns
    costs: CostReport
    from_store: bool  # read from the store (False: computed now, because nothing fresh was stored)


def _stored_costs(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> CostReport | None:
    """The stored category costs of ``run_id`` at ``k`` when its stored classification is fresh, else None."""
    return (
        CostReport.from_table(run_id, k, stored.cost_rows(cur, run_id, k)) if stored.is_fresh(cur, run_id, k) else None
    )


def run_classification(con: duckdb.DuckDBPyConnection, run_id: str, *, k: int | None = None) -> RunClassification:
    """The stored classification of ``run_id`` at :func:`judging_k` when fresh, else computed (not stored)."""
    cutoff = judging_k(con, run_id, k)
    cur = con.cursor()
    try:
        costs = _stored_costs(cur, run_id, cutoff)
        if costs is not None:
            return RunClassification(run_id, cutoff, stored.failure_rows(cur, run_id, cutoff), costs, True)
    finally:
        cur.close()
    ((_, rows, costs),) = _classify(con, run_id, [cutoff])
    return RunClassification(run_id, cutoff, rows, costs, False)


def run_costs(con: duckdb.DuckDBPyConnection, run_id: str, *, k: int | None = None) -> CostReport:
    """:func:`run_classification`'s costs alone: the stored cost rows when fresh, never the failure rows (a large
    run's, with their evidence, are not fetched for a table of a few categories); on a store not classified yet,
    the costs of a classification that folds nothing (:func:`fold_classification`)."""
    cutoff = judging_k(con, run_id, k)
    cur = con.cursor()
    try:
        costs = _stored_costs(cur, run_id, cutoff)
    finally:
        cur.close()
    return costs if costs is not None else fold_classification(con, run_id, cutoff, lambda *_: None)


def failure_source(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    k: int,
    *,
    partial: bool = False,
    case_ids: Sequence[str] | None = None,
) -> str:
    """A relation of the run's failure rows at ``k`` for ``cur``: the stored table when fresh (read in SQL, so a
    reader never fetches evidence it does not show), else the rows computed now, registered on ``cur``.

    With ``partial`` a classification under way (``classify.chunked``) is read as it stands: the rows of the
    chunks done so far, for a caller that says so (``classify.progress``). With ``case_ids`` only those cases'
    rows are asked for: stored ones when their chunks are done, else only their own case range is classified."""
    stored_rows = stored.current_rows()
    if stored.is_fresh(cur, run_id, k):
        return stored_rows
    if partial and progress(cur, run_id, k=k).chunks:
        return stored_rows
    bounds: Bounds | None = None
    if case_ids is not None:
        if all(done_chunk_of(cur, run_id, k, c) for c in case_ids):
            return stored_rows
        bounds = _span(cur, case_ids)
    ((_, rows, _),) = _classify(cur, run_id, [k], bounds)
    cur.register("_cls_failures", rows)
    return "(SELECT * FROM _cls_failures WHERE run_id = $run_id AND k = $k)"


def _span(cur: duckdb.DuckDBPyConnection, case_ids: Sequence[str]) -> Bounds:
    """The one case-id range holding ``case_ids`` and no case past the last of them."""
    if not case_ids:
        return [("", "")]
    lo, hi = min(case_ids), max(case_ids)
    after = cur.execute("SELECT min(case_id) FROM cases WHERE case_id > $hi", {"hi": hi}).fetchall()[0][0]
    return [(lo, None if after is None else str(after))]


def failures(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    *,
    category: str | None = None,
    pattern: str | None = None,
    k: int | None = None,
    case_ids: Sequence[str] | None = None,
) -> pa.Table:
    """The run's classified failures at :func:`judging_k` (stored ones when fresh, else computed without
    storing), with the case's query, split and query_type; filtered by ``category``, ``pattern`` and ``case_ids``
    (from fresh stored rows a few cases read in milliseconds); ordered by case, failure, k. Columns:
    :data:`FAILURE_SCHEMA`."""
    cutoff = judging_k(con, run_id, k)
    cur = con.cursor()
    try:
        src = failure_source(cur, run_id, cutoff, case_ids=case_ids)
        case = "" if case_ids is None else " AND f.case_id IN (SELECT unnest($case_ids::VARCHAR[]))"
        sql = f"""
            SELECT f.run_id, f.case_id, c.query, c.split, c.query_type, f.failure, f.category, f.rule,
                   f.confidence, CAST(f.evidence AS VARCHAR) AS evidence, f.patterns, f.experiments,
                   f.dataset_version, f.k
            FROM {src} f LEFT JOIN cases c USING (case_id)
            WHERE ($category IS NULL OR f.category = $category)
              AND ($pattern IS NULL OR list_contains(f.patterns, $pattern)){case}
            ORDER BY f.case_id, list_position({FAILURE_ORDER}, f.failure), f.k, f.rule
        """
        params: dict[str, object] = {"category": category, "pattern": pattern, "run_id": run_id, "k": cutoff}
        if case_ids is not None:
            params["case_ids"] = list(case_ids)
        return cur.sql(sql, params=params).to_arrow_table().cast(FAILURE_SCHEMA)
    finally:
        cur.close()


def failure_list(
    con: duckdb.DuckDBPyConnection, run_id: str, *, k: int | None = None, partial: bool = False
) -> pa.Table:
    """One row per failing case at :func:`judging_k`, for a list view: case_id, query, category, rule and
    patterns (each '; '-joined when a case fails in several ways), failures and the highest confidence. Read in
    SQL from the stored rows when fresh, without the evidence, so a large run's list fills in without classifying.
    ``partial``: see :func:`failure_source` (the caller states the progress beside the list)."""
    cutoff = judging_k(con, run_id, k)
    cur = con.cursor()
    try:
        src = failure_source(cur, run_id, cutoff, partial=partial)
        agg = "array_to_string(list_sort(list_distinct(list({0}))), '; ')"
        sql = f"""
            WITH per_case AS (
                SELECT case_id, {agg.format("category")} AS category, {agg.format("rule")} AS rule,
                       nullif(array_to_string(list_sort(list_distinct(flatten(list(patterns)))), '; '), '')
                           AS patterns,
                       {agg.format("failure")} AS failures, max(confidence) AS confidence
                FROM {src} GROUP BY case_id
            )
            SELECT f.case_id, c.query, f.* EXCLUDE (case_id)
            FROM per_case f LEFT JOIN cases c USING (case_id) ORDER BY f.case_id
        """
        return cur.sql(sql, params={"run_id": run_id, "k": cutoff}).to_arrow_table()
    finally:
        cur.close()


@dataclass(frozen=True)
class FailureSummary:
    run_id: str
    k: int
    failures: int
    cases: int
    by_category: dict[str, int]
    by_failure: dict[str, int]
    by_pattern: dict[str, int]
    costs: CostReport
    from_store: bool


_COUNTS = """
SELECT 'category' AS kind, category AS name, count(*) AS n FROM {src} GROUP BY category
UNION ALL SELECT 'failure', failure, count(*) FROM {src} GROUP BY failure
UNION ALL SELECT 'pattern', p, count(*) FROM (SELECT unnest(patterns) AS p FROM {src}) GROUP BY p
UNION ALL SELECT 'total', 'failures', count(*) FROM {src}
UNION ALL SELECT 'total', 'cases', count(DISTINCT case_id) FROM {src}
ORDER BY kind, n DESC, name
"""


def _counts(rows: list[tuple[str, str, int]]) -> dict[str, dict[str, int]]:
    """Counts by kind and name, summed over ``rows`` (one chunk's counts after another), largest first."""
    out: dict[str, dict[str, int]] = {"category": {}, "failure": {}, "pattern": {}, "total": {}}
    for kind, name, n in rows:
        out[kind][name] = out[kind].get(name, 0) + int(n)
    return {kind: dict(sorted(named.items(), key=lambda kv: (-kv[1], str(kv[0])))) for kind, named in out.items()}


def failure_summary(con: duckdb.DuckDBPyConnection, run_id: str, *, k: int | None = None) -> FailureSummary:
    """Counts and category costs of ``run_id`` at :func:`judging_k` (stored when fresh, else computed)."""
    cutoff = judging_k(con, run_id, k)
    rows: list[tuple[str, str, int]] = []
    cur = con.cursor()
    try:
        costs = _stored_costs(cur, run_id, cutoff)
        if costs is not None:
            rows = cur.execute(_COUNTS.format(src=stored.current_rows()), {"run_id": run_id, "k": cutoff}).fetchall()
    finally:
        cur.close()
    from_store = costs is not None

    def count(chunk: duckdb.DuckDBPyConnection, rows_sql: str, params: dict[str, object]) -> None:
        # the chunk's rows once, without their evidence, then counted: every count adds up over the chunks, which
        # partition the cases (so distinct cases add up too)
        chunk.execute(
            f"CREATE OR REPLACE TEMP TABLE _sum_rows AS SELECT case_id, category, failure, patterns FROM ({rows_sql})",
            params,
        )
        try:
            rows.extend(chunk.execute(_COUNTS.format(src="_sum_rows")).fetchall())
        finally:
            chunk.execute("DROP TABLE _sum_rows")

    if costs is None:
        costs = fold_classification(con, run_id, cutoff, count)
    counts = _counts(rows)
    total = counts["total"]
    return FailureSummary(
        run_id,
        cutoff,
        total.get("failures", 0),
        total.get("cases", 0),
        counts["category"],
        counts["failure"],
        counts["pattern"],
        costs,
        from_store,
    )


# One statement over the run's failure rows and its unit locations, so neither is fetched whole: a large run's
# failure rows (with their evidence) and every relevant unit's location would otherwise be held in memory beside
# the work DuckDB does under the store's cap. The lists that need numbering are numbered before it, a chunk of cases
# at a time (``locations.numbered_positions``): windows over every row of a run loaded from chunks outgrow the cap.
_CASE_CATEGORIES_SQL = """
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
    judged at :func:`judging_k`: a category for every case a caller names as failing (the gate's, by its own
    measures, which are not the classifier's failure kinds), so that no failing case goes without an owner. In this
    order: the categories of its classified failures; else those of its relevant units missing from the top k,
    each by its own defect (``rules.UNIT_CATEGORY``, as the costs read it); else ``ranking`` (every relevant unit
    is in the top k: what it lost is their order). A case absent from the result has neither a failure nor a
    relevant label (a negative case that behaved, or an unlabelled one): only a rule outside the classifier
    (latency) can fail it."""
    cutoff = judging_k(con, run_id, k)
    cur = con.cursor()  # the numbered positions' temp tables go with it
    try:
        # the run's failure rows: a relation of the store's, or rows classified now (failure_source)
        failures = failure_source(cur, run_id, cutoff)
        ctes = location_ctes(plain_runs=PLAIN_RUNS_TABLE, numbered=numbered_positions(cur, run_id, cutoff))
        sql = _CASE_CATEGORIES_SQL.format(ctes=ctes, category=UNIT_CATEGORY).replace("_cc_failure_rows", failures, 1)
        return cur.sql(sql, params={"run_id": run_id, "k": cutoff}).to_arrow_table()
    finally:
        cur.close()
