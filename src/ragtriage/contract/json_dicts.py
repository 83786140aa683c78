"""The pytrec_eval / ranx shape: ``{qid: {docno: value}}`` as a JSON file or a Python dict.

DuckDB casts the whole document to ``MAP(VARCHAR, MAP(VARCHAR, VARCHAR))`` and unnests it, so a file of many
entries is read without a Python loop; a Python dict is serialised once by ``json.dumps`` (C
code) and read the same way. A JSON document has no useful line numbers, so findings name the query and
document instead (``row`` is the entry's position).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from ragtriage.contract.compression import duckdb_source
from ragtriage.contract.errors import FIRST_LINES, Finding
from ragtriage.contract.staging import Staged, encoding_findings, sql_str
from ragtriage.contract.trec import LABEL_COLUMNS, RESULT_COLUMNS, RunFacts

_MAP = "MAP(VARCHAR, MAP(VARCHAR, VARCHAR))"


def _entries_sql(source: str) -> str:
    """(row, qid, docno, value) from a relation with one JSON column ``j``."""
    return f"""
        WITH o AS (SELECT TRY_CAST(j AS {_MAP}) AS m FROM {source}),
        q AS (SELECT unnest(map_entries(m)) AS e FROM o)
        SELECT row_number() OVER () AS line, e.key AS qid, x.key AS docno, x.value AS v
        FROM (SELECT e, unnest(map_entries(e.value)) AS x FROM q)"""


def _file_source(path: Path) -> str:
    src, comp = duckdb_source(path)
    return (
        f"(SELECT json AS j FROM read_json_objects({sql_str(str(src))}, format='unstructured', "
        f"maximum_object_size=2147483647, compression='{comp}'))"
    )


def _shape_ok(con: duckdb.DuckDBPyConnection, source: str) -> bool:
    row = con.execute(f"SELECT TRY_CAST(j AS {_MAP}) IS NOT NULL FROM {source}").fetchall()
    return len(row) == 1 and bool(row[0][0])


def _value_findings(
    con: duckdb.DuckDBPyConnection, raw: str, label: str, bad: str, fld: str, code: str, what: str
) -> list[Finding]:
    n, first = con.execute(
        f"SELECT count(*), min(struct_pack(line, qid, docno, v), {FIRST_LINES}) FROM {raw} WHERE {bad}"
    ).fetchall()[0]
    if not n:
        return []
    f0 = first[0]
    msg = f"{what} {f0['v']!r} for query {f0['qid']!r}, document {f0['docno']!r} is not {_KIND[code]}"
    return [Finding(label, None, fld, code, msg, "error", int(n), tuple(int(x["line"]) for x in first))]


_KIND = {"wrong-type": "an integer", "bad-score": "a finite number"}


def stage_json_dicts(
    con: duckdb.DuckDBPyConnection, source: Path | dict[str, Any], name: str, role: str
) -> tuple[Staged, RunFacts]:
    """Stage a qrels (``role="qrels"``: integer grades) or run (``role="run"``: scores) dict-of-dicts."""
    if isinstance(source, Path):
        label, path = str(source), source
        findings = encoding_findings(source)
        if any(f.severity == "error" for f in findings):
            return Staged(name, path, "json", 0, findings, "row"), RunFacts()
        src = _file_source(source)
    else:
        label, path = f"<{role} dict>", Path(f"<{role} dict>")
        findings = []
        src = f"(SELECT CAST({sql_str(json.dumps(source))} AS JSON) AS j)"
    try:
        ok = _shape_ok(con, src)
    except duckdb.Error as exc:
        msg = str(exc).splitlines()[0]
        return Staged(name, path, "json", 0, [Finding(label, None, None, "malformed-json", msg)], "row"), RunFacts()
    if not ok:
        msg = f"expected one JSON object {{qid: {{docno: {'grade' if role == 'qrels' else 'score'}}}}}"
        return Staged(name, path, "json", 0, [Finding(label, None, None, "malformed-json", msg)], "row"), RunFacts()
    n_bad, first_bad = con.execute(
        f"""SELECT count(*), min(e.key) FROM (SELECT unnest(map_entries(TRY_CAST(j AS {_MAP}))) AS e FROM {src})
            WHERE e.value IS NULL"""
    ).fetchall()[0]
    if n_bad:
        msg = f"query {first_bad!r}: expected an object {{docno: value}}"
        findings.append(Finding(label, None, None, "malformed-json", msg, "error", int(n_bad)))
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name}__raw AS {_entries_sql(src)}")
    raw = f"{name}__raw"
    if role == "qrels":
        g = "TRY_CAST(TRY_CAST(v AS DOUBLE) AS BIGINT)"
        ok_g = f"(TRY_CAST(v AS DOUBLE) IS NOT NULL AND {g} = TRY_CAST(v AS DOUBLE))"
        findings += _value_findings(con, raw, label, f"NOT coalesce({ok_g}, FALSE)", "grade", "wrong-type", "relevance")
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {name} AS
                SELECT line, qid AS case_id, docno AS document_id, {g} AS grade, {LABEL_COLUMNS}
                FROM {raw} WHERE {ok_g}"""
        )
    else:
        d = "TRY_CAST(v AS DOUBLE)"
        bad = f"({d} IS NULL OR isnan({d}) OR isinf({d}))"
        findings += _value_findings(con, raw, label, bad, "score", "bad-score", "score")
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {name} AS
                SELECT line, qid AS case_id, 'final' AS stage,
                       CAST(row_number() OVER (PARTITION BY qid ORDER BY {d} DESC, docno DESC) AS BIGINT) AS rank,
                       docno AS document_id, {d} AS score, {RESULT_COLUMNS}, CAST(NULL AS VARCHAR) AS tag
                FROM {raw} WHERE NOT {bad}"""
        )
    rows = con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
    if rows == 0 and not findings:
        findings.append(Finding(label, None, None, "empty-file", "no entries"))
    con.execute(f"DROP TABLE {raw}")
    return Staged(name, path, "json", int(rows), findings, "row"), RunFacts()
