"""positions_within: lists cut at a depth, numbered by windows only when they need it, as deduplicated numbers them."""

from __future__ import annotations

import duckdb

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


def test_positions_within_the_depth_are_the_deduplicated_ones() -> None:
    con = _rows()
    got = con.execute(f"SELECT list, unit_id, rank, pos FROM ({positions_within('SELECT * FROM r', 'list', '3')})")
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
