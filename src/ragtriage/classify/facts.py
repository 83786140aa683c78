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
"""

from __future__ import annotations

from ragtriage.classify.locations import LOCATION_CTES
from ragtriage.classify.rules import (
    CROWD_MIN,
    DEFAULT_RECALL_BAR,
    NEAR_DUP_JACCARD,
    NEAR_DUP_MIN_TOKENS,
    NOT_RETRIEVED,
    UNJUDGED_TOP,
)
from ragtriage.contract.relevance import is_relevant

# Checks-layer tables the statement reads (registered by the caller).
LEAKS, NEGATIVES, STALE_FIRST, VERSION_PAIRS = "_cls_leaks", "_cls_negatives", "_cls_stale_first", "_cls_versions"

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
    SELECT reranker AS cfg_reranker,
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
          FROM runs WHERE run_id = $run_id)
)"""

_ANSWERABLE_CTES = f"""
bar AS (
    SELECT coalesce(try_cast(json_extract_string(any_value(manifest), '$.recall_bar') AS DOUBLE),
                    {DEFAULT_RECALL_BAR}) AS bar
    FROM current_dataset
),
answerable AS (
    SELECT case_id, query, query_type, tags FROM cases WHERE answerable
),
per_case AS (
    SELECT a.case_id, count(l.unit_id) AS n_relevant,
           count(l.unit_id) FILTER (WHERE l.location = 'final-top-k') AS n_found,
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
),
stale_cases AS (
    SELECT case_id, first(detail ORDER BY stale_rank, family) AS stale_detail
    FROM {STALE_FIRST} WHERE stage = 'final' AND stale_rank <= $k GROUP BY case_id
),
-- The cases whose top k the facts read: failing answerable cases and stale-first lists. Cutting the run's rows
-- to them (and to pos <= k) before any join or aggregate is what keeps a 10M-row run to seconds.
focus AS (
    SELECT case_id FROM per_case WHERE n_relevant = 0 OR n_found < (SELECT bar FROM bar) * n_relevant
    UNION SELECT case_id FROM stale_cases
),
final_top AS NOT MATERIALIZED (
    SELECT case_id, pos, unit_id, document_id, snippet FROM positions
    WHERE run_id = $run_id AND stage = 'final' AND pos <= $k AND case_id IN (SELECT case_id FROM focus)
),
top_lists AS (
    SELECT case_id, count(*) AS n_top, count(*) FILTER (WHERE pos <= {UNJUDGED_TOP}) AS n_head,
           list(struct_pack(pos := pos, unit_id := unit_id)) AS top, min(document_id) AS first_document
    FROM final_top GROUP BY case_id
),
top_judged AS (
    SELECT case_id, count(*) FILTER (WHERE final_rank <= $k) AS n_judged,
           count(*) FILTER (WHERE final_rank <= $k AND final_rank <= {UNJUDGED_TOP}) AS n_head_judged
    FROM judged_run GROUP BY case_id
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
    WHERE q.max_grade - q.min_grade >= 2
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
identifiers AS (
    SELECT case_id, unnest(list_distinct(list_filter(regexp_extract_all(query, '{_TOKEN}'), {_ID_FILTER})))
           AS ident
    FROM answerable
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
    FROM {VERSION_PAIRS} WHERE stage = 'final' AND stale_rank <= $k AND current_rank <= $k GROUP BY case_id
),
answerable_facts AS (
    SELECT p.case_id,
           CASE WHEN p.n_found = 0 THEN 'no-relevant-in-top-k' ELSE 'recall-below-bar' END AS failure,
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
           list_transform(list_filter(p.missing, lambda u: u.location = 'absent-from-runs' AND NOT u.indexed
                                                           AND u.in_corpus IS NULL),
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
    WHERE p.n_relevant = 0 OR p.n_found < (SELECT bar FROM bar) * p.n_relevant
)"""

_OTHER_CTES = f"""
relevant_counts AS (
    SELECT case_id, count(*) AS n_relevant FROM relevant GROUP BY case_id
),
negative_facts AS (
    SELECT n.case_id, 'negative-not-abstained' AS failure, coalesce(rc.n_relevant, 0) AS n_relevant,
           n.expected_behavior, n.reason, n.top_score, n.threshold, n.n_results
    FROM {NEGATIVES} n LEFT JOIN relevant_counts rc USING (case_id)
    WHERE NOT n.passed
),
stale_facts AS (
    SELECT s.case_id, 'stale-first' AS failure, true AS stale_first, s.stale_detail,
           coalesce(vm.version_mix, []) AS version_mix, coalesce(dp.duplicate_pairs, []) AS duplicate_pairs
    FROM stale_cases s LEFT JOIN version_mix vm USING (case_id) LEFT JOIN duplicate_pairs dp USING (case_id)
),
leak_facts AS (
    SELECT case_id, 'leakage' AS failure, count(*) AS n_leaked_rows,
           count(*) FILTER (WHERE stage = 'final') AS n_leaked_final,
           list_slice(list(struct_pack(stage := stage, rank := rank, unit_id := unit_id, rule := rule)
                           ORDER BY stage DESC, rank, rule), 1, {LEAKS_SHOWN}) AS leaks
    FROM {LEAKS} GROUP BY case_id
)"""

FACTS_SQL = (
    "WITH "
    + LOCATION_CTES
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

# The facts each failure kind carries into its evidence JSON (besides k, rules and patterns).
EVIDENCE_FIELDS: dict[str, tuple[str, ...]] = {
    "answerable": (
        "n_relevant",
        "n_found",
        "missing",
        "assumptions",
        "top_units",
        "n_top",
        "n_judged",
        "crowding_document",
        "crowding_count",
        "disputed",
        "heading_hits",
        "identifiers_missed",
        "table_units",
        "multi_part",
        "version_mix",
        "duplicate_pairs",
        "stale_detail",
    ),
    "negative-not-abstained": ("n_relevant", "expected_behavior", "reason", "top_score", "threshold", "n_results"),
    "stale-first": ("stale_detail", "version_mix", "duplicate_pairs"),
    "leakage": ("n_leaked_rows", "n_leaked_final", "leaks"),
}
