"""The core builds the store: ``ragtriage.load_store`` / ``ragtriage.load_inputs`` + ``finish`` (the Python API)
leave the same store as ``ragtriage load``: the tables, every run's stored classification and its costs, and the
overview summaries and per-case tables the TUI, compare and the gate read from the cache; what a load does not
precompute is stated in its result."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragtriage
from ragtriage.classify import pending
from ragtriage.cli import app
from ragtriage.loading import finish
from ragtriage.metrics import summary_cache
from ragtriage.sample import sample_runs_path
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, RunSource

RUNS = ("bm25", "hybrid-rerank")
pytestmark = pytest.mark.slow  # the sample loaded through the CLI, commands run on it
# everything a load writes, without the moment it was written
TABLES = {
    "classifications": "SELECT * EXCLUDE (classified_at) FROM classifications ORDER BY ALL",
    "classification_costs": "SELECT * EXCLUDE (classified_at) FROM classification_costs ORDER BY ALL",
    "results": "SELECT * FROM results ORDER BY ALL",
    "qrels": "SELECT * FROM qrels ORDER BY ALL",
}


def _request() -> LoadRequest:
    root = sample_runs_path()
    return LoadRequest(dataset=root / "dataset", runs=[RunSource(root / "runs" / r) for r in RUNS])


def _state(db: Path) -> dict[str, object]:
    con = connect(db, read_only=True)
    try:
        state: dict[str, object] = {name: con.execute(sql).fetchall() for name, sql in TABLES.items()}
        # DuckDB sums a run's costs in parallel, so their last bits follow the order threads finish in
        state["classification_costs"] = [
            tuple(round(v, 12) if isinstance(v, float) else v for v in row)
            for row in state["classification_costs"]  # type: ignore[attr-defined]
        ]
        for rid in RUNS:
            per_case = summary_cache.per_case_columns(con, rid, (3, 5, 10))
            assert per_case is not None, rid  # the overview, compare and gate read them, not compute them
            assert summary_cache.load(con, rid) is None  # the bootstrap is the overview's, once it has shown the means
            state[f"per-case {rid}"] = per_case.to_pylist()
    finally:
        con.close()
    return state


def test_the_python_api_leaves_the_store_ragtriage_load_leaves(tmp_path: Path) -> None:
    cli_db, api_db, con_db = tmp_path / "cli.duckdb", tmp_path / "api.duckdb", tmp_path / "con.duckdb"
    root = sample_runs_path()
    args = ["load", "--db", str(cli_db), "--wait-classified", "--dataset", str(root / "dataset")]
    res = CliRunner().invoke(app, args + [a for r in RUNS for a in ("--run", str(root / "runs" / r))])
    assert res.exit_code == 0, res.output

    result = ragtriage.load_store(api_db, _request(), wait_classified=True)
    assert result.classified == list(RUNS) and sorted(result.cached) == sorted(RUNS) and not result.skipped

    con = connect(con_db)
    result = finish(con, ragtriage.load_inputs(con, _request(), wait_classified=True))
    assert result.classified == list(RUNS) and sorted(result.cached) == sorted(RUNS)

    expected = _state(cli_db)
    assert len(expected["classifications"]) > 50 and expected["classification_costs"]  # type: ignore[arg-type]
    assert _state(api_db) == expected
    assert _state(con_db) == expected


def test_a_load_states_what_it_did_not_precompute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = ragtriage.load_store(tmp_path / "bare.duckdb", _request(), precompute=False)
    assert result.classified == [] and result.cached == []
    assert result.skipped == ["classification and overview summaries: skipped (precompute off)"]
    con = connect(tmp_path / "bare.duckdb", read_only=True)
    try:
        stored = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'classifications'").fetchall()[0]
        assert stored == (0,)
    finally:
        con.close()

    memory = connect(":memory:")
    result = finish(memory, ragtriage.load_inputs(memory, _request(), wait_classified=True))
    assert result.classified == list(RUNS)
    assert result.skipped == ["overview summaries: skipped (an in-memory store has no cache)"]

    monkeypatch.setenv(summary_cache.CACHE_ENV, "off")
    result = ragtriage.load_store(tmp_path / "nocache.duckdb", _request(), wait_classified=True)
    assert result.skipped == [f"overview summaries: skipped ({summary_cache.CACHE_ENV} is off)"]


def test_a_load_leaves_the_classification_for_later_and_says_so(tmp_path: Path) -> None:
    """The default load stores the rows and the overview summaries; the classification is deferred (the TUI's
    background, `ragtriage classify`, or the first command reading it), and `classify` stores what
    --wait-classified would have."""
    db = tmp_path / "x.duckdb"
    result = ragtriage.load_store(db, _request())
    assert result.classified == [] and sorted(result.cached) == sorted(RUNS)
    assert len(result.skipped) == 1 and result.skipped[0].startswith("classification: left to")
    con = connect(db, read_only=True)
    try:
        assert pending(con) == list(RUNS)
    finally:
        con.close()
    # a command that reads classifications stores them first (every run), then reads whole runs
    res = CliRunner().invoke(app, ["failures", "--db", str(db), "--run", "bm25", "--summary", "--format", "json"])
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    try:
        assert pending(con) == []
    finally:
        con.close()
    res = CliRunner().invoke(app, ["classify", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert "nothing to do (every run is classified)" in res.stderr
    waited = tmp_path / "waited.duckdb"
    ragtriage.load_store(waited, _request(), wait_classified=True)
    for name in ("classifications", "classification_costs"):
        assert _state(db)[name] == _state(waited)[name], name
    both = ["--wait-classified", "--no-precompute", "--dataset", str(sample_runs_path() / "dataset")]
    res = CliRunner().invoke(app, ["load", "--db", str(tmp_path / "y.duckdb"), *both])
    assert res.exit_code == 2 and "pass one of them" in res.stderr
