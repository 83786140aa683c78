"""Filter scope: results outside the filters a case asked for, and the with/without optional-filter pair.

A case's filters come from its ``filters`` object (the ``filter_*`` columns when the object is absent). Each key
that names a manifest attribute (``SCOPE_ATTRIBUTES``) must hold for every manifest unit a result row stands for:
values compare case-insensitively, a list value means "any of these", and a unit that lacks the attribute is out
of scope (a store filter ``region = 'EU'`` does not return rows without a region). ``effective_on`` requires
``effective_from <= date <= effective_to`` (both bounds inclusive, as manifests write a version ending
2023-12-31 and its successor starting 2024-01-01; a missing bound is open). Keys naming no attribute are
listed by ``unchecked_filters``, not silently passed.

Optional-filter pair: two cases with the same query text (trimmed, lower-cased, whitespace collapsed) where one's
filters are a strict superset of the other's. A missing optional filter never broadens access, so every result
of the case *without* the filter must be visible to the principal of the case *with* it (that case's principal,
else the other's; its tenant falls back to the filtered case's tenant filter). Breaches are listed among the
scope violations with rule ``optional-filter-broadened`` and fail ``check`` like leakage.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.checks.units import (
    MATCHED,
    PRINCIPALS,
    denial_detail,
    denials,
    run_query,
    run_results,
    stage_order,
    with_query,
)

SCOPE_ATTRIBUTES = (
    "tenant",
    "language",
    "region",
    "product",
    "doc_type",
    "source_system",
    "chunk_kind",
    "version",
    "status",
)
_FILTER_COLUMNS = ("tenant", "language", "region", "product", "doc_type", "effective_on")
_ATTR_LIST = ", ".join(f"'{a}'" for a in SCOPE_ATTRIBUTES)
_ACTUAL = "CASE f.filter " + " ".join(f"WHEN '{a}' THEN m.{a}" for a in SCOPE_ATTRIBUTES) + " END"
_NORM = "lower(trim({}))"

FILTERS = f"""
filter_entries AS (
    SELECT c.case_id, lower(j.key) AS filter,
           CASE WHEN j.type = 'ARRAY' THEN CAST(j.value AS VARCHAR[]) ELSE [j.value ->> '$'] END AS allowed
    FROM cases c, json_each(c.filters) j
    WHERE c.filters IS NOT NULL AND j.type <> 'NULL'
    UNION ALL
    SELECT case_id, filter, [value] AS allowed FROM (
        UNPIVOT (SELECT case_id, {", ".join(f"CAST(filter_{k} AS VARCHAR) AS {k}" for k in _FILTER_COLUMNS)}
                 FROM cases WHERE filters IS NULL)
        ON {", ".join(_FILTER_COLUMNS)} INTO NAME filter VALUE value)
)"""

_SCOPE = f"""
attribute_misses AS (
    SELECT m.*, f.filter, array_to_string(f.allowed, '|') AS expected, coalesce({_ACTUAL}, '(none)') AS actual
    FROM matched m JOIN filter_entries f USING (case_id)
    WHERE f.filter IN ({_ATTR_LIST})
      AND NOT coalesce(list_contains(list_transform(f.allowed, lambda a: {_NORM.format("a")}),
                                     {_NORM.format(_ACTUAL)}), false)
),
date_misses AS (
    SELECT m.*, f.filter, f.allowed[1] AS expected,
           'effective ' || coalesce(CAST(m.effective_from AS VARCHAR), '…') || ' to '
           || coalesce(CAST(m.effective_to AS VARCHAR), '…') AS actual
    FROM matched m JOIN filter_entries f USING (case_id)
    WHERE f.filter = 'effective_on'
      AND (m.effective_from > try_cast(f.allowed[1] AS DATE) OR m.effective_to < try_cast(f.allowed[1] AS DATE))
),
filter_violations AS (
    SELECT run_id, case_id, stage, rank, document_id, chunk_id, filter, expected,
           string_agg(DISTINCT actual, ', ' ORDER BY actual) AS actual, 'out-of-scope' AS rule,
           string_agg(DISTINCT m_label || ': ' || filter || ' ' || actual, '; ' ORDER BY m_label || ': ' || filter
                      || ' ' || actual) AS detail
    FROM (SELECT * FROM attribute_misses UNION ALL BY NAME SELECT * FROM date_misses)
    GROUP BY run_id, case_id, stage, rank, document_id, chunk_id, filter, expected
)"""

PAIRS = r"""
filter_sets AS (
    SELECT c.case_id, c.query, lower(regexp_replace(trim(c.query), '\s+', ' ', 'g')) AS query_key,
           coalesce(list_sort(list(f.filter || '=' || array_to_string(list_sort(f.allowed), '|'))
                              FILTER (WHERE f.filter IS NOT NULL)), []) AS filter_set
    FROM cases c LEFT JOIN filter_entries f USING (case_id)
    WHERE EXISTS (SELECT 1 FROM filter_entries)  -- no filter anywhere: no pair, and no query text is normalised
    GROUP BY c.case_id, c.query
),
pairs AS (
    SELECT a.case_id AS with_case, b.case_id AS without_case, a.query,
           list_filter(a.filter_set, lambda x: NOT list_contains(b.filter_set, x)) AS optional_filters,
           coalesce(pa.principal_id, pb.principal_id) AS principal_id,
           pa.case_id IS NOT NULL OR pb.case_id IS NOT NULL AS checked,
           CASE WHEN pa.case_id IS NOT NULL THEN pa.principal_groups ELSE pb.principal_groups END AS pair_groups,
           coalesce(CASE WHEN pa.case_id IS NOT NULL THEN pa.principal_tenant ELSE pb.principal_tenant END,
                    ca.filter_tenant) AS pair_tenant
    FROM (SELECT * FROM filter_sets WHERE len(filter_set) > 0) a
    JOIN filter_sets b ON a.query_key = b.query_key AND a.case_id <> b.case_id
    JOIN cases ca ON ca.case_id = a.case_id
    LEFT JOIN principals pa ON pa.case_id = a.case_id
    LEFT JOIN principals pb ON pb.case_id = b.case_id
    WHERE list_has_all(a.filter_set, b.filter_set) AND len(a.filter_set) > len(b.filter_set)
)"""

# ordered, so that a row breaking two rules reads the same on every run
_PAIR_DETAIL = denial_detail("rule", "pair_groups", "pair_tenant")

PAIR_VIOLATIONS = f"""
pair_denied AS (
    SELECT m.*, p.with_case, p.optional_filters, p.principal_id, p.pair_groups, p.pair_tenant,
           {denials("p.pair_groups", "p.pair_tenant", "m.")} AS rules
    FROM matched m JOIN pairs p ON p.without_case = m.case_id
    WHERE p.checked
),
pair_violations AS (
    SELECT run_id, case_id, stage, rank, document_id, chunk_id,
           'optional:' || array_to_string(optional_filters, ',') AS filter,
           'only units principal ' || coalesce(principal_id, '?') || ' of case ' || with_case || ' may see'
               AS expected,
           string_agg(DISTINCT rule, ', ' ORDER BY rule) AS actual, 'optional-filter-broadened' AS rule,
           string_agg(DISTINCT {_PAIR_DETAIL}, '; ' ORDER BY {_PAIR_DETAIL}) AS detail
    FROM (SELECT *, unnest(rules) AS rule FROM pair_denied WHERE len(rules) > 0)
    GROUP BY run_id, case_id, stage, rank, document_id, chunk_id, optional_filters, principal_id, with_case
)"""

# Only the rows of cases with a checkable filter, or on the unfiltered side of a checked pair, are matched.
_SCOPED_CASES = f"""
scoped_cases AS (
    SELECT case_id FROM filter_entries WHERE filter IN ({_ATTR_LIST}, 'effective_on')
    UNION
    SELECT without_case FROM pairs WHERE checked
)"""
SCOPE_CUT = "SEMI JOIN scoped_cases s USING (case_id)"
PAIR_CUT = "SEMI JOIN (SELECT without_case AS case_id FROM pairs WHERE checked) s USING (case_id)"

_SCOPE_SQL = (
    with_query(
        PRINCIPALS,
        FILTERS,
        PAIRS,
        _SCOPED_CASES,
        run_results(SCOPE_CUT),
        MATCHED,
        _SCOPE,
        PAIR_VIOLATIONS,
    )
    + f"""
SELECT run_id, case_id, stage, rank, document_id, chunk_id, filter, expected, actual, rule, detail
FROM (SELECT * FROM filter_violations UNION ALL SELECT * FROM pair_violations)
ORDER BY {stage_order("stage")}, case_id, rank, filter
"""
)


def scope_violations(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Result rows (any stage) outside their case's filters, and optional-filter-pair breaches.

    One row per (result row, filter); ``rule`` is ``out-of-scope`` or ``optional-filter-broadened``.
    """
    return run_query(con, run_id, _SCOPE_SQL)


_PAIRS_SQL = (
    with_query(PRINCIPALS, FILTERS, PAIRS, run_results(PAIR_CUT), MATCHED, PAIR_VIOLATIONS)
    + """
SELECT p.with_case, p.without_case, p.query, p.optional_filters, p.principal_id, p.checked,
       count(v.rank) AS n_violations, bool_and(p.checked) AND count(v.rank) = 0 AS passed
FROM pairs p LEFT JOIN pair_violations v ON v.case_id = p.without_case
    AND v.filter = 'optional:' || array_to_string(p.optional_filters, ',')
GROUP BY p.with_case, p.without_case, p.query, p.optional_filters, p.principal_id, p.checked
ORDER BY p.with_case, p.without_case
"""
)


def filter_pairs(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Every with/without optional-filter pair of the dataset, and whether ``run_id`` kept access unbroadened.

    ``checked`` is false when neither case has a principal: such a pair cannot pass.
    """
    return run_query(con, run_id, _PAIRS_SQL)


_UNCHECKED_FILTERS_SQL = (
    with_query(FILTERS)
    + f"""
SELECT case_id, filter, array_to_string(allowed, '|') AS value,
       'no manifest attribute of this name: the filter cannot be checked' AS reason
FROM filter_entries WHERE filter NOT IN ({_ATTR_LIST}, 'effective_on')
UNION ALL
SELECT case_id, filter, allowed[1], 'not a date: the filter cannot be checked'
FROM filter_entries WHERE filter = 'effective_on' AND try_cast(allowed[1] AS DATE) IS NULL
ORDER BY case_id, filter
"""
)


def unchecked_filters(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """Filter keys the scope check cannot judge (no such manifest attribute, or an unreadable date)."""
    return con.sql(_UNCHECKED_FILTERS_SQL).to_arrow_table()
