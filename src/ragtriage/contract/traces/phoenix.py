"""Phoenix's span export as Parquet (``px.Client().get_spans_dataframe()`` written with ``to_parquet``): one row
per span, ``context.trace_id``, ``context.span_id``, ``parent_id``, ``span_kind``, ``start_time``, ``end_time``,
``status_code``, ``attributes.input.value`` and ``attributes.retrieval.documents`` (a list of structs with
``document.id``/``document.score``/``document.content``/``document.metadata``); reranker spans carry
``attributes.reranker.input_documents``/``output_documents``. DuckDB scans the file in place.

The same export in memory (the DataFrame ``get_spans_dataframe()`` returns, a pyarrow table, or any object
offering the Arrow C stream) is read alike: ``as_frame`` turns it into a pyarrow table and DuckDB scans that."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pyarrow as pa

from ragtriage.contract.compression import duckdb_source
from ragtriage.contract.staging import sql_str
from ragtriage.contract.traces.options import TraceOptions
from ragtriage.contract.traces.tables import SPAN_COLUMNS, list_docs

_LISTS = {
    "retrieved": "attributes.retrieval.documents",
    "input": "attributes.reranker.input_documents",
    "output": "attributes.reranker.output_documents",
}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def as_frame(source: object) -> pa.Table | None:
    """``source`` as a pyarrow table when it is a span DataFrame in memory (None for a path). A pandas index
    with a name (Phoenix indexes its spans by ``context.span_id``) becomes a column."""
    if isinstance(source, (str, Path)):
        return None
    if isinstance(source, pa.Table):
        return source
    if type(source).__name__ == "DataFrame" and hasattr(source, "to_numpy") and hasattr(source, "index"):
        named = getattr(source.index, "name", None) is not None
        return pa.Table.from_pandas(source, preserve_index=named)
    if hasattr(source, "__arrow_c_stream__"):
        return pa.table(source)
    raise TypeError(f"a trace source is a file path or a span DataFrame, not {type(source).__name__}")


def read_phoenix(con: duckdb.DuckDBPyConnection, path: Path | pa.Table, opts: TraceOptions, label: str) -> None:
    if isinstance(path, pa.Table):
        con.register("__px_frame", path)
        try:
            _read(con, "__px_frame", label, opts)
        finally:
            con.unregister("__px_frame")
    else:
        _read(con, f"read_parquet({sql_str(str(duckdb_source(path)[0]))})", label, opts)


def _read(con: duckdb.DuckDBPyConnection, src: str, label: str, opts: TraceOptions) -> None:
    types = {str(r[0]): str(r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()}
    cols = set(types)

    def col(name: str | None, cast: str = "VARCHAR") -> str:
        return f"CAST({_q(name)} AS {cast})" if name and name in cols else f"CAST(NULL AS {cast})"

    def attr(key: str | None) -> str:
        return col(f"attributes.{key}") if key else "CAST(NULL AS VARCHAR)"

    kind = f"upper(coalesce({col('span_kind')}, {attr('openinference.span.kind')}))"

    def time(name: str) -> tuple[str, str]:
        """(epoch ms, the text of a time that is no timestamp): a time written as text is parsed, never cast, so
        one that is not a timestamp is refused by the checks (``bad_start``), not a raw conversion error."""
        if types.get(name) != "VARCHAR":
            return f"epoch_ms(CAST({col(name, 'TIMESTAMP')} AS TIMESTAMP))", "CAST(NULL AS VARCHAR)"
        text = col(name)
        return (
            f"epoch_ms(TRY_CAST({text} AS TIMESTAMP))",
            f"CASE WHEN TRY_CAST({text} AS TIMESTAMP) IS NULL THEN {text} END",
        )

    (start, bad_start), (end, bad_end) = time("start_time"), time("end_time")
    # the principal is one id (a string or an integer); a column of another type is refused, never read as none
    p = f"attributes.{opts.principal_attribute}" if opts.principal_attribute else None
    one_id = p not in cols or re.fullmatch(r"VARCHAR|U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)", types[p or ""])
    principal = col(p) if one_id else "CAST(NULL AS VARCHAR)"
    bad_principal = "CAST(NULL AS VARCHAR)" if one_id else f"CAST(to_json({_q(p or '')}) AS VARCHAR)"
    groups = col(f"attributes.{opts.groups_attribute}", "VARCHAR[]") if opts.groups_attribute else "NULL"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE trc_px AS
            SELECT nextval('trc_sid') AS sid, {sql_str(label)} AS file, row_number() OVER () AS line, *
            FROM (SELECT {col("context.trace_id")} AS trace_id, {col("context.span_id")} AS span_id,
                         {col("parent_id")} AS parent_id, {kind} AS kind,
                         CASE WHEN {kind} = 'RERANKER' THEN coalesce({attr(opts.query)}, {attr("reranker.query")},
                                                                      {attr("input.value")})
                              ELSE coalesce({attr(opts.query)}, {attr("input.value")}) END AS query,
                         CAST({start} AS DOUBLE) AS started, CAST({end} - {start} AS DOUBLE) AS latency_ms,
                         CASE WHEN upper({col("status_code")}) = 'ERROR'
                              THEN coalesce(nullif({col("status_message")}, ''), 'ERROR') END AS error,
                         {attr(opts.case_id_attribute)} AS case_attr, {principal} AS principal,
                         {bad_principal} AS bad_principal,
                         {groups} AS groups, CAST(NULL AS VARCHAR) AS resource,
                         {bad_start} AS bad_start, {bad_end} AS bad_end,
                         {
            ", ".join(
                f"to_json({_q(c)}) AS {r}" if c in cols else f"CAST(NULL AS JSON) AS {r}" for r, c in _LISTS.items()
            )
        }
                  FROM {src})
            WHERE kind IN ('RETRIEVER', 'RERANKER')"""
    )
    con.execute(f"INSERT INTO trc_spans BY NAME SELECT {SPAN_COLUMNS}, bad_start, bad_end, bad_principal FROM trc_px")
    fields = {f: [f'$."document.{f}"'] for f in ("id", "score", "content", "metadata")}
    for role in _LISTS:
        list_docs(con, "trc_px", role, role, fields)
    con.execute("DROP TABLE trc_px")
