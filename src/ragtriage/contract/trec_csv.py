"""TREC runs and qrels through DuckDB's own CSV reader: the fast path of ``contract/trec.py``.

A file whose every line is exactly its fields separated by one space (or one tab) -- what trec_eval's users and
every toolkit write -- is read by DuckDB's parallel CSV reader with a fixed schema: no line is split in SQL, and a
10M-line run is typed in one pass at the speed of the reader. A line the reader rejects (another field count, two
spaces, bad UTF-8; counted in a rejects table, never raised, since an error would abort the load's transaction) or
a value the general reader would report (a score that is not a finite number, a grade that is not an integer) makes
this path give up, and ``contract/trec.py`` reads the file again with its general reader, which reports every
cause with its line and field. This path never reports anything itself, so both find the same errors.

DuckDB's reader skips blank lines, so row numbers are line numbers only when the file has none: ``exact_lines``
checks that by counting the file's newlines (a plain read, no parsing), for the callers that store line numbers.
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
    src, comp = duckdb_source(path)
    cols = ", ".join(f"{sql_str(f)}: 'VARCHAR'" for f in fields)
    return (
        f"read_csv({sql_str(str(src))}, columns={{{cols}}}, header=false, delim={sql_str(delim)}, quote='', "
        f"escape='', auto_detect=false, max_line_size=67108864, compression='{comp}', store_rejects=true, "
        f"rejects_table='{table}__rejects', rejects_scan='{table}__scans')"
    )


def _rejected(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """Lines the last read of ``table`` rejected (the rejects tables are dropped)."""
    n = con.execute(f"SELECT count(*) FROM {table}__rejects").fetchall()[0][0]
    _drop_rejects(con, table)
    return int(n)


def _drop_rejects(con: duckdb.DuckDBPyConnection, table: str) -> None:
    con.execute(f"DROP TABLE IF EXISTS {table}__rejects")
    con.execute(f"DROP TABLE IF EXISTS {table}__scans")


def newline_count(path: Path) -> tuple[int, bool]:
    """(newlines in the decompressed file, whether it ends without one)."""
    n, last = 0, b"\n"
    with open_binary(path) as fh:
        while block := fh.read(1 << 22):
            n += block.count(b"\n")
            last = block[-1:]
    return n, last != b"\n"


def lines_match(path: Path, rows: int) -> bool:
    """Whether ``rows`` rows read by DuckDB are every line of the file (no blank line was skipped)."""
    n, unterminated = newline_count(path)
    return rows == n + int(unterminated)


def _give_up(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    con.execute(f"DROP TABLE IF EXISTS {table}")
    _drop_rejects(con, table)
    return False


def read_run(con: duckdb.DuckDBPyConnection, path: Path, table: str, *, exact_lines: bool) -> bool:
    """Create ``table(case_id, document_id, chunk_id, score, tag)`` from a TREC run, one row per line in file order
    (``rowid + 1`` is the line number when ``exact_lines``; ``#`` lines stay, for the caller's filter to drop as
    the general reader does). False, with nothing left behind, when the general reader must read the file."""
    delim = delimiter(path)
    if delim is None:
        return False
    _drop_rejects(con, table)
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {table} AS
                SELECT case_id, document_id, CAST(NULL AS VARCHAR) AS chunk_id, TRY_CAST(score AS DOUBLE) AS score,
                       tag
                FROM {_read_sql(path, RUN_FIELDS, delim, table)}"""
        )
        rows, bad = con.execute(
            f"""SELECT count(*), count(*) FILTER (WHERE NOT starts_with(case_id, '#')
                                                  AND (score IS NULL OR isnan(score) OR isinf(score)))
                FROM {table}"""
        ).fetchall()[0]
    except duckdb.Error:  # not the reader's doing (it rejects lines instead): the general reader will say
        return _give_up(con, table)
    if rows == 0 or bad or _rejected(con, table) or (exact_lines and not lines_match(path, int(rows))):
        return _give_up(con, table)
    return True


def read_qrels(con: duckdb.DuckDBPyConnection, path: Path, table: str, columns: str, *, exact_lines: bool) -> bool:
    """Create ``table(line, case_id, document_id, grade, {columns})`` from TREC qrels (``qid iter docno rel``),
    ``#`` lines left out as the general reader leaves them out. False, with nothing left behind, when the general
    reader must read the file instead."""
    delim = delimiter(path)
    if delim is None:
        return False
    _drop_rejects(con, table)
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {table} AS
                SELECT row_number() OVER () AS line, case_id, document_id, TRY_CAST(grade AS BIGINT) AS grade,
                       {columns}
                FROM {_read_sql(path, QRELS_FIELDS, delim, table)}"""
        )
        rows, comments, bad = con.execute(
            f"""SELECT count(*), count(*) FILTER (WHERE starts_with(case_id, '#')),
                       count(*) FILTER (WHERE grade IS NULL AND NOT starts_with(case_id, '#'))
                FROM {table}"""
        ).fetchall()[0]
    except duckdb.Error:  # not the reader's doing (it rejects lines instead): the general reader will say
        return _give_up(con, table)
    if rows == comments or bad or _rejected(con, table) or (exact_lines and not lines_match(path, int(rows))):
        return _give_up(con, table)
    if comments:
        con.execute(f"DELETE FROM {table} WHERE starts_with(case_id, '#')")
    return True
