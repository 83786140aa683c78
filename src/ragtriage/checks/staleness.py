"""Stale documents: results that were not in force when the question was asked, and stale versions ranked first.

A result row is judged at an *as-of* date: the case's ``effective_on`` filter, else the run's ``created_at``
date. It is stale when a unit it stands for is ``not-yet-effective`` (``effective_from`` after the date),
``expired`` (``effective_to`` before it; both bounds inclusive) or ``archived``. An archived unit that was in
force on a case's explicit ``effective_on`` is the right historical version and not stale; without that date
(or when the unit has no dates) archived means stale.

Versions of one document: manifests rarely link a version to its successor, so two documents count as versions
of one another when they share tenant, doc_type and *document-id stem* — the id without a trailing version token
(``pol-travel-2023`` and ``pol-travel-2024`` → ``pol-travel``; ``guide-v2`` → ``guide``); rows of one
document_id with different versions share it trivially. When a stale and a fresh version both appear in one
ranked list, the fresh one should rank first; ``stale_first`` lists the lists where it does not.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.checks.units import MATCHED, run_query, run_results, stage_order, with_query
from ragtriage.store.connection import run_fact

_STEM = r"regexp_replace(document_id, '[-_.]v?[0-9]+([._][0-9]+)*$', '')"

AS_OF = f"""
as_of AS (
    SELECT c.case_id, c.filter_effective_on AS case_date,
           coalesce(c.filter_effective_on, try_cast({run_fact("created_at")} AS DATE)) AS as_of
    FROM cases c
)"""

# The manifest rows that can be stale at *some* case's as-of date, and the result rows standing for one of them
# (by chunk or by document: a superset of the rows ``matched`` pairs with them). Only these rows are matched and
# judged, so a run whose units are all in force (or a store without a manifest) is judged without reading its rows
# twice. Two semi joins in a UNION: each is skipped outright when no unit can be stale.
STALE_KEYS = """
stale_units AS (
    SELECT document_id, chunk_id FROM documents
    WHERE status = 'archived' OR effective_from > (SELECT min(as_of) FROM as_of)
       OR effective_to < (SELECT max(as_of) FROM as_of)
),
stale_keys AS (
    SELECT r.case_id, r.stage, r.rank FROM results r SEMI JOIN stale_units s ON s.chunk_id = r.chunk_id
    WHERE r.run_id = $run_id
    UNION
    SELECT r.case_id, r.stage, r.rank FROM results r SEMI JOIN stale_units s ON s.document_id = r.document_id
    WHERE r.run_id = $run_id
)"""

JUDGED = """
judged AS (
    SELECT m.*, a.as_of, CASE
        WHEN m.effective_from > a.as_of THEN 'not-yet-effective'
        WHEN m.effective_to < a.as_of THEN 'expired'
        WHEN m.status = 'archived' AND (a.case_date IS NULL OR (m.effective_from IS NULL AND m.effective_to IS NULL))
            THEN 'archived'
        END AS reason
    FROM matched m LEFT JOIN as_of a USING (case_id)
)"""

STALE_CUT = "SEMI JOIN stale_keys k USING (case_id, stage, rank)"
# The result rows that can be stale, matched and judged (``judged``), for both statements below.
_JUDGED_ROWS = with_query(AS_OF, STALE_KEYS, run_results(STALE_CUT), MATCHED, JUDGED)
_STALE_SQL = (
    _JUDGED_ROWS
    + f"""
SELECT run_id, case_id, stage, rank, document_id, chunk_id, unit_id, reason,
       string_agg(DISTINCT m_label, ', ' ORDER BY m_label) AS stale_units, min(status) AS status,
       min(effective_from) AS effective_from, max(effective_to) AS effective_to, any_value(as_of) AS as_of,
       coalesce(min(status), 'no status') || ', effective ' || coalesce(CAST(min(effective_from) AS VARCHAR), '…')
       || ' to ' || coalesce(CAST(max(effective_to) AS VARCHAR), '…') || ', judged as of '
       || coalesce(CAST(any_value(as_of) AS VARCHAR), 'no date') AS detail
FROM judged WHERE reason IS NOT NULL
GROUP BY run_id, case_id, stage, rank, document_id, chunk_id, unit_id, reason
ORDER BY {stage_order("stage")}, case_id, rank, reason
"""
)


def stale_results(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Result rows (any stage) standing for a unit not in force at the case's as-of date, one row per reason."""
    return run_query(con, run_id, _STALE_SQL)


# Stale and fresh versions in one list. The stale rows are few and found as in ``stale_results``; a fresh version
# is then any other row of the same list whose document is in the same family, found by one scan of the run
# probing the documents of those families only, instead of grouping every matched row of every list by family,
# which is slow where most lists hold some unit that is stale for some case.
_PAIRS_SQL = (
    _JUDGED_ROWS
    + f"""
, families AS (
    SELECT document_id, concat_ws('|', tenant, doc_type, {_STEM}) AS family FROM documents GROUP BY ALL
),
stale_rows AS (
    SELECT j.case_id, j.stage, j.rank, j.document_id, f.family
    FROM judged j JOIN families f USING (document_id) WHERE j.reason IS NOT NULL
    GROUP BY ALL
),
stale_lists AS (
    SELECT DISTINCT case_id, stage, family FROM stale_rows
),
family_documents AS (
    SELECT f.document_id, f.family FROM families f SEMI JOIN stale_lists s USING (family)
),
fresh_rows AS (
    SELECT x.* FROM (
        SELECT r.case_id, r.stage, r.rank, r.document_id, d.family
        FROM results r JOIN family_documents d USING (document_id) WHERE r.run_id = $run_id
    ) x
    SEMI JOIN stale_lists USING (case_id, stage, family)
    ANTI JOIN stale_rows USING (case_id, stage, rank, document_id)
),
per_family AS (
    SELECT case_id, stage, family,
           arg_min(document_id, rank) FILTER (WHERE NOT stale) AS current_document_id,
           min(rank) FILTER (WHERE NOT stale) AS current_rank,
           arg_min(document_id, rank) FILTER (WHERE stale) AS stale_document_id,
           min(rank) FILTER (WHERE stale) AS stale_rank
    FROM (SELECT *, true AS stale FROM stale_rows UNION ALL SELECT *, false FROM fresh_rows)
    GROUP BY case_id, stage, family
)
SELECT $run_id AS run_id, case_id, stage, family, current_document_id, current_rank, stale_document_id, stale_rank,
       stale_rank < current_rank AS stale_first,
       'stale ' || stale_document_id || ' at rank ' || stale_rank || ', in force ' || current_document_id
       || ' at rank ' || current_rank AS detail
FROM per_family WHERE current_rank IS NOT NULL AND stale_rank IS NOT NULL
"""
)


def version_pairs(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Every (case, stage, document family) list holding both a stale and a fresh version, best rank of each."""
    return run_query(con, run_id, _PAIRS_SQL + " ORDER BY case_id, stage, family")


def stale_first(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """The lists where a stale version outranks a fresh version of the same document."""
    return run_query(con, run_id, f"SELECT * FROM ({_PAIRS_SQL}) WHERE stale_first ORDER BY case_id, stage, family")
