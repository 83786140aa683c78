"""trec_eval's own output layout, so scripts that parse ``trec_eval`` output read ragtriage's unchanged.

``measure<TAB>qid|all<TAB>value``: the name left-aligned in 22 characters (``%-22s``), counts as integers
(``%ld``: num_q, num_ret, num_rel, num_rel_ret) and every other value with four decimals (``%6.4f``). With
per-query lines (``trec_eval -q``) each query prints its measures (num_q only in the ``all`` block), queries in
byte order of their ids as trec_eval sorts them, then the ``all`` block. Query ids came from a data file: control
characters are made visible (``ragtriage.safe_text``) so a line always stays one line.

The lines are formatted by DuckDB's ``printf`` over the whole table: no Python loop per query.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ragtriage.safe_text import visible_array

_LINE = """CASE WHEN integer THEN printf('%-22s\t%s\t%d', name, label, CAST(round(value) AS BIGINT))
                ELSE printf('%-22s\t%s\t%6.4f', name, label, value) END"""


def trec_text(per_query: pa.Table | None, summary: pa.Table) -> str:
    """The text trec_eval prints. ``summary``: (name, value, integer) in print order, one row per measure;
    ``per_query``: (qid, name, value, integer, idx) with ``idx`` the measure's print position, or None for the
    ``all`` block alone. A NULL value (a measure undefined for a query) prints as trec_eval's 0."""
    con = duckdb.connect()
    try:
        con.register("_summary", summary)
        rows = [
            "SELECT 1 AS part, '' AS qid, row_number() OVER () AS idx, name, 'all' AS label, value, integer "
            "FROM _summary"
        ]
        if per_query is not None:
            i = per_query.schema.get_field_index("qid")
            con.register("_per_query", per_query.set_column(i, "qid", visible_array(per_query.column("qid"))))
            rows.append("SELECT 0, qid, idx, name, qid, value, integer FROM _per_query")
        sql = f"""SELECT string_agg({_LINE}, chr(10) ORDER BY part, qid, idx) || chr(10)
                  FROM (SELECT part, qid, idx, name, label, coalesce(value, 0.0) AS value, integer
                        FROM ({" UNION ALL ".join(rows)}))"""
        row = con.execute(sql).fetchone()
        return str(row[0]) if row and row[0] is not None else ""
    finally:
        con.close()
