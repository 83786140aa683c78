"""How a ranked list is de-duplicated, written once: the first occurrence (lowest recorded rank) of a unit counts
and positions are re-numbered 1..n over what is left.

The same unit can appear several times in one list (in document mode, several chunks of one document). Metrics
(``metrics.ranking``), trec-compat, the classifier's unit locations and the labelling pool all build their SQL
from these two helpers, so ``A, B, A, C`` puts ``C`` at position 3 everywhere. Ranks are unique per list (the
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
