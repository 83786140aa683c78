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

import duckdb
import pyarrow as pa

from ragtriage.checks.negatives import RUN_THRESHOLD
from ragtriage.classify import stored
from ragtriage.classify.classify_run import decided_sql, with_checks
from ragtriage.classify.cost import COST_CATEGORIES, CostTally
from ragtriage.classify.facts import chunk_bounds, chunk_facts, kept_tables
from ragtriage.classify.stored import FRESH_PLAN, PLAN_DDL, PLAN_TABLE, Progress, done_chunk_of, judging_k, progress
from ragtriage.store import run_ids, run_k
from ragtriage.store.connection import CURRENT_VERSION
from ragtriage.store.memory_cap import capped
from ragtriage.store.transactions import transaction

__all__ = ["PLAN_TABLE", "Progress", "classify_chunks", "done_chunk_of", "pending", "progress", "refresh"]


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
                f"INSERT INTO {PLAN_TABLE} SELECT $run_id, {CURRENT_VERSION}, $k, chunk, $chunks, lo, hi, $population, "
                f"$total, {RUN_THRESHOLD}, now()::TIMESTAMP, NULL, NULL, "
                "NULL FROM _cls_plan",
                {**params, "chunks": len(bounds), "population": population, "total": total},
            )
        finally:
            cur.unregister("_cls_plan")


def _resume_tally(cur: duckdb.DuckDBPyConnection, run_id: str, k: int, tally: CostTally) -> None:
    """Give ``tally`` the plan's mean and the losses of its chunks already done."""
    rows = cur.execute(
        f"SELECT population, total, lost, cases FROM {PLAN_TABLE} c WHERE {FRESH_PLAN}",
        {"run_id": run_id, "k": k},
    ).fetchall()
    mean = (int(rows[0][0]), float(rows[0][1]))
    tally.resume(mean, {})
    for *_, lost, cases in rows:
        if lost is not None:
            tally.resume(mean, {c: (float(v), int(n)) for c, v, n in zip(COST_CATEGORIES, lost, cases, strict=True)})


def _store_chunk(
    cur: duckdb.DuckDBPyConnection, run_id: str, k: int, chunk: int, facts: pa.Table, tally: CostTally
) -> None:
    """The chunk's rows and its share of the costs, and the chunk marked done: one transaction."""
    with stored.storing(run_id), transaction(cur):
        cur.register("_cls_facts", facts)
        try:
            stored.Writer(cur, run_id, k).rows(decided_sql(), {"k": k})
        finally:
            cur.unregister("_cls_facts")
        loss = tally.add(facts)
        cur.execute(
            f"UPDATE {PLAN_TABLE} c SET done_at = now()::TIMESTAMP, lost = $lost, cases = $cases "
            f"WHERE {FRESH_PLAN} AND chunk = $chunk",
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
            if not stored.plan(cur, rid, kk):
                _new_plan(cur, rid, kk, tally, rows_per_chunk)
            else:
                _resume_tally(cur, rid, kk, tally)
            plan = stored.plan(cur, rid, kk)
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

    ((_, result),) = with_checks(con, run_id, [cutoff], at)
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
