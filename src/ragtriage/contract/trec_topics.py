"""TREC topic files (``<top> <num> Number: 301 <title> ...``), staged as cases whose query is the title.

The SGML of TREC topic files is loose (``<num>`` and ``<title>`` are rarely closed, ``Number:`` and ``Topic:``
prefixes come and go), so each ``<top>`` block is gathered from its lines in SQL and its number and title are
taken with regular expressions: the text up to the next tag, whitespace collapsed.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ragtriage.contract.errors import Finding
from ragtriage.contract.staging import Staged, encoding_findings, lines_sql, read_error
from ragtriage.contract.trec import CASE_COLUMNS, counted


def stage_trec_topics(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> Staged:
    findings = encoding_findings(path)
    if any(f.severity == "error" for f in findings):
        return Staged(name, path, "trec-topics", 0, findings, "line")
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {name}__raw AS
                WITH l AS (SELECT line, coalesce(t, '') AS t,
                                  sum(CASE WHEN regexp_matches(t, '(?i)<top>') THEN 1 ELSE 0 END)
                                      OVER (ORDER BY line) AS block
                           FROM ({lines_sql(path, "t")})),
                b AS (SELECT block, min(line) AS line, string_agg(t, ' ' ORDER BY line) AS body
                      FROM l WHERE block > 0 GROUP BY block)
                SELECT line,
                       nullif(regexp_extract(body, '(?i)<num>\\s*(?:number:)?\\s*([^\\s<]+)', 1), '') AS id,
                       nullif(trim(regexp_replace(regexp_extract(body, '(?i)<title>\\s*(?:topic:)?([^<]*)', 1),
                                                  '\\s+', ' ', 'g')), '') AS query
                FROM b"""
        )
    except duckdb.Error as exc:
        return Staged(name, path, "trec-topics", 0, [*findings, read_error(str(path), exc)], "line")
    findings += counted(
        con, f"{name}__raw", "id IS NULL", "line", path, "num", "missing-field", "a <top> without <num>"
    )
    findings += counted(
        con, f"{name}__raw", "id IS NOT NULL AND query IS NULL", "id", path, "title", "missing-field",
        "topic {v} has no <title> text",
    )  # fmt: skip
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT line, id, query, {CASE_COLUMNS} FROM {name}__raw "
        "WHERE id IS NOT NULL AND query IS NOT NULL"
    )
    rows = con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
    if rows == 0 and not findings:
        findings.append(Finding(str(path), None, None, "empty-file", "no <top> blocks found"))
    con.execute(f"DROP TABLE {name}__raw")
    return Staged(name, path, "trec-topics", int(rows), findings, "line")
