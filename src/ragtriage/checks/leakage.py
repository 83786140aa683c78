"""Permission leakage: every result row, in any stage, that shows a case's principal something it may not see.

Leakage is a hard failure and is never averaged into a metric: one leaked row fails the run however good its
recall. A result row leaks when (see ``units.denials``) a manifest unit it stands for belongs to another tenant
(``tenant-mismatch``), shares no group with the principal (``acl-no-overlap``), or has no acl where the dataset
requires one (``acl-missing``); or when, being otherwise permitted, its snippet or metadata carries a forbidden
unit (``references``). A case without a principal cannot be checked and is listed by ``unchecked_cases``, never
counted as passing. A unit absent from the manifest has an *unknown* acl, not a missing one: such rows are counted
per case by ``unverifiable_results`` (the loader's ingestion warning) rather than called leaks.

*References*: a retriever can leak without returning the forbidden unit itself: a permitted chunk's snippet may
quote a restricted one, or its metadata may name it (``"see_also": ["HR-SALARY-2024"]``). Two rules, both
set-based SQL:

* **id rule** — the snippet or metadata text contains a manifest ``document_id`` or ``chunk_id`` of at least
  ``MIN_ID_CHARS`` characters as a whole token (not inside a longer id: letters, digits, ``_`` and ``-`` continue
  an id), the principal may not see that unit, and it is not the row's own unit. The texts are cut into runs of
  id characters and equi-joined on the id's first run (no text × id cross product), then a boundary regexp
  confirms the whole id (``DOC-7#02`` as well as ``DOC-7``).
* **text-span rule** — the snippet or metadata shares a run of ``SPAN_WORDS`` consecutive words (lower-cased,
  split on anything that is not a letter or digit) with the text of a unit the principal may not see, and no
  unit the principal *may* see contains that run (boilerplate shared with permitted text is not a leak).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ragtriage.checks.units import (
    ACL_POLICY_JOIN,
    ACL_REQUIRED,
    HAS_PRINCIPAL,
    MATCHED,
    PRINCIPALS,
    RUN_RESULTS,
    UNIT_COLUMNS,
    denial_detail,
    denials,
    run_query,
    run_results,
    stage_order,
    with_query,
)
from ragtriage.store.corpus_manifest import PARTIAL_NOTE, PARTIAL_SQL

MIN_ID_CHARS = 4
SPAN_WORDS = 12

_WORDS = r"list_filter(regexp_split_to_array(lower({col}), '[^\pL\pN]+'), lambda w: w <> '')"
# a run of words is compared by its 64-bit hash: no string is built per run
_SPAN = f"hash(list_slice(words, i, i + {SPAN_WORDS - 1}))"
_KEY = "run_id, case_id, principal_id, stage, rank, document_id, chunk_id, unit_id"

# Fragment ``texts``: one row per (result row with a principal, field) holding the text to search.
TEXTS = """
texts AS (
    SELECT r.run_id, r.case_id, p.principal_id, p.principal_groups, p.principal_tenant, r.stage, r.rank,
           r.document_id, r.chunk_id, r.unit_id, f.field, f.hay
    FROM run_results r JOIN principals p USING (case_id),
         LATERAL (VALUES ('snippet', r.snippet), ('metadata', r.metadata_text)) AS f(field, hay)
    WHERE f.hay IS NOT NULL AND f.hay <> ''
)"""


# Not the result row's own manifest unit(s): those are judged by the direct rules.
def _not_own(unit: str) -> str:
    return f"NOT ({unit}m_document_id = t.document_id AND (t.chunk_id IS NULL OR {unit}m_chunk_id = t.chunk_id))"


_ID_RUN = r"[\pL\pN_-]+"  # letters, digits, _ and - continue an id
_NOT_ID = r"[^\pL\pN_-]"

ID_HITS = f"""
ref_ids AS (
    SELECT *, regexp_extract(ref, '{_ID_RUN}') AS ref_key FROM (
        SELECT d.document_id AS ref, {UNIT_COLUMNS} FROM documents d WHERE length(CAST(d.document_id AS VARCHAR)) >= {
    MIN_ID_CHARS
}
        UNION ALL
        SELECT d.chunk_id AS ref, {UNIT_COLUMNS} FROM documents d WHERE length(CAST(d.chunk_id AS VARCHAR)) >= {
    MIN_ID_CHARS
})
),
text_tokens AS (
    SELECT DISTINCT * FROM (
        SELECT t.run_id, t.case_id, t.stage, t.rank, t.field, unnest(regexp_extract_all(t.hay, '{_ID_RUN}')) AS token
        FROM texts t)
    WHERE token IN (SELECT ref_key FROM ref_ids)
),
id_candidates AS (
    SELECT t.*, u.ref, u.m_label, u.acl, u.tenant,
           {denials("t.principal_groups", "t.principal_tenant", "u.", "a.acl_required")} AS rules
    FROM text_tokens k JOIN ref_ids u ON u.ref_key = k.token
    JOIN texts t USING (run_id, case_id, stage, rank, field) {ACL_POLICY_JOIN}
    WHERE u.ref <> t.document_id AND u.ref IS DISTINCT FROM t.chunk_id AND {_not_own("u.")}
      AND regexp_matches(t.hay, '(^|{_NOT_ID})' || regexp_escape(u.ref) || '($|{_NOT_ID})')
),
id_hits AS (
    SELECT {_KEY}, field, m_label, rule,
           'mentions id ' || ref || ' of forbidden unit ' || {
    denial_detail("rule", "principal_groups", "principal_tenant")
} AS detail
    FROM (SELECT *, unnest(rules) AS rule FROM id_candidates WHERE array_length(rules) > 0)
)"""

SPAN_HITS = f"""
text_words AS (
    SELECT t.*, {_WORDS.format(col="t.hay")} AS words FROM texts t
),
text_spans AS (
    SELECT DISTINCT {_KEY}, principal_groups, principal_tenant, field, {_SPAN} AS span
    FROM (SELECT *, unnest(generate_series(1, array_length(words) - {SPAN_WORDS - 1})) AS i FROM text_words
          WHERE array_length(words) >= {SPAN_WORDS})
),
unit_words AS (
    SELECT {UNIT_COLUMNS}, {_WORDS.format(col="d.text")} AS words FROM documents d
    WHERE d.text IS NOT NULL AND EXISTS (SELECT 1 FROM text_words WHERE array_length(words) >= {SPAN_WORDS})
),
unit_spans AS (
    SELECT DISTINCT m_document_id, m_chunk_id, m_label, acl, tenant, {_SPAN} AS span
    FROM (SELECT *, unnest(generate_series(1, array_length(words) - {SPAN_WORDS - 1})) AS i FROM unit_words
          WHERE array_length(words) >= {SPAN_WORDS})
),
span_pairs AS (
    SELECT t.*, u.m_document_id, u.m_chunk_id, u.m_label, u.acl, u.tenant,
           {denials("t.principal_groups", "t.principal_tenant", "u.", "a.acl_required")} AS rules
    FROM text_spans t JOIN unit_spans u USING (span) {ACL_POLICY_JOIN}
),
span_seen AS (
    SELECT run_id, case_id, stage, rank, field, span, bool_or(array_length(rules) = 0) AS seen
    FROM span_pairs GROUP BY run_id, case_id, stage, rank, field, span
),
span_unseen AS (
    SELECT t.* FROM span_pairs t JOIN span_seen s USING (run_id, case_id, stage, rank, field, span)
    WHERE NOT s.seen AND array_length(t.rules) > 0 AND {_not_own("t.")}
),
span_hits AS (
    SELECT {_KEY}, field, m_label, rule,
           'quotes ' || count(DISTINCT span) || ' run(s) of {SPAN_WORDS} words of forbidden unit '
           || any_value({denial_detail("rule", "principal_groups", "principal_tenant")}) AS detail
    FROM (SELECT *, unnest(rules) AS rule FROM span_unseen)
    GROUP BY ALL
)"""

# Fragment ``reference_leaks``: rows shaped like the direct leaks.
REFERENCE_LEAKS = f"""
reference_leaks AS (
    SELECT {_KEY}, field || '-of-forbidden-unit' AS rule,
           string_agg(DISTINCT detail, '; ' ORDER BY detail) AS detail,
           list_sort(list_distinct(list(m_label))) AS forbidden_units
    FROM (SELECT * FROM id_hits UNION ALL SELECT * FROM span_hits)
    GROUP BY {_KEY}, field
)"""

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
UNCHECKED_SQL = f"""
SELECT c.case_id, 'no principal: leakage cannot be checked' AS reason, a.case_id IS NOT NULL AS has_results
FROM cases c LEFT JOIN (SELECT DISTINCT case_id FROM results WHERE run_id = $run_id) a USING (case_id)
WHERE NOT {HAS_PRINCIPAL}
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

DECLARED_SQL = f"""(EXISTS (SELECT 1 FROM cases WHERE {HAS_PRINCIPAL})
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
