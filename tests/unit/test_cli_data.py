"""`ragtriage load`, `info` and `validate` as a CI pipeline sees them: exit codes and printed text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.factory import write_dataset, write_run

runner = CliRunner()

CASES = [{"id": "q1", "query": "reset password"}, {"id": "q2", "query": "vpn"}]
LABELS = [{"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 3}]
DOCS = [{"document_id": "d1", "chunk_id": "d1#1", "acl": ["all"]}]


@pytest.mark.slow
def test_load_info_validate_round_trip(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", cases=CASES, labels=LABELS, documents=DOCS)
    run = write_run(
        tmp_path / "run",
        {"run_id": "bm25", "k": 10, "candidate_k": 50},
        [
            {"case_id": "q1", "rank": 1, "document_id": "d1", "chunk_id": "d1#1", "score": 2.0},
            {"case_id": "q1", "rank": 1, "stage": "candidate", "document_id": "d1", "chunk_id": "d1#1", "score": 2.0},
        ],
        [{"case_id": "q1", "latency_ms": 12.5, "status": "ok"}],
    )
    db = tmp_path / "t.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(ds), "--run", str(run)])
    assert res.exit_code == 0, res.output
    assert "2 cases, 1 labels, 1 documents" in res.output
    assert "run bm25 loaded: 2 results rows, 1 events rows" in res.output
    res = runner.invoke(app, ["info", "--db", str(db), "--json"])
    data = json.loads(res.output)
    assert data["counts"]["cases"] == 2 and data["counts"]["answerable"] == 2
    assert [(r["run_id"], r["final_rows"], r["candidate_rows"], r["events"]) for r in data["runs"]] == [
        ("bm25", 1, 1, 1)
    ]
    res = runner.invoke(app, ["validate", str(ds / "cases.jsonl")])
    assert res.exit_code == 0 and "valid" in res.output


def test_validate_and_load_exit_2_with_file_line_field(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", cases=CASES, labels=[{**LABELS[0], "grade": 4}], documents=DOCS)
    res = runner.invoke(app, ["validate", str(ds / "labels.jsonl")])
    assert res.exit_code == 2
    assert f"{ds}/labels.jsonl:1: grade: grade 4 is outside the scale 0..3" in res.output
    db = tmp_path / "t.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(ds)])
    assert res.exit_code == 2
    assert "nothing was loaded" in res.output


@pytest.mark.slow
def test_load_precomputes_the_per_case_metrics_for_the_tui(tmp_path: Path, summary_cache_dir: Path) -> None:
    from ragtriage.metrics import summarize, summary_cache
    from ragtriage.store import connect

    ds = write_dataset(tmp_path / "ds", cases=CASES, labels=LABELS, documents=DOCS)
    rows = [{"case_id": "q1", "rank": 1, "document_id": "d1", "chunk_id": "d1#1", "score": 2.0}]
    run = write_run(tmp_path / "run", {"run_id": "bm25", "k": 10}, rows, None)
    db = tmp_path / "t.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(ds), "--run", str(run), "--no-precompute"])
    assert res.exit_code == 0, res.output
    assert not summary_cache_dir.exists()
    res = runner.invoke(app, ["load", "--db", str(db), "--run", str(run), "--replace"])
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    assert summary_cache.load(con, "bm25") is None  # the bootstrap is left to the TUI's overview
    per_case = summary_cache.per_case_columns(con, "bm25", (3, 5, 10))
    assert per_case is not None
    cached = summarize(con, "bm25", per_case=per_case).to_arrow_table()  # what the overview computes from it
    assert cached.equals(summarize(con, "bm25").to_arrow_table())
    rows_by_name = {r["name"]: r for r in cached.to_pylist()}
    assert (rows_by_name["nDCG@10"]["mean"], rows_by_name["nDCG@10"]["n"]) == (1.0, 1)
    # q2 has no label at all: excluded from every measure, P@10 included (docs/metrics.md "Population")
    assert (rows_by_name["P@10"]["mean"], rows_by_name["P@10"]["n"]) == (0.1, 1)  # q1: 1 of 10
