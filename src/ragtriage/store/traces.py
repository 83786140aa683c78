"""Retriever spans as a run: each span's query matched to a case, its ranked documents as the run's lists.

Matching, in order: the case id an attribute names (``--case-id-attribute``); else the query text with
whitespace normalised (trimmed, runs of blanks as one space), exact otherwise; else a new unlabelled case whose id
is ``trace-`` + the first 16 hex digits of the SHA-256 of the normalised query (stable across loads), added to the
dataset version this load writes. Several spans of one case: the first or the last (by start time) is the case's
list and its one event, or with ``all`` the first is the list and every span is an event of its own (its latency,
its error, whether it retrieved anything): repetitions inform latency, never duplicate a list in the metrics.

A reranker span joined to a retriever span (same trace, same parent, or the retriever as its parent) makes a
two-stage list: its input documents the candidate stage, its output documents the final stage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from ragtriage.contract.errors import Finding, ValidationFailed
from ragtriage.contract.staging import Staged, drop_staged
from ragtriage.contract.traces import TraceOptions, TracesStaged, stage_traces
from ragtriage.contract.traces.doc_metadata import metadata_json
from ragtriage.contract.traces.stage import TraceSource
from ragtriage.contract.traces.stage import trace_format as trace_format  # validate_file reads it here
from ragtriage.contract.traces.tables import doc_score, drop_docs, drop_tables
from ragtriage.contract.trec import CASE_COLUMNS

_UNEVEN = " OR ".join(
    [f"contains({{q}}, {c})" for c in ("'  '", "chr(9)", "chr(10)", "chr(12)", "chr(13)")] + ["trim({q}) <> {q}"]
)


def normalised(q: str) -> str:
    """``q`` with each run of whitespace (``\\s``: space, tab, LF, FF, CR) one space, then trimmed (``trim`` also
    takes the other Unicode spaces); the regular expression only runs on a text that has something to change (most
    have not, and it costs several times the checks)."""
    return f"CASE WHEN {_UNEVEN.format(q=q)} THEN trim(regexp_replace({q}, '\\s+', ' ', 'g')) ELSE {q} END"


_RESOURCE_VERSIONS = {
    "corpus_version": ("corpus.version", "rag.corpus.version"),
    "index_version": ("index.version", "rag.index.version", "gen_ai.data_source.id"),
    "embedding_model": ("embedding.model_name", "embedding.model", "gen_ai.request.model"),
}


def read_traces(con: duckdb.DuckDBPyConnection, paths: list[TraceSource], opts: TraceOptions) -> TracesStaged:
    """Stage the trace files; any error is fatal (the caller's transaction rolls back)."""
    staged = stage_traces(con, paths, opts, digest=True)
    errors = [f for f in staged.findings if f.severity == "error"]
    if errors:
        raise ValidationFailed(errors)
    return staged


def validate_traces(path: Path, opts: TraceOptions | None = None) -> list[Finding]:
    """``ragtriage validate`` on a trace export: what ``load --traces`` would refuse or warn about in it, read
    into a store of its own in memory: the spans and documents, then the document metadata a derived corpus
    manifest reads (``trace_manifest.metadata_findings``, the load's own checks)."""
    from ragtriage.store.connection import connect
    from ragtriage.store.trace_manifest import metadata_findings

    opts = opts or TraceOptions()
    con = connect(":memory:")
    try:
        findings = stage_traces(con, [path], opts).findings
        if any(f.severity == "error" for f in findings):
            return findings
        return findings + metadata_findings(con, opts)
    finally:
        con.close()


def _lists(con: duckdb.DuckDBPyConnection) -> None:
    """``trc_lists``: one row per retrieval (a retriever span, with the reranker joined to it if any), a view
    that matching reads once."""
    con.execute(
        """CREATE OR REPLACE TEMP VIEW trc_lists AS
           WITH r AS (SELECT * FROM trc_spans WHERE kind = 'RETRIEVER'),
                k AS (SELECT * FROM trc_spans WHERE kind = 'RERANKER'),
                joined AS (
                    SELECT k.sid AS k_sid, arg_max(r.sid, coalesce(r.started, 0)) AS r_sid FROM k JOIN r
                      ON r.trace_id = k.trace_id
                     AND (k.parent_id IS NOT DISTINCT FROM r.parent_id OR k.parent_id = r.span_id)
                    GROUP BY k.sid)
           SELECT coalesce(r.sid, k.sid) AS sid, k.sid AS k_sid,
                  coalesce(r.query, k.query) AS query, coalesce(r.case_attr, k.case_attr) AS case_attr,
                  coalesce(r.started, k.started) AS started,
                  CASE WHEN r.sid IS NULL THEN k.latency_ms
                       ELSE greatest(r.started + r.latency_ms, k.started + k.latency_ms) - r.started END AS latency_ms,
                  coalesce(r.error, k.error) AS error, coalesce(r.principal, k.principal) AS principal,
                  coalesce(r.groups, k.groups) AS groups, coalesce(r.trace_id, k.trace_id) AS trace_id,
                  coalesce(r.span_id, k.span_id) AS span_id, coalesce(r.line, k.line) AS line,
                  coalesce(r.file, k.file) AS file, coalesce(r.resource, k.resource) AS resource
           FROM r FULL JOIN joined j ON j.r_sid = r.sid FULL JOIN k ON k.sid = j.k_sid
           WHERE r.sid IS NOT NULL OR k.sid IS NOT NULL"""
    )


_LATER = "sid IN (SELECT sid FROM trc_later)"
"""The spans of ``trc_match`` after their case's first (``--repeated`` deciding the order); the others are their
case's list."""


def match_cases(con: duckdb.DuckDBPyConnection, cases: Staged, opts: TraceOptions) -> Staged:
    """Match every retrieval to a case of the staged ``cases``; return the cases with the new ones added."""
    _lists(con)
    norm_q, norm_c = normalised("l.query"), normalised("query")
    # a case id named by an attribute is looked up only when some span names one (most exports name none)
    named = con.execute("SELECT count(case_attr) > 0 FROM trc_spans").fetchall()[0][0]
    ids = f"SELECT DISTINCT id FROM {cases.name}" if named else "SELECT CAST(NULL AS VARCHAR) AS id WHERE false"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE trc_match AS
            WITH by_query AS (SELECT {norm_c} AS nq, min(id) AS id, count(*) AS n FROM {cases.name}
                              WHERE query IS NOT NULL GROUP BY ALL),
                 ids AS ({ids})
            SELECT l.*, CASE WHEN a.id IS NULL THEN q.n END AS n_same,
                   coalesce(a.id, q.id, 'trace-' || left(sha256({norm_q}), 16)) AS case_id,
                   CASE WHEN a.id IS NOT NULL THEN 'attribute' WHEN q.id IS NOT NULL THEN 'query' ELSE 'new' END AS how
            FROM trc_lists l LEFT JOIN ids a ON a.id = l.case_attr LEFT JOIN by_query q ON q.nq = {norm_q}"""
    )
    # ``trc_later``: the spans after a case's first, first to last or (``--repeated last``) last to first; the
    # window reads three columns of the spans, not all of them (it holds every column it is given)
    order = "started DESC, sid DESC" if opts.repeated == "last" else "started, sid"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE trc_later AS
            SELECT sid FROM trc_match QUALIFY row_number() OVER (PARTITION BY case_id ORDER BY {order}) > 1"""
    )
    # the spans are held once from here on: their earlier tables are done with, and the chosen are a view
    con.execute("DROP VIEW trc_lists")
    con.execute("DROP TABLE trc_spans")
    con.execute(f"CREATE OR REPLACE TEMP VIEW trc_chosen AS SELECT * FROM trc_match WHERE NOT {_LATER}")
    new_cases = con.execute("SELECT count(*) FROM trc_chosen WHERE how = 'new'").fetchall()[0][0]
    principal = (
        "CASE WHEN principal IS NOT NULL OR groups IS NOT NULL "
        "THEN CAST(json_object('id', principal, 'groups', groups) AS VARCHAR) END"
    )
    cols = CASE_COLUMNS.replace("CAST(NULL AS VARCHAR) AS principal", f"{principal} AS principal")
    cols = cols.replace("CAST(NULL AS VARCHAR[]) AS tags", "['traces'] AS tags")
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE stg_cases_traces AS
            SELECT * FROM {cases.name}
            UNION ALL BY NAME
            SELECT line, case_id AS id, query, {cols} FROM trc_chosen WHERE how = 'new'"""
    )
    rows = cases.rows + int(new_cases)
    return Staged("stg_cases_traces", cases.path, cases.fmt, rows, cases.findings, cases.line_label)


def match_note(con: duckdb.DuckDBPyConnection, opts: TraceOptions) -> str:
    """How the spans became cases, as the sentence the load prints."""
    counts = dict(con.execute("SELECT how, count(*) FROM trc_chosen GROUP BY how").fetchall())
    shared = con.execute("SELECT count(*) FROM trc_chosen WHERE how = 'query' AND n_same > 1").fetchall()[0][0]
    spans, repeated = con.execute("SELECT count(*), (SELECT count(*) FROM trc_later) FROM trc_match").fetchall()[0]
    return (
        f"{int(spans):,} retrieval span(s): {counts.get('attribute', 0):,} case(s) matched by attribute, "
        f"{counts.get('query', 0):,} by query text (whitespace normalised), {counts.get('new', 0):,} new unlabelled "
        "case(s)"
        + (f"; {repeated:,} repeated span(s) of a case ({opts.repeated})" if repeated else "")
        + (
            f"; {shared:,} query text(s) shared by several cases went to the lowest case id (name the case "
            "with --case-id-attribute)"
            if shared
            else ""
        )
    )


_HEAD = "(rank = 1 OR rank IS NULL)"
"""The ``trc_docs`` rows that say which lists a span has: each list's first (a reader that ranks its lists starts
each at 1) and the unranked, a tenth of the rows where a list holds ten."""

_RERANKED = "(SELECT sid FROM trc_heads WHERE role = 'input')"
"""The reranker spans that list their input documents (a candidate stage of their own)."""

_OWN_LIST = f"(c.k_sid IS NULL OR c.k_sid NOT IN {_RERANKED})"
"""Whether a matched retrieval ``c``'s candidates (or its final list) are its retriever's documents."""


def stage_trace_run(
    con: duckdb.DuckDBPyConnection, opts: TraceOptions, label: str
) -> tuple[dict[str, Staged], dict[str, int]]:
    """``stg_trace_results`` and ``stg_trace_events`` from the matched retrievals, and each stage's depth (its
    deepest rank). A result's ``metadata`` holds its span's trace and span ids beside its document's metadata; a
    document without metadata has it only at rank 1 of its list, once per list and stage (the ids are the
    list's, not the document's: a copy on every row was most of what writing a trace run cost beyond a TREC
    run's rows).

    The results are a view over the documents, as a TREC run's are over its read lines: the load writes them
    from there, rather than copying every row into a table first (in chunk mode, whose document ids are
    rewritten before writing, they are a table). Their count and each stage's depth are read in one pass."""
    # which lists each span has, read once for the results and the events: each list's first row
    con.execute(f"CREATE OR REPLACE TEMP TABLE trc_heads AS SELECT DISTINCT sid, role FROM trc_docs WHERE {_HEAD}")
    drop_staged(con, "stg_trace_results")
    con.execute(
        f"""CREATE TEMP VIEW stg_trace_results AS
           WITH parts AS NOT MATERIALIZED (
               -- a retriever's own list: the final stage, or the candidates when its reranker lists none
               SELECT c.line, c.case_id, c.trace_id, c.span_id, d.*,
                      CASE WHEN c.k_sid IS NULL THEN 'final' ELSE 'candidate' END AS stage
               FROM trc_chosen c JOIN trc_docs d ON d.sid = c.sid AND d.role = 'retrieved'
               WHERE {_OWN_LIST}
               UNION ALL
               SELECT c.line, c.case_id, c.trace_id, c.span_id, d.*,
                      CASE WHEN d.role = 'output' THEN 'final' ELSE 'candidate' END AS stage
               FROM trc_chosen c JOIN trc_docs d ON d.sid = c.k_sid AND d.role IN ('input', 'output')),
           ranked AS (  -- a reader that ranked its lists gave each document its rank; the others are ranked here
               SELECT * FROM parts WHERE rank IS NOT NULL
               UNION ALL BY NAME
               SELECT * REPLACE (row_number() OVER (PARTITION BY case_id, stage ORDER BY idx) AS rank)
               FROM parts WHERE rank IS NULL)
           SELECT line, case_id, stage, CAST(rank AS BIGINT) AS rank, document_id, CAST(NULL AS VARCHAR) AS chunk_id,
                  {doc_score()} AS score, content AS snippet,
                  CASE WHEN metadata IS NOT NULL
                       THEN CAST(json_object('trace_id', trace_id, 'span_id', span_id,
                                             'document', {metadata_json("metadata")}) AS VARCHAR)
                       WHEN rank = 1  -- the span's ids alone, once per list
                       THEN CAST(json_object('trace_id', trace_id, 'span_id', span_id, 'document', NULL) AS VARCHAR)
                       END AS metadata
           FROM ranked"""
    )
    # One event per case here, its chosen span's (the run's contract: one event row per case); with ``all`` the
    # case's other spans wait in ``stg_trace_repeats`` for ``write_repeats``.
    listed = "EXISTS (SELECT 1 FROM trc_heads h WHERE h.sid = c.{} AND h.role = '{}')"
    events = f"""SELECT c.line, c.case_id, c.latency_ms, FALSE AS timed_out,
                        NOT ({_OWN_LIST} AND {listed.format("sid", "retrieved")}
                             OR {listed.format("k_sid", "output")}) AS empty,
                        CAST(NULL AS BOOLEAN) AS fallback,
                        CASE WHEN c.error IS NULL THEN 'ok' ELSE 'error' END AS status, c.error
                 FROM trc_match c"""
    con.execute(f"CREATE OR REPLACE TEMP TABLE stg_trace_events AS {events} WHERE NOT {_LATER}")
    repeats = _LATER if opts.repeated == "all" else "false"
    con.execute(f"CREATE OR REPLACE TEMP TABLE stg_trace_repeats AS {events} WHERE {repeats}")
    counts = con.execute("SELECT stage, count(*), max(rank) FROM stg_trace_results GROUP BY stage").fetchall()
    n = con.execute("SELECT count(*) FROM stg_trace_events").fetchall()[0][0]
    staged = {
        "results": Staged("stg_trace_results", Path(label), "traces", sum(int(r[1]) for r in counts), [], "line"),
        "events": Staged("stg_trace_events", Path(label), "traces", int(n), [], "line"),
    }
    return staged, {str(stage): int(k) for stage, _, k in counts}


def chunk_run(con: duckdb.DuckDBPyConnection) -> None:
    """In chunk mode, the staged results as a table whose document ids ``docno_is_chunk`` can rewrite."""
    con.execute("CREATE OR REPLACE TEMP TABLE trc_chunk_results AS SELECT * FROM stg_trace_results")
    drop_staged(con, "stg_trace_results")
    con.execute("ALTER TABLE trc_chunk_results RENAME TO stg_trace_results")
    drop_docs(con)  # every document is in that table now: not held twice while they are written


def write_repeats(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    """Add the repeated spans of ``--repeated all`` to the run's events (after ``write_run`` stored the run):
    each is one more latency and status for its case; the results keep one list per case."""
    return int(
        con.execute(
            """INSERT INTO events BY NAME
               SELECT ? AS run_id, case_id, latency_ms, timed_out, empty, fallback, status, error
               FROM stg_trace_repeats WHERE case_id IN (SELECT case_id FROM cases)""",
            [run_id],
        ).fetchall()[0][0]
    )


def trace_manifest(con: duckdb.DuckDBPyConnection, run_id: str, depth: dict[str, int]) -> dict[str, Any]:
    """run.json facts from the spans' resource attributes: versions where a known attribute names them, and
    every distinct resource (up to five) under ``system``; ``k`` and ``candidate_k`` from the stages' ``depth``."""
    rows = con.execute(
        "SELECT DISTINCT resource FROM trc_chosen WHERE resource IS NOT NULL ORDER BY 1 LIMIT 5"
    ).fetchall()
    resources = [json.loads(r[0]) for r in rows]
    m: dict[str, Any] = {"run_id": run_id, "source": "traces"}
    if resources:
        m["system"] = {"resources": resources}
        for key, names in _RESOURCE_VERSIONS.items():
            found = next((str(r[n]) for r in resources for n in names if r.get(n) not in (None, "")), None)
            if found is not None:
                m[key] = found
    if "candidate" in depth:
        m["candidate_k"] = int(depth["candidate"])
    m["k"] = int(depth.get("final") or 1)
    return m


def drop_trace_tables(con: duckdb.DuckDBPyConnection) -> None:
    drop_staged(con, "stg_trace_results")
    con.execute("DROP VIEW IF EXISTS trc_chosen")
    con.execute("DROP VIEW IF EXISTS trc_lists")
    drop_tables(con)
    for t in ("trc_match", "trc_later", "trc_heads", "stg_trace_events", "stg_trace_repeats"):
        con.execute(f"DROP TABLE IF EXISTS {t}")
