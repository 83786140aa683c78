"""The stored classification written a chunk of cases at a time, resumable, readable while it is written.

A load stores the rows and returns; the classification follows (the TUI's background worker, ``ragtriage
classify``, ``load --wait-classified``, or any command that reads classifications). A *plan* fixes the case-id
ranges of the run's chunks once (``classification_chunks``, one row per chunk); each chunk's failure rows and its
share of the category costs are written and the chunk marked done in one transaction, so a stop (a crash, a
quit, a ``stop()`` that says so) leaves whole chunks only, and the next caller, in this process or another,
classifies only the chunks not done. The category costs (``classification_costs``) are written once the last
chunk is, and the stored classification is *fresh* (``stored.is_fresh``) only then: until that moment a reader
either classifies what it needs itself or reads the chunks done so far *as partial* (:func:`progress`), never
as the whole run.

A plan is for the current dataset version, the run's threshold and k, and is made after every load; any later
load makes it stale, and the next caller starts a new one (the chunks of a stale plan are dropped with the rows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ragtriage.classify import stored
from ragtriage.classify.classify_run import _decided_sql, _with_checks, judging_k
from ragtriage.classify.cost import COST_CATEGORIES, CostTally
from ragtriage.classify.facts import chunk_bounds, chunk_facts, kept_tables
from ragtriage.store import run_ids, run_k
from ragtriage.store.memory_cap import capped
from ragtriage.store.transactions import transaction

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

# A plan made for the current dataset version after every load, with the run's current threshold.
_FRESH_PLAN = f"""p.run_id = $run_id AND p.k = $k AND p.dataset_version = {stored.VERSION}
    AND p.planned_at >= greatest((SELECT max(loaded_at) FROM runs), (SELECT max(loaded_at) FROM datasets))
    AND p.score_threshold IS NOT DISTINCT FROM (SELECT score_threshold FROM runs WHERE run_id = $run_id)"""


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


def _has_plan(cur: duckdb.DuckDBPyConnection) -> bool:
    rows = cur.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?", [PLAN_TABLE]
    ).fetchall()
    return bool(rows[0][0])


def _plan(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> list[tuple[int, str | None, str | None, bool]]:
    """The fresh plan's chunks (chunk, lo, hi, done) in order, or [] when there is none."""
    if not _has_plan(cur):
        return []
    rows = cur.execute(
        f"SELECT chunk, lo, hi, done_at IS NOT NULL FROM {PLAN_TABLE} p WHERE {_FRESH_PLAN} ORDER BY chunk",
        {"run_id": run_id, "k": k},
    ).fetchall()
    return [(int(c), lo, hi, bool(d)) for c, lo, hi, d in rows]


def progress(con: duckdb.DuckDBPyConnection, run_id: str, *, k: int | None = None) -> Progress:
    """How far ``run_id``'s stored classification at :func:`judging_k` is (a read: works on a read-only store)."""
    cutoff = judging_k(con, run_id, k)
    cur = con.cursor()
    try:
        if stored.is_fresh(cur, run_id, cutoff):
            plan = _plan(cur, run_id, cutoff)
            return Progress(run_id, cutoff, len(plan) or 1, len(plan) or 1, True)
        plan = _plan(cur, run_id, cutoff)
        return Progress(run_id, cutoff, sum(1 for *_, done in plan if done), len(plan), False)
    finally:
        cur.close()


def done_chunk_of(con: duckdb.DuckDBPyConnection, run_id: str, k: int, case_id: str) -> bool:
    """Whether the chunk holding ``case_id`` is stored by the fresh plan (its rows can be read as they are)."""
    cur = con.cursor()
    try:
        for _, lo, hi, done in _plan(cur, run_id, k):
            if (lo is None or case_id >= lo) and (hi is None or case_id < hi):
                return done
        return False
    finally:
        cur.close()


def _new_plan(cur: duckdb.DuckDBPyConnection, run_id: str, k: int, tally: CostTally, rows: int | None) -> None:
    """Drop the run's stored rows, costs and plans at ``k`` and write a new plan (one transaction)."""
    population, total = tally.mean()
    bounds = chunk_bounds(cur, rows)
    plan = pa.table(
        {
            "chunk": pa.array(range(len(bounds)), pa.int32()),
            "lo": pa.array([lo for lo, _ in bounds], pa.string()),
            "hi": pa.array([hi for _, hi in bounds], pa.string()),
        }
    )
    params = {"run_id": run_id, "k": k}
    with stored.storing(run_id), transaction(cur):
        stored.ensure_tables(cur)
        cur.execute(PLAN_DDL)
        stored.delete_stored(cur, run_id, k)
        cur.execute(f"DELETE FROM {PLAN_TABLE} WHERE run_id = $run_id AND k = $k", params)
        cur.register("_cls_plan", plan)
        try:
            cur.execute(
                f"INSERT INTO {PLAN_TABLE} SELECT $run_id, {stored.VERSION}, $k, chunk, $chunks, lo, hi, $population, "
                "$total, (SELECT score_threshold FROM runs WHERE run_id = $run_id), now()::TIMESTAMP, NULL, NULL, "
                "NULL FROM _cls_plan",
                {**params, "chunks": len(bounds), "population": population, "total": total},
            )
        finally:
            cur.unregister("_cls_plan")


def _resume_tally(cur: duckdb.DuckDBPyConnection, run_id: str, k: int, tally: CostTally) -> None:
    """Give ``tally`` the plan's mean and the losses of its chunks already done."""
    rows = cur.execute(
        f"SELECT population, total, lost, cases FROM {PLAN_TABLE} p WHERE {_FRESH_PLAN}",
        {"run_id": run_id, "k": k},
    ).fetchall()
    mean = (int(rows[0][0]), float(rows[0][1]))
    lost: dict[str, tuple[float, int]] = {}
    for _, _, values, cases in rows:
        for i, category in enumerate(COST_CATEGORIES if values is not None else ()):
            before = lost.get(category, (0.0, 0))
            lost[category] = (before[0] + float(values[i]), before[1] + int(cases[i]))
    tally.resume(mean, lost)


def _store_chunk(
    cur: duckdb.DuckDBPyConnection, run_id: str, k: int, chunk: int, facts: pa.Table, tally: CostTally
) -> None:
    """The chunk's rows and its share of the costs, and the chunk marked done: one transaction."""
    with stored.storing(run_id), transaction(cur):
        cur.register("_cls_facts", facts)
        try:
            stored.Writer(cur, run_id, k).rows(_decided_sql(), {"k": k})
        finally:
            cur.unregister("_cls_facts")
        loss = tally.add(facts)
        cur.execute(
            f"UPDATE {PLAN_TABLE} p SET done_at = now()::TIMESTAMP, lost = $lost, cases = $cases "
            f"WHERE {_FRESH_PLAN} AND chunk = $chunk",
            {
                "run_id": run_id,
                "k": k,
                "chunk": chunk,
                "lost": [loss.get(c, (0.0, 0))[0] for c in COST_CATEGORIES],
                "cases": [loss.get(c, (0.0, 0))[1] for c in COST_CATEGORIES],
            },
        )


def _finish(cur: duckdb.DuckDBPyConnection, run_id: str, k: int, tally: CostTally) -> None:
    with transaction(cur):
        stored.delete_stored(cur, run_id, k, (stored.COST_TABLE,))
        stored.Writer(cur, run_id, k).costs(tally.report().to_table())


def classify_chunks(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    *,
    k: int | None = None,
    rows_per_chunk: int | None = None,
    stop: Callable[[], bool] | None = None,
    on_chunk: Callable[[Progress], None] | None = None,
) -> Progress:
    """Classify and store ``run_id`` at :func:`judging_k`, a chunk of cases at a time, continuing a fresh plan
    where it stopped (chunks done are never classified again). ``stop()`` is asked before each chunk: when it
    says so, the chunks done so far stay stored and the partial :class:`Progress` is returned; ``on_chunk`` is
    told after each chunk. ``rows_per_chunk`` sizes the chunks of a new plan (default ``facts.CHUNK_ROWS``).
    ``con`` must be writable (``StoreError`` otherwise)."""
    cutoff = judging_k(con, run_id, k)
    probe = con.cursor()
    try:
        if stored.is_fresh(probe, run_id, cutoff):
            return progress(con, run_id, k=cutoff)
    finally:
        probe.close()

    def at(cur: duckdb.DuckDBPyConnection, rid: str, kk: int) -> Progress:
        tally = CostTally(cur, rid, kk)
        with kept_tables(cur, rid, kk):
            if not _plan(cur, rid, kk):
                _new_plan(cur, rid, kk, tally, rows_per_chunk)
            else:
                _resume_tally(cur, rid, kk, tally)
            plan = _plan(cur, rid, kk)
            done = sum(1 for *_, d in plan if d)
            for chunk, lo, hi, was_done in plan:
                if was_done:
                    continue
                if stop is not None and stop():
                    return Progress(rid, kk, done, len(plan), False)
                _store_chunk(cur, rid, kk, chunk, chunk_facts(cur, rid, kk, lo, hi), tally)
                done += 1
                if on_chunk is not None:
                    on_chunk(Progress(rid, kk, done, len(plan), False))
        with stored.storing(rid):
            _finish(cur, rid, kk, tally)
        return Progress(rid, kk, len(plan), len(plan), True)

    ((_, result),) = _with_checks(con, run_id, [cutoff], at)
    return result


def pending(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The runs whose stored classification at their own k is missing, partial or stale."""
    cur = con.cursor()
    try:
        return [rid for rid in run_ids(cur) if not stored.is_fresh(cur, rid, run_k(cur, rid))]
    finally:
        cur.close()


def refresh(
    con: duckdb.DuckDBPyConnection,
    *,
    stop: Callable[[], bool] | None = None,
    on_chunk: Callable[[Progress], None] | None = None,
) -> list[str]:
    """Classify and store every run whose stored classification at its own k is missing, partial or stale
    (continuing any plan under way); returns the ids of the runs it completed. ``ragtriage load
    --wait-classified``, ``ragtriage classify`` and ``import-labels`` call it, so readers find fresh rows."""
    done = []
    # chunked (facts.fact_chunks), the classification fits the load's memory cap at little cost in time
    with capped(con):
        for rid in pending(con):
            if classify_chunks(con, rid, stop=stop, on_chunk=on_chunk).complete:
                done.append(rid)
    return done
