"""`dataset check`: signs that a test set's splits or labels cannot be trusted, one SQL statement per check.

- ``family-across-splits``: one ``source_family`` has cases in more than one split, so holdout is not held out.
- ``near-duplicate-query``: two cases in different splits ask the same thing. Queries are normalised (lower
  case, every run of non-alphanumeric characters turned into one space, trimmed); a pair is reported when the
  normalised texts are equal or their token sets have Jaccard similarity >= ``jaccard`` (default 0.9).
- ``label-after-change``: a label's unit was updated after the label was made, so the grade judged other text.
  A label's time is the time of the earliest version in the current version's lineage (following
  ``parent_version``) that holds the same (case, unit, annotator, grade): that version's ``created_at`` (the
  manifest's for a loaded dataset, the import time for an imported one), else its ``loaded_at``. The unit
  changed when any of its snapshot rows has ``updated_at`` later than that time.
- ``copied-evidence``: a question repeats ``span`` (default 8) or more consecutive tokens of the text of a unit
  labelled relevant for it — the smell of a question generated from its own evidence, which lexical retrievers
  then find trivially.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.contract.relevance import is_relevant
from ragtriage.store.connection import current_dataset_version

CHECK_CODES = ("family-across-splits", "near-duplicate-query", "label-after-change", "copied-evidence")

_NORM = "trim(regexp_replace(lower({x}), '[^[:alnum:]]+', ' ', 'g'))"

_SQL = f"""
WITH RECURSIVE norm AS (
    SELECT case_id, split, query, {_NORM.format(x="query")} AS q FROM cases WHERE split IS NOT NULL
), tokens AS (
    SELECT case_id, split, q, list_distinct(string_split(q, ' ')) AS toks FROM norm WHERE q <> ''
), token_rows AS (
    SELECT case_id, split, unnest(toks) AS tok, len(toks) AS n FROM tokens
), token_df AS (
    SELECT tok, count(*) AS df FROM token_rows GROUP BY tok
), prefix AS (
    -- Prefix filtering (set-similarity joins): with tokens ordered rarest first, two sets with Jaccard >= t
    -- share a token among the first n - ceil(t * n) + 1 of each, so only those tokens are joined.
    SELECT * FROM (
        SELECT r.case_id, r.split, r.tok, r.n, row_number() OVER (PARTITION BY r.case_id ORDER BY d.df, r.tok) AS pos
        FROM token_rows r JOIN token_df d USING (tok))
    WHERE pos <= n - ceil($jaccard * n - 1e-9) + 1
), candidates AS (
    -- Length and positional filters: Jaccard >= t needs an overlap of t / (1 + t) * (na + nb), and a pair whose
    -- first shared token sits at positions (i, j) can share at most 1 + min(na - i, nb - j) tokens.
    SELECT DISTINCT a.case_id AS a_id, b.case_id AS b_id
    FROM prefix a JOIN prefix b ON a.tok = b.tok AND a.split < b.split
    WHERE b.n >= $jaccard * a.n - 1e-9 AND a.n >= $jaccard * b.n - 1e-9
      AND 1 + least(a.n - a.pos, b.n - b.pos) >= $jaccard / (1 + $jaccard) * (a.n + b.n) - 1e-9
), shared AS (
    -- Overlap counted by joining token rows (hash joins), far faster than list_intersect on millions of pairs.
    SELECT c.a_id, c.b_id, count(*) AS common, any_value(ta.n) AS na, any_value(tb.n) AS nb
    FROM candidates c JOIN token_rows ta ON ta.case_id = c.a_id
    JOIN token_rows tb ON tb.case_id = c.b_id AND tb.tok = ta.tok
    GROUP BY c.a_id, c.b_id
), families AS (
    SELECT source_family, count(DISTINCT split) AS n_splits,
           string_agg(split || ' (' || n || ' cases)', ', ' ORDER BY split) AS detail
    FROM (SELECT source_family, split, count(*) AS n FROM cases
          WHERE source_family IS NOT NULL AND split IS NOT NULL GROUP BY ALL)
    GROUP BY source_family HAVING count(DISTINCT split) > 1
), lineage AS (
    SELECT dataset_version, parent_version, 0 AS depth FROM datasets WHERE dataset_version = $version
    UNION ALL
    SELECT d.dataset_version, d.parent_version, l.depth + 1
    FROM datasets d JOIN lineage l ON d.dataset_version = l.parent_version
), version_time AS (
    SELECT l.dataset_version, l.depth,
           coalesce(CAST(TRY_CAST(d.created_at AS TIMESTAMPTZ) AS TIMESTAMP), d.loaded_at) AS at
    FROM lineage l JOIN datasets d USING (dataset_version)
), label_time AS (
    SELECT l.case_id, l.unit_id, l.annotator, l.grade, arg_max(v.at, v.depth) AS labelled_at
    FROM all_labels l JOIN version_time v USING (dataset_version)
    WHERE EXISTS (SELECT 1 FROM labels c WHERE c.case_id = l.case_id AND c.unit_id = l.unit_id
                  AND c.annotator = l.annotator AND c.grade = l.grade)
    GROUP BY ALL
), changed AS (
    SELECT t.*, max(d.updated_at) AS updated_at
    FROM label_time t JOIN documents d ON d.unit_id = t.unit_id
    GROUP BY ALL HAVING max(d.updated_at) > t.labelled_at
), relevant AS (
    SELECT q.case_id, q.unit_id, ' ' || {_NORM.format(x="string_agg(d.text, ' ' ORDER BY d.position)")} || ' ' AS t
    FROM qrels q JOIN documents d ON d.unit_id = q.unit_id
    WHERE {is_relevant("q.grade")}
    GROUP BY q.case_id, q.unit_id
), query_grams AS (
    SELECT case_id, query, unnest(list_transform(range(1, len(w) - $span + 2),
                                                 lambda i: array_to_string(w[i:i + $span - 1], ' '))) AS gram
    FROM (SELECT case_id, query, string_split({_NORM.format(x="query")}, ' ') AS w FROM cases)
    WHERE len(w) >= $span
), copied AS (
    SELECT g.case_id, r.unit_id, count(*) AS grams, arg_min(g.gram, g.gram) AS example
    FROM query_grams g JOIN relevant r ON r.case_id = g.case_id AND contains(r.t, ' ' || g.gram || ' ')
    GROUP BY g.case_id, r.unit_id
)
SELECT 'family-across-splits' AS "check", CAST(NULL AS VARCHAR) AS case_id, CAST(NULL AS VARCHAR) AS other,
       source_family AS subject, 'source_family ' || source_family || ' appears in ' || detail AS detail
FROM families
UNION ALL
SELECT 'near-duplicate-query', s.a_id, s.b_id, NULL,
       CASE WHEN a.q = b.q THEN 'same normalised query' ELSE 'token-set Jaccard '
            || round(s.common / (s.na + s.nb - s.common), 2) END
       || ' across splits ' || a.split || ' / ' || b.split || ': ' || a.query || ' | ' || b.query
FROM shared s JOIN norm a ON a.case_id = s.a_id JOIN norm b ON b.case_id = s.b_id
WHERE a.q = b.q OR s.common / (s.na + s.nb - s.common) >= $jaccard
UNION ALL
SELECT 'label-after-change', case_id, annotator, unit_id,
       'grade ' || grade || ' by ' || annotator || ' made ' || labelled_at || '; unit updated ' || updated_at
FROM changed
UNION ALL
SELECT 'copied-evidence', c.case_id, NULL, c.unit_id,
       'question shares ' || c.grams || ' span(s) of ' || $span || ' consecutive tokens with relevant unit '
       || c.unit_id || ', e.g. "' || c.example || '"'
FROM copied c
ORDER BY 1, 2, 3, 4
"""


def dataset_check(con: duckdb.DuckDBPyConnection, *, jaccard: float = 0.9, span: int = 8) -> pa.Table:
    """Warnings for the current dataset version: columns check, case_id, other, subject, detail.

    ``other`` is the second case of a near-duplicate pair or the annotator of a label; ``subject`` is the
    source family or the unit concerned.
    """
    if not 0 < jaccard <= 1:
        raise ValueError(f"jaccard must be in (0, 1], got {jaccard}")
    if span < 2:
        raise ValueError(f"span must be >= 2 tokens, got {span}")
    params = {"version": current_dataset_version(con), "jaccard": jaccard, "span": span}
    with con.cursor() as cur:
        return cur.sql(_SQL, params=params).to_arrow_table()
