"""A small store for the TUI tests: four cases (one with markup in its query), a leak, a zero-hit, two runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factory import make_store

DOCS = [
    {
        "document_id": "d1",
        "chunk_id": "d1#1",
        "title": "Passwords",
        "text": "Reset via [b]SSO[/b] portal",
        "doc_type": "policy",
        "tenant": "acme",
        "acl": ["eng"],
        "status": "current",
        "chunk_kind": "body",
    },
    {
        "document_id": "d1",
        "chunk_id": "d1#2",
        "title": "Passwords",
        "text": "Heading only",
        "doc_type": "policy",
        "tenant": "acme",
        "acl": ["eng"],
        "status": "current",
        "chunk_kind": "heading",
    },
    {
        "document_id": "d2",
        "chunk_id": "d2#1",
        "title": "Salary bands",
        "text": "HR only",
        "doc_type": "policy",
        "tenant": "acme",
        "acl": ["hr"],
        "status": "current",
        "chunk_kind": "table",
    },
    {
        "document_id": "d3",
        "chunk_id": "d3#1",
        "title": "VPN FAQ",
        "text": "Install the client",
        "doc_type": "faq",
        "tenant": "acme",
        "acl": ["eng"],
        "status": "current",
        "chunk_kind": "body",
    },
]
PRINCIPAL = {"id": "u1", "groups": ["eng"], "tenant": "acme"}
CASES = [
    {"id": "q1", "query": "reset password [red]now[/red]", "principal": PRINCIPAL, "query_type": "lookup"},
    {"id": "q2", "query": "vpn setup", "principal": PRINCIPAL, "query_type": "howto"},
    {"id": "q3", "query": "salary bands", "principal": PRINCIPAL, "query_type": "lookup"},
    {
        "id": "q4",
        "query": "=cmd|' /C calc'!A0",
        "principal": PRINCIPAL,
        "answerable": False,
        "expected_behavior": "empty",
        "query_type": "negative",
    },
]
LABELS = [
    {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 3},
    {"case_id": "q2", "document_id": "d3", "chunk_id": "d3#1", "grade": 2},
    {"case_id": "q3", "document_id": "d1", "chunk_id": "d1#2", "grade": 2},
]


def _results(q1_first: str) -> list[dict[str, object]]:
    return [
        {"case_id": "q1", "document_id": "d1", "chunk_id": q1_first, "score": 0.9},
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1" if q1_first == "d1#2" else "d1#2", "score": 0.5},
        {"case_id": "q2", "document_id": "d1", "chunk_id": "d1#2", "score": 0.4},
        {"case_id": "q3", "document_id": "d2", "chunk_id": "d2#1", "score": 0.8},
        {"case_id": "q3", "document_id": "d1", "chunk_id": "d1#2", "score": 0.3},
        {"case_id": "q4", "document_id": "d3", "chunk_id": "d3#1", "score": 0.2},
        {"case_id": "q2", "stage": "candidate", "document_id": "d3", "chunk_id": "d3#1", "score": 0.1},
    ]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    con = make_store(
        tmp_path,
        cases=CASES,
        labels=LABELS,
        documents=DOCS,
        runs=[
            {"run": {"run_id": "bm25", "k": 2, "candidate_k": 5}, "results": _results("d1#2")},
            {"run": {"run_id": "hybrid", "k": 2, "candidate_k": 5}, "results": _results("d1#1")},
        ],
        db="t.duckdb",
    )
    con.close()
    return tmp_path / "t.duckdb"


FAILURES = [
    {"case_id": "q1", "category": "ranking", "rule": "relevant-below-k", "pattern": "heading-only"},
    {"case_id": "q2", "category": "ingestion", "rule": "absent-from-final", "pattern": None},
    {"case_id": "q3", "category": "security", "rule": "acl-no-overlap", "pattern": None},
    {"case_id": "q3", "category": "dataset", "rule": "label-on-forbidden-unit", "pattern": None},
]
PER_CASE = [
    {"case_id": "q1", "nDCG@10": 0.63, "P@5": 0.2, "zero_hit@2": False},
    {"case_id": "q2", "nDCG@10": 0.0, "P@5": 0.0, "zero_hit@2": True},
    {"case_id": "q3", "nDCG@10": 0.39, "P@5": 0.2, "zero_hit@2": False},
]


SUMMARY = [
    {"metric": "nDCG", "k": 10, "mean": 0.34, "median": 0.39, "p10": 0.0, "zero_hit": 0.333, "n": 3},
    {"metric": "P", "k": 5, "mean": 0.133, "median": 0.2, "p10": 0.0, "zero_hit": 0.333, "n": 3},
]


@pytest.fixture
def fake_core(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """Stand-ins for classify.failures and metrics.per_case with fixed answers, so these tests check the TUI
    and the export, not the classifier (tested in tests/unit)."""
    import pyarrow as pa

    import ragtriage.notes.export as export
    import ragtriage.tui.data as data

    real = export.core_function
    fakes = {
        ("classify", "failures"): lambda con, run_id, **_: pa.Table.from_pylist(FAILURES),
        ("metrics", "per_case"): lambda con, run_id, **_: pa.Table.from_pylist(PER_CASE),
        ("metrics", "summarize"): lambda con, run_id, **_: pa.Table.from_pylist(SUMMARY),
    }

    def core_function(module: str, name: str) -> object:
        return fakes.get((module, name)) or real(module, name)

    monkeypatch.setattr(export, "core_function", core_function)
    monkeypatch.setattr(data, "core_function", core_function)
    return {"failures": FAILURES, "per_case": PER_CASE}
