"""The classifier a chunk of cases at a time (classify.facts.fact_chunks): the same rows and costs as one chunk,
stored a chunk per transaction, and nothing half written left behind on an error."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from ragtriage.classify import classify_run, facts, run_classification, stored
from ragtriage.classify.classify_run import store_classification, with_checks
from ragtriage.sample import sample_runs_path
from ragtriage.store import connect, load_dataset, load_run

pytestmark = pytest.mark.slow  # every test here takes seconds of its own: `pytest -m slow` and CI run them

RUNS = ("bm25", "dense", "hybrid-rerank", "no-acl-filter")


@pytest.fixture()
def sample(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """The bundled sample: every failure kind (leakage, negatives, stale-first, answerable), 170 cases."""
    con = connect(tmp_path / "sample.duckdb")
    load_dataset(con, sample_runs_path() / "dataset")
    for run in RUNS:
        load_run(con, sample_runs_path() / "runs" / run)
    return con


def _costs(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, tuple[float, int]]:
    c = run_classification(con, run_id).costs
    return {x.category: (x.cost, x.cases) for x in c.costs} | {"mean": (c.mean or 0.0, c.population)}


def _chunks(con: duckdb.DuckDBPyConnection, run_id: str) -> list[pa.Table]:
    """The facts' chunks at k = 10, read on a cursor holding the checks layer's tables as classify_run does."""
    return with_checks(con, run_id, [10], lambda c, r, k: list(facts.fact_chunks(c, r, k)))[0][1]


def test_many_chunks_give_the_rows_and_costs_of_one(
    sample: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = {r: classify_run(sample, r, store=False) for r in RUNS}
    costs = {r: _costs(sample, r) for r in RUNS}
    assert [len(_chunks(sample, r)) for r in RUNS] == [1, 1, 1, 1]
    monkeypatch.setattr(facts, "CHUNK_ROWS", 40)
    chunked = {r: _chunks(sample, r) for r in RUNS}
    assert all(len(c) >= 5 for c in chunked.values()), {r: len(c) for r, c in chunked.items()}
    # every case in one chunk, the chunks in case order
    for parts in chunked.values():
        ids = [t.column("case_id").to_pylist() for t in parts]
        flat = [c for part in ids for c in sorted(set(part))]
        assert len(flat) == len(set(flat)) and flat == sorted(flat)
    for r in RUNS:
        assert classify_run(sample, r, store=False).equals(whole[r]), r
        got = _costs(sample, r)
        assert got.keys() == costs[r].keys()
        for name, (value, n) in costs[r].items():
            assert got[name][1] == n and got[name][0] == pytest.approx(value, abs=1e-12), (r, name)


def test_stored_a_chunk_at_a_time(sample: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = classify_run(sample, "no-acl-filter", store=False)
    monkeypatch.setattr(facts, "CHUNK_ROWS", 40)
    store_classification(sample, "no-acl-filter")
    got = run_classification(sample, "no-acl-filter")
    assert got.from_store
    assert got.rows.num_rows == expected.num_rows == 214
    cols = ["case_id", "failure", "category", "rule", "evidence"]
    assert (
        got.rows.select(cols)
        .sort_by([("case_id", "ascending"), ("failure", "ascending")])
        .equals(expected.select(cols).sort_by([("case_id", "ascending"), ("failure", "ascending")]))
    )


def test_an_error_midway_leaves_no_rows_and_nothing_fresh(
    sample: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_classification(sample, "bm25")
    cur = sample.cursor()
    assert stored.is_fresh(cur, "bm25", 10)
    monkeypatch.setattr(facts, "CHUNK_ROWS", 40)
    real = facts.fact_chunks

    def failing(c: duckdb.DuckDBPyConnection, run_id: str, k: int, bounds=None):  # type: ignore[no-untyped-def]
        for i, part in enumerate(real(c, run_id, k, bounds)):
            if i == 2:
                raise RuntimeError("disk full")
            yield part

    monkeypatch.setattr(sys.modules["ragtriage.classify.classify_run"], "fact_chunks", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        store_classification(sample, "bm25")
    assert not stored.is_fresh(cur, "bm25", 10)
    left = cur.execute(f"SELECT count(*) FROM {stored.TABLE} WHERE run_id = 'bm25'").fetchall()[0][0]
    assert left == 0
    temp = cur.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '\\_cls\\_%' ESCAPE '\\'")
    assert temp.fetchall()[0][0] == 0
    monkeypatch.undo()
    assert run_classification(sample, "bm25").rows.num_rows == 96  # classified again on the fly
    cur.close()


def test_a_summary_computed_a_chunk_at_a_time_is_the_stored_one(
    sample: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store loaded with --no-precompute: failures --summary counts each chunk's rows in SQL and adds the chunks
    up (never holding every row); the figures are those of the stored classification, patterns included."""
    from ragtriage.classify import failure_summary

    monkeypatch.setattr(facts, "CHUNK_ROWS", 40)
    runs = ("hybrid-rerank", "no-acl-filter")  # leaks, negatives and patterns between them
    computed = {r: failure_summary(sample, r) for r in runs}
    monkeypatch.undo()  # stored in one chunk: the test above holds that many chunks store the same rows
    for r in runs:
        store_classification(sample, r)
        kept = failure_summary(sample, r)
        got = computed[r]
        assert kept.from_store and not got.from_store
        assert got.by_pattern, r  # the sample's runs match patterns: a sum over chunks is tested on them
        assert (got.failures, got.cases, got.by_category, got.by_failure, got.by_pattern) == (
            kept.failures,
            kept.cases,
            kept.by_category,
            kept.by_failure,
            kept.by_pattern,
        ), r
        assert list(got.by_category.items()) == list(kept.by_category.items())  # same order: largest first
        for a, b in zip(got.costs.costs, kept.costs.costs, strict=True):
            assert (a.category, a.cases) == (b.category, b.cases) and a.cost == pytest.approx(b.cost, abs=1e-12)
    rows = classify_run(sample, "no-acl-filter", store=False)
    assert computed["no-acl-filter"].failures == rows.num_rows == 214
    assert computed["no-acl-filter"].cases == len(set(rows.column("case_id").to_pylist()))


def test_run_costs_reads_no_failure_rows_when_stored(
    sample: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtriage.classify.classify_run import run_costs

    computed = run_costs(sample, "bm25")  # nothing stored yet: classified on the fly
    store_classification(sample, "bm25")
    expected = run_classification(sample, "bm25").costs

    def no_rows(*_: object) -> None:
        raise AssertionError("the failure rows were fetched for the costs")

    monkeypatch.setattr(stored, "failure_rows", no_rows)
    got = run_costs(sample, "bm25")
    assert got == expected
    assert [(c.category, c.cases) for c in got.costs] == [(c.category, c.cases) for c in computed.costs]
    assert sum(c.cases for c in got.costs) > 0
