"""How a ranked list is de-duplicated, written once: the first occurrence (lowest recorded rank) of a unit counts
and positions are re-numbered 1..n over what is left.

The same unit can appear several times in one list (in document mode, several chunks of one document). Metrics
(``metrics.ranking``), trec-compat, the classifier's unit locations and the labelling pool all build their SQL
from these helpers, so ``A, B, A, C`` puts ``C`` at position 3 everywhere. Ranks are unique per list (the
load refuses duplicates), so ordering by rank alone is total.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

#: The rule, a SQL template read at every call: which occurrence of a unit within a list a row is (1 = the one
#: that counts). tests/unit/test_one_rule.py changes it here alone.
OCCURRENCE = "row_number() OVER (PARTITION BY {lists}, unit_id ORDER BY rank)"


def occurrence(lists: str = "case_id") -> str:
    """SQL window: 1 for the occurrence of a unit that counts within a list (``lists``: the columns that identify
    one list), 2, 3, ... for its repeats."""
    return OCCURRENCE.format(lists=lists)


def first_occurrence(lists: str = "case_id") -> str:
    """SQL: the QUALIFY clause keeping each unit's first occurrence (lowest rank) within a list; ``lists`` are
    the columns that identify one list."""
    return f"QUALIFY {occurrence(lists)} = 1"


def first_occurrences(rows: str, lists: str = "case_id") -> str:
    """SQL: the rows of ``rows`` (a query or table with ``unit_id`` and ``rank``) keeping each unit's first
    occurrence within a list (:func:`first_occurrence`)."""
    return f"SELECT * FROM ({rows}) {first_occurrence(lists)}"


def deduplicated(rows: str, lists: str = "case_id", position: str = "pos") -> str:
    """SQL: :func:`first_occurrences` with a ``position`` column numbering each list's units 1..n by rank."""
    return (
        f"SELECT *, row_number() OVER (PARTITION BY {lists} ORDER BY rank) AS {position} "
        f"FROM ({first_occurrences(rows, lists)})"
    )


def irregular_lists(rows: str, lists: str, depth: str | None) -> str:
    """SQL: the ``lists`` columns of each list of ``rows`` whose positions within ``depth`` are not its ranks (a
    repeat or a rank gap there), or may reach past its rows within ``depth`` (:func:`positions_within`); with
    ``depth`` None, of each list whose positions are not its ranks anywhere. Hashes of unit ids count the distinct
    units: a collision can only name a clean list, never miss a repeat."""
    if depth is None:
        # a whole list: counted distinct rather than listed, the lists of every row would be held at once
        regular = "count(*) = max(rank) AND count(DISTINCT hash(unit_id)) = count(*)"
        return f"SELECT {lists} FROM ({rows}) GROUP BY {lists} HAVING NOT ({regular})"
    top = f"FILTER (WHERE rank <= {depth})"
    regular = f"""coalesce(count(*) {top} = max(rank) {top}
                      AND len(list_distinct(list(hash(unit_id)) {top})) = count(*) {top}
                      AND (count(*) {top} = {depth} OR count(*) {top} = count(*)), false)"""
    return f"SELECT {lists} FROM ({rows}) GROUP BY {lists} HAVING NOT {regular}"


#: Rows of the lists that need numbering windowed by one statement: what a window holds stays bounded, whatever
#: the size of the runs (a chunk is cut between cases, never inside a list).
CHUNK_ROWS = 2_000_000


def irregular_positions(
    rows: str, lists: str, depth: str | None, irregular: str, position: str = "pos", keep: str | None = None
) -> str:
    """SQL: ``lists``, ``rank`` and ``position`` (:func:`deduplicated`) of the rows at ``position`` <= ``depth``
    (``depth`` None: at any position) of the lists named in ``irregular`` (a table of ``lists`` columns), numbered
    over their key columns alone: a window holds every row it numbers, and the other columns (text, snippets)
    need not be among them. ``keep``, an SQL condition over the numbered rows (named ``numbered``: their
    ``lists`` columns, ``unit_id``, ``rank`` and ``position``), keeps only the rows it holds for."""
    keys = f"SELECT {lists}, unit_id, rank FROM ({rows}) SEMI JOIN {irregular} USING ({lists})"
    within = [f"{position} <= {depth}"] if depth is not None else []
    where = " AND ".join([*within, *([f"({keep})"] if keep else [])]) or "true"
    return f"SELECT {lists}, rank, {position} FROM ({deduplicated(keys, lists, position)}) numbered WHERE {where}"


def positions_within(
    cur: duckdb.DuckDBPyConnection,
    rows: str,
    params: dict[str, object],
    lists: str,
    depth: int | None,
    *,
    position: str = "pos",
    keep: str | None = None,
    keep_params: dict[str, object] | None = None,
    chunk_by: str = "case_id",
    name: str = "dedup",
    chunk_rows: int | None = None,
) -> str:
    """SQL: :func:`deduplicated` cut at ``position`` <= ``depth``, with windows over few rows at a time.

    A window holds every row it numbers in memory, so numbering every list of a large run does not fit the
    store's memory cap. Ranks are unique per list and >= 1, so a list whose rows at rank <= ``depth`` are ranks
    1..``depth`` of distinct units, or whose rows are all there as ranks 1..n of distinct units, has position =
    rank there and nothing deeper reaches ``depth``: it is read with no window. Only the other lists
    (:func:`irregular_lists`) are numbered, over all their rows, since a repeat or a gap lets a deeper row reach
    ``depth``; and in a document-unit store loaded from chunks almost every list is one of them. So they are
    numbered here, before the SQL is returned, over their key columns (:func:`irregular_positions`) and about
    ``chunk_rows`` rows at a time (ranges of ``chunk_by``, a column of ``lists``), into temporary tables
    ``<name>_irregular`` and ``<name>_numbered`` of ``cur`` (they go with the cursor, or the next call of the same
    ``name`` replaces them). The SQL returned reads them and ``rows`` (a query with ``unit_id``, ``rank`` and the
    ``lists`` columns, taking ``params``) on ``cur``, and the positions are joined back to the rows by rank.

    ``depth`` None: every position (a list is read with no window when its positions are its ranks throughout).
    ``keep`` (:func:`irregular_positions`, taking ``params`` and ``keep_params``): of the lists numbered, only the
    rows it holds for are returned, so the table of them stays small; the caller must read no other row."""
    irregular, numbered = numbering_tables(name)
    cut = None if depth is None else str(depth)
    cur.execute(f"CREATE OR REPLACE TEMP TABLE {irregular} AS {irregular_lists(rows, lists, cut)}", params)
    numbering = irregular_positions(
        f"SELECT * FROM ({rows}) WHERE ($lo IS NULL OR {chunk_by} >= $lo) AND ($hi IS NULL OR {chunk_by} < $hi)",
        lists,
        cut,
        irregular,
        position,
        keep,
    )
    numbering_params = {**params, **(keep_params or {})}
    cur.execute(
        f"CREATE OR REPLACE TEMP TABLE {numbered} AS SELECT * FROM ({numbering}) LIMIT 0",
        {**numbering_params, "lo": None, "hi": None},
    )
    for lo, hi in _chunks(cur, rows, params, lists, irregular, chunk_by, chunk_rows or CHUNK_ROWS):
        cur.execute(f"INSERT INTO {numbered} {numbering}", {**numbering_params, "lo": lo, "hi": hi})
    within = "" if depth is None else f" WHERE rank <= {depth}"
    return f"""SELECT *, CAST(rank AS BIGINT) AS {position}
    FROM ({rows}) dedup_rows ANTI JOIN {irregular} USING ({lists}){within}
    UNION ALL
    SELECT r.*, CAST(n.{position} AS BIGINT) AS {position}
    FROM ({rows}) r JOIN {numbered} n USING ({lists}, rank)"""


def numbering_tables(name: str) -> tuple[str, str]:
    """The temp tables :func:`positions_within` leaves on its cursor under ``name``: (irregular lists, numbered)."""
    return f"{name}_irregular", f"{name}_numbered"


def _chunks(
    cur: duckdb.DuckDBPyConnection,
    rows: str,
    params: dict[str, object],
    lists: str,
    irregular: str,
    chunk_by: str,
    chunk_rows: int,
) -> list[tuple[object, object]]:
    """Ranges [lo, hi) of ``chunk_by`` holding about ``chunk_rows`` rows of the irregular lists each (a value's
    rows all in one range; NULL bounds are open); none when no list is irregular."""
    counts = f"""SELECT {chunk_by} AS v, count(*) AS n FROM ({rows}) SEMI JOIN {irregular} USING ({lists})
                 GROUP BY {chunk_by}"""
    total = cur.execute(f"SELECT count(*), sum(n) FROM ({counts})", params).fetchall()[0]
    if not total[0]:
        return []
    if int(total[1]) <= chunk_rows:
        return [(None, None)]
    cuts = [
        r[0]
        for r in cur.execute(
            f"""SELECT min(v) FROM (SELECT v, sum(n) OVER (ORDER BY v) - n AS before FROM ({counts}))
                GROUP BY before // $chunk_rows HAVING min(before) > 0 ORDER BY 1""",
            {**params, "chunk_rows": chunk_rows},
        ).fetchall()
    ]
    edges: list[object] = [None, *cuts, None]
    return list(zip(edges[:-1], edges[1:], strict=True))
