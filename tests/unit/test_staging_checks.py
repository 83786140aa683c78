"""A Parquet file staged as a view is checked on its own columns; the findings must be those of a staged copy."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ragtriage.contract.fields import RESULTS
from ragtriage.contract.staging import _ZS, stage, trimmed


def test_blank_test_knows_every_character_trim_removes() -> None:
    """The missing test skips trimming values that do not start with a space separator: the list must be
    exactly what DuckDB's trim removes, at either end, over every code point."""
    found = duckdb.sql(
        """SELECT list(c ORDER BY c) FROM range(0, 1114112) t(c) WHERE (c < 55296 OR c > 57343)
           AND (length(trim(chr(CAST(c AS INTEGER)) || 'a')) = 1 OR length(trim('a' || chr(CAST(c AS INTEGER)))) = 1)"""
    ).fetchall()[0][0]
    assert tuple(found) == eval(_ZS)  # noqa: S307 - a literal tuple of ints
    assert all(c == 32 or c >= 160 for c in found)  # the blank test's byte range below '!' or from U+00A0


def test_trimmed_equals_trim_over_every_code_point() -> None:
    """The string value skips trimming values with nothing to trim: it must equal ``nullif(trim(v), '')`` for
    every code point alone, at either end and inside an id, and for empty and NULL values."""
    con = duckdb.connect()
    con.execute(
        """CREATE TABLE v AS SELECT unnest([c, 'x' || c, c || 'x', 'x' || c || 'y', c || c, ' ' || c || 'x ']) AS s
           FROM (SELECT chr(CAST(i AS INTEGER)) AS c FROM range(0, 1114112) t(i) WHERE i < 55296 OR i > 57343)
           UNION ALL SELECT unnest(['', NULL, '  ', 'x', 'x \u3000'])"""
    )
    rows, differ = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {trimmed('s')} IS DISTINCT FROM nullif(trim(s), '')) FROM v"
    ).fetchall()[0]
    assert rows == 6 * (1114112 - 2048) + 5 and differ == 0


def _hostile(path: Path) -> None:
    ids = ["d1", "", " ", "\u3000", "\u00a0x", None, " \u2003 ", "\t", "x "]
    n = len(ids)
    pq.write_table(
        pa.table(
            {
                "case_id": pa.array(["q1", None, "  ", "q2", "\u205f", "q3", "q4", "q5", ""]),
                "stage": pa.array(["final"] * n),
                "rank": pa.array([1, 2, None, 4, 5, 6, 7, 8, 9], pa.int32()),
                "document_id": pa.array(ids),
                "score": pa.array([1.0, float("nan"), None, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]),
                "metadata": pa.array(['{"a": 1}', "[1]", "x", None, "{}", None, None, None, None]),
            }
        ),
        path,
    )


def test_a_view_reports_what_a_copy_reports(tmp_path: Path) -> None:
    path = tmp_path / "results.parquet"
    _hostile(path)
    con = duckdb.connect()
    copy = stage(con, path, RESULTS, "stg_copy", materialize=True)
    view = stage(con, path, RESULTS, "stg_view", materialize=False)
    assert view.findings == copy.findings
    assert view.rows == copy.rows == 9
    missing = sorted((f.line, f.field) for f in view.findings if f.code == "missing-field")
    # blank after trimming: '', ' ', U+3000, U+2003 between spaces, U+205F; a tab is not trimmed, nor 'x '
    assert missing == [
        (2, "case_id"),
        (2, "document_id"),
        (3, "case_id"),
        (3, "document_id"),
        (3, "rank"),
        (4, "document_id"),
        (5, "case_id"),
        (6, "document_id"),
        (7, "document_id"),
        (9, "case_id"),
    ]
    wrong = sorted((f.line, f.field) for f in view.findings if f.code == "wrong-type")
    assert wrong == [(2, "metadata"), (3, "metadata")]
