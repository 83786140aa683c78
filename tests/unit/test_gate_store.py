"""A small store for the gate tests, and compare over it: pairing by dataset version, slices, mismatch error.

Per-case metric figures are fixed by hand (``PER_CASE``) and fed through ``gate.sources.per_case``, so these tests
check the gate's arithmetic on known inputs; agreement of the metrics themselves is the metrics module's tests'
job. Leakage, negative outcomes, events and run metadata come from the real store and checks.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from ragtriage.gate import sources
from ragtriage.gate.compare import compare
from ragtriage.store import StoreError, load_dataset, load_run
from tests.factory import make_store, write_dataset, write_run

EMMA = {"id": "emma", "groups": ["staff"], "tenant": "t"}
DATASET = {"name": "g", "version": "1", "unit": "chunk", "relevance_threshold": 2, "corpus_snapshot": "kb@1"}


def _doc(doc_id: str, doc_type: str, acl: list[str] | None = None) -> dict[str, object]:
    return {
        "document_id": doc_id,
        "chunk_id": f"{doc_id}#1",
        "doc_type": doc_type,
        "acl": acl or ["staff"],
        "tenant": "t",
        "text": f"text of {doc_id}",
    }


DOCS = [
    _doc("P1", "policy"),
    _doc("P2", "policy"),
    _doc("P3", "policy"),
    _doc("P4", "policy"),
    _doc("T1", "table"),
    _doc("T2", "table"),
    _doc("T3", "table"),
    _doc("S1", "policy", ["hr"]),
]


def _case(cid: str, split: str, qtype: str, critical: bool = False, **extra: object) -> dict[str, object]:
    return {
        "id": cid,
        "query": f"query {cid}",
        "split": split,
        "query_type": qtype,
        "critical": critical,
        "principal": EMMA,
        **extra,
    }


CASES = [
    _case("h1", "holdout", "direct", critical=True),
    _case("h2", "holdout", "direct", critical=True),
    _case("h3", "holdout", "lookup"),
    _case("h4", "holdout", "lookup"),
    _case("d1", "dev", "direct"),
    _case("n1", "holdout", "negative", answerable=False, expected_behavior="empty"),
    _case("n2", "holdout", "negative", answerable=False, expected_behavior="empty"),
]
RELEVANT = {"h1": "P1", "h2": "P2", "h3": "T1", "h4": "T2", "d1": "P3"}
LABELS = [{"case_id": c, "document_id": d, "chunk_id": f"{d}#1", "grade": 3} for c, d in RELEVANT.items()]


def _res(case: str, doc: str, stage: str = "final") -> dict[str, object]:
    return {"case_id": case, "document_id": doc, "chunk_id": f"{doc}#1", "stage": stage, "score": 1.0}


GOOD_META = {"k": 10, "dataset_version": "1", "corpus_version": "kb@1", "system": {"retriever": "bm25"}}
BASE_RESULTS = [_res(c, d) for c, d in RELEVANT.items()]
CAND_RESULTS = [
    _res("h1", "P1"),
    _res("h2", "P4"),
    _res("h3", "T1"),
    _res("h4", "T3"),
    _res("h4", "T2"),
    _res("d1", "P3"),
    _res("n2", "P4"),
]
LATENCIES = {"h1": 10.0, "h2": 20.0, "h3": 30.0, "h4": 40.0, "d1": 50.0, "n1": 60.0, "n2": 1000.0}
CAND_EVENTS = [{"case_id": c, "latency_ms": ms, "timed_out": c == "h4", "status": "ok"} for c, ms in LATENCIES.items()]
BASE_EVENTS = [{"case_id": c, "latency_ms": 5.0, "timed_out": False, "status": "ok"} for c in LATENCIES]
RUNS = [
    {"run": {"run_id": "base", **GOOD_META}, "results": BASE_RESULTS, "events": BASE_EVENTS},
    {"run": {"run_id": "cand", **GOOD_META}, "results": CAND_RESULTS, "events": CAND_EVENTS},
    {"run": {"run_id": "leaky", "k": 10}, "results": CAND_RESULTS + [_res("h1", "S1", "candidate")]},
]


def _table(values: dict[str, tuple[float, float, float]]) -> pa.Table:
    """case → (R@10, nDCG@5, Success@10) over the cases the engine evaluates: the negative cases have no label, so
    they are in no figure (``EvalContext.population_sql``) and compare pairs only what it is given."""
    ids = [c["id"] for c in CASES if c["id"] in RELEVANT]
    rel = [1 if c in values else 0 for c in ids]
    row = [values.get(c, (0.0, 0.0, 0.0)) for c in ids]
    return pa.table(
        {
            "case_id": ids,
            "n_relevant": rel,
            "n_retrieved": [1] * len(ids),
            "R@10": [r[0] for r in row],
            "nDCG@5": [r[1] for r in row],
            "Success@10": [r[2] for r in row],
        }
    )


PER_CASE = {
    "base": _table({c: (1.0, 1.0, 1.0) for c in RELEVANT}),
    "cand": _table(
        {
            "h1": (1.0, 1.0, 1.0),
            "h2": (0.0, 0.0, 0.0),
            "h3": (1.0, 0.8, 1.0),
            "h4": (1.0, 0.3, 1.0),
            "d1": (1.0, 1.0, 1.0),
        }
    ),
}
PER_CASE["leaky"] = PER_CASE["cand"]
CATEGORIES = {"cand": {"h2": "ranking", "h4": "ingestion", "n2": "dataset"}, "leaky": {"h1": "security"}}


@pytest.fixture(name="gate_store")
def gate_store_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> duckdb.DuckDBPyConnection:
    """The store above, with per-case figures and defect categories fixed by hand."""
    monkeypatch.setattr(sources, "per_case", lambda con, run_id, ks: PER_CASE[run_id])
    monkeypatch.setattr(
        sources,
        "defect_categories",
        lambda con, run_id, k=None: pa.table(
            {"case_id": list(CATEGORIES.get(run_id, {})), "category": list(CATEGORIES.get(run_id, {}).values())},
            schema=pa.schema([("case_id", pa.string()), ("category", pa.string())]),
        ),
    )
    con = make_store(tmp_path, dataset=DATASET, cases=CASES, labels=LABELS, documents=DOCS, runs=RUNS)
    # Gate files written by the tests must predate the runs' loads unless a test says otherwise.
    return con


def backdate(path: Path, seconds: float = 3600.0) -> Path:
    """Set a file's mtime well before the runs were loaded (the tests write gate files after loading)."""
    t = path.stat().st_mtime - seconds
    os.utime(path, (t, t))
    return path


@pytest.mark.slow
def test_compare_pairs_cases_and_slices_by_evidence_doc_type(gate_store: duckdb.DuckDBPyConnection) -> None:
    res = compare(gate_store, "cand", "base", metrics=["nDCG@5"], by="doc_type", split="holdout", n_resamples=1000)
    rows = {r["slice"]: r for r in res.summary.to_pylist()}
    assert set(rows) == {"all", "policy", "table"}
    assert rows["all"]["n"] == 4
    assert rows["all"]["mean_diff"] == pytest.approx((0 - 1 - 0.2 - 0.7) / 4)
    assert (rows["table"]["n"], rows["table"]["losses"]) == (2, 2)
    assert rows["table"]["mean_diff"] == pytest.approx(-0.45)
    assert (rows["policy"]["wins"], rows["policy"]["ties"], rows["policy"]["losses"]) == (0, 1, 1)
    assert [w["case_id"] for w in res.worst.to_pylist()] == ["h2", "h4", "h3"]
    assert res.unpaired == {"candidate_only": 0, "baseline_only": 0}


def test_compare_all_splits_includes_dev(gate_store: duckdb.DuckDBPyConnection) -> None:
    res = compare(gate_store, "cand", "base", metrics=["R@10"], n_resamples=1000)
    assert res.row("R@10")["n"] == 5
    assert res.row("R@10")["mean_diff"] == pytest.approx(-0.2)


def test_compare_rejects_runs_on_different_dataset_versions(
    gate_store: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    relabelled = LABELS + [{"case_id": "h2", "document_id": "P4", "chunk_id": "P4#1", "grade": 2}]
    load_dataset(
        gate_store, write_dataset(tmp_path / "v2", dataset=DATASET, cases=CASES, labels=relabelled, documents=DOCS)
    )
    ranked = [{**r, "rank": 1} for r in BASE_RESULTS]
    load_run(gate_store, write_run(tmp_path / "late", {"run_id": "late", **GOOD_META}, ranked, None))
    with pytest.raises(StoreError, match="dataset version"):
        compare(gate_store, "late", "base", metrics=["R@10"])


def test_compare_unknown_slice_column(gate_store: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(StoreError, match="cannot slice by 'colour'"):
        compare(gate_store, "cand", "base", metrics=["R@10"], by="colour")
