"""DuckDB schema of a ragtriage store.

Every dataset version keeps its own rows (``all_cases``, ``all_labels``); the views ``cases``, ``labels`` and
``qrels`` show the *current* version so that metrics, checks and the classifier never have to carry a version
filter around. A new label import creates a new version and moves the pointer instead of editing rows in place.

``unit_id`` is materialised at load time on labels and documents from the dataset's unit (``document`` →
document_id, ``chunk`` → chunk_id, falling back to section_id), so every later join is on a single column.

Result rows are the one large table, and writing a string column of that size is costly even when every
value is the same. The rows therefore keep only what varies: the run is an
integer key, the stage a two-value enum, and the unit id is not stored twice; the ``results`` view restores
``run_id``, ``stage`` and ``unit_id`` by a join with the (tiny) ``runs`` table. A column that is NULL on every row
still costs its writing, and a TREC or Parquet run without chunks, snippets or metadata (most runs) has three:
such a run's rows go to ``result_rows_plain``, which lacks them, and every other run's to ``result_rows_full``.
The view ``result_rows`` is the two together, with NULL in the plain rows' missing columns; only the loader
writes the tables.

A document (or unit) id column of the result rows, the labels and ``qrels`` holds nearly as many distinct values
as rows. DuckDB's default for text, a dictionary with FSST over it, then has little to share and is the costliest
part of writing those rows; such a column is stored ``USING COMPRESSION zstd``, which writes the same values at
a fraction of that cost, in a file a little larger, and reads them as fast. Columns with few distinct values
(case ids, annotators, the dataset version) keep the default, which suits them best.
"""

from __future__ import annotations

from ragtriage.contract.relevance import is_human, span_unit

SCHEMA_VERSION = 6

#: The current dataset version, as a scalar subquery (NULL before a dataset is loaded): the one read of the pointer,
#: which the views below and every statement that stamps or filters by the current version ask by name.
CURRENT_VERSION = "(SELECT value FROM meta WHERE key = 'current_dataset')"

QRELS_LIVE = """
WITH per_annotator AS (
    SELECT case_id, unit_id, annotator, max(grade) AS grade
    FROM labels WHERE {HUMAN} GROUP BY case_id, unit_id, annotator
), adjudicated AS (
    SELECT case_id, unit_id, grade FROM per_annotator WHERE annotator = 'adjudicated'
), pooled AS (
    SELECT case_id, unit_id, CAST(floor(quantile_cont(grade, 0.5)) AS INTEGER) AS grade,
           count(*) AS n_annotators, min(grade) AS min_grade, max(grade) AS max_grade
    FROM per_annotator WHERE annotator <> 'adjudicated' GROUP BY case_id, unit_id
)
SELECT p.case_id, p.unit_id, coalesce(a.grade, p.grade) AS grade, p.n_annotators, p.min_grade, p.max_grade,
       a.grade IS NOT NULL AS adjudicated
FROM pooled p LEFT JOIN adjudicated a USING (case_id, unit_id)
UNION ALL
SELECT a.case_id, a.unit_id, a.grade, 0, a.grade, a.grade, TRUE
FROM adjudicated a ANTI JOIN pooled p USING (case_id, unit_id)
""".replace("{HUMAN}", is_human())
"""One grade per (case, unit) from the people's ``labels(case_id, unit_id, annotator, grade)`` (the rule is in the
DDL below); the store materialises it as ``qrels``, and an evaluation without a store (store/load_memory.py) does
the same. An LLM judge's labels (annotator ``judge:<model>``) never enter it."""

QRELS_WITH_JUDGE = """
SELECT case_id, unit_id, grade, n_annotators, min_grade, max_grade, adjudicated FROM qrels
UNION ALL
SELECT case_id, unit_id, CAST(floor(quantile_cont(grade, 0.5)) AS INTEGER), 0, min(grade), max(grade), FALSE
FROM labels l WHERE NOT {HUMAN}
  AND NOT EXISTS (SELECT 1 FROM qrels q WHERE q.case_id = l.case_id AND q.unit_id = l.unit_id)
GROUP BY case_id, unit_id
""".replace("{HUMAN}", is_human("l.annotator"))
"""``qrels`` with the holes filled by the judges: a unit no person labelled takes the judges' median grade (rounded
down, as the people's rule); a person's grade always wins. ``n_annotators`` 0 marks a judged row."""


def qrels_over(labels: str) -> str:
    """:data:`QRELS_LIVE`'s one grade per (case, unit) over ``labels``, another relation of the labels' columns
    (one past dataset version's ``all_labels`` rows): a comparison across label versions grades both sides by the
    one rule."""
    return QRELS_LIVE.replace("FROM labels WHERE", f"FROM {labels} WHERE", 1)


DDL = """
CREATE TABLE IF NOT EXISTS meta (
    key VARCHAR PRIMARY KEY,
    value VARCHAR
);

CREATE TABLE IF NOT EXISTS loads (
    load_id INTEGER PRIMARY KEY,
    kind VARCHAR NOT NULL,            -- dataset | run | labels
    target VARCHAR NOT NULL,          -- dataset_version or run_id
    path VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL,
    rows BIGINT NOT NULL,
    ragtriage_version VARCHAR NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS load_warnings (
    target VARCHAR NOT NULL,
    file VARCHAR NOT NULL,
    line BIGINT,
    field VARCHAR,
    code VARCHAR NOT NULL,
    message VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS datasets (
    dataset_version VARCHAR PRIMARY KEY,  -- content hash (cases, labels, rubric, corpus snapshot)
    name VARCHAR NOT NULL,
    version VARCHAR NOT NULL,             -- the manifest's own version string
    unit VARCHAR NOT NULL,                -- chunk | document
    relevance_threshold INTEGER NOT NULL,
    grade_min INTEGER NOT NULL,
    grade_max INTEGER NOT NULL,
    rubric JSON,
    corpus_snapshot VARCHAR,
    created_at VARCHAR,
    rubric_version VARCHAR,
    acl_required BOOLEAN NOT NULL DEFAULT FALSE,
    parent_version VARCHAR,
    manifest JSON,
    grade_map JSON,                       -- {"from": to} applied to the input grades at load (--grade-map)
    loaded_at TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS all_cases (
    dataset_version VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    query VARCHAR NOT NULL,
    answerable BOOLEAN NOT NULL,
    expected_behavior VARCHAR NOT NULL,   -- evidence | empty | below_threshold | insufficient_evidence
    principal_id VARCHAR,
    principal_groups VARCHAR[],
    principal_tenant VARCHAR,
    filters JSON,
    filter_tenant VARCHAR,
    filter_language VARCHAR,
    filter_region VARCHAR,
    filter_product VARCHAR,
    filter_doc_type VARCHAR,
    filter_effective_on DATE,
    split VARCHAR,
    source_family VARCHAR,
    query_type VARCHAR,
    language VARCHAR,
    tags VARCHAR[],
    critical BOOLEAN NOT NULL DEFAULT FALSE,
    expected_scope VARCHAR,
    line BIGINT,
    PRIMARY KEY (dataset_version, case_id)
);

CREATE TABLE IF NOT EXISTS all_labels (
    dataset_version VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    document_id VARCHAR NOT NULL USING COMPRESSION zstd,
    chunk_id VARCHAR,
    section_id VARCHAR,
    unit_id VARCHAR NOT NULL USING COMPRESSION zstd,  -- unit span: document:start-end (relevance.span_unit)
    grade INTEGER NOT NULL,
    annotator VARCHAR NOT NULL,
    note VARCHAR,
    line BIGINT
);

CREATE TABLE IF NOT EXISTS documents (
    document_id VARCHAR NOT NULL,
    chunk_id VARCHAR,
    section_id VARCHAR,
    unit_id VARCHAR NOT NULL,
    position BIGINT NOT NULL,             -- manifest order, for neighbouring context
    title VARCHAR,
    text VARCHAR,
    doc_type VARCHAR,
    source_system VARCHAR,
    language VARCHAR,
    region VARCHAR,
    product VARCHAR,
    tenant VARCHAR,
    acl VARCHAR[],
    status VARCHAR,                        -- current | archived
    effective_from DATE,
    effective_to DATE,
    updated_at TIMESTAMP,
    chunk_kind VARCHAR,
    version VARCHAR
);

CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    run_key INTEGER NOT NULL UNIQUE,      -- the key of its rows in result_rows_plain or _full
    unit VARCHAR NOT NULL,                -- the dataset unit it was loaded under: chunk | document
    dataset_version VARCHAR NOT NULL,     -- the store's dataset version the run was loaded against
    declared_dataset_version VARCHAR,     -- what run.json says
    created_at VARCHAR,
    corpus_version VARCHAR,
    index_version VARCHAR,
    embedding_model VARCHAR,
    chunking VARCHAR,
    reranker VARCHAR,
    k INTEGER NOT NULL,
    candidate_k INTEGER,
    filters_applied JSON,
    system JSON,
    manifest JSON,
    source_format VARCHAR NOT NULL,       -- folder | trec
    score_threshold DOUBLE,               -- set by `ragtriage calibrate`
    has_repeats BOOLEAN,                  -- a unit occurs twice in some list (the load's duplicate-in-list check)
    ignored_topics INTEGER NOT NULL DEFAULT 0,  -- run topics that are not cases, ignored at load (as trec_eval)
    ignored_rows BIGINT NOT NULL DEFAULT 0,     -- their result rows
    score_from_rank BOOLEAN NOT NULL DEFAULT FALSE,  -- the file had no scores (MS MARCO): score = 1 / rank
    loaded_at TIMESTAMP NOT NULL
);

CREATE TYPE IF NOT EXISTS result_stage AS ENUM ('candidate', 'final');

-- A run whose rows hold no chunk id, snippet or metadata (store.load decides per run).
CREATE TABLE IF NOT EXISTS result_rows_plain (
    run_key INTEGER NOT NULL,
    case_id VARCHAR NOT NULL,
    stage result_stage NOT NULL,
    rank INTEGER NOT NULL,
    document_id VARCHAR NOT NULL USING COMPRESSION zstd,
    score DOUBLE,
    line BIGINT
);

CREATE TABLE IF NOT EXISTS result_rows_full (
    run_key INTEGER NOT NULL,
    case_id VARCHAR NOT NULL,
    stage result_stage NOT NULL,
    rank INTEGER NOT NULL,
    document_id VARCHAR NOT NULL USING COMPRESSION zstd,
    chunk_id VARCHAR,
    span_start INTEGER,                   -- the chunk's characters [span_start, span_end) in its document
    span_end INTEGER,
    score DOUBLE,
    snippet VARCHAR,
    metadata JSON,
    line BIGINT
);

CREATE OR REPLACE VIEW result_rows AS
    SELECT run_key, case_id, stage, rank, document_id, CAST(NULL AS VARCHAR) AS chunk_id,
           CAST(NULL AS INTEGER) AS span_start, CAST(NULL AS INTEGER) AS span_end, score,
           CAST(NULL AS VARCHAR) AS snippet, CAST(NULL AS JSON) AS metadata, line
    FROM result_rows_plain
    UNION ALL
    SELECT run_key, case_id, stage, rank, document_id, chunk_id, span_start, span_end, score, snippet, metadata, line
    FROM result_rows_full;

-- In chunk mode the unit is the chunk id (results carry no section id); in document mode the document id; in
-- span mode the chunk's span, `document:start-end` (contract/relevance.span_unit).
CREATE OR REPLACE VIEW results AS
    SELECT u.run_id, r.case_id, CAST(r.stage AS VARCHAR) AS stage, r.rank, r.document_id, r.chunk_id,
           CASE WHEN u.unit = 'document' THEN r.document_id WHEN u.unit = 'span' THEN {SPAN_UNIT}
                ELSE r.chunk_id END AS unit_id,
           r.span_start, r.span_end, r.score, r.snippet, r.metadata, r.line
    FROM result_rows r JOIN runs u USING (run_key);

CREATE TABLE IF NOT EXISTS events (
    run_id VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    latency_ms DOUBLE,
    timed_out BOOLEAN,
    empty BOOLEAN,
    fallback BOOLEAN,
    status VARCHAR,                       -- ok | insufficient_evidence | error
    error VARCHAR
);

CREATE OR REPLACE VIEW current_dataset AS
    SELECT d.* FROM datasets d
    WHERE d.dataset_version = {CURRENT_VERSION};

CREATE OR REPLACE VIEW cases AS
    SELECT c.* EXCLUDE (dataset_version) FROM all_cases c
    WHERE c.dataset_version = {CURRENT_VERSION};

CREATE OR REPLACE VIEW labels AS
    SELECT l.* EXCLUDE (dataset_version) FROM all_labels l
    WHERE l.dataset_version = {CURRENT_VERSION};

-- One grade per (case, unit): an `adjudicated` label wins; otherwise the median of the annotators' grades,
-- rounded down (with two annotators, the floor of their mean: 3 and 1 give 2, 3 and 0 give 1), so a disputed
-- unit never counts as better than the annotators' middle judgement.
-- Chunk labels roll up to the document by max when unit = document,
-- because unit_id is already the document id there.
CREATE OR REPLACE VIEW qrels_live AS
{QRELS_LIVE};

-- `qrels` is qrels_live materialised whenever the current version changes (store.set_current_dataset): every
-- metric, check and classifier query joins on it, and recomputing the median per (case, unit) each time cost
-- about a second at 300k labels. Its columns are qrels_live's, named here so the unit id can be stored as zstd.
CREATE TABLE IF NOT EXISTS qrels (
    case_id VARCHAR,
    unit_id VARCHAR USING COMPRESSION zstd,
    grade INTEGER,
    n_annotators BIGINT,
    min_grade INTEGER,
    max_grade INTEGER,
    adjudicated BOOLEAN
);
"""
DDL = (
    DDL.replace("{SPAN_UNIT}", span_unit("r.document_id", "r.span_start", "r.span_end"))
    .replace("{QRELS_LIVE}", QRELS_LIVE)
    .replace("{CURRENT_VERSION}", CURRENT_VERSION)
)
