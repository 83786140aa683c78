"""trec_eval's own output layout, so scripts that parse ``trec_eval`` output read ragtriage's unchanged.

``measure<TAB>qid|all<TAB>value``: the name left-aligned in 22 characters (``%-22s``), counts as integers
(``%ld``: num_q, num_ret, num_rel, num_rel_ret) and every other value with four decimals (``%6.4f``). Query ids
came from a data file: control characters are made visible (``ragtriage.safe_text``) so a line stays one line.
The lines are formatted by DuckDB's ``printf`` over the whole table, in the table's order: no Python loop per
query (a -q listing has a line per measure and query). ``ragtriage.output`` renders ``--format trec``
through here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

_LINE = """CASE WHEN integer THEN printf('%-22s\t%s\t%d', measure, qid, CAST(round(value) AS BIGINT))
                ELSE printf('%-22s\t%s\t%6.4f', measure, qid, value) END"""


def trec_text(rows: pa.Table) -> str:
    """The text trec_eval prints for ``rows`` (measure, value, and optionally case_id: NULL or absent = ``all``;
    integer: print as a count, else counts when ``value`` is an integer column), one line per row in order. A
    NULL value (a measure undefined for a query) prints as trec_eval's 0."""
    import duckdb
    import pyarrow as pa

    from ragtriage.safe_text import visible_array

    names = rows.column_names
    n = rows.num_rows
    qid = visible_array(rows.column("case_id")) if "case_id" in names else pa.nulls(n, pa.string())
    measure = visible_array(rows.column("measure").cast(pa.string()))
    columns, labels = [measure, qid, rows.column("value").cast(pa.float64())], ["measure", "qid", "value"]
    if "integer" in names:
        columns, labels = [*columns, rows.column("integer")], [*labels, "integer"]
    integer = "integer" if "integer" in names else str(pa.types.is_integer(rows["value"].type)).upper()
    # built from Arrow columns only (no Python values): pyarrow's constructors from Python import pandas
    table = pa.table(columns, names=labels)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    try:
        con.register("_rows", table)
        row = con.execute(
            f"""SELECT string_agg({_LINE}, chr(10) ORDER BY i) || chr(10)
                FROM (SELECT row_number() OVER () AS i, measure, coalesce(qid, 'all') AS qid,
                             coalesce(value, 0.0) AS value, {integer} AS integer
                      FROM _rows)"""
        ).fetchone()
        return str(row[0]) if row and row[0] is not None else ""
    finally:
        con.close()
