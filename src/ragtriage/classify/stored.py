"""The stored classification: one run's failures and category costs per (run, dataset version, k).

Classifying a large run costs far more than reading its stored rows, so ``ragtriage load`` and
``import-labels`` classify every run once (:func:`refresh` through ``classify_run``) and ``failures``, the gate
and the TUI read the rows. Both tables are derived data created on first use (no store schema change): a store
written before them simply has nothing stored, and a table of an older layout is rebuilt.

Stored rows are *fresh* when they were written for the current dataset version, after the latest load of any run
or dataset (another run's rows are evidence: "found by another run", "indexed"), with the run's current score
threshold. Anything else is stale and is classified again (without storing on a read-only store).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress

import duckdb
import pyarrow as pa

from ragtriage.store import StoreError
from ragtriage.store.transactions import transaction, write_refused

TABLE = "classifications"
COST_TABLE = "classification_costs"

DDL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    run_id VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    failure VARCHAR NOT NULL,
    category VARCHAR NOT NULL,
    rule VARCHAR NOT NULL,
    confidence DOUBLE NOT NULL,
    evidence JSON NOT NULL,
    patterns VARCHAR[] NOT NULL,
    experiments VARCHAR[] NOT NULL,
    dataset_version VARCHAR NOT NULL,
    k INTEGER NOT NULL,
    score_threshold DOUBLE,           -- the run's calibrated threshold when classified (negative-case rules)
    classified_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS {COST_TABLE} (
    run_id VARCHAR NOT NULL,
    dataset_version VARCHAR NOT NULL,
    k INTEGER NOT NULL,
    category VARCHAR NOT NULL,
    cost DOUBLE NOT NULL,
    cases BIGINT NOT NULL,
    measure VARCHAR NOT NULL,
    mean DOUBLE,
    population BIGINT NOT NULL,
    classified_at TIMESTAMP NOT NULL
)"""

COLUMNS = (
    "run_id",
    "case_id",
    "failure",
    "category",
    "rule",
    "confidence",
    "evidence",
    "patterns",
    "experiments",
    "dataset_version",
    "k",
)
COST_COLUMNS = ("category", "cost", "cases", "measure", "mean", "population")

# Written for the current dataset version, after every load, with the run's current threshold.
_FRESH = """c.dataset_version = (SELECT value FROM meta WHERE key = 'current_dataset')
    AND c.classified_at >= greatest((SELECT max(loaded_at) FROM runs), (SELECT max(loaded_at) FROM datasets))
    AND c.k = $k"""


def _has_tables(cur: duckdb.DuckDBPyConnection) -> bool:
    rows = cur.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name IN (?, ?)", [TABLE, COST_TABLE]
    ).fetchall()
    return bool(rows[0][0] == 2)


def store(con: duckdb.DuckDBPyConnection, run_id: str, k: int, rows: pa.Table, costs: pa.Table) -> None:
    """Replace ``run_id``'s stored rows at ``k`` for the current dataset version (see :func:`replacing`)."""
    cur = con.cursor()
    try:
        cur.register("_cls_rows", rows)
        with replacing(cur, run_id, k) as writer:
            writer.rows("SELECT * FROM _cls_rows", {})
            writer.costs(costs)
    finally:
        cur.close()


class Writer:
    """Inside :func:`replacing`'s transaction: appends the classified rows of a query, then the costs."""

    def __init__(self, cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> None:
        self._cur, self._run_id, self._k = cur, run_id, k

    def rows(self, rows_sql: str, params: dict[str, object]) -> None:
        """Append the rows of query ``rows_sql`` (``params`` its parameters besides $run_id), run on the cursor
        with the relations registered on it: from DuckDB to DuckDB, never through Arrow, which would hold every
        row only to write it back."""
        with storing(self._run_id):
            self._cur.execute(
                f"INSERT INTO {TABLE} SELECT {', '.join(COLUMNS)}, "
                f"(SELECT score_threshold FROM runs WHERE run_id = $run_id), now()::TIMESTAMP FROM ({rows_sql})",
                {**params, "run_id": self._run_id},
            )

    def costs(self, costs: pa.Table) -> None:
        self._cur.register("_cls_costs", costs)
        try:
            with storing(self._run_id):
                self._cur.execute(
                    f"INSERT INTO {COST_TABLE} SELECT $run_id, {VERSION}, $k, {', '.join(COST_COLUMNS)}, "
                    "now()::TIMESTAMP FROM _cls_costs",
                    {"run_id": self._run_id, "k": self._k},
                )
        finally:
            self._cur.unregister("_cls_costs")


VERSION = "(SELECT value FROM meta WHERE key = 'current_dataset')"


@contextmanager
def storing(run_id: str) -> Iterator[None]:
    """A DuckDB error of a statement that writes the stored classification, said as the store refusing it."""
    try:
        yield
    except duckdb.Error as exc:
        advice = write_refused(exc, or_else="or classify with store=False")
        raise StoreError(f"cannot store classifications for run {run_id!r} ({exc}); {advice}") from exc


@contextmanager
def replacing(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> Iterator[Writer]:
    """Drop ``run_id``'s stored rows and costs at ``k`` and write what the :class:`Writer` is given: rows in as many
    pieces as the caller likes, each its own transaction, then the costs.

    Rows without their costs are never fresh (:func:`is_fresh`), so no reader takes a classification half written;
    on an error the rows written so far are deleted again. (One transaction for every piece would hold each
    piece's rows in memory until the commit.) A write the store refuses raises
    :class:`StoreError`; the caller's own errors pass unchanged."""

    with storing(run_id), transaction(cur):
        ensure_tables(cur)
        delete_stored(cur, run_id, k)
    try:
        yield Writer(cur, run_id, k)
    except BaseException:
        with suppress(duckdb.Error):
            delete_stored(cur, run_id, k)
        raise


def delete_stored(
    cur: duckdb.DuckDBPyConnection, run_id: str, k: int, tables: tuple[str, ...] = (COST_TABLE, TABLE)
) -> None:
    """Delete the run's stored ``tables`` at ``k`` for the current dataset version; costs come first, so from then
    on no reader takes the rows as fresh."""
    for table in tables:
        cur.execute(
            f"DELETE FROM {table} WHERE run_id = $run_id AND k = $k AND dataset_version = {VERSION}",
            {"run_id": run_id, "k": k},
        )


def ensure_tables(cur: duckdb.DuckDBPyConnection) -> None:
    """Create both tables (inside the caller's transaction); a pair of an older layout, or one alone, is rebuilt."""
    if not _has_tables(cur):
        cur.execute(f"DROP TABLE IF EXISTS {TABLE}; DROP TABLE IF EXISTS {COST_TABLE}")
    cur.execute(DDL)


def is_fresh(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> bool:
    """Whether fresh rows of ``run_id`` at ``k`` are stored (the cost rows are written with them)."""
    if not _has_tables(cur):
        return False
    row = cur.execute(
        f"""SELECT count(*) FROM {COST_TABLE} c JOIN runs r USING (run_id)
            WHERE c.run_id = $run_id AND {_FRESH}""",
        {"run_id": run_id, "k": k},
    ).fetchall()[0]
    if not row[0]:
        return False
    stale = cur.execute(
        f"""SELECT count(*) FROM {TABLE} c JOIN runs r USING (run_id)
            WHERE c.run_id = $run_id AND c.k = $k
              AND c.dataset_version = (SELECT value FROM meta WHERE key = 'current_dataset')
              AND NOT ({_FRESH} AND c.score_threshold IS NOT DISTINCT FROM r.score_threshold)""",
        {"run_id": run_id, "k": k},
    ).fetchall()[0]
    return bool(stale[0] == 0)


def failure_rows(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> pa.Table:
    """The stored failure rows (call only when :func:`is_fresh`)."""
    return cur.sql(
        f"""SELECT {", ".join(COLUMNS)} FROM {TABLE}
            WHERE run_id = $run_id AND k = $k
              AND dataset_version = (SELECT value FROM meta WHERE key = 'current_dataset')""",
        params={"run_id": run_id, "k": k},
    ).to_arrow_table()


def cost_rows(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> pa.Table:
    """The stored cost rows (call only when :func:`is_fresh`)."""
    return cur.sql(
        f"""SELECT {", ".join(COST_COLUMNS)} FROM {COST_TABLE}
            WHERE run_id = $run_id AND k = $k
              AND dataset_version = (SELECT value FROM meta WHERE key = 'current_dataset')""",
        params={"run_id": run_id, "k": k},
    ).to_arrow_table()


def leak_counts(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> tuple[int, int] | None:
    """(distinct leaked result rows, leaking cases) of the run, any stage, from its fresh stored rows at ``k``
    (leakage does not depend on k: any fresh classification holds it), or None when none is stored or its
    leakage rows predate the ``n_leaked_results`` fact: the caller computes them then."""
    if not is_fresh(cur, run_id, k):
        return None
    row = cur.execute(
        f"""SELECT count(*), sum(CAST(evidence->>'$.facts.n_leaked_results' AS BIGINT)),
                   count(*) FILTER (WHERE evidence->>'$.facts.n_leaked_results' IS NULL)
            FROM {TABLE}
            WHERE run_id = $run_id AND k = $k AND failure = 'leakage'
              AND dataset_version = (SELECT value FROM meta WHERE key = 'current_dataset')""",
        {"run_id": run_id, "k": k},
    ).fetchall()[0]
    cases, results, missing = int(row[0]), int(row[1] or 0), int(row[2])
    return None if missing else (results, cases)
