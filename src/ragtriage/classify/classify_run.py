"""Classify one run's failures, store them, and read them back with the case context a person triages by.

Stored classifications (table ``classifications``) are the automatic verdicts only. A person's category, status
and note live in the notes store (``ragtriage.notes``), keyed by run and case, so re-classifying or re-loading a
run replaces these rows without touching anything a person wrote.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.checks import leakage, negative_outcomes, version_pairs
from ragtriage.classify.decide import decide_sql
from ragtriage.classify.facts import FACTS_SQL, LEAKS, NEGATIVES, STALE_FIRST, VERSION_PAIRS
from ragtriage.classify.locations import run_k
from ragtriage.classify.rules import FAILURES
from ragtriage.store import StoreError

TABLE = "classifications"

#: What :func:`failures` returns, column for column: the seam the CLI, the TUI and the notes export read.
#: ``evidence`` is JSON text; ``patterns`` and ``experiments`` are lists of names; ``k`` is the run's cutoff.
FAILURE_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("case_id", pa.string()),
        ("query", pa.string()),
        ("split", pa.string()),
        ("query_type", pa.string()),
        ("failure", pa.string()),
        ("category", pa.string()),
        ("rule", pa.string()),
        ("confidence", pa.float64()),
        ("evidence", pa.string()),
        ("patterns", pa.list_(pa.string())),
        ("experiments", pa.list_(pa.string())),
        ("dataset_version", pa.string()),
        ("k", pa.int32()),
    ]
)
FAILURE_ORDER = "[" + ", ".join(f"'{f}'" for f in FAILURES) + "]"

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


def _cutoffs(con: duckdb.DuckDBPyConnection, run_id: str, ks: int | Sequence[int] | None) -> list[int]:
    default = run_k(con, run_id)  # also checks that the run exists
    if ks is None:
        return [default]
    cutoffs = [int(ks)] if isinstance(ks, int) else sorted({int(k) for k in ks})
    if not cutoffs or min(cutoffs) < 1:
        raise ValueError(f"cutoffs must be positive integers, got {ks!r}")
    return cutoffs


def _classify_at(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> pa.Table:
    facts = cur.sql(FACTS_SQL, params={"run_id": run_id, "k": k}).to_arrow_table()
    cur.register("_cls_facts", facts)
    try:
        sql = decide_sql(
            "(SELECT f.*, $run_id AS run_id, r.dataset_version, CAST($k AS INTEGER) AS k "
            "FROM _cls_facts f, (SELECT value AS dataset_version FROM meta WHERE key = 'current_dataset') r)"
        )
        return cur.sql(sql, params={"run_id": run_id, "k": k}).to_arrow_table()
    finally:
        cur.unregister("_cls_facts")


def classify_run(
    con: duckdb.DuckDBPyConnection, run_id: str, *, ks: int | Sequence[int] | None = None, store: bool = True
) -> pa.Table:
    """One row per failure of ``run_id`` (at each cutoff of ``ks``; default the run's k), classified.

    Columns: run_id, case_id, failure, category, rule, confidence, evidence (JSON text), patterns,
    experiments, dataset_version, k. With ``store`` the run's stored rows are replaced in one transaction
    (``con`` must then be writable).
    """
    cutoffs = _cutoffs(con, run_id, ks)
    cur = con.cursor()
    # stale_first is version_pairs filtered on its flag (same statement, same order): compute the pairs once.
    pairs = version_pairs(cur, run_id)
    checks = {
        LEAKS: leakage(cur, run_id),
        NEGATIVES: negative_outcomes(cur, run_id),
        STALE_FIRST: pairs.filter(pc.field("stale_first")),
        VERSION_PAIRS: pairs,
    }
    try:
        for name, table in checks.items():
            cur.register(name, table)
        parts = [_classify_at(cur, run_id, k) for k in cutoffs]
    finally:
        for name in checks:
            cur.unregister(name)
        cur.close()
    result = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    if store:
        store_classifications(con, run_id, result)
    return result


def store_classifications(con: duckdb.DuckDBPyConnection, run_id: str, rows: pa.Table) -> None:
    """Replace ``run_id``'s stored classifications with ``rows`` in one transaction."""
    cur = con.cursor()
    try:
        cur.execute("BEGIN TRANSACTION")
        try:
            cur.execute(DDL)
            cur.execute(f"DELETE FROM {TABLE} WHERE run_id = ?", [run_id])
            cur.register("_cls_rows", rows)
            cur.execute(
                f"INSERT INTO {TABLE} SELECT {', '.join(COLUMNS)}, "
                "(SELECT score_threshold FROM runs WHERE run_id = ?), now()::TIMESTAMP FROM _cls_rows",
                [run_id],
            )
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise
    except duckdb.Error as exc:
        raise StoreError(
            f"cannot store classifications for run {run_id!r} ({exc}); open the store writable "
            "or classify with store=False"
        ) from exc
    finally:
        cur.close()


def _stored(cur: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table | None:
    """The run's stored rows, unless there are none or they are stale: classified before the run was (re)loaded
    or calibrated, or against another dataset version."""
    exists = cur.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND schema_name = 'main'", [TABLE]
    ).fetchall()
    if not exists[0][0]:
        return None
    (fresh,) = cur.execute(
        f"""SELECT count(*) FILTER (WHERE c.classified_at >= r.loaded_at
                                   AND c.dataset_version = (SELECT value FROM meta WHERE key = 'current_dataset')
                                   AND c.score_threshold IS NOT DISTINCT FROM r.score_threshold),
                   count(*)
            FROM {TABLE} c JOIN runs r USING (run_id) WHERE c.run_id = ?""",
        [run_id],
    ).fetchall()
    if fresh[1] == 0 or fresh[0] != fresh[1]:
        return None
    return cur.sql(
        f"SELECT {', '.join(COLUMNS)} FROM {TABLE} WHERE run_id = $run_id", params={"run_id": run_id}
    ).to_arrow_table()


def failures(
    con: duckdb.DuckDBPyConnection, run_id: str, *, category: str | None = None, pattern: str | None = None
) -> pa.Table:
    """The run's classified failures (stored ones when fresh, else computed without storing), with the case's
    query, split and query_type; filtered by ``category`` and ``pattern``; ordered by case, failure, k.
    Columns: :data:`FAILURE_SCHEMA`."""
    run_k(con, run_id)  # raises StoreError for an unknown run
    cur = con.cursor()
    try:
        rows = _stored(cur, run_id)
        if rows is None:
            rows = classify_run(cur, run_id, store=False)
        cur.register("_cls_failures", rows)
        sql = f"""
            SELECT f.run_id, f.case_id, c.query, c.split, c.query_type, f.failure, f.category, f.rule,
                   f.confidence, f.evidence, f.patterns, f.experiments, f.dataset_version, f.k
            FROM _cls_failures f LEFT JOIN cases c USING (case_id)
            WHERE ($category IS NULL OR f.category = $category)
              AND ($pattern IS NULL OR list_contains(f.patterns, $pattern))
            ORDER BY f.case_id, list_position({FAILURE_ORDER}, f.failure), f.k, f.rule
        """
        table = cur.sql(sql, params={"category": category, "pattern": pattern}).to_arrow_table()
        return table.cast(FAILURE_SCHEMA)
    finally:
        cur.close()
