"""Negative (unanswerable) cases: each passes or fails by what it expects the retriever to do.

* ``empty`` — a *controlled* empty final list: no results, and not because the call timed out or errored (an
  empty list from a failure is an outage, not an abstention). This is also how a case whose filters conflict or
  admit nothing is judged.
* ``below_threshold`` — the top score (highest final-stage score) is under the run's calibrated threshold
  (``runs.score_threshold``, set by ``calibrate``); no results passes too. Without a threshold the case fails
  with a reason that says to calibrate: an unjudged negative is not a passing one.
* ``insufficient_evidence`` — the run's event for the case has status ``insufficient_evidence``.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.checks.units import run_query
from ragtriage.store.connection import run_fact


def top_scores(cut: str = "") -> str:
    """The ``final_lists`` fragment: each case's final-list size, top score and top unit; ``cut`` (a join clause on
    ``r``) keeps only the cases a caller judges."""
    return f"""
final_lists AS (
    SELECT case_id, count(*) AS n_results, max(score) AS top_score, arg_min(unit_id, rank) AS top_unit
    FROM results r {cut} WHERE run_id = $run_id AND stage = 'final' GROUP BY case_id
)"""


TOP_SCORES = top_scores()


def run_events(where: str = "") -> str:
    """The ``run_events`` fragment: per case, what the run's events say (timed out, errored, insufficient
    evidence, the statuses), of the cases that ``where`` (an ``AND`` condition on ``events``) keeps."""
    return f"""
run_events AS (
    SELECT case_id, bool_or(coalesce(timed_out, false)) AS timed_out, bool_or(status = 'error') AS errored,
           bool_or(status = 'insufficient_evidence') AS insufficient, string_agg(DISTINCT status, ',') AS statuses
    FROM events WHERE run_id = $run_id{where} GROUP BY case_id
)"""


RUN_THRESHOLD = run_fact("score_threshold")
"""SQL: the run's calibrated score threshold (``calibrate``; NULL when none), what ``below_threshold`` judges by."""

NEGATIVE = "expected_behavior <> 'evidence'"
"""SQL over ``cases``: a negative case (it expects the retriever to abstain, in one of the ways above)."""

NEGATIVE_CUT = f"SEMI JOIN (SELECT case_id FROM cases WHERE {NEGATIVE}) n USING (case_id)"
# Only negative cases are judged: the run's other final lists (all but a few of its rows) are never aggregated.
_NEGATIVES_SQL = (
    "WITH "
    + top_scores(NEGATIVE_CUT)
    + f""",
{run_events()},
judged AS (
    SELECT c.case_id, c.expected_behavior, coalesce(f.n_results, 0) AS n_results, f.top_score,
           {RUN_THRESHOLD} AS threshold,
           coalesce(e.timed_out, false) AS timed_out, coalesce(e.errored, false) AS errored,
           coalesce(e.insufficient, false) AS insufficient, e.statuses
    FROM cases c
    LEFT JOIN final_lists f USING (case_id) LEFT JOIN run_events e USING (case_id)
    WHERE c.{NEGATIVE}
)
SELECT case_id, expected_behavior,
    CASE expected_behavior
        WHEN 'empty' THEN n_results = 0 AND NOT timed_out AND NOT errored
        WHEN 'below_threshold' THEN n_results = 0 OR coalesce(top_score < threshold, false)
        WHEN 'insufficient_evidence' THEN insufficient
        ELSE false END AS passed,
    CASE expected_behavior
        WHEN 'empty' THEN CASE
            WHEN n_results > 0 THEN 'returned ' || n_results || ' result(s); expected none'
            WHEN timed_out THEN 'empty because the call timed out, not a controlled empty result'
            WHEN errored THEN 'empty because the call errored, not a controlled empty result'
            ELSE 'controlled empty result' END
        WHEN 'below_threshold' THEN CASE
            WHEN n_results = 0 THEN 'no results'
            WHEN threshold IS NULL THEN 'no calibrated threshold for this run: run `ragtriage calibrate`'
            WHEN top_score IS NULL THEN 'results carry no scores'
            WHEN top_score < threshold
                THEN 'top score ' || round(top_score, 4) || ' < threshold ' || round(threshold, 4)
            ELSE 'top score ' || round(top_score, 4) || ' >= threshold ' || round(threshold, 4) END
        WHEN 'insufficient_evidence' THEN CASE
            WHEN insufficient THEN 'event status insufficient_evidence'
            WHEN statuses IS NULL THEN 'no event status recorded; expected insufficient_evidence'
            ELSE 'event status ' || statuses || '; expected insufficient_evidence' END
        ELSE 'unknown expected_behavior ' || expected_behavior END AS reason,
    top_score, threshold, n_results
FROM judged ORDER BY case_id
"""
)


def negative_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """One row per case whose expected_behavior is not ``evidence``: passed, why, and the figures judged."""
    return run_query(con, run_id, _NEGATIVES_SQL)
