"""The pytrec_eval / ranx shape: ``{qid: {docno: value}}`` as a JSON file or a Python dict.

The file is read one query at a time (``contract.json_stream``: each query's inner object is decoded whole by
``json``'s C scanner) and written to a staging table in Arrow batches, so memory is bounded by a batch and the
largest query, not by the file, and a load's DuckDB memory cap is never approached. A Python dict is read the
same way, query by query. A JSON document has no useful line numbers for its entries, so value findings name the
query and document instead (``row`` is the entry's position); a document that is not JSON, or not an object of
objects, is unreadable: one fatal finding with its line and column and what to do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.contract.errors import Cause, Finding, counted_causes, has_errors
from ragtriage.contract.json_stream import JsonStreamError, json_stream
from ragtriage.contract.staging import Staged, encoding_findings
from ragtriage.contract.trec import LABEL_COLUMNS, RESULT_COLUMNS, RunFacts, not_finite, trec_rank

_BATCH = 200_000
_RAW = pa.schema(
    [("line", pa.int64()), ("qid", pa.string()), ("docno", pa.string()), ("v", pa.float64()), ("vt", pa.string())]
)


def _file_entries(path: Path) -> Iterator[tuple[str, Any]]:
    """(qid, value) of each entry of the file's top-level object, one query decoded at a time."""
    with json_stream(path) as js:
        if js.kind() != "object":
            raise js.error("expected a JSON object")
        for qid in js.items():
            yield qid, js.value()
        if not js.is_end():
            raise js.error("unexpected text after the JSON object")


def _values(vals: list[Any]) -> tuple[pa.Array, pa.Array]:
    """(v, vt): numbers as doubles; anything else (a string, a boolean, an object) as NULL with its JSON text."""
    try:
        arr = pa.array(vals)
        if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_null(arr.type):
            return arr.cast(pa.float64()), pa.nulls(len(vals), pa.string())
    except (pa.ArrowException, OverflowError):
        pass
    num = [x if type(x) in (int, float) else None for x in vals]
    text = [None if type(x) in (int, float) or x is None else json.dumps(x)[:200] for x in vals]
    return pa.array(num, pa.float64()), pa.array(text, pa.string())


def _strings(ids: list[Any]) -> pa.Array:
    """Ids as strings (a Python dict may key its entries by int, as ``json.dumps`` would write them)."""
    try:
        return pa.array(ids, pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([str(x) for x in ids], pa.string())


def _batches(entries: Iterable[tuple[str, Any]], bad: list[str]) -> Iterator[pa.RecordBatch]:
    """Arrow batches of (line, qid, docno, v, vt); queries whose value is not an object go to ``bad``."""
    qids: list[str] = []
    docs: list[str] = []
    vals: list[Any] = []
    done = 0

    def flush() -> pa.RecordBatch:
        v, vt = _values(vals)
        line = pa.array(range(done + 1, done + len(docs) + 1), pa.int64())
        return pa.RecordBatch.from_arrays([line, _strings(qids), _strings(docs), v, vt], schema=_RAW)

    for qid, inner in entries:
        if not isinstance(inner, dict):
            bad.append(qid)
            continue
        qids.extend([qid] * len(inner))
        docs.extend(inner.keys())
        vals.extend(inner.values())
        if len(docs) >= _BATCH:
            yield flush()
            done += len(docs)
            qids, docs, vals = [], [], []
    if docs:
        yield flush()


def _write_raw(con: duckdb.DuckDBPyConnection, raw: str, batches: Iterator[pa.RecordBatch]) -> None:
    con.execute(f"CREATE OR REPLACE TEMP TABLE {raw} (line BIGINT, qid VARCHAR, docno VARCHAR, v DOUBLE, vt VARCHAR)")
    for batch in batches:
        con.register("__json_batch", batch)
        try:
            con.execute(f"INSERT INTO {raw} SELECT * FROM __json_batch")
        finally:
            con.unregister("__json_batch")


def _value_findings(
    con: duckdb.DuckDBPyConnection, raw: str, label: str, bad: str, fld: str, code: str, what: str
) -> list[Finding]:
    """One finding for the entries whose value is bad, naming the first one's query and document; a JSON
    document's entry positions are no lines, so it names no line (its ``lines`` keep the positions)."""
    value = "struct_pack(v := coalesce(vt, CAST(v AS VARCHAR)), qid, docno)"
    kind = {"wrong-type": "an integer", "bad-score": "a finite number"}[code]
    msg = f"{what} {{v}} for query {{qid}}, document {{docno}} is not {kind}"
    return [replace(f, line=None) for f in counted_causes(con, raw, Path(label), [Cause(bad, value, fld, code, msg)])]


def stage_json_dicts(
    con: duckdb.DuckDBPyConnection, source: Path | dict[str, Any], name: str, role: str
) -> tuple[Staged, RunFacts]:
    """Stage a qrels (``role="qrels"``: integer grades) or run (``role="run"``: scores) dict-of-dicts."""
    what = "grade" if role == "qrels" else "score"
    if isinstance(source, Path):
        label, path = str(source), source
        findings = encoding_findings(source)
        if has_errors(findings):
            return Staged(name, path, "json", 0, findings, "row"), RunFacts()
        entries: Iterable[tuple[str, Any]] = _file_entries(source)
    else:
        label, path = f"<{role} dict>", Path(f"<{role} dict>")
        findings = []
        entries = source.items()
    raw, bad = f"{name}__raw", list[str]()
    try:
        _write_raw(con, raw, _batches(entries, bad))
    except JsonStreamError as exc:
        at = f" (column {exc.column})" if exc.column is not None else ""
        shape = f"{{qid: {{docno: {what}}}}}"
        msg = f"{exc.message}{at}; the file must be one JSON object {shape} (pytrec_eval/ranx), UTF-8"
        return Staged(name, path, "json", 0, [Finding(label, exc.line, None, "unreadable", msg)], "row"), RunFacts()
    if bad:
        msg = f"query {bad[0]!r}: expected an object {{docno: {what}}}"
        findings.append(Finding(label, None, None, "malformed-json", msg, "error", len(bad)))
    if role == "qrels":
        ok_g = "(v IS NOT NULL AND TRY_CAST(v AS BIGINT) = v)"
        findings += _value_findings(con, raw, label, f"NOT {ok_g}", "grade", "wrong-type", "relevance")
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {name} AS
                SELECT line, qid AS case_id, docno AS document_id, CAST(v AS BIGINT) AS grade, {LABEL_COLUMNS}
                FROM {raw} WHERE {ok_g}"""
        )
    else:
        bad_s = f"({not_finite('v')})"
        findings += _value_findings(con, raw, label, bad_s, "score", "bad-score", "score")
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {name} AS
                SELECT line, qid AS case_id, 'final' AS stage,
                       {trec_rank("qid", "v", "docno")} AS rank,
                       docno AS document_id, v AS score, {RESULT_COLUMNS}, CAST(NULL AS VARCHAR) AS tag
                FROM {raw} WHERE NOT {bad_s}"""
        )
    rows = con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
    if rows == 0 and not findings:
        findings.append(Finding(label, None, None, "empty-file", "no entries"))
    con.execute(f"DROP TABLE {raw}")
    return Staged(name, path, "json", int(rows), findings, "row"), RunFacts()
