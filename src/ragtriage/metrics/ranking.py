"""The evaluated ranked lists: one row per de-duplicated result within the deepest cutoff.

A unit can appear several times in one list (in document mode, several chunks of one document); the first
occurrence (lowest recorded rank) counts and positions are re-numbered 1..n. Windows over every result row cost
seconds at 10M rows, so the lists are cut first. Ranks are unique per (run, case, stage), so a unit at position p
of the de-duplicated list has recorded rank >= p, and the rows with rank <= depth hold every position <= depth.
A case whose rows there are exactly ranks 1..n with n distinct units (the common case) has position = rank and
needs no window at all. Every other case (repeats or rank gaps) is de-duplicated with windows, and read past the
depth when it has fewer than ``depth`` distinct units there. The result is exact.

Repeats are found by hashing unit ids: a hash collision can only flag a clean case for the exact path, and a real
repeat always has equal hashes, so no repeat is missed.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.metrics.context import arrow
from ragtriage.store.dedup import deduplicated

_TOP = """SELECT case_id, unit_id, rank FROM results
          WHERE run_id = ? AND stage = ? AND rank <= ?"""

# list_distinct over each case's (at most depth) hashes is about twice as fast as count(DISTINCT ...) here
_IRREGULAR = """SELECT case_id, len(list_distinct(h)) < ? AS short
                FROM (SELECT case_id, count(*) AS n, max(rank) AS top_rank, list(hash(unit_id)) AS h
                      FROM _top GROUP BY case_id)
                WHERE n <> top_rank OR len(list_distinct(h)) <> n"""

_DEEPER = """SELECT r.case_id, r.unit_id, r.rank FROM results r
             SEMI JOIN (SELECT case_id FROM _irregular WHERE short) s USING (case_id)
             WHERE r.run_id = ? AND r.stage = ? AND r.rank > ?"""

_ROWS = "SELECT * FROM _top SEMI JOIN _irregular USING (case_id) UNION ALL SELECT * FROM _deeper"
_CUT = f"""SELECT case_id, unit_id, CAST(pos AS INTEGER) AS pos FROM ({deduplicated(_ROWS)}) WHERE pos <= ?
          UNION ALL
          SELECT case_id, unit_id, rank AS pos FROM _top ANTI JOIN _irregular USING (case_id)"""


def cut_lists(con: duckdb.DuckDBPyConnection, run_id: str, stage: str, depth: int) -> pa.Table:
    """(case_id, unit_id, pos) for every de-duplicated result at position <= depth of one run and stage."""
    top = arrow(con, _TOP, [run_id, stage, depth])
    irregular = arrow(con, _IRREGULAR, [depth], _top=top)
    if irregular.num_rows == 0:
        return pa.table({"case_id": top["case_id"], "unit_id": top["unit_id"], "pos": pc.cast(top["rank"], pa.int32())})
    deeper = top.schema.empty_table()
    if pc.any(irregular["short"]).as_py():
        deeper = arrow(con, _DEEPER, [run_id, stage, depth], _irregular=irregular)
    return arrow(con, _CUT, [depth], _top=top, _irregular=irregular, _deeper=deeper)
