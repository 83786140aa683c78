"""TREC and BEIR formats, staged into the same typed tables the native contract uses.

TREC runs are re-ranked the way trec_eval reads them: by score descending, ties broken by docno descending;
the file's own rank column is ignored (trec_eval ignores it too), so our numbers match trec_eval's.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ragtriage.contract.errors import Finding
from ragtriage.contract.staging import Staged, encoding_findings, sql_str


def _lines_sql(path: Path) -> str:
    return (
        f"SELECT row_number() OVER () AS line, trim(j) AS t FROM read_csv({sql_str(str(path))}, "
        "columns={'j': 'VARCHAR'}, header=false, delim=chr(30), quote='', escape='', auto_detect=false, "
        "strict_mode=false, max_line_size=67108864)"
    )


def _split_lines(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> list[Finding]:
    findings = encoding_findings(path)
    if any(f.severity == "error" for f in findings):
        return findings
    try:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {name}__raw AS SELECT line, regexp_split_to_array(t, '\\s+') AS p "
            f"FROM ({_lines_sql(path)}) WHERE t IS NOT NULL AND t <> '' AND NOT starts_with(t, '#')"
        )
    except duckdb.Error as exc:
        return [*findings, Finding(str(path), None, None, "unreadable", f"cannot read: {str(exc).splitlines()[0]}")]
    return findings


def _field_count_findings(con: duckdb.DuckDBPyConnection, name: str, path: Path, n: int, layout: str) -> list[Finding]:
    rows = con.execute(f"SELECT line, len(p) FROM {name}__raw WHERE len(p) <> {n} ORDER BY line LIMIT 50").fetchall()
    return [
        Finding(str(path), int(line), None, "bad-columns", f"expected {n} columns ({layout}), found {cnt}")
        for line, cnt in rows
    ]


def _finish(con: duckdb.DuckDBPyConnection, name: str, path: Path, fmt: str, findings: list[Finding]) -> Staged:
    rows = con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]  # type: ignore[index]
    if rows == 0 and not findings:
        findings.append(Finding(str(path), None, None, "empty-file", "file holds no rows"))
    return Staged(name, path, fmt, int(rows), findings, "line")


def stage_trec_run(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> tuple[Staged, str | None]:
    """Stage ``qid Q0 docno rank score tag`` lines as final-stage results; returns the run tag too."""
    findings = _split_lines(con, path, name)
    if findings and any(f.severity == "error" for f in findings):
        return Staged(name, path, "trec", 0, findings, "line"), None
    findings += _field_count_findings(con, name, path, 6, "qid Q0 docno rank score tag")
    bad_score = con.execute(
        f"SELECT line, p[5] FROM {name}__raw WHERE len(p) = 6 AND (TRY_CAST(p[5] AS DOUBLE) IS NULL "
        "OR isnan(TRY_CAST(p[5] AS DOUBLE)) OR isinf(TRY_CAST(p[5] AS DOUBLE))) ORDER BY line LIMIT 50"
    ).fetchall()
    findings += [
        Finding(str(path), int(line), "score", "bad-score", f"score {val!r} is not a finite number")
        for line, val in bad_score
    ]
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT min(line) OVER (PARTITION BY p[1]) AS first_line, line, p[1] AS case_id, 'final' AS stage,
                   CAST(row_number() OVER (PARTITION BY p[1] ORDER BY TRY_CAST(p[5] AS DOUBLE) DESC, p[3] DESC)
                        AS BIGINT) AS rank,
                   p[3] AS document_id, CAST(NULL AS VARCHAR) AS chunk_id, TRY_CAST(p[5] AS DOUBLE) AS score,
                   CAST(NULL AS VARCHAR) AS snippet, CAST(NULL AS VARCHAR) AS metadata,
                   TRY_CAST(p[4] AS BIGINT) AS file_rank, p[6] AS tag
            FROM {name}__raw WHERE len(p) = 6"""
    )
    tag_row = con.execute(f"SELECT tag FROM {name} ORDER BY line LIMIT 1").fetchone()
    con.execute(f"DROP TABLE {name}__raw")
    return _finish(con, name, path, "trec", findings), (str(tag_row[0]) if tag_row else None)


def stage_trec_qrels(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> Staged:
    """Stage ``qid iter docno rel`` lines as labels (annotator ``default``)."""
    findings = _split_lines(con, path, name)
    if findings and any(f.severity == "error" for f in findings):
        return Staged(name, path, "trec", 0, findings, "line")
    findings += _field_count_findings(con, name, path, 4, "qid iter docno rel")
    bad = con.execute(
        f"SELECT line, p[4] FROM {name}__raw WHERE len(p) = 4 AND TRY_CAST(p[4] AS BIGINT) IS NULL ORDER BY line"
        " LIMIT 50"
    ).fetchall()
    findings += [
        Finding(str(path), int(line), "grade", "wrong-type", f"relevance {v!r} is not an integer") for line, v in bad
    ]
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT line, p[1] AS case_id, p[3] AS document_id, CAST(NULL AS VARCHAR) AS chunk_id,
                   CAST(NULL AS VARCHAR) AS section_id, TRY_CAST(p[4] AS BIGINT) AS grade,
                   'default' AS annotator, CAST(NULL AS VARCHAR) AS note
            FROM {name}__raw WHERE len(p) = 4"""
    )
    con.execute(f"DROP TABLE {name}__raw")
    return _finish(con, name, path, "trec", findings)


def stage_beir_qrels(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> Staged:
    """Stage a BEIR qrels TSV (``query-id  corpus-id  score`` with a header line)."""
    findings = _split_lines(con, path, name)
    if findings and any(f.severity == "error" for f in findings):
        return Staged(name, path, "beir", 0, findings, "line")
    header = con.execute(f"SELECT p FROM {name}__raw ORDER BY line LIMIT 1").fetchone()
    if header is None or [h.lower() for h in header[0]][:2] != ["query-id", "corpus-id"]:
        findings.append(
            Finding(str(path), 1, None, "bad-header", "BEIR qrels need the header 'query-id corpus-id score'")
        )
        return Staged(name, path, "beir", 0, findings, "line")
    con.execute(f"DELETE FROM {name}__raw WHERE line = (SELECT min(line) FROM {name}__raw)")
    findings += _field_count_findings(con, name, path, 3, "query-id corpus-id score")
    bad = con.execute(
        f"SELECT line, p[3] FROM {name}__raw WHERE len(p) = 3 AND TRY_CAST(p[3] AS BIGINT) IS NULL ORDER BY line"
        " LIMIT 50"
    ).fetchall()
    findings += [
        Finding(str(path), int(line), "grade", "wrong-type", f"score {v!r} is not an integer") for line, v in bad
    ]
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT line, p[1] AS case_id, p[2] AS document_id, CAST(NULL AS VARCHAR) AS chunk_id,
                   CAST(NULL AS VARCHAR) AS section_id, TRY_CAST(p[3] AS BIGINT) AS grade,
                   'default' AS annotator, CAST(NULL AS VARCHAR) AS note
            FROM {name}__raw WHERE len(p) = 3"""
    )
    con.execute(f"DROP TABLE {name}__raw")
    return _finish(con, name, path, "beir", findings)


def stage_tsv_queries(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> Staged:
    """Stage ``qid<TAB>query text`` lines (the MS MARCO / TREC topics TSV) as cases."""
    findings = encoding_findings(path)
    if any(f.severity == "error" for f in findings):
        return Staged(name, path, "tsv", 0, findings, "line")
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name}__raw AS
            SELECT line, t[1:strpos(t, chr(9)) - 1] AS id, trim(t[strpos(t, chr(9)) + 1:]) AS query,
                   strpos(t, chr(9)) AS tab FROM ({_lines_sql(path)}) WHERE t IS NOT NULL AND t <> ''"""
    )
    bad = con.execute(f"SELECT line FROM {name}__raw WHERE tab = 0 ORDER BY line LIMIT 50").fetchall()
    findings += [Finding(str(path), int(r[0]), None, "bad-columns", "expected 'id<TAB>query'") for r in bad]
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT line, id, query, CAST(NULL AS BOOLEAN) AS answerable, CAST(NULL AS VARCHAR) AS expected_behavior,
                   CAST(NULL AS VARCHAR) AS principal, CAST(NULL AS VARCHAR) AS filters,
                   CAST(NULL AS VARCHAR) AS split, CAST(NULL AS VARCHAR) AS source_family,
                   CAST(NULL AS VARCHAR) AS query_type, CAST(NULL AS VARCHAR) AS language,
                   CAST(NULL AS VARCHAR[]) AS tags, CAST(NULL AS BOOLEAN) AS critical,
                   CAST(NULL AS VARCHAR) AS expected_scope
            FROM {name}__raw WHERE tab > 0"""
    )
    con.execute(f"DROP TABLE {name}__raw")
    return _finish(con, name, path, "tsv", findings)
