"""`compare --explain` on a hand-built document-unit store: each case's cause and evidence derived by hand, the
CLI's json/csv/table carrying them, hostile unit ids shown literally, and cases that did not drop left alone.

Dataset unit ``document`` (chunks of one document are one unit, the first occurrence counts), threshold 2, k 2.
Baseline ``base`` is one-stage; candidate ``cand`` has a candidate stage and a final stage:

- qa: d1 (grade 3) is in the baseline's top 2 and in neither of the candidate's stages: candidate-miss.
- qb: the candidate puts HOSTILE (no label, never returned by the baseline) above d1; d1's two chunks count once
  (position 2): unjudged-displacement on RR, nDCG and AP (P, R, Success at 2 unchanged).
- qc: d2 and d1 at one score, d1 second: tie-order.
- qd: d1 first in the candidate stage, second in the final stage after d2 (grade 1, returned by the baseline):
  rerank-inversion.
- qf: d2 (grade 1) leaves the top 2 for d3; no relevant unit moved: nDCG drops alone, cause other.
- qe: the same list in both runs: no drop, no cause.

A third run, ``solo``, is one-stage: qa without d1 is a candidate-miss of its only list; qd's d1 below d2 (labelled,
returned by the baseline) has no reranker to blame: other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.experiments.explain import explain
from ragtriage.gate.compare import compare
from ragtriage.store import connect
from tests.factory import make_store

HOSTILE = '\x1b[2J[bold]=HYPERLINK("x")[/]\u202e'
DOCS = ["d1", "d2", "d3", HOSTILE]
runner = CliRunner()


def _row(case: str, doc: str, chunk: int, score: float, stage: str = "final") -> dict[str, Any]:
    return {"case_id": case, "document_id": doc, "chunk_id": f"{doc}#{chunk}", "score": score, "stage": stage}


def _lists(case: str, docs: list[str], stage: str = "final", scores: list[float] | None = None) -> list[dict[str, Any]]:
    scores = scores or [1.0 - i / 10 for i in range(len(docs))]
    return [_row(case, d, 1, s, stage) for d, s in zip(docs, scores, strict=True)]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    cases = [{"id": c, "query": f"query {c}"} for c in ("qa", "qb", "qc", "qd", "qe", "qf")]
    labels = [{"case_id": c, "document_id": "d1", "chunk_id": "d1#1", "grade": 3} for c in ("qa", "qb", "qc", "qd")]
    labels += [
        {"case_id": "qb", "document_id": "d2", "chunk_id": "d2#1", "grade": 0},
        {"case_id": "qd", "document_id": "d2", "chunk_id": "d2#1", "grade": 1},
        {"case_id": "qe", "document_id": "d1", "chunk_id": "d1#1", "grade": 2},
        {"case_id": "qf", "document_id": "d1", "chunk_id": "d1#1", "grade": 3},
        {"case_id": "qf", "document_id": "d2", "chunk_id": "d2#1", "grade": 1},
    ]
    documents = [{"document_id": d, "chunk_id": f"{d}#{i}"} for d in DOCS for i in (1, 2)]
    base = [
        *_lists("qa", ["d1", "d2"]),
        *_lists("qb", ["d1", "d2"]),
        *_lists("qc", ["d1", "d2"]),
        *_lists("qd", ["d1", "d2"]),
        *_lists("qe", ["d1", "d2"]),
        *_lists("qf", ["d1", "d2", "d3"]),
    ]
    qb = [_row("qb", HOSTILE, 1, 0.9), _row("qb", "d1", 2, 0.8), _row("qb", "d1", 1, 0.7), _row("qb", "d2", 1, 0.6)]
    final = [
        *_lists("qa", ["d2", "d3"]),
        *qb,
        *_lists("qc", ["d2", "d1"], scores=[0.5, 0.5]),
        *_lists("qd", ["d2", "d1"]),
        *_lists("qe", ["d1", "d2"]),
        *_lists("qf", ["d1", "d3", "d2"]),
    ]
    stage = [{**r, "stage": "candidate"} for r in final if r["case_id"] not in ("qd",)]
    stage += _lists("qd", ["d1", "d2"], "candidate")
    con = make_store(
        tmp_path,
        dataset={"name": "t", "version": "1", "unit": "document", "relevance_threshold": 2},
        cases=cases,
        labels=labels,
        documents=documents,
        runs=[
            {"run": {"run_id": "base", "k": 2}, "results": base},
            {"run": {"run_id": "cand", "k": 2, "candidate_k": 4}, "results": stage + final},
            {"run": {"run_id": "solo", "k": 2}, "results": [*_lists("qa", ["d2", "d3"]), *_lists("qd", ["d2", "d1"])]},
        ],
        allow_control_ids=True,
    )
    con.close()
    return tmp_path / "store.duckdb"


def _explained(db: Path) -> dict[tuple[str, str], dict[str, Any]]:
    con = connect(db, read_only=True)
    try:
        result = explain(con, compare(con, "cand", "base", (2,)))
    finally:
        con.close()
    return {(r["case_id"], r["measure"]): r for r in result.explained.to_pylist()}


def test_each_case_gets_its_cause_and_the_facts(db: Path) -> None:
    rows = _explained(db)
    causes = {key: r["cause"] for key, r in rows.items()}
    measures = ("P@2", "R@2", "RR@2", "nDCG@2", "AP@2", "Success@2")
    assert {m: causes[("qa", m)] for m in measures} == dict.fromkeys(measures, "candidate-miss")
    assert {m: causes.get(("qb", m)) for m in measures} == {
        "P@2": None,
        "R@2": None,
        "Success@2": None,
        "RR@2": "unjudged-displacement",
        "nDCG@2": "unjudged-displacement",
        "AP@2": "unjudged-displacement",
    }
    assert {causes[("qc", m)] for m in ("RR@2", "nDCG@2", "AP@2")} == {"tie-order"}
    assert {causes[("qd", m)] for m in ("RR@2", "nDCG@2", "AP@2")} == {"rerank-inversion"}
    assert [m for (c, m) in causes if c == "qf"] == ["nDCG@2"] and causes[("qf", "nDCG@2")] == "other"
    assert not [key for key in causes if key[0] == "qe"]
    # RR 1 -> 1/2 for qb, qc, qd
    assert rows[("qb", "RR@2")]["delta"] == pytest.approx(-0.5)

    miss = json.loads(rows[("qa", "R@2")]["evidence"])
    assert miss["retrieval_list"] == "candidate stage"
    assert miss["units"] == [
        {
            "unit": "d1",
            "baseline_pos": 1,
            "candidate_pos": None,
            "candidate_stage_pos": None,
            "missing_from_retrieval": True,
            "overtaken_by": 0,
            "overtakers_tied": 0,
            "overtakers_unjudged_new": 0,
        }
    ]
    unjudged = json.loads(rows[("qb", "RR@2")]["evidence"])
    (unit,) = unjudged["units"]
    assert (unit["unit"], unit["baseline_pos"], unit["candidate_pos"]) == ("d1", 1, 2)  # two chunks, one unit
    assert (unit["overtaken_by"], unit["overtakers_unjudged_new"]) == (1, 1)
    assert unjudged["advice"].startswith("pool and judge")
    assert unjudged["unjudged_units"] == [HOSTILE]  # the unit to judge, as stored
    tie = json.loads(rows[("qc", "RR@2")]["evidence"])
    assert (tie["units"][0]["overtaken_by"], tie["units"][0]["overtakers_tied"]) == (1, 1)
    rerank = json.loads(rows[("qd", "RR@2")]["evidence"])
    assert (rerank["units"][0]["candidate_stage_pos"], rerank["units"][0]["candidate_pos"]) == (1, 2)
    other = json.loads(rows[("qf", "nDCG@2")]["evidence"])
    assert other["demoted_relevant"] == 0 and other["units"] is None
    assert rows[("qf", "nDCG@2")]["why"] == "no relevant unit of the baseline's top 2 is ranked lower"


def test_one_stage_run_and_slices(db: Path) -> None:
    con = connect(db, read_only=True)
    try:
        solo = explain(con, compare(con, "solo", "base", (2,), metrics=["RR@2"]))
        plain = explain(con, compare(con, "cand", "base", (2,)))
        sliced = explain(con, compare(con, "cand", "base", (2,), by="query_type"))
    finally:
        con.close()
    rows = {r["case_id"]: r for r in solo.explained.to_pylist()}
    # solo lists nothing for qb, qc, qe, qf: absent from the run, they score 0, and their d1 is missing
    assert {c: r["cause"] for c, r in rows.items()} == {
        "qa": "candidate-miss",
        "qb": "candidate-miss",
        "qc": "candidate-miss",
        "qd": "other",
        "qe": "candidate-miss",
        "qf": "candidate-miss",
    }
    assert json.loads(rows["qa"]["evidence"])["retrieval_list"] == "final list (one-stage run)"
    assert json.loads(rows["qd"]["evidence"])["units"][0]["overtaken_by"] == 1
    assert sliced.explained.equals(plain.explained)  # one cause per (case, measure), whatever the slices


def test_cli_json_and_csv_carry_the_causes(db: Path) -> None:
    args = ["compare", "--db", str(db), "--run", "cand", "--baseline", "base", "--k", "2", "--explain"]
    res = runner.invoke(app, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output
    doc = json.loads(res.output)
    explained = {(r["case_id"], r["measure"]): r for r in doc["explained"]}
    assert set(explained) == set(_explained(db))
    assert explained[("qb", "RR@2")]["evidence"]["units"][0]["overtakers_unjudged_new"] == 1
    assert {r["cause"] for r in doc["causes"] if r["measure"] == "RR@2" and r["cases"]} == {
        "candidate-miss",
        "unjudged-displacement",
        "tie-order",
        "rerank-inversion",
    }
    assert sum(r["cases"] for r in doc["causes"] if r["measure"] == "nDCG@2") == 5  # qa qb qc qd qf
    csv_out = runner.invoke(app, [*args, "--format", "csv"])
    assert csv_out.exit_code == 0
    lines = csv_out.output.splitlines()
    assert lines[0].endswith('"case_id","measure","delta","cause","why","evidence"')
    assert len(lines) == 1 + len(explained)
    plain = runner.invoke(app, args[:-1] + ["--format", "json"])
    assert "explained" not in json.loads(plain.output)  # no --explain, no causes


def test_cli_table_shows_hostile_ids_literally(db: Path) -> None:
    args = ["compare", "--db", str(db), "--run", "cand", "--baseline", "base", "--k", "2", "--explain"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and "\u202e" not in res.output
    assert "unjudged-displacement" in res.output and "candidate-miss" in res.output
    assert "␛[2J[bold]=HYPERLINK" in res.output  # the unit to judge, shown, never interpreted
    many = runner.invoke(
        app,
        [
            "compare",
            "--db",
            str(db),
            "--runs",
            "cand",
            "--baseline",
            "base",
            "--explain",
            "--measure",
            "RR@2",
            "--format",
            "json",
        ],
    )
    assert many.exit_code == 0, many.output
    doc = json.loads(many.output)
    assert {(r["run_id"], r["case_id"], r["cause"]) for r in doc["explained"]} == {
        ("cand", "qa", "candidate-miss"),
        ("cand", "qb", "unjudged-displacement"),
        ("cand", "qc", "tie-order"),
        ("cand", "qd", "rerank-inversion"),
    }


def test_report_lists_each_drop_with_its_cause(db: Path, tmp_path: Path) -> None:
    from tests.unit.test_experiments_report import _parsed

    out = tmp_path / "r.html"
    args = ["report", "--db", str(db), "--runs", "cand", "--baseline", "base", "--measure", "RR@2", "--html", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    text, parser = _parsed(out)
    assert "\x1b" not in text and "␛[2J" in text  # the unlabelled unit's id, shown literally
    counts = next(t for t in parser.tables if t[0][:3] == ["run", "measure", "labels"])
    assert counts[1] == ["cand", "RR@2", "0", "1", "1", "1", "1", "0"]  # ties, miss, unjudged, rerank
    listed = next(t for t in parser.tables if t[0] == ["run", "case", "measure", "Δ", "cause", "why"])
    assert {(r[1], r[4]) for r in listed[1:]} == {
        ("qa", "candidate-miss"),
        ("qb", "unjudged-displacement"),
        ("qc", "tie-order"),
        ("qd", "rerank-inversion"),
    }
