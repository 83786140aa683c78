"""How a result row stands for corpus units, and who may see a unit: the SQL every check is built from.

A result row names its unit by ``chunk_id`` when it has one that the manifest knows; otherwise by
``document_id``, and then it stands for *every* manifest row of that document (in document mode a document is
several chunk rows). The rule is strict: a row that stands for several manifest rows may be seen only when the
principal may see all of them, because nothing tells which chunk the retriever actually served.

The fragments are CTE bodies joined into one ``WITH`` query per check, parameterised by ``$run_id``, so a check
is one set-based DuckDB statement over the store.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.store import require_run

STAGE_ORDER = ("final", "candidate")
"""The order in which every check lists rows of a stage: what the user was shown (the final list) before what
only the candidate stage saw. ``check``, the gate and the TUI all list leaks in this order."""


def stage_order(column: str = "stage") -> str:
    """SQL sort key of a stage column in ``STAGE_ORDER`` (1 for final, 2 for candidate)."""
    return f"list_position({list(STAGE_ORDER)!r}, CAST({column} AS VARCHAR))"


# Manifest attributes a check may compare; the alias ``d`` is the documents table.
UNIT_COLUMNS = (
    "d.document_id AS m_document_id, d.chunk_id AS m_chunk_id, d.unit_id AS m_unit_id, "
    "coalesce(d.chunk_id, d.document_id) AS m_label, d.title, d.acl, d.tenant, d.language, d.region, d.product, "
    "d.doc_type, d.source_system, d.chunk_kind, d.status, d.version, d.effective_from, d.effective_to"
)


# The dataset's acl policy, one row (``ACL_REQUIRED`` reads it).
ACL_POLICY = """
acl_policy AS (
    SELECT coalesce(bool_or(acl_required), false) AS acl_required FROM current_dataset
)"""


def run_results(cut: str = "") -> str:
    """The ``run_results`` fragment: the run's result rows, cut by ``cut`` (a join clause on ``r``, such as
    ``SEMI JOIN principals p USING (case_id)``) before anything else reads them.

    Most checks concern few cases (those with a principal, a filter, a negative expectation) or few units (those
    that can be stale): cutting first lets DuckDB skip the rest of a large run, and skip it entirely when the
    cut is empty. The fragment is ``NOT MATERIALIZED``: it is read more than once (``by_document``, ``matched``)
    and scanning the rows again costs far less than DuckDB's default of copying every column of every row.
    """
    return f"""
run_results AS NOT MATERIALIZED (
    SELECT r.run_id, r.case_id, r.stage, r.rank, r.document_id, r.chunk_id, r.unit_id, r.score, r.snippet,
           CAST(r.metadata AS VARCHAR) AS metadata_text
    FROM results r {cut} WHERE r.run_id = $run_id
),{ACL_POLICY}"""


RUN_RESULTS = run_results()

MATCHED = f"""
by_document AS NOT MATERIALIZED (
    SELECT r.* FROM run_results r ANTI JOIN documents d ON d.chunk_id = r.chunk_id
),
matched AS (
    SELECT r.*, {UNIT_COLUMNS} FROM run_results r JOIN documents d ON d.chunk_id = r.chunk_id
    UNION ALL
    SELECT r.*, {UNIT_COLUMNS} FROM by_document r JOIN documents d ON d.document_id = r.document_id
),
unknown_units AS (
    SELECT r.* FROM by_document r ANTI JOIN documents d ON d.document_id = r.document_id
)"""

HAS_PRINCIPAL = "(principal_id IS NOT NULL OR principal_groups IS NOT NULL OR principal_tenant IS NOT NULL)"
"""SQL over ``cases``: the case has a principal (any part of one is recorded; one with no groups sees no acl'd
unit). Only such a case can leak, or be checked."""

PRINCIPALS = f"""
principals AS (
    SELECT case_id, principal_id, principal_groups, principal_tenant FROM cases WHERE {HAS_PRINCIPAL}
)"""


ACL_REQUIRED = "(SELECT acl_required FROM acl_policy)"
"""Whether the dataset requires acls, as a scalar subquery of the ``acl_policy`` fragment."""

ACL_POLICY_JOIN = "CROSS JOIN acl_policy a"
"""The one-row ``acl_policy`` joined in, for :func:`denials` with ``acl_required="a.acl_required"``: Spark allows
no subquery inside the list filter that :func:`denials` writes, so the checks rendered for Spark use the column."""


def denials(groups: str, tenant: str, unit: str = "", acl_required: str = ACL_REQUIRED) -> str:
    """SQL list of the rules a principal (``groups``, ``tenant`` expressions) breaks by seeing one manifest row.

    ``unit`` prefixes the manifest columns (``acl``, ``tenant``); ``acl_required`` is the dataset's acl policy
    (``ACL_REQUIRED``, or ``a.acl_required`` beside ``ACL_POLICY_JOIN``). An empty list means the row may be seen.
    A NULL acl is "no acl recorded" (a leak only where the dataset requires acls); an empty acl list admits
    nobody. Tenants are compared only when both sides name one.
    """
    return f"""list_filter([
        CASE WHEN {unit}tenant IS NOT NULL AND {tenant} IS NOT NULL AND {unit}tenant <> {tenant}
             THEN 'tenant-mismatch' END,
        CASE WHEN {unit}acl IS NULL
                  THEN CASE WHEN {acl_required} THEN 'acl-missing' END
             WHEN NOT coalesce(list_has_any({unit}acl, {groups}), false) THEN 'acl-no-overlap' END
    ], lambda x: x IS NOT NULL)"""


def denial_detail(rule: str, groups: str, tenant: str, unit: str = "") -> str:
    """SQL text explaining why ``rule`` denies a manifest row, naming the row and the values compared."""
    return f"""{unit}m_label || ': ' || CASE {rule}
        WHEN 'tenant-mismatch' THEN 'unit tenant ' || {unit}tenant || ', principal tenant ' || {tenant}
        WHEN 'acl-missing' THEN 'unit has no acl and the dataset requires one'
        ELSE 'unit acl [' || array_to_string({unit}acl, ', ') || '], principal groups ['
             || coalesce(array_to_string({groups}, ', '), '') || ']' END"""


def with_query(*ctes: str) -> str:
    """Join CTE bodies into the ``WITH`` clause of one statement."""
    return "WITH " + ",".join(ctes) + "\n"


def run_query(con: duckdb.DuckDBPyConnection, run_id: str, sql: str) -> pa.Table:
    """Run one check statement for ``run_id`` (which must be loaded) and return its rows as Arrow."""
    require_run(con, run_id)
    return con.sql(sql, params={"run_id": run_id}).to_arrow_table()
