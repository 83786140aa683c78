"""The classification stored a chunk at a time after the load (classify.chunked): stopped between chunks and
resumed (in the same process or another connection), it stores exactly the rows and costs of one classification
of the whole run, never classifies a chunk twice, and reads of a classification under way say it is partial."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ragtriage.classify import (
    chunked,
    classify_chunks,
    classify_run,
    facts,
    failure_list,
    failures,
    judging_k,
    pending,
    progress,
    refresh,
    run_classification,
    stored,
)
from ragtriage.sample import sample_runs_path
from ragtriage.store import connect, load_dataset, load_run

pytestmark = pytest.mark.slow  # the sample classified several times

RUN = "no-acl-filter"  # leaks, negatives, patterns: every kind of row
ROWS = "SELECT * EXCLUDE (classified_at) FROM classifications WHERE run_id = $r ORDER BY ALL"
COSTS = "SELECT * EXCLUDE (classified_at) FROM classification_costs WHERE run_id = $r ORDER BY category"


def _load(db: Path) -> None:
    con = connect(db)
    try:
        load_dataset(con, sample_runs_path() / "dataset")
        for run in ("bm25", RUN):
            load_run(con, sample_runs_path() / "runs" / run)
    finally:
        con.close()


def _stored(con: duckdb.DuckDBPyConnection) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    rows = con.execute(ROWS, {"r": RUN}).fetchall()
    costs = [
        tuple(round(v, 12) if isinstance(v, float) else v for v in row)
        for row in con.execute(COSTS, {"r": RUN}).fetchall()
    ]
    return rows, costs


@pytest.fixture()
def whole(tmp_path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The run classified in one piece, as `load --wait-classified` did before chunks were resumable."""
    db = tmp_path / "whole.duckdb"
    _load(db)
    con = connect(db)
    try:
        classify_run(con, RUN)
        return _stored(con)
    finally:
        con.close()


def test_stopped_between_chunks_and_resumed_in_another_process_stores_the_whole_run(
    tmp_path: Path, whole: tuple[list[tuple[object, ...]], list[tuple[object, ...]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "x.duckdb"
    _load(db)
    con = connect(db)
    asked = 0

    def stop_after_three() -> bool:
        nonlocal asked
        asked += 1
        return asked > 3

    first = classify_chunks(con, RUN, rows_per_chunk=40, stop=stop_after_three)
    assert (first.done, first.complete) == (3, False) and first.chunks >= 6, first
    assert progress(con, RUN) == first
    assert RUN in pending(con)
    # the chunks done are readable as partial, never as the run: a plain read classifies the whole run itself
    partial = failure_list(con, RUN, partial=True)
    complete = failure_list(con, RUN)
    assert 0 < partial.num_rows < complete.num_rows
    assert not stored.is_fresh(con.cursor(), RUN, judging_k(con, RUN))
    con.close()

    # a new connection (as a new process would) resumes: the three chunks done are not classified again
    con = connect(db)
    seen: list[tuple[str | None, str | None]] = []
    real = chunked.chunk_facts

    def counting(cur: duckdb.DuckDBPyConnection, run_id: str, k: int, lo: str | None, hi: str | None):  # type: ignore[no-untyped-def]
        seen.append((lo, hi))
        return real(cur, run_id, k, lo, hi)

    monkeypatch.setattr(chunked, "chunk_facts", counting)
    told: list[int] = []
    done = classify_chunks(con, RUN, on_chunk=lambda p: told.append(p.done))
    assert done.complete and done.done == done.chunks == first.chunks
    assert len(seen) == first.chunks - 3 and told == list(range(4, first.chunks + 1))
    plan = con.execute(f"SELECT lo FROM {chunked.PLAN_TABLE} WHERE run_id = $r ORDER BY chunk", {"r": RUN}).fetchall()
    assert [lo for lo, _ in seen] == [r[0] for r in plan[3:]]
    assert _stored(con) == whole
    assert run_classification(con, RUN).from_store
    assert classify_chunks(con, RUN).complete and len(seen) == first.chunks - 3  # fresh: nothing redone
    con.close()


def test_refresh_finishes_every_run_and_a_new_load_starts_a_new_plan(
    tmp_path: Path, whole: tuple[list[tuple[object, ...]], list[tuple[object, ...]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later load makes a plan stale: its chunks are dropped and the run classified again from the start."""
    db = tmp_path / "x.duckdb"
    _load(db)
    con = connect(db)
    monkeypatch.setattr(facts, "CHUNK_ROWS", 40)
    classify_chunks(con, RUN, stop=lambda: progress(con, RUN).done >= 2)
    assert progress(con, RUN).done == 2
    load_run(con, sample_runs_path() / "runs" / "dense")  # a later load: the plan and its chunks are stale
    assert progress(con, RUN).chunks == 0
    assert sorted(refresh(con)) == ["bm25", "dense", RUN]
    assert pending(con) == []
    # the rows of one classification of the run over the three runs now loaded (another run's rows are evidence)
    order = [("case_id", "ascending"), ("failure", "ascending"), ("rule", "ascending")]
    kept = stored.failure_rows(con.cursor(), RUN, judging_k(con, RUN)).sort_by(order)
    assert kept.num_rows == len(whole[0]) and kept.equals(classify_run(con, RUN, store=False).sort_by(order))
    con.close()


def test_a_case_before_its_chunk_is_classified_on_the_spot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "x.duckdb"
    _load(db)
    con = connect(db)
    expected = failures(con, RUN)
    cases = sorted(set(expected.column("case_id").to_pylist()))
    classify_chunks(con, RUN, rows_per_chunk=40, stop=lambda: progress(con, RUN).done >= 1)
    last = cases[-1]  # in the last chunk: not classified yet
    assert not chunked.done_chunk_of(con, RUN, judging_k(con, RUN), last)
    seen: list[tuple[str | None, str | None]] = []
    real = facts.chunk_facts

    def counting(cur: duckdb.DuckDBPyConnection, run_id: str, k: int, lo: str | None, hi: str | None):  # type: ignore[no-untyped-def]
        seen.append((lo, hi))
        return real(cur, run_id, k, lo, hi)

    monkeypatch.setattr(facts, "chunk_facts", counting)
    one = failures(con, RUN, case_ids=[last])
    assert seen == [(last, None)] or (len(seen) == 1 and seen[0][0] == last)
    assert one.equals(expected.filter(expected.column("case_id").to_numpy(zero_copy_only=False) == last))
    first = cases[0]  # in the chunk stored: read, not classified
    assert chunked.done_chunk_of(con, RUN, judging_k(con, RUN), first)
    got = failures(con, RUN, case_ids=[first])
    assert len(seen) == 1
    assert got.equals(expected.filter(expected.column("case_id").to_numpy(zero_copy_only=False) == first))
    con.close()
