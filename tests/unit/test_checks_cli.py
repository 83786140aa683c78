"""`ragtriage check` and `calibrate` as CI sees them: exit codes, the three formats, and the sample runs."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ragtriage.checks import check_run
from ragtriage.cli import app
from ragtriage.store import connect, load_dataset, load_run
from tests.factory import make_store

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_runs"

EMMA = {"id": "emma", "groups": ["all-staff"], "tenant": "halvorsen"}
DOCS = [
    {"document_id": "OPEN", "chunk_id": "OPEN#1", "acl": ["all-staff"], "tenant": "halvorsen"},
    {"document_id": "HR", "chunk_id": "HR#1", "acl": ["hr"], "tenant": "halvorsen"},
]
CASES = [
    {"id": "q1", "query": "q", "principal": EMMA},
    {"id": "q2", "query": "q", "principal": EMMA},
    {"id": "n1", "query": "q", "answerable": False, "expected_behavior": "below_threshold", "principal": EMMA},
]


def res(case: str, doc_id: str, score: float, rank: int = 1, stage: str = "final") -> dict:
    return {
        "case_id": case,
        "stage": stage,
        "rank": rank,
        "document_id": doc_id,
        "chunk_id": f"{doc_id}#1",
        "score": score,
    }


RUNS = [
    {
        "run": {"run_id": "clean", "k": 5},
        "results": [res("q1", "OPEN", 3.0), res("q2", "OPEN", 2.0), res("n1", "OPEN", 1.0)],
    },
    {"run": {"run_id": "leaky", "k": 5}, "results": [res("q1", "OPEN", 3.0), res("q1", "HR", 2.0, 1, "candidate")]},
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cli")
    make_store(
        tmp,
        cases=CASES,
        documents=DOCS,
        runs=RUNS,
        labels=[{"case_id": q, "document_id": "OPEN", "chunk_id": "OPEN#1", "grade": 3} for q in ("q1", "q2")],
    ).close()
    return tmp / "store.duckdb"


@pytest.mark.slow
def test_check_exit_codes(db: Path) -> None:
    clean = runner.invoke(app, ["check", "--db", str(db), "--run", "clean"])
    assert clean.exit_code == 0 and "verdict PASSED (3 case(s) checked)" in clean.output
    leaky = runner.invoke(app, ["check", "--db", str(db), "--run", "leaky"])
    assert leaky.exit_code == 1
    assert "FAILED: leakage" in leaky.output and "acl-no-overlap" in leaky.output
    # the uncalibrated below_threshold case fails only under --strict
    assert runner.invoke(app, ["check", "--db", str(db), "--run", "clean", "--strict"]).exit_code == 1
    bad = runner.invoke(app, ["check", "--db", str(db), "--run", "nope"])
    assert bad.exit_code == 2 and "unknown run 'nope'" in bad.output
    missing = runner.invoke(app, ["check", "--db", str(db.parent / "none.duckdb"), "--run", "clean"])
    assert missing.exit_code == 2 and not (db.parent / "none.duckdb").exists()


@pytest.mark.slow
def test_check_json_and_csv(db: Path) -> None:
    out = runner.invoke(app, ["check", "--db", str(db), "--run", "leaky", "--format", "json"])
    doc = json.loads(out.output)
    counts = {r["check"]: r["count"] for r in doc["counts"]}
    assert doc["context"]["passed"] is False and counts["candidate_only_leaked_cases"] == 1
    leaks = [(r["case_id"], r["stage"], r["document_id"]) for r in doc["rows"] if r["check"] == "leakage"]
    assert leaks == [("q1", "candidate", "HR")]
    out = runner.invoke(app, ["check", "--db", str(db), "--run", "leaky", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(out.output)))
    assert [(r["check"], r["rule"], r["chunk_id"]) for r in rows if r["check"] == "leakage"] == [
        ("leakage", "acl-no-overlap", "HR#1")
    ]


@pytest.mark.slow
def test_calibrate_dry_run_then_store(db: Path) -> None:
    dry = runner.invoke(app, ["calibrate", "--db", str(db), "--run", "clean", "--target-recall", "0.5", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "<- chosen" in dry.output and "dry run: nothing stored" in dry.output
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT score_threshold FROM runs WHERE run_id = 'clean'").fetchall() == [(None,)]
    con.close()
    # answerable tops 3.0 and 2.0; keeping half of them allows the highest threshold, 3.0
    done = runner.invoke(app, ["calibrate", "--db", str(db), "--run", "clean", "--target-recall", "0.5"])
    assert done.exit_code == 0 and "stored score_threshold 3 for run clean" in done.output
    assert runner.invoke(app, ["check", "--db", str(db), "--run", "clean", "--strict"]).exit_code == 0
    both = runner.invoke(
        app, ["calibrate", "--db", str(db), "--run", "clean", "--threshold", "1", "--target-recall", "0.9"]
    )
    assert both.exit_code == 2


@pytest.mark.slow
@pytest.mark.skipif(not (SAMPLE / "runs" / "no-acl-filter").exists(), reason="sample_runs/ not generated yet")
def test_sample_runs_only_the_no_acl_filter_run_leaks(tmp_path: Path) -> None:
    con = connect(tmp_path / "sample.duckdb")
    load_dataset(con, SAMPLE / "dataset")
    runs = sorted(p for p in (SAMPLE / "runs").iterdir() if p.is_dir())
    for run in runs:
        load_run(con, run)
    leaked = {r.name: check_run(con, r.name).leakage.num_rows for r in runs}
    assert leaked.pop("no-acl-filter") > 0
    assert leaked and all(n == 0 for n in leaked.values()), leaked


@pytest.mark.slow
def test_table_shows_the_first_rows_of_each_check_and_csv_all(tmp_path: Path) -> None:
    """Five leaking rows and one unknown unit: --limit 2 prints two leaks, the unverifiable row, and says how many
    rows were left out; the counts and the csv still have all five."""
    leaks = [res("q1", "HR", 1.0, rank) for rank in range(1, 6)]
    make_store(
        tmp_path,
        cases=CASES,
        documents=DOCS,
        runs=[{"run": {"run_id": "many", "k": 5}, "results": [*leaks, res("q2", "GONE", 1.0)]}],
        labels=[{"case_id": "q1", "document_id": "OPEN", "chunk_id": "OPEN#1", "grade": 3}],
    ).close()
    db = str(tmp_path / "store.duckdb")
    out = runner.invoke(app, ["check", "--db", db, "--run", "many", "--limit", "2"])
    assert out.exit_code == 1
    table = out.output.split("counts")[0]
    assert table.count("acl-no-overlap") == 2 and "unit-not-in-manifest" in table
    assert "… 3 more rows (the first 2 of each check shown)" in out.output
    assert re.search(r"│ leak_findings +│ +5 │", out.output)  # figures are right-aligned
    every = runner.invoke(app, ["check", "--db", db, "--run", "many", "--limit", "0"])
    assert every.output.split("counts")[0].count("acl-no-overlap") == 5 and "more rows" not in every.output
    rows = list(
        csv.DictReader(
            io.StringIO(runner.invoke(app, ["check", "--db", db, "--run", "many", "--format", "csv"]).output)
        )
    )
    assert [r["rank"] for r in rows if r["check"] == "leakage"] == ["1", "2", "3", "4", "5"]
