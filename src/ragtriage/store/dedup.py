"""How a ranked list is de-duplicated, written once: the first occurrence (lowest recorded rank) of a unit counts
and positions are re-numbered 1..n over what is left.

The same unit can appear several times in one list (in document mode, several chunks of one document). Metrics
(``metrics.ranking``), trec-compat, the classifier's unit locations and the labelling pool all build their SQL
from these helpers, so ``A, B, A, C`` puts ``C`` at position 3 everywhere. Ranks are unique per list (the
load refuses duplicates), so ordering by rank alone is total.
"""

from __future__ import annotations

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


def irregular_lists(rows: str, lists: str, depth: str) -> str:
    """SQL: the ``lists`` columns of each list of ``rows`` whose positions within ``depth`` are not its ranks (a
    repeat or a rank gap there), or may reach past its rows within ``depth`` (:func:`positions_within`). Hashes of
    unit ids count the distinct units: a collision can only name a clean list, never miss a repeat."""
    top = f"FILTER (WHERE rank <= {depth})"
    regular = f"""coalesce(count(*) {top} = max(rank) {top}
                      AND len(list_distinct(list(hash(unit_id)) {top})) = count(*) {top}
                      AND (count(*) {top} = {depth} OR count(*) {top} = count(*)), false)"""
    return f"SELECT {lists} FROM ({rows}) GROUP BY {lists} HAVING NOT {regular}"


def positions_within(rows: str, lists: str, depth: str, position: str = "pos") -> str:
    """SQL: :func:`deduplicated` cut at ``position`` <= ``depth`` (a SQL value), with windows over few rows.

    A window holds every row it numbers in memory, so numbering every list of a large run does not fit the
    store's memory cap. Ranks are unique per list and >= 1, so a list whose rows at rank <= ``depth`` are ranks
    1..``depth`` of distinct units, or whose rows are all there as ranks 1..n of distinct units, has position =
    rank there and nothing deeper reaches ``depth``: it is read with no window. Only the other lists
    (:func:`irregular_lists`) are numbered by :func:`deduplicated`, over all their rows, since a repeat or a gap
    lets a deeper row reach ``depth``. ``rows`` (a query with ``unit_id``, ``rank`` and the ``lists`` columns) is
    read three times and never materialised."""
    return f"""WITH dedup_rows AS NOT MATERIALIZED ({rows}),
    dedup_irregular AS MATERIALIZED ({irregular_lists("SELECT * FROM dedup_rows", lists, depth)})
    SELECT *, CAST(rank AS BIGINT) AS {position}
    FROM dedup_rows ANTI JOIN dedup_irregular USING ({lists}) WHERE rank <= {depth}
    UNION ALL
    SELECT * FROM ({
        deduplicated(f"SELECT * FROM dedup_rows SEMI JOIN dedup_irregular USING ({lists})", lists, position)
    }) WHERE {position} <= {depth}"""
