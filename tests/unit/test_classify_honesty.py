"""Issue 17: rules never assume a missing input, permissions come first, and advice fits the run's configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ragtriage.classify import RULES, classify_run, unit_locations
from ragtriage.classify.classify_run import case_categories
from ragtriage.classify.rules import INPUTS, NOT_RETRIEVED
from tests.factory import make_store
from tests.unit.test_classify_locations import DOCUMENTS, case, label, results


def _run(run_id: str, rows: list[dict[str, Any]], k: int = 2, **fields: Any) -> dict[str, Any]:
    return {"run": {"run_id": run_id, "k": k, "created_at": "2024-06-01T10:00:00Z", **fields}, "results": rows}


def _rows(con: duckdb.DuckDBPyConnection, run_id: str = "r", **kw: Any) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for r in classify_run(con, run_id, store=False, **kw).to_pylist():
        r["evidence"] = json.loads(r["evidence"])
        out[(r["case_id"], r["failure"])] = r
    return out


def _manifest_store(tmp_path: Path, documents: list[dict[str, Any]] | None) -> duckdb.DuckDBPyConnection:
    # c1's F1#1 is returned by no run for any case; c2's F2#1 is returned by run r for c3 only (so it is indexed).
    cases = [case("c1"), case("c2"), case("c3")]
    labels = [label("c1", "F1#1", 3), label("c2", "F2#1", 3), label("c3", "F2#1", 3)]
    rows = results("c1", ["F5#1", "F6#1"]) + results("c2", ["F5#1", "F6#1"]) + results("c3", ["F2#1"])
    tmp_path.mkdir(parents=True, exist_ok=True)
    return make_store(tmp_path, cases=cases, labels=labels, documents=documents, runs=[_run("r", rows)])


@pytest.mark.slow
def test_without_a_manifest_nothing_is_absent_from_corpus(tmp_path: Path) -> None:
    con = _manifest_store(tmp_path, None)
    rows = _rows(con)
    assert {key: r["rule"] for key, r in rows.items()} == {
        ("c1", "no-relevant-in-top-k"): "undetermined.not-retrieved-by-any-run",
        # another case retrieves it, but without a corpus nothing says it is indexed: never "indexed" unknown
        ("c2", "no-relevant-in-top-k"): "undetermined.not-retrieved-by-any-run",
    }
    undetermined = rows[("c1", "no-relevant-in-top-k")]
    assert undetermined["category"] == "undetermined" and undetermined["confidence"] == 0.4
    assert undetermined["evidence"]["facts"]["assumptions"] == [f"F1#1: {NOT_RETRIEVED}"]
    located = {r["case_id"]: r for r in unit_locations(con, "r").to_pylist()}
    assert located["c1"]["location"] == "absent-from-runs" and located["c1"]["in_corpus"] is None
    assert all(u["indexed"] is None for r in rows.values() for u in r["evidence"]["facts"]["missing"])


@pytest.mark.slow
def test_with_a_manifest_the_ingestion_rules_decide(tmp_path: Path) -> None:
    with_f1 = _manifest_store(tmp_path / "a", DOCUMENTS)
    assert _rows(with_f1)[("c1", "no-relevant-in-top-k")]["rule"] == "ingestion.absent-from-runs"
    without_f1 = _manifest_store(tmp_path / "b", [d for d in DOCUMENTS if d["document_id"] != "F1"])
    row = _rows(without_f1)[("c1", "no-relevant-in-top-k")]
    assert row["rule"] == "ingestion.absent-from-corpus" and row["evidence"]["facts"]["assumptions"] == []


@pytest.mark.slow
def test_a_leaking_runs_retrieval_is_never_evidence(tmp_path: Path) -> None:
    # C#1 is for group hr only; the principal is staff. Run o (no acl filter) returns it for both cases.
    cases = [case("mixed"), case("only")]
    labels = [label("mixed", "C#1", 3), label("mixed", "F1#1", 3), label("only", "C#1", 3)]
    rows = results("mixed", ["F5#1", "F6#1", "F1#1"]) + results("only", ["F5#1", "F6#1"])
    other = results("mixed", ["C#1"]) + results("only", ["C#1"])
    con = make_store(
        tmp_path, cases=cases, labels=labels, documents=DOCUMENTS, runs=[_run("r", rows), _run("o", other)]
    )
    got = _rows(con)
    assert got[("mixed", "no-relevant-in-top-k")]["rule"] == "ranking.below-k"
    assert got[("only", "no-relevant-in-top-k")]["rule"] == "dataset.unpermitted-evidence"
    for r in got.values():
        assert "ranking.found-by-other-run" not in r["evidence"]["rules"]
        for unit in r["evidence"]["facts"]["missing"]:
            if unit["unit_id"] == "C#1":
                assert unit["location"] == "unpermitted" and unit["best_other_run"] is None


def _config_store(tmp_path: Path, **run: Any) -> duckdb.DuckDBPyConnection:
    rows = results("c", ["F5#1", "F6#1"]) + results("c", ["F1#1", "F5#1"], stage="candidate")
    tmp_path.mkdir(parents=True, exist_ok=True)
    con = make_store(
        tmp_path, cases=[case("c")], labels=[label("c", "F1#1", 3)], documents=DOCUMENTS, runs=[_run("r", rows, **run)]
    )
    return con


@pytest.mark.slow
def test_advice_reads_the_reranker_field(tmp_path: Path) -> None:
    none = _rows(_config_store(tmp_path / "a", reranker=None))[("c", "no-relevant-in-top-k")]
    assert none["rule"] == "ranking.candidate-not-promoted"
    assert none["experiments"][0].startswith("No reranker is declared")
    assert none["experiments"][0].endswith("(read run.json reranker: null)")
    assert not any("retrain" in e.lower() for e in none["experiments"])
    ce = _rows(_config_store(tmp_path / "b", reranker="ce-v1", candidate_k=50))[("c", "no-relevant-in-top-k")]
    assert ce["experiments"][0] == (
        "The reranker dropped it: retrain or re-weight the reranker; check its features for the unit. "
        "(read run.json reranker: ce-v1)"
    )


@pytest.mark.slow
def test_advice_reads_retrieval_and_candidate_depth(tmp_path: Path) -> None:
    # F1#1 is found by run o only; r is hybrid with a candidate depth no deeper than k
    rows = results("c", ["F5#1", "F6#1"])
    hybrid = {"embedding_model": "e5", "system": {"retriever": "bm25 + e5, RRF"}, "candidate_k": 2}
    con = make_store(
        tmp_path,
        cases=[case("c")],
        labels=[label("c", "F1#1", 3)],
        documents=DOCUMENTS,
        runs=[_run("r", rows, **hybrid), _run("o", results("c", ["F1#1"]))],
    )
    row = _rows(con)[("c", "no-relevant-in-top-k")]
    assert row["rule"] == "ranking.found-by-other-run"
    assert row["experiments"][0].endswith("(read run.json candidate_k: 2, k: 2)")
    assert "widen the candidate depth" in row["experiments"][0]


def test_every_rule_names_known_inputs_and_advice_fields() -> None:
    from ragtriage.classify.rules import CONFIG_FIELDS

    for rule in RULES:
        assert rule.needs and set(rule.needs) <= set(INPUTS), rule.name
        assert {a.field for a in rule.advice} <= set(CONFIG_FIELDS), rule.name


@pytest.mark.slow
def test_case_categories_cover_cases_the_classifier_passes(tmp_path: Path) -> None:
    # k=2: "order" has its only relevant unit at 2 (no failure, loses nDCG to order); "deep" has one at 3
    cases = [case("order"), case("deep")]
    labels = [label("order", "F1#1", 3), label("deep", "F2#1", 3)]
    rows = results("order", ["F5#1", "F1#1"]) + results("deep", ["F5#1", "F6#1", "F2#1"])
    con = make_store(tmp_path, cases=cases, labels=labels, documents=DOCUMENTS, runs=[_run("r", rows, k=2)])
    at2 = {r["case_id"]: (r["category"], r["basis"]) for r in case_categories(con, "r").to_pylist()}
    assert at2 == {"deep": ("ranking", "classified failure"), "order": ("ranking", "order within the top k")}
    at1 = {r["case_id"]: r["category"] for r in case_categories(con, "r", k=1).to_pylist()}
    assert at1 == {"deep": "ranking", "order": "ranking"}
