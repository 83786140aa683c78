"""``run_safety`` (every comparison's leakage verdict) reads the leakage the load stored with each run's
classification, and computes it only when nothing fresh is stored: no classification, a stale one, or one
written before it held the distinct leaked rows. Each path gives the same verdicts, checked against hand-counted
figures on a file store: a row breaking two rules is one leaked row, a candidate-stage leak counts, a case without
a principal is not checked."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ragtriage.classify import refresh
from ragtriage.experiments.safety import LEAKS, NO_LEAK, run_safety
from tests.factory import make_store

PRINCIPAL = {"id": "u1", "groups": ["eng"], "tenant": "acme"}
CASES = [
    {"id": "q1", "query": "reset password", "principal": PRINCIPAL},
    {"id": "q2", "query": "vpn setup", "principal": PRINCIPAL},
    {"id": "q3", "query": "salary bands"},  # no principal: leakage cannot be checked on it
]
DOCS = [
    {"document_id": "d1", "chunk_id": "d1#1", "text": "a", "tenant": "acme", "acl": ["eng"]},
    {"document_id": "d2", "chunk_id": "d2#1", "text": "b", "tenant": "acme", "acl": ["hr"]},  # no shared group
    {"document_id": "d3", "chunk_id": "d3#1", "text": "c", "tenant": "other", "acl": ["hr"]},  # and another tenant
]
# the module, not the function `ragtriage.checks` re-exports under the same name
leakage_module = importlib.import_module("ragtriage.checks.leakage")
LABELS = [{"case_id": c, "document_id": "d1", "chunk_id": "d1#1", "grade": 2} for c in ("q1", "q2", "q3")]


def _hit(case: str, chunk: str, stage: str = "final") -> dict[str, Any]:
    return {"case_id": case, "document_id": chunk.split("#")[0], "chunk_id": chunk, "stage": stage}


RUNS = [
    {
        "run": {"run_id": "leaky", "k": 3},
        # q1 leaks 3 distinct result rows (final ranks 2 and 3, candidate rank 1) in 4 rule findings; q3's hit
        # would leak but q3 has no principal
        "results": [
            _hit("q1", "d1#1"),
            _hit("q1", "d2#1"),
            _hit("q1", "d3#1"),
            _hit("q1", "d2#1", "candidate"),
            _hit("q2", "d1#1"),
            _hit("q3", "d3#1"),
        ],
    },  # fmt: skip
    {"run": {"run_id": "clean", "k": 3}, "results": [_hit("q1", "d1#1"), _hit("q2", "d1#1"), _hit("q3", "d1#1")]},
]
EXPECTED = {  # run: (status, leaked rows, leaked cases, cases checked, cases)
    "leaky": (LEAKS, 3, 1, 2, 3),
    "clean": (NO_LEAK, 0, 0, 2, 3),
}


@pytest.fixture
def con(tmp_path: Path) -> Any:
    c = make_store(tmp_path, cases=CASES, labels=LABELS, documents=DOCS, runs=RUNS)
    refresh(c)  # what `ragtriage load` stores with each run
    yield c
    c.close()


def _verdicts(con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], int]:
    """Each run's (status, leaked rows, leaked cases, checked, cases) and how many times the leakage query ran."""
    calls = []
    query = leakage_module.leakage

    def counted(c: duckdb.DuckDBPyConnection, run_id: str) -> Any:
        calls.append(run_id)
        return query(c, run_id)

    monkeypatch.setattr(leakage_module, "leakage", counted)
    out = {
        s.run_id: (s.status, s.leaked_rows, s.leaked_cases, s.coverage.checked, s.coverage.cases)
        for s in run_safety(con, ["leaky", "clean"])
    }
    monkeypatch.setattr(leakage_module, "leakage", query)
    return out, len(calls)


def test_stored_and_computed_leakage_give_the_same_verdicts(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored, ran = _verdicts(con, monkeypatch)
    assert stored == EXPECTED
    assert ran == 0  # read from the stored classification, the leakage query not run again

    # a classification written before it held the distinct leaked rows: computed for the run with leakage rows
    # (the clean run's stored classification has none, and says so whatever the version), the same verdicts
    con.execute(
        "UPDATE classifications SET evidence = json_object('facts', json_object('n_leaked_rows', 4)) "
        "WHERE failure = 'leakage'"
    )
    older, ran = _verdicts(con, monkeypatch)
    assert older == EXPECTED and ran == 1

    # nothing stored (a load with --no-precompute): computed, the same verdicts
    con.execute("DROP TABLE classification_costs; DROP TABLE classifications")
    computed, ran = _verdicts(con, monkeypatch)
    assert computed == EXPECTED and ran == 2


def test_a_stale_classification_is_not_read(con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch) -> None:
    """A classification older than the latest load of a run or a dataset is stale: the verdict is computed on
    what the store holds now."""
    con.execute("UPDATE classifications SET classified_at = classified_at - INTERVAL 1 DAY")
    con.execute("UPDATE classification_costs SET classified_at = classified_at - INTERVAL 1 DAY")
    verdicts, ran = _verdicts(con, monkeypatch)
    assert verdicts == EXPECTED and ran == 2
