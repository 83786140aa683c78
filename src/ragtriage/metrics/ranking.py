"""The evaluated ranked lists: one row per de-duplicated result within the deepest cutoff.

A unit can appear several times in one list (in document mode, several chunks of one document); the first
occurrence (lowest recorded rank) counts and positions are re-numbered 1..n. Windows over every result row are
costly on a large run, so the lists are cut first. Ranks are unique per (run, case, stage), so a unit at position p
of the de-duplicated list has recorded rank >= p, and the rows with rank <= depth hold every position <= depth.
A case whose rows there are exactly ranks 1..depth with distinct units (the common case) has position = rank and
needs no window at all. Every other case (repeats, rank gaps, or fewer than ``depth`` rows there: ranks 1, 2, 3,
50 put rank 50 at position 4) is de-duplicated with windows over all its rows, by ``store.dedup.positions_within``:
a chunk of cases at a time, over the key columns, in DuckDB, so that a document-unit run loaded from chunks (where
nearly every list is such a case) is never held whole. The result is exact.

Repeats are found by hashing unit ids: a hash collision can only flag a clean case for the exact path, and a real
repeat always has equal hashes, so no repeat is missed.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.store.connection import run_value
from ragtriage.store.dedup import deduplicated, first_occurrence, positions_within

_TOP = """SELECT case_id, unit_id, rank FROM results
          WHERE run_id = ? AND stage = ? AND rank <= ?{cut}"""

# list_distinct over each case's (at most depth) hashes is about twice as fast as count(DISTINCT ...) here
_IRREGULAR = """SELECT case_id, len(list_distinct(h)) < ? AS short
                FROM (SELECT case_id, count(*) AS n, max(rank) AS top_rank, list(hash(unit_id)) AS h
                      FROM _top GROUP BY case_id)
                WHERE n <> top_rank OR len(list_distinct(h)) <> n OR n < ?"""

# a run the load found without repeats (``runs.has_repeats`` false) needs no hashes
_IRREGULAR_NO_REPEATS = """SELECT case_id, n < ? AS short
                FROM (SELECT case_id, count(*) AS n, max(rank) AS top_rank FROM _top GROUP BY case_id)
                WHERE n <> top_rank OR n < ?"""

# the rows of the lists found irregular in their top (``positions_within`` numbers them): a list with depth distinct
# units within rank <= depth has every position <= depth there, so only the others (short) are read deeper
_IRREGULAR_ROWS = """SELECT r.case_id, r.unit_id, r.rank FROM results r JOIN _irregular i USING (case_id)
                     WHERE r.run_id = $run_id AND r.stage = $stage AND (r.rank <= $depth OR i.short)"""


def positions_sql(rows: str) -> str:
    """The one de-duplication: a unit repeated in a list keeps its first occurrence (lowest recorded rank, and
    that row's score); positions 1..n are then numbered over the de-duplicated list by rank."""
    return f"SELECT case_id, unit_id, CAST(pos AS INTEGER) AS pos FROM ({deduplicated(f'SELECT * FROM {rows}')})"


def has_repeats(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether some list of the run may hold a unit twice: the load's duplicate-in-list check stores the answer
    (``runs.has_repeats``); unknown (NULL, or no such run) counts as yes."""
    return run_value(con, run_id, "has_repeats") is not False


def cut_lists(
    con: duckdb.DuckDBPyConnection, run_id: str, stage: str, depth: int, cut: tuple[str, list[Any]] = ("", [])
) -> pa.Table:
    """(case_id, unit_id, pos) for every de-duplicated result at position <= depth of one run and stage; ``cut``
    (``EvalContext.case_filter``) keeps some cases' lists only: :func:`cut_lists_table`, fetched."""
    cur = con.cursor()  # the temp tables go with it
    try:
        return cur.sql(f"SELECT * FROM {cut_lists_table(cur, run_id, stage, depth, cut)}").to_arrow_table()
    finally:
        cur.close()


def cut_lists_table(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    stage: str,
    depth: int,
    cut: tuple[str, list[Any]] = ("", []),
    name: str = "_cut_lists",
) -> str:
    """:func:`cut_lists` into a temp table ``name`` of ``cur`` (it goes with the cursor, or the next call of the
    same ``name`` replaces it); returns ``name``.

    The lists whose top is not ranks 1..depth of distinct units are numbered by ``store.dedup.positions_within``
    (a chunk of cases at a time, over their key columns, in DuckDB): in a document-unit run loaded from chunks
    that is nearly every list, and all of its rows. The top of every list, and the lists cut, stay in DuckDB
    (under the store's memory cap, spilling if they must) rather than in this process beside the work on them:
    a tenth of a 100-deep run's rows, for each run a command compares."""
    cur.execute(f"CREATE OR REPLACE TEMP TABLE _top AS {_TOP.format(cut=cut[0])}", [run_id, stage, depth, *cut[1]])
    found = _IRREGULAR if has_repeats(cur, run_id) else _IRREGULAR_NO_REPEATS
    cur.execute(f"CREATE OR REPLACE TEMP TABLE _irregular AS {found}", [depth, depth])
    row = cur.execute("SELECT count(*) FROM _irregular").fetchone()
    if not row or not row[0]:
        cur.execute(
            f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT case_id, unit_id, CAST(rank AS INTEGER) AS pos FROM _top"
        )
    else:
        # the top of the lists read with no window waits in DuckDB while the others are numbered
        cur.execute("CREATE OR REPLACE TEMP TABLE _cut_top AS SELECT * FROM _top ANTI JOIN _irregular USING (case_id)")
        cur.execute("DROP TABLE _top")
        params: dict[str, object] = {"run_id": run_id, "stage": stage, "depth": depth}
        numbered = positions_within(cur, _IRREGULAR_ROWS, params, "case_id", depth, name="_cut")
        cur.execute(
            f"""CREATE OR REPLACE TEMP TABLE {name} AS
                SELECT case_id, unit_id, CAST(pos AS INTEGER) AS pos FROM ({numbered})
                UNION ALL
                SELECT case_id, unit_id, CAST(rank AS INTEGER) AS pos FROM _cut_top""",
            params,
        )
        cur.execute("DROP TABLE _cut_top")
    cur.execute("DROP TABLE IF EXISTS _top")
    return name


def trec_key(alias: str) -> str:
    """trec_eval's order as one comparable value (greater = earlier): scored before unscored, score descending,
    docno descending."""
    return f"{{'n': {alias}.score IS NOT NULL, 's': coalesce({alias}.score, 0.0), 'u': {alias}.unit_id}}"


def labelled_positions_sql(*, by_score: bool, repeats: bool, scored: bool = False, depth: int | None = None) -> str:
    """CTEs ``jp(case_id, pos, grade)``: every labelled unit of each list at its de-duplicated position, and
    ``nret(case_id, num_ret)``: the de-duplicated list length; over CTEs ``r(case_id, unit_id, rank, score)`` (the
    lists) and ``q(case_id, unit_id, grade)`` (the qrels: ``contract.relevance.labelled_units`` with grades).

    Every measure here depends only on where the labelled units sit and on the list length, so no list is
    materialised and no window runs over every row. By recorded rank, a case whose rows are ranks 1..n with n
    distinct units has position = rank; only the other cases are numbered. By score (trec_eval's order), a labelled
    unit's position is 1 + the results of its list ordered before it, counted by a join on the case; ``scored``
    (no row without a score) compares score and docno directly, cheaper than :func:`trec_key`'s struct.
    ``depth`` (by score, lists without repeats, every measure cut at most there): each list's first ``depth``
    results are taken by a top-n aggregate in the pass that counts the list, instead of ordering every row.
    """
    if by_score and not repeats and depth is not None:
        key = "{'s': r.score, 'u': r.unit_id}" if scored else trec_key("r")  # trec_key's order when all are scored
        return f"""tops AS MATERIALIZED (SELECT case_id, count(*) AS num_ret, max({key}, {int(depth)}) AS l
                                     FROM r GROUP BY case_id),
        nret AS (SELECT case_id, num_ret FROM tops),
        jp AS (SELECT t.case_id, t.pos, q.grade
               FROM (SELECT case_id, unnest(l).u AS unit_id, CAST(generate_subscripts(l, 1) AS INTEGER) AS pos
                     FROM tops) t
               JOIN q USING (case_id, unit_id))"""
    distinct = "count(DISTINCT unit_id)" if repeats else "count(*)"
    st = f"""st AS (SELECT case_id, count(*) AS n, max(rank) AS top, {distinct} AS nd FROM r GROUP BY case_id),
        nret AS (SELECT case_id, nd AS num_ret FROM st)"""
    if by_score:
        first = first_occurrence() if repeats else ""
        before = (
            "(d.score > jr.score OR (d.score = jr.score AND d.unit_id > jr.unit_id))"
            if scored
            else f"{trec_key('d')} > {trec_key('jr')}"
        )
        return f"""{st},
        d AS NOT MATERIALIZED (SELECT case_id, unit_id, score FROM r {first}),
        jr AS MATERIALIZED (SELECT d.case_id, d.unit_id, d.score, q.grade FROM d JOIN q USING (case_id, unit_id)),
        jp AS (SELECT jr.case_id, CAST(1 + count(d.unit_id) AS INTEGER) AS pos, any_value(jr.grade) AS grade
               FROM jr LEFT JOIN d ON d.case_id = jr.case_id AND {before}
               GROUP BY jr.case_id, jr.unit_id)"""
    return f"""{st},
        irr AS (SELECT case_id FROM st WHERE n <> top OR nd <> n),
        ir AS (SELECT * FROM r SEMI JOIN irr USING (case_id)),
        jp AS (SELECT r.case_id, CAST(r.rank AS INTEGER) AS pos, q.grade
               FROM r JOIN q USING (case_id, unit_id) ANTI JOIN irr USING (case_id)
               UNION ALL
               SELECT p.case_id, p.pos, q.grade FROM ({positions_sql("ir")}) p JOIN q USING (case_id, unit_id))"""
