"""TREC runs and qrels through DuckDB's own CSV reader: the fast path of ``contract/trec.py``.

A file whose every line is exactly its fields separated by one space (or one tab) -- what trec_eval's users and
every toolkit write -- is read by DuckDB's parallel CSV reader with a fixed schema: no line is split in SQL, and a
10M-line run is typed in one pass at the speed of the reader. A line the reader rejects (another field count, two
spaces, bad UTF-8; counted in a rejects table, never raised, since an error would abort the load's transaction) or
a value the general reader would report (a score that is not a finite number, a grade that is not an integer) makes
this path give up, and ``contract/trec.py`` reads the file again with its general reader, which reports every
cause with its line and field. This path never reports anything itself, so both find the same errors.

DuckDB's reader skips blank lines, so the rows read are checked against the file's lines (``census``): row
numbers are then line numbers, as the general reader gives them.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ragtriage.contract.compression import duckdb_source, head_bytes, open_binary
from ragtriage.contract.staging import sql_str

RUN_FIELDS = ("case_id", "q0", "document_id", "rank", "score", "tag")
QRELS_FIELDS = ("case_id", "iteration", "document_id", "grade")


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


def _read_sql(path: Path, fields: tuple[str, ...], delim: str, table: str) -> str:
    """DuckDB's reader at its default line limit (2 MiB; a longer line is rejected and the general reader, which
    takes 64 MiB, reads the file): raising the limit to 64 MiB here made the whole read twice as slow."""
    src, comp = duckdb_source(path)
    cols = ", ".join(f"{sql_str(f)}: 'VARCHAR'" for f in fields)
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
    instead of rejecting the line. A plain read with ``bytes.count``/``in`` (memchr): no parsing."""
    n, last, carry = 0, b"\n", False
    with open_binary(path) as fh:
        while block := fh.read(1 << 22):
            if other in block or (carry and not block.startswith(b"\n")):
                return None
            carry = False
            n += block.count(b"\n")
            if b"\r" in block:
                ends = block.endswith(b"\r")
                if block.count(b"\r") - block.count(b"\r\n") != int(ends):
                    return None
                carry = ends
            last = block[-1:]
    if carry:
        return None
    return n, last != b"\n"


def _read(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    table: str,
    fields: tuple[str, ...],
    select: str,
    check: str,
    temp: bool = True,
) -> int | None:
    """``CREATE TABLE table AS SELECT {select}`` over the file's ``fields``, then how many rows are ``#`` comment
    lines, when every line became a row and no other row is ``check``-bad; else None with nothing left behind."""
    delim = delimiter(path)
    counted = census(path, b"\t" if delim == " " else b" ") if delim else None
    if delim is None or counted is None:
        return None
    lines, unterminated = counted
    _drop_rejects(con, table)
    try:
        kind = "TEMP TABLE" if temp else "TABLE"
        con.execute(f"CREATE OR REPLACE {kind} {table} AS SELECT {select} FROM {_read_sql(path, fields, delim, table)}")
        rows, data, bad = con.execute(
            f"""SELECT count(*), count(*) FILTER (WHERE NOT starts_with(case_id, '#')),
                       count(*) FILTER (WHERE NOT starts_with(case_id, '#') AND ({check}))
                FROM {table}"""
        ).fetchall()[0]
        rejected = _rejected(con, table)
    except duckdb.Error:  # not the reader's doing (it rejects lines instead): the general reader will say
        rows, data, bad, rejected = 0, 0, 0, 0
    if data == 0 or bad or rejected or rows != lines + int(unterminated):
        con.execute(f"DROP TABLE IF EXISTS {table}")
        _drop_rejects(con, table)
        return None
    return int(rows - data)


def _blank(fields: tuple[str, ...]) -> str:
    """Some field is empty: two separators in a row, which the general reader would count as one."""
    return " OR ".join(f"{f} IS NULL" for f in fields)


def read_run(con: duckdb.DuckDBPyConnection, path: Path, table: str, *, temp: bool = True) -> int | None:
    """Create ``table(case_id, document_id, chunk_id, score, tag)`` from a TREC run, one row per line in file order
    (``#`` comment lines left out, as the general reader leaves them out), and return the ``rowid`` of the file's
    first line: ``rowid - first + 1`` is the line number (rowids follow the insertion order, which the reader
    keeps, and start at 2^55 inside a transaction). None, with nothing left behind, when the general reader must
    read the file. ``temp=False`` makes a table of the main schema, which cursors of ``con`` see too."""
    score = f"CASE WHEN {_blank(RUN_FIELDS)} THEN NULL ELSE TRY_CAST(score AS DOUBLE) END"
    select = f"case_id, document_id, CAST(NULL AS VARCHAR) AS chunk_id, {score} AS score, tag"
    comments = _read(con, path, table, RUN_FIELDS, select, "score IS NULL OR isnan(score) OR isinf(score)", temp)
    if comments is None:
        return None
    first, last, n = con.execute(f"SELECT min(rowid), max(rowid), count(*) FROM {table}").fetchall()[0]
    if last - first + 1 != n:  # never seen; the line numbers would be wrong, so read the file the general way
        con.execute(f"DROP TABLE {table}")
        return None
    if comments:
        con.execute(f"DELETE FROM {table} WHERE starts_with(case_id, '#')")
    return int(first)


def read_qrels(con: duckdb.DuckDBPyConnection, path: Path, table: str, columns: str) -> bool:
    """Create ``table(line, case_id, document_id, grade, {columns})`` from TREC qrels (``qid iter docno rel``),
    ``#`` lines left out as the general reader leaves them out. False, with nothing left behind, when the general
    reader must read the file instead."""
    grade = f"CASE WHEN {_blank(QRELS_FIELDS)} THEN NULL ELSE TRY_CAST(grade AS BIGINT) END"
    select = f"row_number() OVER () AS line, case_id, document_id, {grade} AS grade, {columns}"
    comments = _read(con, path, table, QRELS_FIELDS, select, "grade IS NULL")
    if comments is None:
        return False
    if comments:
        con.execute(f"DELETE FROM {table} WHERE starts_with(case_id, '#')")
    return True
