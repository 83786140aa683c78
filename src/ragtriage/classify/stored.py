"""The stored classification: one run's failures and category costs per (run, dataset version, k).

Classifying a large run costs far more than reading its stored rows, so ``ragtriage load`` and
``import-labels`` classify every run once (:func:`refresh` through ``classify_run``) and ``failures``, the gate
and the TUI read the rows. Both tables are derived data created on first use (no store schema change): a store
written before them simply has nothing stored, and a table of an older layout is rebuilt.

Stored rows are *fresh* when they were written for the current dataset version, after the latest load of any run
or dataset (another run's rows are evidence: "found by another run", "indexed"), with the run's current score
threshold. Anything else is stale and is classified again (without storing on a read-only store).

A classification under way has a *plan* (``classification_chunks``, written by ``classify.chunked``): the case-id
ranges of its chunks, each marked done when its rows are stored. The plan is read here, below both the writer and
the readers, so a reader can take the chunks done so far (:func:`progress`, :func:`done_chunk_of`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ragtriage.checks.negatives import RUN_THRESHOLD
from ragtriage.store import StoreError, run_k
from ragtriage.store.connection import CURRENT_VERSION, LAST_LOAD
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

PLAN_TABLE = "classification_chunks"

PLAN_DDL = f"""
CREATE TABLE IF NOT EXISTS {PLAN_TABLE} (
    run_id VARCHAR NOT NULL,
    dataset_version VARCHAR NOT NULL,
    k INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    lo VARCHAR,                       -- first case id of the chunk (NULL: open end)
    hi VARCHAR,                       -- first case id after it (NULL: open end)
    population BIGINT NOT NULL,       -- the run's mean nDCG@k: cases and sum (read once, with the plan)
    total DOUBLE NOT NULL,
    score_threshold DOUBLE,
    planned_at TIMESTAMP NOT NULL,
    done_at TIMESTAMP,                -- NULL until the chunk's rows are written
    lost DOUBLE[],                    -- the chunk's loss per cost category (cost.COST_CATEGORIES order)
    cases BIGINT[]
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

# A stored row (alias ``c``) of the run at $k for the current dataset version.
_CURRENT = f"c.run_id = $run_id AND c.k = $k AND c.dataset_version = {CURRENT_VERSION}"
# ... written after every load of a run or a dataset (``LAST_LOAD``: another run's rows are evidence)
# ... with the run's current threshold
_SAME_THRESHOLD = f"c.score_threshold IS NOT DISTINCT FROM {RUN_THRESHOLD}"
FRESH_PLAN = f"{_CURRENT} AND c.planned_at >= {LAST_LOAD} AND {_SAME_THRESHOLD}"


def _exist(cur: duckdb.DuckDBPyConnection, *tables: str) -> bool:
    rows = cur.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND list_contains($t, table_name)",
        {"t": list(tables)},
    ).fetchall()
    return bool(rows[0][0] == len(tables))


def judging_k(con: duckdb.DuckDBPyConnection, run_id: str, k: int | None = None) -> int:
    """The cutoff a run is judged at: ``k`` when the user names one, else the run's own k (run.json)."""
    default = run_k(con, run_id)  # also checks that the run exists
    if k is None:
        return default
    if int(k) < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


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
                f"INSERT INTO {TABLE} SELECT {', '.join(COLUMNS)}, {RUN_THRESHOLD}, now()::TIMESTAMP FROM ({rows_sql})",
                {**params, "run_id": self._run_id},
            )

    def costs(self, costs: pa.Table) -> None:
        self._cur.register("_cls_costs", costs)
        try:
            with storing(self._run_id):
                self._cur.execute(
                    f"INSERT INTO {COST_TABLE} SELECT $run_id, {CURRENT_VERSION}, $k, {', '.join(COST_COLUMNS)}, "
                    "now()::TIMESTAMP FROM _cls_costs",
                    {"run_id": self._run_id, "k": self._k},
                )
        finally:
            self._cur.unregister("_cls_costs")


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
        cur.execute(f"DELETE FROM {table} c WHERE {_CURRENT}", {"run_id": run_id, "k": k})


def ensure_tables(cur: duckdb.DuckDBPyConnection) -> None:
    """Create both tables (inside the caller's transaction); a pair of an older layout, or one alone, is rebuilt."""
    if not _exist(cur, TABLE, COST_TABLE):
        cur.execute(f"DROP TABLE IF EXISTS {TABLE}; DROP TABLE IF EXISTS {COST_TABLE}")
    cur.execute(DDL)


def is_fresh(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> bool:
    """Whether fresh rows of ``run_id`` at ``k`` are stored (the cost rows are written with them)."""
    if not _exist(cur, TABLE, COST_TABLE):
        return False
    ((costs, stale),) = cur.execute(
        f"""SELECT (SELECT count(*) FROM {COST_TABLE} c WHERE {_CURRENT} AND c.classified_at >= {LAST_LOAD}),
                   (SELECT count(*) FROM {TABLE} c WHERE {_CURRENT}
                    AND NOT (c.classified_at >= {LAST_LOAD} AND {_SAME_THRESHOLD}))""",
        {"run_id": run_id, "k": k},
    ).fetchall()
    return bool(costs) and stale == 0


def current_rows(table: str = TABLE) -> str:
    """SQL: the stored rows of ``table`` of the run at $k for the current dataset version (fresh or not)."""
    return f"(SELECT * FROM {table} c WHERE {_CURRENT})"


def failure_rows(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> pa.Table:
    """The stored failure rows (call only when :func:`is_fresh`)."""
    sql = f"SELECT {', '.join(COLUMNS)} FROM {current_rows()}"
    return cur.sql(sql, params={"run_id": run_id, "k": k}).to_arrow_table()


def cost_rows(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> pa.Table:
    """The stored cost rows (call only when :func:`is_fresh`)."""
    sql = f"SELECT {', '.join(COST_COLUMNS)} FROM {current_rows(COST_TABLE)}"
    return cur.sql(sql, params={"run_id": run_id, "k": k}).to_arrow_table()


def leak_counts(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> tuple[int, int] | None:
    """(distinct leaked result rows, leaking cases) of the run, any stage, from its fresh stored rows at ``k``
    (leakage does not depend on k: any fresh classification holds it), or None when none is stored or its
    leakage rows predate the ``n_leaked_results`` fact: the caller computes them then."""
    if not is_fresh(cur, run_id, k):
        return None
    row = cur.execute(
        f"""SELECT count(*), sum(CAST(evidence->>'$.facts.n_leaked_results' AS BIGINT)),
                   count(*) FILTER (WHERE evidence->>'$.facts.n_leaked_results' IS NULL)
            FROM {current_rows()} WHERE failure = 'leakage'""",
        {"run_id": run_id, "k": k},
    ).fetchall()[0]
    cases, results, missing = int(row[0]), int(row[1] or 0), int(row[2])
    return None if missing else (results, cases)


@dataclass(frozen=True)
class Progress:
    """How far a run's stored classification at ``k`` is: ``done`` of ``chunks`` chunks (``chunks`` 0: not
    started), ``complete`` when its rows and costs are stored and fresh."""

    run_id: str
    k: int
    done: int
    chunks: int
    complete: bool

    def sentence(self) -> str:
        if self.complete:
            return f"run {self.run_id}: classified"
        if not self.chunks:
            return f"run {self.run_id}: not classified yet"
        if self.done == self.chunks:
            return f"run {self.run_id}: all {self.chunks} chunks of cases done, storing the costs"
        return f"run {self.run_id}: classifying, {self.done} of {self.chunks} chunks of cases done (partial)"


def plan(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> list[tuple[int, str | None, str | None, bool]]:
    """The fresh plan's chunks (chunk, lo, hi, done) in order, or [] when there is none."""
    if not _exist(cur, PLAN_TABLE):
        return []
    rows = cur.execute(
        f"SELECT chunk, lo, hi, done_at IS NOT NULL FROM {PLAN_TABLE} c WHERE {FRESH_PLAN} ORDER BY chunk",
        {"run_id": run_id, "k": k},
    ).fetchall()
    return [(int(c), lo, hi, bool(d)) for c, lo, hi, d in rows]


def progress(con: duckdb.DuckDBPyConnection, run_id: str, *, k: int | None = None) -> Progress:
    """How far ``run_id``'s stored classification at :func:`judging_k` is (a read: works on a read-only store)."""
    cutoff = judging_k(con, run_id, k)
    cur = con.cursor()
    try:
        chunks = plan(cur, run_id, cutoff)
        if is_fresh(cur, run_id, cutoff):
            return Progress(run_id, cutoff, len(chunks) or 1, len(chunks) or 1, True)
        return Progress(run_id, cutoff, sum(1 for *_, done in chunks if done), len(chunks), False)
    finally:
        cur.close()


def done_chunk_of(con: duckdb.DuckDBPyConnection, run_id: str, k: int, case_id: str) -> bool:
    """Whether the chunk holding ``case_id`` is stored by the fresh plan (its rows can be read as they are)."""
    cur = con.cursor()
    try:
        for _, lo, hi, done in plan(cur, run_id, k):
            if (lo is None or case_id >= lo) and (hi is None or case_id < hi):
                return done
        return False
    finally:
        cur.close()
