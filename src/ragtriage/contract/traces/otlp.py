"""OTLP/JSON export requests (``resourceSpans`` -> ``scopeSpans`` -> ``spans``), camelCase or snake_case, one
request per file or one per line (the OTel Collector file exporter), plain or compressed.

Python walks the containers a block at a time (``contract.json_stream``) and hands each span's JSON text to
DuckDB in Arrow batches; DuckDB unnests the attributes and reads the OpenInference (``openinference.span.kind``,
``input.value``, ``retrieval.documents.{i}.document.*``, ``reranker.*``) and OTel GenAI (``gen_ai.operation.name
= retrieval``, ``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents``) conventions in SQL. Memory is
bounded by one batch of spans and the largest single span.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.contract.arrow_scan import run_on_arrow
from ragtriage.contract.compression import compression_of, open_binary
from ragtriage.contract.digest import folded
from ragtriage.contract.errors import path_findings
from ragtriage.contract.json_stream import JsonStream, JsonStreamError, bounded_loads, json_stream
from ragtriage.contract.staging import sql_str
from ragtriage.contract.traces import otlp_lines
from ragtriage.contract.traces.options import TraceOptions
from ragtriage.contract.traces.otlp_docs import DOC_ROWS_TABLE, doc_rows_sql, drop_unkept, insert_doc_rows, odd_sql
from ragtriage.contract.traces.paths import json_path
from ragtriage.contract.traces.tables import id_faults_sql

_BATCH = 20_000
_RESOURCE = ("resourceSpans", "resource_spans")
_SCOPE = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans")
_SCALARS = (
    "stringValue",
    "string_value",
    "intValue",
    "int_value",
    "doubleValue",
    "double_value",
    "boolValue",
    "bool_value",
)
_RAW = pa.schema([("file", pa.string()), ("line", pa.int64()), ("res", pa.int64()), ("j", pa.string())])


def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain value (arrays as lists, key-value lists as dicts)."""
    if not isinstance(v, dict):
        return v
    for key in _SCALARS:
        if key in v:
            return v[key]
    arr = v.get("arrayValue", v.get("array_value"))
    if isinstance(arr, dict):
        return [any_value(x) for x in arr.get("values", [])]
    kv = v.get("kvlistValue", v.get("kvlist_value"))
    if isinstance(kv, dict):
        return attributes(kv.get("values"))
    return None


def attributes(items: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` list -> {key: value} (a resource's few attributes; spans are unnested in SQL)."""
    if not isinstance(items, list):
        return {}
    return {a["key"]: any_value(a.get("value")) for a in items if isinstance(a, dict) and "key" in a}


def is_otlp(head: str) -> bool:
    return any(f'"{k}"' in head for k in _RESOURCE)


class _Walk:
    """Spans and resources of one file, appended to ``trc_raw``/``trc_res`` in batches."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, res0: int) -> None:
        self.con, self.file, self.res = con, str(path), res0
        self.rows: list[tuple[int, int, str]] = []
        self.resources: list[tuple[int, str]] = []

    def flush(self) -> None:
        if self.rows:
            lines, res, texts = zip(*self.rows, strict=True)
            batch = pa.RecordBatch.from_arrays(
                [pa.array([self.file] * len(lines)), pa.array(lines), pa.array(res), pa.array(texts)], schema=_RAW
            )
            _insert(self.con, "trc_raw", batch, "file, line, res, j")
            self.rows = []
        if self.resources:
            self.con.executemany("INSERT INTO trc_res VALUES (?, ?)", self.resources)
            self.resources = []

    def request(self, js: JsonStream) -> None:
        if js.kind() != "object":
            raise js.error("expected an OTLP export request: an object with resourceSpans")
        line, found = js.line, False
        for key in js.items():
            if key in _RESOURCE and js.kind() == "array":
                found = True
                for _ in js.elements():
                    self.resource_spans(js)
            else:
                js.skip()
        if not found:  # another format's object (a Langfuse observation) would be skipped without a word
            raise JsonStreamError(self.file, line, None, otlp_lines.NOT_A_REQUEST)

    def resource_spans(self, js: JsonStream) -> None:
        self.res += 1
        attrs: dict[str, Any] = {}
        for key in js.items():
            if key == "resource":
                res = js.value()
                attrs = attributes(res.get("attributes")) if isinstance(res, dict) else {}
            elif key in _SCOPE and js.kind() == "array":
                for _ in js.elements():
                    self.scope_spans(js)
            else:
                js.skip()
        self.resources.append((self.res, json.dumps(attrs, default=str)))

    def scope_spans(self, js: JsonStream) -> None:
        for key in js.items():
            if key == "spans" and js.kind() == "array":
                for _ in js.elements():
                    self.rows.append((js.line, self.res, js.raw()))
                    if len(self.rows) >= _BATCH:
                        self.flush()
            else:
                js.skip()


def _insert(con: duckdb.DuckDBPyConnection, table: str, batch: pa.RecordBatch, cols: str) -> None:
    run_on_arrow(con, "__trc_batch", batch, f"INSERT INTO {table} ({cols}) SELECT {cols} FROM __trc_batch")


def read_otlp(con: duckdb.DuckDBPyConnection, path: Path, res0: int, opts: TraceOptions) -> int:
    """Append the spans of ``path`` to ``trc_raw`` (and its resources to ``trc_res``); returns the last resource
    number used. Raises ``JsonStreamError`` naming file, line and column when the file is not OTLP/JSON."""
    if one_request_per_line(path):
        return read_otlp_lines(con, path, res0, opts)
    walk = _Walk(con, path, res0)
    with json_stream(path) as js:
        for _ in js.lines():
            walk.request(js)
    walk.flush()
    return walk.res


def create_raw(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE trc_raw (sid BIGINT DEFAULT nextval('trc_sid'), file VARCHAR, "
                "line BIGINT, res BIGINT, j VARCHAR)")  # fmt: skip
    con.execute("CREATE OR REPLACE TEMP TABLE trc_res (res BIGINT, attrs VARCHAR)")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE trc_sp (sid BIGINT, file VARCHAR, line BIGINT, res BIGINT, trace_id VARCHAR, "
        "span_id VARCHAR, parent_id VARCHAR, start_ns VARCHAR, end_ns VARCHAR, code VARCHAR, message VARCHAR)"
    )
    con.execute("CREATE OR REPLACE TEMP TABLE trc_kv (sid BIGINT, key VARCHAR, val VARCHAR)")

    con.execute(
        f"CREATE OR REPLACE TEMP TABLE trc_span (sid BIGINT DEFAULT nextval('trc_sid'), file VARCHAR, line BIGINT, "
        f"res BIGINT, s {_struct(con, SPAN_SHAPE)})"
    )


_ANY = (
    "{"
    + ", ".join(f'"{k}": "VARCHAR"' for k in _SCALARS)
    + ', "arrayValue": {"values": [{"stringValue": "VARCHAR"}]}, '
    + '"array_value": {"values": [{"string_value": "VARCHAR"}]}}'
)
_KV = '[{"key": "VARCHAR", "value": ' + _ANY + "}]"
SPAN_SHAPE = (
    '{"traceId": "VARCHAR", "trace_id": "VARCHAR", "spanId": "VARCHAR", "span_id": "VARCHAR", '
    '"parentSpanId": "VARCHAR", "parent_span_id": "VARCHAR", "startTimeUnixNano": "VARCHAR", '
    '"start_time_unix_nano": "VARCHAR", "endTimeUnixNano": "VARCHAR", "end_time_unix_nano": "VARCHAR", '
    '"status": {"code": "VARCHAR", "message": "VARCHAR"}, "attributes": ' + _KV + "}"
)
"""One span as DuckDB parses it, once (``from_json``): both key styles, every attribute value as text."""
_RES_SHAPE = '{"attributes": ' + _KV + "}"
REQUEST_SHAPE = (
    "{"
    + ", ".join(
        f'"{r}": [{{"resource": {_RES_SHAPE}, "{sc}": [{{"spans": [{SPAN_SHAPE}]}}]}}]'
        for r, sc in (("resourceSpans", "scopeSpans"), ("resource_spans", "scope_spans"))
    )
    + "}"
)


def _struct(con: duckdb.DuckDBPyConnection, shape: str) -> str:
    """The DuckDB type ``from_json`` gives for ``shape`` (so the span table can be declared before it is filled)."""
    return str(con.execute(f"SELECT typeof(from_json('{{}}', {sql_str(shape)}))").fetchall()[0][0])


def _value_sql(v: str, fields: Collection[str] = _SCALARS + ("arrayValue", "array_value")) -> str:
    """An ``AnyValue`` struct ``v`` as text; ``fields`` are those its type has (a style's, or both)."""
    scalars = [f"CAST({v}.{k} AS VARCHAR)" for k in _SCALARS if k in fields]
    arrays = [
        f'list_transform({v}.{a}."values", lambda x: x.{s})'
        for a, s in (("arrayValue", "stringValue"), ("array_value", "string_value"))
        if a in fields
    ]
    as_json = f"CAST(to_json(coalesce({', '.join(arrays)})) AS VARCHAR)" if arrays else None
    return f"coalesce({', '.join(scalars + ([as_json] if as_json else []))})"


def one_request_per_line(path: Path) -> bool:
    """Whether the file is one request per line (the Collector file exporter's layout): its first line is a whole
    JSON object and no line is longer than the line reader takes (a longer one is streamed as a document)."""
    return otlp_lines.longest_line_fits(path) and _first_line_is_object(path)


def _first_line_is_object(path: Path) -> bool:
    with open_binary(path) as fh:
        first = fh.readline(otlp_lines.MAX_LINE + 1).decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        return isinstance(bounded_loads(first, otlp_lines.MAX_LINE), dict)
    except ValueError:  # not JSON, or beyond the parser's bounds: the document reader names where
        return False


def read_otlp_lines(con: duckdb.DuckDBPyConnection, path: Path, res0: int, opts: TraceOptions) -> int:
    """A file of one request per line (``otlp_lines``); returns the last resource number used."""
    return otlp_lines.read_lines(con, path, res0, REQUEST_SHAPE, _value_sql, wanted_keys(opts))


def read_otlp_once(
    con: duckdb.DuckDBPyConnection, path: Path, res0: int, opts: TraceOptions, digest: bool
) -> int | None:
    """A plain file of one request per line read in one pass that also checks what the text scan checks and,
    with ``digest``, takes the sha256 the load records (``otlp_lines.line_blocks``), where each had a pass of its
    own; returns the last resource number used. None, with nothing of the file left staged, when that pass does
    not take the file: compressed, not one request per line, holding what the scan stops at, or refused by the
    reader. The caller then reads it the usual way, the scan first, so every refusal is the one it was."""
    if compression_of(path) is not None or path_findings(path) or not _first_line_is_object(path):
        return None
    (sid0,) = con.execute(
        "SELECT coalesce(max(last_value), 0) FROM duckdb_sequences() WHERE temporary AND sequence_name = 'trc_sid'"
    ).fetchall()[0]
    try:
        return otlp_lines.read_lines(con, path, res0, REQUEST_SHAPE, _value_sql, wanted_keys(opts), checked=True,
                                     digest=folded(path) if digest else None)  # fmt: skip
    except (otlp_lines.TextFault, JsonStreamError, OSError):
        for table in ("trc_kv", "trc_docs", "trc_docs_lines", "trc_faults", "trc_sp", "trc_span"):
            con.execute(f"DELETE FROM {table} WHERE sid > ?", [sid0])
        con.execute("DELETE FROM trc_res WHERE res > ?", [res0])
        return None


def wanted_keys(opts: TraceOptions) -> list[str]:
    """The attribute keys a span is read by (besides the document attributes)."""
    named = [
        "openinference.span.kind",
        "input.value",
        "reranker.query",
        "gen_ai.operation.name",
        "gen_ai.retrieval.query.text",
        "gen_ai.retrieval.documents",
        "gen_ai.data_source.id",
    ]
    named += [k for k in (opts.query, opts.docs, opts.case_id_attribute, opts.principal_attribute) if k]
    named += [opts.groups_attribute] if opts.groups_attribute else []
    return list(dict.fromkeys(named))


def normalise_otlp(con: duckdb.DuckDBPyConnection, opts: TraceOptions) -> None:
    """``trc_raw`` -> ``trc_spans`` and ``trc_docs`` (see the package docstring)."""
    con.execute(
        f"""INSERT INTO trc_span (file, line, res, s)
            SELECT file, line, res, from_json(j, {sql_str(SPAN_SHAPE)}) FROM trc_raw ORDER BY sid"""
    )
    con.execute(
        """INSERT INTO trc_sp
           SELECT sid, file, line, res, coalesce(s.traceId, s.trace_id), coalesce(s.spanId, s.span_id),
                  coalesce(s.parentSpanId, s.parent_span_id), coalesce(s.startTimeUnixNano, s.start_time_unix_nano),
                  coalesce(s.endTimeUnixNano, s.end_time_unix_nano), s.status.code, s.status.message
           FROM trc_span"""
    )
    listed = ", ".join(sql_str(k) for k in wanted_keys(opts))
    odd = odd_sql("a.value", _SCALARS + ("arrayValue", "array_value"))
    kv = f"""(SELECT sid, a.key AS key, {_value_sql("a.value")} AS val, {odd} AS odd
              FROM (SELECT sid, unnest(s.attributes) AS a FROM trc_span))"""
    con.execute(f"INSERT INTO trc_kv SELECT sid, key, val FROM {kv} WHERE key IN ({listed})")
    con.execute(DOC_ROWS_TABLE + doc_rows_sql(kv))
    insert_doc_rows(con)

    def attr(key: str | None) -> str:
        return f"max(val) FILTER (WHERE key = {sql_str(key)})" if key else "CAST(NULL AS VARCHAR)"

    twice = " ".join(
        f"WHEN count(*) FILTER (WHERE key = {sql_str(k)}) > 1 THEN {sql_str(k)}" for k in wanted_keys(opts)
    )

    docs_attr = attr(opts.docs) if opts.docs else "CAST(NULL AS VARCHAR)"
    # the spans' attributes, pivoted where they are read: every table the load makes is held until it commits
    attrs = f"""(SELECT sid, upper({attr("openinference.span.kind")}) AS oi_kind, {attr("gen_ai.operation.name")} AS op,
                        {attr("input.value")} AS input, {attr("reranker.query")} AS rerank_query,
                        {attr("gen_ai.retrieval.query.text")} AS genai_query, {attr(opts.query)} AS opt_query,
                        {attr("gen_ai.retrieval.documents")} AS genai_docs, {docs_attr} AS opt_docs,
                        {attr(opts.case_id_attribute)} AS case_attr, {attr(opts.principal_attribute)} AS principal,
                        {attr(opts.groups_attribute)} AS groups_text, CASE {twice} END AS twice
                 FROM trc_kv WHERE key IN ({listed}) GROUP BY sid)"""
    start, end = "TRY_CAST(r.start_ns AS HUGEINT)", "TRY_CAST(r.end_ns AS HUGEINT)"
    # a JSON list of names, else one name; an object (or a list of something else) is no groups value: refused
    g = "CAST(a.groups_text AS JSON)"
    groups = f"""(CASE WHEN NOT json_valid(a.groups_text) THEN [a.groups_text]
                       WHEN json_type({g}) = 'ARRAY' THEN TRY_CAST({g} AS VARCHAR[])
                       WHEN json_type({g}) <> 'OBJECT' THEN [a.groups_text] END)"""
    code, msg = "r.code", "nullif(r.message, '')"
    kind = (
        "CASE WHEN a.opt_docs IS NOT NULL THEN 'RETRIEVER' WHEN a.oi_kind IN ('RETRIEVER', 'RERANKER') THEN a.oi_kind "
        "WHEN lower(a.op) = 'retrieval' THEN 'RETRIEVER' END"
    )
    con.execute(
        f"""INSERT INTO trc_spans BY NAME
            SELECT r.sid, r.file, r.line,
                   r.trace_id, r.span_id, nullif(r.parent_id, '') AS parent_id,
                   {kind} AS kind,
                   CASE WHEN {kind} = 'RERANKER' THEN coalesce(a.opt_query, a.rerank_query, a.input)
                        ELSE coalesce(a.opt_query, a.input, a.genai_query) END AS query,
                   CAST({start} AS DOUBLE) / 1e6 AS started,
                   CAST({end} - {start} AS DOUBLE) / 1e6 AS latency_ms,
                   CASE WHEN {code} IN ('2', 'STATUS_CODE_ERROR', 'ERROR') THEN coalesce({msg}, 'error status') END
                       AS error,
                   a.case_attr, a.principal,
                   {groups} AS groups,
                   res.attrs AS resource, a.twice,
                   {_bad_time("r.start_ns")} AS bad_start, {_bad_time("r.end_ns")} AS bad_end,
                   CASE WHEN a.groups_text IS NOT NULL AND {groups} IS NULL THEN a.groups_text END AS bad_groups
            FROM trc_sp r JOIN {attrs} a USING (sid) LEFT JOIN trc_res res USING (res)
            WHERE {kind} IS NOT NULL"""
    )
    drop_unkept(con, "trc_sp", "trc_spans")  # the other formats' spans have sids of their own
    listed_docs = ", ".join(sql_str(k) for k in ("gen_ai.retrieval.documents", opts.docs) if k)
    json_docs = f"SELECT count(*) FROM (SELECT 1 FROM trc_kv WHERE key IN ({listed_docs}) LIMIT 1)"
    if con.execute(json_docs).fetchall()[0][0]:  # only spans with a JSON list of documents need the pivot again
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE trc_otlp AS SELECT sid, genai_docs, opt_docs FROM {attrs} a
                WHERE {kind} IS NOT NULL AND (genai_docs IS NOT NULL OR opt_docs IS NOT NULL)"""
        )
        json_list_docs(con, "trc_otlp", "genai_docs", TraceOptions())
        json_list_docs(con, "trc_otlp", "opt_docs", opts)
        con.execute("DROP TABLE trc_otlp")
    for table in ("trc_kv", "trc_sp", "trc_span", "trc_raw", "trc_res"):
        con.execute(f"DROP TABLE {table}")


def _bad_time(ns: str) -> str:
    """SQL: the text ``ns`` when it is not an OTLP time (nanoseconds since the epoch: digits, within 64 bits),
    else NULL; a missing time is NULL too."""
    ok = f"regexp_full_match({ns}, '[0-9]{{1,20}}') AND TRY_CAST({ns} AS UBIGINT) IS NOT NULL"
    return f"CASE WHEN NOT ({ok}) THEN {ns} END"


def _first(x: str, paths: list[str]) -> str:
    return "coalesce(" + ", ".join(f"{x}->>{sql_str(json_path(p))}" for p in paths) + ")"


def json_list_docs(con: duckdb.DuckDBPyConnection, spans: str, column: str, opts: TraceOptions) -> None:
    """Append to ``trc_docs`` the documents of a JSON-list column of ``spans`` (GenAI's, the user's path, a
    Langfuse output), each read with the ``doc_id``/``score``/``content`` paths, else the usual names."""
    id_paths = [opts.doc_id] if opts.doc_id else ["id", "metadata.id", "metadata.document_id"]
    did = _first("x", id_paths)
    id_json = "coalesce(" + ", ".join(f"x->{sql_str(json_path(p))}" for p in id_paths) + ")"
    score = _first("x", [opts.score] if opts.score else ["score", "metadata.score"])
    content = _first("x", [opts.content] if opts.content else ["content", "page_content", "text"])
    docs = f"""(SELECT sid, unnest(d) AS x, generate_subscripts(d, 1) AS i
               FROM (SELECT sid, CAST(CAST({column} AS JSON) AS JSON[]) AS d FROM {spans}
                     WHERE {column} IS NOT NULL AND json_valid({column})
                       AND json_type(CAST({column} AS JSON)) = 'ARRAY'))"""
    con.execute(
        f"""INSERT INTO trc_docs (sid, role, idx, document_id, score_text, content, metadata)
            SELECT sid, 'retrieved', CAST(i - 1 AS INTEGER), {did}, {score}, {content},
                   CAST(x->'metadata' AS VARCHAR)
            FROM {docs}"""
    )
    con.execute(id_faults_sql(docs, id_json))
