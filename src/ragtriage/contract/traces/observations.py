"""Langfuse observation exports (a JSON array, JSONL, or the API's ``{"data": [...]}`` pages), read with field
paths: Langfuse fixes no document schema, so ``--trace-query``/``--trace-docs``/``--trace-doc-id``/``--trace-score``
name where the query and the ranked documents are; without them the usual places are tried (``input.query`` or a
string ``input``; ``output.documents`` or a list ``output``; each document's ``id``, ``score``, ``content``).
An observation whose documents path holds no list is not a retrieval and is left out."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from ragtriage.contract.arrow_scan import run_on_arrow
from ragtriage.contract.errors import Finding
from ragtriage.contract.json_stream import JsonStream, json_stream
from ragtriage.contract.staging import sql_str
from ragtriage.contract.traces.options import TraceOptions, json_path
from ragtriage.contract.traces.otlp import json_list_docs
from ragtriage.contract.traces.tables import SPAN_COLUMNS

_BATCH = 20_000
_RAW = pa.schema([("file", pa.string()), ("line", pa.int64()), ("j", pa.string())])


def create_raw(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE trc_obs (sid BIGINT DEFAULT nextval('trc_sid'), file VARCHAR, "
                "line BIGINT, j VARCHAR)")  # fmt: skip


def read_observations(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Append each observation of ``path`` to ``trc_obs`` with its line."""
    rows: list[tuple[int, str]] = []

    def flush() -> None:
        if rows:
            lines, texts = zip(*rows, strict=True)
            batch = pa.RecordBatch.from_arrays(
                [pa.array([str(path)] * len(lines)), pa.array(lines), pa.array(texts)], schema=_RAW
            )
            run_on_arrow(con, "__obs_batch", batch, "INSERT INTO trc_obs (file, line, j) SELECT * FROM __obs_batch")
            rows.clear()

    def element(js: JsonStream) -> None:
        if js.kind() != "object":
            raise js.error("expected a Langfuse observation (a JSON object)")
        rows.append((js.line, js.raw()))
        if len(rows) >= _BATCH:
            flush()

    with json_stream(path) as js:
        for _ in js.lines():
            if js.kind() == "array":
                for _ in js.elements():
                    element(js)
            else:
                element(js)
        flush()


def _text(j: str, path: str | None, fallbacks: tuple[str, ...] = ()) -> str:
    """The string at ``path`` (or the first of ``fallbacks`` holding one; a fallback that is a string itself)."""
    if path:
        return f"({j}->>{sql_str(json_path(path))})"
    parts = [f"CASE WHEN json_type({j}->{sql_str(json_path(p))}) = 'VARCHAR' THEN {j}->>{sql_str(json_path(p))} END"
             for p in fallbacks]  # fmt: skip
    return "coalesce(" + ", ".join(parts) + ")"


def _list(j: str, path: str | None, fallbacks: tuple[str, ...]) -> str:
    paths = (path,) if path else fallbacks
    parts = [f"CASE WHEN json_type({j}->{sql_str(json_path(p))}) = 'ARRAY' THEN CAST({j}->{sql_str(json_path(p))} "
             "AS VARCHAR) END" for p in paths]  # fmt: skip
    return "coalesce(" + ", ".join(parts) + ")"


def _bad_time(raw: str, parsed: str) -> str:
    """SQL: the JSON text of a time given (not null) that is no ISO 8601 timestamp, else NULL."""
    return f"CASE WHEN json_type({raw}) <> 'NULL' AND {parsed} IS NULL THEN CAST({raw} AS VARCHAR) END"


def otlp_objects(con: duckdb.DuckDBPyConnection) -> list[Finding]:
    """An OTLP export request among the observations (one file holding both formats): refused with its line, so
    neither format's spans are skipped silently."""
    rows = con.execute(
        """SELECT file, min(line), count(*) FROM trc_obs
           WHERE json_exists(j, '$.resourceSpans') OR json_exists(j, '$.resource_spans') GROUP BY file ORDER BY 1"""
    ).fetchall()
    msg = "an OTLP export request (resourceSpans) in a file of Langfuse observations; one file holds one format"
    return [Finding(str(f), int(line), None, "unreadable", msg, "error", int(n)) for f, line, n in rows]


def normalise_observations(con: duckdb.DuckDBPyConnection, opts: TraceOptions) -> None:
    j = "CAST(o.j AS JSON)"
    ts = "TRY_CAST({} AS TIMESTAMPTZ)"
    start = ts.format(f"coalesce({j}->>'startTime', {j}->>'start_time')")
    end = ts.format(f"coalesce({j}->>'endTime', {j}->>'end_time')")
    raw_start = f"coalesce({j}->'startTime', {j}->'start_time')"
    raw_end = f"coalesce({j}->'endTime', {j}->'end_time')"
    # the principal is one id (a string or an integer); another type is refused, never read as no principal
    u = f"{j}->{sql_str(json_path(opts.principal_attribute or 'userId'))}"
    principal = f"(CASE WHEN json_type({u}) IN ('VARCHAR', 'BIGINT', 'UBIGINT') THEN {u}->>'$' END)"
    bad_principal = f"CASE WHEN json_type({u}) <> 'NULL' AND {principal} IS NULL THEN CAST({u} AS VARCHAR) END"
    if opts.groups_attribute:
        # a list of names or one name (a string or a number); anything else is refused, never read as absent
        g = f"{j}->{sql_str(json_path(opts.groups_attribute))}"
        groups = f"""(CASE json_type({g}) WHEN 'ARRAY' THEN TRY_CAST({g} AS VARCHAR[])
                                          WHEN 'VARCHAR' THEN [{g}->>'$'] WHEN 'BIGINT' THEN [{g}->>'$']
                                          WHEN 'UBIGINT' THEN [{g}->>'$'] END)"""
        bad_groups = f"CASE WHEN json_type({g}) <> 'NULL' AND {groups} IS NULL THEN CAST({g} AS VARCHAR) END"
    else:
        groups, bad_groups = "NULL", "NULL"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE trc_obs_n AS
            SELECT o.sid, o.file, o.line,
                   coalesce({j}->>'traceId', {j}->>'trace_id') AS trace_id, {j}->>'id' AS span_id,
                   coalesce({j}->>'parentObservationId', {j}->>'parent_observation_id') AS parent_id,
                   'RETRIEVER' AS kind,
                   {_text(j, opts.query, ("input.query", "input"))} AS query,
                   epoch_ms({start}) AS started,
                   CAST(epoch_ms({end}) - epoch_ms({start}) AS DOUBLE) AS latency_ms,
                   CASE WHEN {j}->>'level' = 'ERROR' THEN coalesce(nullif({j}->>'statusMessage', ''), 'ERROR') END
                       AS error,
                   {_text(j, opts.case_id_attribute) if opts.case_id_attribute else "NULL"} AS case_attr,
                   {principal} AS principal, {bad_principal} AS bad_principal,
                   {groups} AS groups, {bad_groups} AS bad_groups,
                   {_bad_time(raw_start, start)} AS bad_start, {_bad_time(raw_end, end)} AS bad_end,
                   CAST(NULL AS VARCHAR) AS resource,
                   {_list(j, opts.docs, ("output.documents", "output"))} AS docs
            FROM trc_obs o"""
    )
    con.execute(
        f"""INSERT INTO trc_spans BY NAME SELECT {SPAN_COLUMNS}, bad_start, bad_end, bad_groups, bad_principal
            FROM trc_obs_n WHERE docs IS NOT NULL"""
    )
    json_list_docs(con, "trc_obs_n", "docs", opts)
    con.execute("DROP TABLE trc_obs_n")
    con.execute("DROP TABLE trc_obs")
