"""Permission leakage: every result row, in any stage, that shows a case's principal something it may not see.

Leakage is a hard failure and is never averaged into a metric: one leaked row fails the run however good its
recall. A result row leaks when (see ``units.denials``) a manifest unit it stands for belongs to another tenant
(``tenant-mismatch``), shares no group with the principal (``acl-no-overlap``), or has no acl where the dataset
requires one (``acl-missing``); or when, being otherwise permitted, its snippet or metadata carries a forbidden
unit (``references``). A case without a principal cannot be checked and is listed by ``unchecked_cases``, never
counted as passing. A unit absent from the manifest has an *unknown* acl, not a missing one: such rows are counted
per case by ``unverifiable_results`` (the loader's ingestion warning) rather than called leaks.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ragtriage.checks.references import ID_HITS, REFERENCE_LEAKS, SPAN_HITS, TEXTS
from ragtriage.checks.units import (
    ACL_POLICY_JOIN,
    ACL_REQUIRED,
    MATCHED,
    PRINCIPALS,
    RUN_RESULTS,
    denial_detail,
    denials,
    run_query,
    run_results,
    stage_order,
    with_query,
)
from ragtriage.store.corpus_manifest import PARTIAL_NOTE, PARTIAL_SQL

_DIRECT = f"""
denied AS (
    SELECT m.*, p.principal_id, p.principal_groups, p.principal_tenant,
           {denials("p.principal_groups", "p.principal_tenant", "m.", "a.acl_required")} AS rules
    FROM matched m JOIN principals p USING (case_id) {ACL_POLICY_JOIN}
),
direct_leaks AS (
    SELECT run_id, case_id, principal_id, stage, rank, document_id, chunk_id, unit_id, rule,
           string_agg(DISTINCT detail, '; ' ORDER BY detail) AS detail,
           list_sort(list_distinct(list(m_label))) AS forbidden_units
    FROM (SELECT *, {denial_detail("rule", "principal_groups", "principal_tenant")} AS detail
          FROM (SELECT *, unnest(rules) AS rule FROM denied WHERE array_length(rules) > 0))
    GROUP BY run_id, case_id, principal_id, stage, rank, document_id, chunk_id, unit_id, rule
)"""

LEAKS = (
    _DIRECT
    + ","
    + TEXTS
    + ","
    + ID_HITS
    + ","
    + SPAN_HITS
    + ","
    + REFERENCE_LEAKS
    + """,
leaks AS (
    SELECT * FROM direct_leaks
    UNION ALL
    SELECT * FROM reference_leaks r WHERE NOT EXISTS (
        SELECT 1 FROM direct_leaks d WHERE d.case_id = r.case_id AND d.stage = r.stage AND d.rank = r.rank)
)"""
)

# Only cases with a principal can leak, so the run's rows are cut to them before the manifest join: a store whose
# cases carry no principal (or few) is checked without matching all of its result rows.
PRINCIPAL_CUT = "SEMI JOIN principals p USING (case_id)"
_PRINCIPAL_RESULTS = run_results(PRINCIPAL_CUT)

LEAK_ORDER = f"{stage_order('stage')}, case_id, rank, rule"
"""The one order of leak rows: final-stage leaks first (``units.STAGE_ORDER``), then by case, rank and rule."""

LEAKAGE_SQL = (
    with_query(PRINCIPALS, _PRINCIPAL_RESULTS, MATCHED, LEAKS)
    + f"""
SELECT run_id, case_id, principal_id, stage, rank, document_id, chunk_id, unit_id, rule, detail, forbidden_units
FROM leaks ORDER BY {LEAK_ORDER}
"""
)


def leakage(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Every leaked result row of ``run_id``, one row per (result row, rule broken), any stage, in ``LEAK_ORDER``."""
    return run_query(con, run_id, LEAKAGE_SQL)


def leaked_result_rows(leaks: pa.Table) -> int:
    """Distinct leaked result rows (case, stage, rank) in a :func:`leakage` table. One row breaking two rules
    (another tenant *and* no shared group) is one leaked row and two rule findings: reports give both counts."""
    if leaks.num_rows == 0:
        return 0
    return int(leaks.group_by(["case_id", "stage", "rank"]).aggregate([]).num_rows)


# The run's answered cases as one distinct list joined once: a correlated EXISTS per case rescans the run.
UNCHECKED_SQL = """
SELECT c.case_id, 'no principal: leakage cannot be checked' AS reason, a.case_id IS NOT NULL AS has_results
FROM cases c LEFT JOIN (SELECT DISTINCT case_id FROM results WHERE run_id = $run_id) a USING (case_id)
WHERE c.principal_id IS NULL AND c.principal_groups IS NULL AND c.principal_tenant IS NULL
ORDER BY c.case_id
"""


def unchecked_cases(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Cases without a principal: reported as unchecked, never as passing (``has_results``: the run answered)."""
    return run_query(con, run_id, UNCHECKED_SQL)


@dataclass(frozen=True)
class Coverage:
    """How many cases leakage could be checked on: those with a principal, given a corpus manifest (without one
    no unit's acl or tenant is known, so no case is checked). A manifest derived from trace metadata counts only
    when some row of it names an acl or a tenant. ``check`` and the gate read the same figures."""

    cases: int
    unchecked: int  # cases without a principal
    has_manifest: bool
    partial: bool = False  # the manifest is derived from trace metadata: acls known only where it names them
    declared: bool = True  # the data declares an access rule somewhere (:data:`DECLARED_SQL`)

    @property
    def applicable(self) -> bool:
        """Whether leakage can mean anything on this data: where nothing declares who may see what (no principal on
        any case, no acl or tenant on any manifest row, no acl policy), no result can leak and none can be
        checked, so the check does not apply (it passes, saying so) rather than failing as unchecked."""
        return self.declared

    @property
    def manifest_note(self) -> str | None:
        """The line every report prints where the manifest is partial (``store.corpus_manifest``)."""
        return PARTIAL_NOTE if self.partial else None

    @property
    def checked(self) -> int:
        return self.cases - self.unchecked if self.has_manifest else 0

    @property
    def share(self) -> float:
        return self.checked / self.cases if self.cases else 0.0

    def why_unchecked(self) -> str:
        if not self.has_manifest:
            return (
                "the trace metadata names no acl or tenant" if self.partial else "no corpus manifest to read acls from"
            )
        return "no principal"


NOT_APPLICABLE = "not applicable: the data declares no access rules"
"""How every report states leakage on data without an access rule (:attr:`Coverage.applicable`)."""

DECLARED_SQL = """(EXISTS (SELECT 1 FROM cases
                WHERE principal_id IS NOT NULL OR principal_groups IS NOT NULL OR principal_tenant IS NOT NULL)
    OR EXISTS (SELECT 1 FROM documents WHERE acl IS NOT NULL OR tenant IS NOT NULL)
    OR coalesce((SELECT bool_or(acl_required) FROM current_dataset), false))"""
"""Whether any input declares an access rule: a case's principal, a manifest row's acl or tenant, the dataset's acl
policy. One of them is enough for leakage to apply (and for an unchecked case to fail it)."""

_COVERAGE_SQL = f"""SELECT (SELECT count(*) FROM cases),
    EXISTS (SELECT 1 FROM documents WHERE NOT {PARTIAL_SQL} OR acl IS NOT NULL OR tenant IS NOT NULL), {PARTIAL_SQL},
    {DECLARED_SQL}"""


def coverage(con: duckdb.DuckDBPyConnection, unchecked: pa.Table) -> Coverage:
    """The leakage check's coverage, given the :func:`unchecked_cases` table."""
    ((cases, has_manifest, partial, declared),) = con.execute(_COVERAGE_SQL).fetchall()
    return Coverage(int(cases), unchecked.num_rows, bool(has_manifest), bool(partial), bool(declared))


UNVERIFIABLE_FIRST = 5
"""How many unit ids an unverifiable (case, stage) names: the first by rank; the count says how many there are."""

# A manifest derived from trace metadata (partial) knows a unit's acl only where the metadata named one: its rows
# naming neither acl nor tenant are unverifiable too, unless the dataset requires acls (then they leak).
_UNKNOWN_ACL = f"""
unknown_acl AS (
    SELECT * FROM unknown_units
    UNION ALL
    SELECT DISTINCT run_id, case_id, stage, rank, document_id, chunk_id, unit_id, score, snippet, metadata_text
    FROM matched WHERE {PARTIAL_SQL} AND acl IS NULL AND tenant IS NULL AND NOT {ACL_REQUIRED}
)"""
_UNKNOWN_REASON = f"""CASE WHEN {PARTIAL_SQL} THEN 'acl unknown' ELSE 'unit not in the corpus manifest' END"""
_UNKNOWN_DETAIL = f"""CASE WHEN {PARTIAL_SQL}
    THEN 'whose acl is unknown (not in the manifest derived from trace metadata, or no acl or tenant in its metadata)'
    ELSE 'whose unit is not in the corpus manifest' END"""

# Grouped by (case, stage) alone: the run id is the parameter, so grouping by it too is wasted work.
_UNVERIFIABLE_SQL = (
    with_query(RUN_RESULTS, MATCHED, _UNKNOWN_ACL)
    + f"""
SELECT $run_id AS run_id, case_id, stage, count(*) AS rows, min(rank) AS first_rank,
       array_to_string(arg_min(coalesce(chunk_id, document_id), rank, {UNVERIFIABLE_FIRST}), ', ') AS first_units,
       {_UNKNOWN_REASON} AS reason,
       count(*) || ' row(s) ' || {_UNKNOWN_DETAIL} || '; first by rank: ' || first_units AS detail
FROM unknown_acl GROUP BY case_id, stage ORDER BY {stage_order("stage")}, case_id
"""
)


def unverifiable_results(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Result rows whose unit the manifest does not know, counted per (case, stage) with the first few unit ids by
    rank: their acl cannot be checked (an ingestion signal). Aggregated in DuckDB, because without a manifest
    every row of a run is unverifiable and one Arrow row per result would not fit in memory on a large run."""
    return run_query(con, run_id, _UNVERIFIABLE_SQL)
