"""Snippets and metadata that carry a forbidden unit inside an otherwise permitted result row.

A retriever can leak without returning the forbidden unit itself: a permitted chunk's snippet may quote a
restricted one, or its metadata may name it (``"see_also": ["HR-SALARY-2024"]``). Two rules, both set-based SQL:

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

from ragtriage.checks.units import ACL_POLICY_JOIN, UNIT_COLUMNS, denial_detail, denials

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
