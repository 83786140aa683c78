"""TREC runs and qrels through DuckDB's own CSV reader: the fast path of ``contract/trec.py``.

A file whose every line is exactly its fields separated by one space (or one tab) -- what trec_eval's users and
every toolkit write -- is read by DuckDB's parallel CSV reader with a fixed schema: no line is split in SQL, and a
large run is typed in one pass at the speed of the reader. A line the reader rejects (another field count, two
spaces, bad UTF-8; counted in a rejects table, never raised, since an error would abort the load's transaction) or
a value the general reader would report (a score that is not a finite number, a grade that is not an integer) makes
this path give up, and ``contract/trec.py`` reads the file again with its general reader, which reports every
cause with its line and field. This path never reports anything itself, so both find the same errors.

DuckDB's reader skips blank lines, so the rows read are checked against the file's lines (``census``): row
numbers are then line numbers, as the general reader gives them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from ragtriage.contract import digest
from ragtriage.contract.compression import duckdb_source, head_bytes, scan
from ragtriage.contract.staging import sql_str

RUN_FIELDS = {
    "case_id": "VARCHAR",
    "q0": "VARCHAR",
    "document_id": "VARCHAR",
    "rank": "VARCHAR",
    "score": "DOUBLE",
    "tag": "VARCHAR",
}
"""The reader types the score: a line whose score is not a number is rejected, and the general reader reports it
(the reader's DOUBLE accepts exactly what ``TRY_CAST(... AS DOUBLE)`` accepts, NaN and infinities included)."""
QRELS_FIELDS = {"case_id": "VARCHAR", "iteration": "VARCHAR", "document_id": "VARCHAR", "grade": "VARCHAR"}


def integer_sql(text: str) -> str:
    """SQL for the integer a text field spells, else NULL. ``TRY_CAST('1.5' AS BIGINT)`` rounds to 2, which would
    turn a fractional grade (or rank) into another value: only digits with an optional sign are an integer."""
    return f"CASE WHEN regexp_full_match({text}, '[+-]?[0-9]+') THEN TRY_CAST({text} AS BIGINT) END"


def delimiter(path: Path) -> str | None:
    """One space or one tab when the file's first lines use exactly that between fields, else None (the general
    reader then splits on any run of whitespace)."""
    head = head_bytes(path, 1 << 16)
    lines = head.split(b"\n")[:-1] if len(head) == 1 << 16 else head.split(b"\n")
    lines = [ln.rstrip(b"\r") for ln in lines if ln.strip()]
    if not lines:
        return None
    for sep, other in ((b" ", b"\t"), (b"\t", b" ")):
        if all(other not in ln and sep * 2 not in ln and not ln.startswith(sep) for ln in lines):
            return sep.decode()
    return None


def _read_sql(path: Path, fields: dict[str, str], delim: str, table: str) -> str:
    """DuckDB's reader at its default line limit (2 MiB; a longer line is rejected and the general reader, which
    takes 64 MiB, reads the file): a higher limit here slows the whole read."""
    src, comp = duckdb_source(path)
    cols = ", ".join(f"{sql_str(f)}: {sql_str(t)}" for f, t in fields.items())
    return (
        f"read_csv({sql_str(str(src))}, columns={{{cols}}}, header=false, delim={sql_str(delim)}, quote='', "
        f"escape='', auto_detect=false, compression='{comp}', store_rejects=true, "
        f"rejects_table='{table}__rejects', rejects_scan='{table}__scans')"
    )


def _rejected(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """Lines the last read of ``table`` rejected (another field count, bad UTF-8); the rejects tables go."""
    n = con.execute(f"SELECT count(*) FROM {table}__rejects").fetchall()[0][0]
    _drop_rejects(con, table)
    return int(n)


def _drop_rejects(con: duckdb.DuckDBPyConnection, table: str) -> None:
    con.execute(f"DROP TABLE IF EXISTS {table}__rejects")
    con.execute(f"DROP TABLE IF EXISTS {table}__scans")


def census(path: Path, other: bytes) -> tuple[int, bool] | None:
    """(lines, whether the last one lacks its newline) of the decompressed file, or None when some line holds
    ``other`` (a tab in a space-separated file, a space in a tab-separated one) or a CR not ending it: the general
    reader splits those differently, and DuckDB's reader raises on a lone CR (aborting the load's transaction)
    instead of rejecting the line. From the one pass over the file's bytes (``compression.scan``), which a
    compressed file has already had."""
    seen = scan(path)
    if seen.fault or seen.lone_cr or (seen.has_tab if other == b"\t" else seen.has_space):
        return None
    return seen.lines, seen.unterminated


def _read(
    con: duckdb.DuckDBPyConnection, path: Path, table: str, fields: dict[str, str], select: str, temp: bool = True
) -> int | None:
    """``CREATE TABLE table AS SELECT {select}`` over the file's ``fields``, and its row count when every line
    became a row (none rejected, no blank line skipped); else None with nothing left behind."""
    delim = delimiter(path)
    digest.prefetch(path)  # the load records the file's sha256: hashed on another core while DuckDB reads
    counted = census(path, b"\t" if delim == " " else b" ") if delim else None
    if delim is None or counted is None:
        return None
    lines, unterminated = counted
    _drop_rejects(con, table)
    try:
        kind = "TEMP TABLE" if temp else "TABLE"
        con.execute(f"CREATE OR REPLACE {kind} {table} AS SELECT {select} FROM {_read_sql(path, fields, delim, table)}")
        rows = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        rejected = _rejected(con, table)
    except duckdb.Error:  # not the reader's doing (it rejects lines instead): the general reader will say
        rows, rejected = 0, 0
    if rows == 0 or rejected or rows != lines + int(unterminated):
        _give_up(con, table)
        return None
    return int(rows)


def _give_up(con: duckdb.DuckDBPyConnection, *tables: str) -> None:
    for table in tables:
        con.execute(f"DROP TABLE IF EXISTS {table}")
    _drop_rejects(con, tables[0])


@dataclass(frozen=True)
class TrecRun:
    """A run read by this path: ``first`` is the rowid of the file's first line (``rowid - first + 1`` is the line
    number); ``cases`` the table of each query's lines (first, last, n: the ``__first`` table of
    ``contract/trec.py``); ``tag`` the run tag when every line has the same one, else None."""

    first: int
    cases: str
    tag: str | None


def read_run(
    con: duckdb.DuckDBPyConnection, path: Path, table: str, *, temp: bool = True, evaluation: bool = False
) -> TrecRun | None:
    """Create ``table(case_id, document_id, chunk_id, score, tag)`` from a TREC run, one row per line in file order
    (``#`` comment lines left out, as the general reader leaves them out), and ``{table}__cases`` (see
    :class:`TrecRun`) in one parallel pass over the rows with cheap aggregates only (a score that is not a finite
    number shows in a query's count, min or max of scores; a second tag in a count against the first one).
    Rowids follow the insertion order, which the reader keeps, and start at 2^55 inside a transaction. None, with
    nothing left behind, when the general reader must read the file. ``temp=False`` makes ``table`` a table of
    the main schema, which cursors of ``con`` see too. ``evaluation``: the table an evaluation without a store
    reads, with ``h = hash(case_id, document_id)`` taken in the reading pass for its search of the lists for a
    repeated docno (a later pass would read both strings of every row again to hash them, and again to find the
    rows of the repeated hashes), and without ``chunk_id``, which only a store's chunk-mode load fills in."""
    # An empty field (two separators in a row) is NULL: in a field the table keeps, the aggregates below see it;
    # in one it drops (Q0, rank), it empties the score, which they see too.
    score = "CASE WHEN q0 IS NULL OR rank IS NULL THEN NULL ELSE score END"
    chunk = "" if evaluation else "CAST(NULL AS VARCHAR) AS chunk_id, "
    select = f"case_id, document_id, {chunk}{score} AS score, tag"
    if evaluation:
        select += ", hash(case_id, document_id) AS h"
    rows = _read(con, path, table, RUN_FIELDS, select, temp)
    if rows is None:
        return None
    first, last = con.execute(f"SELECT min(rowid), max(rowid) FROM {table}").fetchall()[0]
    cases = f"{table}__cases"
    tag0 = con.execute(f"SELECT tag FROM {table} WHERE NOT starts_with(case_id, '#') LIMIT 1").fetchall()
    if last - first + 1 != rows or not tag0:  # rowids never had gaps; no data line: the general reader says so
        _give_up(con, table)
        return None
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {cases} AS
            SELECT case_id, min(rowid) - {first} + 1 AS first, max(rowid) - {first} + 1 AS last, count(*) AS n,
                   least(count(score), count(document_id), count(tag)) AS complete, min(score) AS lo, max(score) AS hi,
                   count(*) FILTER (WHERE tag <> {sql_str(tag0[0][0])}) AS other_tags
            FROM {table} GROUP BY case_id"""
    )
    con.execute(f"DELETE FROM {cases} WHERE starts_with(case_id, '#')")
    data, bad, others = con.execute(
        f"""SELECT sum(n),
                   count(*) FILTER (WHERE case_id IS NULL OR complete < n OR isnan(hi) OR isinf(hi) OR isinf(lo)),
                   sum(other_tags)
            FROM {cases}"""
    ).fetchall()[0]
    if bad:
        _give_up(con, table, cases)
        return None
    if data < rows:
        con.execute(f"DELETE FROM {table} WHERE starts_with(case_id, '#')")
    return TrecRun(int(first), cases, None if others else str(tag0[0][0]))


def read_qrels(con: duckdb.DuckDBPyConnection, path: Path, table: str, columns: str) -> bool:
    """Create ``table(line, case_id, document_id, grade, {columns})`` from TREC qrels (``qid iter docno rel``),
    ``#`` lines left out as the general reader leaves them out. False, with nothing left behind, when the general
    reader must read the file instead."""
    # an empty field (two separators in a row, which the general reader counts as one) empties the grade
    blank = " OR ".join(f"{f} IS NULL" for f in QRELS_FIELDS)
    grade = f"CASE WHEN {blank} THEN NULL ELSE {integer_sql('grade')} END"
    select = f"row_number() OVER () AS line, case_id, document_id, {grade} AS grade, {columns}"
    rows = _read(con, path, table, QRELS_FIELDS, select)
    if rows is None:
        return False
    data, bad = con.execute(
        f"""SELECT count(*), count(*) FILTER (WHERE grade IS NULL)
            FROM {table} WHERE NOT starts_with(case_id, '#')"""
    ).fetchall()[0]
    if data == 0 or bad:
        _give_up(con, table)
        return False
    if data < rows:
        con.execute(f"DELETE FROM {table} WHERE starts_with(case_id, '#')")
    return True
