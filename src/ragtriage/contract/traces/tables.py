"""The two tables every trace reader fills (their columns are described in the package docstring)."""

from __future__ import annotations

import duckdb

from ragtriage.contract.staging import sql_str

SPAN_COLUMNS = (
    "sid, file, line, trace_id, span_id, parent_id, kind, query, started, latency_ms, error, case_attr, principal, "
    "groups, resource"
)


ROLES = ("retrieved", "input", "output")
"""A document's ``role`` in ``trc_docs``; ``trc_docs_lines`` holds its position here."""


def role_text(code: str) -> str:
    """SQL: the ``role`` of a position in ``ROLES``."""
    return f"[{', '.join(sql_str(r) for r in ROLES)}][{code} + 1]"


def doc_score(d: str = "") -> str:
    """SQL: the score of a ``trc_docs`` row (alias ``d``) as a DOUBLE, whichever column the reader put it in
    (NULL where the text is no number: the checks refuse that)."""
    p = f"{d}." if d else ""
    return f"coalesce({p}score, TRY_CAST({p}score_text AS DOUBLE))"


def list_docs(con: duckdb.DuckDBPyConnection, spans: str, column: str, role: str, paths: dict[str, list[str]]) -> None:
    """Append to ``trc_docs`` the documents of the JSON-list column ``column`` of ``spans`` (rows with ``sid``),
    each field of ``paths`` (``id``, ``score``, ``content``, ``metadata``) read at the first of its JSON paths
    present; and to ``trc_faults`` each whose id is a list, an object or a bool: an id is one string or number, as
    in every other reader."""

    def first(field: str, op: str = "->>") -> str:
        return "coalesce(" + ", ".join(f"x{op}{sql_str(p)}" for p in paths[field]) + ")"

    docs = f"""(SELECT sid, unnest(d) AS x, generate_subscripts(d, 1) AS i
               FROM (SELECT sid, CAST(CAST({column} AS JSON) AS JSON[]) AS d FROM {spans}
                     WHERE {column} IS NOT NULL AND json_valid({column})
                       AND json_type(CAST({column} AS JSON)) = 'ARRAY'))"""
    con.execute(
        f"""INSERT INTO trc_docs (sid, role, idx, document_id, score_text, content, metadata)
            SELECT sid, {sql_str(role)}, CAST(i - 1 AS INTEGER), {first("id")}, {first("score")}, {first("content")},
                   CAST({first("metadata", "->")} AS VARCHAR)
            FROM {docs}"""
    )
    kind = f"json_type({first('id', '->')})"
    con.execute(
        f"""INSERT INTO trc_faults
            SELECT sid, 'document.id', CASE {kind} WHEN 'ARRAY' THEN 'an array' WHEN 'OBJECT' THEN 'an object'
                                       ELSE 'a bool' END, 'value'
            FROM {docs} WHERE {kind} IN ('ARRAY', 'OBJECT', 'BOOLEAN')"""
    )


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    """``trc_spans`` and ``trc_docs``, ``trc_faults`` and ``trc_docs_lines``. A span's ``twice`` (an attribute it
    reads given twice), ``bad_start``/``bad_end`` (a time that is not one), ``bad_groups`` (a groups value that
    is not a group name or a list of them) and ``bad_principal`` (a principal that is not one id) hold the text
    the checks refuse, NULL where there is none; ``trc_faults`` holds a document's (``kind``: ``index``,
    ``twice`` or ``value``), keyed by its span. And ``trc_docs_lines``: the documents of the blocks whose
    documents carry nothing more than an id and a numeric score (no content, metadata or score written as text),
    the usual OTLP export. DuckDB's appends cost more the more columns the table has, NULL or not, so such blocks
    go there, and ``trc_docs`` becomes the view of both once the files are read (``join_docs``): each document is
    held once. Every document of the load is held until the run's rows are made of them, so ``trc_docs_lines``
    holds them in narrow types: the role as its position in ``ROLES``, the rank as an INTEGER (a position within
    one span)."""
    drop_docs(con)
    con.execute("CREATE OR REPLACE TEMP SEQUENCE trc_sid")
    con.execute(
        """CREATE OR REPLACE TEMP TABLE trc_spans (sid BIGINT, file VARCHAR, line BIGINT, trace_id VARCHAR,
               span_id VARCHAR, parent_id VARCHAR, kind VARCHAR, query VARCHAR, started DOUBLE, latency_ms DOUBLE,
               error VARCHAR, case_attr VARCHAR, principal VARCHAR, groups VARCHAR[], resource VARCHAR,
               twice VARCHAR, bad_start VARCHAR, bad_end VARCHAR, bad_groups VARCHAR,
               bad_principal VARCHAR)"""
    )
    con.execute("CREATE OR REPLACE TEMP TABLE trc_faults (sid BIGINT, field VARCHAR, value VARCHAR, kind VARCHAR)")
    con.execute(
        """CREATE OR REPLACE TEMP TABLE trc_docs (sid BIGINT, role VARCHAR, idx INTEGER, document_id VARCHAR,
               score_text VARCHAR, content VARCHAR, metadata VARCHAR, rank BIGINT, score DOUBLE)"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE trc_docs_lines (sid BIGINT, role UTINYINT, idx INTEGER, document_id VARCHAR,
               rank INTEGER, score DOUBLE)"""
    )


def join_docs(con: duckdb.DuckDBPyConnection) -> None:
    """Once every file is read (nothing is written to the documents after it): ``trc_docs`` as the view of the
    table of that name and ``trc_docs_lines``, in the columns of ``trc_docs``."""
    if not con.execute("SELECT count(*) FROM (FROM trc_docs_lines LIMIT 1)").fetchall()[0][0]:
        con.execute("DROP TABLE trc_docs_lines")
        return
    con.execute("ALTER TABLE trc_docs RENAME TO trc_docs_all")
    con.execute(
        f"""CREATE TEMP VIEW trc_docs AS
           SELECT * FROM trc_docs_all
           UNION ALL
           SELECT sid, {role_text("role")} AS role, idx, document_id, CAST(NULL AS VARCHAR) AS score_text,
                  CAST(NULL AS VARCHAR) AS content, CAST(NULL AS VARCHAR) AS metadata, CAST(rank AS BIGINT) AS rank,
                  score
           FROM trc_docs_lines"""
    )


def drop_docs(con: duckdb.DuckDBPyConnection) -> None:
    """The documents' tables and view, gone (a load drops them once the run's rows are staged from them)."""
    views = "SELECT count(*) FROM duckdb_views() WHERE temporary AND view_name = 'trc_docs'"
    if con.execute(views).fetchall()[0][0]:
        con.execute("DROP VIEW trc_docs")
    for table in ("trc_docs", "trc_docs_all", "trc_docs_lines"):
        con.execute(f"DROP TABLE IF EXISTS {table}")


def drop_tables(con: duckdb.DuckDBPyConnection) -> None:
    drop_docs(con)
    con.execute("DROP TABLE IF EXISTS trc_spans")
    con.execute("DROP TABLE IF EXISTS trc_faults")
