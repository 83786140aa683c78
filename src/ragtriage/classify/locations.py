"""Where each labelled relevant unit of a case is, for one run: the evidence every classifier rule reads.

A relevant unit (qrels grade at or above the dataset's threshold) is, in this order of precedence:

``final-top-k``         in the run's final list within k (found);
``unpermitted``         the case's principal may not see it (by the leakage check's rules): never findable, and
                        no run's retrieval of it (a leak) is evidence;
``final-below-k``       in the final list below k;
``candidate``           only in the run's candidate stage;
``absent-from-corpus``  not in the loaded corpus manifest (and not returned by this run); never without a manifest
                        nor with one derived from trace metadata (partial: it proves presence, never absence);
``other-run``           not returned by this run, but returned by another loaded run for this case (any stage);
``absent-from-runs``    in no stage of any loaded run at any depth, for this case (in the manifest, or no
                        manifest is loaded).

Without a corpus manifest (no ``documents`` row) ``in_corpus`` and ``document_in_corpus`` are NULL (unknown), not
false: a missing manifest is not missing documents. With a manifest derived from trace metadata
(``store.corpus_manifest``) they are true for a unit it lists and NULL for any other.

Ranks are positions in the de-duplicated list (a unit's first occurrence, re-numbered 1..n), as the metrics
count them. ``indexed`` says whether any loaded run returned the unit for any case (so it is in the index even
when no run returns it for this case); without a corpus manifest it is NULL: nothing says what the index holds.
``permitted`` says whether the case's principal may see the unit (NULL: the case has no principal or the unit is
not in the snapshot), by the same rules as the leakage check.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pyarrow as pa

from ragtriage.checks.units import ACL_POLICY, HAS_PRINCIPAL, denials
from ragtriage.contract.relevance import CURRENT_THRESHOLD, labelled_units, relevant_labels
from ragtriage.store import run_k
from ragtriage.store.connection import plain_runs_sql
from ragtriage.store.corpus_manifest import COMPLETE_SQL
from ragtriage.store.dedup import deduplicated, numbering_tables, positions_within

LOCATIONS = (
    "final-top-k",
    "unpermitted",
    "final-below-k",
    "candidate",
    "absent-from-corpus",
    "other-run",
    "absent-from-runs",
)
_LOCATION_ORDER = "[" + ", ".join(f"'{x}'" for x in LOCATIONS) + "]"

# In the manifest: true when a manifest row lists it; false only when the manifest is complete (loaded with the
# dataset); unknown (NULL) without a manifest or with one derived from traces, which proves presence only.
_KNOWN = "CASE WHEN {row} IS NOT NULL THEN true WHEN m.complete THEN false END"

_IRREGULAR_ROWS = """SELECT run_id, case_id, stage, unit_id, document_id, chunk_id, rank, snippet
                     FROM results WHERE run_id NOT IN (SELECT run_id FROM plain_runs){case}"""


def numbering_rows(plain_runs: str) -> str:
    """SQL: the rows of the runs not plain (``plain_runs``: a table of the plain runs' ids), every position of
    which ``location_ctes(numbered=...)`` takes from a statement before it."""
    return _IRREGULAR_ROWS.format(case="").replace("FROM plain_runs", f"FROM {plain_runs}")


#: The rows of ``positions`` the CTEs read (``location_ctes(numbered=...)`` may hold these alone), a condition
#: over rows named ``numbered``: labelled units (``contract.relevance.labelled_units``: the labelled run, other
#: runs) and the run's final top k (the classifier's top lists). Parameters $run_id and $k.
READ_ROWS = f"""(numbered.run_id = $run_id AND numbered.stage = 'final' AND numbered.pos <= $k)
    OR EXISTS (SELECT 1 FROM ({labelled_units()}) q
               WHERE q.case_id = numbered.case_id AND q.unit_id = numbered.unit_id)"""

# the rows of the lists that need numbering (CTE ``irregular_lists``)
_IRREGULAR_LISTS_ROWS = f"SELECT * FROM ({_IRREGULAR_ROWS}) SEMI JOIN irregular_lists USING (run_id, case_id, stage)"


def relevant_ctes(where: str = "", materialized: str = "") -> str:
    """The CTEs ``threshold`` (the dataset's current one) and ``relevant`` (the labels relevant at it, by
    ``contract.relevance``), cut by ``where`` (a WHERE clause)."""
    return f"""
threshold AS (
    SELECT {CURRENT_THRESHOLD} AS t
),
relevant AS {materialized}(
    SELECT * FROM ({relevant_labels("(SELECT t FROM threshold)")}){where}
)"""


def corpus_sql(rows: str) -> str:
    """SQL: one row per unit of the manifest rows ``rows`` (a table name, optionally with a WHERE), its text the
    chunks' texts in manifest order."""
    return f"""SELECT unit_id, min(document_id) AS document_id, min(chunk_id) AS chunk_id,
           min(coalesce(section_id, document_id)) AS section,
           CASE WHEN count(DISTINCT chunk_kind) = 1 THEN any_value(chunk_kind) END AS chunk_kind,
           min(title) AS title, string_agg(text, ' ' ORDER BY position) AS text
    FROM {rows} GROUP BY unit_id"""


def location_ctes(
    *,
    one_case: bool = False,
    plain_runs: str | None = None,
    labelled_run: str | None = None,
    numbered: str | None = None,
) -> str:
    """The CTE bodies, parameterised by $run_id and $k; ``locations`` is the last one.

    ``one_case`` cuts every scan to the cases of the list ``$case_ids`` first (their labels, their lists in every
    run, their principals), so a few cases cost the same at any store size; ``indexed`` is then NULL (not
    looked up), because whether any run returned a unit for *any* case needs a pass over every result row.

    ``plain_runs`` and ``labelled_run`` name tables holding those CTEs' rows, computed by an earlier statement with
    the same parameters: the classifier's statements share them (``facts.fact_chunks``) instead of each reading
    every run's rows again for them.

    ``numbered``: SQL of the positions of the rows of the runs not plain (:func:`numbering_rows`, with ``pos``),
    numbered by earlier statements (``store.dedup.positions_within``, a chunk of cases at a time) instead of by
    windows over all their rows at once; it may hold only the rows the CTEs read (:data:`READ_ROWS`).
    """
    case = " AND case_id IN (SELECT unnest($case_ids::VARCHAR[]))" if one_case else ""
    where_case = " WHERE case_id IN (SELECT unnest($case_ids::VARCHAR[]))" if one_case else ""
    # a few cases: the few rows each CTE holds are computed once, not re-scanned wherever the CTE is named
    small = "MATERIALIZED " if one_case else ""
    if one_case:
        returned = "SELECT unit_id FROM relevant WHERE false"
        corpus_rows = "documents WHERE unit_id IN (SELECT unit_id FROM relevant)"
        indexed = "CAST(NULL AS BOOLEAN)"
    else:
        returned = "SELECT DISTINCT unit_id FROM results"
        corpus_rows = "documents"
        indexed = "CASE WHEN EXISTS (SELECT 1 FROM documents) THEN rt.unit_id IS NOT NULL END"
    plain_sql = f"SELECT run_id FROM {plain_runs}" if plain_runs else plain_runs_sql(where_case)
    labelled_sql = (
        f"SELECT * FROM {labelled_run}"
        if labelled_run
        else f"""
    SELECT case_id, unit_id, min(pos) FILTER (WHERE stage = 'final') AS final_rank,
           min(pos) FILTER (WHERE stage = 'candidate') AS candidate_rank
    FROM positions SEMI JOIN ({labelled_units()}{where_case}) USING (case_id, unit_id)
    WHERE run_id = $run_id GROUP BY case_id, unit_id"""
    )
    windowed, irregular_positions = _windowed(case) if numbered is None else ("", numbered)
    return f"""
manifest AS (
    SELECT {COMPLETE_SQL} AS complete
),{ACL_POLICY},
{relevant_ctes(where_case, small)},
label_ids AS {small}(
    SELECT case_id, unit_id, min(document_id) AS document_id, min(chunk_id) AS chunk_id,
           min(section_id) AS section_id
    FROM labels{where_case} GROUP BY case_id, unit_id
),
-- The runs numbered by rank (store.connection.plain_runs_sql); other runs are numbered by windows.
plain_runs AS ({plain_sql}
),
-- A repeat keeps its first occurrence and is not counted: positions are numbered after de-duplication, so a
-- list A, B, A, C puts C at 3, as metrics.ranking does. Even in those runs most lists are ranks 1..n of distinct
-- units (position = rank): only the others are numbered by windows, which hold every row they number in memory.
{windowed}
positions AS {"MATERIALIZED" if one_case else "NOT MATERIALIZED"} (
    SELECT run_id, case_id, stage, unit_id, document_id, chunk_id, rank, snippet, CAST(rank AS BIGINT) AS pos
    FROM results WHERE run_id IN (SELECT run_id FROM plain_runs){case}
    UNION ALL
    {irregular_positions}
),
-- Only labelled units' positions are ever needed, so the run's rows are cut to them before grouping.
labelled_run AS ({labelled_sql}
),
this_run AS (
    SELECT * FROM labelled_run SEMI JOIN relevant USING (case_id, unit_id)
),
other_runs AS (
    SELECT case_id, unit_id, min(pos) AS best_rank,
           first(run_id || ' (' || stage || ')' ORDER BY pos, run_id, stage) AS best_other
    FROM positions SEMI JOIN relevant USING (case_id, unit_id) WHERE run_id <> $run_id GROUP BY case_id, unit_id
),
returned AS (
    {returned}
),
corpus AS (
    {corpus_sql(corpus_rows)}
),
corpus_documents AS (
    SELECT DISTINCT document_id FROM documents
),
principals AS (
    SELECT case_id, principal_groups, principal_tenant FROM cases WHERE {HAS_PRINCIPAL}{case}
),
permission AS (
    SELECT r.case_id, r.unit_id,
           bool_and(len({denials("p.principal_groups", "p.principal_tenant", "d.")}) = 0) AS permitted
    FROM relevant r JOIN documents d USING (unit_id) JOIN principals p USING (case_id)
    GROUP BY r.case_id, r.unit_id
),
locations AS (
    SELECT r.case_id, r.unit_id, coalesce(c.document_id, l.document_id) AS document_id,
           coalesce(c.chunk_id, l.chunk_id) AS chunk_id, r.grade, t.final_rank, t.candidate_rank,
           {_KNOWN.format(row="c.unit_id")} AS in_corpus,
           CASE WHEN pm.permitted IS DISTINCT FROM false THEN o.best_rank END AS best_rank_other_runs,
           CASE WHEN t.final_rank <= $k THEN 'final-top-k'
                WHEN pm.permitted = false THEN 'unpermitted'
                WHEN t.final_rank IS NOT NULL THEN 'final-below-k'
                WHEN t.candidate_rank IS NOT NULL THEN 'candidate'
                WHEN m.complete AND c.unit_id IS NULL THEN 'absent-from-corpus'
                WHEN o.best_rank IS NOT NULL THEN 'other-run'
                ELSE 'absent-from-runs' END AS location,
           CASE WHEN pm.permitted IS DISTINCT FROM false THEN o.best_other END AS best_other_run,
           {_KNOWN.format(row="cd.document_id")} AS document_in_corpus, pm.permitted,
           c.chunk_kind, coalesce(c.section, l.section_id, l.document_id) AS section,
           {indexed} AS indexed, CAST($k AS INTEGER) AS k
    FROM relevant r
    LEFT JOIN label_ids l USING (case_id, unit_id)
    LEFT JOIN corpus c USING (unit_id)
    LEFT JOIN this_run t USING (case_id, unit_id)
    LEFT JOIN other_runs o USING (case_id, unit_id)
    LEFT JOIN corpus_documents cd ON cd.document_id = coalesce(c.document_id, l.document_id)
    LEFT JOIN permission pm USING (case_id, unit_id)
    LEFT JOIN returned rt USING (unit_id)
    CROSS JOIN manifest m
)"""


def _windowed(case: str) -> tuple[str, str]:
    """The CTEs numbering the lists of the runs not plain by windows over all their rows at once (fit for a few
    cases), and the positions of those runs' rows they give."""
    ctes = f"""irregular_lists AS MATERIALIZED (
    SELECT run_id, case_id, stage FROM ({_IRREGULAR_ROWS.format(case=case)})
    GROUP BY run_id, case_id, stage HAVING count(*) <> max(rank) OR count(DISTINCT unit_id) <> count(*)
),
irregular_positions AS MATERIALIZED (
    {deduplicated(_IRREGULAR_LISTS_ROWS.format(case=case), "run_id, case_id, stage")}
),"""
    positions = f"""SELECT *, CAST(rank AS BIGINT) AS pos
    FROM ({_IRREGULAR_ROWS.format(case=case)}) ANTI JOIN irregular_lists USING (run_id, case_id, stage)
    UNION ALL
    SELECT * FROM irregular_positions"""
    return ctes, positions


LOCATION_CTES = location_ctes()

# The runs numbered by rank, kept on a cursor by the statements that read every run's rows (the classifier's, the
# gate's case categories, every case's locations) ...
PLAIN_RUNS_TABLE = "_cls_plain_runs"
_PLAIN_RUNS_TABLE_SQL = (
    f"CREATE OR REPLACE TEMP TABLE {PLAIN_RUNS_TABLE} AS WITH {LOCATION_CTES} SELECT run_id FROM plain_runs"
)
# ... and the lists of the other runs that need numbering, numbered before the statements that read them, a chunk
# of cases at a time, over their key columns (``store.dedup.positions_within``): in a document-unit store loaded
# from chunks that is nearly every list, and windows over all their rows at once outgrow the memory cap. Only the
# rows the statements read are kept (:data:`READ_ROWS`).
_NUMBERED = "_cls_positions"
NUMBERED_TABLES = numbering_tables(_NUMBERED)


def numbered_positions(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> str:
    """Find the plain runs (``PLAIN_RUNS_TABLE``) and number the lists of the others that need it, into temp
    tables of ``cur`` (``PLAIN_RUNS_TABLE`` and ``NUMBERED_TABLES``); SQL of the positions of those runs' rows,
    for ``location_ctes(plain_runs=PLAIN_RUNS_TABLE, numbered=...)`` with the same parameters ($run_id, $k)."""
    cur.execute(_PLAIN_RUNS_TABLE_SQL, {"run_id": run_id, "k": k})
    return positions_within(
        cur,
        numbering_rows(PLAIN_RUNS_TABLE),
        {},
        "run_id, case_id, stage",
        None,
        keep=READ_ROWS,
        keep_params={"run_id": run_id, "k": k},
        name=_NUMBERED,
    )


_ORDER = f"""
SELECT * FROM locations
ORDER BY case_id, list_position({_LOCATION_ORDER}, location), final_rank NULLS LAST, unit_id
"""
_CASE_LOCATIONS_SQL = "WITH " + location_ctes(one_case=True) + _ORDER


def unit_locations(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    case_id: str | Sequence[str] | None = None,
    *,
    k: int | None = None,
) -> pa.Table:
    """One row per labelled relevant unit (of ``case_id``, a case or a list of cases, or every case): where
    ``run_id`` put it, at ``k``.

    ``k`` defaults to the run's own cutoff. Columns: case_id, unit_id, document_id, chunk_id, grade,
    final_rank, candidate_rank, in_corpus, best_rank_other_runs, location, then best_other_run,
    document_in_corpus, permitted, chunk_kind, section, indexed and k. With ``case_id`` only those cases' rows are
    read (milliseconds at any store size) and ``indexed`` is NULL (see :func:`location_ctes`).
    """
    cutoff = run_k(con, run_id) if k is None else int(k)
    cur = con.cursor()  # the numbered positions' temp tables go with it
    try:
        if case_id is None:
            # every case: the lists that need numbering numbered a chunk of cases at a time first, as the
            # classifier does, not by windows over every row of the runs at once
            ctes = location_ctes(plain_runs=PLAIN_RUNS_TABLE, numbered=numbered_positions(cur, run_id, cutoff))
            return cur.sql("WITH " + ctes + _ORDER, params={"run_id": run_id, "k": cutoff}).to_arrow_table()
        cases = [case_id] if isinstance(case_id, str) else list(case_id)
        params = {"run_id": run_id, "k": cutoff, "case_ids": cases}
        return cur.sql(_CASE_LOCATIONS_SQL, params=params).to_arrow_table()
    finally:
        cur.close()
