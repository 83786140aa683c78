"""The facts of every failure of one run at one cutoff: one row per (case, failure), one column per signal.

This is the only place failures are found. The rules and patterns (``rules.py``) are SQL predicates over these
rows, so adding a rule never means re-reading the store. The checks layer's findings (leakage, negative
outcomes, stale-first, version pairs) arrive as Arrow tables registered under the ``_cls_*`` names below;
everything else is computed here from the store, in one statement.

Failures:

* ``no-relevant-in-top-k`` — an answerable case with no relevant unit in the final top k (also when it has no
  relevant label at all);
* ``recall-below-bar`` — an answerable case with some but not enough relevant units in the top k: R@k under the
  dataset's bar (``recall_bar`` in dataset.json; default 1.0, i.e. any relevant unit missing);
* ``negative-not-abstained`` — a negative case that failed its expected behaviour (``checks.negative_outcomes``);
* ``stale-first`` — a stale version ranks above an in-force one within the final top k (``checks.stale_first``);
* ``leakage`` — any leaked result row, any stage (``checks.leakage``); category ``security``, always apart.

How (:func:`fact_chunks`). A few statements read the run's rows once and keep on the cursor what the facts need:
which runs are numbered by rank, the positions of the other runs' lists that need numbering (numbered a chunk of
cases at a time, ``store.dedup.positions_within``, keeping the rows the statements read alone), the run's labelled
units at their positions (``_cls_plain_runs``, ``_cls_labelled``, read by the next statements and by the cost's
mean), where every relevant unit is (``_cls_locations``, one row per labelled relevant unit) and the final top k
of the cases that fail or show a stale version first (``_cls_top``). The
facts are then computed by case-id range, a chunk of cases per statement, from those tables. Every fact is a fact of
one case, so the chunks' rows are the rows one statement over every case gives, in the same order. What a chunk
costs in memory is its own cases' lists: one statement over every failing case would hold the list aggregates
and join tables of every case at once, and the classification of the rows and their costs (per case too) each as
much again.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterator
from contextlib import contextmanager, suppress

import duckdb
import pyarrow as pa

from ragtriage.checks.negatives import RUN_THRESHOLD, run_events
from ragtriage.classify.locations import (
    NUMBERED_TABLES,
    PLAIN_RUNS_TABLE,
    corpus_sql,
    location_ctes,
    numbered_positions,
    relevant_ctes,
)
from ragtriage.classify.rules import (
    CROWD_MIN,
    DEFAULT_RECALL_BAR,
    HAS_QUERY_TEXT,
    MISSING_ANY_RUN,
    NEAR_DUP_JACCARD,
    NEAR_DUP_MIN_TOKENS,
    NOT_RETRIEVED,
    UNJUDGED_TOP,
)
from ragtriage.contract.relevance import is_relevant, judged_units
from ragtriage.store.run_rules import has_run_json

# Checks-layer tables the statement reads (registered by the caller).
LEAKS, NEGATIVES, STALE_FIRST, VERSION_PAIRS = "_cls_leaks", "_cls_negatives", "_cls_stale_first", "_cls_versions"
# What fact_chunks keeps on the cursor between its statements (temp tables, dropped when it is done).
LOCATIONS_TABLE, TOP_TABLE, CORPUS_TABLE = "_cls_locations", "_cls_top", "_cls_corpus"
# ... and the two CTEs of ``locations.location_ctes`` that read every run's rows, kept for the statements after
# them: the runs numbered by rank (``locations.PLAIN_RUNS_TABLE``, with the numbered positions of the others:
# ``locations.numbered_positions``), and the run's labelled units at their positions (``cost.CostTally`` reads it
# too)
LABELLED_TABLE = "_cls_labelled"

# Rows of the kept tables per chunk: bounds what one statement holds, whatever the size of the run.
CHUNK_ROWS = 750_000

# Leaked rows listed in the evidence (final stage first); the counts cover all of them.
LEAKS_SHOWN = 20

# Tokens that look like identifiers: letters and digits, hyphen-joined parts allowed, both kinds present.
_TOKEN = r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*"
_ID_FILTER = "lambda t: len(t) >= 4 AND regexp_matches(t, '[0-9]') AND regexp_matches(t, '[A-Za-z]')"

# The run's configuration as the advice reads it (``rules.Advice``): one row, joined to every failure. Retrieval
# is "hybrid" when run.json names an embedding model and a lexical retriever (system.bm25, or a retriever or
# description naming bm25/lexical/keyword/sparse), "dense" or "lexical" when only one, "unknown" otherwise.
_LEXICAL = "bm25|lexical|keyword|sparse|splade"
RUN_CONFIG_CTE = f"""
run_config AS (
    SELECT {has_run_json("cfg")} AS cfg_has_run_json, reranker AS cfg_reranker,
           coalesce(lower(trim(reranker)) NOT IN ('', 'none', 'null', 'false', 'no'), false) AS has_reranker,
           k AS cfg_k, candidate_k AS cfg_candidate_k,
           CASE WHEN dense AND lexical THEN 'hybrid' WHEN dense THEN 'dense' WHEN lexical THEN 'lexical'
                ELSE 'unknown' END AS cfg_retrieval,
           'embedding_model: ' || coalesce(embedding_model, 'null') || ', system.retriever: '
               || coalesce(json_extract_string(system, '$.retriever'), 'not stated') AS cfg_retrieval_basis,
           TRY_CAST(json_extract_string(filters_applied, '$.acl') AS BOOLEAN) AS cfg_filter_acl,
           TRY_CAST(json_extract_string(filters_applied, '$.tenant') AS BOOLEAN) AS cfg_filter_tenant,
           TRY_CAST(json_extract_string(filters_applied, '$.effective_on') AS BOOLEAN) AS cfg_filter_effective_on
    FROM (SELECT *,
                 coalesce(lower(trim(embedding_model)) NOT IN ('', 'none', 'null'), false) AS dense,
                 coalesce(json_extract_string(system, '$.bm25') IS NOT NULL, false)
                 OR regexp_matches(lower(coalesce(json_extract_string(system, '$.retriever'), '') || ' '
                                         || coalesce(json_extract_string(system, '$.description'), '')),
                                   '{_LEXICAL}') AS lexical
          FROM runs WHERE run_id = $run_id) cfg
)"""


def in_chunk(case_id: str) -> str:
    """SQL: the case id ``case_id`` is in the chunk from parameter $lo (inclusive) to $hi (exclusive), either of
    them NULL for an open end."""
    return (
        f"((CAST($lo AS VARCHAR) IS NULL OR {case_id} >= CAST($lo AS VARCHAR)) "
        f"AND (CAST($hi AS VARCHAR) IS NULL OR {case_id} < CAST($hi AS VARCHAR)))"
    )


_BAR_CTE = f"""
bar AS (
    SELECT coalesce(try_cast(json_extract_string(any_value(manifest), '$.recall_bar') AS DOUBLE),
                    {DEFAULT_RECALL_BAR}) AS bar
    FROM current_dataset
)"""

# A case's relevant units and those found in its top k (over its ``locations`` rows ``l``); it fails when none is
# found, or fewer than the bar's share of them.
_COUNTS = "count(l.unit_id) AS n_relevant, count(l.unit_id) FILTER (WHERE l.location = 'final-top-k') AS n_found"
_FAILING = "n_relevant = 0 OR n_found < (SELECT bar FROM bar) * n_relevant"

_STALE_CASES_CTE = f"""
stale_cases AS (
    SELECT case_id, first(detail ORDER BY stale_rank, family) AS stale_detail
    FROM {STALE_FIRST} WHERE stage = 'final' AND stale_rank <= $k AND {in_chunk("case_id")} GROUP BY case_id
)"""


# The final top k of the cases whose top k the facts read: failing answerable cases and stale-first lists. Cutting
# the run's rows to them (and to pos <= k) before any join or aggregate keeps the work proportional to the
# failing cases.
_TOP_TABLE_SQL = f"""CREATE OR REPLACE TEMP TABLE {TOP_TABLE} AS
WITH {{kept}},{_BAR_CTE},{_STALE_CASES_CTE},
counts AS (
    SELECT a.case_id, {_COUNTS}
    FROM cases a LEFT JOIN {LOCATIONS_TABLE} l USING (case_id) WHERE a.answerable GROUP BY a.case_id
),
focus AS (
    SELECT case_id FROM counts WHERE {_FAILING} UNION SELECT case_id FROM stale_cases
)
SELECT case_id, pos, unit_id, document_id, snippet FROM positions
WHERE run_id = $run_id AND stage = 'final' AND pos <= $k AND case_id IN (SELECT case_id FROM focus)"""

# The manifest's units among those top lists (the facts read their text, headings and sections).
_CORPUS_TABLE_SQL = f"CREATE OR REPLACE TEMP TABLE {CORPUS_TABLE} AS " + corpus_sql(
    f"documents WHERE unit_id IN (SELECT unit_id FROM {TOP_TABLE})"
)

# A chunk's own rows of every source, under the names the facts read.
_CHUNK_SOURCES = f"""{relevant_ctes(" WHERE " + in_chunk("case_id"))},
locations AS (
    SELECT * FROM {LOCATIONS_TABLE} WHERE {in_chunk("case_id")}
),
final_top AS (
    SELECT * FROM {TOP_TABLE} WHERE {in_chunk("case_id")}
),
corpus AS (
    SELECT * FROM {CORPUS_TABLE}
)"""

# An answerable case the run abstained on, by the run's own signals (the negative cases' definitions,
# ``checks.negatives``): an event saying insufficient evidence, an empty final list its event shows is no outage,
# or a top score below the calibrated threshold. A case without an event is not known to have abstained: a TREC
# run that lacks a topic says nothing about why.
_ABSTENTION_CTES = f"""{run_events(" AND " + in_chunk("case_id"))},
run_threshold AS (
    SELECT {RUN_THRESHOLD} AS threshold
),
-- read only where an abstention can be known: a calibrated threshold, or the run's events for the case
top_scores AS (
    SELECT case_id, max(score) AS top_score, count(*) AS n_results FROM results
    WHERE run_id = $run_id AND stage = 'final' AND {in_chunk("case_id")}
      AND ((SELECT threshold FROM run_threshold) IS NOT NULL OR case_id IN (SELECT case_id FROM run_events))
    GROUP BY case_id
),
abstained AS (
    SELECT a.case_id, ts.top_score, (SELECT threshold FROM run_threshold) AS threshold,
           coalesce(ts.n_results, 0) AS n_results,
           CASE WHEN e.insufficient THEN 'insufficient evidence'
                WHEN e.case_id IS NOT NULL AND NOT (e.timed_out OR e.errored) AND ts.case_id IS NULL THEN 'empty list'
                WHEN ts.top_score < (SELECT threshold FROM run_threshold) THEN 'below threshold' END AS how
    FROM answerable a LEFT JOIN run_events e USING (case_id) LEFT JOIN top_scores ts USING (case_id)
)"""

_ANSWERABLE_CTES = f"""{_BAR_CTE},
answerable AS (
    SELECT case_id, query, query_type, tags FROM cases WHERE answerable AND {in_chunk("case_id")}
),
per_case AS (
    SELECT a.case_id, {_COUNTS},
           coalesce(list_sort(list(struct_pack(unit_id := l.unit_id, document_id := l.document_id, grade := l.grade,
                                     location := l.location, final_rank := l.final_rank,
                                     candidate_rank := l.candidate_rank,
                                     best_rank_other_runs := l.best_rank_other_runs,
                                     best_other_run := l.best_other_run, in_corpus := l.in_corpus,
                                     document_in_corpus := l.document_in_corpus, permitted := l.permitted,
                                     chunk_kind := l.chunk_kind, section := l.section,
                                     indexed := l.indexed))
                        FILTER (WHERE l.location <> 'final-top-k')), []) AS missing
    FROM answerable a LEFT JOIN locations l USING (case_id) GROUP BY a.case_id
),{_STALE_CASES_CTE},
top_lists AS (
    SELECT case_id, count(*) AS n_top, count(*) FILTER (WHERE pos <= {UNJUDGED_TOP}) AS n_head,
           list(struct_pack(pos := pos, unit_id := unit_id)) AS top, min(document_id) AS first_document
    FROM final_top GROUP BY case_id
),
-- Units are distinct within a list after de-duplication: a judged unit in the top k is one row of final_top.
-- Judged as contract.relevance says (grade >= 0): a negative grade is in the pool, unjudged.
top_judged AS (
    SELECT case_id, count(*) AS n_judged, count(*) FILTER (WHERE pos <= {UNJUDGED_TOP}) AS n_head_judged
    FROM final_top SEMI JOIN ({judged_units()}) USING (case_id, unit_id) GROUP BY case_id
),
-- list(... ORDER BY pos) sorts every list; the lists mostly arrive in order, so sort only those that do not.
top_agg AS (
    SELECT t.* EXCLUDE (top), coalesce(j.n_judged, 0) AS n_judged, coalesce(j.n_head_judged, 0) AS n_head_judged,
           list_transform(CASE WHEN list_transform(t.top, lambda x: x.pos)
                                    = list_sort(list_transform(t.top, lambda x: x.pos))
                               THEN t.top ELSE list_sort(t.top) END, lambda x: x.unit_id) AS top_units
    FROM top_lists t LEFT JOIN top_judged j USING (case_id)
),
-- A document repeats in a list only when several units stand for it (units are distinct after de-duplication):
-- rows are counted per (case, document) for those documents alone; every other case has count 1, and the
-- tie-break (the smallest document id) is then its smallest document.
multi_unit_documents AS (
    SELECT document_id FROM final_top
    GROUP BY document_id HAVING min(unit_id) <> max(unit_id) OR count(unit_id) < count(*)
),
repeated_documents AS (
    SELECT case_id, max(n) AS n, arg_min(document_id, struct_pack(a := -n, b := document_id)) AS document_id
    FROM (SELECT f.case_id, f.document_id, count(*) AS n
          FROM final_top f JOIN multi_unit_documents m USING (document_id)
          GROUP BY f.case_id, f.document_id HAVING count(*) > 1)
    GROUP BY case_id
),
crowd AS (
    SELECT t.case_id, coalesce(r.document_id, t.first_document) AS document_id, coalesce(r.n, 1) AS n
    FROM top_agg t LEFT JOIN repeated_documents r USING (case_id)
),
-- Whether a disputed unit is in the top k is read from top_units (a handful of units, no second scan).
disputed AS (
    SELECT q.case_id, list(q.unit_id ORDER BY q.unit_id) AS disputed
    FROM qrels q LEFT JOIN top_agg t USING (case_id)
    WHERE q.max_grade - q.min_grade >= 2 AND {in_chunk("q.case_id")}
      AND {is_relevant("q.grade", "(SELECT t FROM threshold)")}
          = NOT coalesce(list_contains(t.top_units, q.unit_id), false)
    GROUP BY q.case_id
),
heading_hits AS (
    SELECT f.case_id, list(DISTINCT f.unit_id ORDER BY f.unit_id) AS heading_hits
    FROM final_top f JOIN corpus c USING (unit_id)
    JOIN locations l ON l.case_id = f.case_id AND l.section = coalesce(c.section, f.document_id)
    WHERE c.chunk_kind = 'heading' AND l.location <> 'final-top-k' AND coalesce(l.chunk_kind, '') <> 'heading'
    GROUP BY f.case_id
),
-- Only a query's text can hold an identifier: a case loaded without topics shows its id as its query.
identifiers AS (
    SELECT case_id, unnest(list_distinct(list_filter(regexp_extract_all(query, '{_TOKEN}'), {_ID_FILTER})))
           AS ident
    FROM answerable WHERE {HAS_QUERY_TEXT}
),
identifier_top AS (
    SELECT f.case_id, lower(concat_ws(' ', c.title, c.text, f.snippet)) AS haystack
    FROM final_top f LEFT JOIN corpus c USING (unit_id) WHERE f.case_id IN (SELECT case_id FROM identifiers)
),
identifiers_missed AS (
    SELECT i.case_id, list(i.ident ORDER BY i.ident) AS identifiers_missed
    FROM identifiers i
    WHERE NOT EXISTS (SELECT 1 FROM identifier_top f
                      WHERE f.case_id = i.case_id AND contains(f.haystack, lower(i.ident)))
    GROUP BY i.case_id
),
-- Rows with neither corpus text nor snippet have no tokens and can never be near-duplicates.
tokens AS (
    SELECT f.case_id, f.unit_id, f.pos,
           list_distinct(list_filter(regexp_split_to_array(lower(coalesce(c.text, f.snippet, '')), '[^[:alnum:]]+'),
                                     lambda t: t <> ''))
           AS toks
    FROM final_top f LEFT JOIN corpus c USING (unit_id) WHERE c.text IS NOT NULL OR f.snippet IS NOT NULL
),
duplicate_pairs AS (
    SELECT a.case_id, list([a.unit_id, b.unit_id] ORDER BY a.pos, b.pos) AS duplicate_pairs
    FROM tokens a JOIN tokens b ON a.case_id = b.case_id AND a.pos < b.pos
    WHERE len(a.toks) >= {NEAR_DUP_MIN_TOKENS} AND len(b.toks) >= {NEAR_DUP_MIN_TOKENS}
      AND len(list_intersect(a.toks, b.toks)) / len(list_distinct(list_concat(a.toks, b.toks)))
          >= {NEAR_DUP_JACCARD}
    GROUP BY a.case_id
),
version_mix AS (
    SELECT case_id, list(family ORDER BY family) AS version_mix
    FROM {VERSION_PAIRS}
    WHERE stage = 'final' AND stale_rank <= $k AND current_rank <= $k AND {in_chunk("case_id")} GROUP BY case_id
),
{_ABSTENTION_CTES},
answerable_facts AS (
    SELECT p.case_id,
           CASE WHEN ab.how IS NOT NULL THEN 'false-abstention'
                WHEN p.n_found = 0 THEN 'no-relevant-in-top-k' ELSE 'recall-below-bar' END AS failure,
           CASE WHEN ab.how IS NOT NULL
                THEN struct_pack(how := ab.how, top_score := ab.top_score, threshold := ab.threshold,
                                 n_results := ab.n_results) END AS abstention,
           p.n_relevant, p.n_found, p.missing,
           coalesce(t.n_top, 0) AS n_top, coalesce(t.n_judged, 0) AS n_judged,
           coalesce(t.top_units, []) AS top_units,
           coalesce(t.n_head, 0) >= {UNJUDGED_TOP} AND t.n_head_judged = 0 AS unjudged_top,
           CASE WHEN cr.n >= greatest({CROWD_MIN}, ceil($k / 2))
                     AND len(list_filter(p.missing, lambda u: u.document_id IS DISTINCT FROM cr.document_id
                                                               AND u.permitted IS DISTINCT FROM false)) > 0
                THEN cr.document_id END AS crowding_document,
           cr.n AS crowding_count,
           coalesce(d.disputed, []) AS disputed, coalesce(h.heading_hits, []) AS heading_hits,
           coalesce(im.identifiers_missed, []) AS identifiers_missed,
           list_transform(list_filter(p.missing, lambda u: u.chunk_kind = 'table'), lambda u: u.unit_id)
               AS table_units,
           list_transform(list_filter(p.missing, lambda u: {MISSING_ANY_RUN} AND u.in_corpus IS NULL),
                          lambda u: u.unit_id || ': {NOT_RETRIEVED}') AS assumptions,
           a.query_type,
           (coalesce(a.query_type, '') ILIKE 'multi%' OR list_contains(coalesce(a.tags, []), 'multi-part'))
               AS multi_part,
           coalesce(vm.version_mix, []) AS version_mix, coalesce(dp.duplicate_pairs, []) AS duplicate_pairs,
           sc.case_id IS NOT NULL AS stale_first, sc.stale_detail
    FROM per_case p JOIN answerable a USING (case_id)
    LEFT JOIN top_agg t USING (case_id) LEFT JOIN crowd cr USING (case_id)
    LEFT JOIN disputed d USING (case_id) LEFT JOIN heading_hits h USING (case_id)
    LEFT JOIN identifiers_missed im USING (case_id) LEFT JOIN version_mix vm USING (case_id)
    LEFT JOIN duplicate_pairs dp USING (case_id) LEFT JOIN stale_cases sc USING (case_id)
    LEFT JOIN abstained ab ON ab.case_id = p.case_id AND p.n_relevant > 0 AND ab.how IS NOT NULL
    WHERE {_FAILING} OR ab.how IS NOT NULL
)"""

_OTHER_CTES = f"""
relevant_counts AS (
    SELECT case_id, count(*) AS n_relevant FROM relevant GROUP BY case_id
),
negative_facts AS (
    SELECT n.case_id, 'negative-not-abstained' AS failure, coalesce(rc.n_relevant, 0) AS n_relevant,
           n.expected_behavior, n.reason, n.top_score, n.threshold, n.n_results
    FROM {NEGATIVES} n LEFT JOIN relevant_counts rc USING (case_id)
    WHERE NOT n.passed AND {in_chunk("n.case_id")}
),
stale_facts AS (
    SELECT s.case_id, 'stale-first' AS failure, true AS stale_first, s.stale_detail,
           coalesce(vm.version_mix, []) AS version_mix, coalesce(dp.duplicate_pairs, []) AS duplicate_pairs
    FROM stale_cases s LEFT JOIN version_mix vm USING (case_id) LEFT JOIN duplicate_pairs dp USING (case_id)
),
leak_facts AS (
    SELECT case_id, 'leakage' AS failure, count(*) AS n_leaked_rows,
           count(*) FILTER (WHERE stage = 'final') AS n_leaked_final,
           count(DISTINCT (stage, rank)) AS n_leaked_results,
           list_slice(list(struct_pack(stage := stage, rank := rank, unit_id := unit_id, rule := rule)
                           ORDER BY stage DESC, rank, rule), 1, {LEAKS_SHOWN}) AS leaks
    FROM {LEAKS} WHERE {in_chunk("case_id")} GROUP BY case_id
)"""

_CHUNK_FACTS_SQL = (
    "WITH "
    + _CHUNK_SOURCES
    + ","
    + RUN_CONFIG_CTE
    + ","
    + _ANSWERABLE_CTES
    + ","
    + _OTHER_CTES
    + """
SELECT * FROM (
    SELECT * FROM answerable_facts
    UNION ALL BY NAME SELECT * FROM negative_facts
    UNION ALL BY NAME SELECT * FROM stale_facts
    UNION ALL BY NAME SELECT * FROM leak_facts
) CROSS JOIN run_config
"""
)


def chunk_bounds(
    cur: duckdb.DuckDBPyConnection, rows_per_chunk: int | None = None
) -> list[tuple[str | None, str | None]]:
    """Case-id ranges of about ``rows_per_chunk`` (default :data:`CHUNK_ROWS`) rows of the kept tables each (equal
    numbers of cases; one open range when everything fits in one), inside :func:`kept_tables`."""
    kept = f"SELECT (SELECT count(*) FROM {LOCATIONS_TABLE}) + (SELECT count(*) FROM {TOP_TABLE})"
    rows = cur.execute(kept).fetchall()[0][0]
    chunks = math.ceil(int(rows) / (rows_per_chunk or CHUNK_ROWS))
    if chunks <= 1:
        return [(None, None)]
    cases = int(cur.execute("SELECT count(*) FROM cases").fetchall()[0][0])
    step = math.ceil(cases / chunks)
    cuts = [
        str(r[0])
        for r in cur.execute(
            "SELECT case_id FROM (SELECT case_id, row_number() OVER (ORDER BY case_id) AS i FROM cases) "
            "WHERE i > 1 AND (i - 1) % $step = 0 ORDER BY case_id",
            {"step": step},
        ).fetchall()
    ]
    edges: list[str | None] = [None, *cuts, None]
    return list(zip(edges[:-1], edges[1:], strict=True))


@contextmanager
def kept_tables(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> Iterator[None]:
    """Inside, ``cur`` holds the tables every chunk's facts read (the statements that read the whole run); they
    are dropped on the way out."""
    try:
        # every statement over location_ctes takes its parameters, named or not in what it selects
        numbered = numbered_positions(cur, run_id, k)
        ctes = location_ctes(plain_runs=PLAIN_RUNS_TABLE, numbered=numbered)
        kept = location_ctes(plain_runs=PLAIN_RUNS_TABLE, labelled_run=LABELLED_TABLE, numbered=numbered)
        for table, cte, sql in ((LABELLED_TABLE, "labelled_run", ctes), (LOCATIONS_TABLE, "locations", kept)):
            cur.execute(
                f"CREATE OR REPLACE TEMP TABLE {table} AS WITH {sql} SELECT * FROM {cte}", {"run_id": run_id, "k": k}
            )
        cur.execute(_TOP_TABLE_SQL.replace("{kept}", kept), {"run_id": run_id, "k": k, "lo": None, "hi": None})
        _drop(cur, NUMBERED_TABLES)  # read by the statements above alone
        cur.execute(_CORPUS_TABLE_SQL)
        yield
    finally:
        # after a failed statement in the caller's transaction the drop fails too; the rollback drops them
        with suppress(duckdb.Error):
            _drop(cur, (PLAIN_RUNS_TABLE, LABELLED_TABLE, LOCATIONS_TABLE, TOP_TABLE, CORPUS_TABLE, *NUMBERED_TABLES))


def _drop(cur: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> None:
    for table in tables:
        cur.execute(f"DROP TABLE IF EXISTS {table}")


def chunk_facts(cur: duckdb.DuckDBPyConnection, run_id: str, k: int, lo: str | None, hi: str | None) -> pa.Table:
    """The facts of the cases from ``lo`` (inclusive) to ``hi`` (exclusive), inside :func:`kept_tables`."""
    return cur.sql(_CHUNK_FACTS_SQL, params={"run_id": run_id, "k": k, "lo": lo, "hi": hi}).to_arrow_table()


def fact_chunks(
    cur: duckdb.DuckDBPyConnection, run_id: str, k: int, bounds: list[tuple[str | None, str | None]] | None = None
) -> Generator[pa.Table]:
    """The facts of ``run_id`` at ``k``, one table per chunk of cases in case-id order (or per range of
    ``bounds``), read on ``cur`` (which holds the checks layer's tables). The kept tables are dropped when the
    last chunk is read (or the reader stops)."""
    with kept_tables(cur, run_id, k):
        for lo, hi in chunk_bounds(cur) if bounds is None else bounds:
            yield chunk_facts(cur, run_id, k, lo, hi)


# The input each evidence fact is read from (``rules.INPUTS``; "a|b": either one). A fact whose input was not
# loaded is NULL, empty or false, never a claim: the thin-data test walks every fact of every failure against it.
# The facts of an answerable failure, in the order its evidence lists them:
_ANSWERABLE_INPUTS: dict[str, tuple[str, ...]] = {
    "n_relevant": ("labels",),
    "n_found": ("labels", "this run"),
    "missing": ("labels", "this run"),
    "assumptions": ("labels", "this run", "other runs"),
    "top_units": ("this run",),
    "n_top": ("this run",),
    "n_judged": ("labels", "this run"),
    "crowding_document": ("this run", "labels"),
    "crowding_count": ("this run",),
    "disputed": ("labels", "annotators"),
    "heading_hits": ("manifest", "this run"),
    "identifiers_missed": ("topics", "manifest|snippets"),
    "table_units": ("manifest",),
    "multi_part": ("topics",),
    "version_mix": ("manifest", "versions"),
    "duplicate_pairs": ("manifest|snippets",),
    "stale_detail": ("manifest", "versions"),
    "abstention": ("this run", "events|calibration"),
}
# ... of a negative case (besides n_relevant)
_NEGATIVE_INPUTS: dict[str, tuple[str, ...]] = {
    "expected_behavior": ("topics",),
    "reason": ("this run", "events|calibration"),
    "top_score": ("this run",),
    "threshold": ("calibration",),
    "n_results": ("this run",),
}
_LEAK_FACTS = ("n_leaked_rows", "n_leaked_final", "n_leaked_results", "leaks")
FACT_INPUTS: dict[str, tuple[str, ...]] = {
    **_ANSWERABLE_INPUTS,
    **_NEGATIVE_INPUTS,
    "stale_first": ("manifest", "versions"),
    **dict.fromkeys(_LEAK_FACTS, ("this run", "manifest", "principal")),
}
# The same for each missing relevant unit of ``missing`` (``classify.locations``).
MISSING_INPUTS: dict[str, tuple[str, ...]] = {
    "unit_id": ("labels",),
    "document_id": ("labels",),
    "grade": ("labels",),
    "location": ("labels", "this run", "other runs"),
    "final_rank": ("this run",),
    "candidate_rank": ("this run",),
    "best_rank_other_runs": ("other runs",),
    "best_other_run": ("other runs",),
    "in_corpus": ("manifest",),
    "document_in_corpus": ("manifest",),
    "permitted": ("principal", "manifest"),
    "chunk_kind": ("manifest",),
    "section": ("labels",),  # the manifest's section, else the label's section_id, else its document
    "indexed": ("manifest", "other runs"),
}

# The facts each failure kind carries into its evidence JSON (besides k, rules and patterns).
EVIDENCE_FIELDS: dict[str, tuple[str, ...]] = {
    "answerable": tuple(_ANSWERABLE_INPUTS),
    "negative-not-abstained": ("n_relevant", *_NEGATIVE_INPUTS),
    "stale-first": ("stale_detail", "version_mix", "duplicate_pairs"),
    "leakage": _LEAK_FACTS,
}
