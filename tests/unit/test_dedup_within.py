"""positions_within: lists cut at a depth, numbered by windows only when they need it, as deduplicated numbers them,
a chunk of lists at a time over their key columns."""

from __future__ import annotations

import duckdb
import pytest

from ragtriage.store.dedup import deduplicated, irregular_lists, positions_within

LISTS = {
    "clean": ["A", "B", "C", "D"],
    "repeat-below-depth": ["A", "B", "C", "A", "E"],
    "repeat-within-depth": ["A", "B", "A", "C", "D"],
    "short": ["A", "B"],
}
GAPS = {  # list -> (rank, unit)
    "gap": [(1, "A"), (2, "B"), (5, "C"), (6, "D")],
    "short-then-gap": [(1, "A"), (2, "B"), (40, "C")],
    "deep-only": [(7, "A"), (8, "B")],
}


def _rows() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE r (list VARCHAR, unit_id VARCHAR, rank INTEGER)")
    rows = [(name, u, i + 1) for name, units in LISTS.items() for i, u in enumerate(units)]
    rows += [(name, u, rank) for name, pairs in GAPS.items() for rank, u in pairs]
    con.executemany("INSERT INTO r VALUES (?, ?, ?)", rows)
    return con


def test_only_irregular_lists_reach_the_windows() -> None:
    con = _rows()
    found = {r[0] for r in con.execute(irregular_lists("SELECT * FROM r", "list", "3")).fetchall()}
    # a repeat below the depth, or a short list with nothing deeper, keeps position = rank within it
    assert found == {"repeat-within-depth", "gap", "short-then-gap", "deep-only"}


@pytest.mark.parametrize("chunk_rows", [None, 1, 3])
def test_positions_within_the_depth_are_the_deduplicated_ones(chunk_rows: int | None) -> None:
    con = _rows()
    sql = positions_within(con, "SELECT * FROM r", {}, "list", 3, chunk_by="list", chunk_rows=chunk_rows)
    got = con.execute(f"SELECT list, unit_id, rank, pos FROM ({sql})")
    rows = sorted(got.fetchall())
    reference = con.execute(
        f"SELECT list, unit_id, rank, pos FROM ({deduplicated('SELECT * FROM r', 'list')}) WHERE pos <= 3"
    ).fetchall()
    assert rows == sorted(reference)
    by_list: dict[str, list[tuple[str, int, int]]] = {}
    for name, unit, rank, pos in rows:
        by_list.setdefault(name, []).append((unit, rank, pos))
    assert by_list == {
        "clean": [("A", 1, 1), ("B", 2, 2), ("C", 3, 3)],
        "deep-only": [("A", 7, 1), ("B", 8, 2)],
        "gap": [("A", 1, 1), ("B", 2, 2), ("C", 5, 3)],
        "repeat-below-depth": [("A", 1, 1), ("B", 2, 2), ("C", 3, 3)],
        "repeat-within-depth": [("A", 1, 1), ("B", 2, 2), ("C", 4, 3)],
        "short": [("A", 1, 1), ("B", 2, 2)],
        "short-then-gap": [("A", 1, 1), ("B", 2, 2), ("C", 40, 3)],
    }


def _chunk_lists(con: duckdb.DuckDBPyConnection, cases: int) -> None:
    """A document-unit run loaded from chunks: every list returns four chunks of each document it retrieves, so
    every list repeats documents (unit_id is the document), at 100 rows a list."""
    con.execute(f"""CREATE TABLE r AS
        SELECT 'q' || lpad(CAST(c AS VARCHAR), 6, '0') AS case_id, k + 1 AS rank,
               'd' || ((c * 7 + k // 4 * 13 + (k % 3)) % 50) AS unit_id,
               repeat('passage text ', 40) || k AS snippet
        FROM range({cases}) a(c), range(100) b(k)""")


def test_chunks_of_one_document_are_numbered_in_chunks_of_cases() -> None:
    """Every list is irregular; numbered a chunk of cases at a time, the positions are the window definition's."""
    con = duckdb.connect()
    _chunk_lists(con, 300)
    assert con.execute(f"SELECT count(*) FROM ({irregular_lists('SELECT * FROM r', 'case_id', '10')})").fetchall() == [
        (300,)
    ]
    sql = positions_within(con, "SELECT * FROM r", {}, "case_id", 10, chunk_rows=4_000)
    assert con.execute("SELECT count(DISTINCT case_id) FROM dedup_numbered").fetchall() == [(300,)]
    got = con.execute(f"SELECT case_id, unit_id, rank, pos, snippet FROM ({sql}) ORDER BY case_id, pos").fetchall()
    reference = con.execute(
        f"SELECT case_id, unit_id, rank, pos, snippet FROM ({deduplicated('SELECT * FROM r')}) WHERE pos <= 10 "
        "ORDER BY case_id, pos"
    ).fetchall()
    assert got == reference and len(got) == 3000
    # positions past the first repeat are not ranks: the windows did number these lists
    assert sum(1 for _, _, rank, pos, _ in got if rank != pos) > 2000


def test_whole_lists_irregular_where_any_position_is_not_the_rank() -> None:
    con = _rows()
    found = {r[0] for r in con.execute(irregular_lists("SELECT * FROM r", "list", None)).fetchall()}
    # with no depth, a repeat or a gap anywhere counts; ranks 1..n of distinct units do not
    assert found == {"repeat-below-depth", "repeat-within-depth", "gap", "short-then-gap", "deep-only"}


@pytest.mark.parametrize("chunk_rows", [None, 2])
def test_whole_lists_keep_only_the_rows_asked_for(chunk_rows: int | None) -> None:
    con = _rows()
    keep = "numbered.pos <= $p OR numbered.unit_id = 'D'"
    sql = positions_within(
        con,
        "SELECT * FROM r",
        {},
        "list",
        None,
        keep=keep,
        keep_params={"p": 2},
        chunk_by="list",
        chunk_rows=chunk_rows,
    )
    got = sorted(con.execute(f"SELECT list, unit_id, rank, pos FROM ({sql})").fetchall())
    whole = con.execute(f"SELECT list, unit_id, rank, pos FROM ({deduplicated('SELECT * FROM r', 'list')})").fetchall()
    # the lists read with no window come whole; the numbered ones hold the kept rows alone
    regular = {"clean", "short"}
    assert got == sorted(r for r in whole if r[0] in regular or r[3] <= 2 or r[1] == "D")
    assert ("repeat-below-depth", "E", 5, 4) not in got and ("clean", "D", 4, 4) in got and ("gap", "D", 6, 4) in got
